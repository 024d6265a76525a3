/*
 * metrics.c -- GET /metrics: the controller's state in Prometheus' text
 * exposition format (version 0.0.4), rendered from the tables on the loop
 * thread, read-only, into one buffer: jobs by state, queue and class,
 * pending jobs by reason, GPUs by model, each queue's quota, fair share
 * and allocation (what `allot queues` shows, from the same last cycle),
 * nodes, the agents' last syncs and GPU telemetry, and the loop's
 * counters and histograms (al__counters_t).  Names follow Prometheus'
 * conventions: the allot_ prefix, base units in the name, _total on
 * counters, and labels of low cardinality (no job ids).
 *
 * May call: table.c and reason.c (names), and common's buffer; it changes
 * nothing.  route.c's table names its handler.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "buf.h"
#include "clock.h"
#include "svc.h"
#include "xmalloc.h"

/* Reasons by the core's short names (al_reason_name), as labels; then a
 * pending job no cycle has looked at yet, and an array's element waiting
 * for its turn (its array's "%N", or no job yet: array.c gives elements
 * theirs a window at a time). */
#define WHY_UNKNOWN AL__WHY_UNKNOWN
#define WHY_ARRAY AL__WHY_ARRAY

/* Label names of the eviction causes, by AL_EVICT_*. */
static const char *const evict_causes[] = {
    [AL_EVICT_RECLAIM] = "reclaim",
    [AL_EVICT_PREEMPT] = "preempt",
    [AL_EVICT_RESERVATION] = "reservation",
};

static void
head(al_buf_t *b, const char *name, const char *type, const char *help)
{
    al_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Appends s as a label value: backslash, double quote and newline
 * escaped, as the format asks. */
static void
label(al_buf_t *b, const char *s)
{
    size_t plain = strcspn(s, "\\\"\n"); /* most names need no escape */
    al_buf_append(b, s, plain);
    for (s += plain; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"')
            al_buf_putc(b, '\\');
        if (*s == '\n')
            al_buf_puts(b, "\\n");
        else
            al_buf_putc(b, *s);
    }
}

/* " v/10^dec\n" for an integer v: the decimal digits of a quotient
 * by a power of ten, trailing zeros dropped, which is the shortest text
 * that reads back as that double (45 and 2 give 0.45).  Written by hand:
 * printf was most of the time of rendering a large cluster's telemetry. */
static void
fixed(al_buf_t *b, int64_t v, int dec)
{
    char s[48], *e = s + sizeof s, *p = e;
    *--p = '\n';
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    bool digits = false;
    for (int i = 0; i < dec; i++, u /= 10) {
        int d = (int)(u % 10);
        if (d != 0 || digits) {
            *--p = (char)('0' + d);
            digits = true;
        }
    }
    if (digits)
        *--p = '.';
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    if (v < 0)
        *--p = '-';
    *--p = ' ';
    al_buf_append(b, p, (size_t)(e - p));
}

/* A value: integers as such, other numbers in the fewest digits that
 * read back as the same double (0.1, not 0.10000000000000001). */
static void
value(al_buf_t *b, double v)
{
    if (v == (double)(int64_t)v && v > -1e15 && v < 1e15) {
        fixed(b, (int64_t)v, 0);
        return;
    }
    char s[32];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(s, sizeof s, "%.*g", prec, v);
        if (strtod(s, NULL) == v)
            break;
    }
    al_buf_printf(b, " %s\n", s);
}

/* Active jobs (pending, held, running) by queue, state and class, and
 * pending and held ones by reason; ended jobs as counters.  An array
 * counts as its elements, those without a job yet (pending, or held with
 * their array) included; its parent is no job of its own.  The counts
 * are jobcounts.c's, kept as jobs change: no pass over the jobs here. */
static void
render_jobs(const al_ctl_t *ctl, al_buf_t *b)
{
    enum { NACT = JS_RUNNING + 1 };
    size_t nq = (size_t)ctl->nqueues + 1; /* the last: a queue gone */
    uint64_t why[WHY_ARRAY + 1];
    uint64_t *cell = al__jobcounts_cells(ctl, why);
    head(b, "allot_jobs", "gauge",
         "Jobs pending, held or running, by queue, state and class.");
    for (size_t q = 0; q < nq; q++)
        for (int s = 0; s < NACT; s++)
            for (int c = 0; c < al__njclasses; c++) {
                uint64_t n =
                    cell[(q * NACT + (size_t)s) * (size_t)al__njclasses +
                         (size_t)c];
                /* A queue with no jobs still shows its zeros, so that a
                 * query sees 0, not nothing; a queue gone only when it
                 * has jobs. */
                if (q == nq - 1 && n == 0)
                    continue;
                al_buf_puts(b, "allot_jobs{queue=\"");
                label(b, q == nq - 1 ? "" : ctl->queues[q].name);
                al_buf_printf(b, "\",state=\"%s\",class=\"%s\"}",
                              al__jstate_names[s], al__jclasses[c].name);
                value(b, (double)n);
            }
    free(cell);
    head(b, "allot_pending_jobs", "gauge",
         "Jobs pending or held, by why the last scheduling cycle left them "
         "waiting (unknown: no cycle has seen them yet; array: an array's "
         "element waiting for its turn).");
    for (int w = 1; w <= WHY_ARRAY; w++) {
        al_buf_printf(b, "allot_pending_jobs{reason=\"%s\"}",
                      w == WHY_UNKNOWN ? "unknown"
                      : w == WHY_ARRAY ? "array"
                                       : al_reason_name((al_reason_code_t)w));
        value(b, (double)why[w]);
    }
    head(b, "allot_jobs_ended_total", "counter",
         "Jobs that ended, by final state, since the controller started.");
    for (int s = JS_COMPLETED; s < JS_COUNT; s++) {
        al_buf_printf(b, "allot_jobs_ended_total{state=\"%s\"}",
                      al__jstate_names[s]);
        value(b, (double)ctl->counters.ended[s]);
    }
}

/* GPUs by model on the nodes that are not down, and those held by
 * running tasks (a fraction counts as its share). */
/* The deserved milli-GPUs of model in q's own per-model quota, or -1
 * when it has none for it. */
static int64_t
model_deserved(const al__queue_t *q, const char *model)
{
    for (int k = 0; k < q->nmquotas; k++)
        if (q->mquotas[k].model != NULL &&
            strcmp(q->mquotas[k].model, model) == 0)
            return q->mquotas[k].deserved;
    return -1;
}

/* Each queue's borrowed GPUs by model, from what its running tasks hold
 * of each (qm, as render_gpus counts it): a model the queue has a
 * deserved quota of its own for borrows what it holds over that quota;
 * the others share what the queue holds over its deserved GPU quota, in
 * proportion to what it holds of each.  Without per-model quotas they
 * add up to allot_queue_borrowed_gpus (both taken now, not at the last
 * cycle, here). */
static void
render_borrowed(const al_ctl_t *ctl, al_buf_t *b, const char *const *models,
                int nmodels, const int64_t *qm)
{
    head(b, "allot_queue_model_borrowed_gpus", "gauge",
         "GPUs the queue holds over its deserved quota, by model: over the "
         "model's own deserved quota where it has one, else its part of the "
         "queue's borrowing in proportion to what it holds of each model.");
    for (int i = 0; i < ctl->nqueues; i++) {
        const al__queue_t *q = &ctl->queues[i];
        const int64_t *row = &qm[(size_t)i * AL_MAX_MODELS];
        int64_t held = 0, shared = 0;
        for (int m = 0; m < nmodels; m++) {
            held += row[m];
            if (model_deserved(q, models[m]) < 0)
                shared += row[m];
        }
        int64_t over = held - q->quota[AL_RES_GPU].deserved;
        for (int m = 0; m < nmodels; m++) {
            int64_t own = model_deserved(q, models[m]);
            double v;
            if (own >= 0)
                v = row[m] > own ? (double)(row[m] - own) : 0.0;
            else if (over >= shared)
                v = (double)row[m]; /* never more than it holds */
            else if (over > 0)
                v = (double)over * (double)row[m] / (double)shared;
            else
                v = 0.0;
            al_buf_puts(b, "allot_queue_model_borrowed_gpus{queue=\"");
            label(b, q->name);
            al_buf_puts(b, "\",model=\"");
            label(b, models[m]);
            al_buf_puts(b, "\"}");
            value(b, v / AL_GPU_MILLI);
        }
    }
}

static void
render_gpus(const al_ctl_t *ctl, al_buf_t *b)
{
    const char *models[AL_MAX_MODELS];
    int nmodels = 0;
    int64_t total[AL_MAX_MODELS] = { 0 }, milli[AL_MAX_MODELS] = { 0 };
    /* By queue and model too: qm[queue * AL_MAX_MODELS + model]. */
    int64_t *qm =
        al_xcalloc((size_t)ctl->nqueues * AL_MAX_MODELS + 1, sizeof *qm);
    for (int i = 0; i < ctl->nnodes; i++) {
        const al__node_t *n = &ctl->nodes[i];
        if (n->state == NS_DOWN)
            continue;
        for (int g = 0; g < n->ngpus; g++)
            total[al__model_slot(models, &nmodels, n->gpus[g].model)]++;
    }
    for (size_t k = 0; k < ctl->nrunning; k++) {
        const al__job_t *j = ctl->running[k];
        int qi = al__job_qidx(ctl, j);
        for (int t = 0; j->tasks != NULL && t < j->ntasks; t++) {
            const al__task_t *tk = &j->tasks[t];
            if (tk->done || tk->node < 0 || tk->node >= ctl->nnodes)
                continue;
            const al__node_t *n = &ctl->nodes[tk->node];
            for (int g = 0; g < n->ngpus && g < 64; g++) {
                if (!(tk->devices & (UINT64_C(1) << g)))
                    continue;
                int m = al__model_slot(models, &nmodels, n->gpus[g].model);
                int64_t v = tk->gpu_milli > 0 ? tk->gpu_milli : AL_GPU_MILLI;
                milli[m] += v;
                if (qi >= 0)
                    qm[(size_t)qi * AL_MAX_MODELS + (size_t)m] += v;
            }
        }
    }
    head(b, "allot_gpus", "gauge",
         "GPUs on the nodes that are not down, by model.");
    for (int m = 0; m < nmodels; m++) {
        al_buf_puts(b, "allot_gpus{model=\"");
        label(b, models[m]);
        al_buf_puts(b, "\"}");
        value(b, (double)total[m]);
    }
    head(b, "allot_gpus_allocated", "gauge",
         "GPUs held by running tasks, by model (a fraction counts as its "
         "share).");
    for (int m = 0; m < nmodels; m++) {
        al_buf_puts(b, "allot_gpus_allocated{model=\"");
        label(b, models[m]);
        al_buf_puts(b, "\"}");
        value(b, (double)milli[m] / AL_GPU_MILLI);
    }
    head(b, "allot_queue_model_allocated_gpus", "gauge",
         "GPUs held by the queue's running tasks, by model (a fraction "
         "counts as its share).");
    for (int i = 0; i < ctl->nqueues; i++)
        for (int m = 0; m < nmodels; m++) {
            al_buf_puts(b, "allot_queue_model_allocated_gpus{queue=\"");
            label(b, ctl->queues[i].name);
            al_buf_puts(b, "\",model=\"");
            label(b, models[m]);
            al_buf_puts(b, "\"}");
            value(b, (double)qm[(size_t)i * AL_MAX_MODELS + (size_t)m] /
                         AL_GPU_MILLI);
        }
    render_borrowed(ctl, b, models, nmodels, qm);
    free(qm);
}

/* One line of a per-queue metric. */
static void
queue_line(al_buf_t *b, const char *name, const al__queue_t *q, double v)
{
    al_buf_printf(b, "%s{queue=\"", name);
    label(b, q->name);
    al_buf_puts(b, "\"}");
    value(b, v);
}

/* Each queue's deserved quota, fair share and allocation by resource, in
 * base units (GPUs, CPU cores, bytes), as `allot queues` shows them: the
 * quota as set, the rest as of the last cycle. */
static void
render_queues(const al_ctl_t *ctl, al_buf_t *b)
{
    static const struct {
        const char *suffix, *unit;
        double scale;
    } res[AL_NRES] = {
        [AL_RES_GPU] = { "gpus", "GPUs", AL_GPU_MILLI },
        [AL_RES_CPU] = { "cpus", "CPU cores", 1000.0 },
        [AL_RES_MEM] = { "memory_bytes", "bytes of memory", 1.0 },
    };
    static const char *const what[3] = { "deserved", "fair_share",
                                         "allocated" };
    static const char *const help[3] = {
        "Deserved (guaranteed) quota of the queue",
        "Fair share of the queue as of the last scheduling cycle",
        "Allocated to the queue's running jobs as of the last scheduling "
        "cycle",
    };
    for (int w = 0; w < 3; w++)
        for (int r = 0; r < AL_NRES; r++) {
            char name[64], h[160];
            snprintf(name, sizeof name, "allot_queue_%s_%s", what[w],
                     res[r].suffix);
            snprintf(h, sizeof h, "%s, in %s.", help[w], res[r].unit);
            head(b, name, "gauge", h);
            for (int i = 0; i < ctl->nqueues; i++) {
                const al__queue_t *q = &ctl->queues[i];
                double v = w == 0   ? (double)q->quota[r].deserved
                           : w == 1 ? q->share.fair[r]
                                    : (double)q->share.allocated[r];
                queue_line(b, name, q, v / res[r].scale);
            }
        }
    head(b, "allot_queue_borrowed_gpus", "gauge",
         "GPUs the queue holds over its deserved quota (borrowed from "
         "others' idle quota).");
    for (int i = 0; i < ctl->nqueues; i++) {
        const al__queue_t *q = &ctl->queues[i];
        int64_t over =
            q->share.allocated[AL_RES_GPU] - q->quota[AL_RES_GPU].deserved;
        queue_line(b, "allot_queue_borrowed_gpus", q,
                   over > 0 ? (double)over / AL_GPU_MILLI : 0.0);
    }
}

/* The labels of each GPU of the nodes that are not down,
 * `{node="N",gpu="I",model="M"}`, written once for the four telemetry
 * families rather than once a line: at[] holds where each starts in
 * text (at[k+1] where it ends), k counting the GPUs of those nodes in
 * order. */
typedef struct gpu_labels {
    al_buf_t text;
    size_t *at;
} gpu_labels_t;

static void
gpu_labels_init(gpu_labels_t *l, const al_ctl_t *ctl)
{
    size_t n = 0;
    for (int i = 0; i < ctl->nnodes; i++)
        if (ctl->nodes[i].state != NS_DOWN)
            n += (size_t)ctl->nodes[i].ngpus;
    al_buf_init(&l->text);
    al_buf_reserve(&l->text, n * 48);
    l->at = al_xmalloc((n + 1) * sizeof *l->at);
    size_t k = 0;
    for (int i = 0; i < ctl->nnodes; i++) {
        const al__node_t *n1 = &ctl->nodes[i];
        if (n1->state == NS_DOWN)
            continue;
        for (int g = 0; g < n1->ngpus; g++) {
            l->at[k++] = l->text.len;
            al_buf_puts(&l->text, "{node=\"");
            label(&l->text, n1->name);
            al_buf_puts(&l->text, "\",gpu=\"");
            char idx[16], *p = idx + sizeof idx;
            unsigned u = (unsigned)g;
            do {
                *--p = (char)('0' + u % 10);
                u /= 10;
            } while (u > 0);
            al_buf_append(&l->text, p, (size_t)(idx + sizeof idx - p));
            al_buf_puts(&l->text, "\",model=\"");
            const char *m = n1->gpus[g].model;
            /* as allot_gpus */
            label(&l->text, m != NULL && *m != '\0' ? m : "unknown");
            al_buf_puts(&l->text, "\"}");
        }
    }
    l->at[k] = l->text.len;
}

static void
gpu_labels_fini(gpu_labels_t *l)
{
    al_buf_fini(&l->text);
    free(l->at);
}

/* Nodes by state, each node's time since its agent's last sync, and the
 * GPU telemetry agents send (real GPUs, and emulated ones given a
 * utilisation: the agent's STATE/gpu-util). */
static void
render_nodes(const al_ctl_t *ctl, al_buf_t *b, int64_t mono_ms)
{
    int by_state[NS_DOWN + 1] = { 0 };
    for (int i = 0; i < ctl->nnodes; i++)
        if (ctl->nodes[i].state >= 0 && ctl->nodes[i].state <= NS_DOWN)
            by_state[ctl->nodes[i].state]++;
    head(b, "allot_nodes", "gauge", "Nodes by state.");
    for (int s = 0; s <= NS_DOWN; s++) {
        al_buf_printf(b, "allot_nodes{state=\"%s\"}", al__node_state_names[s]);
        value(b, by_state[s]);
    }
    head(b, "allot_node_sync_age_seconds", "gauge",
         "Seconds since the node's agent last synced (since the controller "
         "started, for a node not heard from since).");
    for (int i = 0; i < ctl->nnodes; i++) {
        const al__node_t *n = &ctl->nodes[i];
        int64_t age = mono_ms - n->last_seen;
        al_buf_puts(b, "allot_node_sync_age_seconds{node=\"");
        label(b, n->name);
        al_buf_puts(b, "\"}");
        fixed(b, age > 0 ? age : 0, 3);
    }
    static const struct {
        const char *name, *help;
    } tel[] = {
        { "allot_gpu_utilization_ratio",
          "GPU utilisation (0 to 1) as its agent last sent it." },
        { "allot_gpu_memory_used_bytes",
          "GPU memory in use as its agent last sent it." },
        { "allot_gpu_power_watts",
          "GPU power draw as its agent last sent it." },
        { "allot_gpu_temperature_celsius",
          "GPU temperature as its agent last sent it." },
    };
    gpu_labels_t lbl;
    gpu_labels_init(&lbl, ctl);
    for (int k = 0; k < 4; k++) {
        head(b, tel[k].name, "gauge", tel[k].help);
        size_t name_len = strlen(tel[k].name);
        int dec = k == 0 ? 2 : k == 2 ? 3 : 0;
        size_t at = 0; /* the GPU's labels in lbl */
        for (int i = 0; i < ctl->nnodes; i++) {
            const al__node_t *n = &ctl->nodes[i];
            if (n->state == NS_DOWN)
                continue;
            for (int g = 0; g < n->ngpus; g++, at++) {
                const al__gpu_sample_t *x = &n->gpus[g].sample;
                if (x->at_ms == 0)
                    continue;
                /* Utilisation in percent and power in milliwatts: ratios
                 * and watts as exact decimals. */
                int64_t v = k == 0   ? x->util
                            : k == 1 ? x->mem_used
                            : k == 2 ? x->power_mw
                                     : x->temp_c;
                if (v < 0)
                    continue; /* not known */
                al_buf_append(b, tel[k].name, name_len);
                al_buf_append(b, lbl.text.data + lbl.at[at],
                              lbl.at[at + 1] - lbl.at[at]);
                fixed(b, v, dec);
            }
        }
    }
    gpu_labels_fini(&lbl);
}

/* The samples of one histogram; lbl is its labels ("a=\"x\",") or "". */
static void
hist_samples(al_buf_t *b, const char *name, const char *lbl,
             const al__hist_t *h)
{
    uint64_t cum = 0;
    for (int i = 0; i < AL_HIST_NB; i++) {
        cum += h->bucket[i];
        al_buf_printf(b, "%s_bucket{%sle=\"%g\"}", name, lbl,
                      al__hist_bounds[i]);
        value(b, (double)cum);
    }
    al_buf_printf(b, "%s_bucket{%sle=\"+Inf\"}", name, lbl);
    value(b, (double)h->count);
    int n = (int)strlen(lbl) - 1; /* lbl without its trailing comma */
    if (n > 0)
        al_buf_printf(b, "%s_sum{%.*s}", name, n, lbl);
    else
        al_buf_printf(b, "%s_sum", name);
    value(b, h->sum);
    if (n > 0)
        al_buf_printf(b, "%s_count{%.*s}", name, n, lbl);
    else
        al_buf_printf(b, "%s_count", name);
    value(b, (double)h->count);
}

static void
histogram(al_buf_t *b, const char *name, const char *help, const al__hist_t *h)
{
    head(b, name, "histogram", help);
    hist_samples(b, name, "", h);
}

/* A family of one sample without labels. */
static void
scalar(al_buf_t *b, const char *name, const char *type, const char *help,
       double v)
{
    head(b, name, type, help);
    al_buf_puts(b, name);
    value(b, v);
}

/* The loop's counters and histograms. */
static void
render_counters(const al_ctl_t *ctl, al_buf_t *b)
{
    const al__counters_t *c = &ctl->counters;
    head(b, "allot_evictions_total", "counter",
         "Running jobs the scheduler evicted, by cause (reclaim: for another "
         "queue's fair share; preempt: for a higher priority job of its "
         "queue; reservation: it ran on lent capacity; idle: a build session "
         "its queue's idle reclaim ended) and outcome.");
    for (int w = 0; w <= AL_EVICT_RESERVATION; w++)
        for (int rq = 0; rq < 2; rq++) {
            al_buf_printf(b,
                          "allot_evictions_total{cause=\"%s\",outcome=\"%s\"}",
                          evict_causes[w], rq ? "requeued" : "failed");
            value(b, (double)c->evicted[w][rq]);
        }
    al_buf_puts(b, "allot_evictions_total{cause=\"idle\",outcome=\"failed\"}");
    value(b, (double)c->idle_reclaims);
    scalar(b, "allot_node_down_requeues_total", "counter",
           "Running jobs requeued because a node they ran on went down.",
           (double)c->node_down_requeues);
    scalar(b, "allot_nodes_down_total", "counter",
           "Times a node was marked down for staying silent.",
           (double)c->nodes_down);
    scalar(b, "allot_time_limit_kills_total", "counter",
           "Running jobs ended at their time limit.", (double)c->time_limits);
    scalar(b, "allot_scheduling_cycles_total", "counter",
           "Scheduling cycles run.", (double)ctl->cycles);
    histogram(b, "allot_scheduling_cycle_duration_seconds",
              "Time the scheduling core took for one cycle.", &c->cycle);
    histogram(b, "allot_store_commit_duration_seconds",
              "Time the state store took to commit one transaction.",
              &c->commit);
}

/* One line of a per-model metric of waste.c's table. */
static void
model_line(al_buf_t *b, const char *name, const char *model, double v)
{
    al_buf_printf(b, "%s{model=\"", name);
    label(b, model);
    al_buf_puts(b, "\"}");
    value(b, v);
}

/* The wastage figures (waste.c): the last look's gauges, the counters
 * PromQL computes any window's ratio from, and the last ten minutes'. */
static void
render_waste(const al_ctl_t *ctl, al_buf_t *b, int64_t mono_ms)
{
    const al__waste_t *w = &ctl->waste;
    static const struct {
        const char *name, *type, *help;
    } fam[5] = {
        { "allot_gpus_idle", "gauge",
          "GPUs on nodes that are not down that no task holds any part of, "
          "by model, as of the last scheduling cycle." },
        { "allot_gpus_idle_while_waiting", "gauge",
          "Idle GPUs while a pending job that may run on the model would fit "
          "on its idle GPUs (the wastage), as of the last scheduling cycle." },
        { "allot_gpu_seconds_total", "counter",
          "GPU-seconds of the GPUs on nodes that are not down, by model." },
        { "allot_gpu_idle_seconds_total", "counter",
          "GPU-seconds those GPUs were idle, by model." },
        { "allot_gpu_wasted_seconds_total", "counter",
          "GPU-seconds those GPUs were idle while fitting work waited, by "
          "model: the wastage ratio over any window is "
          "rate(allot_gpu_wasted_seconds_total) / "
          "rate(allot_gpu_seconds_total)." },
    };
    for (int f = 0; f < 5; f++) {
        head(b, fam[f].name, fam[f].type, fam[f].help);
        for (int m = 0; m < w->nmodels; m++) {
            double v = f == 0   ? w->idle[m]
                       : f == 1 ? (w->waiting[m] ? w->idle[m] : 0)
                       : f == 2 ? w->gpu_s[m]
                       : f == 3 ? w->idle_s[m]
                                : w->wasted_s[m];
            model_line(b, fam[f].name, w->model[m], v);
        }
    }
    head(b, "allot_queue_gpus_idle_while_waiting", "gauge",
         "Idle GPUs of the model that a pending job of the queue would fit "
         "on, as of the last scheduling cycle (a GPU counts in every queue "
         "whose work would fit on it).");
    if (w->qwaiting != NULL && w->qgen == ctl->queue_gen &&
        w->nqwaiting == ctl->nqueues + 1)
        for (int q = 0; q < ctl->nqueues; q++)
            for (int m = 0; m < w->nmodels; m++) {
                al_buf_puts(b, "allot_queue_gpus_idle_while_waiting{queue=\"");
                label(b, ctl->queues[q].name);
                al_buf_puts(b, "\",model=\"");
                label(b, w->model[m]);
                al_buf_puts(b, "\"}");
                value(b, w->qwaiting[(size_t)q * AL_MAX_MODELS + m] ? w->idle[m]
                                                                    : 0);
            }
    scalar(b, "allot_wastage_ratio", "gauge",
           "Share of the GPU-time of the last ten minutes that GPUs sat "
           "idle while work that would fit on them waited (0 to 1).",
           al__waste_ratio(w, mono_ms));
}

/* API requests' durations by route and status. */
static void
render_api(const al_ctl_t *ctl, al_buf_t *b)
{
    const char *name = "allot_api_request_duration_seconds";
    head(b, name, "histogram",
         "Time from a request's arrival at the controller's loop to its "
         "reply, by route and status (an agent's sync includes its "
         "long-poll wait).");
    for (int i = 0; i < ctl->napi_hist; i++) {
        const al__api_hist_t *a = &ctl->api_hist[i];
        const al__route_t *rt = a->route;
        al_buf_t l;
        al_buf_init(&l);
        al_buf_printf(&l, "method=\"%s\",route=\"", rt->method);
        label(&l, rt->path);
        al_buf_printf(&l, "\",status=\"%d\",", a->status);
        hist_samples(b, name, l.data, &a->h);
        al_buf_fini(&l);
    }
}

void
al__metrics_render(const al_ctl_t *ctl, int64_t mono_ms, al_buf_t *out)
{
    render_jobs(ctl, out);
    render_gpus(ctl, out);
    render_queues(ctl, out);
    render_nodes(ctl, out, mono_ms);
    render_counters(ctl, out);
    render_waste(ctl, out, mono_ms);
    render_api(ctl, out);
    al__svc_metrics(ctl, out);
}

void
al__api_metrics(al_ctl_t *ctl, al__req_t *req)
{
    al_buf_t b;
    al_buf_init(&b);
    al_buf_reserve(&b, 16384);
    al__metrics_render(ctl, al_clock_mono_ms(), &b);
    req->text_len = b.len;
    req->text = al_buf_steal(&b);
    req->ctype = "text/plain; version=0.0.4; charset=utf-8";
    req->status = 200;
}
