/*
 * trace.c -- the common trace CSV:
 *   job_id,submit_time_s,duration_s,num_gpus,num_cpus,user,queue,status
 * and, optional, max_gpus (an elastic job: num_gpus..max_gpus).
 *
 * Columns are found by their header names, so extra columns are ignored and
 * the order may vary.  job_id, submit_time_s, duration_s and num_gpus are
 * required in every row; num_cpus, user, queue and status may be empty (or
 * absent from the header).  Fields may be double-quoted as RFC 4180 says
 * (a quoted field cannot span lines).  Every problem is reported, with the
 * file, line and field, before the run is refused.  Optional columns
 * pipeline_id,stage,needs make rows the stages of pipelines (needs: stage
 * names separated by ';'); tracedag.c resolves them.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"
#include "sim_int.h"

enum {
    C_ID,
    C_SUBMIT,
    C_DUR,
    C_GPUS,
    C_CPUS,
    C_USER,
    C_QUEUE,
    C_STATUS,
    C_PIPE,
    C_STAGE,
    C_NEEDS,
    C_MAXG,
    NCOL
};

static const struct column {
    const char *name;
    bool required; /* in the header and non-empty in every row */
} columns[NCOL] = {
    [C_ID] = { "job_id", true },
    [C_SUBMIT] = { "submit_time_s", true },
    [C_DUR] = { "duration_s", true },
    [C_GPUS] = { "num_gpus", true },
    [C_CPUS] = { "num_cpus", false },
    [C_USER] = { "user", false },
    [C_QUEUE] = { "queue", false },
    [C_STATUS] = { "status", false },
    /* Pipelines (tracedag.c): a stage of pipeline_id runs after the
     * stages of the same pipeline that `needs` names. */
    [C_PIPE] = { "pipeline_id", false },
    [C_STAGE] = { "stage", false },
    [C_NEEDS] = { "needs", false },
    [C_MAXG] = { "max_gpus", false },
};

/* Largest GPU count a row may ask for. */
#define MAX_GPUS 1000000
/* Times and durations beyond a century are typos or garbage; bounding them
 * keeps every later sum (submit + duration x estimate factor, up to 1000)
 * far inside int64_t. */
#define MAX_SECONDS 3155760000LL

/* Fields of one line, unquoted into a scratch buffer. */
typedef struct fields {
    int n, cap;
    char **f;
    char *scratch;
    size_t scap;
} fields_t;

/*
 * Splits line [p, end) into fields.  Returns 0, or -1 with a message in
 * *why for an unterminated quote or junk after a closing quote.
 */
static int
split(fields_t *fs, const char *p, const char *end, const char **why)
{
    size_t need = (size_t)(end - p) + 1;
    if (need > fs->scap) {
        fs->scratch = al_xrealloc(fs->scratch, need * 2);
        fs->scap = need * 2;
    }
    char *o = fs->scratch;
    fs->n = 0;
    for (;;) {
        if (fs->n == fs->cap) {
            fs->cap = fs->cap ? fs->cap * 2 : 16;
            fs->f = al_xrealloc(fs->f, (size_t)fs->cap * sizeof(char *));
        }
        fs->f[fs->n++] = o;
        if (p < end && *p == '"') {
            p++;
            for (;;) {
                if (p == end) {
                    *why = "unterminated quoted field";
                    return -1;
                }
                if (*p == '"') {
                    if (p + 1 < end && p[1] == '"') {
                        *o++ = '"';
                        p += 2;
                        continue;
                    }
                    p++;
                    break;
                }
                *o++ = *p++;
            }
            if (p < end && *p != ',') {
                *why = "text after a closing quote";
                return -1;
            }
        } else {
            while (p < end && *p != ',')
                *o++ = *p++;
        }
        *o++ = '\0';
        if (p == end)
            return 0;
        p++; /* the comma */
    }
}

static bool
has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

static int
cmp_job(const void *a, const void *b)
{
    const al_trace_job_t *x = a, *y = b;
    if (x->submit != y->submit)
        return x->submit < y->submit ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

static void
free_jobs(al_trace_job_t *jobs, int n)
{
    for (int i = 0; i < n; i++) {
        free(jobs[i].id);
        free(jobs[i].user);
        free(jobs[i].queue);
        free(jobs[i].status);
        free(jobs[i].pipeline);
        free(jobs[i].stage);
        free(jobs[i].needs);
        free(jobs[i].deps);
    }
    free(jobs);
}

/* The state of one parse. */
typedef struct parser {
    const char *name;
    const char *filter_queue;
    al_errs_t errs;
    fields_t fs;
    int col[NCOL]; /* field index of each column, -1 if absent */
    int ncols;
    int line;
    al_trace_job_t *jobs;
    int njobs, cap, nrows;
} parser_t;

/* Maps the header's fields to columns; false if the header is unusable. */
static bool
parse_header(parser_t *ps)
{
    const fields_t *fs = &ps->fs;
    ps->ncols = fs->n;
    for (int i = 0; i < fs->n; i++)
        for (int c = 0; c < NCOL; c++) {
            if (strcmp(fs->f[i], columns[c].name) != 0)
                continue;
            if (ps->col[c] >= 0)
                al__err(&ps->errs, "%s:%d: column '%s' appears twice", ps->name,
                        ps->line, columns[c].name);
            ps->col[c] = i;
        }
    for (int c = 0; c < NCOL; c++)
        if (columns[c].required && ps->col[c] < 0)
            al__err(&ps->errs, "%s:%d: header lacks column '%s'", ps->name,
                    ps->line, columns[c].name);
    return ps->errs.n == 0;
}

/* Checks and converts the numbers of one row into j; false on errors. */
static bool
parse_numbers(parser_t *ps, const char *const *v, al_trace_job_t *j)
{
    const char *name = ps->name;
    int line = ps->line, before = ps->errs.n;
    al_errs_t *errs = &ps->errs;
    if (al__parse_i64(v[C_SUBMIT], &j->submit) < 0 || j->submit < 0 ||
        j->submit > MAX_SECONDS)
        al__err(errs,
                "%s:%d: field 'submit_time_s': expected a whole number of "
                "seconds between 0 and %lld (a century), got '%s'",
                name, line, (long long)MAX_SECONDS, v[C_SUBMIT]);
    if (al__parse_i64(v[C_DUR], &j->duration) < 0 || j->duration < 0 ||
        j->duration > MAX_SECONDS)
        al__err(errs,
                "%s:%d: field 'duration_s': expected a whole number of "
                "seconds between 0 and %lld (a century), got '%s'",
                name, line, (long long)MAX_SECONDS, v[C_DUR]);
    double g = 0;
    if (al__parse_num(v[C_GPUS], &g) < 0 || g < 0 || g > MAX_GPUS)
        al__err(errs,
                "%s:%d: field 'num_gpus': expected a number of GPUs "
                "between 0 and %d, got '%s'",
                name, line, MAX_GPUS, v[C_GPUS]);
    else if (g > 1 && g != floor(g))
        al__err(errs,
                "%s:%d: field 'num_gpus': a fraction of a GPU must be "
                "below 1, got '%s'",
                name, line, v[C_GPUS]);
    else if (g > 0 && llround(g * 1000) == 0)
        al__err(errs, "%s:%d: field 'num_gpus': below one milli-GPU, got '%s'",
                name, line, v[C_GPUS]);
    double cpus = 0;
    if (v[C_CPUS][0] != '\0' &&
        (al__parse_num(v[C_CPUS], &cpus) < 0 || cpus < 0 || cpus > 1e9))
        al__err(errs,
                "%s:%d: field 'num_cpus': expected a non-negative number "
                "or nothing, got '%s'",
                name, line, v[C_CPUS]);
    /* An elastic job: num_gpus is its least size, max_gpus its most,
     * whole GPUs both (docs/simulation.md, "Elastic jobs"). */
    int64_t maxg = 0;
    if (v[C_MAXG][0] != '\0' &&
        (al__parse_i64(v[C_MAXG], &maxg) < 0 || maxg < 0 || maxg > MAX_GPUS ||
         (maxg > 0 && (g < 1 || g != floor(g) || (double)maxg < g))))
        al__err(errs,
                "%s:%d: field 'max_gpus': expected a whole number of GPUs "
                "from num_gpus (a whole number) to %d, or nothing, got '%s'",
                name, line, MAX_GPUS, v[C_MAXG]);
    /* A refused field may hold anything (a max_gpus of 10^23): nothing
     * is computed from the row then. */
    if (ps->errs.n != before)
        return false;
    j->gpu_milli = llround(g * 1000);
    j->cpu_milli = llround(cpus * 1000);
    j->max_gpu_milli = maxg > 0 && maxg * 1000 > j->gpu_milli ? maxg * 1000 : 0;
    return true;
}

/* Validates one data row (in ps->fs) and keeps it if it passes the
 * filter. */
static void
parse_row(parser_t *ps)
{
    const fields_t *fs = &ps->fs;
    ps->nrows++;
    if (fs->n != ps->ncols) {
        al__err(&ps->errs, "%s:%d: expected %d fields, got %d", ps->name,
                ps->line, ps->ncols, fs->n);
        return;
    }
    const char *v[NCOL];
    for (int c = 0; c < NCOL; c++)
        v[c] = ps->col[c] >= 0 ? fs->f[ps->col[c]] : "";
    int before = ps->errs.n;
    for (int c = 0; c < NCOL; c++) {
        if (columns[c].required && v[c][0] == '\0')
            al__err(&ps->errs, "%s:%d: field '%s': empty", ps->name, ps->line,
                    columns[c].name);
        else if (has_control(v[c]))
            al__err(&ps->errs, "%s:%d: field '%s': control character", ps->name,
                    ps->line, columns[c].name);
    }
    if (ps->errs.n > before)
        return;
    al_trace_job_t j = { 0 };
    if (!parse_numbers(ps, v, &j))
        return;
    if (ps->filter_queue != NULL && strcmp(v[C_QUEUE], ps->filter_queue) != 0)
        return;
    if (ps->errs.n > 0)
        return; /* the run is refused anyway; stop collecting rows */
    j.id = al_xstrdup(v[C_ID]);
    j.user = al_xstrdup(v[C_USER]);
    j.queue = al_xstrdup(v[C_QUEUE]);
    j.status = al_xstrdup(v[C_STATUS]);
    if (v[C_PIPE][0] != '\0' || v[C_STAGE][0] != '\0' ||
        v[C_NEEDS][0] != '\0') {
        j.pipeline = al_xstrdup(v[C_PIPE]);
        j.stage = al_xstrdup(v[C_STAGE]);
        j.needs = al_xstrdup(v[C_NEEDS]);
    }
    j.line = ps->line;
    if (ps->njobs == ps->cap) {
        ps->cap = ps->cap ? ps->cap * 2 : 1024;
        ps->jobs = al_xrealloc(ps->jobs, (size_t)ps->cap * sizeof(*ps->jobs));
    }
    ps->jobs[ps->njobs++] = j;
}

int
al_trace_parse(const char *name, const char *buf, size_t len,
               const char *filter_queue, al_trace_t **out, char **cause)
{
    parser_t ps = { .name = name, .filter_queue = filter_queue };
    const char *p = buf, *end = buf + len;
    bool header = false;

    for (int c = 0; c < NCOL; c++)
        ps.col[c] = -1;
    if (len >= 3 && memcmp(buf, "\xEF\xBB\xBF", 3) == 0)
        p += 3; /* UTF-8 byte order mark */
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *next = nl ? nl + 1 : end;
        const char *why = NULL;
        ps.line++;
        if (le > p && le[-1] == '\r')
            le--;
        if (memchr(p, '\0', (size_t)(le - p)) != NULL)
            why = "NUL byte in line";
        else if (le == p) /* blank line */
            why = "";
        else if (split(&ps.fs, p, le, &why) == 0)
            why = NULL;
        p = next;
        if (why != NULL) {
            if (why[0] != '\0')
                al__err(&ps.errs, "%s:%d: %s", name, ps.line, why);
            if (!header && why[0] != '\0')
                break;
            continue;
        }
        if (header) {
            parse_row(&ps);
            continue;
        }
        header = true;
        if (!parse_header(&ps))
            break;
    }
    if (!header && ps.errs.n == 0)
        al__err(&ps.errs, "%s:1: empty file: expected a header line", name);
    free(ps.fs.f);
    free(ps.fs.scratch);
    if (ps.errs.n > 0) {
        free_jobs(ps.jobs, ps.njobs);
        return al__err_give(&ps.errs, cause);
    }
    if (ps.njobs > 1)
        qsort(ps.jobs, (size_t)ps.njobs, sizeof(*ps.jobs), cmp_job);
    if (al__trace_dag(name, ps.jobs, ps.njobs, &ps.errs) != 0) {
        free_jobs(ps.jobs, ps.njobs);
        return al__err_give(&ps.errs, cause);
    }
    al_trace_t *t = al_xcalloc(1, sizeof(*t));
    t->name = al_xstrdup(name);
    t->jobs = ps.jobs;
    t->njobs = ps.njobs;
    t->nrows = ps.nrows;
    *out = t;
    return 0;
}

/* splitmix64: a small, well-mixed generator, the same on every machine. */
static uint64_t
next_rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

al_trace_t *
al_trace_resample(const al_trace_t *t, uint64_t seed, int64_t target_milli,
                  int64_t duration)
{
    /* As FGD's simulator tunes a workload: all the pods, plus pods drawn
     * with replacement until the requested GPUs reach the target, the whole
     * list then shuffled with the seed. */
    int n = t->njobs;
    uint64_t st = seed;
    int64_t sum = 0;
    for (int i = 0; i < n; i++)
        sum += t->jobs[i].gpu_milli;
    int cap = n + 16, m = 0;
    int *pick = al_xmalloc((size_t)cap * sizeof(int));
    for (int i = 0; i < n; i++)
        pick[m++] = i;
    while (n > 0 && sum > 0 && sum < target_milli) {
        int k = (int)(next_rand(&st) % (uint64_t)n);
        if (m == cap) {
            cap *= 2;
            pick = al_xrealloc(pick, (size_t)cap * sizeof(int));
        }
        pick[m++] = k;
        sum += t->jobs[k].gpu_milli;
    }
    for (int i = m - 1; i > 0; i--) {
        int k = (int)(next_rand(&st) % (uint64_t)(i + 1));
        int x = pick[i];
        pick[i] = pick[k];
        pick[k] = x;
    }
    al_trace_t *o = al_xcalloc(1, sizeof(*o));
    o->name = al_xasprintf("%s (resampled, seed %llu)", t->name,
                           (unsigned long long)seed);
    o->jobs = al_xcalloc((size_t)m + 1, sizeof(*o->jobs));
    for (int i = 0; i < m; i++) {
        const al_trace_job_t *src = &t->jobs[pick[i]];
        al_trace_job_t *j = &o->jobs[i];
        *j = *src;
        j->id = al_xasprintf("%s#%d", src->id, i);
        j->user = al_xstrdup(src->user);
        j->queue = al_xstrdup(src->queue);
        j->status = al_xstrdup(src->status);
        /* A resampled trace is a bag of independent jobs. */
        j->pipeline = j->stage = j->needs = NULL;
        j->deps = NULL;
        j->ndeps = 0;
        j->submit = i;
        j->duration = duration;
    }
    o->njobs = o->nrows = m;
    free(pick);
    return o;
}

int
al_trace_load(const char *path, const char *filter_queue, al_trace_t **out,
              char **cause)
{
    char *data;
    size_t len;
    int rc = al__read_file(path, &data, &len, cause);
    if (rc < 0)
        return rc;
    rc = al_trace_parse(path, data, len, filter_queue, out, cause);
    free(data);
    return rc;
}

void
al_trace_destroy(al_trace_t *t)
{
    if (t == NULL)
        return;
    free_jobs(t->jobs, t->njobs);
    free(t->name);
    free(t);
}
