/* test_error.c -- the error space: every code has a distinct name and message.
 */
#include "core/error.h"
#include "test.h"

static void
names_and_messages(void)
{
    ASSERT_STR_EQ(al_err_name(AL_ENOMEM), "ENOMEM");
    ASSERT_STR_EQ(al_strerror(AL_ENOMEM), "out of memory");
    ASSERT_STR_EQ(al_err_name(0), "OK");
    ASSERT_STR_EQ(al_err_name(-9999), "EUNKNOWN");
    ASSERT_STR_EQ(al_strerror(-9999), "unknown error");
}

static void
codes_distinct(void)
{
    static const int codes[] = {
#define X(name, val, msg) AL_##name,
        AL_ERRNO_MAP(X)
#undef X
    };
    size_t n = sizeof(codes) / sizeof(codes[0]), i, j;

    for (i = 0; i < n; i++) {
        ASSERT_LT(codes[i], 0);
        for (j = i + 1; j < n; j++) {
            ASSERT_NE(codes[i], codes[j]);
            ASSERT(strcmp(al_err_name(codes[i]), al_err_name(codes[j])) != 0);
        }
    }
}

const al_test_t test_error[] = {
    { "names_and_messages", names_and_messages },
    { "codes_distinct", codes_distinct },
    { NULL, NULL },
};
