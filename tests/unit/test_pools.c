/*
 * test_pools.c -- the core's node labels, job constraints and placement
 * strategies per pool (al_node_t.labels, al_request_t.constraint,
 * al_config_t.pool_packs), and common's label parser (labels.c).
 */
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "labels.h"
#include "snap.h"
#include "test.h"

static snap_t *
scenario(void)
{
    snap_t *s = snap_create();
    al_config_t *c = snap_config(s);

    c->pack = AL_PACK_BIN;
    c->usage_weight = 0;
    c->reserve_depth = 1;
    c->lend_reserved = false;
    return s;
}

static int
start_node(const al_result_t *r, int j)
{
    const al_decision_t *d = res_find(r, j, AL_DEC_START);

    return d != NULL ? d->tasks[0].node : -1;
}

/*
 * A constraint picks nodes by label: "ib" wants the label ib with a value
 * other than no/false/0, "ib=no" that value exactly; a label no node has
 * makes the job wait with no_match.
 */
static void
constraint_matches_labels(void)
{
    snap_t *s = scenario();
    int q, a, b, c;
    al_result_t *r;

    snap_node(s, "a", 8); /* no labels */
    snap_node(s, "b", 8);
    snap_node(s, "c", 8);
    snap_node_ref(s, 1)->labels = "ib=no,rack=r1";
    snap_node_ref(s, 2)->labels = "ib=yes,rack=r2";
    q = snap_queue(s, "q", -1, 24000, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 1);
    snap_job_ref(s, a)->req.constraint = "ib";
    b = snap_job(s, q, 1, 1);
    snap_job_ref(s, b)->req.constraint = "ib=no";
    c = snap_job(s, q, 1, 1);
    snap_job_ref(s, c)->req.constraint = "ib,nvme";
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_EQ(start_node(r, a), 2);
    ASSERT_EQ(start_node(r, b), 1);
    ASSERT_EQ(start_node(r, c), -1);
    ASSERT_EQ(r->reasons[c].code, AL_WHY_NO_MATCH);
    al_result_destroy(r);
    snap_destroy(s);
}

/* The same with pools: nodes t1 and t2 of pool train, d1 of none. */
static void
constraint_with_pools(void)
{
    snap_t *s = scenario();
    int q, a, b, c;
    al_result_t *r;

    snap_node(s, "t1", 2);
    snap_node(s, "t2", 2);
    snap_node(s, "d1", 2);
    snap_node_pool(s, 0, "train");
    snap_node_pool(s, 1, "train");
    snap_node_ref(s, 0)->labels = "ib=yes,rack=r1";
    snap_node_ref(s, 1)->labels = "ib=no,rack=r2";
    q = snap_queue(s, "q", -1, 0, 1, AL_UNLIMITED);
    a = snap_job(s, q, 1, 1);
    snap_job_pool(s, a, "train");
    snap_job_ref(s, a)->req.constraint = "ib";
    b = snap_job(s, q, 1, 1);
    snap_job_ref(s, b)->req.constraint = "ib=no";
    c = snap_job(s, q, 1, 2);
    snap_job_pool(s, c, "train");
    snap_set_now(s, 10);
    r = snap_run(s);
    ASSERT_EQ(start_node(r, a), 0);
    ASSERT_EQ(start_node(r, b), 1);
    al_result_destroy(r);
    snap_destroy(s);
}

/*
 * A pool's own strategy: node a has 2 free GPUs but 6 free cores, node b
 * 3 free GPUs and cores to spare, both in pool p.  A 1-GPU task with 4
 * cores goes to a when bin-packing (fuller), to b when p places
 * fragmentation-aware (a's last GPU would be stranded); a job that names
 * no pool keeps the default strategy.
 */
static void
pool_strategy(void)
{
    snap_t *s = scenario();
    al_pool_pack_t pp = { .pool = "p", .pack = AL_PACK_FRAG };
    int q, ra, rb, j;
    al_result_t *r;

    snap_node(s, "a", 8);
    snap_node(s, "b", 8);
    snap_node_pool(s, 0, "p");
    snap_node_pool(s, 1, "p");
    snap_node_ref(s, 0)->cpu_milli = 10000;
    snap_node_ref(s, 1)->cpu_milli = 64000;
    q = snap_queue(s, "q", -1, 8000, 1, AL_UNLIMITED);
    ra = snap_job(s, q, 1, 6);
    snap_job_ref(s, ra)->req.cpu_milli = 4000;
    snap_place(s, ra, 0, 0, 0x3F);
    rb = snap_job(s, q, 1, 5);
    snap_place(s, rb, 0, 1, 0x1F);
    j = snap_job(s, q, 1, 1);
    snap_job_ref(s, j)->req.cpu_milli = 4000;
    snap_set_now(s, 100);
    snap_config(s)->npool_packs = 1;
    snap_config(s)->pool_packs = &pp;
    r = snap_run(s);
    ASSERT_EQ(start_node(r, j), 0); /* no pool asked: bin-packing */
    al_result_destroy(r);

    snap_job_pool(s, j, "p");
    r = snap_run(s);
    ASSERT_EQ(start_node(r, j), 1);
    al_result_destroy(r);

    pp.pack = AL_PACK_BIN;
    r = snap_run(s);
    ASSERT_EQ(start_node(r, j), 0);
    al_result_destroy(r);

    pp.pack = (al_pack_t)7;
    {
        al_result_t *bad = NULL;
        char *cause = NULL;

        ASSERT_EQ(al_sched_run(snap_get(s), &bad, &cause), AL_EINVAL);
        ASSERT(cause != NULL);
        al_cause_free(snap_get(s), cause);
    }
    snap_destroy(s);
}

static void
labels_parse(void)
{
    static const struct {
        const char *in;
        bool constraint;
        const char *out; /* NULL: refused */
    } cases[] = {
        { "rack=r1,ib=yes", false, "ib=yes,rack=r1" },
        { "", false, "" },
        { "ib", false, NULL },
        { "ib", true, "ib" },
        { "rack=r1,ib", true, "ib,rack=r1" },
        { "a=1,a=2", false, NULL },
        { "a=1,", false, NULL },
        { ",a=1", false, NULL },
        { "a==1", false, NULL },
        { "a=b c", false, NULL },
        { "=x", true, NULL },
        { "k=", true, NULL },
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL, *cause = NULL;
        int rc =
            al_labels_parse(cases[i].in, cases[i].constraint, &out, &cause);

        if (cases[i].out == NULL) {
            ASSERT_EQ(rc, -1);
            ASSERT(cause != NULL);
        } else {
            ASSERT_EQ(rc, 0);
            ASSERT(strcmp(out, cases[i].out) == 0);
        }
        free(out);
        free(cause);
    }
    {
        char *v = al_labels_get("ib=yes,rack=r1", "rack");

        ASSERT(v != NULL && strcmp(v, "r1") == 0);
        free(v);
        ASSERT(al_labels_get("ib=yes,rack=r1", "block") == NULL);
        ASSERT(al_labels_get("ib=yes,rack=r1", "i") == NULL);
    }
    ASSERT(al_pool_valid("train"));
    ASSERT(!al_pool_valid(""));
    ASSERT(!al_pool_valid("a/b"));
}

const al_test_t test_pools[] = {
    { "constraint_matches_labels", constraint_matches_labels },
    { "constraint_with_pools", constraint_with_pools },
    { "pool_strategy", pool_strategy },
    { "labels_parse", labels_parse },
    { NULL, NULL },
};
