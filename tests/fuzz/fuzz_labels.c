/*
 * fuzz_labels.c -- libFuzzer harness for node labels, job constraints and
 * pool names (al_labels_parse, al_pool_valid, al_labels_get;
 * src/common/labels.c), which the agent, the CLI and the controller run on
 * what users send.  Each input is one argument, up to its first NUL.
 * Checks: a refusal says why and leaves the result alone; an accepted list
 * is canonical (parsing its text again gives the same text), its keys
 * sorted and each once; a label list's every key reads back through
 * al_labels_get.
 * Corpus: tests/fuzz/corpus/labels.
 */
#include "fuzz.h"
#include "labels.h"

static void
one(const char *s, bool constraint)
{
    char *out = (char *)0x1, *cause = NULL;
    if (al_labels_parse(s, constraint, &out, &cause) != 0) {
        CHECK(cause != NULL && cause[0] != '\0');
        CHECK(out == (char *)0x1);
        free(cause);
        return;
    }
    char *again = NULL;
    CHECK(al_labels_parse(out, constraint, &again, NULL) == 0);
    CHECK(strcmp(again, out) == 0);
    free(again);
    const char *prev = NULL;
    size_t prevlen = 0;
    for (const char *p = out; *p != '\0';) {
        size_t len = strcspn(p, ","), kl = strcspn(p, "=,");
        if (prev != NULL) {
            size_t m = kl < prevlen ? kl : prevlen;
            int c = memcmp(prev, p, m);
            CHECK(c < 0 || (c == 0 && prevlen < kl));
        }
        if (!constraint) {
            char key[AL_LABEL_LEN + 1];
            memcpy(key, p, kl);
            key[kl] = '\0';
            char *v = al_labels_get(out, key);
            CHECK(v != NULL && strlen(v) == len - kl - 1 &&
                  memcmp(v, p + kl + 1, len - kl - 1) == 0);
            free(v);
        }
        prev = p;
        prevlen = kl;
        p += len + (p[len] == ',');
    }
    free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    one(s, false);
    one(s, true);
    (void)al_pool_valid(s);
    free(s);
    return 0;
}
