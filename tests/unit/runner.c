/*
 * runner.c -- runs every registered unit test, or those whose "module/name"
 * contains the first argument.  Ends with the line "N passed, N failed" and
 * exits non-zero when any test failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

jmp_buf al_test_jmp;
int al_test_verbose;

/* The registry: one table per test file. */
extern const al_test_t test_error[];
extern const al_test_t test_alloc[];
extern const al_test_t test_sched[];
extern const al_test_t test_invariants[];
extern const al_test_t test_common[];
extern const al_test_t test_cli[];
extern const al_test_t test_agent[];
extern const al_test_t test_simulator[];
extern const al_test_t test_server[];
extern const al_test_t test_arrayspec[];
extern const al_test_t test_stream[];
extern const al_test_t test_relay[];
extern const al_test_t test_hostlist[];
extern const al_test_t test_pools[];
extern const al_test_t test_dag[];
extern const al_test_t test_devbpf[];

static const struct {
    const char *module;
    const al_test_t *tests;
} registry[] = {
    { "error", test_error },       { "alloc", test_alloc },
    { "sched", test_sched },       { "invariants", test_invariants },
    { "common", test_common },     { "cli", test_cli },
    { "agent", test_agent },       { "simulator", test_simulator },
    { "server", test_server },     { "arrayspec", test_arrayspec },
    { "stream", test_stream },     { "relay", test_relay },
    { "hostlist", test_hostlist }, { "pools", test_pools },
    { "dag", test_dag },           { "devbpf", test_devbpf },
};

int
main(int argc, char **argv)
{
    const char *filter = argc > 1 ? argv[1] : NULL;
    char full[256];
    /* volatile: setjmp/longjmp may clobber non-volatile locals. */
    volatile int passed = 0, failed = 0;
    volatile size_t m;

    al_test_verbose = getenv("AL_TEST_VERBOSE") != NULL;
    for (m = 0; m < sizeof(registry) / sizeof(registry[0]); m++) {
        const al_test_t *volatile t;

        for (t = registry[m].tests; t->name != NULL; t++) {
            snprintf(full, sizeof(full), "%s/%s", registry[m].module, t->name);
            if (filter != NULL && strstr(full, filter) == NULL)
                continue;
            if (setjmp(al_test_jmp) == 0) {
                t->fn();
                passed++;
                if (al_test_verbose)
                    printf("ok   %s\n", full);
            } else {
                failed++;
                printf("FAIL %s\n", full);
            }
            fflush(stdout);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    /* Flush now: LeakSanitizer's exit does not flush stdio. */
    fflush(stdout);
    return failed == 0 && passed > 0 ? 0 : 1;
}
