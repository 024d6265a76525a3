/*
 * b64.c -- base64, encoder and strict decoder, in a few lines of C rather
 * than OpenSSL's: the allot command decodes nothing heavier, and loading
 * libcrypto cost it more than half a millisecond at every start.
 *
 * May call: libc, xmalloc.c.
 */
#include "b64.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "xmalloc.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
al_b64_encode(const void *data, size_t n)
{
    const unsigned char *p = data;
    char *out = al_xmalloc(4 * ((n + 2) / 3) + 1), *o = out;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        *o++ = alphabet[v >> 18];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
    *o = '\0';
    return out;
}

/* The value of one character of the alphabet, or -1. */
static int
value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int
al_b64_decode(const char *s, unsigned char **out, size_t *outlen)
{
    size_t len = strlen(s);
    if (len % 4 != 0)
        return AL_EPARSE;
    size_t pad = 0;
    if (len >= 4 && s[len - 1] == '=')
        pad = s[len - 2] == '=' ? 2 : 1;
    unsigned char *buf = al_xmalloc(len / 4 * 3 + 1), *o = buf;
    for (size_t i = 0; i < len; i += 4) {
        /* The padding counts as zero bits; only the last group has it. */
        bool last = i + 4 == len;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; k++) {
            int d = last && k >= 4 - pad ? 0 : value((unsigned char)s[i + k]);
            if (d < 0) {
                free(buf);
                return AL_EPARSE;
            }
            v = v << 6 | (uint32_t)d;
        }
        *o++ = (unsigned char)(v >> 16);
        *o++ = (unsigned char)(v >> 8);
        *o++ = (unsigned char)v;
    }
    *out = buf;
    *outlen = len / 4 * 3 - pad;
    return 0;
}
