/*
 * nvml.c -- GPUs through NVML, loaded with dlopen() so that allot has no
 * build-time dependency on NVIDIA's driver.  Only the entry points used
 * here are declared, with the types of nvml.h.  The library is
 * libnvidia-ml.so.1, or the path in ALLOT_NVML_LIB (tests point it at a
 * fake NVML built under tests/).
 *
 * At probe: count, UUID, model, memory, NUMA node and NVLink topology (the
 * link graph: GPUs joined by active links, directly or through NVSwitches,
 * form one NVLink domain).  The library stays loaded afterwards for
 * telemetry samples (utilisation, memory used, temperature, power) and
 * health checks (al__nvml_health(): critical XID events, double-bit ECC
 * errors, retired pages or remapped rows pending, a GPU off the bus,
 * temperature past the slowdown threshold, power past the enforced limit).
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "core/error.h"
#include "log.h"
#include "platform.h"
#include "xmalloc.h"

#define NVML_MAX_LINKS 18 /* NVML_NVLINK_MAX_LINKS */

typedef int nvml_return_t; /* nvmlReturn_t: 0 is NVML_SUCCESS */
typedef struct nvml_device *nvml_device_t;
typedef struct nvml_memory {
    unsigned long long total, free, used;
} nvml_memory_t;
typedef struct nvml_utilization {
    unsigned int gpu, memory; /* percent */
} nvml_utilization_t;
typedef struct nvml_event_set *nvml_event_set_t;
typedef struct nvml_event_data { /* nvmlEventData_t */
    nvml_device_t device;
    unsigned long long type, data;
    unsigned int gpu_instance, compute_instance;
} nvml_event_data_t;
#define NVML_EVENT_XID 0x8ULL     /* nvmlEventTypeXidCriticalError */
#define NVML_ERROR_GPU_IS_LOST 15 /* the GPU fell off the bus */
#define NVML_ERROR_TIMEOUT 10
typedef struct nvml_pci_info { /* nvmlPciInfo_t */
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info_t;

struct nvml {
    nvml_return_t (*init)(void);
    nvml_return_t (*shutdown)(void);
    nvml_return_t (*count)(unsigned int *);
    nvml_return_t (*handle)(unsigned int, nvml_device_t *);
    nvml_return_t (*name)(nvml_device_t, char *, unsigned int);
    nvml_return_t (*uuid)(nvml_device_t, char *, unsigned int);
    nvml_return_t (*memory)(nvml_device_t, nvml_memory_t *);
    /* Optional: absent from older drivers (or fakes). */
    nvml_return_t (*numa)(nvml_device_t, unsigned int *);
    nvml_return_t (*nvlink)(nvml_device_t, unsigned int, int *);
    nvml_return_t (*pci)(nvml_device_t, nvml_pci_info_t *);
    nvml_return_t (*minor)(nvml_device_t, unsigned int *);
    nvml_return_t (*remote_pci)(nvml_device_t, unsigned int, nvml_pci_info_t *);
    nvml_return_t (*remote_type)(nvml_device_t, unsigned int, int *);
    nvml_return_t (*util)(nvml_device_t, nvml_utilization_t *);
    nvml_return_t (*temp)(nvml_device_t, int, unsigned int *);
    nvml_return_t (*power)(nvml_device_t, unsigned int *);
    /* Health (optional too). */
    nvml_return_t (*ecc)(nvml_device_t, int, int, unsigned long long *);
    nvml_return_t (*pages_pending)(nvml_device_t, int *);
    nvml_return_t (*remapped)(nvml_device_t, unsigned int *, unsigned int *,
                              unsigned int *, unsigned int *);
    nvml_return_t (*temp_threshold)(nvml_device_t, int, unsigned int *);
    nvml_return_t (*power_limit)(nvml_device_t, unsigned int *);
    nvml_return_t (*event_set)(nvml_event_set_t *);
    nvml_return_t (*register_events)(nvml_device_t, unsigned long long,
                                     nvml_event_set_t);
    nvml_return_t (*event_wait)(nvml_event_set_t, nvml_event_data_t *,
                                unsigned int);
    nvml_return_t (*event_free)(nvml_event_set_t);
};

/* What stays open after the probe, for samples. */
struct al__nvml {
    void *lib;
    struct nvml f;
    int n;
    nvml_device_t dev[AL_PLATFORM_MAX_GPUS]; /* by the agent's GPU index */
    /* XID events of every GPU (NULL: not supported), and each GPU's
     * double-bit ECC count that is not news (0 until a reset). */
    nvml_event_set_t events;
    unsigned long long ecc_base[AL_PLATFORM_MAX_GPUS];
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
    { "nvmlDeviceGetPciInfo_v3", offsetof(struct nvml, pci), 0 },
    { "nvmlDeviceGetMinorNumber", offsetof(struct nvml, minor), 0 },
    { "nvmlDeviceGetNvLinkRemotePciInfo_v2", offsetof(struct nvml, remote_pci),
      0 },
    { "nvmlDeviceGetNvLinkRemoteDeviceType", offsetof(struct nvml, remote_type),
      0 },
    { "nvmlDeviceGetUtilizationRates", offsetof(struct nvml, util), 0 },
    { "nvmlDeviceGetTemperature", offsetof(struct nvml, temp), 0 },
    { "nvmlDeviceGetPowerUsage", offsetof(struct nvml, power), 0 },
    { "nvmlDeviceGetTotalEccErrors", offsetof(struct nvml, ecc), 0 },
    { "nvmlDeviceGetRetiredPagesPendingStatus",
      offsetof(struct nvml, pages_pending), 0 },
    { "nvmlDeviceGetRemappedRows", offsetof(struct nvml, remapped), 0 },
    { "nvmlDeviceGetTemperatureThreshold",
      offsetof(struct nvml, temp_threshold), 0 },
    { "nvmlDeviceGetEnforcedPowerLimit", offsetof(struct nvml, power_limit),
      0 },
    { "nvmlEventSetCreate", offsetof(struct nvml, event_set), 0 },
    { "nvmlDeviceRegisterEvents", offsetof(struct nvml, register_events), 0 },
    { "nvmlEventSetWait_v2", offsetof(struct nvml, event_wait), 0 },
    { "nvmlEventSetFree", offsetof(struct nvml, event_free), 0 },
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

/* Union-find over the GPUs, plus one extra element for "an NVSwitch". */
static int
find(int *up, int i)
{
    while (up[i] != i) {
        up[i] = up[up[i]];
        i = up[i];
    }
    return i;
}

static void
join(int *up, int a, int b)
{
    a = find(up, a);
    b = find(up, b);
    if (a != b)
        up[a < b ? b : a] = a < b ? a : b;
}

/* The GPU among ours at PCI address p, or -1 (an NVSwitch, say). */
static int
gpu_at(const nvml_pci_info_t *pci, int n, const nvml_pci_info_t *p)
{
    for (int i = 0; i < n; i++)
        if (pci[i].domain == p->domain && pci[i].bus == p->bus &&
            pci[i].device == p->device)
            return i;
    return -1;
}

/*
 * NVLink domains from the link graph: GPUs joined by an active link, or
 * both linked to NVSwitches (one fabric per node), share a domain; a GPU
 * without active links has none (-1).  Domains are numbered from 0 by
 * their lowest GPU.  Without the PCI entry points, every GPU with an
 * active link 0 is put in domain 0 (NVSwitch systems).
 */
static void
nvlink_domains(const struct al__nvml *nv, al_platform_info_t *info)
{
    const struct nvml *f = &nv->f;
    int n = nv->n, sw = n; /* element n stands for the switch fabric */
    int up[AL_PLATFORM_MAX_GPUS + 1];
    bool linked[AL_PLATFORM_MAX_GPUS] = { false };
    nvml_pci_info_t pci[AL_PLATFORM_MAX_GPUS];
    bool graph = f->pci != NULL && f->remote_pci != NULL;
    for (int i = 0; i <= n; i++)
        up[i] = i;
    for (int i = 0; graph && i < n; i++)
        if (f->pci(nv->dev[i], &pci[i]) != 0)
            graph = false;
    for (int i = 0; i < n && f->nvlink != NULL; i++) {
        for (unsigned int l = 0; l < (graph ? NVML_MAX_LINKS : 1u); l++) {
            int active = 0;
            if (f->nvlink(nv->dev[i], l, &active) != 0 || !active)
                continue;
            nvml_pci_info_t r;
            if (!graph) {
                join(up, i, sw);
                linked[i] = true;
            } else if (f->remote_pci(nv->dev[i], l, &r) == 0) {
                int peer = gpu_at(pci, n, &r), type = -1;
                /* Not one of ours: an NVSwitch joins the fabric; anything
                 * else (a CPU's NVLink, a GPU left out) joins nothing.
                 * Without the type (older drivers), assume a switch. */
                if (peer >= 0) {
                    join(up, i, peer);
                    linked[i] = linked[peer] = true;
                } else if (f->remote_type == NULL ||
                           (f->remote_type(nv->dev[i], l, &type) == 0 &&
                            type == 2 /* NVML_NVLINK_DEVICE_TYPE_SWITCH */)) {
                    join(up, i, sw);
                    linked[i] = true;
                }
            }
        }
    }
    int label[AL_PLATFORM_MAX_GPUS + 1];
    for (int i = 0; i <= n; i++)
        label[i] = -1;
    int next = 0;
    for (int i = 0; i < n; i++) {
        if (!linked[i]) {
            info->gpus[i].nvlink = -1;
            continue;
        }
        int r = find(up, i);
        if (label[r] < 0)
            label[r] = next++;
        info->gpus[i].nvlink = label[r];
    }
}

int
al__nvml_probe(al_platform_info_t *info)
{
    const char *path = getenv("ALLOT_NVML_LIB");
    void *lib = dlopen(path ? path : "libnvidia-ml.so.1", RTLD_NOW);
    if (lib == NULL)
        return 0; /* no driver: no GPUs */
    struct al__nvml *nv = al_xcalloc(1, sizeof *nv);
    struct nvml *f = &nv->f;
    nv->lib = lib;
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        void *sym = dlsym(lib, symbols[i].name);
        if (sym == NULL && symbols[i].required) {
            al_warn("NVML: %s lacks %s; GPUs not used", path ? path : "NVML",
                    symbols[i].name);
            dlclose(lib);
            free(nv);
            return 0;
        }
        /* POSIX guarantees function pointers survive this round trip. */
        memcpy((char *)f + symbols[i].offset, &sym, sizeof sym);
    }
    unsigned int n = 0;
    if (f->init() != 0 || f->count(&n) != 0) {
        al_warn("NVML: initialisation failed; GPUs not used");
        dlclose(lib);
        free(nv);
        return 0;
    }
    if (n > AL_PLATFORM_MAX_GPUS)
        n = AL_PLATFORM_MAX_GPUS;
    int found = 0;
    bool minors = f->minor != NULL;
    for (unsigned int i = 0; i < n; i++) {
        nvml_device_t d;
        char name[96];
        nvml_memory_t mem;
        al_gpu_info_t *g = &info->gpus[found];
        if (f->handle(i, &d) != 0 || f->name(d, name, sizeof name) != 0 ||
            f->uuid(d, g->uuid, sizeof g->uuid) != 0 || f->memory(d, &mem) != 0)
            continue;
        short_model(name, g->model, sizeof g->model);
        g->mem_bytes = (int64_t)mem.total;
        unsigned int numa;
        g->numa = f->numa != NULL && f->numa(d, &numa) == 0 ? (int)numa : -1;
        unsigned int minor;
        g->minor = -1;
        if (minors && f->minor(d, &minor) == 0 && minor < 64)
            g->minor = (int)minor;
        else
            minors = false;
        nv->dev[found++] = d;
    }
    nv->n = found;
    info->ngpus = found;
    info->minors = minors && found > 0;
    nvlink_domains(nv, info);
    if (found == 0) {
        f->shutdown();
        dlclose(lib);
        free(nv);
        return 0;
    }
    info->nvml = nv;
    return found;
}

int
al__nvml_sample(struct al__nvml *nv, int i, al_gpu_sample_t *s)
{
    s->util_pct = s->mem_util_pct = s->temp_c = -1;
    s->mem_used = s->power_mw = -1;
    if (nv == NULL || i < 0 || i >= nv->n)
        return AL_ENOTSUP;
    const struct nvml *f = &nv->f;
    nvml_device_t d = nv->dev[i];
    nvml_utilization_t u;
    nvml_memory_t m;
    unsigned int v;
    if (f->util != NULL && f->util(d, &u) == 0) {
        s->util_pct = (int)u.gpu;
        s->mem_util_pct = (int)u.memory;
    }
    if (f->memory(d, &m) == 0)
        s->mem_used = (int64_t)m.used;
    if (f->temp != NULL && f->temp(d, 0 /* NVML_TEMPERATURE_GPU */, &v) == 0)
        s->temp_c = (int)v;
    if (f->power != NULL && f->power(d, &v) == 0)
        s->power_mw = (int64_t)v;
    return 0;
}

/* The XIDs that mean the GPU cannot be trusted with work until someone
 * looks (NVIDIA's list of critical ones, as DCGM and Slurm's health
 * checks take them). */
static const struct {
    unsigned long long xid;
    const char *what;
} critical_xids[] = {
    { 48, "double-bit ECC error" },
    { 63, "ECC page retirement or row remapping" },
    { 64, "ECC page retirement or row remapping failure" },
    { 74, "NVLink error" },
    { 79, "fallen off the bus" },
    { 92, "high single-bit ECC error rate" },
    { 94, "contained ECC error" },
    { 95, "uncontained ECC error" },
    { 119, "GSP RPC timeout" },
    { 120, "GSP error" },
};

/* Records fault text for GPU i in out[*n] unless the array is full. */
static void
fault(al_gpu_fault_t *out, int max, int *n, int i, const char *text)
{
    for (int k = 0; k < *n; k++)
        if (out[k].index == i)
            return; /* one reason per GPU per look */
    if (*n >= max)
        return;
    out[*n].index = i;
    snprintf(out[*n].reason, sizeof out[*n].reason, "%s", text);
    (*n)++;
}

static void
register_events(struct al__nvml *nv)
{
    const struct nvml *f = &nv->f;
    if (nv->events != NULL || f->event_set == NULL ||
        f->register_events == NULL || f->event_wait == NULL ||
        f->event_set(&nv->events) != 0)
        return;
    int on = 0;
    for (int i = 0; i < nv->n; i++)
        on += f->register_events(nv->dev[i], NVML_EVENT_XID, nv->events) == 0;
    if (on == 0) {
        if (f->event_free != NULL)
            f->event_free(nv->events);
        nv->events = NULL;
    }
}

int
al__nvml_health(struct al__nvml *nv, al_gpu_fault_t *out, int max)
{
    if (nv == NULL)
        return 0;
    const struct nvml *f = &nv->f;
    int n = 0;
    char text[160];
    register_events(nv);
    /* The XID events that came since the last look, without waiting. */
    nvml_event_data_t ev;
    for (int k = 0; nv->events != NULL && k < 1024 &&
                    f->event_wait(nv->events, &ev, 0) == 0;
         k++) {
        int gpu = -1;
        for (int i = 0; i < nv->n; i++)
            if (nv->dev[i] == ev.device)
                gpu = i;
        for (size_t x = 0; gpu >= 0 && (ev.type & NVML_EVENT_XID) &&
                           x < sizeof critical_xids / sizeof critical_xids[0];
             x++)
            if (critical_xids[x].xid == ev.data) {
                snprintf(text, sizeof text, "XID %llu (%s)", ev.data,
                         critical_xids[x].what);
                fault(out, max, &n, gpu, text);
            }
    }
    for (int i = 0; i < nv->n; i++) {
        nvml_device_t d = nv->dev[i];
        unsigned long long ecc;
        unsigned int v, lim, corr, unc, pending, failed;
        int pend;
        nvml_memory_t m;
        if (f->memory(d, &m) == NVML_ERROR_GPU_IS_LOST) {
            fault(out, max, &n, i, "fallen off the bus (GPU is lost)");
            continue;
        }
        /* NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC */
        if (f->ecc != NULL && f->ecc(d, 1, 0, &ecc) == 0 &&
            ecc > nv->ecc_base[i]) {
            snprintf(text, sizeof text, "%llu double-bit ECC error(s)", ecc);
            fault(out, max, &n, i, text);
        }
        if (f->pages_pending != NULL && f->pages_pending(d, &pend) == 0 &&
            pend != 0)
            fault(out, max, &n, i, "retired pages pending (reset the GPU)");
        if (f->remapped != NULL &&
            f->remapped(d, &corr, &unc, &pending, &failed) == 0 &&
            (pending != 0 || failed != 0))
            fault(out, max, &n, i,
                  failed ? "row remapping failed"
                         : "remapped rows pending (reset the GPU)");
        /* NVML_TEMPERATURE_GPU; NVML_TEMPERATURE_THRESHOLD_SLOWDOWN */
        if (f->temp != NULL && f->temp_threshold != NULL &&
            f->temp(d, 0, &v) == 0 && f->temp_threshold(d, 1, &lim) == 0 &&
            lim > 0 && v >= lim) {
            snprintf(text, sizeof text,
                     "temperature %u C at or past its slowdown threshold %u C",
                     v, lim);
            fault(out, max, &n, i, text);
        }
        if (f->power != NULL && f->power_limit != NULL &&
            f->power(d, &v) == 0 && f->power_limit(d, &lim) == 0 && lim > 0 &&
            v > lim) {
            snprintf(text, sizeof text,
                     "power %u W past its enforced limit %u W", v / 1000,
                     lim / 1000);
            fault(out, max, &n, i, text);
        }
    }
    return n;
}

void
al__nvml_health_reset(struct al__nvml *nv, int i)
{
    unsigned long long ecc;
    if (nv != NULL && i >= 0 && i < nv->n && nv->f.ecc != NULL &&
        nv->f.ecc(nv->dev[i], 1, 0, &ecc) == 0)
        nv->ecc_base[i] = ecc; /* the errors the admin dealt with */
}

void
al__nvml_close(struct al__nvml *nv)
{
    if (nv == NULL)
        return;
    if (nv->events != NULL && nv->f.event_free != NULL)
        nv->f.event_free(nv->events);
    nv->f.shutdown();
    dlclose(nv->lib);
    free(nv);
}
