/*
 * sim_int.h -- internals shared between the files of the simulator.
 *
 * Memory: the simulator is a shell, so it aborts on out-of-memory through
 * src/common's al_xmalloc and friends (STYLE rule 7) instead of threading
 * AL_ENOMEM through every parser; its buffers are src/common's al_buf.
 */
#ifndef AL_SIM_INT_H
#define AL_SIM_INT_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "xmalloc.h"

/*
 * Collects parse errors: at most AL_MAX_ERRORS messages are kept, the rest
 * are counted and summarised as "... and N more".
 */
#define AL_MAX_ERRORS 20
typedef struct al_errs {
    al_buf_t buf;
    int n;
} al_errs_t;

void al__err(al_errs_t *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Hands the collected text to *cause (malloc()ed; freed if cause is NULL),
 * resets e and returns AL_EPARSE. */
int al__err_give(al_errs_t *e, char **cause);

/*
 * The next meaningful line of a `key=value` file (--cluster, --queues-file):
 * what follows '#' is cut, CR and commas become spaces, blank lines are
 * skipped.  Returns the line, malloc()ed (the caller frees it), with its
 * 1-based number in *line, or NULL at the end of buf.  *off is the reading
 * position.  A line holding a NUL byte is reported in errs and skipped.
 */
char *al__kv_line(const char *name, const char *buf, size_t len, size_t *off,
                  int *line, al_errs_t *errs);

/* parse.c: reads a whole file (NUL-terminated, *len bytes before the NUL);
 * returns 0, or AL_EIO with a message naming the file in *cause. */
int al__read_file(const char *path, char **data, size_t *len, char **cause);

/* Parses a whole decimal integer / finite number; 0 or -1. */
int al__parse_i64(const char *s, int64_t *v);
int al__parse_num(const char *s, double *v);

/* FNV-1a 64-bit hash of a string: stable across runs and machines. */
uint64_t al__hash(const char *s);

/*
 * Splits a line of "key=value" words.  Calls fn(ctx, key, value) for each;
 * the first bare word (no '=') is passed with key NULL.
 */
typedef void (*al_kv_fn)(void *ctx, const char *key, const char *val);
void al__kv_split(char *line, al_kv_fn fn, void *ctx);

#endif /* AL_SIM_INT_H */
