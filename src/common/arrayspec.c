/*
 * arrayspec.c -- job array specs ("0-999%50") and sweep axes
 * ("lr=1e-3,1e-4"): parsers, position <-> index, placeholders.  See
 * arrayspec.h.
 *
 * May call: libc and xmalloc.
 */
#include "arrayspec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

static int
fail(char **cause, char *msg)
{
    if (cause != NULL)
        *cause = msg;
    else
        free(msg);
    return -1;
}

/* Reads a decimal number at *p (at most AL_ARRAY_MAX_INDEX) and moves *p
 * past it; false when there is none or it is too large. */
static bool
number(const char **p, int64_t *out)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;
    while (*s >= '0' && *s <= '9') {
        if (v > AL_ARRAY_MAX_INDEX)
            return false;
        v = v * 10 + (*s - '0');
        s++, n++;
    }
    if (n == 0 || v > AL_ARRAY_MAX_INDEX)
        return false;
    *p = s;
    *out = v;
    return true;
}

int
al_array_spec_parse(const char *s, al_array_spec_t *out, char **cause)
{
    if (s == NULL || *s == '\0')
        return fail(cause, al_xstrdup("the array spec is empty (e.g. "
                                      "0-99, 1,3,7 or 0-15:4%2)"));
    const char *pct = strchr(s, '%');
    size_t body = pct != NULL ? (size_t)(pct - s) : strlen(s);
    int64_t limit = 0;
    if (pct != NULL) {
        const char *p = pct + 1;
        if (!number(&p, &limit) || *p != '\0')
            return fail(cause, al_xasprintf("array spec '%s': %% wants a "
                                            "number of elements to run at "
                                            "once",
                                            s));
        if (limit == 0)
            return fail(cause, al_xasprintf("array spec '%s': %%0 would run "
                                            "nothing; the limit is at least "
                                            "1",
                                            s));
    }
    if (body == 0)
        return fail(cause, al_xasprintf("array spec '%s' names no indices "
                                        "(e.g. 0-99%s)",
                                        s, pct != NULL ? pct : ""));
    al_array_range_t *r = NULL;
    int nr = 0;
    int64_t count = 0;
    const char *p = s, *end = s + body;
    char *err = NULL;
    while (err == NULL) {
        int64_t lo, hi, step = 1;
        const char *start = p;
        if (!number(&p, &lo)) {
            err =
                al_xasprintf("array spec '%s': expected an index (0..%d) "
                             "at '%.*s'",
                             s, AL_ARRAY_MAX_INDEX, (int)(end - start), start);
            break;
        }
        hi = lo;
        if (p < end && *p == '-') {
            p++;
            if (!number(&p, &hi)) {
                err = al_xasprintf("array spec '%s': expected the end of "
                                   "the range (at most %d) after '%.*s'",
                                   s, AL_ARRAY_MAX_INDEX, (int)(p - start),
                                   start);
                break;
            }
            if (hi < lo) {
                err = al_xasprintf("array spec '%s': the range %lld-%lld "
                                   "ends before it starts",
                                   s, (long long)lo, (long long)hi);
                break;
            }
            if (p < end && *p == ':') {
                p++;
                if (!number(&p, &step) || step == 0) {
                    err = al_xasprintf("array spec '%s': a step (after "
                                       "':') is a number of at least 1",
                                       s);
                    break;
                }
            }
        }
        if (p < end && *p != ',') {
            err = al_xasprintf("array spec '%s': unexpected '%c'", s, *p);
            break;
        }
        if (nr > 0 && lo <= r[nr - 1].hi) {
            err = al_xasprintf("array spec '%s': %lld comes after %lld; "
                               "list indices in increasing order, once "
                               "each",
                               s, (long long)lo, (long long)r[nr - 1].hi);
            break;
        }
        if (nr == AL_ARRAY_MAX_PARTS) {
            err = al_xasprintf("array spec '%s': more than %d parts", s,
                               AL_ARRAY_MAX_PARTS);
            break;
        }
        hi = lo + (hi - lo) / step * step; /* the last one taken */
        int64_t n = (hi - lo) / step + 1;
        if (count + n > AL_ARRAY_MAX_ELEMENTS) {
            /* Count the whole spec for the message. */
            int64_t total = count + n;
            err = al_xasprintf("array spec '%s' has %s%lld elements; an "
                               "array has at most %d",
                               s, p < end ? "more than " : "", (long long)total,
                               AL_ARRAY_MAX_ELEMENTS);
            break;
        }
        r = al_xreallocarray(r, (size_t)nr + 1, sizeof *r);
        r[nr++] = (al_array_range_t){
            .lo = lo, .hi = hi, .step = step, .first = count
        };
        count += n;
        if (p == end)
            break;
        p++; /* ',' */
    }
    if (err != NULL || r == NULL || nr == 0) { /* each part adds or fails */
        free(r);
        return fail(cause, err != NULL ? err
                                       : al_xasprintf("array spec '%s' names "
                                                      "no indices",
                                                      s));
    }
    out->r = r;
    out->nr = nr;
    out->count = count;
    out->limit = limit;
    out->min = r[0].lo;
    out->max = r[nr - 1].hi;
    out->step = nr == 1 ? r[0].step : 1;
    return 0;
}

void
al_array_spec_fini(al_array_spec_t *a)
{
    if (a == NULL)
        return;
    free(a->r);
    a->r = NULL;
    a->nr = 0;
}

int64_t
al_array_spec_index(const al_array_spec_t *a, int64_t k)
{
    int lo = 0, hi = a->nr - 1;
    while (lo < hi) { /* the last range whose first <= k */
        int mid = (lo + hi + 1) / 2;
        if (a->r[mid].first <= k)
            lo = mid;
        else
            hi = mid - 1;
    }
    const al_array_range_t *r = &a->r[lo];
    return r->lo + (k - r->first) * r->step;
}

int64_t
al_array_spec_pos(const al_array_spec_t *a, int64_t i)
{
    int lo = 0, hi = a->nr - 1;
    if (a->nr == 0 || i < a->r[0].lo)
        return -1;
    while (lo < hi) { /* the last range whose lo <= i */
        int mid = (lo + hi + 1) / 2;
        if (a->r[mid].lo <= i)
            lo = mid;
        else
            hi = mid - 1;
    }
    const al_array_range_t *r = &a->r[lo];
    if (i > r->hi || (i - r->lo) % r->step != 0)
        return -1;
    return r->first + (i - r->lo) / r->step;
}

static bool
name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (!first && c >= '0' && c <= '9');
}

int
al_sweep_axis_parse(const char *s, al_sweep_axis_t *out, char **cause)
{
    const char *eq = strchr(s, '=');
    size_t nlen = eq != NULL ? (size_t)(eq - s) : 0;
    bool ok = nlen > 0 && nlen <= AL_SWEEP_MAX_NAME;
    for (size_t i = 0; ok && i < nlen; i++)
        ok = name_char(s[i], i == 0);
    if (!ok)
        return fail(cause, al_xasprintf("sweep '%s': wants NAME=V1,V2,... "
                                        "(NAME: letters, digits and _, at "
                                        "most %d)",
                                        s, AL_SWEEP_MAX_NAME));
    char *text = al_xstrdup(eq + 1);
    const char **values = NULL;
    int n = 0;
    char *err = NULL;
    for (char *v = text;;) {
        char *comma = strchr(v, ',');
        if (comma != NULL)
            *comma = '\0';
        if (*v == '\0') {
            err = al_xasprintf("sweep '%s': an empty value", s);
            break;
        }
        if (n == AL_ARRAY_MAX_PARTS) {
            err = al_xasprintf("sweep '%s': more than %d values", s,
                               AL_ARRAY_MAX_PARTS);
            break;
        }
        values = al_xreallocarray(values, (size_t)n + 1, sizeof *values);
        values[n++] = v;
        if (comma == NULL)
            break;
        v = comma + 1;
    }
    if (err != NULL) {
        free(values);
        free(text);
        return fail(cause, err);
    }
    memcpy(out->name, s, nlen);
    out->name[nlen] = '\0';
    out->text = text;
    out->values = values;
    out->nvalues = n;
    return 0;
}

void
al_sweep_axis_fini(al_sweep_axis_t *ax)
{
    if (ax == NULL)
        return;
    free(ax->text);
    free((void *)ax->values);
    ax->text = NULL;
    ax->values = NULL;
    ax->nvalues = 0;
}

/* The length of the placeholder "{name}" at w (w[0] == '{'), 0 if none;
 * its name is w+1, len-2 bytes. */
static size_t
placeholder(const char *w)
{
    size_t n = 1;
    while (name_char(w[n], n == 1))
        n++;
    return n > 1 && w[n] == '}' ? n + 1 : 0;
}

static int
known(const char *name, size_t len, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return i;
    return -1;
}

bool
al_sweep_unknown(const char *w, const char *const *names, int n, char *bad,
                 size_t len)
{
    for (const char *p = w; *p != '\0'; p++) {
        size_t pl;
        if (*p != '{' || (p > w && p[-1] == '$') || (pl = placeholder(p)) == 0)
            continue;
        if (known(p + 1, pl - 2, names, n) < 0) {
            snprintf(bad, len, "%.*s", (int)pl, p);
            return true;
        }
    }
    return false;
}

char *
al_sweep_subst(const char *w, const char *const *names,
               const char *const *values, int n)
{
    size_t cap = strlen(w) + 1, len = 0;
    char *out = al_xmalloc(cap);
    for (const char *p = w; *p != '\0';) {
        size_t pl = 0;
        int k = -1;
        if (*p == '{' && (p == w || p[-1] != '$') && (pl = placeholder(p)) > 0)
            k = known(p + 1, pl - 2, names, n);
        const char *add = k >= 0 ? values[k] : p;
        size_t alen = k >= 0 ? strlen(values[k]) : 1;
        if (len + alen + 1 > cap) {
            cap = 2 * (len + alen + 1);
            out = al_xrealloc(out, cap);
        }
        memcpy(out + len, add, alen);
        len += alen;
        p += k >= 0 ? pl : 1;
    }
    out[len] = '\0';
    return out;
}
