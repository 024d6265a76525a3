/*
 * arrayspec.h -- a job array's spec in Slurm's syntax ("0-999%50",
 * "0-15:4", "1,3,7", "1-8:2,20") and a sweep's axes ("lr=1e-3,1e-4"), read
 * and checked the same way by the CLI (before it sends them) and by the
 * controller (which must refuse them too).
 *
 * Owns: the parsers, the mapping between an element's position (0 ..
 * count-1) and its index, and the placeholders "{name}" of a sweep.
 * Calls: libc and xmalloc only.
 */
#ifndef AL_ARRAYSPEC_H
#define AL_ARRAYSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The most elements one array may have, and the largest index. */
#define AL_ARRAY_MAX_ELEMENTS 1000000
#define AL_ARRAY_MAX_INDEX 999999999
/* The most comma-separated parts of a spec, and of a sweep's values. */
#define AL_ARRAY_MAX_PARTS 1024
/* The most axes of a sweep; the longest axis name. */
#define AL_SWEEP_MAX_AXES 16
#define AL_SWEEP_MAX_NAME 32

/* lo, lo+step, ... up to hi (hi is the last one taken). */
typedef struct al_array_range {
    int64_t lo, hi, step;
    int64_t first; /* position of lo among all the elements */
} al_array_range_t;

typedef struct al_array_spec {
    al_array_range_t *r; /* nr ranges, increasing and apart */
    int nr;
    int64_t count; /* elements */
    int64_t limit; /* at most this many running ("%N"); 0: no limit */
    int64_t min, max;
    int64_t step; /* the step of a spec of one range, else 1 (Slurm's) */
} al_array_spec_t;

/*
 * Reads spec text s: parts "N", "A-B" or "A-B:S" separated by commas, in
 * increasing order without overlap, then optionally "%N".  Returns 0 and
 * fills *out (release with al_array_spec_fini), or -1 with the reason in
 * *cause (malloc()ed; cause may be NULL) and *out untouched.
 */
int al_array_spec_parse(const char *s, al_array_spec_t *out, char **cause);
void al_array_spec_fini(al_array_spec_t *a);
/* The index of the element at position k (0 <= k < count). */
int64_t al_array_spec_index(const al_array_spec_t *a, int64_t k);
/* The position of index i, or -1 when i is not an element. */
int64_t al_array_spec_pos(const al_array_spec_t *a, int64_t i);

/* One axis of a sweep: a name and its values (pointers into `text`). */
typedef struct al_sweep_axis {
    char name[AL_SWEEP_MAX_NAME + 1];
    char *text; /* owns the values' storage */
    const char **values;
    int nvalues;
} al_sweep_axis_t;

/*
 * Reads "name=v1,v2,..." (name: letters, digits and '_', starting with a
 * letter; values non-empty).  Returns 0 and fills *out (release with
 * al_sweep_axis_fini), or -1 with the reason in *cause.
 */
int al_sweep_axis_parse(const char *s, al_sweep_axis_t *out, char **cause);
void al_sweep_axis_fini(al_sweep_axis_t *ax);

/*
 * The first placeholder "{name}" in word w whose name is none of the n
 * names, copied into bad (size len); false when every placeholder is known.
 * "${...}" is the shell's and not a placeholder.
 */
bool al_sweep_unknown(const char *w, const char *const *names, int n, char *bad,
                      size_t len);
/* w with every "{name}" of names[i] replaced by values[i] (malloc()ed). */
char *al_sweep_subst(const char *w, const char *const *names,
                     const char *const *values, int n);

#endif /* AL_ARRAYSPEC_H */
