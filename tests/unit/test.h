/*
 * test.h -- the unit test framework: a registry of named functions and
 * ASSERT_* macros that print both operands on failure (libuv's style).
 *
 * A test is `static void name(void)`; a file exports a table
 *     const al_test_t test_<module>[] = { {"name", fn}, ..., {NULL, NULL} };
 * listed in runner.c.  A failed assertion longjmps back to the runner, which
 * counts the test as failed and goes on with the next one.
 */
#ifndef AL_TEST_H
#define AL_TEST_H

#include <inttypes.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

typedef struct al_test {
    const char *name;
    void (*fn)(void);
} al_test_t;

extern jmp_buf al_test_jmp;
extern int al_test_verbose;

#define AL__FAIL(...)                                                          \
    do {                                                                       \
        fprintf(stderr, "    %s:%d: ", __FILE__, __LINE__);                    \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
        longjmp(al_test_jmp, 1);                                               \
    } while (0)

#define ASSERT(expr)                                                           \
    do {                                                                       \
        if (!(expr))                                                           \
            AL__FAIL("assertion failed: %s", #expr);                           \
    } while (0)

#define AL__ASSERT_INT(a, op, b)                                               \
    do {                                                                       \
        int64_t al__a = (int64_t)(a), al__b = (int64_t)(b);                    \
        if (!(al__a op al__b))                                                 \
            AL__FAIL("%s %s %s: %" PRId64 " vs %" PRId64, #a, #op, #b, al__a,  \
                     al__b);                                                   \
    } while (0)

#define ASSERT_EQ(a, b) AL__ASSERT_INT(a, ==, b)
#define ASSERT_NE(a, b) AL__ASSERT_INT(a, !=, b)
#define ASSERT_LT(a, b) AL__ASSERT_INT(a, <, b)
#define ASSERT_LE(a, b) AL__ASSERT_INT(a, <=, b)
#define ASSERT_GT(a, b) AL__ASSERT_INT(a, >, b)
#define ASSERT_GE(a, b) AL__ASSERT_INT(a, >=, b)

#define ASSERT_DBL_NEAR(a, b, eps)                                             \
    do {                                                                       \
        double al__a = (double)(a), al__b = (double)(b);                       \
        if (!(al__a - al__b <= (eps) && al__b - al__a <= (eps)))               \
            AL__FAIL("%s ~= %s: %g vs %g", #a, #b, al__a, al__b);              \
    } while (0)

#define ASSERT_STR_EQ(a, b)                                                    \
    do {                                                                       \
        const char *al__a = (a), *al__b = (b);                                 \
        if (al__a == NULL || al__b == NULL || strcmp(al__a, al__b) != 0)       \
            AL__FAIL("%s == %s: \"%s\" vs \"%s\"", #a, #b,                     \
                     al__a ? al__a : "(null)", al__b ? al__b : "(null)");      \
    } while (0)

#endif /* AL_TEST_H */
