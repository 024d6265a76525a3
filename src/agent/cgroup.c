/*
 * cgroup.c -- confining tasks in control groups: each task runs in a
 * cgroup of its own, "tJOB.TASK.RESTART", under a subtree the agent owns
 * (--cgroup-root), with the CPU, memory and process limits of its job and
 * a device rule that keeps it off the other tasks' GPUs.
 *
 * Both kinds of hierarchy: cgroup v2 (one tree: cpu.max, memory.max with
 * memory.swap.max 0, pids.max, memory.events for OOM kills, cgroup.kill),
 * and v1 controllers where a node mounts those (cpu.cfs_quota_us,
 * memory.limit_in_bytes with memory.memsw.limit_in_bytes equal to it,
 * pids.max, devices.deny, memory.oom_control's oom_kill count, the freezer
 * to kill every process at once).  Which one is read from
 * /proc/self/mountinfo at start; a v2 tree counts only when it has the
 * memory and cpu controllers.  The device rule (--cgroup-devices): on v2 a
 * BPF device program attached to each task's cgroup (devbpf.c); on v1 the
 * devices controller, or, where a node mounts no devices controller or
 * the agent is told "bpf", the program on the v2 tree mounted beside the
 * v1 hierarchies ("hybrid"), in a subtree of the same name that tasks
 * join as well.  Where none can be had (a kernel without BPF, an agent
 * without the capabilities), tasks still run and `allot agent --probe`
 * says that devices are not enforced, and why.
 *
 * A task joins its cgroups itself, between fork and exec (launch.c writes
 * "0" to each cgroup.procs file this file names), so that nothing it
 * starts runs outside them, not even for a moment.  When the task ends,
 * whatever is left in its cgroup is killed (a daemonised grandchild dies
 * with its job) and the cgroup removed; what cannot be removed yet, and
 * what an agent that crashed left behind, is swept later: only names of
 * this agent's form, only under its own root.
 *
 * May call: devbpf.c (the device program), src/common (files,
 * allocation, logging).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "agent_int.h"
#include "buf.h"
#include "core/error.h"
#include "fs.h"
#include "log.h"
#include "xmalloc.h"

/* The v1 controllers used, in the order of al__cg_t.dir. */
static const char *const v1_names[AL__CG_N] = {
    [AL__CG_CPU] = "cpu",         [AL__CG_ACCT] = "cpuacct",
    [AL__CG_MEM] = "memory",      [AL__CG_PIDS] = "pids",
    [AL__CG_DEV] = "devices",     [AL__CG_FREEZER] = "freezer",
    [AL__CG_UNIFIED] = "unified",
};

/* --cgroup-devices' words, in AL__CG_DEVS_* terms: auto is -1. */
static int
devices_mode(const char *word)
{
    if (word == NULL || strcmp(word, "auto") == 0)
        return -1;
    if (strcmp(word, "bpf") == 0)
        return AL__CG_DEVS_BPF;
    if (strcmp(word, "none") == 0)
        return AL__CG_DEVS_NONE;
    return -2;
}

bool
al__cg_devices_ok(const char *word)
{
    return devices_mode(word) >= -1;
}

/* Writes text to dir/file; 0, or -1 with errno set. */
static int
put(const char *dir, const char *file, const char *text)
{
    char *p = al_xasprintf("%s/%s", dir, file);
    int fd = open(p, O_WRONLY | O_CLOEXEC);
    free(p);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int err = errno;
    close(fd);
    errno = err;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Reads dir/file (NUL-terminated, caller frees), or NULL. */
static char *
get(const char *dir, const char *file)
{
    char *p = al_xasprintf("%s/%s", dir, file), *data = NULL;
    size_t n;
    int rc = al_fs_read_file(p, &data, &n);
    free(p);
    return rc == 0 ? data : NULL;
}

/* The number after "key " on a line of text ("oom_kill 3"), or -1. */
static long long
keyed(const char *text, const char *key)
{
    size_t k = strlen(key);
    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, key, k) == 0 && p[k] == ' ')
            return strtoll(p + k + 1, NULL, 10);
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return -1;
}

/* Does the comma-separated list have name? */
static bool
in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p != NULL && *p != '\0';) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* The agent's own cgroup in the hierarchy whose /proc/self/cgroup
 * controllers field is ctl (v1: one of the names; v2: "" with id 0). */
static char *
own_cgroup(const char *ctl, bool v2)
{
    char *data = NULL, *res = NULL;
    size_t n;
    if (al_fs_read_file("/proc/self/cgroup", &data, &n) != 0)
        return NULL;
    for (char *save = NULL, *line = strtok_r(data, "\n", &save);
         line != NULL && res == NULL; line = strtok_r(NULL, "\n", &save)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL)
            continue;
        *c2 = '\0';
        if (v2 ? strcmp(line, "0:") == 0 && c1[1] == '\0'
               : in_list(c1 + 1, ctl))
            res = al_xstrdup(c2 + 1);
    }
    free(data);
    return res;
}

/* The directory of root in the hierarchy mounted at mnt (whose own root
 * is mroot) for the agent's cgroup own: root absolute, or relative to
 * own. */
static char *
subtree(const char *mnt, const char *mroot, const char *own, const char *root)
{
    if (root[0] == '/')
        return al_xasprintf("%s%s", mnt, strcmp(root, "/") == 0 ? "" : root);
    size_t m = strlen(mroot);
    if (strcmp(mroot, "/") != 0 && strncmp(own, mroot, m) == 0)
        own += m; /* a mount of part of the hierarchy (a container) */
    return al_xasprintf("%s%s/%s", mnt, strcmp(own, "/") == 0 ? "" : own, root);
}

/* mkdir -p of dir (and its parents), for cgroup file systems. */
static int
mkdirs(const char *dir)
{
    return al_fs_mkdir_p(dir, 0755);
}

/* mkdirs() of cg's directory for controller c, noting in cg->made
 * whether it made it. */
static int
make_root(al__cg_t *cg, int c, const char *dir)
{
    bool had = access(dir, F_OK) == 0;
    int rc = mkdirs(dir);
    if (rc == 0 && !had)
        cg->made |= 1u << c;
    return rc;
}

/* v2: enables +cpu +memory +pids for the children of every directory
 * from the mount down to dir (dir included). */
static int
v2_enable(const char *mnt, const char *dir, char **cause)
{
    size_t m = strlen(mnt);
    char *p = al_xstrdup(dir);
    int rc = 0;
    for (size_t i = m; rc == 0; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        char *have = get(p, "cgroup.subtree_control");
        static const char *const need[] = { "cpu", "memory", "pids" };
        for (size_t k = 0; k < 3 && rc == 0; k++) {
            char want[16];
            snprintf(want, sizeof want, "+%s", need[k]);
            bool on = false;
            for (char *s = have; s != NULL && *s != '\0' && !on;) {
                size_t len = strcspn(s, " \n");
                on = len == strlen(need[k]) && strncmp(s, need[k], len) == 0;
                s += len + (s[len] != '\0');
            }
            if (!on && put(p, "cgroup.subtree_control", want) != 0) {
                *cause = al_xasprintf(
                    "cannot enable the %s controller in %s: %s (a cgroup "
                    "with processes cannot hand controllers to its "
                    "children: give --cgroup-root a delegated subtree)",
                    need[k], p, strerror(errno));
                rc = AL_EIO;
            }
        }
        free(have);
        p[i] = c;
        if (c == '\0')
            break;
    }
    free(p);
    return rc;
}

/* Chooses the device rule (mode as devices_mode() gives it) for the
 * hierarchy cg has opened; v2mnt and v2root: the cgroup v2 tree's mount
 * and its root, or NULL.  0 (cg->devs set; AL__CG_DEVS_NONE with
 * cg->dev_note), or an error with *cause when "bpf" was asked for and
 * cannot be had. */
static int
devices_open(al__cg_t *cg, int mode, const char *root, const char *v2mnt,
             const char *v2root, char **cause)
{
    if (mode == AL__CG_DEVS_NONE) {
        cg->dev_note = al_xasprintf("--cgroup-devices none");
        return 0;
    }
    if (cg->version == 1 && cg->dir[AL__CG_DEV] != NULL && mode < 0) {
        cg->devs = AL__CG_DEVS_V1;
        return 0;
    }
    char *why = NULL;
    const char *dir = cg->dir[0];
    if (cg->version == 1 && v2mnt == NULL) {
        why = al_xasprintf("no devices controller, and no cgroup v2 tree "
                           "for a device program");
    } else if (cg->version == 1) {
        char *own = own_cgroup("", true);
        char *d = subtree(v2mnt, v2root, own ? own : "/", root);
        free(own);
        if (make_root(cg, AL__CG_UNIFIED, d) != 0) {
            why = al_xasprintf("cannot create %s: %s", d, strerror(errno));
            free(d);
        } else {
            cg->dir[AL__CG_UNIFIED] = d;
            dir = d;
        }
    }
    if (why == NULL && al__devbpf_check(dir, &why) == 0) {
        cg->devs = AL__CG_DEVS_BPF;
        return 0;
    }
    if (cg->dir[AL__CG_UNIFIED] != NULL) {
        rmdir(cg->dir[AL__CG_UNIFIED]); /* empty unless tasks left it */
        free(cg->dir[AL__CG_UNIFIED]);
        cg->dir[AL__CG_UNIFIED] = NULL;
        cg->made &= ~(1u << AL__CG_UNIFIED);
    }
    if (mode == AL__CG_DEVS_BPF) {
        *cause = al_xasprintf("--cgroup-devices bpf: %s", why);
        free(why);
        return AL_ENOTSUP;
    }
    cg->dev_note = why;
    return 0;
}

int
al__cg_open(al__cg_t *cg, const char *root, const char *dev_dir,
            const char *devices, char **cause)
{
    memset(cg, 0, sizeof *cg);
    if (root == NULL || *root == '\0' || strstr(root, "..") != NULL) {
        *cause = al_xasprintf("--cgroup-root wants a cgroup path (\"/allot\", "
                              "or relative to the agent's own cgroup)");
        return AL_EINVAL;
    }
    int mode = devices_mode(devices);
    if (mode < -1) {
        *cause = al_xasprintf("--cgroup-devices wants auto, bpf or none, not "
                              "\"%s\"",
                              devices);
        return AL_EINVAL;
    }
    char *data = NULL;
    size_t n;
    if (al_fs_read_file("/proc/self/mountinfo", &data, &n) != 0) {
        *cause = al_xasprintf("cannot read /proc/self/mountinfo");
        return AL_EIO;
    }
    char *v2mnt = NULL, *v2root = NULL;
    char *mnt[AL__CG_N] = { 0 }, *mroot[AL__CG_N] = { 0 };
    for (char *save = NULL, *line = strtok_r(data, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS ... - FSTYPE SRC SUPER */
        char f[5][4096], type[64], src[256], super[1024];
        const char *dash = strstr(line, " - ");
        if (dash == NULL ||
            sscanf(line, "%4095s %4095s %4095s %4095s %4095s", f[0], f[1], f[2],
                   f[3], f[4]) != 5 ||
            sscanf(dash + 3, "%63s %255s %1023s", type, src, super) != 3)
            continue;
        if (strcmp(type, "cgroup2") == 0 && v2mnt == NULL) {
            v2mnt = al_xstrdup(f[4]);
            v2root = al_xstrdup(f[3]);
        } else if (strcmp(type, "cgroup") == 0) {
            for (int c = 0; c < AL__CG_UNIFIED; c++)
                if (mnt[c] == NULL && in_list(super, v1_names[c])) {
                    mnt[c] = al_xstrdup(f[4]);
                    mroot[c] = al_xstrdup(f[3]);
                }
        }
    }
    free(data);
    int rc = 0;
    char *ctls = v2mnt ? get(v2mnt, "cgroup.controllers") : NULL;
    bool v2 = ctls != NULL && strstr(ctls, "memory") && strstr(ctls, "cpu");
    free(ctls);
    if (v2) {
        char *own = own_cgroup("", true);
        cg->version = 2;
        cg->mount = al_xstrdup(v2mnt);
        cg->dir[0] = subtree(v2mnt, v2root, own ? own : "/", root);
        free(own);
        cg->path = al_xstrdup(cg->dir[0] + strlen(v2mnt));
        if (make_root(cg, 0, cg->dir[0]) != 0) {
            *cause = al_xasprintf("cannot create %s: %s", cg->dir[0],
                                  strerror(errno));
            rc = AL_EIO;
        } else {
            rc = v2_enable(cg->mount, cg->dir[0], cause);
        }
    } else if (mnt[AL__CG_MEM] != NULL) {
        cg->version = 1;
        for (int c = 0; c < AL__CG_N && rc == 0; c++) {
            if (mnt[c] == NULL)
                continue;
            char *own = own_cgroup(v1_names[c], false);
            cg->dir[c] = subtree(mnt[c], mroot[c], own ? own : "/", root);
            free(own);
            const char *path = cg->dir[c] + strlen(mnt[c]);
            if (cg->path == NULL && c == 0)
                cg->path = al_xstrdup(path);
            else if (cg->path != NULL && strcmp(cg->path, path) != 0)
                cg->path[0] = '\0'; /* differs: none */
            if (make_root(cg, c, cg->dir[c]) != 0) {
                *cause = al_xasprintf("cannot create %s: %s", cg->dir[c],
                                      strerror(errno));
                rc = AL_EIO;
            }
        }
        if (rc == 0 && cg->dir[AL__CG_MEM] != NULL)
            put(cg->dir[AL__CG_MEM], "memory.use_hierarchy", "1");
        if (cg->path != NULL && cg->path[0] == '\0') {
            free(cg->path);
            cg->path = NULL;
        }
    } else {
        *cause = al_xasprintf("no cgroup hierarchy with the memory "
                              "controller is mounted");
        rc = AL_ENOTSUP;
    }
    if (rc == 0)
        rc = devices_open(cg, mode, root, v2mnt, v2root, cause);
    free(v2mnt);
    free(v2root);
    for (int c = 0; c < AL__CG_N; c++) {
        free(mnt[c]);
        free(mroot[c]);
    }
    if (rc != 0) {
        al__cg_close(cg);
        return rc;
    }
    cg->dev_dir = al_xstrdup(dev_dir != NULL ? dev_dir : "/dev");
    return 0;
}

void
al__cg_close(al__cg_t *cg)
{
    for (int c = 0; c < AL__CG_N; c++)
        free(cg->dir[c]);
    free(cg->mount);
    free(cg->dev_dir);
    free(cg->path);
    free(cg->dev_note);
    memset(cg, 0, sizeof *cg);
}

/* The directory of task name in controller c's tree (v2: the one tree),
 * or NULL when that controller is not mounted (caller frees). */
static char *
task_dir(const al__cg_t *cg, int c, const char *name)
{
    const char *d =
        cg->version == 2 ? (c == 0 ? cg->dir[0] : NULL) : cg->dir[c];
    return d != NULL ? al_xasprintf("%s/%s", d, name) : NULL;
}

/* The directory whose cgroup.procs lists a task's processes. */
static char *
procs_dir(const al__cg_t *cg, const char *name)
{
    if (cg->version == 2)
        return task_dir(cg, 0, name);
    return task_dir(cg, cg->dir[AL__CG_FREEZER] ? AL__CG_FREEZER : AL__CG_MEM,
                    name);
}

void
al__cg_name(char *buf, size_t len, unsigned long long job, int index,
            int restart)
{
    snprintf(buf, len, "t%llu.%d.%d", job, index, restart);
}

/* The cgroup.procs files of task name's directories, '\n'-separated, a
 * directory shared by co-mounted controllers once (caller frees). */
static char *
procs_list(char *const dirs[AL__CG_N])
{
    al_buf_t list = AL_BUF_INIT;
    for (int c = 0; c < AL__CG_N; c++) {
        if (dirs[c] == NULL)
            continue;
        bool seen = false;
        for (int k = 0; k < c; k++)
            seen = seen || (dirs[k] != NULL && strcmp(dirs[k], dirs[c]) == 0);
        if (!seen)
            al_buf_printf(&list, "%s%s/cgroup.procs", list.len ? "\n" : "",
                          dirs[c]);
    }
    char *out = al_xstrdup(al_buf_cstr(&list));
    al_buf_fini(&list);
    return out;
}

char *
al__cg_procs(const al__cg_t *cg, const char *name)
{
    if (cg->version == 0)
        return NULL;
    char *dirs[AL__CG_N] = { 0 };
    for (int c = 0; c < AL__CG_N; c++)
        dirs[c] = task_dir(cg, c, name);
    char *out = procs_list(dirs);
    for (int c = 0; c < AL__CG_N; c++)
        free(dirs[c]);
    return out;
}

/* Writes the limits into the task's directories; 0 or -1 with *cause. */
static int
limits_v2(const al__cg_t *cg, const char *d, const al__cg_limits_t *lim,
          char **cause)
{
    char v[64];
    const char *file = "cpu.max";
    if (lim->cpu_milli > 0)
        snprintf(v, sizeof v, "%lld 100000",
                 (long long)(lim->cpu_milli * 100000 / 1000));
    else
        snprintf(v, sizeof v, "max 100000");
    int rc = put(d, file, v);
    if (rc == 0) {
        file = "memory.max";
        if (lim->mem_bytes > 0)
            snprintf(v, sizeof v, "%lld", (long long)lim->mem_bytes);
        else
            snprintf(v, sizeof v, "max");
        rc = put(d, file, v);
    }
    if (rc == 0 && lim->mem_bytes > 0) {
        /* No swap for it (absent without swap accounting: fine). */
        if (put(d, "memory.swap.max", "0") != 0 && errno != ENOENT) {
            file = "memory.swap.max";
            rc = -1;
        }
        /* An OOM kill takes the whole task, not one of its processes. */
        put(d, "memory.oom.group", "1");
    }
    if (rc == 0 && cg->pids_max > 0) {
        file = "pids.max";
        snprintf(v, sizeof v, "%lld", (long long)cg->pids_max);
        rc = put(d, file, v);
    }
    if (rc != 0)
        *cause =
            al_xasprintf("cannot write %s/%s: %s", d, file, strerror(errno));
    return rc;
}

static int
limits_v1(const al__cg_t *cg, char *const dirs[AL__CG_N],
          const al__cg_limits_t *lim, char **cause)
{
    char v[64];
    const char *dir = NULL, *file = NULL;
    int rc = 0;
    if (dirs[AL__CG_CPU] != NULL) {
        dir = dirs[AL__CG_CPU];
        file = "cpu.cfs_period_us";
        rc = put(dir, file, "100000");
        snprintf(v, sizeof v, "%lld",
                 lim->cpu_milli > 0 ? (long long)(lim->cpu_milli * 100) : -1LL);
        if (rc == 0) {
            file = "cpu.cfs_quota_us";
            rc = put(dir, file, v);
        }
    }
    if (rc == 0 && dirs[AL__CG_MEM] != NULL && lim->mem_bytes > 0) {
        dir = dirs[AL__CG_MEM];
        snprintf(v, sizeof v, "%lld", (long long)lim->mem_bytes);
        file = "memory.limit_in_bytes";
        rc = put(dir, file, v);
        /* Memory and swap together at the same limit: no swap (absent
         * without swap accounting: fine). */
        if (rc == 0 && put(dir, "memory.memsw.limit_in_bytes", v) != 0 &&
            errno != ENOENT) {
            file = "memory.memsw.limit_in_bytes";
            rc = -1;
        }
        put(dir, "memory.swappiness", "0");
    }
    if (rc == 0 && dirs[AL__CG_PIDS] != NULL && cg->pids_max > 0) {
        dir = dirs[AL__CG_PIDS];
        file = "pids.max";
        snprintf(v, sizeof v, "%lld", (long long)cg->pids_max);
        rc = put(dir, file, v);
    }
    if (rc == 0 && dirs[AL__CG_DEV] != NULL && cg->devs == AL__CG_DEVS_V1) {
        /* Every device as before, but the GPUs that are not the task's. */
        dir = dirs[AL__CG_DEV];
        file = "devices.deny";
        for (int g = 0; g < lim->ngpus && rc == 0; g++) {
            if (lim->devices & ((uint64_t)1 << g))
                continue;
            char node[4096];
            struct stat st;
            snprintf(node, sizeof node, "%s/nvidia%d", cg->dev_dir, g);
            if (stat(node, &st) != 0 || !S_ISCHR(st.st_mode))
                continue;
            snprintf(v, sizeof v, "c %u:%u rwm", major(st.st_rdev),
                     minor(st.st_rdev));
            rc = put(dir, file, v);
        }
    }
    if (rc != 0)
        *cause =
            al_xasprintf("cannot write %s/%s: %s", dir, file, strerror(errno));
    return rc;
}

int
al__cg_create(const al__cg_t *cg, const char *name, const al__cg_limits_t *lim,
              char **procs, char **cause)
{
    char *dirs[AL__CG_N] = { 0 };
    int rc = 0;
    for (int c = 0; c < AL__CG_N && rc == 0; c++) {
        dirs[c] = task_dir(cg, c, name);
        if (dirs[c] == NULL)
            continue;
        if (mkdir(dirs[c], 0755) != 0 && errno != EEXIST) {
            *cause =
                al_xasprintf("cannot create %s: %s", dirs[c], strerror(errno));
            rc = AL_EIO;
            break;
        }
    }
    if (rc == 0 && (cg->version == 2 ? limits_v2(cg, dirs[0], lim, cause)
                                     : limits_v1(cg, dirs, lim, cause)) != 0)
        rc = AL_EIO;
    al__devrule_t rule;
    if (rc == 0 && cg->devs == AL__CG_DEVS_BPF &&
        al__devrule_read(&rule, cg->dev_dir, lim->ngpus, lim->devices) > 0 &&
        al__devbpf_attach(cg->version == 2 ? dirs[0] : dirs[AL__CG_UNIFIED],
                          &rule, cause) != 0)
        rc = AL_EIO;
    if (rc == 0)
        *procs = procs_list(dirs);
    for (int c = 0; c < AL__CG_N; c++)
        free(dirs[c]);
    if (rc != 0) {
        al__cg_remove(cg, name);
        return rc;
    }
    return 0;
}

/* Sends sig to every process listed in dir/cgroup.procs, and in its
 * child cgroups' (a container runtime's, under the task's); how many. */
static int
signal_listed(const char *dir, int sig)
{
    char *text = get(dir, "cgroup.procs");
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (e->d_type == DT_DIR && e->d_name[0] != '.') {
            char *sub = al_xasprintf("%s/%s", dir, e->d_name);
            n += signal_listed(sub, sig);
            free(sub);
        }
    if (d != NULL)
        closedir(d);
    for (char *p = text; p != NULL && *p != '\0';) {
        char *end;
        long pid = strtol(p, &end, 10);
        if (end == p)
            break;
        if (pid > 1 && kill((pid_t)pid, sig) == 0)
            n++;
        p = end + (*end == '\n');
    }
    free(text);
    return n;
}

void
al__cg_signal(const al__cg_t *cg, const char *name, int sig)
{
    char *d = procs_dir(cg, name);
    if (d == NULL)
        return;
    if (sig == SIGKILL && cg->version == 2 && put(d, "cgroup.kill", "1") == 0) {
        free(d);
        return;
    }
    if (sig == SIGKILL && cg->version == 1 && cg->dir[AL__CG_FREEZER]) {
        /* Frozen, none can fork between the listing and the kill; the
         * kill takes effect as they thaw. */
        if (put(d, "freezer.state", "FROZEN") == 0) {
            signal_listed(d, SIGKILL);
            put(d, "freezer.state", "THAWED");
            free(d);
            return;
        }
    }
    /* Rounds until none is left: a process forked between the listing
     * and the kill is found by the next round. */
    for (int round = 0; round < 8 && signal_listed(d, sig) > 0; round++)
        if (sig != SIGKILL)
            break;
    free(d);
}

bool
al__cg_oom(const al__cg_t *cg, const char *name)
{
    bool oom = false;
    if (cg->version == 2) {
        char *d = task_dir(cg, 0, name),
             *ev = d ? get(d, "memory.events") : NULL;
        oom = keyed(ev, "oom_kill") > 0;
        free(ev);
        free(d);
    } else if (cg->dir[AL__CG_MEM] != NULL) {
        char *d = task_dir(cg, AL__CG_MEM, name);
        char *ctl = get(d, "memory.oom_control");
        long long kills = keyed(ctl, "oom_kill");
        if (kills < 0) { /* kernels before 4.13: the limit was hit */
            char *f = get(d, "memory.failcnt");
            kills = f != NULL ? strtoll(f, NULL, 10) : 0;
            free(f);
        }
        oom = kills > 0;
        free(ctl);
        free(d);
    }
    return oom;
}

/* rmdir of dir after its child cgroups; false when some is busy. */
static bool
rmdir_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (e->d_type == DT_DIR && e->d_name[0] != '.') {
            char *sub = al_xasprintf("%s/%s", dir, e->d_name);
            rmdir_tree(sub);
            free(sub);
        }
    if (d != NULL)
        closedir(d);
    return rmdir(dir) == 0 || errno == ENOENT;
}

bool
al__cg_remove(const al__cg_t *cg, const char *name)
{
    bool gone = true;
    for (int c = 0; c < AL__CG_N; c++) {
        char *d = task_dir(cg, c, name);
        if (d != NULL && !rmdir_tree(d))
            gone = false;
        free(d);
    }
    return gone;
}

bool
al__cg_end(const al__cg_t *cg, const char *name)
{
    bool oom = al__cg_oom(cg, name);
    al__cg_signal(cg, name, SIGKILL);
    al__cg_remove(cg, name);
    return oom;
}

/* The number that file dir/file holds, or -1. */
static int64_t
number(const char *dir, const char *file)
{
    char *u = dir != NULL ? get(dir, file) : NULL;
    int64_t v = u != NULL ? strtoll(u, NULL, 10) : -1;
    free(u);
    return v;
}

int
al__cg_usage(const al__cg_t *cg, const char *name, al__cg_usage_t *u)
{
    u->cpu_usec = u->mem_bytes = u->mem_peak = -1;
    if (cg->version == 2) {
        char *d = task_dir(cg, 0, name);
        char *st = get(d, "cpu.stat");
        u->cpu_usec = keyed(st, "usage_usec");
        u->mem_bytes = number(d, "memory.current");
        u->mem_peak = number(d, "memory.peak"); /* Linux 5.19 on */
        free(st);
        free(d);
    } else {
        char *d = task_dir(cg, AL__CG_ACCT, name);
        int64_t ns = number(d, "cpuacct.usage");
        u->cpu_usec = ns >= 0 ? ns / 1000 : -1;
        free(d);
        d = task_dir(cg, AL__CG_MEM, name);
        u->mem_bytes = number(d, "memory.usage_in_bytes");
        u->mem_peak = number(d, "memory.max_usage_in_bytes");
        free(d);
    }
    return u->cpu_usec >= 0 || u->mem_bytes >= 0 ? 0 : AL_ENOENT;
}

/* Whether name has the form of a task's cgroup, "tN.N.N" (digits). */
static bool
task_name(const char *name)
{
    const char *p = name + 1;
    if (name[0] != 't')
        return false;
    for (int part = 0; part < 3; part++) {
        if (*p < '0' || *p > '9')
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
        if (*p != (part < 2 ? '.' : '\0'))
            return false;
        p += part < 2;
    }
    return true;
}

int
al__cg_sweep(const al__cg_t *cg, bool (*keep)(void *ctx, const char *name),
             void *ctx)
{
    int left = 0;
    for (int c = 0; c < AL__CG_N; c++) {
        if (cg->dir[c] == NULL)
            continue;
        DIR *dir = opendir(cg->dir[c]);
        struct dirent *e;
        while (dir != NULL && (e = readdir(dir)) != NULL) {
            /* This agent's names only: anything else is not ours. */
            if (!task_name(e->d_name) || keep(ctx, e->d_name))
                continue;
            al__cg_signal(cg, e->d_name, SIGKILL);
            if (!al__cg_remove(cg, e->d_name))
                left++;
            else
                al_info("removed the stale cgroup %s", e->d_name);
        }
        if (dir != NULL)
            closedir(dir);
    }
    return left;
}

json_t *
al__cg_probe_json(const char *root, const char *devices)
{
    al__cg_t cg;
    char *cause = NULL;
    /* A probe creates the root when it is missing, says what the agent
     * would use, and removes what it created. */
    json_t *o = json_object();
    if (root == NULL) {
        json_object_set_new(o, "enabled", json_false());
        return o;
    }
    if (al__cg_open(&cg, root, NULL, devices, &cause) != 0) {
        json_object_set_new(o, "enabled", json_false());
        json_object_set_new(o, "error", json_string(cause));
        free(cause);
        return o;
    }
    json_object_set_new(o, "enabled", json_true());
    json_object_set_new(o, "version", json_integer(cg.version));
    json_t *ctl = json_array();
    static const char *const v2_names[] = { "cpu", "memory", "pids" };
    if (cg.version == 2) {
        for (size_t k = 0; k < 3; k++)
            json_array_append_new(ctl, json_string(v2_names[k]));
        json_object_set_new(o, "root", json_string(cg.dir[0]));
    } else {
        json_t *dirs = json_object();
        for (int c = 0; c < AL__CG_N; c++)
            if (cg.dir[c] != NULL) {
                if (c != AL__CG_UNIFIED) /* the v2 tree: no controller */
                    json_array_append_new(ctl, json_string(v1_names[c]));
                json_object_set_new(dirs, v1_names[c], json_string(cg.dir[c]));
            }
        json_object_set_new(o, "roots", dirs);
    }
    json_object_set_new(o, "controllers", ctl);
    /* The device rule: whether a task is kept off the other GPUs, how,
     * and why not. */
    static const char *const rules[] = {
        [AL__CG_DEVS_NONE] = "none",
        [AL__CG_DEVS_V1] = "devices.deny",
        [AL__CG_DEVS_BPF] = "bpf",
    };
    json_object_set_new(o, "devices",
                        json_boolean(cg.devs != AL__CG_DEVS_NONE));
    json_object_set_new(o, "device_rule", json_string(rules[cg.devs]));
    if (cg.devs == AL__CG_DEVS_NONE) {
        char *note = al_xasprintf(
            "device isolation is not enforced: a task can open every GPU's "
            "device node (%s)",
            cg.dev_note != NULL ? cg.dev_note : "no device rule");
        json_object_set_new(o, "devices_note", json_string(note));
        free(note);
    }
    for (int c = 0; c < AL__CG_N; c++)
        if ((cg.made & (1u << c)) && cg.dir[c] != NULL)
            rmdir(cg.dir[c]);
    al__cg_close(&cg);
    return o;
}
