/*
 * bench/dag: what the graph costs a scheduling cycle.  A cluster of
 * --nodes nodes x 8 GPUs is full of running stages; every running stage
 * has a successor waiting for it (a pipeline's next stage, 1-8 GPUs, and
 * a third stage behind that), and --pending unrelated jobs wait besides.
 * One al_sched_run() on that snapshot is timed (median of --runs) three
 * ways in the same process: the graph ignored (ignore_deps: the
 * reference), critical path only (lookahead_depth 0), and critical path
 * with look-ahead (the default, lookahead_depth 8).  Prints one JSON line.
 *
 *   build/bench/dag [--nodes 512] [--pending 20000] [--runs 9]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/core.h"

#define GPUS 8

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* splitmix64: the same jobs on every machine. */
static uint64_t
rnd(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A whole number of at most 9 digits, or -1. */
static int
arg_int(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *s != '\0' && *end == '\0' && v >= 0 && v < 1000000000 ? (int)v : -1;
}

static void *
xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n, sz);
    if (p == NULL) {
        fprintf(stderr, "bench/dag: out of memory\n");
        exit(1);
    }
    return p;
}

/* Median milliseconds of one cycle under cfg; *nres: reservations made. */
static double
time_cycles(al_snapshot_t *snap, const al_config_t *cfg, int runs, int *nres)
{
    double *t = xcalloc((size_t)runs, sizeof(double));
    snap->config = cfg;
    for (int r = 0; r < runs; r++) {
        al_result_t *res = NULL;
        char *cause = NULL;
        double t0 = now_ms();
        int rc = al_sched_run(snap, &res, &cause);
        t[r] = now_ms() - t0;
        if (rc != 0) {
            fprintf(stderr, "bench/dag: %s: %s\n", al_err_name(rc),
                    cause ? cause : "");
            exit(1);
        }
        *nres = res->nreservations;
        al_result_destroy(res);
    }
    qsort(t, (size_t)runs, sizeof(double), cmp_dbl);
    double m = t[runs / 2];
    free(t);
    return m;
}

int
main(int argc, char **argv)
{
    int nodes = 512, pending = 20000, runs = 9;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--nodes") == 0)
            nodes = arg_int(argv[i + 1]);
        else if (strcmp(argv[i], "--pending") == 0)
            pending = arg_int(argv[i + 1]);
        else if (strcmp(argv[i], "--runs") == 0)
            runs = arg_int(argv[i + 1]);
    }
    if (nodes < 1 || pending < 0 || runs < 1) {
        fprintf(stderr, "usage: bench/dag [--nodes N] [--pending N] "
                        "[--runs N]\n");
        return 2;
    }
    static al_device_t devs[GPUS];
    for (int d = 0; d < GPUS; d++)
        devs[d] = (al_device_t){ (int64_t)80 << 30, 0, 0 };
    al_node_t *nd = xcalloc((size_t)nodes, sizeof *nd);
    char(*names)[16] = xcalloc((size_t)nodes, sizeof *names);
    for (int n = 0; n < nodes; n++) {
        snprintf(names[n], sizeof names[n], "n%d", n);
        nd[n] = (al_node_t){ .name = names[n],
                             .state = AL_NODE_READY,
                             .cpu_milli = 128000,
                             .mem_bytes = (int64_t)1 << 40,
                             .ndevices = GPUS,
                             .devices = devs };
    }
    al_queue_t q = { .name = "q", .parent = -1 };
    for (int r = 0; r < AL_NRES; r++)
        q.quota[r] = (al_quota_t){ 0, AL_UNLIMITED, 1 };
    /* Per node: one running 8-GPU stage, its successor and the stage
     * after; then the unrelated pending jobs. */
    int nj = 3 * nodes + pending;
    al_job_t *jobs = xcalloc((size_t)nj, sizeof *jobs);
    al_placement_t *pl = xcalloc((size_t)nodes, sizeof *pl);
    al_dep_t *deps = xcalloc((size_t)2 * nodes, sizeof *deps);
    uint64_t seed = 1;
    int k = 0;
    for (int n = 0; n < nodes; n++) {
        al_job_t base = { .queue = 0,
                          .priority = AL_PRIO_TRAIN,
                          .preemptible = true,
                          .min_tasks = 1,
                          .max_tasks = 1 };
        al_job_t *a = &jobs[k], *b = &jobs[k + 1], *c = &jobs[k + 2];
        *a = base;
        a->id = (uint64_t)k + 1;
        a->req.gpus = GPUS;
        a->estimate = 600 + (int64_t)(rnd(&seed) % 7200);
        a->state = AL_JOB_RUNNING;
        a->start_time = 0;
        a->ntasks = 1;
        pl[n] = (al_placement_t){ .node = n, .devices = 0xFF };
        a->placement = &pl[n];
        *b = base;
        b->id = (uint64_t)k + 2;
        b->req.gpus = 1 << (rnd(&seed) % 4);
        b->estimate = 1800;
        b->dep_state = AL_DEPS_WAITING;
        b->ndeps = 1;
        deps[(size_t)2 * n].job = k;
        b->deps = &deps[(size_t)2 * n];
        *c = base;
        c->id = (uint64_t)k + 3;
        c->req.gpus = 1;
        c->estimate = 900;
        c->dep_state = AL_DEPS_WAITING;
        c->ndeps = 1;
        deps[(size_t)2 * n + 1].job = k + 1;
        c->deps = &deps[(size_t)2 * n + 1];
        k += 3;
    }
    for (int p = 0; p < pending; p++, k++) {
        al_job_t *x = &jobs[k];
        *x = (al_job_t){ .id = (uint64_t)k + 1,
                         .queue = 0,
                         .priority = AL_PRIO_TRAIN,
                         .preemptible = true,
                         .min_tasks = 1,
                         .max_tasks = 1,
                         .submit_time = p };
        x->req.gpus = 1 << (rnd(&seed) % 4);
        x->estimate = 60 + (int64_t)(rnd(&seed) % 36000);
    }
    al_snapshot_t snap = { .now = 10,
                           .nnodes = nodes,
                           .nodes = nd,
                           .nqueues = 1,
                           .queues = &q,
                           .njobs = nj,
                           .jobs = jobs };
    al_config_t blind, crit, look;
    al_config_default(&look);
    crit = look;
    crit.lookahead_depth = 0;
    blind = look;
    blind.ignore_deps = true;
    int r_blind, r_crit, r_look;
    double t_blind = time_cycles(&snap, &blind, runs, &r_blind);
    double t_crit = time_cycles(&snap, &crit, runs, &r_crit);
    double t_look = time_cycles(&snap, &look, runs, &r_look);
    printf("{\"bench\":\"dag\",\"nodes\":%d,\"gpus\":%d,\"jobs\":%d,"
           "\"waiting_stages\":%d,\"runs\":%d,"
           "\"cycle_ms_ignore_deps\":%.3f,\"cycle_ms_critical_path\":%.3f,"
           "\"cycle_ms_lookahead\":%.3f,\"lookahead_over_reference\":%.3f,"
           "\"reservations\":[%d,%d,%d]}\n",
           nodes, nodes * GPUS, nj, 2 * nodes, runs, t_blind, t_crit, t_look,
           t_blind > 0 ? t_look / t_blind : 0, r_blind, r_crit, r_look);
    free(nd);
    free(names);
    free(jobs);
    free(pl);
    free(deps);
    return 0;
}
