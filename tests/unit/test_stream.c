/*
 * test_stream.c -- src/common/stream.c: an interactive session's frames
 * (built, parsed whole and in pieces, refused when malformed, with the
 * message users would see) and the query-string encoding of an exec's
 * command.
 */
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "core/error.h"
#include "stream.h"
#include "test.h"

/* Frames built one after another parse back as built, in order. */
static void
stream_round_trip(void)
{
    al_buf_t b = AL_BUF_INIT;
    al_stream_put(&b, AL_FR_STDIN, "hello", 5);
    al_stream_put_resize(&b, 30, 100);
    al_stream_put_exit(&b, 3, 0);
    al_stream_put(&b, AL_FR_CLOSE, NULL, 0);
    al_frame_t f;
    size_t used, off = 0;
    ASSERT_EQ(al_stream_parse(b.data, b.len, &f, &used, NULL), 1);
    ASSERT_EQ(f.type, AL_FR_STDIN);
    ASSERT_EQ(f.len, 5);
    ASSERT(memcmp(f.data, "hello", 5) == 0);
    ASSERT_EQ(used, AL_STREAM_HDR + 5);
    off += used;
    ASSERT_EQ(al_stream_parse(b.data + off, b.len - off, &f, &used, NULL), 1);
    int rows, cols;
    al_stream_resize_of(&f, &rows, &cols);
    ASSERT_EQ(rows, 30);
    ASSERT_EQ(cols, 100);
    off += used;
    ASSERT_EQ(al_stream_parse(b.data + off, b.len - off, &f, &used, NULL), 1);
    int code, sig;
    al_stream_exit_of(&f, &code, &sig);
    ASSERT_EQ(code, 3);
    ASSERT_EQ(sig, 0);
    off += used;
    ASSERT_EQ(al_stream_parse(b.data + off, b.len - off, &f, &used, NULL), 1);
    ASSERT_EQ(f.type, AL_FR_CLOSE);
    off += used;
    ASSERT_EQ(off, b.len);
    ASSERT_EQ(al_stream_parse(b.data + off, 0, &f, &used, NULL), 0);
    al_buf_fini(&b);
}

/* A frame cut anywhere is "not yet", never an error or a short frame. */
static void
stream_partial(void)
{
    al_buf_t b = AL_BUF_INIT;
    al_stream_put(&b, AL_FR_STDOUT, "0123456789", 10);
    for (size_t n = 0; n < b.len; n++) {
        al_frame_t f;
        size_t used = 99;
        ASSERT_EQ(al_stream_parse(b.data, n, &f, &used, NULL), 0);
        ASSERT_EQ(used, 99);
    }
    al_buf_fini(&b);
}

static void
stream_malformed(void)
{
    al_frame_t f;
    size_t used;
    char *cause = NULL;
    ASSERT_EQ(al_stream_parse("Q\0\0\0\0", 5, &f, &used, &cause), AL_EPARSE);
    ASSERT_STR_EQ(cause, "unknown frame type 0x51");
    free(cause);
    cause = NULL;
    /* Over the largest payload, refused from its header alone. */
    ASSERT_EQ(al_stream_parse("o\0\1\0\1", 5, &f, &used, &cause), AL_EPARSE);
    ASSERT_STR_EQ(cause, "frame 'o' of 65537 bytes");
    free(cause);
    cause = NULL;
    /* A resize is 4 bytes, an exit 8, a close none. */
    ASSERT_EQ(al_stream_parse("r\0\0\0\3abc", 8, &f, &used, &cause), AL_EPARSE);
    free(cause);
    ASSERT_EQ(al_stream_parse("x\0\0\0\4abcd", 9, &f, &used, NULL), AL_EPARSE);
    ASSERT_EQ(al_stream_parse("c\0\0\0\1a", 6, &f, &used, NULL), AL_EPARSE);
    /* The largest is fine. */
    ASSERT_EQ(al_stream_parse("o\0\1\0\0", 5, &f, &used, NULL), 0);
}

static void
stream_urlenc(void)
{
    al_buf_t b = AL_BUF_INIT;
    al_stream_urlenc(&b, "[\"sh\",\"-c\",\"a&b=c d\"]");
    ASSERT_STR_EQ(al_buf_cstr(&b),
                  "%5B%22sh%22%2C%22-c%22%2C%22a%26b%3Dc%20d%22%5D");
    al_buf_fini(&b);
}

const al_test_t test_stream[] = {
    { "round_trip", stream_round_trip },
    { "partial", stream_partial },
    { "malformed", stream_malformed },
    { "urlenc", stream_urlenc },
    { NULL, NULL },
};
