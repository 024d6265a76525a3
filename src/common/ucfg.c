/* ucfg.c -- the user's config file and data directory. */
#include "ucfg.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "core/error.h"
#include "fs.h"
#include "xmalloc.h"

static char *
xdg_path(const char *env, const char *fallback, const char *leaf)
{
    const char *base = getenv(env);
    if (base != NULL && base[0] == '/')
        return al_xasprintf("%s/allot%s", base, leaf);
    const char *home = getenv("HOME");
    return al_xasprintf("%s/%s/allot%s", home ? home : "/tmp", fallback, leaf);
}

char *
al_ucfg_path(void)
{
    return xdg_path("XDG_CONFIG_HOME", ".config", "/config");
}

char *
al_ucfg_data_dir(void)
{
    return xdg_path("XDG_DATA_HOME", ".local/share", "");
}

/* If line is "key = value", returns value's start and its length in *vlen. */
static const char *
match_key(const char *line, size_t len, const char *key, size_t *vlen)
{
    size_t klen = strlen(key);
    while (len > 0 && (*line == ' ' || *line == '\t'))
        line++, len--;
    if (len < klen || strncmp(line, key, klen) != 0)
        return NULL;
    const char *p = line + klen, *end = line + len;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if (p == end || *p != '=')
        return NULL;
    p++;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    *vlen = (size_t)(end - p);
    return p;
}

char *
al_ucfg_lookup(const char *text, size_t n, const char *key)
{
    n = strnlen(text, n); /* the file ends at a NUL, as it always did */
    char *val = NULL;
    for (const char *l = text, *end = text + n; l < end;) {
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        size_t len = nl != NULL ? (size_t)(nl - l) : (size_t)(end - l);
        size_t vlen;
        const char *v = l[0] == '#' ? NULL : match_key(l, len, key, &vlen);
        if (v != NULL) {
            free(val);
            val = al_xstrndup(v, vlen);
        }
        l += len + (nl != NULL);
    }
    return val;
}

int
al_ucfg_bad_line(const char *text, size_t n, const char *const *keys,
                 size_t nkeys)
{
    n = strnlen(text, n);
    int lineno = 0;
    for (const char *l = text, *end = text + n; l < end;) {
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        size_t len = nl != NULL ? (size_t)(nl - l) : (size_t)(end - l), vlen;
        lineno++;
        size_t skip = 0;
        while (skip < len &&
               (l[skip] == ' ' || l[skip] == '\t' || l[skip] == '\r'))
            skip++;
        bool ok = skip == len || l[skip] == '#';
        for (size_t k = 0; !ok && k < nkeys; k++)
            ok = match_key(l, len, keys[k], &vlen) != NULL;
        if (!ok)
            return lineno;
        l += len + (nl != NULL);
    }
    return 0;
}

void
al_ucfg_rewrite(const char *text, size_t n, const char *key, const char *value,
                al_buf_t *out)
{
    n = strnlen(text, n);
    bool found = false;
    for (const char *l = text, *end = text + n; l < end;) {
        const char *nl = memchr(l, '\n', (size_t)(end - l));
        size_t len = nl != NULL ? (size_t)(nl - l) : (size_t)(end - l), vlen;
        if (l[0] != '#' && match_key(l, len, key, &vlen) != NULL) {
            if (!found)
                al_buf_printf(out, "%s = %s\n", key, value);
            found = true;
        } else {
            al_buf_append(out, l, len);
            al_buf_putc(out, '\n');
        }
        l += len + (nl != NULL);
    }
    if (!found)
        al_buf_printf(out, "%s = %s\n", key, value);
}

char *
al_ucfg_get(const char *path, const char *key)
{
    char *data;
    size_t n;
    if (al_fs_read_file(path, &data, &n) != 0)
        return NULL;
    char *val = al_ucfg_lookup(data, n, key);
    free(data);
    return val;
}

int
al_ucfg_set(const char *path, const char *key, const char *value)
{
    char *data = NULL;
    size_t n = 0;
    al_buf_t out = AL_BUF_INIT;
    if (al_fs_read_file(path, &data, &n) == 0) {
        al_ucfg_rewrite(data, n, key, value, &out);
        free(data);
    } else {
        al_ucfg_rewrite("", 0, key, value, &out);
    }
    char *dir = al_xstrdup(path);
    char *slash = strrchr(dir, '/');
    int rc = 0;
    if (slash != NULL && slash != dir) {
        *slash = '\0';
        rc = al_fs_mkdir_p(dir, 0700);
    }
    free(dir);
    if (rc == 0)
        rc = al_fs_write_file(path, al_buf_cstr(&out), out.len, 0600,
                              AL_FS_SYNC);
    al_buf_fini(&out);
    return rc;
}
