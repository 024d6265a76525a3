/*
 * ucfg.h -- the user's allot configuration: a file of "key = value" lines
 * ($XDG_CONFIG_HOME/allot/config, else ~/.config/allot/config) holding the
 * server URL and token the CLI uses, and the user's data directory
 * ($XDG_DATA_HOME/allot, else ~/.local/share/allot) where `allot dev` keeps
 * its state.  Lines starting with '#' are comments.
 */
#ifndef AL_UCFG_H
#define AL_UCFG_H

/* Path of the user's config file; malloc()ed (caller frees). */
char *al_ucfg_path(void);
/* Path of the user's data directory; malloc()ed (caller frees). */
char *al_ucfg_data_dir(void);
/* Value of `key` in the config file at path, malloc()ed, or NULL. */
char *al_ucfg_get(const char *path, const char *key);
/* Sets `key` to `value` in the config file at path, keeping other lines;
 * creates the file (mode 0600) and its directory.  0 or AL_EIO. */
int al_ucfg_set(const char *path, const char *key, const char *value);

#endif /* AL_UCFG_H */
