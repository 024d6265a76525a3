/*
 * cli_sim.c -- `allot sim`: replay a trace through the scheduling core.
 *
 * Options come from one table (name, kind, bounds, help; common/opt.h), so
 * the parser, the help text and docs/simulation.md cannot drift apart.  Exit
 * status: 0 on success, 1 when an input file is malformed or the run fails, 2
 * on a usage error.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opt.h"
#include "sim.h"

typedef struct args {
    const char *trace, *filter_queue, *cluster, *gpu_model, *queues_file;
    const char *queues_from, *policy, *report, *timeseries, *title;
    const char *levels;
    const char *tiresias, *seeds, *jobs_csv, *pack, *order;
    const char *dag;
    int64_t nodes, gpus_per_node, nodes_per_rack, cpus_per_node, mem_gib;
    int64_t queues, checkpoint, restart_overhead, half_life, tick,
        estimate_seed;
    double estimate_factor, estimate_noise, usage_weight, fill;
    bool json, progress, quiet, no_timing, help;
} args_t;

#define A(f) offsetof(args_t, f)

static const al_opt_t options[] = {
    { .name = "--trace",
      .kind = AL_OPT_STR,
      .off = A(trace),
      .arg = "FILE",
      .help = "trace in the common CSV format (required)",
      .flags = AL_OPT_REQUIRED },
    { .name = "--trace-filter-queue",
      .kind = AL_OPT_STR,
      .off = A(filter_queue),
      .arg = "Q",
      .help = "keep only rows whose queue column is Q (e.g. cluster04)" },
    { .name = "--nodes",
      .kind = AL_OPT_INT,
      .off = A(nodes),
      .min = 1,
      .max = 1000000,
      .arg = "N",
      .help = "homogeneous cluster of N nodes",
      .flags = AL_OPT_BRIEF },
    { .name = "--gpus-per-node",
      .kind = AL_OPT_INT,
      .off = A(gpus_per_node),
      .min = 0,
      .max = 64,
      .arg = "G",
      .help = "GPUs per node (default 8)" },
    { .name = "--gpu-model",
      .kind = AL_OPT_STR,
      .off = A(gpu_model),
      .arg = "M",
      .help = "GPU model name" },
    { .name = "--nodes-per-rack",
      .kind = AL_OPT_INT,
      .off = A(nodes_per_rack),
      .min = 0,
      .max = 1000000,
      .arg = "R",
      .help = "nodes per rack (a topology level; default none)" },
    { .name = "--cpus-per-node",
      .kind = AL_OPT_INT,
      .off = A(cpus_per_node),
      .min = 0,
      .max = 10000000,
      .arg = "C",
      .help = "CPU cores per node (default 96)" },
    { .name = "--mem-per-node-gib",
      .kind = AL_OPT_INT,
      .off = A(mem_gib),
      .min = 0,
      .max = 1000000000,
      .arg = "GIB",
      .help = "memory per node (default 1024)" },
    { .name = "--cluster",
      .kind = AL_OPT_STR,
      .off = A(cluster),
      .arg = "FILE",
      .help = "heterogeneous cluster: node groups (see docs/simulation.md)",
      .flags = AL_OPT_BRIEF },
    { .name = "--queues",
      .kind = AL_OPT_INT,
      .off = A(queues),
      .min = 1,
      .max = 100000,
      .arg = "N",
      .help =
          "N synthetic queues by a stable hash of job_id, each deserving 1/N" },
    { .name = "--queues-file",
      .kind = AL_OPT_STR,
      .off = A(queues_file),
      .arg = "FILE",
      .help = "queue hierarchy with deserved/weight/limit" },
    { .name = "--queues-from",
      .kind = AL_OPT_STR,
      .off = A(queues_from),
      .arg = "queue|user",
      .help = "trace column naming each job's queue (default queue)" },
    { .name = "--policy",
      .kind = AL_OPT_STR,
      .off = A(policy),
      .arg = "P[,P...]",
      .help =
          "allot (default), fifo, static, backfill, tiresias, sjf-oracle, all",
      .flags = AL_OPT_BRIEF },
    { .name = "--checkpoint-interval",
      .kind = AL_OPT_INT,
      .off = A(checkpoint),
      .min = 0,
      .max = INT64_C(1000000000000),
      .arg = "S",
      .help = "seconds between checkpoints; 0 = none (default 1800)" },
    { .name = "--restart-overhead",
      .kind = AL_OPT_INT,
      .off = A(restart_overhead),
      .min = 0,
      .max = INT64_C(1000000000),
      .arg = "S",
      .help = "seconds an evicted job holds its GPUs on restart before it "
              "works again, under every policy (default 60)" },
    { .name = "--estimate-factor",
      .kind = AL_OPT_NUM,
      .off = A(estimate_factor),
      .lo = 0.01,
      .hi = 1000,
      .arg = "F",
      .help = "runtime estimate = duration x F (default 2)" },
    { .name = "--estimate-noise",
      .kind = AL_OPT_NUM,
      .off = A(estimate_noise),
      .lo = 0,
      .hi = 10,
      .arg = "S",
      .help =
          "log-normal error: each job's estimate x exp(S x z), z standard "
          "normal from --estimate-seed and the job's id (default 0: none)" },
    { .name = "--estimate-seed",
      .kind = AL_OPT_INT,
      .off = A(estimate_seed),
      .min = 0,
      .max = INT64_C(1000000000000000),
      .arg = "N",
      .help = "seed of the --estimate-noise draws (default 1)" },
    { .name = "--usage-half-life",
      .kind = AL_OPT_INT,
      .off = A(half_life),
      .min = 0,
      .max = INT64_C(1000000000000),
      .arg = "S",
      .help = "half-life of queue usage history (default 604800)" },
    { .name = "--usage-weight",
      .kind = AL_OPT_NUM,
      .off = A(usage_weight),
      .lo = 0,
      .hi = 1000,
      .arg = "W",
      .help = "how strongly decayed usage bends fair share (core default 1; 0 "
              "off)" },
    { .name = "--pack",
      .kind = AL_OPT_STR,
      .off = A(pack),
      .arg = "bin|spread|frag",
      .help =
          "placement: bin-packing (default), spread, or fragmentation-aware "
          "(FGD; with --fill, judged against the whole trace's pod shapes)" },
    { .name = "--dag",
      .kind = AL_OPT_STR,
      .off = A(dag),
      .arg = "on|off|blind|hold",
      .help = "pipelines (trace columns pipeline_id,stage,needs): on, the "
              "scheduler knows the graph (critical path, look-ahead; "
              "default); off, it ignores it; blind, each stage is submitted "
              "when what it needs has ended; hold, on and look-aheads hold "
              "free GPUs for the next stage" },
    { .name = "--order",
      .kind = AL_OPT_STR,
      .off = A(order),
      .arg = "short|fifo",
      .help =
          "order inside a queue: shortest expected runtime first (allot's "
          "default) or first come first served (the baselines'); applies to "
          "every policy of the run" },
    { .name = "--tick",
      .kind = AL_OPT_INT,
      .off = A(tick),
      .min = 0,
      .max = INT64_C(1000000000),
      .arg = "S",
      .help =
          "also run a cycle every S seconds while jobs pend (default 0: only "
          "on events)" },
    { .name = "--service-levels",
      .kind = AL_OPT_STR,
      .off = A(levels),
      .arg = "A[,B..]|off",
      .help = "the allot policy's attained-service thresholds in "
              "GPU-seconds (least attained service first inside a queue; "
              "up to 4), or off (default: the core's)" },
    { .name = "--tiresias-thresholds",
      .kind = AL_OPT_STR,
      .off = A(tiresias),
      .arg = "A[,B..]",
      .help =
          "attained GPU-seconds at which Tiresias jobs drop a level (default "
          "3600,36000)" },
    { .name = "--fill",
      .kind = AL_OPT_NUM,
      .off = A(fill),
      .lo = 1,
      .hi = 100,
      .arg = "RATIO",
      .help =
          "placement experiment (FGD's method): pods in shuffled order, never "
          "leaving, until requested GPUs reach RATIO x capacity" },
    { .name = "--seeds",
      .kind = AL_OPT_STR,
      .off = A(seeds),
      .arg = "A-B|A,B,..",
      .help = "seeds of --fill runs (default 42-51)" },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = A(json),
      .help = "print one JSON object per policy instead of tables",
      .flags = AL_OPT_BRIEF },
    { .name = "--report",
      .kind = AL_OPT_STR,
      .off = A(report),
      .arg = "FILE",
      .help = "write an HTML report",
      .flags = AL_OPT_BRIEF },
    { .name = "--title",
      .kind = AL_OPT_STR,
      .off = A(title),
      .arg = "TEXT",
      .help = "title of the HTML report" },
    { .name = "--timeseries",
      .kind = AL_OPT_STR,
      .off = A(timeseries),
      .arg = "FILE",
      .help =
          "write a CSV time series (FILE.<policy>.csv with several policies)" },
    { .name = "--jobs-csv",
      .kind = AL_OPT_STR,
      .off = A(jobs_csv),
      .arg = "FILE",
      .help =
          "write one row per job (FILE.<policy>.csv with several policies)" },
    { .name = "--progress",
      .kind = AL_OPT_FLAG,
      .off = A(progress),
      .help = "progress on stderr even when it is not a terminal" },
    { .name = "--quiet",
      .kind = AL_OPT_FLAG,
      .off = A(quiet),
      .help = "no progress on stderr" },
    { .name = "--no-timing",
      .kind = AL_OPT_FLAG,
      .off = A(no_timing),
      .help = "write 0 for wall-clock figures, so output is byte-for-byte "
              "reproducible" },
    { .name = "--help",
      .kind = AL_OPT_FLAG,
      .off = A(help),
      .help = "this text" },
    { .name = NULL },
};

#undef A

const al_opt_cmd_t al_cli_sim_cmd = { .name = "sim", .opts = options };

/* Splits a comma list of policies; returns the count or -1. */
static int
parse_policies(const char *list, al_policy_t *out, int max)
{
    int n = 0;
    const char *p = list;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        char name[32];
        if (len == 0 || len >= sizeof name) {
            fprintf(stderr, "allot sim: --policy: bad list '%s'\n", list);
            return -1;
        }
        memcpy(name, p, len);
        name[len] = '\0';
        if (strcmp(name, "all") == 0) {
            for (int k = 0; k < AL_POLICY_COUNT && n < max; k++)
                out[n++] = (al_policy_t)k;
        } else {
            int k = al_policy_find(name);
            if (k < 0) {
                fprintf(stderr,
                        "allot sim: --policy: unknown policy '%s' (allot, "
                        "fifo, static, backfill, tiresias, sjf-oracle)\n",
                        name);
                return -1;
            }
            if (n == max) {
                fprintf(stderr, "allot sim: --policy: too many policies\n");
                return -1;
            }
            out[n++] = (al_policy_t)k;
        }
        p += len + (c ? 1 : 0);
    }
    if (n == 0) {
        fprintf(stderr, "allot sim: --policy: empty list\n");
        return -1;
    }
    return n;
}

static int
parse_thresholds(const char *list, al_sim_opts_t *o)
{
    int n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end != ',' && *end != '\0') || !(v > 0) || n == 4 ||
            (n > 0 && v <= o->tiresias_thresholds[n - 1])) {
            fprintf(stderr,
                    "allot sim: --tiresias-thresholds: expected up to 4 "
                    "increasing positive numbers, got '%s'\n",
                    list);
            return -1;
        }
        o->tiresias_thresholds[n++] = v;
        p = *end ? end + 1 : end;
    }
    o->ntiresias = n;
    return 0;
}

static int
parse_levels(const char *list, al_sim_opts_t *o)
{
    int n = 0;
    const char *p = list;

    memset(o->service_levels, 0, sizeof(o->service_levels));
    o->service_levels_set = true;
    if (strcmp(list, "off") == 0)
        return 0;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0') || v <= 0 || n == 4 ||
            (n > 0 && v <= o->service_levels[n - 1])) {
            fprintf(stderr,
                    "allot sim: --service-levels: expected off or up to 4 "
                    "increasing positive integers, got '%s'\n",
                    list);
            return -1;
        }
        o->service_levels[n++] = v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

/* FILE.csv -> FILE.<policy>.csv when several policies write time series. */
static char *
per_policy_path(const char *path, const char *policy, bool several)
{
    size_t len = strlen(path) + strlen(policy) + 2;
    char *out = malloc(len + 1);
    if (out == NULL)
        abort();
    if (!several) {
        snprintf(out, len + 1, "%s", path);
        return out;
    }
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot == NULL || (slash && dot < slash))
        dot = path + strlen(path);
    snprintf(out, len + 1, "%.*s.%s%s", (int)(dot - path), path, policy, dot);
    return out;
}

/* Parses "42-51" or "1,2,3" into seeds; returns the count or -1. */
static int
parse_seeds(const char *list, uint64_t *out, int max)
{
    int n = 0;
    const char *p = list;
    while (*p) {
        char *end;
        unsigned long long a = strtoull(p, &end, 10), b = a;
        if (end == p)
            return -1;
        if (*end == '-') {
            p = end + 1;
            b = strtoull(p, &end, 10);
            if (end == p || b < a || b - a > 10000)
                return -1;
        }
        for (unsigned long long x = a; x <= b; x++) {
            if (n == max)
                return -1;
            out[n++] = x;
        }
        if (*end != ',' && *end != '\0')
            return -1;
        p = *end ? end + 1 : end;
    }
    return n > 0 ? n : -1;
}

/*
 * --fill: FGD's placement experiment.  For each policy and seed, the pods
 * are resampled to RATIO x capacity, arrive one a second and never leave; a
 * pod the core does not place on arrival is dropped.  Prints per run the
 * allocation share when arrived demand reached 100% of capacity and at the
 * end, then the mean over seeds.
 */
static int
run_fill(const args_t *a, const al_trace_t *tr, const al_cluster_t *cl,
         al_sim_opts_t *o, const al_policy_t *pols, int npol)
{
    uint64_t seeds[1024];
    int nseeds = parse_seeds(a->seeds ? a->seeds : "42-51", seeds, 1024);
    if (nseeds < 0) {
        fprintf(stderr, "allot sim: --seeds: expected A-B or A,B,...\n");
        return 2;
    }
    o->drop_unplaced = true;
    /* FGD judges fragmentation against the "typical pods" of the whole pod
     * list (known in advance): its most popular shapes, covering 95% of
     * pods. */
    al_shape_t *profile = NULL;
    if (o->pack == AL_PACK_FRAG) {
        o->nprofile = al_sim_profile(tr, cl, 0.95, &profile);
        o->profile = profile;
    }
    for (int k = 0; k < npol; k++) {
        double sum_full = 0, sum_end = 0;
        for (int i = 0; i < nseeds; i++) {
            al_trace_t *rs = al_trace_resample(
                tr, seeds[i], (int64_t)(a->fill * (double)cl->gpu_capacity),
                (int64_t)1 << 40);
            al_sim_result_t *r = NULL;
            char *cause = NULL;
            o->policy = pols[k];
            int rc = al_sim_run(rs, cl, o, &r, &cause);
            if (rc < 0) {
                fprintf(stderr, "allot sim: policy %s seed %llu: %s\n",
                        al_policy_name(pols[k]), (unsigned long long)seeds[i],
                        cause ? cause : "");
                free(cause);
                al_trace_destroy(rs);
                o->nprofile = 0;
                o->profile = NULL;
                free(profile);
                return 1;
            }
            int placed = 0;
            for (int j = 0; j < r->njobs; j++)
                placed += r->jobs[j].first_start >= 0;
            /* RATIO >= 1, so demand reaches capacity unless the trace asks
             * for no GPUs at all. */
            if (r->alloc_at_full < 0)
                r->alloc_at_full = r->alloc_at_end;
            sum_full += r->alloc_at_full;
            sum_end += r->alloc_at_end;
            if (a->json)
                printf("{\"policy\":\"%s\",\"seed\":%llu,\"pods\":%d,"
                       "\"placed\":%d,\"failed\":%d,\"capacity_gpus\":%.0f,"
                       "\"alloc_at_100\":%.6f,\"alloc_at_end\":%.6f,"
                       "\"arrived_end\":%.6f,\"sim_wall_s\":%.3f}\n",
                       al_policy_name(pols[k]), (unsigned long long)seeds[i],
                       r->njobs, placed, r->njobs - placed,
                       (double)cl->gpu_capacity / 1000, r->alloc_at_full,
                       r->alloc_at_end, r->arrived_end,
                       a->no_timing ? 0 : r->wall_s);
            else
                printf("%-10s seed %-4llu pods %6d placed %6d  allocated "
                       "%.2f%% at 100%% arrived, %.2f%% at %.0f%%  (%.1fs)\n",
                       al_policy_name(pols[k]), (unsigned long long)seeds[i],
                       r->njobs, placed, 100 * r->alloc_at_full,
                       100 * r->alloc_at_end, 100 * r->arrived_end,
                       a->no_timing ? 0 : r->wall_s);
            fflush(stdout);
            al_sim_result_destroy(r);
            al_trace_destroy(rs);
        }
        if (a->json)
            printf("{\"policy\":\"%s\",\"seeds\":%d,"
                   "\"mean_alloc_at_100\":%.6f,\"mean_alloc_at_end\":%.6f}\n",
                   al_policy_name(pols[k]), nseeds, sum_full / nseeds,
                   sum_end / nseeds);
        else
            printf("%-10s mean of %d seeds: %.2f%% at 100%% arrived, %.2f%% "
                   "at the end\n",
                   al_policy_name(pols[k]), nseeds, 100 * sum_full / nseeds,
                   100 * sum_end / nseeds);
    }
    o->nprofile = 0;
    o->profile = NULL;
    free(profile);
    return 0;
}

static void
print_error(const char *what, char *cause)
{
    fprintf(stderr, "allot sim: %s\n%s\n", what, cause ? cause : "");
    free(cause);
}

/* Checks the arguments and fills the options and policies; 0 or an exit
 * status. */
static int
check_args(const args_t *a, al_sim_opts_t *o, al_policy_t *pols, int *npol)
{
    if (a->trace == NULL) {
        fprintf(stderr, "allot sim: --trace FILE is required (try --help)\n");
        return 2;
    }
    if ((a->cluster != NULL) == (a->nodes > 0)) {
        fprintf(stderr, "allot sim: give either --nodes N (with "
                        "--gpus-per-node) or --cluster FILE\n");
        return 2;
    }
    if ((a->queues > 0) + (a->queues_file != NULL) + (a->queues_from != NULL) >
        1) {
        fprintf(stderr, "allot sim: --queues, --queues-file and "
                        "--queues-from exclude each other\n");
        return 2;
    }
    al_sim_opts_default(o);
    if (a->queues_from != NULL && strcmp(a->queues_from, "user") == 0) {
        o->qmode = AL_QMODE_USER;
    } else if (a->queues_from != NULL && strcmp(a->queues_from, "queue") != 0) {
        fprintf(stderr, "allot sim: --queues-from: expected queue or user\n");
        return 2;
    }
    if (a->queues > 0) {
        o->qmode = AL_QMODE_HASH;
        o->nqueues = (int)a->queues;
    }
    if (a->tiresias && parse_thresholds(a->tiresias, o) < 0)
        return 2;
    if (a->levels && parse_levels(a->levels, o) < 0)
        return 2;
    *npol = parse_policies(a->policy, pols, 16);
    if (*npol < 0)
        return 2;
    o->checkpoint = a->checkpoint;
    o->restart_overhead = a->restart_overhead;
    o->estimate_factor = a->estimate_factor;
    o->estimate_noise = a->estimate_noise;
    o->estimate_seed = (uint64_t)a->estimate_seed;
    o->usage_half_life = a->half_life;
    o->usage_weight = a->usage_weight;
    if (a->pack != NULL) {
        static const char *const packs[] = { "bin", "spread", "frag" };
        size_t i;

        for (i = 0; i < sizeof(packs) / sizeof(packs[0]); i++)
            if (strcmp(a->pack, packs[i]) == 0)
                o->pack = (int)i;
        if (o->pack < 0) {
            fprintf(stderr,
                    "allot sim: --pack: expected bin, spread or "
                    "frag, got '%s'\n",
                    a->pack);
            return 2;
        }
    }
    if (a->order != NULL) {
        if (strcmp(a->order, "short") == 0) {
            o->short_first = 1;
        } else if (strcmp(a->order, "fifo") == 0) {
            o->short_first = 0;
        } else {
            fprintf(stderr,
                    "allot sim: --order: expected short or fifo, got '%s'\n",
                    a->order);
            return 2;
        }
    }
    if (a->dag != NULL) {
        int d = al_sim_dag_find(a->dag);
        if (d < 0) {
            fprintf(stderr,
                    "allot sim: --dag: expected on, off, blind or hold, got "
                    "'%s'\n",
                    a->dag);
            return 2;
        }
        o->dag = (al_sim_dag_t)d;
    }
    o->tick = a->tick;
    o->no_timing = a->no_timing;
    o->progress = !a->quiet && (a->progress || isatty(2));
    return 0;
}

typedef struct inputs {
    al_trace_t *tr;
    al_cluster_t *cl;
    al_queues_t *qf;
} inputs_t;

/* Reads every input file; all are checked before anything runs.  Returns 0
 * or an exit status. */
static int
load_inputs(const args_t *a, al_sim_opts_t *o, inputs_t *in)
{
    char *cause = NULL;
    if (al_trace_load(a->trace, a->filter_queue, &in->tr, &cause) < 0) {
        print_error("the trace is malformed; nothing was run:", cause);
        return 1;
    }
    if (a->cluster) {
        if (al_cluster_load(a->cluster, &in->cl, &cause) < 0) {
            print_error("the cluster file is malformed:", cause);
            return 1;
        }
    } else {
        in->cl = al_cluster_homogeneous((int)a->nodes, (int)a->gpus_per_node,
                                        a->gpu_model, (int)a->nodes_per_rack,
                                        (int)a->cpus_per_node, a->mem_gib);
        if (in->cl == NULL) {
            fprintf(stderr, "allot sim: bad cluster size\n");
            return 2;
        }
    }
    if (a->queues_file) {
        if (al_queues_load(a->queues_file, &in->qf, &cause) < 0) {
            print_error("the queues file is malformed:", cause);
            return 1;
        }
        o->qmode = AL_QMODE_FILE;
        o->qfile = in->qf;
    }
    if (in->tr->njobs == 0) {
        fprintf(stderr, "allot sim: %s: no jobs%s%s\n", a->trace,
                a->filter_queue ? " with queue " : "",
                a->filter_queue ? a->filter_queue : "");
        return 1;
    }
    return 0;
}

/* Writes r's rows to path (with the policy's name in it when several
 * policies run); 0 or -1. */
static int
write_jobs_csv(const char *path, const al_sim_result_t *r, bool several)
{
    char *p = per_policy_path(path, al_policy_name(r->policy), several);
    FILE *f = fopen(p, "w");
    if (f == NULL) {
        perror(p);
        free(p);
        return -1;
    }
    al_report_jobs_csv(f, r);
    int rc = fclose(f);
    if (rc != 0)
        perror(p);
    free(p);
    return rc == 0 ? 0 : -1;
}

/* Runs one policy and prints its figures; 0 or an exit status. */
static int
run_policy(const args_t *a, const inputs_t *in, al_sim_opts_t *o, bool several,
           al_sim_result_t **res)
{
    FILE *ts = NULL;
    char *cause = NULL;
    if (a->timeseries) {
        char *path =
            per_policy_path(a->timeseries, al_policy_name(o->policy), several);
        ts = fopen(path, "w");
        if (ts == NULL)
            perror(path);
        free(path);
        if (ts == NULL)
            return 1;
    }
    o->timeseries = ts;
    int rc = al_sim_run(in->tr, in->cl, o, res, &cause);
    o->timeseries = NULL;
    if (ts != NULL && fclose(ts) != 0) {
        perror(a->timeseries);
        if (rc == 0)
            return 1;
    }
    if (rc < 0) {
        char what[96];
        snprintf(what, sizeof what,
                 "policy %s: the run failed (%s):", al_policy_name(o->policy),
                 al_err_name(rc));
        print_error(what, cause);
        return 1;
    }
    if (a->no_timing) {
        (*res)->wall_s = 0;
        (*res)->core_ms = 0;
    }
    if (a->jobs_csv && write_jobs_csv(a->jobs_csv, *res, several) < 0)
        return 1;
    if (a->json)
        al_report_json(stdout, *res);
    else
        al_report_table(stdout, *res);
    fflush(stdout);
    return 0;
}

static int
write_report(const args_t *a, al_sim_result_t *const *res, int n)
{
    FILE *f = fopen(a->report, "w");
    if (f == NULL) {
        perror(a->report);
        return 1;
    }
    char title[512];
    snprintf(title, sizeof title, "allot sim: %s%s%s", a->trace,
             a->filter_queue ? " / " : "",
             a->filter_queue ? a->filter_queue : "");
    al_report_html(f, a->title ? a->title : title,
                   (const al_sim_result_t *const *)res, n);
    if (fclose(f) != 0) {
        perror(a->report);
        return 1;
    }
    return 0;
}

int
al_cli_sim(int argc, char **argv)
{
    args_t a = { 0 };
    a.gpus_per_node = 8;
    a.cpus_per_node = 96;
    a.mem_gib = 1024;
    a.checkpoint = 1800;
    a.restart_overhead = 60;
    a.estimate_factor = 2.0;
    a.estimate_seed = 1;
    a.half_life = (int64_t)7 * 86400;
    a.usage_weight = -1;
    a.policy = "allot";
    int npos;
    if (al_opt_parse_cmd(&al_cli_sim_cmd, NULL, &a, argc, argv, NULL, 0,
                         &npos) != 0)
        return 2;
    if (a.help) {
        al_opt_usage(stdout, &al_cli_sim_cmd);
        return 0;
    }
    al_sim_opts_t o;
    al_policy_t pols[16];
    int npol = 0;
    int status = check_args(&a, &o, pols, &npol);
    if (status != 0)
        return status;

    inputs_t in = { 0 };
    al_sim_result_t *res[16] = { 0 };
    status = load_inputs(&a, &o, &in);
    if (status == 0 && a.fill > 0) {
        /* One queue unless the user asked otherwise: reclaim between
         * queues would evict pods, which never happens in FGD's method. */
        if (a.queues == 0 && a.queues_file == NULL && a.queues_from == NULL) {
            o.qmode = AL_QMODE_HASH;
            o.nqueues = 1;
        }
        o.progress = false;
        status = run_fill(&a, in.tr, in.cl, &o, pols, npol);
    } else if (status == 0) {
        for (int k = 0; k < npol && status == 0; k++) {
            o.policy = pols[k];
            status = run_policy(&a, &in, &o, npol > 1, &res[k]);
        }
        if (status == 0 && a.report)
            status = write_report(&a, res, npol);
    }
    for (int k = 0; k < 16; k++)
        al_sim_result_destroy(res[k]);
    al_queues_destroy(in.qf);
    al_cluster_destroy(in.cl);
    al_trace_destroy(in.tr);
    return status;
}
