/*
 * shell_runner.c -- runs test_shell.c's tests the way tests/unit/runner.c
 * runs the core's: an optional name filter, a line per failure, and the
 * closing line "N passed, N failed"; non-zero exit on failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

jmp_buf al_test_jmp;
int al_test_verbose;

extern const al_test_t test_shell[];

int
main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    volatile int passed = 0, failed = 0;
    al_test_verbose = getenv("AL_TEST_VERBOSE") != NULL;
    for (const al_test_t *volatile t = test_shell; t->name != NULL; t++) {
        if (filter != NULL && strstr(t->name, filter) == NULL)
            continue;
        if (setjmp(al_test_jmp) == 0) {
            t->fn();
            passed++;
            if (al_test_verbose)
                printf("ok   shell/%s\n", t->name);
        } else {
            failed++;
            printf("FAIL shell/%s\n", t->name);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
