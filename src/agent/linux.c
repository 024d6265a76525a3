/* linux.c -- the real machine: hostname, CPUs and memory from sysconf. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent_int.h"
#include "core/error.h"
#include "fs.h"
#include "platform.h"

/* Reads /proc/PID/stat into data (len bytes) and returns where the fields
 * after the command name begin (" STATE PPID ..."; the name may hold
 * spaces and parentheses), or NULL.  No heap: the spawner calls this right
 * after vfork(), and a forked process pays for every page malloc()
 * touches. */
static const char *
read_stat(long pid, char *data, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n;
    while ((n = read(fd, data, len - 1)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (n <= 0)
        return NULL;
    data[n] = '\0';
    const char *p = strrchr(data, ')');
    return p != NULL && p[1] == ' ' && p[2] != '\0' ? p + 1 : NULL;
}

/* Field `field` (1-based, as proc(5) counts, 4 or more) of the fields
 * read_stat() found at p (the space before field 3), or -1. */
static long long
stat_field(const char *p, int field)
{
    for (int f = 3; p != NULL && f < field; f++)
        p = strchr(p + 1, ' ');
    char *end;
    long long v = p != NULL ? strtoll(p + 1, &end, 10) : -1;
    return p == NULL || end == p + 1 ? -1 : v;
}

int
al_platform_proc_state(long pid, int64_t *start)
{
    char data[4096];
    const char *p = read_stat(pid, data, sizeof data);
    /* The state is field 3 and the start time field 22. */
    long long v = stat_field(p, 22);
    if (v < 0)
        return -1;
    *start = v;
    return p[1] == 'Z' || p[1] == 'X' ? 0 : 1;
}

int
al_platform_children(long pid, long *out, int max)
{
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d != NULL && n < max && (e = readdir(d)) != NULL) {
        char *end, data[1024];
        long c = strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' &&
            stat_field(read_stat(c, data, sizeof data), 4) == pid)
            out[n++] = c;
    }
    if (d != NULL)
        closedir(d);
    return n;
}

int
al_platform_probe(al_platform_info_t *info)
{
    memset(info, 0, sizeof *info);
    if (gethostname(info->hostname, sizeof info->hostname - 1) != 0)
        strcpy(info->hostname, "localhost");
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (cpus <= 0 || pages <= 0 || psize <= 0)
        return AL_EIO;
    info->cpu_milli = (int64_t)cpus * 1000;
    info->mem_bytes = (int64_t)pages * (int64_t)psize;
    info->ngpus = 0;
    al__nvml_probe(info);
    return 0;
}

int
al_platform_sample(al_platform_info_t *info, int i, al_gpu_sample_t *s)
{
    return al__nvml_sample(info->emulated ? NULL : info->nvml, i, s);
}

int
al_platform_health(al_platform_info_t *info, al_gpu_fault_t *out, int max)
{
    return info->emulated ? 0 : al__nvml_health(info->nvml, out, max);
}

void
al_platform_health_reset(al_platform_info_t *info, int i)
{
    if (!info->emulated)
        al__nvml_health_reset(info->nvml, i);
}

int
al_platform_gpu_minor(const al_platform_info_t *info, int i)
{
    return info->minors ? info->gpus[i].minor : i;
}

uint64_t
al_platform_minor_mask(const al_platform_info_t *info, uint64_t mask)
{
    uint64_t out = 0;
    for (int i = 0; i < info->ngpus && i < 64; i++)
        if (mask & ((uint64_t)1 << i))
            out |= (uint64_t)1 << al_platform_gpu_minor(info, i);
    return out;
}

int
al_platform_minor_span(const al_platform_info_t *info)
{
    int span = info->ngpus;
    for (int i = 0; i < info->ngpus; i++)
        if (al_platform_gpu_minor(info, i) + 1 > span)
            span = al_platform_gpu_minor(info, i) + 1;
    return span;
}

void
al_platform_close(al_platform_info_t *info)
{
    al__nvml_close(info->nvml);
    info->nvml = NULL;
}

int
al_platform_subreaper(void)
{
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : AL_EIO;
}
