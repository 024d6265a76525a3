/* json.c -- jansson helpers. */
#include "json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

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

/* A string or key as jansson's dump writes it without JSON_ENSURE_ASCII
 * or JSON_ESCAPE_SLASH: quote, backslash and control characters escaped,
 * the rest (valid UTF-8, as jansson keeps it) as it is. */
void
al_json_put_str(al_buf_t *b, const char *s, size_t len)
{
    al_buf_putc(b, '"');
    const char *run = s, *end = s + len;
    for (const char *p = s; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        al_buf_append(b, run, (size_t)(p - run));
        run = p + 1;
        char esc[8];
        switch (c) {
        case '"':
            al_buf_append(b, "\\\"", 2);
            break;
        case '\\':
            al_buf_append(b, "\\\\", 2);
            break;
        case '\b':
            al_buf_append(b, "\\b", 2);
            break;
        case '\f':
            al_buf_append(b, "\\f", 2);
            break;
        case '\n':
            al_buf_append(b, "\\n", 2);
            break;
        case '\r':
            al_buf_append(b, "\\r", 2);
            break;
        case '\t':
            al_buf_append(b, "\\t", 2);
            break;
        default:
            snprintf(esc, sizeof esc, "\\u%04X", c);
            al_buf_append(b, esc, 6);
        }
    }
    al_buf_append(b, run, (size_t)(end - run));
    al_buf_putc(b, '"');
}

bool
al_json_utf8_ok(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    while (p < end) {
        unsigned c = *p++;
        if (c < 0x80)
            continue;
        int more;
        unsigned min;
        if (c >= 0xC2 && c <= 0xDF) {
            more = 1;
            min = 0x80;
            c &= 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            more = 2;
            min = 0x800;
            c &= 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            more = 3;
            min = 0x10000;
            c &= 0x07;
        } else {
            return false; /* a continuation byte first, 0xC0, 0xC1, 0xF5.. */
        }
        if (end - p < more)
            return false;
        for (int k = 0; k < more; k++) {
            if ((p[k] & 0xC0) != 0x80)
                return false;
            c = (c << 6) | (p[k] & 0x3F);
        }
        p += more;
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return false;
    }
    return true;
}

void
al_json_put_int(al_buf_t *b, long long x)
{
    /* "%lld" by hand: printf's machinery cost as much as the rest. */
    unsigned long long u =
        x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
    char digits[24];
    size_t at = sizeof digits;
    do {
        digits[--at] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (x < 0)
        digits[--at] = '-';
    al_buf_append(b, digits + at, sizeof digits - at);
}

void
al_json_set_members(json_t *o, const char *text, size_t len)
{
    json_object_setn_new_nocheck(o, AL_JSON_MEMBERS, sizeof AL_JSON_MEMBERS - 1,
                                 json_stringn_nocheck(text, len));
}

bool
al_json_put_members(al_buf_t *b, const char *t, size_t n, bool *first)
{
    if (n < 2 || t[0] != '{' || t[n - 1] != '}')
        return false;
    if (n == 2)
        return true;
    if (!*first)
        al_buf_putc(b, ',');
    *first = false;
    al_buf_append(b, t + 1, n - 2);
    return true;
}

/* v into b as json_dumps(v, flags) would write it, flags being
 * JSON_COMPACT | JSON_ENCODE_ANY and perhaps a JSON_REAL_PRECISION; false
 * where jansson would fail (nesting too deep). */
static bool
dump_value(al_buf_t *b, const json_t *v, size_t flags, int depth)
{
    if (depth > JSON_PARSER_MAX_DEPTH)
        return false;
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *x;
        bool first = true;
        size_t klen;
        al_buf_putc(b, '{');
        /* Insertion order, as jansson's dump without JSON_SORT_KEYS. */
        json_object_keylen_foreach((json_t *)v, key, klen, x)
        {
            if (klen == sizeof AL_JSON_MEMBERS - 1 &&
                memcmp(key, AL_JSON_MEMBERS, klen) == 0) {
                const char *t = json_string_value(x);
                if (t == NULL ||
                    !al_json_put_members(b, t, json_string_length(x), &first))
                    return false;
                continue;
            }
            if (!first)
                al_buf_putc(b, ',');
            first = false;
            al_json_put_str(b, key, klen);
            al_buf_putc(b, ':');
            if (!dump_value(b, x, flags, depth + 1))
                return false;
        }
        al_buf_putc(b, '}');
        return true;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        al_buf_putc(b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i > 0)
                al_buf_putc(b, ',');
            if (!dump_value(b, json_array_get(v, i), flags, depth + 1))
                return false;
        }
        al_buf_putc(b, ']');
        return true;
    }
    case JSON_STRING:
        al_json_put_str(b, json_string_value(v), json_string_length(v));
        return true;
    case JSON_INTEGER:
        al_json_put_int(b, (long long)json_integer_value(v));
        return true;
    case JSON_REAL: {
        /* Rare: jansson's own formatting of the number, for its bytes. */
        char *t = json_dumps(v, flags);
        if (t == NULL)
            return false;
        al_buf_puts(b, t);
        free(t);
        return true;
    }
    case JSON_TRUE:
        al_buf_append(b, "true", 4);
        return true;
    case JSON_FALSE:
        al_buf_append(b, "false", 5);
        return true;
    default:
        al_buf_append(b, "null", 4);
        return true;
    }
}

bool
al_json_put_value(al_buf_t *b, const json_t *v, size_t flags)
{
    return dump_value(b, v, flags, 0);
}

char *
al_json_dump_flags(const json_t *v, size_t flags)
{
    /* jansson's json_dumps goes through a callback per token and a
     * growing buffer: with the documents a controller writes for every
     * job (its store row, its API answer, an agent's sync) that was about
     * a tenth of the controller's CPU.  This writes the same bytes into
     * one buffer (tests/unit/test_common.c compares them), and leaves any
     * other flags to jansson. */
    if ((flags & ~(size_t)(JSON_COMPACT | JSON_ENCODE_ANY |
                           JSON_REAL_PRECISION(31))) == 0 &&
        (flags & JSON_COMPACT) && (flags & JSON_ENCODE_ANY) && v != NULL) {
        al_buf_t b;
        al_buf_init(&b);
        al_buf_reserve(&b, 256);
        if (dump_value(&b, v, flags, 0)) {
            /* A copy of its size, as jansson's is: a caller may keep
             * the text, and a buffer cut down in place would leave the
             * heap in pieces between long-lived blocks. */
            char *t = al_xmalloc(b.len + 1);
            memcpy(t, b.data, b.len + 1);
            al_buf_fini(&b);
            return t;
        }
        al_buf_fini(&b);
    }
    char *s = json_dumps(v, flags);
    if (s == NULL)
        abort(); /* jansson fails only on allocation */
    return s;
}

char *
al_json_dump(const json_t *v)
{
    return al_json_dump_flags(v, JSON_COMPACT | JSON_ENCODE_ANY);
}
