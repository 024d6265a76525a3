/*
 * fake_nvml.c -- a stand-in for libnvidia-ml.so.1 so that CI exercises the
 * agent's NVML code path (src/agent/nvml.c) without a GPU.  It reports
 * $FAKE_NVML_GPUS devices (default 2) named "NVIDIA A100-SXM4 40GB" with
 * 40 GiB each, 4 to a NUMA node; $FAKE_NVML_FAIL makes nvmlInit_v2 fail.
 * NVLink ($FAKE_NVML_NVLINK): "switch" (default: link 0 of every device
 * goes to an NVSwitch), "pairs" (links 0 and 1 join devices 2k and 2k+1),
 * "cpu" (link 0 of every device goes to a CPU: no GPU domain), "none".
 * Telemetry: device i is 10*i % 100 busy, uses i GiB, is at
 * 30+i degrees and draws 100+i watts.
 * Health: $FAKE_NVML_HEALTH names a file, read at every call, of lines
 * "GPU WHAT [VALUE]": "xid N" (an XID event, delivered once), "ecc N"
 * (double-bit ECC errors so far), "pending" (retired pages pending),
 * "remap" (remapped rows pending), "lost" (off the bus: calls fail with
 * GPU_IS_LOST), "temp C" (temperature; the slowdown threshold is 90),
 * "power W" (power; the enforced limit is 400 W).
 * Device minors ($FAKE_NVML_MINORS, "1,0,..."): device i's /dev/nvidiaN
 * is the list's i-th number (default N = i).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nvml_device *nvml_device_t;
typedef struct nvml_memory {
    unsigned long long total, free, used;
} nvml_memory_t;
typedef struct nvml_utilization {
    unsigned int gpu, memory;
} nvml_utilization_t;
typedef struct nvml_pci_info {
    char bus_id_legacy[16];
    unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci_info_t;

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
int nvmlDeviceGetPciInfo_v3(nvml_device_t d, nvml_pci_info_t *p);
int nvmlDeviceGetMinorNumber(nvml_device_t d, unsigned int *minor);
int nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml_device_t d, unsigned int link,
                                        nvml_pci_info_t *p);
int nvmlDeviceGetNvLinkRemoteDeviceType(nvml_device_t d, unsigned int link,
                                        int *type);
int nvmlDeviceGetUtilizationRates(nvml_device_t d, nvml_utilization_t *u);
int nvmlDeviceGetTemperature(nvml_device_t d, int sensor, unsigned int *t);
int nvmlDeviceGetPowerUsage(nvml_device_t d, unsigned int *mw);

enum {
    OK = 0,
    ERR_INVALID = 2,
    ERR_UNINITIALIZED = 1,
    ERR_TIMEOUT = 10,
    ERR_GPU_IS_LOST = 15
};

/* The value of "GPU WHAT VALUE" in $FAKE_NVML_HEALTH (1 for a line with
 * no value), or -1 when there is no such line; nth: the nth such line
 * (for XIDs, each an event). */
static long
health(long gpu, const char *what, int nth)
{
    const char *path = getenv("FAKE_NVML_HEALTH");
    FILE *f = path != NULL ? fopen(path, "r") : NULL;
    char line[256], w[64];
    long v = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        long g, val = 1;
        int n = sscanf(line, "%ld %63s %ld", &g, w, &val);
        if (n >= 2 && g == gpu && strcmp(w, what) == 0 && nth-- == 0) {
            v = val;
            break;
        }
    }
    if (f != NULL)
        fclose(f);
    return v;
}

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
nvmlDeviceGetMinorNumber(nvml_device_t d, unsigned int *minor)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    const char *s = getenv("FAKE_NVML_MINORS");
    *minor = (unsigned int)i;
    for (long k = 0; s != NULL && *s != '\0'; k++) {
        char *end;
        unsigned long n = strtoul(s, &end, 10);
        if (end == s)
            break;
        if (k == i)
            *minor = (unsigned int)n;
        s = *end == ',' ? end + 1 : end;
    }
    return OK;
}

int
nvmlDeviceGetMemoryInfo(nvml_device_t d, nvml_memory_t *m)
{
    if (index_of(d) < 0)
        return ERR_INVALID;
    if (health(index_of(d), "lost", 0) > 0)
        return ERR_GPU_IS_LOST;
    m->total = 40ULL << 30;
    m->used = (unsigned long long)index_of(d) << 30;
    m->free = m->total - m->used;
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

static const char *
topology(void)
{
    const char *t = getenv("FAKE_NVML_NVLINK");
    return t != NULL ? t : "switch";
}

int
nvmlDeviceGetNvLinkState(nvml_device_t d, unsigned int link, int *on)
{
    long i = index_of(d);
    if (i < 0 || link >= 18)
        return ERR_INVALID;
    if (strcmp(topology(), "pairs") == 0)
        *on = link < 2 && (i ^ 1) < (long)count();
    else
        *on = (strcmp(topology(), "switch") == 0 ||
               strcmp(topology(), "cpu") == 0) &&
              link == 0;
    return OK;
}

static void
pci_of(long bus, nvml_pci_info_t *p)
{
    memset(p, 0, sizeof *p);
    p->bus = (unsigned int)bus;
    snprintf(p->bus_id, sizeof p->bus_id, "00000000:%02lX:00.0", bus);
}

int
nvmlDeviceGetPciInfo_v3(nvml_device_t d, nvml_pci_info_t *p)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    pci_of(0x10 + i, p);
    return OK;
}

int
nvmlDeviceGetNvLinkRemotePciInfo_v2(nvml_device_t d, unsigned int link,
                                    nvml_pci_info_t *p)
{
    long i = index_of(d);
    int on = 0;
    if (i < 0 || nvmlDeviceGetNvLinkState(d, link, &on) != OK || !on)
        return ERR_INVALID;
    /* A peer GPU, or the NVSwitch at bus 0xF0. */
    pci_of(strcmp(topology(), "pairs") == 0 ? 0x10 + (i ^ 1) : 0xF0, p);
    return OK;
}

int
nvmlDeviceGetNvLinkRemoteDeviceType(nvml_device_t d, unsigned int link,
                                    int *type)
{
    int on = 0;
    if (nvmlDeviceGetNvLinkState(d, link, &on) != OK || !on)
        return ERR_INVALID;
    /* "cpu": link 0 of each device goes to a CPU (IBM NPU, type 1). */
    *type = strcmp(topology(), "pairs") == 0 ? 0
            : strcmp(topology(), "cpu") == 0 ? 1
                                             : 2;
    return OK;
}

int
nvmlDeviceGetUtilizationRates(nvml_device_t d, nvml_utilization_t *u)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    u->gpu = (unsigned int)(10 * i % 100);
    u->memory = (unsigned int)(5 * i % 100);
    return OK;
}

int
nvmlDeviceGetTemperature(nvml_device_t d, int sensor, unsigned int *t)
{
    long i = index_of(d);
    if (i < 0 || sensor != 0)
        return ERR_INVALID;
    long h = health(i, "temp", 0);
    *t = (unsigned int)(h >= 0 ? h : 30 + i);
    return OK;
}

int
nvmlDeviceGetPowerUsage(nvml_device_t d, unsigned int *mw)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    long h = health(i, "power", 0);
    *mw = (unsigned int)((h >= 0 ? h : 100 + i) * 1000);
    return OK;
}

typedef struct nvml_event_data {
    nvml_device_t device;
    unsigned long long type, data;
    unsigned int gpu_instance, compute_instance;
} nvml_event_data_t;

int nvmlDeviceGetTotalEccErrors(nvml_device_t d, int type, int counter,
                                unsigned long long *n);
int nvmlDeviceGetRetiredPagesPendingStatus(nvml_device_t d, int *pending);
int nvmlDeviceGetRemappedRows(nvml_device_t d, unsigned int *corr,
                              unsigned int *unc, unsigned int *pending,
                              unsigned int *failed);
int nvmlDeviceGetTemperatureThreshold(nvml_device_t d, int type,
                                      unsigned int *t);
int nvmlDeviceGetEnforcedPowerLimit(nvml_device_t d, unsigned int *mw);
int nvmlEventSetCreate(void **set);
int nvmlDeviceRegisterEvents(nvml_device_t d, unsigned long long types,
                             void *set);
int nvmlEventSetWait_v2(void *set, nvml_event_data_t *e, unsigned int ms);
int nvmlEventSetFree(void *set);

int
nvmlDeviceGetTotalEccErrors(nvml_device_t d, int type, int counter,
                            unsigned long long *n)
{
    long i = index_of(d);
    if (i < 0 || type != 1)
        return ERR_INVALID;
    (void)counter;
    long h = health(i, "ecc", 0);
    *n = h > 0 ? (unsigned long long)h : 0;
    return OK;
}

int
nvmlDeviceGetRetiredPagesPendingStatus(nvml_device_t d, int *pending)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    *pending = health(i, "pending", 0) > 0;
    return OK;
}

int
nvmlDeviceGetRemappedRows(nvml_device_t d, unsigned int *corr,
                          unsigned int *unc, unsigned int *pending,
                          unsigned int *failed)
{
    long i = index_of(d);
    if (i < 0)
        return ERR_INVALID;
    *corr = *unc = 0;
    *pending = health(i, "remap", 0) > 0;
    *failed = 0;
    return OK;
}

int
nvmlDeviceGetTemperatureThreshold(nvml_device_t d, int type, unsigned int *t)
{
    if (index_of(d) < 0)
        return ERR_INVALID;
    *t = type == 1 ? 90 : 95; /* slowdown, shutdown */
    return OK;
}

int
nvmlDeviceGetEnforcedPowerLimit(nvml_device_t d, unsigned int *mw)
{
    if (index_of(d) < 0)
        return ERR_INVALID;
    *mw = 400000;
    return OK;
}

/* One event set; the XIDs of the health file delivered once each. */
static int event_set;
static int xids_seen[64];

int
nvmlEventSetCreate(void **set)
{
    *set = &event_set;
    return OK;
}

int
nvmlDeviceRegisterEvents(nvml_device_t d, unsigned long long types, void *set)
{
    (void)types;
    return index_of(d) < 0 || set != &event_set ? ERR_INVALID : OK;
}

int
nvmlEventSetWait_v2(void *set, nvml_event_data_t *e, unsigned int ms)
{
    (void)ms;
    if (set != &event_set)
        return ERR_INVALID;
    for (long i = 0; i < (long)count() && i < 64; i++) {
        long x = health(i, "xid", xids_seen[i]);
        if (x < 0)
            continue;
        xids_seen[i]++;
        memset(e, 0, sizeof *e);
        e->device = (nvml_device_t)(size_t)(i + 1);
        e->type = 0x8; /* nvmlEventTypeXidCriticalError */
        e->data = (unsigned long long)x;
        return OK;
    }
    return ERR_TIMEOUT;
}

int
nvmlEventSetFree(void *set)
{
    (void)set;
    return OK;
}
