/* fs.h -- small file-system helpers shared by the server, agent and CLI. */
#ifndef AL_FS_H
#define AL_FS_H

#include <stddef.h>
#include <sys/types.h>

/* Creates a directory and its parents (like mkdir -p).  0 or AL_EIO. */
int al_fs_mkdir_p(const char *path, mode_t mode);
/* Flags of al_fs_write_file(). */
enum {
    /* Atomic and durable: a temporary file, fsync, rename.  Readers see
     * the old or the new contents, and the new survive a machine crash.
     * Tokens and configs want it; a task's small bookkeeping files, which
     * need only outlive a crash of the agent and are read when their
     * writer is gone, do not want its cost per task. */
    AL_FS_SYNC = 1
};

/* Writes a whole file with the given mode: in place (truncated first), or
 * as flags say.  0 or AL_EIO. */
int al_fs_write_file(const char *path, const void *data, size_t n, mode_t mode,
                     int flags);
/* Reads a whole file into a malloc()ed NUL-terminated buffer (caller frees).
 * 0, AL_ENOENT or AL_EIO; nothing stored on error. */
int al_fs_read_file(const char *path, char **data, size_t *n);

/* Takes an exclusive lock (flock) on DIR/lock, created if missing, for
 * as long as the process lives or until *fd is closed: the descriptor is
 * close-on-exec and the lock goes with the process, however it ends.  Our
 * pid is written in the file for whoever finds it taken.  0 with the
 * descriptor in *fd; AL_EBUSY when another process holds it, with a
 * message naming it (who says what it is: "controller") in *cause (caller
 * frees); AL_EIO with a message otherwise. */
int al_fs_lock_dir(const char *dir, const char *who, int *fd, char **cause);

#endif /* AL_FS_H */
