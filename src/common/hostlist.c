/*
 * hostlist.c -- Slurm's hostlist form, "node[1-3,7],login1": folding a list
 * of names into it and expanding it back.  Base library: libc only.
 */
#include "hostlist.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "xmalloc.h"

/* A name split into a prefix and a trailing number (digits 0..18 long). */
typedef struct split {
    size_t plen; /* prefix length */
    int width;   /* digits, when they have a leading zero; else 0 */
    int digits;
    bool num;   /* has a trailing number */
    uint64_t v; /* its value */
} split_t;

static split_t
split_name(const char *s)
{
    split_t r = { strlen(s), 0, 0, false, 0 };
    size_t n = r.plen, d = n;
    while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
        d--;
    if (d == n || n - d > 18)
        return r;
    r.plen = d;
    r.num = true;
    r.digits = (int)(n - d);
    for (size_t i = d; i < n; i++)
        r.v = r.v * 10 + (uint64_t)(s[i] - '0');
    if (s[d] == '0' && n - d > 1)
        r.width = (int)(n - d);
    return r;
}

static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A name's place in the order of groups: its prefix (a name without a
 * number is all prefix), whether it has a number, then where it was. */
typedef struct member {
    const char *s;
    size_t plen, i;
    bool num;
} member_t;

static int
cmp_member(const void *pa, const void *pb)
{
    const member_t *a = pa, *b = pb;
    size_t n = a->plen < b->plen ? a->plen : b->plen;
    int c = memcmp(a->s, b->s, n);
    if (c != 0)
        return c;
    if (a->plen != b->plen)
        return a->plen < b->plen ? -1 : 1;
    if (a->num != b->num)
        return a->num ? 1 : -1;
    return a->i < b->i ? -1 : a->i > b->i;
}

/* Whether members x and y are of one group: one prefix, both numbered or
 * neither (and then the same name). */
static bool
same_group(const member_t *x, const member_t *y)
{
    return x->plen == y->plen && x->num == y->num &&
           memcmp(x->s, y->s, x->plen) == 0 &&
           (x->num || strcmp(x->s, y->s) == 0);
}

char *
al_hostlist_fold(const char *const *names, size_t n)
{
    al_buf_t out;
    al_buf_init(&out);
    bool *done = al_xcalloc(n + 1, sizeof *done);
    uint64_t *nums = al_xcalloc(n + 1, sizeof *nums);
    /* Each name split once, and the names of one prefix side by side in
     * the order they came (a sort: no pair of names is compared twice
     * over), with where each name's group begins and ends. */
    split_t *sp = al_xcalloc(n + 1, sizeof *sp);
    member_t *mb = al_xcalloc(n + 1, sizeof *mb);
    size_t *at = al_xcalloc(n + 1, sizeof *at);
    size_t *from = al_xcalloc(n + 1, sizeof *from);
    for (size_t i = 0; i < n; i++) {
        sp[i] = split_name(names[i]);
        mb[i] = (member_t){ names[i], sp[i].plen, i, sp[i].num };
    }
    qsort(mb, n, sizeof *mb, cmp_member);
    for (size_t p = 0; p < n; p++) {
        at[mb[p].i] = p;
        from[p] = p > 0 && same_group(&mb[p - 1], &mb[p]) ? from[p - 1] : p;
    }
    for (size_t i = 0; i < n; i++) {
        if (done[i])
            continue;
        split_t a = sp[i];
        if (out.len > 0)
            al_buf_puts(&out, ",");
        size_t p = from[at[i]];
        if (!a.num) {
            al_buf_puts(&out, names[i]);
            for (; p < n && from[p] == from[at[i]]; p++)
                done[mb[p].i] = true;
            continue;
        }
        /* Every later name of the same prefix and width joins this one
         * (the earlier ones are done: each went into a group of its own
         * or an earlier one's). */
        size_t m = 0;
        for (; p < n && from[p] == from[at[i]]; p++) {
            size_t k = mb[p].i;
            if (done[k])
                continue;
            split_t b = sp[k];
            /* Printed with the group's width, b's number must read as
             * it does: "gpu10" joins "gpu01" (width 2), "gpu1" does not. */
            bool fits = b.width > 0 ? b.width == a.width : b.digits >= a.width;
            if (fits) {
                done[k] = true;
                nums[m++] = b.v;
            }
        }
        qsort(nums, m, sizeof *nums, cmp_u64);
        size_t u = 0; /* without repeats */
        for (size_t k = 0; k < m; k++)
            if (u == 0 || nums[u - 1] != nums[k])
                nums[u++] = nums[k];
        al_buf_printf(&out, "%.*s%s", (int)a.plen, names[i], u > 1 ? "[" : "");
        for (size_t k = 0; k < u;) {
            size_t e = k;
            while (e + 1 < u && nums[e + 1] == nums[e] + 1)
                e++;
            al_buf_printf(&out, "%s%0*llu", k > 0 ? "," : "", a.width,
                          (unsigned long long)nums[k]);
            if (e > k)
                al_buf_printf(&out, "-%0*llu", a.width,
                              (unsigned long long)nums[e]);
            k = e + 1;
        }
        if (u > 1)
            al_buf_puts(&out, "]");
    }
    free(done);
    free(nums);
    free(sp);
    free(mb);
    free(at);
    free(from);
    char *s = al_xstrdup(al_buf_cstr(&out));
    al_buf_fini(&out);
    return s;
}

void
al_hostlist_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

typedef struct names {
    char **v;
    size_t n, cap;
} names_t;

static bool
add(names_t *l, char *s)
{
    if (l->n == AL_HOSTLIST_MAX || s[0] == '\0') {
        free(s);
        return false;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 16;
        l->v = al_xreallocarray(l->v, l->cap, sizeof *l->v);
    }
    l->v[l->n++] = s;
    return true;
}

/* A number of at most 18 digits at *p; advances *p, sets *digits. */
static bool
number(const char **p, uint64_t *v, int *digits)
{
    const char *s = *p;
    *v = 0;
    while (**p >= '0' && **p <= '9' && *p - s < 18)
        *v = *v * 10 + (uint64_t)(*(*p)++ - '0');
    *digits = (int)(*p - s);
    return *digits > 0 && !(**p >= '0' && **p <= '9');
}

/* One name of the list, s[0..len-1]: "pfx[ranges]sfx" or a plain name. */
static bool
expand_one(names_t *l, const char *s, size_t len)
{
    const char *open = memchr(s, '[', len);
    if (open == NULL) {
        if (memchr(s, ']', len) != NULL)
            return false;
        return add(l, al_xstrndup(s, len));
    }
    const char *close = memchr(open, ']', len - (size_t)(open - s));
    if (close == NULL || memchr(close + 1, '[', len - (size_t)(close + 1 - s)))
        return false;
    if (memchr(close + 1, ']', len - (size_t)(close + 1 - s)) != NULL)
        return false;
    int plen = (int)(open - s);
    const char *sfx = close + 1;
    int slen = (int)(len - (size_t)(sfx - s));
    const char *p = open + 1;
    for (;;) {
        uint64_t lo, hi;
        int dl, dh;
        const char *start = p;
        if (!number(&p, &lo, &dl))
            return false;
        hi = lo;
        if (*p == '-') {
            p++;
            if (!number(&p, &hi, &dh) || hi < lo)
                return false;
        }
        /* "01-10": a leading zero pads every name to its width. */
        int width = dl > 1 && start[0] == '0' ? dl : 0;
        if (hi - lo >= AL_HOSTLIST_MAX)
            return false;
        for (uint64_t v = lo; v <= hi; v++) {
            char *name = al_xasprintf("%.*s%0*llu%.*s", plen, s, width,
                                      (unsigned long long)v, slen, sfx);
            if (!add(l, name))
                return false;
        }
        if (p == close)
            break;
        if (*p != ',')
            return false;
        p++;
    }
    return true;
}

int
al_hostlist_expand(const char *list, char ***out, size_t *n)
{
    names_t l = { NULL, 0, 0 };
    const char *p = list;
    bool ok = *p != '\0';
    while (ok && *p != '\0') {
        /* The next comma outside brackets ends a name. */
        size_t len = 0;
        int depth = 0;
        while (p[len] != '\0' && (p[len] != ',' || depth > 0)) {
            depth += p[len] == '[' ? 1 : p[len] == ']' ? -1 : 0;
            len++;
        }
        ok = depth == 0 && len > 0 && expand_one(&l, p, len);
        p += len;
        if (ok && *p == ',') {
            p++;
            ok = *p != '\0';
        }
    }
    if (!ok) {
        al_hostlist_free(l.v, l.n);
        return -1;
    }
    *out = l.v;
    *n = l.n;
    return 0;
}

char *
al_hostlist_tasks_per_node(const char *const *task_nodes, size_t n,
                           char **nodelist)
{
    *nodelist = al_hostlist_fold(task_nodes, n);
    char **names = NULL;
    size_t nn = 0;
    al_buf_t out;
    al_buf_init(&out);
    if (al_hostlist_expand(*nodelist, &names, &nn) == 0) {
        long long prev = -1, run = 0;
        for (size_t i = 0; i <= nn; i++) {
            long long count = 0;
            for (size_t t = 0; i < nn && t < n; t++)
                count += strcmp(task_nodes[t], names[i]) == 0;
            if (i < nn && count == prev) {
                run++;
                continue;
            }
            if (prev >= 0) {
                al_buf_printf(&out, "%s%lld", out.len ? "," : "", prev);
                if (run > 1)
                    al_buf_printf(&out, "(x%lld)", run);
            }
            prev = count;
            run = 1;
        }
        al_hostlist_free(names, nn);
    }
    char *s = al_xstrdup(al_buf_cstr(&out));
    al_buf_fini(&out);
    return s;
}
