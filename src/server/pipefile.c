/*
 * pipefile.c -- a pipeline file (`allot pipeline submit FILE`), checked by
 * itself: YAML (libyaml) or JSON text with a top-level `stages:` list, each
 * stage a job under the CLI's option names plus `name`, `needs` and
 * `when`; `params:` with defaults that `--set key=value` overrides and
 * `${key}` uses in the stages' strings.  The result is each stage's job
 * body (the form of POST /v1/jobs, al__job_parse()'s input) and its place
 * in the graph.  Every problem found is reported, with its line when the
 * text is YAML, and the file is refused as a whole.
 *
 * May call: libyaml, common's JSON; nothing that reads or changes the
 * controller's state.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

/* The hidden member that carries a YAML mapping's line into the tree. */
#define LINE_KEY "\x01line"
#define MAX_ERRORS 20

typedef struct perr {
    char *text;
    size_t len;
    int n;
} perr_t;

static void perr_add(perr_t *e, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds one problem (the first MAX_ERRORS are kept, the rest counted). */
static void
perr_add(perr_t *e, int line, const char *fmt, ...)
{
    if (++e->n > MAX_ERRORS)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    /* clang-tidy-14 flags this only when another file precedes this one
     * in the same run, va_start above notwithstanding. */
    // NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized)
    int w = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (w < 0)
        msg[0] = '\0';
    char *item = line > 0 ? al_xasprintf("line %d: %s", line, msg)
                          : al_xasprintf("%s", msg);
    size_t il = strlen(item);
    e->text = al_xrealloc(e->text, e->len + il + 3);
    if (e->len > 0) {
        memcpy(e->text + e->len, "; ", 2);
        e->len += 2;
    }
    memcpy(e->text + e->len, item, il + 1);
    e->len += il;
    free(item);
}

/* ------------------------------------------------------------------ */
/* YAML to a JSON tree                                                 */

/* A plain scalar as YAML 1.2's core schema reads it: null, a boolean, an
 * integer or a number; anything else (and every quoted scalar) is a
 * string. */
static json_t *
scalar(const yaml_node_t *n)
{
    const char *s = (const char *)n->data.scalar.value;
    size_t len = n->data.scalar.length;
    if (strlen(s) != len)
        return NULL; /* a NUL inside */
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_stringn(s, len);
    if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
        strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0)
        return json_null();
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 ||
        strcmp(s, "TRUE") == 0)
        return json_true();
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 ||
        strcmp(s, "FALSE") == 0)
        return json_false();
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end == '\0' && errno == 0 &&
        (isdigit((unsigned char)s[0]) ||
         ((s[0] == '-' || s[0] == '+') && isdigit((unsigned char)s[1]))))
        return json_integer(v);
    errno = 0;
    double d = strtod(s, &end);
    if (*end == '\0' && errno == 0 && isfinite(d) &&
        strpbrk(s, "0123456789") != NULL && strpbrk(s, "xXpP") == NULL)
        return json_real(d);
    return json_stringn(s, len);
}

/* Node idx of doc as JSON; mappings get their line as LINE_KEY.  NULL
 * (with an error) for what JSON cannot say: aliases deeper than depth,
 * keys that are not strings, text that is not UTF-8. */
static json_t *
to_json(yaml_document_t *doc, int idx, int depth, perr_t *e)
{
    yaml_node_t *n = yaml_document_get_node(doc, idx);
    if (n == NULL || depth > 64) {
        perr_add(e, 0, "nesting too deep");
        return NULL;
    }
    int line = (int)n->start_mark.line + 1;
    switch (n->type) {
    case YAML_SCALAR_NODE: {
        json_t *v = scalar(n);
        if (v == NULL)
            perr_add(e, line, "text that is not UTF-8, or a NUL byte");
        return v;
    }
    case YAML_SEQUENCE_NODE: {
        json_t *a = json_array();
        for (yaml_node_item_t *it = n->data.sequence.items.start;
             it < n->data.sequence.items.top; it++) {
            json_t *v = to_json(doc, *it, depth + 1, e);
            if (v == NULL) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, v);
        }
        return a;
    }
    case YAML_MAPPING_NODE: {
        json_t *o = json_object();
        json_object_set_new(o, LINE_KEY, json_integer(line));
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
             p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(doc, p->key);
            if (k == NULL || k->type != YAML_SCALAR_NODE ||
                strlen((const char *)k->data.scalar.value) !=
                    k->data.scalar.length) {
                perr_add(e, line, "a mapping key must be plain text");
                json_decref(o);
                return NULL;
            }
            const char *key = (const char *)k->data.scalar.value;
            if (json_object_get(o, key) != NULL) {
                perr_add(e, (int)k->start_mark.line + 1, "key '%s' given twice",
                         key);
                json_decref(o);
                return NULL;
            }
            json_t *v = to_json(doc, p->value, depth + 1, e);
            if (v == NULL || json_object_set_new(o, key, v) != 0) {
                if (v == NULL)
                    perr_add(e, (int)k->start_mark.line + 1, "in '%s'", key);
                else
                    perr_add(e, (int)k->start_mark.line + 1,
                             "key that is not UTF-8");
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    default:
        perr_add(e, line, "an empty document");
        return NULL;
    }
}

static json_t *
parse_yaml(const char *text, size_t len, perr_t *e)
{
    yaml_parser_t p;
    yaml_document_t doc;
    json_t *out = NULL;
    if (!yaml_parser_initialize(&p))
        abort(); /* out of memory: the shell's rule */
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    if (!yaml_parser_load(&p, &doc)) {
        perr_add(e, (int)p.problem_mark.line + 1, "YAML: %s%s%s",
                 p.problem ? p.problem : "malformed", p.context ? " " : "",
                 p.context ? p.context : "");
        yaml_parser_delete(&p);
        return NULL;
    }
    if (yaml_document_get_root_node(&doc) == NULL)
        perr_add(e, 0, "the file is empty");
    else
        out = to_json(&doc, 1, 0, e);
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return out;
}

/* ------------------------------------------------------------------ */
/* The stages                                                         */

static int
line_of(const json_t *o)
{
    return (int)json_integer_value(json_object_get(o, LINE_KEY));
}

/* Replaces ${key} in s by params' value; an unknown key is an error. */
static char *
subst(const char *s, const json_t *params, int line, const char *stage,
      perr_t *e)
{
    size_t cap = strlen(s) + 1, len = 0;
    char *out = al_xmalloc(cap);
    for (const char *p = s; *p != '\0';) {
        const char *add = p, *end = NULL;
        size_t al = 1;
        if (p[0] == '$' && p[1] == '{' && (end = strchr(p + 2, '}')) != NULL) {
            char key[128];
            size_t kl = (size_t)(end - (p + 2));
            const char *v = NULL;
            if (kl == 0 || kl >= sizeof key) {
                perr_add(e, line, "stage '%s': bad parameter reference", stage);
            } else {
                memcpy(key, p + 2, kl);
                key[kl] = '\0';
                v = json_string_value(json_object_get(params, key));
                if (v == NULL)
                    perr_add(e, line, "stage '%s': no parameter '%s'", stage,
                             key);
            }
            add = v != NULL ? v : "";
            al = strlen(add);
            p = end + 1;
        } else {
            p++;
        }
        if (len + al + 1 > cap) {
            cap = (len + al + 1) * 2;
            out = al_xrealloc(out, cap);
        }
        memcpy(out + len, add, al);
        len += al;
    }
    out[len] = '\0';
    return out;
}

/* A copy of v with ${key} replaced in every string inside. */
static json_t *
subst_all(const json_t *v, const json_t *params, int line, const char *stage,
          perr_t *e)
{
    if (json_is_string(v)) {
        char *s = subst(json_string_value(v), params, line, stage, e);
        json_t *r = json_string(s);
        free(s);
        return r != NULL ? r : json_string("");
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        for (size_t i = 0; i < json_array_size(v); i++)
            json_array_append_new(
                a, subst_all(json_array_get(v, i), params, line, stage, e));
        return a;
    }
    if (json_is_object(v)) {
        json_t *o = json_object();
        for (void *it = json_object_iter((json_t *)v); it != NULL;
             it = json_object_iter_next((json_t *)v, it))
            json_object_set_new(
                o, json_object_iter_key(it),
                subst_all(json_object_iter_value(it), params, line, stage, e));
        return o;
    }
    return json_deep_copy(v);
}

/* A size: bytes, or a number with K, M, G or T (powers of 1024). */
static bool
parse_size(const json_t *v, int64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = json_integer_value(v);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    char *end;
    errno = 0;
    double d = strtod(s, &end);
    if (end == s || errno != 0 || !(d >= 0))
        return false;
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K':
        mult = 1024.0;
        end++;
        break;
    case 'M':
        mult = 1024.0 * 1024;
        end++;
        break;
    case 'G':
        mult = 1024.0 * 1024 * 1024;
        end++;
        break;
    case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' || *end == 'B')
        end++;
    if (*end == 'B')
        end++;
    if (*end != '\0' || d * mult > 9e18)
        return false;
    *out = (int64_t)(d * mult);
    return true;
}

/* A duration: seconds, "HH:MM:SS", "MM:SS", or numbers with d, h, m, s
 * ("1h30m"). */
static bool
parse_time(const json_t *v, int64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = json_integer_value(v);
        return true;
    }
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    int64_t total = 0;
    if (strchr(s, ':') != NULL) {
        long long part[3];
        int n = 0;
        const char *p = s;
        while (n < 3) {
            char *end;
            if (!isdigit((unsigned char)*p))
                return false;
            part[n++] = strtoll(p, &end, 10);
            if (*end == '\0')
                break;
            if (*end != ':')
                return false;
            p = end + 1;
        }
        /* Hours (or minutes of M:S) up to a million: no overflow below. */
        if (n < 2 || n > 3 || part[n - 1] > 59 ||
            part[n - 2] > 59 + (n == 2) * 1000000 ||
            (n == 3 && part[0] > 1000000))
            return false;
        for (int i = 0; i < n; i++)
            total = total * 60 + part[i];
        *out = total;
        return true;
    }
    const char *p = s;
    if (*p == '\0')
        return false;
    while (*p != '\0') {
        char *end;
        if (!isdigit((unsigned char)*p))
            return false;
        long long x = strtoll(p, &end, 10);
        int64_t unit = 1;
        switch (*end) {
        case 'd':
            unit = 86400;
            end++;
            break;
        case 'h':
            unit = 3600;
            end++;
            break;
        case 'm':
            unit = 60;
            end++;
            break;
        case 's':
            end++;
            break;
        case '\0':
            break;
        default:
            return false;
        }
        if (x > 100000000LL)
            return false;
        total += x * unit;
        p = end;
    }
    *out = total;
    return true;
}

static bool
valid_stage_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' &&
            s[i] != '.')
            return false;
    return true;
}

static const char *const stage_keys[] = {
    "name",     "command", "script", "needs", "when",  "gpus",
    "fraction", "cpus",    "mem",    "tasks", "class", "queue",
    "time",     "env",     "model",  "array", "sweep", LINE_KEY,
};
static const char *const top_keys[] = { "name",  "stages", "params",
                                        "queue", "env",    LINE_KEY };

/* The stage's context while its body is made. */
typedef struct sctx {
    const json_t *st, *top, *params;
    const char *nm;
    int line;
    perr_t *e;
} sctx_t;

/* A number as the text of an argument or an environment value. */
static json_t *
number_text(const json_t *v)
{
    char buf[64];
    if (json_is_integer(v))
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
    else {
        /* The shortest text that reads back as the same number: 0.1, not
         * 0.10000000000000001. */
        double d = json_real_value(v);
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, sizeof buf, "%.*g", prec, d);
            if (strtod(buf, NULL) == d)
                break;
        }
    }
    return json_string(buf);
}

/* command (a list of arguments) or script (text for /bin/sh -ec). */
static void
body_command(const sctx_t *x, json_t *b)
{
    json_t *cmd = json_object_get(x->st, "command");
    json_t *script = json_object_get(x->st, "script");
    if ((cmd != NULL) == (script != NULL)) {
        perr_add(x->e, x->line,
                 "stage '%s': give either command (a list of arguments) or "
                 "script (text)",
                 x->nm);
        return;
    }
    if (script != NULL) {
        if (!json_is_string(script) || json_string_length(script) == 0) {
            perr_add(x->e, x->line, "stage '%s': script must be text", x->nm);
            return;
        }
        json_t *t = subst_all(script, x->params, x->line, x->nm, x->e);
        json_object_set_new(b, "command",
                            json_pack("[s, s, o]", "/bin/sh", "-ec", t));
        return;
    }
    bool ok = json_is_array(cmd) && json_array_size(cmd) > 0;
    for (size_t i = 0; ok && i < json_array_size(cmd); i++) {
        json_t *w = json_array_get(cmd, i);
        ok = json_is_string(w) || json_is_number(w);
    }
    if (!ok) {
        perr_add(x->e, x->line,
                 "stage '%s': command must be a list of arguments", x->nm);
        return;
    }
    json_t *words = json_array();
    for (size_t i = 0; i < json_array_size(cmd); i++) {
        json_t *w = json_array_get(cmd, i);
        json_array_append_new(words, json_is_string(w) ? json_incref(w)
                                                       : number_text(w));
    }
    json_object_set_new(b, "command",
                        subst_all(words, x->params, x->line, x->nm, x->e));
    json_decref(words);
}

/* gpus, fraction, cpus, mem, time and tasks. */
static void
body_sizes(const sctx_t *x, json_t *b)
{
    json_t *v;
    int64_t n;
    if ((v = json_object_get(x->st, "gpus")) != NULL) {
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            perr_add(x->e, x->line, "stage '%s': gpus must be a whole number",
                     x->nm);
        else
            json_object_set(b, "gpus", v);
    }
    if ((v = json_object_get(x->st, "fraction")) != NULL) {
        if (!json_is_number(v))
            perr_add(x->e, x->line, "stage '%s': fraction must be a number",
                     x->nm);
        else
            json_object_set_new(b, "gpu_fraction",
                                json_real(json_number_value(v)));
    }
    if ((v = json_object_get(x->st, "cpus")) != NULL) {
        if (!json_is_number(v) || json_number_value(v) <= 0 ||
            json_number_value(v) > 1e6)
            perr_add(x->e, x->line,
                     "stage '%s': cpus must be a positive number", x->nm);
        else
            json_object_set_new(
                b, "cpu_milli",
                json_integer((json_int_t)llround(json_number_value(v) * 1000)));
    }
    if ((v = json_object_get(x->st, "mem")) != NULL) {
        if (!parse_size(v, &n))
            perr_add(x->e, x->line,
                     "stage '%s': mem must be a size such as 512M or 16G",
                     x->nm);
        else
            json_object_set_new(b, "mem_bytes", json_integer(n));
    }
    if ((v = json_object_get(x->st, "time")) != NULL) {
        if (!parse_time(v, &n))
            perr_add(x->e, x->line,
                     "stage '%s': time must be a duration such as 90m, 2h "
                     "or 1:30:00",
                     x->nm);
        else
            json_object_set_new(b, "time_limit", json_integer(n));
    }
    if ((v = json_object_get(x->st, "tasks")) != NULL)
        json_object_set(b, "tasks", v); /* al__job_parse checks it */
}

/* class, queue (the file's by default), model and array. */
static void
body_strings(const sctx_t *x, json_t *b)
{
    static const struct {
        const char *from, *to;
    } strs[] = { { "class", "class" },
                 { "queue", "queue" },
                 { "model", "gpu_model" },
                 { "array", "array" } };
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
        json_t *v = json_object_get(x->st, strs[k].from);
        if (v == NULL && strcmp(strs[k].from, "queue") == 0)
            v = json_object_get(x->top, "queue");
        if (v == NULL)
            continue;
        if (!json_is_string(v))
            perr_add(x->e, x->line, "stage '%s': %s must be text", x->nm,
                     strs[k].from);
        else
            json_object_set_new(b, strs[k].to,
                                subst_all(v, x->params, x->line, x->nm, x->e));
    }
}

/* sweep: a mapping of axis names to their values (a list of texts or
 * numbers), into the body's "sweep" ([{name, values}], every combination
 * one element of the stage's array; arraydoc.c checks names, sizes and
 * the command's {NAME} placeholders).  An array of "%N" alone limits how
 * many of the combinations run at once. */
static void
body_sweep(const sctx_t *x, json_t *b)
{
    const json_t *sw = json_object_get(x->st, "sweep");
    if (sw == NULL)
        return;
    if (!json_is_object(sw)) {
        perr_add(x->e, x->line,
                 "stage '%s': sweep must be a mapping of names to lists of "
                 "values",
                 x->nm);
        return;
    }
    json_t *axes = json_array();
    int64_t combos = 1;
    for (void *it = json_object_iter((json_t *)sw); it != NULL;
         it = json_object_iter_next((json_t *)sw, it)) {
        const char *k = json_object_iter_key(it);
        const json_t *vs = json_object_iter_value(it);
        if (strcmp(k, LINE_KEY) == 0)
            continue;
        json_t *vals = json_array();
        bool ok = json_is_array(vs) && json_array_size(vs) > 0;
        for (size_t i = 0; ok && i < json_array_size(vs); i++) {
            const json_t *v = json_array_get(vs, i);
            if (json_is_string(v))
                json_array_append_new(
                    vals, subst_all(v, x->params, x->line, x->nm, x->e));
            else if (json_is_number(v))
                json_array_append_new(vals, number_text(v));
            else
                ok = false;
        }
        if (!ok) {
            perr_add(x->e, x->line,
                     "stage '%s': sweep %s must be a list of texts or numbers",
                     x->nm, k);
            json_decref(vals);
            continue;
        }
        if (combos <= AL_ARRAY_MAX_ELEMENTS)
            combos *= (int64_t)json_array_size(vals);
        json_array_append_new(
            axes, json_pack("{s:s, s:o}", "name", k, "values", vals));
    }
    /* Said here in the file's terms (the API's are of JSON objects). */
    size_t nax = json_object_size(sw) - (json_object_get(sw, LINE_KEY) != NULL);
    if (nax == 0 || nax > AL_SWEEP_MAX_AXES)
        perr_add(x->e, x->line, "stage '%s': sweep must have 1 to %d names",
                 x->nm, AL_SWEEP_MAX_AXES);
    json_object_set_new(b, "sweep", axes);
    const char *spec = al_json_str(b, "array", NULL);
    if (spec != NULL && spec[0] == '%' && combos <= AL_ARRAY_MAX_ELEMENTS) {
        char *full = al_xasprintf("0-%lld%s", (long long)combos - 1, spec);
        json_object_set_new(b, "array", json_string(full));
        free(full);
    }
}

/* The environment: the file's, then the stage's over it. */
static void
body_env(const sctx_t *x, json_t *b)
{
    json_t *env = json_object();
    const json_t *envs[2] = { json_object_get(x->top, "env"),
                              json_object_get(x->st, "env") };
    for (int i = 0; i < 2; i++) {
        if (envs[i] == NULL)
            continue;
        if (!json_is_object(envs[i])) {
            perr_add(x->e, x->line, "stage '%s': env must be a mapping", x->nm);
            continue;
        }
        json_t *eo = (json_t *)envs[i];
        for (void *it = json_object_iter(eo); it != NULL;
             it = json_object_iter_next(eo, it)) {
            const char *k = json_object_iter_key(it);
            json_t *ev = json_object_iter_value(it);
            if (strcmp(k, LINE_KEY) == 0)
                continue;
            if (json_is_string(ev))
                json_object_set_new(
                    env, k, subst_all(ev, x->params, x->line, x->nm, x->e));
            else if (json_is_number(ev))
                json_object_set_new(env, k, number_text(ev));
            else
                perr_add(x->e, x->line, "stage '%s': env %s must be text",
                         x->nm, k);
        }
    }
    json_object_set_new(b, "env", env);
}

/* The job body of stage ps (object st), into ps->body. */
static void
stage_body(const json_t *st, const json_t *top, const json_t *params,
           al__pstage_t *ps, perr_t *e)
{
    sctx_t x = { st, top, params, ps->name, ps->line, e };
    json_t *b = json_object();
    body_command(&x, b);
    body_sizes(&x, b);
    body_strings(&x, b);
    body_sweep(&x, b);
    body_env(&x, b);
    json_object_set_new(b, "name", json_string(ps->name));
    ps->body = b;
}

/* Kahn's order of the stages; stages left over are on a cycle. */
static void
order_stages(al__pfile_t *pf, perr_t *e)
{
    int n = pf->nstages;
    int *left = al_xcalloc((size_t)n + 1, sizeof(int));
    int *order = al_xcalloc((size_t)n + 1, sizeof(int));
    int head = 0, tail = 0;
    for (int i = 0; i < n; i++) {
        left[i] = pf->stages[i].nneeds;
        if (left[i] == 0)
            order[tail++] = i;
    }
    while (head < tail) {
        int x = order[head++];
        for (int i = 0; i < n; i++)
            for (int k = 0; k < pf->stages[i].nneeds; k++)
                if (pf->stages[i].needs[k] == x && --left[i] == 0)
                    order[tail++] = i;
    }
    for (int i = 0; i < n; i++)
        if (left[i] > 0)
            perr_add(e, pf->stages[i].line, "stage '%s' is on a cycle of needs",
                     pf->stages[i].name);
    pf->order = order;
    free(left);
}

void
al__pfile_free(al__pfile_t *pf)
{
    if (pf == NULL)
        return;
    for (int i = 0; i < pf->nstages; i++) {
        free(pf->stages[i].name);
        free(pf->stages[i].needs);
        json_decref(pf->stages[i].body);
    }
    free(pf->stages);
    free(pf->order);
    free(pf->name);
    free(pf);
}

/* The parameters: the file's defaults, then sets; all strings. */
static json_t *
params_of(const json_t *top, const json_t *sets, perr_t *e)
{
    json_t *out = json_object();
    json_t *p = json_object_get(top, "params");
    if (p != NULL && !json_is_object(p))
        perr_add(e, line_of(top),
                 "params must be a mapping of names to "
                 "default values");
    for (void *it = json_object_iter(p); it != NULL;
         it = json_object_iter_next(p, it)) {
        const char *k = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        if (strcmp(k, LINE_KEY) == 0)
            continue;
        if (json_is_string(v)) {
            json_object_set(out, k, v);
        } else if (json_is_integer(v) || json_is_real(v)) {
            char buf[64];
            if (json_is_integer(v))
                snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
                         json_integer_value(v));
            else
                snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
            json_object_set_new(out, k, json_string(buf));
        } else if (json_is_boolean(v)) {
            json_object_set_new(
                out, k, json_string(json_is_true(v) ? "true" : "false"));
        } else {
            perr_add(e, line_of(p), "param '%s' must be text or a number", k);
        }
    }
    for (void *it = json_object_iter((json_t *)sets); it != NULL;
         it = json_object_iter_next((json_t *)sets, it)) {
        const char *k = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it);
        if (json_object_get(out, k) == NULL)
            perr_add(e, 0, "--set %s: the file has no such parameter", k);
        else if (!json_is_string(v))
            perr_add(e, 0, "--set %s: the value must be text", k);
        else
            json_object_set(out, k, v);
    }
    return out;
}

/* The file's text as a tree: JSON when it starts with '{' or '[', else
 * YAML.  NULL after an error. */
static json_t *
read_text(const char *text, size_t len, perr_t *e)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)text[i]))
        i++;
    if (memchr(text, '\0', len) != NULL) {
        perr_add(e, 0, "the file holds a NUL byte");
        return NULL;
    }
    json_t *top;
    if (i < len && (text[i] == '{' || text[i] == '[')) {
        char *why = NULL;
        top = al_json_parse(text, len, &why);
        if (top == NULL)
            perr_add(e, 0, "JSON: %s", why ? why : "malformed");
        free(why);
    } else {
        top = parse_yaml(text, len, e);
    }
    if (top != NULL && !json_is_object(top)) {
        perr_add(e, 0, "the file must be a mapping with a stages list");
        json_decref(top);
        top = NULL;
    }
    return top;
}

/* Stage s's name (from object st), checked and unique. */
static void
name_stage(al__pfile_t *pf, int s, const json_t *st, const json_t *top,
           perr_t *e)
{
    al__pstage_t *ps = &pf->stages[s];
    ps->line = json_is_object(st) ? line_of(st) : 0;
    json_t *sn = json_object_get(st, "name");
    if (!json_is_object(st)) {
        perr_add(e, line_of(top), "stage %d is not a mapping", s + 1);
    } else if (!json_is_string(sn) ||
               !valid_stage_name(json_string_value(sn))) {
        perr_add(e, ps->line,
                 "stage %d: name must be 1-64 letters, digits, '-', '_' or "
                 "'.'",
                 s + 1);
    } else {
        ps->name = al_xstrdup(json_string_value(sn));
        for (int o = 0; o < s; o++)
            if (pf->stages[o].name != NULL &&
                strcmp(pf->stages[o].name, ps->name) == 0)
                perr_add(e, ps->line, "stage '%s' named twice (also line %d)",
                         ps->name, pf->stages[o].line);
    }
    if (ps->name == NULL) {
        char buf[32];
        snprintf(buf, sizeof buf, "#%d", s + 1);
        ps->name = al_xstrdup(buf);
    }
}

/* Stage s's needs (names of other stages) into indices. */
static void
stage_needs(al__pfile_t *pf, int s, const json_t *st, perr_t *e)
{
    al__pstage_t *ps = &pf->stages[s];
    json_t *nd = json_object_get(st, "needs");
    json_t *one = json_is_string(nd) ? json_pack("[O]", nd) : NULL;
    if (one != NULL)
        nd = one;
    if (nd != NULL && !json_is_array(nd))
        perr_add(e, ps->line, "stage '%s': needs must be a list of stage names",
                 ps->name);
    ps->needs = al_xcalloc(json_array_size(nd) + 1, sizeof *ps->needs);
    for (size_t k = 0; k < json_array_size(nd); k++) {
        const char *want = json_string_value(json_array_get(nd, k));
        int found = -1;
        for (int o = 0; want != NULL && o < pf->nstages; o++)
            if (strcmp(pf->stages[o].name, want) == 0)
                found = o;
        if (found < 0)
            perr_add(e, ps->line, "stage '%s': needs '%s', no such stage",
                     ps->name, want ? want : "(not text)");
        else if (found == s)
            perr_add(e, ps->line, "stage '%s' needs itself", ps->name);
        else
            ps->needs[ps->nneeds++] = found;
    }
    json_decref(one);
}

/* Stage s's fields besides its name: known keys, when, needs, body. */
static void
check_stage(al__pfile_t *pf, int s, const json_t *st, const json_t *top,
            const json_t *params, perr_t *e)
{
    al__pstage_t *ps = &pf->stages[s];
    const char *bad = al__unknown_member(
        st, stage_keys, sizeof stage_keys / sizeof *stage_keys);
    if (bad != NULL)
        perr_add(e, ps->line,
                 "stage '%s': unknown field '%s' (see docs/pipelines.md)",
                 ps->name, bad);
    json_t *w = json_object_get(st, "when");
    const char *ws = json_is_string(w) ? json_string_value(w)
                     : w == NULL       ? "success"
                                       : "";
    ps->when = strcmp(ws, "success") == 0   ? AL_WHEN_SUCCESS
               : strcmp(ws, "failure") == 0 ? AL_WHEN_FAILURE
               : strcmp(ws, "always") == 0  ? AL_WHEN_ALWAYS
                                            : -1;
    if (ps->when < 0)
        perr_add(e, ps->line,
                 "stage '%s': when must be success, failure or always",
                 ps->name);
    stage_needs(pf, s, st, e);
    if (ps->when > AL_WHEN_SUCCESS && ps->nneeds == 0)
        perr_add(e, ps->line, "stage '%s': when %s needs a stage to follow",
                 ps->name, ws);
    stage_body(st, top, params, ps, e);
}

/* The file's fields and its stages, into pf. */
static void
check_file(al__pfile_t *pf, const json_t *top, const json_t *sets, perr_t *e)
{
    const char *bad =
        al__unknown_member(top, top_keys, sizeof top_keys / sizeof *top_keys);
    if (bad != NULL)
        perr_add(e, line_of(top),
                 "unknown field '%s' (a pipeline has name, params, queue, env "
                 "and stages)",
                 bad);
    json_t *nm = json_object_get(top, "name");
    if (nm != NULL &&
        (!json_is_string(nm) || !valid_stage_name(json_string_value(nm))))
        perr_add(e, line_of(top),
                 "name must be 1-64 letters, digits, '-', '_' or '.'");
    pf->name =
        al_xstrdup(json_is_string(nm) ? json_string_value(nm) : "pipeline");
    json_t *params = params_of(top, sets, e);
    json_t *stages = json_object_get(top, "stages");
    if (!json_is_array(stages) || json_array_size(stages) == 0)
        perr_add(e, line_of(top), "stages must be a non-empty list");
    else if (json_array_size(stages) > AL_PIPELINE_MAX_STAGES)
        perr_add(e, line_of(top), "more than %d stages",
                 AL_PIPELINE_MAX_STAGES);
    else
        pf->nstages = (int)json_array_size(stages);
    pf->stages = al_xcalloc((size_t)pf->nstages + 1, sizeof *pf->stages);
    /* Names first, so that needs can name a later stage. */
    for (int s = 0; s < pf->nstages; s++)
        name_stage(pf, s, json_array_get(stages, (size_t)s), top, e);
    for (int s = 0; s < pf->nstages; s++) {
        json_t *st = json_array_get(stages, (size_t)s);
        if (json_is_object(st))
            check_stage(pf, s, st, top, params, e);
    }
    json_decref(params);
    if (e->n == 0)
        order_stages(pf, e);
}

int
al__pfile_parse(const char *text, size_t len, const json_t *sets,
                al__pfile_t **out, char **cause)
{
    perr_t e = { 0 };
    json_t *top = read_text(text, len, &e);
    al__pfile_t *pf = al_xcalloc(1, sizeof *pf);
    if (top != NULL)
        check_file(pf, top, sets, &e);
    json_decref(top);
    if (e.n > 0) {
        al__pfile_free(pf);
        if (e.n > MAX_ERRORS) {
            char *more =
                al_xasprintf("%s; and %d more", e.text, e.n - MAX_ERRORS);
            free(e.text);
            e.text = more;
        }
        if (cause != NULL)
            *cause = e.text;
        else
            free(e.text);
        return AL_EINVAL;
    }
    *out = pf;
    return 0;
}
