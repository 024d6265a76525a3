/* linux.c -- the real machine: hostname, CPUs and memory from sysconf. */
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

int
al_platform_proc_state(long pid, int64_t *start)
{
    /* No heap: the spawner calls this right after vfork(), and a forked
     * process pays for every page malloc() touches. */
    char path[64], data[4096];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n;
    while ((n = read(fd, data, sizeof data - 1)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (n <= 0)
        return -1;
    data[n] = '\0';
    /* Fields after the command name, which may hold spaces: the state is
     * field 3 and the start time field 22. */
    const char *p = strrchr(data, ')');
    if (p == NULL || p[1] != ' ')
        return -1;
    bool ended = p[2] == 'Z' || p[2] == 'X';
    for (int field = 2; p != NULL && field < 22; field++)
        p = strchr(p + 1, ' ');
    char *end;
    long long v = p != NULL ? strtoll(p + 1, &end, 10) : -1;
    if (p == NULL || end == p + 1)
        return -1;
    *start = v;
    return ended ? 0 : 1;
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
