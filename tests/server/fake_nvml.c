/*
 * fake_nvml.c -- a stand-in for libnvidia-ml.so.1 so that CI exercises the
 * agent's NVML code path (src/agent/nvml.c) without a GPU.  It reports
 * $FAKE_NVML_GPUS devices (default 2) named "NVIDIA A100-SXM4 40GB" with
 * 40 GiB each; $FAKE_NVML_FAIL makes nvmlInit_v2 fail.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nvml_device *nvml_device_t;
typedef struct nvml_memory {
    unsigned long long total, free, used;
} nvml_memory_t;

/* The entry points, as the agent looks them up by name. */
int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvml_device_t *d);
int nvmlDeviceGetName(nvml_device_t d, char *buf, unsigned int len);
int nvmlDeviceGetUUID(nvml_device_t d, char *buf, unsigned int len);
int nvmlDeviceGetMemoryInfo(nvml_device_t d, nvml_memory_t *m);
int nvmlDeviceGetNumaNodeId(nvml_device_t d, unsigned int *node);
int nvmlDeviceGetNvLinkState(nvml_device_t d, unsigned int link, int *on);

enum { OK = 0, ERR_INVALID = 2, ERR_UNINITIALIZED = 1 };

static int initialised;

static unsigned int
count(void)
{
    const char *s = getenv("FAKE_NVML_GPUS");
    return s != NULL ? (unsigned int)strtoul(s, NULL, 10) : 2;
}

/* A device handle is its index plus one, never dereferenced. */
static long
index_of(nvml_device_t d)
{
    long i = (long)(size_t)d - 1;
    return i >= 0 && (unsigned long)i < count() ? i : -1;
}

int
nvmlInit_v2(void)
{
    if (getenv("FAKE_NVML_FAIL") != NULL)
        return ERR_UNINITIALIZED;
    initialised = 1;
    return OK;
}

int
nvmlShutdown(void)
{
    initialised = 0;
    return OK;
}

int
nvmlDeviceGetCount_v2(unsigned int *n)
{
    if (!initialised)
        return ERR_UNINITIALIZED;
    *n = count();
    return OK;
}

int
nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvml_device_t *d)
{
    if (!initialised || i >= count())
        return ERR_INVALID;
    *d = (nvml_device_t)(size_t)(i + 1);
    return OK;
}

int
nvmlDeviceGetName(nvml_device_t d, char *buf, unsigned int len)
{
    if (index_of(d) < 0)
        return ERR_INVALID;
    snprintf(buf, len, "NVIDIA A100-SXM4 40GB");
    return OK;
}

int
nvmlDeviceGetUUID(nvml_device_t d, char *buf, unsigned int len)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    snprintf(buf, len, "GPU-fa4e0000-0000-0000-0000-%012ld", i);
    return OK;
}

int
nvmlDeviceGetMemoryInfo(nvml_device_t d, nvml_memory_t *m)
{
    if (index_of(d) < 0)
        return ERR_INVALID;
    m->total = 40ULL << 30;
    m->free = m->total;
    m->used = 0;
    return OK;
}

int
nvmlDeviceGetNumaNodeId(nvml_device_t d, unsigned int *node)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    *node = (unsigned int)(i / 4);
    return OK;
}

int
nvmlDeviceGetNvLinkState(nvml_device_t d, unsigned int link, int *on)
{
    if (index_of(d) < 0)
        return ERR_INVALID;
    *on = 1;
    return OK;
}
