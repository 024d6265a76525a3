/*
 * nvml.c -- GPU discovery through NVML, loaded with dlopen() so that allot
 * has no build-time dependency on NVIDIA's driver.  Only the handful of
 * entry points used here are declared, with the types of nvml.h.  The
 * library is libnvidia-ml.so.1, or the path in ALLOT_NVML_LIB (tests point
 * it at a fake NVML built under tests/).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "log.h"
#include "platform.h"

typedef int nvml_return_t; /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device *nvml_device_t;
typedef struct nvml_memory {
    unsigned long long total, free, used;
} nvml_memory_t;

struct nvml {
    nvml_return_t (*init)(void);
    nvml_return_t (*shutdown)(void);
    nvml_return_t (*count)(unsigned int *);
    nvml_return_t (*handle)(unsigned int, nvml_device_t *);
    nvml_return_t (*name)(nvml_device_t, char *, unsigned int);
    nvml_return_t (*uuid)(nvml_device_t, char *, unsigned int);
    nvml_return_t (*memory)(nvml_device_t, nvml_memory_t *);
    /* Optional: absent from older drivers. */
    nvml_return_t (*numa)(nvml_device_t, unsigned int *);
    nvml_return_t (*nvlink)(nvml_device_t, unsigned int, int *);
};

/* The symbols, required ones first; `offset` is where each goes. */
static const struct {
    const char *name;
    size_t offset;
    int required;
} symbols[] = {
    { "nvmlInit_v2", offsetof(struct nvml, init), 1 },
    { "nvmlShutdown", offsetof(struct nvml, shutdown), 1 },
    { "nvmlDeviceGetCount_v2", offsetof(struct nvml, count), 1 },
    { "nvmlDeviceGetHandleByIndex_v2", offsetof(struct nvml, handle), 1 },
    { "nvmlDeviceGetName", offsetof(struct nvml, name), 1 },
    { "nvmlDeviceGetUUID", offsetof(struct nvml, uuid), 1 },
    { "nvmlDeviceGetMemoryInfo", offsetof(struct nvml, memory), 1 },
    { "nvmlDeviceGetNumaNodeId", offsetof(struct nvml, numa), 0 },
    { "nvmlDeviceGetNvLinkState", offsetof(struct nvml, nvlink), 0 },
};

/* Model names as NVML gives them ("NVIDIA H100 80GB HBM3") become the
 * short form used in queues and requests ("H100-80GB"): the vendor word
 * dropped, spaces turned to '-', and at most the first two words kept. */
static void
short_model(const char *in, char *out, size_t len)
{
    if (strncmp(in, "NVIDIA ", 7) == 0)
        in += 7;
    size_t o = 0;
    int words = 1;
    for (const char *p = in; *p != '\0' && o + 1 < len; p++) {
        if (*p == ' ') {
            if (++words > 2)
                break;
            out[o++] = '-';
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

int
al__nvml_probe(al_platform_info_t *info)
{
    const char *path = getenv("ALLOT_NVML_LIB");
    void *lib = dlopen(path ? path : "libnvidia-ml.so.1", RTLD_NOW);
    if (lib == NULL)
        return 0; /* no driver: no GPUs */
    struct nvml f;
    memset(&f, 0, sizeof f);
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *sym = dlsym(lib, symbols[i].name);
        if (sym == NULL && symbols[i].required) {
            al_warn("NVML: %s lacks %s; GPUs not used", path ? path : "NVML",
                    symbols[i].name);
            dlclose(lib);
            return 0;
        }
        /* POSIX guarantees function pointers survive this round trip. */
        memcpy((char *)&f + symbols[i].offset, &sym, sizeof sym);
    }
    unsigned int n = 0;
    if (f.init() != 0 || f.count(&n) != 0) {
        al_warn("NVML: initialisation failed; GPUs not used");
        dlclose(lib);
        return 0;
    }
    if (n > AL_PLATFORM_MAX_GPUS)
        n = AL_PLATFORM_MAX_GPUS;
    int found = 0;
    for (unsigned int i = 0; i < n; i++) {
        nvml_device_t d;
        char name[96];
        nvml_memory_t mem;
        al_gpu_info_t *g = &info->gpus[found];
        if (f.handle(i, &d) != 0 || f.name(d, name, sizeof name) != 0 ||
            f.uuid(d, g->uuid, sizeof g->uuid) != 0 || f.memory(d, &mem) != 0)
            continue;
        short_model(name, g->model, sizeof g->model);
        g->mem_bytes = (int64_t)mem.total;
        unsigned int numa;
        g->numa = f.numa != NULL && f.numa(d, &numa) == 0 ? (int)numa : -1;
        int active = 0;
        /* One NVLink domain per node: devices with an active link share
         * it (NVSwitch systems); finer topology needs the link graph. */
        g->nvlink =
            f.nvlink != NULL && f.nvlink(d, 0, &active) == 0 && active ? 0 : -1;
        found++;
    }
    info->ngpus = found;
    f.shutdown();
    dlclose(lib);
    return found;
}
