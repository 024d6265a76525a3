/*
 * json.h -- small helpers over jansson for reading request and response
 * objects with defaults, and for encoding binary data (log chunks) as
 * base64 strings.
 */
#ifndef AL_JSON_H
#define AL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Member `key` of obj as an integer, or def when absent or not an integer. */
int64_t al_json_int(const json_t *obj, const char *key, int64_t def);
/* Member `key` as a string (owned by obj), or def. */
const char *al_json_str(const json_t *obj, const char *key, const char *def);
/* Member `key` as a boolean, or def. */
bool al_json_bool(const json_t *obj, const char *key, bool def);
/* Member `key` as a number (integer or real), or def. */
double al_json_num(const json_t *obj, const char *key, double def);

/* Parses len bytes; NULL on error, with a malloc()ed message in *cause when
 * cause is not NULL. */
json_t *al_json_parse(const char *data, size_t len, char **cause);
/* Compact encoding; the caller frees the result. */
char *al_json_dump(const json_t *v);

/* Base64 of n bytes; the caller frees the result. */
char *al_b64_encode(const void *data, size_t n);
/* Decodes a base64 string into a malloc()ed buffer and its length; returns 0
 * or AL_EPARSE (nothing stored). */
int al_b64_decode(const char *s, unsigned char **out, size_t *outlen);

#endif /* AL_JSON_H */
