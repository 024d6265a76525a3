/*
 * update.c -- the words of `scontrol update JobId=N KEY=VALUE ...` read
 * into the body of POST /v1/jobs/N/update: TimeLimit (Slurm's time
 * forms; +T and -T, "time_limit_add", which scontrol.c turns into the
 * job's new limit), JobName (or Name), Partition (the default partition, every
 * node, is no pool: "") and Dependency (empty: none), Priority (0 to
 * 4294967293, "priority") and Nice (+-2147483645, read as Slurm's
 * strtol() reads it, "nice"), NumNodes (N, or N-M of which allot takes
 * N: "nodes").  Keys in any case,
 * as Slurm reads them.  No I/O: scontrol.c sends the body and says what
 * the controller answered; tests/fuzz/fuzz_slurm_update.c runs it.
 *
 * May call: script.c (Slurm's time forms), src/common (JSON, depspec).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "depspec.h"
#include "json.h"
#include "script.h"
#include "slurm_int.h"
#include "xmalloc.h"

static int
fail(char **cause, int rc, char *why)
{
    if (cause != NULL)
        *cause = why;
    else
        free(why);
    return rc;
}

/* Whether s is a list of job ids ("5", "5,7", as Slurm's JobId= takes
 * them): each digits, or an array's element, ID_INDEX. */
static bool
job_id_ok(const char *s)
{
    for (;;) {
        size_t n = strspn(s, "0123456789");
        if (n == 0 || n > 19)
            return false;
        s += n;
        if (*s == '_') {
            size_t k = strspn(s + 1, "0123456789");
            if (k == 0 || k > 19)
                return false;
            s += 1 + k;
        }
        if (*s == '\0')
            return true;
        if (*s != ',')
            return false;
        s++;
    }
}

/* TimeLimit=v into b: "time_limit" (seconds, 0 none), or for +T and -T
 * (the job's limit raised or lowered by T) "time_limit_add".  0; -1 when
 * v is no time. */
static int
time_limit(json_t *b, const char *v)
{
    int sign = v[0] == '+' ? 1 : v[0] == '-' ? -1 : 0;
    const char *t = sign != 0 ? v + 1 : v;
    long long s = al_script_slurm_time(t);
    if (s < 0 || t[0] == '\0' || (sign != 0 && s == 0))
        return -1;
    json_object_del(b, sign != 0 ? "time_limit" : "time_limit_add");
    json_object_set_new(b, sign != 0 ? "time_limit_add" : "time_limit",
                        json_integer(sign != 0 ? sign * s : s));
    return 0;
}

/* Priority=, Nice= and NumNodes= (key w of length kl, value v) into b:
 * 0; -1 with *why (caller frees) for a value Slurm refuses; 1 for
 * another key. */
static int
numeric(json_t *b, const char *w, size_t kl, const char *v, char **why)
{
    char *end = NULL;
    if (kl == 8 && strncasecmp(w, "Priority", kl) == 0) {
        unsigned long long p = strtoull(v, &end, 10);
        if (v[0] < '0' || v[0] > '9' || *end != '\0' || p > 4294967293ULL) {
            *why = al_xasprintf("Invalid Priority value: %.300s", v);
            return -1;
        }
        json_object_set_new(b, "priority", json_integer((json_int_t)p));
        return 0;
    }
    if (kl == 4 && strncasecmp(w, "Nice", kl) == 0) {
        /* As Slurm's scontrol: strtol() without a check of the end
         * ("abc" is 0), a value out of range refused. */
        long long nv = strtoll(v, NULL, 10);
        if (nv > 2147483645LL || nv < -2147483645LL) {
            *why = al_xstrdup("Nice value out of range (+/- 2147483645). "
                              "Value ignored");
            return -1;
        }
        json_object_set_new(b, "nice", json_integer((json_int_t)nv));
        return 0;
    }
    if (kl != 8 || strncasecmp(w, "NumNodes", kl) != 0)
        return 1;
    unsigned long long lo = strtoull(v, &end, 10), hi = lo;
    bool ok = v[0] >= '0' && v[0] <= '9';
    if (ok && *end == '-') {
        const char *m = end + 1;
        hi = strtoull(m, &end, 10);
        ok = m[0] >= '0' && m[0] <= '9' && hi >= lo;
    }
    if (!ok || *end != '\0' || hi > 4294967294ULL) {
        *why = al_xasprintf("Invalid numeric value \"%.300s\" for requested "
                            "node count.",
                            v);
        return -1;
    }
    json_object_set_new(b, "nodes", json_integer((json_int_t)lo));
    return 0;
}

int
al_sl_update_parse(int n, char *const *w, char **job, json_t **body,
                   char **cause)
{
    json_t *b = json_object();
    const char *id = NULL;
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(w[i], '=');
        if (eq == NULL) {
            json_decref(b);
            return fail(cause, 2, al_xasprintf("Invalid input: %s", w[i]));
        }
        size_t kl = (size_t)(eq - w[i]);
        const char *v = eq + 1;
#define KEY(name) (kl == strlen(name) && strncasecmp(w[i], name, kl) == 0)
        bool utf8 = true;
        int num;
        char *why = NULL;
        if (KEY("JobId") || KEY("Job")) {
            if (!job_id_ok(v)) {
                json_decref(b);
                return fail(cause, 1,
                            al_xasprintf("Invalid job id specified: %s", v));
            }
            id = v;
        } else if (KEY("TimeLimit")) {
            if (time_limit(b, v) != 0) {
                json_decref(b);
                return fail(cause, 1, al_xstrdup("Invalid TimeLimit value"));
            }
        } else if (KEY("JobName") || KEY("Name")) {
            if (v[0] == '\0' || strlen(v) > 255) {
                json_decref(b);
                return fail(cause, 1,
                            al_xasprintf("Invalid JobName: %.300s", v));
            }
            utf8 = json_object_set_new(b, "name", json_string(v)) == 0;
        } else if (KEY("Partition")) {
            if (v[0] == '\0') {
                json_decref(b);
                return fail(cause, 1, al_xstrdup("Invalid Partition: (empty)"));
            }
            utf8 =
                json_object_set_new(
                    b, "pool",
                    json_string(strcmp(v, AL_SLURM_PARTITION) == 0 ? "" : v)) ==
                0;
        } else if (KEY("Dependency")) {
            if (v[0] != '\0' && al_dep_parse(v, NULL, &(int){ 0 }, &why) != 0) {
                char *msg = al_xasprintf("Invalid dependency: %.300s (%s)", v,
                                         why ? why : "malformed");
                free(why);
                json_decref(b);
                return fail(cause, 1, msg);
            }
            free(why);
            utf8 = json_object_set_new(b, "dependency", json_string(v)) == 0;
        } else if ((num = numeric(b, w[i], kl, v, &why)) <= 0) {
            if (num < 0) {
                json_decref(b);
                return fail(cause, 1, why);
            }
        } else {
            /* Slurm's other fields (QOS, ...),
             * KEY+=VALUE forms and unknown keys alike. */
            json_decref(b);
            return fail(cause, 2,
                        al_xasprintf("Update of this parameter is not "
                                     "supported: %.300s",
                                     w[i]));
        }
#undef KEY
        if (!utf8) {
            json_decref(b);
            return fail(
                cause, 1,
                al_xasprintf("Invalid input: %.300s (not UTF-8)", w[i]));
        }
    }
    if (id == NULL) {
        json_decref(b);
        return fail(cause, 1, al_xstrdup("No job ID specified"));
    }
    if (json_object_size(b) == 0) {
        json_decref(b);
        return fail(cause, 1, al_xstrdup("No changes specified"));
    }
    *job = al_xstrdup(id);
    *body = b;
    return 0;
}
