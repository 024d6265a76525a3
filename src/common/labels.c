/*
 * labels.c -- labels, constraints and pool names: parsed, checked and
 * written canonically (see labels.h).
 *
 * May call: libc and xmalloc.
 */
#include "labels.h"

#include <stdlib.h>
#include <string.h>

#include "xmalloc.h"

typedef struct item {
    char key[AL_LABEL_LEN + 1];
    char val[AL_LABEL_LEN + 1];
    bool has_val;
} item_t;

static bool
word_ok(const char *s, size_t n)
{
    if (n == 0 || n > AL_LABEL_LEN)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return true;
}

bool
al_pool_valid(const char *s)
{
    return s != NULL && word_ok(s, strlen(s));
}

static int
cmp_item(const void *a, const void *b)
{
    return strcmp(((const item_t *)a)->key, ((const item_t *)b)->key);
}

static int
fail(char **cause, char *msg)
{
    if (cause != NULL)
        *cause = msg;
    else
        free(msg);
    return -1;
}

int
al_labels_parse(const char *s, bool constraint, char **out, char **cause)
{
    if (s == NULL)
        s = "";
    item_t *items = al_xcalloc(AL_LABELS_MAX, sizeof *items);
    int n = 0;
    const char *what = constraint ? "constraint" : "label";
    for (const char *p = s; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t klen = eq != NULL ? (size_t)(eq - p) : len;
        size_t vlen = eq != NULL ? len - klen - 1 : 0;
        if (n == AL_LABELS_MAX) {
            free(items);
            return fail(cause,
                        al_xasprintf("more than %d %ss", AL_LABELS_MAX, what));
        }
        if (!word_ok(p, klen) || (eq != NULL && !word_ok(eq + 1, vlen)) ||
            (eq == NULL && !constraint)) {
            char *bad = al_xstrndup(p, len);
            char *msg = al_xasprintf(
                "bad %s '%s': want %s (letters, digits, '-', '_', '.', at "
                "most %d each)",
                what, bad, constraint ? "KEY or KEY=VALUE" : "KEY=VALUE",
                AL_LABEL_LEN);
            free(bad);
            free(items);
            return fail(cause, msg);
        }
        memcpy(items[n].key, p, klen);
        if (eq != NULL) {
            memcpy(items[n].val, eq + 1, vlen);
            items[n].has_val = true;
        }
        n++;
        if (end == NULL)
            break;
        p = end + 1;
        if (*p == '\0') {
            free(items);
            return fail(cause,
                        al_xasprintf("bad %s list: it ends with ','", what));
        }
    }
    if (n > 1)
        qsort(items, (size_t)n, sizeof *items, cmp_item);
    for (int i = 1; i < n; i++) {
        if (strcmp(items[i].key, items[i - 1].key) == 0) {
            char *msg =
                al_xasprintf("%s key '%s' given twice", what, items[i].key);
            free(items);
            return fail(cause, msg);
        }
    }
    size_t cap = (size_t)n * (2 * AL_LABEL_LEN + 2) + 1, off = 0;
    char *text = al_xmalloc(cap);
    text[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t kl = strlen(items[i].key), vl = strlen(items[i].val);
        if (i > 0)
            text[off++] = ',';
        memcpy(text + off, items[i].key, kl);
        off += kl;
        if (items[i].has_val) {
            text[off++] = '=';
            memcpy(text + off, items[i].val, vl);
            off += vl;
        }
        text[off] = '\0';
    }
    free(items);
    *out = text;
    return 0;
}

char *
al_labels_get(const char *labels, const char *key)
{
    size_t klen = strlen(key);
    for (const char *p = labels; p != NULL && *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
        if (len > klen && p[klen] == '=' && memcmp(p, key, klen) == 0)
            return al_xstrndup(p + klen + 1, len - klen - 1);
        p = end != NULL ? end + 1 : NULL;
    }
    return NULL;
}
