/*
 * ucfg.h -- the user's allot configuration: a file of "key = value" lines
 * ($XDG_CONFIG_HOME/allot/config, else ~/.config/allot/config) holding the
 * server URL and token the CLI uses, and the user's data directory
 * ($XDG_DATA_HOME/allot, else ~/.local/share/allot) where `allot dev` keeps
 * its state.  Lines starting with '#' are comments.
 */
#ifndef AL_UCFG_H
#define AL_UCFG_H

#include <stddef.h>

#include "buf.h"

/* Path of the user's config file; malloc()ed (caller frees). */
char *al_ucfg_path(void);
/* Path of the user's data directory; malloc()ed (caller frees). */
char *al_ucfg_data_dir(void);
/* Value of `key` in the config file at path, malloc()ed, or NULL. */
char *al_ucfg_get(const char *path, const char *key);
/* Sets `key` to `value` in the config file at path, keeping other lines;
 * creates the file (mode 0600) and its directory.  0 or AL_EIO. */
int al_ucfg_set(const char *path, const char *key, const char *value);

/* The parsing behind the two above, on the first n bytes of a file's text
 * (up to a NUL, if any).  al_ucfg_lookup returns the value of the last
 * "key = value" line, without the blanks around it, malloc()ed, or NULL.
 * al_ucfg_rewrite appends to out the text with the first such line set to
 * "key = value", the others dropped, or that line added at the end; every
 * line ends with a newline. */
char *al_ucfg_lookup(const char *text, size_t n, const char *key);
/* The number (from 1) of the first line that is neither blank, a comment
 * nor "key = value" for one of the nkeys keys; 0 if there is none. */
int al_ucfg_bad_line(const char *text, size_t n, const char *const *keys,
                     size_t nkeys);
void al_ucfg_rewrite(const char *text, size_t n, const char *key,
                     const char *value, al_buf_t *out);

#endif /* AL_UCFG_H */
