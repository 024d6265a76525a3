/*
 * test_simulator.c -- the helpers the simulator's parsers share (parse.c):
 * `key=value` lines and words, whole numbers, the name hash, error
 * collection, and reading an input file with a message naming it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "sim_int.h"
#include "test.h"

/* Comments cut, CR and commas made spaces, blank lines skipped, lines
 * numbered from 1 whatever was skipped; a NUL byte is an error. */
static void
kv_lines(void)
{
    static const char text[] = "# a comment\n"
                               "a=1,b=2 # why\r\n"
                               "\n"
                               "   \t\n"
                               "bad\0line\n"
                               "last";
    size_t len = sizeof text - 1, off = 0;
    int line = 0;
    al_errs_t errs = { AL_BUF_INIT, 0 };
    char *l = al__kv_line("f.txt", text, len, &off, &line, &errs);
    ASSERT_STR_EQ(l, "a=1 b=2 ");
    ASSERT_EQ(line, 2);
    free(l);
    l = al__kv_line("f.txt", text, len, &off, &line, &errs);
    ASSERT_STR_EQ(l, "last");
    ASSERT_EQ(line, 6);
    ASSERT_EQ(off, len);
    free(l);
    ASSERT(al__kv_line("f.txt", text, len, &off, &line, &errs) == NULL);
    ASSERT_EQ(errs.n, 1);
    ASSERT_STR_EQ(al_buf_cstr(&errs.buf), "f.txt:5: NUL byte in line");
    al_buf_fini(&errs.buf);
}

typedef struct words {
    char out[256];
} words_t;

static void
on_word(void *ctx, const char *key, const char *val)
{
    words_t *w = ctx;
    size_t n = strlen(w->out);
    snprintf(w->out + n, sizeof w->out - n, "[%s|%s]", key ? key : "-", val);
}

static void
kv_words(void)
{
    char line[] = "  node \tgpus=8 model=H100=x  empty= ";
    words_t w = { "" };
    al__kv_split(line, on_word, &w);
    ASSERT_STR_EQ(w.out, "[-|node][gpus|8][model|H100=x][empty|]");
    char blank[] = " \t ";
    w.out[0] = '\0';
    al__kv_split(blank, on_word, &w);
    ASSERT_STR_EQ(w.out, "");
}

static void
numbers(void)
{
    int64_t v = 42;
    ASSERT_EQ(al__parse_i64("0", &v), 0);
    ASSERT_EQ(v, 0);
    ASSERT_EQ(al__parse_i64("+17", &v), 0);
    ASSERT_EQ(v, 17);
    ASSERT_EQ(al__parse_i64("-9223372036854775807", &v), 0);
    ASSERT_EQ(v, -INT64_MAX);
    ASSERT_EQ(al__parse_i64("9223372036854775807", &v), 0);
    ASSERT_EQ(v, INT64_MAX);
    v = 42;
    ASSERT_EQ(al__parse_i64("9223372036854775808", &v), -1);
    ASSERT_EQ(al__parse_i64("", &v), -1);
    ASSERT_EQ(al__parse_i64("-", &v), -1);
    ASSERT_EQ(al__parse_i64("12x", &v), -1);
    ASSERT_EQ(al__parse_i64(" 12", &v), -1);
    ASSERT_EQ(al__parse_i64("1.0", &v), -1);
    ASSERT_EQ(v, 42); /* untouched on error */

    double d = 42;
    ASSERT_EQ(al__parse_num("1.5e3", &d), 0);
    ASSERT_DBL_NEAR(d, 1500, 0);
    ASSERT_EQ(al__parse_num("-.25", &d), 0);
    ASSERT_DBL_NEAR(d, -0.25, 0);
    d = 42;
    ASSERT_EQ(al__parse_num("", &d), -1);
    ASSERT_EQ(al__parse_num("inf", &d), -1);
    ASSERT_EQ(al__parse_num("nan", &d), -1);
    ASSERT_EQ(al__parse_num("0x10", &d), -1);
    ASSERT_EQ(al__parse_num("1e400", &d), -1);
    ASSERT_EQ(al__parse_num("1 ", &d), -1);
    ASSERT_EQ(al__parse_num("1e", &d), -1);
    ASSERT_DBL_NEAR(d, 42, 0);
}

/* FNV-1a's steps from offset 1469598103934665603, one digit short of the
 * standard basis: stable across runs and machines, and what queues by hash
 * and estimate noise have always been computed with. */
static void
hash(void)
{
    ASSERT(al__hash("") == UINT64_C(1469598103934665603));
    ASSERT(al__hash("a") == UINT64_C(0x44bd8ad473cd9906));
    ASSERT(al__hash("foobar") == UINT64_C(0x88fad7c0a8ff07f2));
}

/* At most AL_MAX_ERRORS messages, one a line, then how many more. */
static void
errors(void)
{
    al_errs_t e = { AL_BUF_INIT, 0 };
    char *cause = NULL;
    ASSERT_EQ(al__err_give(&e, &cause), AL_EPARSE);
    ASSERT_STR_EQ(cause, "");
    free(cause);
    al__err(&e, "f:%d: one", 1);
    al__err(&e, "f:%d: two", 2);
    ASSERT_EQ(e.n, 2);
    ASSERT_EQ(al__err_give(&e, &cause), AL_EPARSE);
    ASSERT_STR_EQ(cause, "f:1: one\nf:2: two");
    ASSERT_EQ(e.n, 0);
    ASSERT(e.buf.data == NULL);
    free(cause);
    for (int i = 1; i <= AL_MAX_ERRORS + 5; i++)
        al__err(&e, "e%d", i);
    ASSERT_EQ(al__err_give(&e, &cause), AL_EPARSE);
    const char *tail = strstr(cause, "e20\n... and 5 more errors");
    ASSERT(tail != NULL);
    ASSERT_STR_EQ(tail, "e20\n... and 5 more errors");
    ASSERT(strncmp(cause, "e1\ne2\n", 6) == 0);
    ASSERT(strstr(cause, "e21") == NULL);
    free(cause);
    /* Without a cause the text is freed. */
    al__err(&e, "dropped");
    ASSERT_EQ(al__err_give(&e, NULL), AL_EPARSE);
    ASSERT_EQ(e.n, 0);
}

static void
read_file(void)
{
    char dir[] = "/tmp/allot-unit-sim-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    char path[64], *data = NULL, *cause = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/in.txt", dir);
    FILE *f = fopen(path, "w");
    ASSERT(f != NULL);
    fputs("a=1\nb", f);
    fclose(f);
    ASSERT_EQ(al__read_file(path, &data, &len, &cause), 0);
    ASSERT_EQ(len, 5);
    ASSERT_STR_EQ(data, "a=1\nb");
    ASSERT(cause == NULL);
    free(data);
    unlink(path);

    char want[96];
    data = NULL;
    ASSERT_EQ(al__read_file(path, &data, &len, &cause), AL_EIO);
    snprintf(want, sizeof want, "%s: No such file or directory", path);
    ASSERT_STR_EQ(cause, want);
    ASSERT(data == NULL);
    free(cause);
    /* A directory opens but cannot be read. */
    ASSERT_EQ(al__read_file(dir, &data, &len, &cause), AL_EIO);
    snprintf(want, sizeof want, "%s: read error", dir);
    ASSERT_STR_EQ(cause, want);
    free(cause);
    ASSERT_EQ(al__read_file(dir, &data, &len, NULL), AL_EIO);
    rmdir(dir);
}

const al_test_t test_simulator[] = {
    { "kv_lines", kv_lines }, { "kv_words", kv_words },
    { "numbers", numbers },   { "hash", hash },
    { "errors", errors },     { "read_file", read_file },
    { NULL, NULL },
};
