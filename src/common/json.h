/*
 * json.h -- small helpers over jansson for reading request and response
 * objects with defaults; binary data (log chunks) goes into JSON strings
 * as base64 (b64.h, included here for the callers of both).
 */
#ifndef AL_JSON_H
#define AL_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "b64.h"
#include "buf.h"

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
/* json_dumps(v, flags), never NULL (it aborts when out of memory); written
 * by allot itself, byte for byte the same, for JSON_COMPACT |
 * JSON_ENCODE_ANY with or without a JSON_REAL_PRECISION.  The caller
 * frees the result. */
char *al_json_dump_flags(const json_t *v, size_t flags);
/* The key (with its leading NUL: jansson's parser never makes one, so no
 * input can) of a member whose value, a string holding an object's
 * compact text, al_json_dump_flags writes as that object's members in
 * place: a document that embeds a stored object without parsing it and
 * dumping it again.  Set it with al_json_set_members(); only the compact
 * flags above honour it (other flags, and text that is not an object's,
 * leave it to jansson, which writes it as a member of that odd name). */
#define AL_JSON_MEMBERS "\0members"

/* Sets o's AL_JSON_MEMBERS to text[0..len), an object's compact text that
 * allot wrote itself (valid UTF-8: not checked again). */
void al_json_set_members(json_t *o, const char *text, size_t len);

/* For writers of JSON text without a tree (the controller's job document):
 * a string as al_json_dump writes it (quoted, escaped like jansson), an
 * integer, and any value as al_json_dump_flags(v, flags) would (flags as
 * there: JSON_COMPACT | JSON_ENCODE_ANY, perhaps a JSON_REAL_PRECISION;
 * false where jansson's dump would fail: nesting too deep). */
void al_json_put_str(al_buf_t *b, const char *s, size_t len);
/* Whether s[0..len) is UTF-8 as jansson takes it (json_string() gives NULL
 * otherwise): no overlong form, surrogate or code point past U+10FFFF. */
bool al_json_utf8_ok(const char *s, size_t len);
void al_json_put_int(al_buf_t *b, long long x);
bool al_json_put_value(al_buf_t *b, const json_t *v, size_t flags);
/* The members of an object's compact text t[0..n) ("{...}") written in
 * place, as the dump writes AL_JSON_MEMBERS: nothing for "{}", else a
 * comma first unless *first, which it then clears; false when t is not an
 * object's text. */
bool al_json_put_members(al_buf_t *b, const char *t, size_t n, bool *first);

#endif /* AL_JSON_H */
