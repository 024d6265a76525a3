/*
 * platform.h -- the agent's one door to the machine: what the node has
 * (CPUs, memory, GPUs).  linux.c reads the real machine; fake.c declares
 * emulated GPUs ("--fake-gpus 8xH100-80GB") for machines without any and
 * for tests.  linux.c finds GPUs through NVML (nvml.c: dlopen of
 * libnvidia-ml.so.1, or of $ALLOT_NVML_LIB), so allot builds and runs
 * without NVIDIA's driver.
 */
#ifndef AL_PLATFORM_H
#define AL_PLATFORM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AL_PLATFORM_MAX_GPUS 64

typedef struct al_gpu_info {
    char uuid[96];
    char model[64];
    int64_t mem_bytes;
    int numa;   /* -1 unknown */
    int nvlink; /* NVLink/NVSwitch domain, -1 none */
    int minor;  /* N of its /dev/nvidiaN, as NVML says (see minors) */
} al_gpu_info_t;

typedef struct al_platform_info {
    char hostname[256];
    int64_t cpu_milli;
    int64_t mem_bytes;
    bool emulated; /* the GPUs are declared, not real */
    /* Whether every GPU's minor is known; where not, GPU i is taken to
     * be /dev/nvidia{i}.  NVML's order (PCI bus order) and the minors
     * the driver hands out may differ: device rules go by the minor. */
    bool minors;
    int ngpus;
    al_gpu_info_t gpus[AL_PLATFORM_MAX_GPUS];
    struct al__nvml *nvml; /* NVML kept open for samples, or NULL */
} al_platform_info_t;

/* A GPU's telemetry; -1 where the driver does not say. */
typedef struct al_gpu_sample {
    int util_pct;     /* time a kernel ran, last sample period */
    int mem_util_pct; /* time memory was read or written */
    int temp_c;
    int64_t mem_used; /* bytes */
    int64_t power_mw;
} al_gpu_sample_t;

/* A GPU's fatal condition, as a health check found it. */
typedef struct al_gpu_fault {
    int index;
    char reason[160]; /* "XID 79 (fallen off the bus)" */
} al_gpu_fault_t;

/* Looks at the GPUs' health (NVML: critical XID events since the last
 * look, double-bit ECC errors, retired pages or remapped rows pending, a
 * GPU off the bus, temperature past its slowdown threshold, power past
 * its enforced limit): up to max faults into out, one per GPU; returns
 * how many (0 for emulated GPUs and without NVML). */
int al_platform_health(al_platform_info_t *info, al_gpu_fault_t *out, int max);
/* GPU i was dealt with: what it counted so far (ECC errors) is no news. */
void al_platform_health_reset(al_platform_info_t *info, int i);

/* Fills *info from the machine: hostname, online CPUs, physical memory and
 * the GPUs NVML reports (none without it).  Returns 0 or AL_EIO. */
int al_platform_probe(al_platform_info_t *info);

/* Samples GPU i's telemetry: 0, or AL_ENOTSUP for emulated GPUs (and
 * without NVML), *s all -1 then. */
int al_platform_sample(al_platform_info_t *info, int i, al_gpu_sample_t *s);

/* Makes this process a child subreaper: orphaned descendants are
 * reparented to it (Linux).  0 or AL_EIO. */
int al_platform_subreaper(void);

/* N of GPU i's device node /dev/nvidiaN: its minor where NVML gave every
 * GPU's, else i. */
int al_platform_gpu_minor(const al_platform_info_t *info, int i);
/* The GPUs of mask (bit i: GPU i) as device minors (bit N: nvidiaN). */
uint64_t al_platform_minor_mask(const al_platform_info_t *info, uint64_t mask);
/* One past the highest of the GPUs' minors (at least ngpus): how many
 * nvidiaN nodes a device rule looks at. */
int al_platform_minor_span(const al_platform_info_t *info);

/* Releases what al_platform_probe() kept open (NVML). */
void al_platform_close(al_platform_info_t *info);

/* Replaces the GPUs of *info by emulated ones described by spec,
 * "NxMODEL[/nvlK]" where MODEL may end in "-<size>GB" giving each device's
 * memory (default 16 GB): "8xH100-80GB".  Devices 0..N/2-1 sit on NUMA
 * node 0, the rest on 1; all share NVLink domain 0, or with "/nvlK"
 * device i is in domain i / K ("8xH100-80GB/nvl4": two domains of 4).
 * node names the UUIDs.  Returns 0, or AL_EINVAL with a message in *cause
 * (caller frees) and *info untouched. */
int al_platform_fake_gpus(al_platform_info_t *info, const char *spec,
                          const char *node, char **cause);

/* Emulated GPUs' telemetry, for tests: GPU i's utilisation is the
 * percentage written in STATE/gpu-util/i (state_dir: the agent's state
 * directory), the rest unknown (-1).  al_platform_fake_sample() returns 0,
 * or AL_ENOENT when there is no such file or it holds no percentage;
 * al_platform_fake_util_on() whether STATE/gpu-util exists. */
int al_platform_fake_sample(const char *state_dir, int i, al_gpu_sample_t *s);
bool al_platform_fake_util_on(const char *state_dir);
/* Reads the text of such a file (n bytes, not NUL-terminated): a whole
 * percentage 0..100, blanks around it allowed.  0 with *pct set, or
 * AL_EINVAL with *pct untouched. */
int al_platform_util_parse(const char *text, size_t n, int *pct);

/* 1 when pid runs, 0 when it has ended but not been reaped (a zombie),
 * -1 when there is no such process; *start gets its start time (clock
 * ticks since boot).  With the pid, the start time names a process for
 * good: a restarted agent tells its tasks from unrelated processes that
 * reuse their pids. */
int al_platform_proc_state(long pid, int64_t *start);
/* The processes whose parent is pid, at most max of them, into out;
 * returns how many. */
int al_platform_children(long pid, long *out, int max);

#endif /* AL_PLATFORM_H */
