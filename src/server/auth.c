/*
 * auth.c -- bearer tokens.  A token reads "al_<id>_<secret>": the id (16 hex
 * digits) names the stored record, the secret (32 hex digits, 128 random
 * bits) is never stored -- only SHA-256(salt || secret) with a random
 * 16-byte salt, compared in constant time.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "server_int.h"
#include "xmalloc.h"

static const char *const role_names[] = {
    [ROLE_NONE] = "none",   [ROLE_USER] = "user",       [ROLE_ADMIN] = "admin",
    [ROLE_AGENT] = "agent", [ROLE_METRICS] = "metrics",
};

bool
al__auth_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
    return CRYPTO_memcmp(a, b, n) == 0;
}

const char *
al__role_name(int role)
{
    if (role < 0 || role > AL_ROLE_LAST)
        return "none";
    return role_names[role];
}

int
al__role_parse(const char *name)
{
    for (int r = ROLE_USER; r <= AL_ROLE_LAST; r++)
        if (strcmp(name, role_names[r]) == 0)
            return r;
    return ROLE_NONE;
}

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

void
al__auth_random(unsigned char *p, int n)
{
    if (RAND_bytes(p, n) != 1) {
        fprintf(stderr, "allot: no randomness for tokens\n");
        abort();
    }
}

void
al__auth_digest(const unsigned char salt[16], const char *secret,
                unsigned char out[32])
{
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    unsigned int len = 32;
    if (c == NULL || EVP_DigestInit_ex(c, EVP_sha256(), NULL) != 1 ||
        EVP_DigestUpdate(c, salt, 16) != 1 ||
        EVP_DigestUpdate(c, secret, strlen(secret)) != 1 ||
        EVP_DigestFinal_ex(c, out, &len) != 1) {
        fprintf(stderr, "allot: SHA-256 failed\n");
        abort();
    }
    EVP_MD_CTX_free(c);
}

char *
al__token_create(const char *user, int role, al__token_t *t)
{
    unsigned char id[8], secret[16];
    char sec[33];
    al__auth_random(id, sizeof id);
    al__auth_random(secret, sizeof secret);
    memset(t, 0, sizeof *t);
    hex(id, sizeof id, t->id);
    hex(secret, sizeof secret, sec);
    al__auth_random(t->salt, sizeof t->salt);
    al__auth_digest(t->salt, sec, t->hash);
    t->user = al_xstrdup(user);
    t->role = role;
    t->created_ms = al_clock_ms();
    return al_xasprintf("al_%s_%s", t->id, sec);
}

const al__token_t *
al__token_match(const al__token_t *tokens, int n, const char *text)
{
    if (text == NULL || strncmp(text, "al_", 3) != 0 || strlen(text) != 52 ||
        text[19] != '_')
        return NULL;
    char id[17];
    memcpy(id, text + 3, 16);
    id[16] = '\0';
    for (int i = 0; i < n; i++) {
        const al__token_t *t = &tokens[i];
        if (strcmp(t->id, id) != 0)
            continue;
        unsigned char h[32];
        al__auth_digest(t->salt, text + 20, h);
        return CRYPTO_memcmp(h, t->hash, sizeof h) == 0 ? t : NULL;
    }
    return NULL;
}

const al__token_t *
al__token_check(const al_ctl_t *ctl, const char *text)
{
    return al__token_match(ctl->tokens, ctl->ntokens, text);
}
