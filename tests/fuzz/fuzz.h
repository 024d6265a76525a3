/*
 * fuzz.h -- what the harnesses in tests/fuzz share: CHECK, which fails the
 * run (libFuzzer keeps the input as a crash; replay.c dies with it) when a
 * property of the parser's result does not hold, and a NUL-terminated copy
 * of the input for parsers that take C strings.
 */
#ifndef AL_FUZZ_H
#define AL_FUZZ_H

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__,   \
                    #cond);                                                    \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* The input up to its first NUL, as a malloc()ed C string. */
static inline char *
fuzz_cstr(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, '\0', size);
    size_t n = nul != NULL ? (size_t)(nul - data) : size;
    char *s = malloc(n + 1);
    if (s == NULL)
        abort();
    if (n > 0)
        memcpy(s, data, n);
    s[n] = '\0';
    return s;
}

/* Whether s and t are equal strings or both NULL. */
static inline int
fuzz_str_eq(const char *s, const char *t)
{
    return (s == NULL && t == NULL) ||
           (s != NULL && t != NULL && strcmp(s, t) == 0);
}

/* A parser's refusal: AL_EINVAL, its output (n bytes at out) as it was
 * before (a copy at before), and a message, which this frees. */
static inline void
fuzz_check_refused(int rc, const void *out, const void *before, size_t n,
                   char *cause)
{
    CHECK(rc == AL_EINVAL);
    CHECK(memcmp(out, before, n) == 0);
    CHECK(cause != NULL && cause[0] != '\0');
    free(cause);
}

/* A name as the API allows them: 1..max characters of [A-Za-z0-9._-]. */
static inline void
fuzz_check_name(const char *name, size_t max)
{
    size_t len = strlen(name);
    CHECK(len >= 1 && len <= max);
    for (const char *p = name; *p; p++)
        CHECK(isalnum((unsigned char)*p) || strchr("-_.", *p) != NULL);
}

#endif /* AL_FUZZ_H */
