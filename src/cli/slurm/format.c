/*
 * format.c -- the format strings of Slurm's listing commands: squeue's and
 * sinfo's "%.18i %9P", squeue's -O "JobID:20" and sacct's -o "JobID%20",
 * read into items, and a value laid out in its item's width; signals as
 * Slurm's commands name them, and sbatch's --signal.
 *
 * May call: src/common (allocation, buffers).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "slurm_int.h"
#include "xmalloc.h"

#define MAX_WIDTH 10000
#define MAX_ITEMS 256

static bool
push(al_sl_fmt_t *f, al_sl_item_t it)
{
    if (f->n == MAX_ITEMS) {
        free(it.text);
        return false;
    }
    f->v = al_xreallocarray(f->v, f->n + 1, sizeof *f->v);
    f->v[f->n++] = it;
    return true;
}

void
al_sl_fmt_fini(al_sl_fmt_t *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->v[i].text);
    free(f->v);
    f->v = NULL;
    f->n = 0;
}

/* Digits at *p into *w (at most MAX_WIDTH); false when too large. */
static bool
width(const char **p, int *w)
{
    long v = 0;
    while (**p >= '0' && **p <= '9') {
        v = v * 10 + (**p - '0');
        if (v > MAX_WIDTH)
            return false;
        (*p)++;
    }
    *w = (int)v;
    return true;
}

int
al_sl_fmt_percent(const char *s, al_sl_fmt_t *f)
{
    al_sl_fmt_t r = { NULL, 0 };
    const char *p = s, *lit = s;
    while (*p != '\0') {
        if (*p != '%') {
            p++;
            continue;
        }
        const char *q = p + 1;
        al_sl_item_t it = { NULL, 0, 0, false, false };
        if (*q == '.') {
            it.right = true;
            q++;
        }
        if (!width(&q, &it.width))
            goto bad;
        it.given = it.width > 0;
        bool letter = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z');
        if (*q == '\0')
            goto bad;
        if (!letter) { /* "%-8T", "%%": printed as they stand */
            p = q;
            continue;
        }
        if (p > lit &&
            !push(&r, (al_sl_item_t){ al_xstrndup(lit, (size_t)(p - lit)), 0, 0,
                                      false, false }))
            goto bad;
        it.field = *q;
        it.text = al_xstrndup(q, 1);
        if (!push(&r, it))
            goto bad;
        p = lit = q + 1;
    }
    if (p > lit &&
        !push(&r, (al_sl_item_t){ al_xstrndup(lit, (size_t)(p - lit)), 0, 0,
                                  false, false }))
        goto bad;
    *f = r;
    return 0;
bad:
    al_sl_fmt_fini(&r);
    return -1;
}

int
al_sl_fmt_named(const char *s, char sep, al_sl_fmt_t *f)
{
    al_sl_fmt_t r = { NULL, 0 };
    const char *p = s;
    while (*p != '\0') {
        size_t n = strcspn(p, ", ");
        const char *w = p, *end = p + n;
        p = *end != '\0' ? end + 1 : end;
        if (n == 0)
            continue;
        const char *at = memchr(w, sep, n);
        size_t nlen = at != NULL ? (size_t)(at - w) : n;
        if (nlen == 0 || nlen > 64)
            goto bad;
        al_sl_item_t it = { al_xstrndup(w, nlen), 'F', 0, false, false };
        if (at != NULL) {
            const char *q = at + 1;
            bool neg = *q == '-', dot = *q == '.';
            if (neg || dot)
                q++;
            int wd;
            if (!width(&q, &wd) || q != end || q == at + 1 + (neg || dot)) {
                free(it.text);
                goto bad;
            }
            it.width = wd;
            it.given = true;
            it.right = sep == '%' ? !neg : dot;
        }
        if (!push(&r, it))
            goto bad;
    }
    if (r.n == 0)
        goto bad;
    *f = r;
    return 0;
bad:
    al_sl_fmt_fini(&r);
    return -1;
}

void
al_sl_put(al_buf_t *b, const al_sl_item_t *it, const char *v, bool plus)
{
    size_t len = strlen(v);
    size_t w = (size_t)it->width;
    if (w == 0) {
        al_buf_puts(b, v);
        return;
    }
    if (len > w) {
        if (plus && w > 0) {
            al_buf_printf(b, "%.*s+", (int)(w - 1), v);
        } else {
            al_buf_printf(b, "%.*s", (int)w, v);
        }
        return;
    }
    if (it->right)
        al_buf_printf(b, "%*s", (int)w, v);
    else
        al_buf_printf(b, "%-*s", (int)w, v);
}

/* s in single quotes for sh. */
static void
quoted(al_buf_t *b, const char *s, size_t n)
{
    al_buf_puts(b, "'");
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'')
            al_buf_puts(b, "'\\''");
        else
            al_buf_printf(b, "%c", s[i]);
    }
    al_buf_puts(b, "'");
}

int
al_sl_pattern(const char *pat, const char *name, const char *user,
              al_buf_t *out)
{
    if (pat[0] == '\0' || strpbrk(pat, "\n\r") != NULL)
        return -1;
    al_buf_t b;
    al_buf_init(&b);
    const char *p = pat;
    int rc = 0;
    while (*p != '\0' && rc == 0) {
        size_t lit = strcspn(p, "%");
        if (lit > 0)
            quoted(&b, p, lit);
        p += lit;
        if (*p != '%')
            break;
        p++;
        int w = 0;
        if (!width(&p, &w) || w > 64) {
            rc = -1;
            break;
        }
        switch (*p) {
        case 'j':
        case 'J':
            if (w > 0)
                al_buf_printf(&b, "\"$(printf %%0%dd \"$SLURM_JOB_ID\")\"", w);
            else
                al_buf_puts(&b, "\"$SLURM_JOB_ID\"");
            break;
        case 'A': /* the array's id; the job's own outside an array */
            al_buf_puts(&b, "\"${SLURM_ARRAY_JOB_ID:-$SLURM_JOB_ID}\"");
            break;
        case 'a': /* the element's index; Slurm's NO_VAL outside one */
            al_buf_puts(&b, "\"${SLURM_ARRAY_TASK_ID:-4294967294}\"");
            break;
        case 'x':
            quoted(&b, name, strlen(name));
            break;
        case 'u':
            quoted(&b, user, strlen(user));
            break;
        case 'N':
            al_buf_puts(&b, "\"$SLURMD_NODENAME\"");
            break;
        case 'n':
        case 't':
            al_buf_printf(&b, "%0*d", w, 0);
            break;
        case 's':
            al_buf_puts(&b, "batch");
            break;
        case '%':
            al_buf_puts(&b, "%");
            break;
        default:
            rc = -1; /* a '%' at the end, or a letter Slurm does not know */
            break;
        }
        if (*p != '\0')
            p++;
    }
    if (rc == 0)
        al_buf_puts(out, al_buf_cstr(&b));
    al_buf_fini(&b);
    return rc;
}

int
al_sl_signum(const char *s)
{
    static const struct {
        const char *name;
        int num;
    } sigs[] = {
        { "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT },
        { "ABRT", SIGABRT }, { "KILL", SIGKILL }, { "USR1", SIGUSR1 },
        { "USR2", SIGUSR2 }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
        { "CONT", SIGCONT }, { "STOP", SIGSTOP }, { "TSTP", SIGTSTP },
        { "PIPE", SIGPIPE },
    };
    if (s == NULL || *s == '\0')
        return -1;
    if (*s >= '0' && *s <= '9') {
        char *end;
        long n = strtol(s, &end, 10);
        return *end == '\0' && n > 0 && n < 65 ? (int)n : -1;
    }
    const char *n = strncasecmp(s, "SIG", 3) == 0 ? s + 3 : s;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        if (strcasecmp(n, sigs[i].name) == 0)
            return sigs[i].num;
    return -1;
}

bool
al_sl_signal_spec(const char *s, bool *batch, int *sig, long *when)
{
    long w = 60;
    bool b = false;
    const char *colon = strchr(s, ':');
    if (colon != NULL) {
        for (const char *p = s; p < colon; p++) {
            if (*p == 'B')
                b = true;
            else if (*p == 'R')
                w = -1;
            else
                return false;
        }
        s = colon + 1;
    }
    const char *at = strchr(s, '@');
    char name[32];
    size_t n = at != NULL ? (size_t)(at - s) : strlen(s);
    if (n >= sizeof name)
        return false;
    memcpy(name, s, n);
    name[n] = '\0';
    int g = al_sl_signum(name);
    if (at != NULL && w >= 0) {
        char *end;
        w = strtol(at + 1, &end, 10);
        if (end == at + 1 || *end != '\0' || w < 0 || w > 65535)
            return false;
    }
    if (g <= 0)
        return false;
    *batch = b;
    *sig = g;
    *when = w;
    return true;
}
