/*
 * b64.h -- base64 (RFC 4648, with padding), for binary data in JSON
 * strings (log chunks).
 */
#ifndef AL_B64_H
#define AL_B64_H

#include <stddef.h>

/* Base64 of n bytes; the caller frees the result. */
char *al_b64_encode(const void *data, size_t n);
/* Decodes a base64 string (a multiple of 4 characters of the standard
 * alphabet, '=' only as the padding of the last group) into a malloc()ed
 * buffer and its length; returns 0 or AL_EPARSE (nothing stored). */
int al_b64_decode(const char *s, unsigned char **out, size_t *outlen);

#endif /* AL_B64_H */
