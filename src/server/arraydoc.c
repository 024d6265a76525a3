/*
 * arraydoc.c -- a job array's own members: "array" (Slurm's spec,
 * "0-999%50") and "sweep" (axes of values whose every combination is one
 * element) of a submission body, checked; and the parent's stored form
 * {"spec", "sweep"}, written and read back.  What the elements share is
 * the parent job itself (jobbody.c, doc.c).
 *
 * May call: common (the spec and sweep parsers, JSON) and doc.c's inline
 * al__fail(); nothing that reads or changes the controller's state.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "json.h"
#include "server_int.h"
#include "xmalloc.h"

void
al__array_free(al__array_t *a)
{
    if (a == NULL)
        return;
    free(a->spec);
    al_array_spec_fini(&a->as);
    json_decref(a->sweep);
    free(a);
}

/* Checks sweep (the body's member) and the placeholders of command; the
 * number of combinations in *n. */
static int
check_sweep(const json_t *sweep, const json_t *command, int64_t *n,
            char **cause)
{
    size_t na = json_array_size(sweep);
    if (!json_is_array(sweep) || na == 0 || na > AL_SWEEP_MAX_AXES)
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("sweep must be an array of 1..%d "
                                     "{\"name\", \"values\"} objects",
                                     AL_SWEEP_MAX_AXES));
    const char *names[AL_SWEEP_MAX_AXES] = { NULL };
    int64_t total = 1;
    for (size_t i = 0; i < na; i++) {
        const json_t *ax = json_array_get(sweep, i);
        const char *name = al_json_str(ax, "name", NULL);
        const json_t *vals = json_object_get(ax, "values");
        size_t nv = json_array_size(vals);
        bool ok = name != NULL && nv > 0 && nv <= AL_ARRAY_MAX_PARTS &&
                  json_object_size(ax) == 2;
        /* The name as the CLI's parser takes it: NAME=V. */
        char *probe = ok ? al_xasprintf("%s=v", name) : NULL;
        al_sweep_axis_t axis;
        ok = ok && al_sweep_axis_parse(probe, &axis, NULL) == 0;
        if (ok)
            al_sweep_axis_fini(&axis);
        free(probe);
        for (size_t k = 0; ok && k < nv; k++)
            ok = json_is_string(json_array_get(vals, k)) &&
                 json_string_length(json_array_get(vals, k)) > 0;
        for (size_t k = 0; ok && k < i; k++)
            if (strcmp(names[k], name) != 0 && strcasecmp(names[k], name) == 0)
                /* Both would be the same ALLOT_SWEEP_NAME, one lost. */
                return al__fail(cause, AL_EINVAL,
                                al_xasprintf("sweep names %s and %s differ "
                                             "only in case: both would be "
                                             "the same ALLOT_SWEEP_ variable "
                                             "in the environment",
                                             names[k], name));
            else
                ok = strcmp(names[k], name) != 0;
        if (!ok)
            return al__fail(cause, AL_EINVAL,
                            al_xasprintf("sweep entry %zu must be {\"name\": "
                                         "NAME, \"values\": [1..%d non-empty "
                                         "strings]} with a NAME of letters, "
                                         "digits and _ used once",
                                         i, AL_ARRAY_MAX_PARTS));
        names[i] = name;
        total *= (int64_t)nv;
        if (total > AL_ARRAY_MAX_ELEMENTS)
            return al__fail(cause, AL_EINVAL,
                            al_xasprintf("the sweep has more than %d "
                                         "combinations",
                                         AL_ARRAY_MAX_ELEMENTS));
    }
    for (size_t i = 0; i < json_array_size(command); i++) {
        char bad[64];
        const char *w = json_string_value(json_array_get(command, i));
        if (w != NULL && al_sweep_unknown(w, names, (int)na, bad, sizeof bad))
            return al__fail(cause, AL_EINVAL,
                            al_xasprintf("the command's placeholder %s names "
                                         "no sweep axis",
                                         bad));
    }
    *n = total;
    return 0;
}

int
al__array_from_body(const json_t *b, const json_t *command, al__array_t **out,
                    char **cause)
{
    const json_t *spec = json_object_get(b, "array");
    const json_t *sweep = json_object_get(b, "sweep");
    if (spec != NULL && json_is_null(spec))
        spec = NULL;
    if (sweep != NULL && json_is_null(sweep))
        sweep = NULL;
    if (spec == NULL && sweep == NULL) {
        *out = NULL;
        return 0;
    }
    if (spec != NULL && !json_is_string(spec))
        return al__fail(cause, AL_EINVAL,
                        al_xstrdup("array must be a string such as "
                                   "\"0-99%10\""));
    int64_t combos = 0;
    int rc;
    if (sweep != NULL &&
        (rc = check_sweep(sweep, command, &combos, cause)) != 0)
        return rc;
    char *text = spec != NULL ? al_xstrdup(json_string_value(spec))
                              : al_xasprintf("0-%lld", (long long)combos - 1);
    al_array_spec_t as;
    char *why = NULL;
    if (al_array_spec_parse(text, &as, &why) != 0) {
        free(text);
        return al__fail(cause, AL_EINVAL, why);
    }
    if (sweep != NULL && as.count != combos) {
        int64_t n = as.count;
        al_array_spec_fini(&as);
        free(text);
        return al__fail(cause, AL_EINVAL,
                        al_xasprintf("the array has %lld elements but the "
                                     "sweep %lld combinations",
                                     (long long)n, (long long)combos));
    }
    al__array_t *a = al_xcalloc(1, sizeof *a);
    a->spec = text;
    a->as = as;
    a->sweep = sweep != NULL ? json_deep_copy(sweep) : NULL;
    *out = a;
    return 0;
}

json_t *
al__array_doc(const al__array_t *a)
{
    json_t *o = json_pack("{s:s}", "spec", a->spec);
    if (a->sweep != NULL)
        json_object_set(o, "sweep", a->sweep);
    return o;
}

al__array_t *
al__array_from_doc(const json_t *o)
{
    /* The stored form is a body's members: read it as one. */
    json_t *spec = json_object_get(o, "spec");
    if (!json_is_string(spec))
        return NULL;
    json_t *b = json_pack("{s:O}", "array", spec);
    const json_t *sweep = json_object_get(o, "sweep");
    if (sweep != NULL)
        json_object_set(b, "sweep", (json_t *)sweep);
    al__array_t *a = NULL;
    if (al__array_from_body(b, NULL, &a, NULL) != 0)
        a = NULL;
    json_decref(b);
    return a;
}
