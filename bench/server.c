/*
 * bench/server -- the controller's read-side costs, in process, on a
 * generated cluster: rendering GET /metrics, the wastage look after each
 * cycle, one sample of the usage history, and usage queries over a year
 * of hourly rows in a real SQLite store.  One JSON line of figures (the
 * median of --reps runs each); see bench/README.md for the targets.
 *
 *   bench/server [--nodes N] [--jobs N] [--queues N] [--reps N]
 *                [--metrics-only]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api_int.h"
#include "buf.h"
#include "clock.h"
#include "json.h"
#include "store_int.h"
#include "xmalloc.h"

static double
now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* This thread's CPU time: on a shared machine the wall clock counts the
 * time other processes had the CPU too. */
static double
cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int
cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static void
die(const char *what)
{
    fprintf(stderr, "bench/server: %s\n", what);
    exit(1);
}

/* nodes of 8 H100s (a fifth A100s), nqueues queues, njobs jobs: the first
 * three quarters of the GPUs' worth running, the rest pending. */
static void
build(al_ctl_t *ctl, int nnodes, int njobs, int nqueues)
{
    for (int i = 0; i < nnodes; i++) {
        al_buf_t b;
        al_buf_init(&b);
        al_buf_printf(&b,
                      "{\"name\": \"node-%05d\", \"addr\": \"10.0.%d.%d\", "
                      "\"cpu_milli\": 128000, \"mem_bytes\": 2199023255552, "
                      "\"gpus\": [",
                      i, i / 250, i % 250);
        for (int g = 0; g < 8; g++)
            al_buf_printf(&b, "%s{\"uuid\": \"GPU-%d-%d\", \"model\": \"%s\"}",
                          g ? ", " : "", i, g, i % 5 == 0 ? "A100" : "H100");
        al_buf_puts(&b, "]}");
        json_t *j = al_json_parse(b.data, b.len, NULL);
        al__node_t n;
        char *cause = NULL;
        if (al__node_from_json(j, &n, &cause) != 0)
            die("node body");
        json_decref(j);
        al_buf_fini(&b);
        int k = al__ctl_add_node(ctl, &n);
        ctl->nodes[k].last_seen = 1;
        for (int g = 0; g < 8; g++)
            ctl->nodes[k].gpus[g].sample = (al__gpu_sample_t){
                .util = 40 + g * 5, .temp_c = 50, .at_ms = 1
            };
    }
    ctl->queues = al_xcalloc((size_t)nqueues, sizeof *ctl->queues);
    ctl->nqueues = nqueues;
    for (int q = 0; q < nqueues; q++) {
        char name[32];
        snprintf(name, sizeof name, "project-%02d", q);
        ctl->queues[q].name = al_xstrdup(name);
        ctl->queues[q].quota[AL_RES_GPU].deserved =
            (int64_t)nnodes * 8 * AL_GPU_MILLI / nqueues;
        ctl->queues[q].share.allocated[AL_RES_GPU] =
            (int64_t)nnodes * 6 * AL_GPU_MILLI / nqueues;
        ctl->queues[q].share.fair[AL_RES_GPU] =
            ctl->queues[q].quota[AL_RES_GPU].deserved;
    }
    int node = 0, dev = 0;
    int running = nnodes * 6; /* one GPU each: three quarters of them */
    for (int i = 0; i < njobs; i++) {
        al__job_t *j = al_xcalloc(1, sizeof *j);
        j->id = (uint64_t)i + 1;
        char q[32];
        snprintf(q, sizeof q, "project-%02d", i % nqueues);
        j->name = al_xstrdup("train");
        j->user = al_xstrdup(i % 3 ? "alice" : "bob");
        j->queue = al_xstrdup(q);
        j->ntasks = 1;
        j->gpus = i % 7 == 0 ? 2 : 1;
        j->cpu_milli = 1000;
        j->mem_bytes = 1 << 30;
        j->spec = al_xstrdup("{\"command\": [\"python\", \"train.py\"]}");
        j->submit_ms = 1;
        j->snap = -1;
        j->qidx = i % nqueues; /* as a cycle leaves it */
        j->qgen = ctl->queue_gen + 1;
        if (i < running && node < nnodes) {
            j->state = JS_RUNNING;
            j->tasks = al_xcalloc(1, sizeof *j->tasks);
            j->tasks[0] = (al__task_t){ .node = node,
                                        .devices = UINT64_C(1) << dev,
                                        .log_size = -1 };
            j->gpus = 1;
            if (++dev == 6)
                dev = 0, node++;
        } else {
            j->state = JS_PENDING;
            j->why =
                (al_reason_t){ .code = i % 2 ? AL_WHY_CAPACITY : AL_WHY_LIMIT,
                               .queue = -1,
                               .job = -1 };
            j->why_valid = true;
        }
        al__ctl_put_job(ctl, j);
    }
    al__ctl_index_running(ctl);
    al__jobcounts_rebuild(ctl);
}

/* Telemetry as fresh as the agents keep it: a sample adds to each running
 * job's used GPU-seconds, and the loop writes those jobs too. */
static void
fresh_telemetry(al_ctl_t *ctl, int64_t at_ms)
{
    for (int k = 0; k < ctl->nnodes; k++)
        for (int g = 0; g < ctl->nodes[k].ngpus; g++)
            ctl->nodes[k].gpus[g].sample.at_ms = at_ms;
}

/* The jobs a sample changed, written as the loop's flush does. */
static void
write_dirty(al_ctl_t *ctl)
{
    for (size_t k = 0; k < ctl->ndirty; k++) {
        ctl->dirty[k]->dirty = false;
        if (al__store_put_job(ctl, ctl->dirty[k]) != 0)
            die("put_job");
    }
    ctl->ndirty = 0;
}

int
main(int argc, char **argv)
{
    int nnodes = 1000, njobs = 100000, nqueues = 50, reps = 7;
    bool metrics_only = false;
    for (int i = 1; i < argc; i += 2) {
        if (strcmp(argv[i], "--metrics-only") == 0) {
            metrics_only = true;
            i--;
            continue;
        }
        if (i + 1 >= argc)
            die("usage: bench/server [--nodes N] [--jobs N] [--queues N] "
                "[--reps N] [--metrics-only]");
        int v = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--nodes") == 0 && v > 0)
            nnodes = v;
        else if (strcmp(argv[i], "--jobs") == 0 && v > 0)
            njobs = v;
        else if (strcmp(argv[i], "--queues") == 0 && v > 0)
            nqueues = v;
        else if (strcmp(argv[i], "--reps") == 0 && v > 0)
            reps = v;
        else
            die("usage: bench/server [--nodes N] [--jobs N] [--queues N] "
                "[--reps N] [--metrics-only]");
    }
    if (reps > 64)
        reps = 64;
    al_ctl_t ctl;
    memset(&ctl, 0, sizeof ctl);
    build(&ctl, nnodes, njobs, nqueues);

    double t[64], tc[64];
    size_t bytes = 0;
    for (int r = 0; r < reps; r++) {
        al_buf_t b;
        al_buf_init(&b);
        double t0 = now_ms(), c0 = cpu_ms();
        al__metrics_render(&ctl, 1000, &b);
        t[r] = now_ms() - t0;
        tc[r] = cpu_ms() - c0;
        bytes = b.len;
        al_buf_fini(&b);
    }
    double metrics_ms = median(t, reps);
    double metrics_cpu_ms = median(tc, reps);
    /* The reference, in the same run: the same bytes through the same
     * kind of buffer in pieces of an exposition line's length, without
     * looking at the tables or formatting anything. */
    char *same = al_xmalloc(bytes + 1);
    memset(same, 'x', bytes);
    for (int r = 0; r < reps; r++) {
        al_buf_t b;
        al_buf_init(&b);
        double t0 = now_ms(), c0 = cpu_ms();
        for (size_t off = 0; off < bytes; off += 64)
            al_buf_append(&b, same + off, bytes - off < 64 ? bytes - off : 64);
        t[r] = now_ms() - t0;
        tc[r] = cpu_ms() - c0;
        al_buf_fini(&b);
    }
    free(same);
    double metrics_ref_ms = median(t, reps);
    double metrics_ref_cpu_ms = median(tc, reps);
    if (metrics_only) {
        printf("{\"nodes\":%d,\"jobs\":%d,\"queues\":%d,\"reps\":%d,"
               "\"metrics_render_ms\":%.3f,\"metrics_render_cpu_ms\":%.3f,"
               "\"metrics_bytes\":%zu,\"metrics_ref_copy_ms\":%.3f,"
               "\"metrics_ref_copy_cpu_ms\":%.3f,"
               "\"metrics_cpu_over_ref\":%.2f}\n",
               nnodes, njobs, nqueues, reps, metrics_ms, metrics_cpu_ms, bytes,
               metrics_ref_ms, metrics_ref_cpu_ms,
               metrics_cpu_ms / metrics_ref_cpu_ms);
        return 0;
    }

    /* A look after each cycle (by model), and the look by queue taken
     * every five seconds. */
    for (int r = 0; r < reps; r++) {
        al__waste_observe(&ctl, 2000, 1000000 + r * 100000);
        double t0 = now_ms();
        al__waste_observe(&ctl, 2000, 1000000 + r * 100000 + 1000);
        t[r] = now_ms() - t0;
    }
    double waste_ms = median(t, reps);
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        al__waste_observe(&ctl, 2000, 5000000 + r * 100000);
        t[r] = now_ms() - t0;
    }
    double waste_queue_ms = median(t, reps);

    /* A real SQLite store in a temporary state directory. */
    char dir[] = "/tmp/allot-bench-server-XXXXXX";
    if (mkdtemp(dir) == NULL)
        die("mkdtemp");
    ctl.state_dir = dir;
    al_server_opts_default(&ctl.opts);
    ctl.opts.store = NULL;
    char *cause = NULL;
    if (al__store_open(&ctl, &cause) != 0)
        die(cause ? cause : "store");

    /* One sample: a row per queue and per model; its CPU time with its
     * commit's (the controller's loop pays both). */
    int64_t now = (int64_t)time(NULL);
    double sc[64];
    for (int r = 0; r < reps; r++) {
        ctl.usage.next_t = 1; /* due */
        ctl.usage.rolled_t = INT64_MAX / 2;
        if (al__store_begin(&ctl) != 0)
            die("begin");
        fresh_telemetry(&ctl, (now + (int64_t)r * 60) * 1000);
        double t0 = now_ms(), c0 = cpu_ms();
        al__usage_tick(&ctl, (now + r * 60) * 1000);
        t[r] = now_ms() - t0;
        write_dirty(&ctl);
        if (al__store_commit(&ctl) != 0)
            die("commit");
        sc[r] = cpu_ms() - c0;
    }
    double sample_ms = median(t, reps);
    double sample_cpu_ms = median(sc, reps);

    /* A year of hour rows: one per queue and per model. */
    int64_t year0 = (now / 3600 - 8760) * 3600;
    if (al__store_begin(&ctl) != 0)
        die("begin");
    for (int h = 0; h < 8760; h++) {
        char st[8] = "3600", ts[24], a[32], d[32];
        snprintf(ts, sizeof ts, "%lld", (long long)(year0 + h * 3600));
        for (int q = 0; q < nqueues + 2; q++) {
            snprintf(a, sizeof a, "%d", (h * 7 + q) % 40);
            snprintf(d, sizeof d, "%d", 160);
            const char *queue = q < nqueues ? ctl.queues[q].name : "";
            const char *model = q < nqueues    ? ""
                                : q == nqueues ? "H100"
                                               : "A100";
            const char *v[12] = {
                st, ts, queue, model, d, a, a, d, d, a, a, a
            };
            if (al__store_write(&ctl, "usage_put", 12, v) != 0)
                die("usage_put");
        }
    }
    if (al__store_commit(&ctl) != 0)
        die("commit");
    /* A queue's page (one series), the overview (the models), and every
     * queue at once. */
    double q_queue[64], q_model[64], q_all[64], q_queue_cpu[64];
    for (int r = 0; r < reps; r++) {
        int64_t to = year0 + 8760 * 3600;
        double t0 = now_ms(), c0 = cpu_ms();
        json_t *j = al__usage_series(&ctl, year0, to, 3600, false,
                                     ctl.queues[r % nqueues].name);
        q_queue[r] = now_ms() - t0;
        q_queue_cpu[r] = cpu_ms() - c0;
        if (json_array_size(json_object_get(j, "series")) != 1)
            die("one queue's series");
        json_decref(j);
        t0 = now_ms();
        j = al__usage_series(&ctl, year0, to, 3600, true, NULL);
        q_model[r] = now_ms() - t0;
        json_decref(j);
        t0 = now_ms();
        j = al__usage_series(&ctl, year0, to, 3600, false, NULL);
        q_all[r] = now_ms() - t0;
        json_decref(j);
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        json_t *j = al__usage_report(
            &ctl, year0 * 1000, (year0 + 8760 * 3600) * 1000, "queue", NULL);
        t[r] = now_ms() - t0;
        json_decref(j);
    }
    double report_ms = median(t, reps);
    /* A job's store row, as the loop writes it at each change of state:
     * written directly (jobtext.c), and, for reference, as the tree the
     * API builds, dumped.  Per job, over every job. */
    double *tt = al_xcalloc((size_t)reps, sizeof *tt);
    for (int r = 0; r < reps; r++) {
        double t0 = now_ms();
        for (uint64_t i = 0; i < ctl.njobs; i++)
            if (ctl.jobs[i] != NULL)
                free(al__job_text(&ctl, ctl.jobs[i], true));
        t[r] = (now_ms() - t0) * 1000 / (double)njobs;
        t0 = now_ms();
        for (uint64_t i = 0; i < ctl.njobs; i++)
            if (ctl.jobs[i] != NULL) {
                json_t *d = al__job_json(&ctl, ctl.jobs[i], true);
                free(al_json_dump(d));
                json_decref(d);
            }
        tt[r] = (now_ms() - t0) * 1000 / (double)njobs;
    }
    double row_us = median(t, reps), row_tree_us = median(tt, reps);
    free(tt);
    al__store_close(&ctl);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench/server: could not remove %s\n", dir);

    printf("{\"nodes\":%d,\"jobs\":%d,\"queues\":%d,\"reps\":%d,"
           "\"metrics_render_ms\":%.3f,\"metrics_render_cpu_ms\":%.3f,"
           "\"metrics_bytes\":%zu,\"metrics_ref_copy_ms\":%.3f,"
           "\"waste_look_ms\":%.3f,\"waste_look_by_queue_ms\":%.3f,"
           "\"usage_sample_ms\":%.3f,"
           "\"usage_sample_cpu_share\":%.6f,"
           "\"usage_sample_commit_cpu_ms\":%.3f,"
           "\"usage_sample_commit_cpu_share\":%.6f,"
           "\"usage_year_hourly_one_queue_ms\":%.3f,"
           "\"usage_year_hourly_one_queue_cpu_ms\":%.3f,"
           "\"usage_year_hourly_by_model_ms\":%.3f,"
           "\"usage_year_hourly_all_queues_ms\":%.3f,"
           "\"report_year_ms\":%.3f,\"job_row_us\":%.3f,"
           "\"job_row_tree_us\":%.3f}\n",
           nnodes, njobs, nqueues, reps, metrics_ms, metrics_cpu_ms, bytes,
           metrics_ref_ms, waste_ms, waste_queue_ms, sample_ms,
           sample_ms / 60000.0, sample_cpu_ms, sample_cpu_ms / 60000.0,
           median(q_queue, reps), median(q_queue_cpu, reps),
           median(q_model, reps), median(q_all, reps), report_ms, row_us,
           row_tree_us);
    return 0;
}
