/* json.c -- jansson helpers. */
#include "json.h"

#include <stdlib.h>

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
