/*
 * depspec.h -- a job's dependencies in Slurm's syntax,
 * "afterok:5:6,afterany:7,aftercorr:9,singleton": read and checked the
 * same way by the CLI (before it sends them) and by the controller.
 *
 * Owns: the parser and the canonical text.  Calls: libc and xmalloc only.
 */
#ifndef AL_DEPSPEC_H
#define AL_DEPSPEC_H

#include <stdint.h>

typedef enum al_dep_kind {
    AL_DEP_AFTEROK = 0, /* after the job completed successfully */
    AL_DEP_AFTERANY,    /* after it ended, however */
    AL_DEP_AFTERNOTOK,  /* after it failed or was cancelled */
    AL_DEP_AFTERCORR,   /* an array's element after the element of the same
                           index of another array completed successfully */
    AL_DEP_SINGLETON,   /* after every earlier job of the same user and
                           name ended */
    AL_DEP_NKINDS
} al_dep_kind_t;

extern const char *const al_dep_kind_names[AL_DEP_NKINDS];

typedef struct al_depspec {
    al_dep_kind_t kind;
    uint64_t job; /* 0 for singleton */
} al_depspec_t;

/* The most dependencies of one job. */
#define AL_DEP_MAX 64

/*
 * Reads s: items separated by ',' (all must hold), each "singleton" or
 * KIND:ID[:ID...].  Returns 0 with a new array in *out (caller frees; NULL
 * when out is NULL) and its length in *n, or -1 with the reason in *cause
 * (malloc()ed; cause may be NULL) and *out, *n untouched.
 */
int al_dep_parse(const char *s, al_depspec_t **out, int *n, char **cause);
/* The canonical text of n dependencies (malloc()ed): one item per kind in
 * the order given, "afterok:5:6,singleton". */
char *al_dep_text(const al_depspec_t *d, int n);

#endif /* AL_DEPSPEC_H */
