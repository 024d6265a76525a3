/*
 * labels.h -- a node's labels ("rack=r1,ib=yes"), a job's constraint on
 * them ("ib,rack=r1") and a pool's name: read and checked the same way by
 * the agent, the CLI and the controller, and written in one canonical form
 * (items sorted by key, no repeats), which the core matches
 * (al_node_t.labels, al_request_t.constraint).
 *
 * Owns: the parsers and the canonical text.  Calls: libc and xmalloc only.
 */
#ifndef AL_LABELS_H
#define AL_LABELS_H

#include <stdbool.h>

/* The most labels of a node, or items of a constraint. */
#define AL_LABELS_MAX 32
/* The longest key or value. */
#define AL_LABEL_LEN 63

/*
 * Reads s: items separated by ',', each "key=value" (labels) or, when
 * constraint is true, "key=value" or "key".  Keys and values are letters,
 * digits, '-', '_' and '.', 1..AL_LABEL_LEN of them; a key appears once.
 * An empty s is no labels.  Returns 0 with the canonical text in *out
 * (malloc()ed; "" for none), or -1 with the reason in *cause (malloc()ed;
 * cause may be NULL) and *out untouched.
 */
int al_labels_parse(const char *s, bool constraint, char **out, char **cause);

/* Is s a pool name (as a label's value)? */
bool al_pool_valid(const char *s);

/* The value of label key in canonical labels, as a new string, or NULL. */
char *al_labels_get(const char *labels, const char *key);

#endif /* AL_LABELS_H */
