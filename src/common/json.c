/* json.c -- jansson helpers and base64 (through OpenSSL's EVP coder). */
#include "json.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "xmalloc.h"

int64_t
al_json_int(const json_t *obj, const char *key, int64_t def)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

const char *
al_json_str(const json_t *obj, const char *key, const char *def)
{
    json_t *v = json_object_get(obj, key);
    return json_is_string(v) ? json_string_value(v) : def;
}

bool
al_json_bool(const json_t *obj, const char *key, bool def)
{
    json_t *v = json_object_get(obj, key);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

double
al_json_num(const json_t *obj, const char *key, double def)
{
    json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : def;
}

json_t *
al_json_parse(const char *data, size_t len, char **cause)
{
    json_error_t err;
    json_t *v = json_loadb(data, len, JSON_REJECT_DUPLICATES, &err);
    if (v == NULL && cause != NULL)
        *cause = al_xasprintf("invalid JSON at line %d column %d: %s", err.line,
                              err.column, err.text);
    return v;
}

char *
al_json_dump(const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s == NULL)
        abort(); /* jansson fails only on allocation */
    return s;
}

char *
al_b64_encode(const void *data, size_t n)
{
    char *out = al_xmalloc(4 * ((n + 2) / 3) + 1);
    EVP_EncodeBlock((unsigned char *)out, data, (int)n);
    return out;
}

int
al_b64_decode(const char *s, unsigned char **out, size_t *outlen)
{
    size_t len = strlen(s);
    if (len % 4 != 0)
        return AL_EPARSE;
    unsigned char *buf = al_xmalloc(len / 4 * 3 + 1);
    int n = EVP_DecodeBlock(buf, (const unsigned char *)s, (int)len);
    if (n < 0) {
        free(buf);
        return AL_EPARSE;
    }
    /* EVP_DecodeBlock counts the padding as data; take it back off. */
    if (len >= 1 && s[len - 1] == '=')
        n--;
    if (len >= 2 && s[len - 2] == '=')
        n--;
    *out = buf;
    *outlen = (size_t)n;
    return 0;
}
