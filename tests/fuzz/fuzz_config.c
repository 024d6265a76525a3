/*
 * fuzz_config.c -- libFuzzer harness for the user's config file
 * (~/.config/allot/config, src/common/ucfg.c): the reader
 * (al_ucfg_lookup, behind al_ucfg_get), the rewriter that `allot dev` uses
 * (al_ucfg_rewrite, behind al_ucfg_set), and the URL parser the server
 * value goes to (al_url_parse, and al_url_parse_list for a failover
 * group's list, src/common/http.c).  Each input is a file's
 * bytes.  Checks:
 *   - a value read has no line break and no blanks around it;
 *   - after setting a key, reading it gives the value set, reading another
 *     key gives what it gave before, and setting it again changes nothing;
 *   - a URL parses into a host without '/' (nor ':' unless written in
 *     brackets, as an IPv6 address is), a port of digits and a
 *     prefix that is empty or starts, but does not end, with '/'; or is
 *     refused with a message.
 * Corpus: tests/fuzz/corpus/config.
 */
#include "buf.h"
#include "core/error.h"
#include "fuzz.h"
#include "http.h"
#include "ucfg.h"

static const char *const keys[] = { "server", "token", "x y", "ca" };
static const char *const values[] = { "http://127.0.0.1:7070/a",
                                      "al_0123456789abcdef_00", "1 = 2",
                                      "/etc/allot/ca.pem" };
#define NKEYS (sizeof keys / sizeof keys[0])

static void
check_value(const char *v)
{
    if (v == NULL)
        return;
    size_t n = strlen(v);
    CHECK(strchr(v, '\n') == NULL);
    CHECK(n == 0 || (v[0] != ' ' && v[0] != '\t'));
    CHECK(n == 0 || strchr(" \t\r", v[n - 1]) == NULL);
}

static void
check_url(const char *s)
{
    al_url_t u;
    char *cause = NULL;
    if (al_url_parse(s, &u, &cause) != 0) {
        CHECK(cause != NULL && cause[0] != '\0');
        free(cause);
        return;
    }
    /* ':' only in an address written in brackets (IPv6). */
    CHECK(u.host[0] != '\0' && strpbrk(u.host, "/]") == NULL);
    CHECK(strchr(u.host, ':') == NULL || strchr(s, '[') != NULL);
    size_t plen = strlen(u.port);
    CHECK(plen > 0 && strspn(u.port, "0123456789") == plen);
    size_t xlen = strlen(u.prefix);
    CHECK(xlen == 0 || (u.prefix[0] == '/' && u.prefix[xlen - 1] != '/'));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    char *before[NKEYS];
    for (size_t k = 0; k < NKEYS; k++) {
        before[k] = al_ucfg_lookup(text, size, keys[k]);
        check_value(before[k]);
    }
    if (before[0] != NULL) {
        check_url(before[0]);
        al_url_t list[AL_URL_LIST_MAX];
        int n = -1;
        char *cause = NULL;
        if (al_url_parse_list(before[0], list, &n, &cause) == 0)
            CHECK(n >= 1 && n <= AL_URL_LIST_MAX);
        else
            CHECK(cause != NULL && cause[0] != '\0');
        free(cause);
    }
    size_t set = size % NKEYS;
    al_buf_t out = AL_BUF_INIT, again = AL_BUF_INIT;
    al_ucfg_rewrite(text, size, keys[set], values[set], &out);
    CHECK(out.len > 0 && out.data[out.len - 1] == '\n');
    for (size_t k = 0; k < NKEYS; k++) {
        char *v = al_ucfg_lookup(out.data, out.len, keys[k]);
        CHECK(fuzz_str_eq(v, k == set ? values[set] : before[k]));
        free(v);
    }
    /* A bad line is a line of the text; rewriting adds none. */
    int bad = al_ucfg_bad_line(text, size, keys, NKEYS);
    size_t lines = 1;
    for (size_t i = 0; i < strnlen(text, size); i++)
        lines += text[i] == '\n';
    CHECK(bad >= 0 && (size_t)bad <= lines);
    CHECK(bad != 0 || al_ucfg_bad_line(out.data, out.len, keys, NKEYS) == 0);
    al_ucfg_rewrite(out.data, out.len, keys[set], values[set], &again);
    CHECK(again.len == out.len && memcmp(again.data, out.data, out.len) == 0);
    al_buf_fini(&again);
    al_buf_fini(&out);
    for (size_t k = 0; k < NKEYS; k++)
        free(before[k]);
    return 0;
}
