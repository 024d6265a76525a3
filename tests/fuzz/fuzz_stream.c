/*
 * fuzz_stream.c -- libFuzzer harness for an interactive session's frame
 * parser (al_stream_parse, src/common/stream.c), which the CLI and the
 * agent run over whatever the other end sends.  Each input is a byte
 * stream, parsed frame after frame as the readers do.  Checks: a frame
 * never reaches past the input, its payload is within AL_STREAM_MAX and of
 * its type's size; a frame rebuilt with al_stream_put() is the same bytes;
 * an error says why.
 * Corpus: tests/fuzz/corpus/stream.
 */
#include <string.h>

#include "buf.h"
#include "core/error.h"
#include "fuzz.h"
#include "stream.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    for (;;) {
        al_frame_t f;
        size_t used = 0;
        char *cause = NULL;
        int rc = al_stream_parse(data + off, size - off, &f, &used, &cause);
        if (rc < 0) {
            CHECK(rc == AL_EPARSE && cause != NULL && cause[0] != '\0');
            free(cause);
            break;
        }
        CHECK(cause == NULL);
        if (rc == 0)
            break;
        CHECK(used == AL_STREAM_HDR + f.len && used <= size - off);
        CHECK(f.len <= AL_STREAM_MAX);
        CHECK(f.type != AL_FR_RESIZE || f.len == 4);
        CHECK(f.type != AL_FR_EXIT || f.len == 8);
        CHECK(f.type != AL_FR_CLOSE || f.len == 0);
        al_buf_t b = AL_BUF_INIT;
        al_stream_put(&b, f.type, f.data, f.len);
        CHECK(b.len == used && memcmp(b.data, data + off, used) == 0);
        al_buf_fini(&b);
        off += used;
    }
    return 0;
}
