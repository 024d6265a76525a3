/* fake.c -- emulated GPUs for machines without any, and for tests: their
 * declaration and their utilisation, read from files a test writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "platform.h"
#include "xmalloc.h"

int
al_platform_fake_gpus(al_platform_info_t *info, const char *spec,
                      const char *node, char **cause)
{
    char *end;
    long n = strtol(spec, &end, 10);
    const char *model = *end != '\0' ? end + 1 : end; /* "8": none */
    /* "/nvlK": NVLink domains of K devices each (the last may hold
     * fewer); without it, one domain for all. */
    const char *slash = *end != '\0' ? strchr(model, '/') : NULL;
    size_t mlen = slash != NULL ? (size_t)(slash - model) : strlen(model);
    long per = n;
    bool ok = end != spec && (*end == 'x' || *end == 'X') && n >= 0 &&
              n <= AL_PLATFORM_MAX_GPUS && mlen > 0 &&
              mlen < sizeof info->gpus[0].model;
    if (ok && slash != NULL) {
        char *e;
        ok = strncmp(slash, "/nvl", 4) == 0 && slash[4] >= '1' &&
             slash[4] <= '9';
        per = ok ? strtol(slash + 4, &e, 10) : 0;
        ok = ok && *e == '\0' && per >= 1 && per <= AL_PLATFORM_MAX_GPUS;
    }
    if (!ok) {
        *cause = al_xasprintf("--fake-gpus wants COUNTxMODEL[/nvlK] (at "
                              "most %d devices; K devices per NVLink "
                              "domain), e.g. 8xH100-80GB or "
                              "8xH100-80GB/nvl4, not '%s'",
                              AL_PLATFORM_MAX_GPUS, spec);
        return AL_EINVAL;
    }
    int64_t mem = (int64_t)16 << 30;
    char name[sizeof info->gpus[0].model];
    memcpy(name, model, mlen);
    name[mlen] = '\0';
    const char *dash = strrchr(name, '-');
    if (dash != NULL) {
        char *e;
        long gb = strtol(dash + 1, &e, 10);
        /* Beyond 1 PiB a device it is no size (and would overflow). */
        if (e != dash + 1 && gb > 0 && gb <= (1L << 20) &&
            (strcmp(e, "GB") == 0 || strcmp(e, "G") == 0))
            mem = (int64_t)gb << 30;
    }
    al_platform_close(info); /* real GPUs, if any, are not used */
    info->ngpus = (int)n;
    info->emulated = true;
    info->minors = false;
    for (int i = 0; i < info->ngpus; i++) {
        al_gpu_info_t *g = &info->gpus[i];
        snprintf(g->uuid, sizeof g->uuid, "GPU-emulated-%.60s-%d", node, i);
        snprintf(g->model, sizeof g->model, "%s", name);
        g->mem_bytes = mem;
        g->numa = i < info->ngpus / 2 ? 0 : 1;
        g->nvlink = per > 0 ? (int)(i / per) : 0;
    }
    return 0;
}

bool
al_platform_fake_util_on(const char *state_dir)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/gpu-util", state_dir);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int
al_platform_util_parse(const char *text, size_t n, int *pct)
{
    size_t i = 0;
    int v = 0, digits = 0;
    while (i < n && (text[i] == ' ' || text[i] == '\t'))
        i++;
    for (; i < n && text[i] >= '0' && text[i] <= '9'; i++, digits++) {
        v = v * 10 + (text[i] - '0');
        if (v > 100)
            return AL_EINVAL;
    }
    while (i < n && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                     text[i] == '\r'))
        i++;
    if (digits == 0 || i != n)
        return AL_EINVAL;
    *pct = v;
    return 0;
}

int
al_platform_fake_sample(const char *state_dir, int i, al_gpu_sample_t *s)
{
    char path[4096], text[32];
    snprintf(path, sizeof path, "%s/gpu-util/%d", state_dir, i);
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return AL_ENOENT;
    size_t n = fread(text, 1, sizeof text, f);
    fclose(f);
    int pct;
    if (al_platform_util_parse(text, n, &pct) != 0)
        return AL_ENOENT;
    s->util_pct = pct;
    s->mem_util_pct = s->temp_c = -1;
    s->mem_used = s->power_mw = -1;
    return 0;
}
