/* fs.c -- mkdir -p, atomic whole-file writes and whole-file reads. */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "core/error.h"
#include "xmalloc.h"

int
al_fs_mkdir_p(const char *path, mode_t mode)
{
    char *p = al_xstrdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, mode) != 0 && errno != EEXIST) {
            rc = AL_EIO;
            break;
        }
        *s = c;
        if (c == '\0')
            break;
    }
    free(p);
    return rc;
}

int
al_fs_write_file(const char *path, const void *data, size_t n, mode_t mode,
                 int flags)
{
    bool durable = (flags & AL_FS_SYNC) != 0;
    char *tmp = durable ? al_xasprintf("%s.tmp.%ld", path, (long)getpid())
                        : al_xstrdup(path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        free(tmp);
        return AL_EIO;
    }
    const char *p = data;
    size_t off = 0;
    int rc = 0;
    while (off < n) {
        ssize_t w = write(fd, p + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            rc = AL_EIO;
            break;
        }
        off += (size_t)w;
    }
    if (rc == 0 && (fchmod(fd, mode) != 0 || (durable && fsync(fd) != 0)))
        rc = AL_EIO;
    if (close(fd) != 0)
        rc = AL_EIO;
    if (durable && rc == 0 && rename(tmp, path) != 0)
        rc = AL_EIO;
    if (rc != 0)
        unlink(tmp);
    free(tmp);
    return rc;
}

int
al_fs_read_file(const char *path, char **data, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? AL_ENOENT : AL_EIO;
    al_buf_t b = AL_BUF_INIT;
    for (;;) {
        al_buf_reserve(&b, 8192);
        ssize_t r = read(fd, b.data + b.len, b.cap - b.len - 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            close(fd);
            al_buf_fini(&b);
            return AL_EIO;
        }
        if (r == 0)
            break;
        b.len += (size_t)r;
    }
    close(fd);
    b.data[b.len] = '\0'; /* an empty file too: callers use it as text */
    *n = b.len;
    *data = al_buf_steal(&b);
    return 0;
}

int
al_fs_lock_dir(const char *dir, const char *who, int *fd, char **cause)
{
    char *path = al_xasprintf("%s/lock", dir);
    int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int rc = 0;
    if (f < 0) {
        *cause = al_xasprintf("cannot open %s: %s", path, strerror(errno));
        rc = AL_EIO;
    } else if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK) {
            char text[32];
            ssize_t n = pread(f, text, sizeof text - 1, 0);
            text[n > 0 ? n : 0] = '\0';
            long pid = strtol(text, NULL, 10);
            *cause = al_xasprintf(
                "%s is in use by another allot %s (pid %ld); stop that "
                "one first, or give this one a state directory of its own",
                dir, who, pid);
            rc = AL_EBUSY;
        } else {
            *cause = al_xasprintf("cannot lock %s: %s", path, strerror(errno));
            rc = AL_EIO;
        }
    } else {
        char text[32];
        int n = snprintf(text, sizeof text, "%ld\n", (long)getpid());
        if (ftruncate(f, 0) != 0 || pwrite(f, text, (size_t)n, 0) != n) {
            *cause = al_xasprintf("cannot write %s: %s", path, strerror(errno));
            rc = AL_EIO;
        }
    }
    free(path);
    if (rc != 0) {
        if (f >= 0)
            close(f);
        return rc;
    }
    *fd = f;
    return 0;
}
