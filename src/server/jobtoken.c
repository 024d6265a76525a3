/*
 * jobtoken.c -- a running job's own credential.  Each run of a job gets a
 * token "alj_<job id>_<32 hex digits>" that the agent puts in its tasks'
 * environment (ALLOT_JOB_TOKEN), so that srun inside a batch script can
 * record the job's steps without the user's own config.  The controller
 * keeps only a salted SHA-256 of the secret, stored with the job (the
 * internal document, never a shown one); its text lives in memory for the
 * agents' start messages.  The token is good only while that run runs (a
 * requeue or a restart count makes a new one; an ended job's is refused),
 * and only for POST /v1/jobs/<its id>/steps and GET /v1/jobs/<its id>:
 * every other call is 403 (ctl.c checks a request's token here before the
 * token table).  Nothing logs it.
 *
 * May call: auth.c (randomness, digests), common.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "json.h"
#include "xmalloc.h"

#define PREFIX "alj_"

typedef struct al__jobtok {
    int run; /* the restart count it was made for */
    unsigned char salt[16], hash[32];
    char *text; /* memory only: NULL after a load */
} al__jobtok_t;

static void
hex(const unsigned char *in, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[in[i] >> 4];
        out[2 * i + 1] = digits[in[i] & 15];
    }
    out[2 * n] = '\0';
}

/* Reads 2n hex digits of s into out: 0, or -1 when s is not that. */
static int
unhex(const char *s, unsigned char *out, size_t n)
{
    if (s == NULL || strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        const char *d = strchr("0123456789abcdef", s[i]);
        if (d == NULL || s[i] == '\0')
            return -1;
        int v = (int)(d - "0123456789abcdef");
        if (i % 2 == 0)
            out[i / 2] = (unsigned char)(v << 4);
        else
            out[i / 2] |= (unsigned char)v;
    }
    return 0;
}

void
al__jobtok_free(al__job_t *j)
{
    if (j->jtok != NULL && j->jtok->text != NULL) {
        /* Not left in freed memory. */
        memset(j->jtok->text, 0, strlen(j->jtok->text));
        free(j->jtok->text);
    }
    free(j->jtok);
    j->jtok = NULL;
}

const char *
al__jobtok_text(al__job_t *j, bool *made)
{
    *made = false;
    if (j->jtok != NULL && j->jtok->run == j->restart_count)
        return j->jtok->text;
    al__jobtok_free(j);
    al__jobtok_t *t = al_xcalloc(1, sizeof *t);
    unsigned char secret[16];
    char sec[33];
    al__auth_random(secret, sizeof secret);
    hex(secret, sizeof secret, sec);
    al__auth_random(t->salt, sizeof t->salt);
    al__auth_digest(t->salt, sec, t->hash);
    t->run = j->restart_count;
    t->text = al_xasprintf(PREFIX "%llu_%s", (unsigned long long)j->id, sec);
    memset(sec, 0, sizeof sec);
    j->jtok = t;
    *made = true;
    return t->text;
}

void
al__jobtok_doc(const al__job_t *j, json_t *o)
{
    if (j->jtok == NULL)
        return;
    char salt[33], hash[65];
    hex(j->jtok->salt, sizeof j->jtok->salt, salt);
    hex(j->jtok->hash, sizeof j->jtok->hash, hash);
    json_object_set_new(o, "job_token",
                        json_pack("{s:i, s:s, s:s}", "run", j->jtok->run,
                                  "salt", salt, "hash", hash));
}

void
al__jobtok_read(const json_t *o, al__job_t *j)
{
    const json_t *t = json_object_get(o, "job_token");
    al__jobtok_t k = { 0 };
    if (!json_is_object(t) ||
        unhex(al_json_str(t, "salt", NULL), k.salt, sizeof k.salt) != 0 ||
        unhex(al_json_str(t, "hash", NULL), k.hash, sizeof k.hash) != 0)
        return;
    k.run = (int)al_json_int(t, "run", -1);
    al__jobtok_free(j);
    j->jtok = al_xcalloc(1, sizeof *j->jtok);
    *j->jtok = k;
}

uint64_t
al__jobtok_job(const char *text)
{
    if (text == NULL || strncmp(text, PREFIX, strlen(PREFIX)) != 0)
        return 0;
    const char *p = text + strlen(PREFIX);
    size_t n = strspn(p, "0123456789");
    if (n == 0 || n > 19 || p[n] != '_' || strlen(p + n + 1) != 32)
        return UINT64_MAX; /* a job's token, malformed */
    return strtoull(p, NULL, 10);
}

bool
al__jobtok_valid(const al__job_t *j, const char *text)
{
    if (j == NULL || j->jtok == NULL || j->state != JS_RUNNING ||
        j->jtok->run != j->restart_count || al__jobtok_job(text) != j->id)
        return false;
    const char *secret = strchr(text + strlen(PREFIX), '_') + 1;
    unsigned char h[32];
    al__auth_digest(j->jtok->salt, secret, h);
    return al__auth_equal(h, j->jtok->hash, sizeof h);
}
