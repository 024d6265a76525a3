/*
 * stages.c -- pipelines in a run: the stages of a trace's pipelines
 * (tracedag.c's deps) wait for what they need, and the three ways a
 * scheduler may know of them (al_sim_dag_t):
 *
 *   on     every stage is submitted with its pipeline and waits in the
 *          snapshot with its dependencies (AL_DEPS_WAITING), so the core
 *          orders by critical path and makes look-ahead reservations;
 *   off    the same submissions, but the core ignores the graph
 *          (al_config_t.ignore_deps): dependencies only hold stages back;
 *   blind  each stage is submitted only when the stages it needs have
 *          ended, as `--after` chains or a workflow engine outside the
 *          scheduler do: until then the core does not see it;
 *   hold   as on, and a look-ahead holds what its stage needs beyond
 *          its inputs' release (al_config_t.lookahead_hold).
 *
 * A waiting stage is active (in the snapshot) but not pending: it counts
 * neither as demand nor for wastage, as it cannot start.  A stage whose
 * input can never complete (unschedulable) is unschedulable too.  At the
 * end, the pipelines' figures: how many completed, their mean makespan
 * (first submission to last stage's end) and how many ended per hour.
 *
 * May call: jobs.c (arrivals, unschedulable), libc.  Called by sim.c,
 * setup.c (al__stages_init), cycle.c (dependencies in the snapshot) and
 * metrics.c (figures).
 */
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

const char *
al_sim_dag_name(al_sim_dag_t d)
{
    static const char *const names[] = { "on", "off", "blind", "hold" };
    return d >= 0 && d < 4 ? names[d] : NULL;
}

int
al_sim_dag_find(const char *name)
{
    for (int d = 0; d < 4; d++)
        if (strcmp(name, al_sim_dag_name((al_sim_dag_t)d)) == 0)
            return d;
    return -1;
}

void
al__stages_init(sim_t *s)
{
    const al_trace_t *tr = s->tr;
    int n = s->njobs, nedges = 0;
    for (int i = 0; i < n; i++)
        nedges += tr->jobs[i].ndeps;
    s->dag = s->o->dag;
    s->r->dag = s->dag;
    if (s->dag == AL_SIM_DAG_OFF || s->dag == AL_SIM_DAG_BLIND)
        s->cfg.ignore_deps = true;
    if (s->dag == AL_SIM_DAG_HOLD)
        s->cfg.lookahead_hold = true;
    if (nedges == 0)
        return;
    s->succ_off = al_xcalloc((size_t)n + 2, sizeof(int));
    s->succ = al_xmalloc(((size_t)nedges + 1) * sizeof(int));
    for (int i = 0; i < n; i++) {
        s->jobs[i].deps_left = tr->jobs[i].ndeps;
        for (int d = 0; d < tr->jobs[i].ndeps; d++)
            s->succ_off[tr->jobs[i].deps[d] + 1]++;
    }
    for (int i = 0; i < n; i++)
        s->succ_off[i + 1] += s->succ_off[i];
    int *fill = al_xcalloc((size_t)n + 1, sizeof(int));
    for (int i = 0; i < n; i++)
        for (int d = 0; d < tr->jobs[i].ndeps; d++) {
            int x = tr->jobs[i].deps[d];
            s->succ[s->succ_off[x] + fill[x]++] = i;
        }
    free(fill);
    s->sidx = al_xmalloc(((size_t)n + 1) * sizeof(int));
    for (int i = 0; i < n; i++)
        s->sidx[i] = -1;
}

void
al__stages_free(sim_t *s)
{
    free(s->succ_off);
    free(s->succ);
    free(s->sidx);
    free(s->sdeps);
}

/* Job i can never run: neither can what waits for it. */
static void
never(sim_t *s, int i)
{
    if (s->succ_off == NULL)
        return;
    for (int k = s->succ_off[i]; k < s->succ_off[i + 1]; k++) {
        int x = s->succ[k];
        sjob_t *j = &s->jobs[x];
        if (j->state == S_DONE || j->state == S_UNSCHED || j->deps_left < 0)
            continue;
        j->deps_left = -1; /* never */
        if (j->state == S_WAITING) {
            s->npend++; /* al__job_unschedulable() counts it off */
            s->mq_pend[j->mq] += j->total;
            al__job_unschedulable(s, x);
        } else if (j->state == S_FUTURE) {
            j->state = S_UNSCHED;
            s->r->jobs[x].unschedulable = true;
        }
        never(s, x);
    }
}

/* Job i becomes pending at `now`. */
static void
make_pending(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    bool active = j->state == S_WAITING;
    j->state = S_PENDING;
    j->pend_since = now;
    j->eligible = now;
    s->npend++;
    s->mq_pend[j->mq] += j->total;
    if (!active) {
        al__act_add(s, i);
        s->arrived += j->total;
    }
    if (al__job_never_fits(s, j)) {
        al__job_unschedulable(s, i);
        never(s, i);
    }
}

void
al__stages_arrive(sim_t *s, int i, int64_t now)
{
    sjob_t *j = &s->jobs[i];
    j->arrived = true;
    if (j->deps_left == 0) {
        make_pending(s, i, now);
    } else if (s->dag != AL_SIM_DAG_BLIND) {
        j->state = S_WAITING;
        j->pend_since = now;
        al__act_add(s, i);
        s->arrived += j->total;
    }
}

void
al__stages_ended(sim_t *s, int i, int64_t now, bool done)
{
    if (s->succ_off == NULL)
        return;
    if (!done) {
        never(s, i);
        return;
    }
    for (int k = s->succ_off[i]; k < s->succ_off[i + 1]; k++) {
        int x = s->succ[k];
        sjob_t *j = &s->jobs[x];
        if (j->deps_left <= 0 || --j->deps_left > 0 || !j->arrived)
            continue;
        if (j->state == S_WAITING || j->state == S_FUTURE)
            make_pending(s, x, now);
    }
}

void
al__stages_snapshot(sim_t *s, int n)
{
    if (s->succ_off == NULL)
        return;
    int nd = 0;
    for (int k = 0; k < n; k++) {
        int i = s->smap[k];
        s->sidx[i] = k;
        if (s->jobs[i].state == S_WAITING)
            nd += s->tr->jobs[i].ndeps;
    }
    if (nd > s->capdeps) {
        s->capdeps = nd * 2;
        s->sdeps = al_xrealloc(s->sdeps, (size_t)s->capdeps * sizeof(al_dep_t));
    }
    nd = 0;
    for (int k = 0; k < n; k++) {
        int i = s->smap[k];
        al_job_t *x = &s->sj[k];
        if (s->jobs[i].state != S_WAITING)
            continue;
        x->dep_state = AL_DEPS_WAITING;
        x->deps = s->sdeps + nd;
        for (int d = 0; d < s->tr->jobs[i].ndeps; d++) {
            int dj = s->tr->jobs[i].deps[d];
            if (s->jobs[dj].act >= 0 && s->sidx[dj] >= 0 && s->sidx[dj] < n &&
                s->smap[s->sidx[dj]] == dj)
                s->sdeps[nd + x->ndeps++] =
                    (al_dep_t){ .job = s->sidx[dj], .when = AL_EDGE_SUCCESS };
        }
        nd += x->ndeps;
        if (x->ndeps == 0)
            x->deps = NULL;
    }
}

typedef struct pkey {
    const char *p;
    int i;
} pkey_t;

static int
cmp_pkey(const void *a, const void *b)
{
    const pkey_t *x = a, *y = b;
    int c = strcmp(x->p, y->p);
    return c != 0 ? c : (x->i > y->i) - (x->i < y->i);
}

void
al__stages_finish(sim_t *s)
{
    const al_trace_t *tr = s->tr;
    al_sim_result_t *r = s->r;
    int n = s->njobs;
    int *ord = NULL, no = 0;
    for (int i = 0; i < n; i++)
        no += tr->jobs[i].pipeline != NULL;
    if (no == 0)
        return;
    ord = al_xmalloc((size_t)no * sizeof(int));
    no = 0;
    for (int i = 0; i < n; i++)
        if (tr->jobs[i].pipeline != NULL)
            ord[no++] = i;
    /* Group by pipeline name (then index: a total order). */
    const al_trace_job_t *base = tr->jobs;
    pkey_t *keys = al_xmalloc((size_t)no * sizeof(*keys));
    for (int a = 0; a < no; a++)
        keys[a] = (pkey_t){ base[ord[a]].pipeline, ord[a] };
    qsort(keys, (size_t)no, sizeof(*keys), cmp_pkey);
    for (int a = 0; a < no; a++)
        ord[a] = keys[a].i;
    free(keys);
    double sum = 0;
    int64_t last = r->t_first;
    for (int a = 0; a < no;) {
        int b = a;
        int64_t first = INT64_MAX, end = -1;
        bool ok = true;
        while (b < no &&
               strcmp(base[ord[b]].pipeline, base[ord[a]].pipeline) == 0) {
            const al_sim_job_t *rj = &r->jobs[ord[b]];
            if (base[ord[b]].submit < first)
                first = base[ord[b]].submit;
            if (rj->end < 0)
                ok = false;
            else if (rj->end > end)
                end = rj->end;
            b++;
        }
        r->npipelines++;
        if (ok) {
            r->pipelines_done++;
            sum += (double)(end - first);
            if (end > last)
                last = end;
        }
        a = b;
    }
    free(ord);
    r->pipe_makespan_mean = r->pipelines_done > 0 ? sum / r->pipelines_done : 0;
    r->pipelines_per_hour = last > r->t_first ? r->pipelines_done * 3600.0 /
                                                    (double)(last - r->t_first)
                                              : 0;
}
