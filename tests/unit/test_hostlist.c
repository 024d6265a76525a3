/*
 * test_hostlist.c -- src/common/hostlist.c: Slurm's hostlist form, folded
 * as Slurm prints it (`scontrol show hostlist`), expanded, refused when
 * malformed, and SLURM_TASKS_PER_NODE.
 */
#include <stdlib.h>

#include "hostlist.h"
#include "test.h"

static void
fold_is(const char *const *names, size_t n, const char *want)
{
    char *s = al_hostlist_fold(names, n);
    ASSERT_STR_EQ(s, want);
    free(s);
}

static void
hostlist_fold(void)
{
    const char *a[] = { "node3", "node1", "node2", "node7", "login1" };
    fold_is(a, 5, "node[1-3,7],login1");
    const char *b[] = { "n1" };
    fold_is(b, 1, "n1");
    const char *c[] = { "gpu01", "gpu02", "gpu03", "gpu10" };
    fold_is(c, 4, "gpu[01-03,10]");
    const char *d[] = { "n9", "n10", "n9", "head" };
    fold_is(d, 4, "n[9-10],head");
    const char *e[] = { "a", "b", "a" };
    fold_is(e, 3, "a,b");
    fold_is(NULL, 0, "");
}

static void
hostlist_expand(void)
{
    char **v = NULL;
    size_t n = 0;
    ASSERT_EQ(al_hostlist_expand("node[1-3,7],login1", &v, &n), 0);
    ASSERT_EQ(n, 5);
    ASSERT_STR_EQ(v[0], "node1");
    ASSERT_STR_EQ(v[2], "node3");
    ASSERT_STR_EQ(v[3], "node7");
    ASSERT_STR_EQ(v[4], "login1");
    al_hostlist_free(v, n);
    ASSERT_EQ(al_hostlist_expand("gpu[08-10]-ib", &v, &n), 0);
    ASSERT_EQ(n, 3);
    ASSERT_STR_EQ(v[0], "gpu08-ib");
    ASSERT_STR_EQ(v[2], "gpu10-ib");
    al_hostlist_free(v, n);
    static const char *const bad[] = { "",           "n[1-", "n[3-1]",
                                       "n[1,]",      "a,,b", "n]1[",
                                       "n[1-2]x[3]", "a,",   "n[1-999999]" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = (char **)&v;
        n = 42;
        ASSERT_EQ(al_hostlist_expand(bad[i], &v, &n), -1);
        ASSERT_EQ(n, 42);
    }
}

static void
hostlist_tasks_per_node(void)
{
    const char *t[] = { "n1", "n1", "n2", "n2", "n3", "n4" };
    char *list = NULL;
    char *per = al_hostlist_tasks_per_node(t, 6, &list);
    ASSERT_STR_EQ(list, "n[1-4]");
    ASSERT_STR_EQ(per, "2(x2),1(x2)");
    free(list);
    free(per);
    const char *u[] = { "b", "a", "a" };
    per = al_hostlist_tasks_per_node(u, 3, &list);
    ASSERT_STR_EQ(list, "b,a");
    ASSERT_STR_EQ(per, "1,2");
    free(list);
    free(per);
}

const al_test_t test_hostlist[] = {
    { "fold", hostlist_fold },
    { "expand", hostlist_expand },
    { "tasks_per_node", hostlist_tasks_per_node },
    { NULL, NULL },
};
