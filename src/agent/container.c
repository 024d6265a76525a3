/*
 * container.c -- tasks in containers: a job that names an image
 * (`--image`, `#SBATCH --container-image`) runs through podman (OCI
 * images) or Apptainer (a path ending in .sif), with its GPUs passed in,
 * its working directory and the user's home mounted, the user's uid, the
 * environment of a plain task, and its output and exit code as for a
 * plain task (the runtime runs in the foreground, its output goes to the
 * task's log and its exit is the container's).
 *
 * The task's command becomes the runtime's:
 *
 *   podman run --rm --name=allot-NODE-JOB.TASK.RESTART --pull=missing
 *     --network=host --ipc=host --security-opt=no-new-privileges
 *     --user=UID:GID [--volume=CWD:CWD --workdir=CWD] [--volume=HOME:HOME]
 *     [--volume=SCRIPT:SCRIPT:ro] [--cgroup-parent=PATH] [--device ...]
 *     [--env=NAME ...] [EXTRA...] IMAGE COMMAND...
 *   apptainer exec [--nv] [--bind CWD --pwd CWD] IMAGE COMMAND...
 *
 * GPUs: through CDI (`nvidia.com/gpu=UUID`) when the node has NVIDIA's CDI
 * specs (/etc/cdi, /var/run/cdi), else the device nodes (the task's
 * nvidiaN and the control devices); emulated GPUs need nothing.  Images
 * are pulled once per node (podman's store is the cache: --pull=missing);
 * a pull or start that fails makes podman exit 125, and the agent reports
 * its last "Error:" line as the task's error, which the controller makes
 * the job's reason.  A root agent runs podman as root with --user set to
 * the submitter (the task itself then runs as that uid); Apptainer runs
 * as the submitter, as it is meant to.  A task stopped (cancelled,
 * evicted) past its grace period has its container removed by force: the
 * podman client killed leaves it running under conmon otherwise.
 *
 * May call: src/common (allocation, JSON, files).
 */
#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_int.h"
#include "fs.h"
#include "json.h"
#include "log.h"
#include "xmalloc.h"

extern char **environ;

typedef struct argv_b {
    char **v;
    size_t n, cap;
} argv_b;

static void
push(argv_b *b, char *s)
{
    if (b->n + 2 > b->cap) {
        b->cap = b->cap ? 2 * b->cap : 64;
        b->v = al_xreallocarray(b->v, b->cap, sizeof *b->v);
    }
    b->v[b->n++] = s;
    b->v[b->n] = NULL;
}

static void
pushc(argv_b *b, const char *s)
{
    push(b, al_xstrdup(s));
}

bool
al__container_sif(const char *image)
{
    size_t n = strlen(image);
    return n > 4 && strcmp(image + n - 4, ".sif") == 0;
}

/* Whether a directory of CDI specs holds NVIDIA's. */
static bool
cdi_nvidia(void)
{
    static const char *const dirs[] = { "/etc/cdi", "/var/run/cdi" };
    bool found = false;
    for (size_t i = 0; i < 2 && !found; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *e;
        while (d != NULL && !found && (e = readdir(d)) != NULL)
            found = strncmp(e->d_name, "nvidia", 6) == 0;
        if (d != NULL)
            closedir(d);
    }
    return found;
}

/* The device nodes of the task's GPUs and NVIDIA's control devices. */
static void
gpu_devices(const agent_t *a, const task_t *t, argv_b *b)
{
    const char *dev = a->cg.dev_dir != NULL ? a->cg.dev_dir : "/dev";
    if (cdi_nvidia()) {
        for (int d = 0; d < a->plat.ngpus; d++)
            if (t->devices & ((uint64_t)1 << d)) {
                pushc(b, "--device");
                push(b,
                     al_xasprintf("nvidia.com/gpu=%s", a->plat.gpus[d].uuid));
            }
        return;
    }
    static const char *const ctl[] = { "nvidiactl", "nvidia-uvm",
                                       "nvidia-uvm-tools", "nvidia-modeset" };
    struct stat st;
    for (int d = 0; d < a->plat.ngpus; d++) {
        char *p = al_xasprintf("%s/nvidia%d", dev,
                               al_platform_gpu_minor(&a->plat, d));
        if ((t->devices & ((uint64_t)1 << d)) && stat(p, &st) == 0) {
            pushc(b, "--device");
            push(b, p);
        } else {
            free(p);
        }
    }
    for (size_t i = 0; i < sizeof ctl / sizeof ctl[0]; i++) {
        char *p = al_xasprintf("%s/%s", dev, ctl[i]);
        if (stat(p, &st) == 0) {
            pushc(b, "--device");
            push(b, p);
        } else {
            free(p);
        }
    }
}

/* The container's name: allot-NODE-JOB.TASK.RESTART. */
static void
container_name(const agent_t *a, const task_t *t, char *name, size_t len)
{
    snprintf(name, len, "allot-%s-%llu.%d.%d", a->name, t->job, t->index,
             t->restart);
}

char **
al__container_argv(const agent_t *a, const task_t *t, json_t *s,
                   char *const *argv, const al__env_t *env, const char **user)
{
    const char *image = al_json_str(s, "image", NULL);
    const char *cwd = al_json_str(s, "cwd", NULL);
    argv_b b = { NULL, 0, 0 };
    if (al__container_sif(image)) {
        pushc(&b, a->apptainer);
        pushc(&b, "exec");
        if (!a->plat.emulated && t->devices != 0)
            pushc(&b, "--nv"); /* the driver's libraries and devices */
        if (cwd != NULL) {
            pushc(&b, "--bind");
            pushc(&b, cwd);
            pushc(&b, "--pwd");
            pushc(&b, cwd);
        }
    } else {
        /* Who the task runs as: its submitter (a root agent), else the
         * agent's own user; podman itself runs as the agent. */
        uid_t uid = geteuid();
        gid_t gid = getegid();
        const char *home = NULL;
        struct passwd *pw = *user != NULL ? getpwnam(*user) : NULL;
        if (pw != NULL) {
            uid = pw->pw_uid;
            gid = pw->pw_gid;
            home = pw->pw_dir;
            *user = NULL;
        }
        char name[256];
        container_name(a, t, name, sizeof name);
        pushc(&b, a->podman);
        pushc(&b, "run");
        pushc(&b, "--rm");
        push(&b, al_xasprintf("--name=%s", name));
        pushc(&b, "--pull=missing");
        pushc(&b, "--network=host");
        pushc(&b, "--ipc=host");
        pushc(&b, "--security-opt=no-new-privileges");
        push(&b, al_xasprintf("--user=%u:%u", (unsigned)uid, (unsigned)gid));
        /* Options and their values in one word each: a value that
         * begins with '-' (a job's variable's name) is never an option. */
        if (cwd != NULL) {
            push(&b, al_xasprintf("--volume=%s:%s", cwd, cwd));
            push(&b, al_xasprintf("--workdir=%s", cwd));
        }
        if (home != NULL && (cwd == NULL || strcmp(home, cwd) != 0))
            push(&b, al_xasprintf("--volume=%s:%s", home, home));
        /* A job script lives in the agent's state: mounted where it is. */
        if (t->script && argv[0] != NULL && argv[0][0] == '/')
            push(&b, al_xasprintf("--volume=%s:%s:ro", argv[0], argv[0]));
        if (a->cg_parent != NULL) {
            char cn[64];
            al__cg_name(cn, sizeof cn, t->job, t->index, t->restart);
            push(&b, al_xasprintf("--cgroup-parent=%s/%s", a->cg_parent, cn));
        }
        if (!a->plat.emulated && t->devices != 0)
            gpu_devices(a, t, &b);
        /* The job's and allot's variables, by name: podman takes each
         * value from its own environment, which is the task's. */
        for (size_t i = env->borrowed; i < env->n; i++) {
            int k = (int)strcspn(env->v[i], "=");
            push(&b, al_xasprintf("--env=%.*s", k, env->v[i]));
        }
        for (size_t i = 0; i < a->ncontainer_args; i++)
            pushc(&b, a->container_args[i]);
    }
    pushc(&b, image);
    for (size_t i = 0; argv[i] != NULL; i++)
        pushc(&b, argv[i]);
    return b.v;
}

void
al__container_kill(const agent_t *a, const task_t *t)
{
    const char *image = t->spec ? al_json_str(t->spec, "image", NULL) : NULL;
    if (image == NULL || al__container_sif(image))
        return;
    char name[256];
    container_name(a, t, name, sizeof name);
    char *prog = al_xstrdup(a->podman);
    char rm[] = "rm", force[] = "--force", ignore[] = "--ignore",
         tflag[] = "--time", zero[] = "0";
    char *argv[] = { prog, rm, force, ignore, tflag, zero, name, NULL };
    int rc;
    al__spawn_aside(a->podman, argv, environ, -1, NULL, &rc);
    free(prog);
    if (rc != 0)
        al_error("task %llu.%d.%d: cannot run %s rm: %s", t->job, t->index,
                 t->restart, a->podman, strerror(rc));
    else
        al_info("task %llu.%d.%d: container %s removed (%s rm --force)", t->job,
                t->index, t->restart, name, a->podman);
}

void
al__container_free(char **v)
{
    for (size_t i = 0; v != NULL && v[i] != NULL; i++)
        free(v[i]);
    free(v);
}

char *
al__container_error(const task_t *t, const char *log_path)
{
    const char *image = t->spec ? al_json_str(t->spec, "image", NULL) : NULL;
    /* podman: 125, the runtime's own error (a pull, the container's
     * creation); Apptainer: 255. */
    if (image == NULL || t->signal != 0 ||
        t->exit_code != (al__container_sif(image) ? 255 : 125))
        return NULL;
    char *data = NULL, *res = NULL;
    size_t n = 0;
    if (al_fs_read_file(log_path, &data, &n) == 0) {
        /* The last line that says what went wrong. */
        for (char *p = data; p != NULL && *p != '\0';) {
            char *nl = strchr(p, '\n');
            if (nl != NULL)
                *nl = '\0';
            if (strncmp(p, "Error: ", 7) == 0 ||
                strncmp(p, "FATAL: ", 7) == 0) {
                free(res);
                res = al_xstrndup(p, 400);
            }
            p = nl != NULL ? nl + 1 : NULL;
        }
    }
    free(data);
    return res;
}
