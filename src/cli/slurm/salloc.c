/*
 * salloc.c -- `salloc [OPTIONS] [COMMAND...]`: an allocation, a command
 * run here inside it, and its release.
 *
 * The allocation is an allot job (class build unless -q says otherwise)
 * whose tasks hold their resources and wait, each on a FIFO of its own in
 * the node's TMPDIR.  Once it runs, salloc runs the command (the user's
 * shell by default) on this machine with Slurm's variables of the job
 * (SLURM_JOB_ID, SLURM_JOB_NODELIST, ...), so that srun inside it runs its
 * steps beside the allocation's tasks (srun.c).  When the command ends,
 * salloc writes its exit status into each task's FIFO, through the
 * controller (the stream of `allot exec`): the tasks end with it, and the
 * job ends COMPLETED or FAILED as Slurm's allocation does.  A task that
 * cannot be reached so is cancelled.
 *
 * May call: step.c (requests, streams), slurm.c (the API), script.c
 * (Slurm's options), src/common.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostlist.h"
#include "json.h"
#include "script.h"
#include "slurm_int.h"
#include "xmalloc.h"

/* What each task of the allocation runs: it waits for the exit status
 * that salloc sends at the end, and ends with it. */
static const char holder[] =
    "d=${TMPDIR:-/tmp}; [ -d \"$d\" ] && [ -w \"$d\" ] || d=/tmp\n"
    "f=\"$d/allot-salloc-$ALLOT_JOB_ID-$ALLOT_TASK_INDEX\"\n"
    "rm -f \"$f\"; mkfifo -m 600 \"$f\" || exit 1\n"
    "trap 'rm -f \"$f\"; exit 143' TERM INT HUP\n"
    "read rc < \"$f\"\n"
    "rm -f \"$f\"\n"
    "exit \"${rc:-0}\"\n";

/* What salloc runs beside each task at the end (the status follows). */
static const char release[] =
    "d=${TMPDIR:-/tmp}; [ -d \"$d\" ] && [ -w \"$d\" ] || d=/tmp\n"
    "f=\"$d/allot-salloc-$ALLOT_JOB_ID-$ALLOT_TASK_INDEX\"\n"
    "i=0; while [ ! -p \"$f\" ] && [ $i -lt 100 ]; do sleep 0.1; "
    "i=$((i + 1)); done\n" /* a task that is still starting */
    "[ -p \"$f\" ] && echo \"$1\" > \"$f\"\n";

static void
set_env(const char *k, const char *v)
{
    if (v != NULL)
        setenv(k, v, 1);
}

/* Slurm's variables of the allocation, for the command run here. */
static void
job_env(const al_slurm_req_t *o, const json_t *job, const char *name)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)al_json_int(job, "id", 0));
    set_env("SLURM_JOB_ID", num);
    set_env("SLURM_JOBID", num);
    set_env("SLURM_JOB_NAME", name);
    json_t *pl = json_object_get(job, "placement");
    size_t n = json_array_size(pl);
    const char **nodes = al_xcalloc(n + 1, sizeof *nodes);
    for (size_t i = 0; i < n; i++)
        nodes[i] = al_json_str(json_array_get(pl, i), "node", "?");
    char *list = NULL;
    char *tpn = al_hostlist_tasks_per_node(nodes, n, &list);
    set_env("SLURM_JOB_NODELIST", list);
    set_env("SLURM_NODELIST", list);
    set_env("SLURM_TASKS_PER_NODE", tpn);
    snprintf(num, sizeof num, "%d", al__sl_nnodes(job));
    set_env("SLURM_NNODES", num);
    set_env("SLURM_JOB_NUM_NODES", num);
    if (o->ntasks > 0 || o->nodes > 0 || o->per_node > 0) {
        snprintf(num, sizeof num, "%zu", n);
        set_env("SLURM_NTASKS", num);
        set_env("SLURM_NPROCS", num);
    }
    if (o->cpus != NULL)
        set_env("SLURM_CPUS_PER_TASK", o->cpus);
    snprintf(num, sizeof num, "%lld",
             al__sl_cpus(job) /
                 (al__sl_nnodes(job) > 0 ? al__sl_nnodes(job) : 1));
    set_env("SLURM_JOB_CPUS_PER_NODE", num);
    set_env("SLURM_JOB_ACCOUNT", al_json_str(job, "queue", "default"));
    set_env("SLURM_JOB_PARTITION", al__sl_partition(job));
    set_env("SLURM_CLUSTER_NAME", AL_SLURM_PARTITION);
    char cwd[4096], host[256];
    if (getcwd(cwd, sizeof cwd) != NULL)
        set_env("SLURM_SUBMIT_DIR", cwd);
    if (gethostname(host, sizeof host) == 0) {
        host[sizeof host - 1] = '\0';
        set_env("SLURM_SUBMIT_HOST", host);
    }
    free(list);
    free(tpn);
    free(nodes);
}

/* Runs cmd here and waits for it: its exit status (128+N for signal N).
 * salloc itself ignores the terminal's signals meanwhile, as a shell
 * does for its foreground command. */
static int
run_here(char **cmd)
{
    struct sigaction ign, old_int, old_quit;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old_int);
    sigaction(SIGQUIT, &ign, &old_quit);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(cmd[0], cmd);
        fprintf(stderr, "salloc: error: %s: %s\n", cmd[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    int status = 0, rc = 1;
    if (pid < 0) {
        fprintf(stderr, "salloc: error: fork: %s\n", strerror(errno));
    } else {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        rc = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    return rc;
}

/* Ends the allocation's tasks with status rc; cancels the job when they
 * cannot be reached. */
static void
relinquish(al_client_t *c, const json_t *job, int rc)
{
    long long id = (long long)al_json_int(job, "id", 0);
    fprintf(stderr, "salloc: Relinquishing job allocation %lld\n", id);
    int n = (int)al_json_int(job, "tasks", 1);
    if (n < 1)
        n = 1;
    char num[16];
    snprintf(num, sizeof num, "%d", rc > 255 ? 255 : rc);
    json_t **cmds = al_xcalloc((size_t)n, sizeof(json_t *));
    for (int k = 0; k < n; k++)
        cmds[k] = json_pack("[s, s, s, s, s]", "/bin/sh", "-c", release,
                            "salloc", num);
    /* Quietly: what matters is that the job ends. */
    int saved = dup(2), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null >= 0)
        dup2(null, 2);
    int st = al__sl_step(c, "salloc", job, n, cmds, AL_SL_STEP_QUIET);
    if (saved >= 0) {
        dup2(saved, 2);
        close(saved);
    }
    if (null >= 0)
        close(null);
    for (int k = 0; k < n; k++)
        json_decref(cmds[k]);
    free(cmds);
    al_sl_id_t jid = { id, -1 };
    if (st != 0)
        al__sl_post(c, &jid, "cancel");
}

int
al__salloc(int argc, char **argv)
{
    al_slurm_req_t o;
    int stop;
    const char *cls;
    int rc = al__sl_args("salloc", "[OPTIONS(0)...] [command(0) [args(0)...]]",
                         argc, argv, &o, &stop, &cls);
    if (rc >= 0)
        return rc;
    /* The command: the one given, else the user's shell. */
    char *shell[2] = { NULL, NULL };
    char **cmd = argv + stop;
    if (stop >= argc) {
        const char *sh = getenv("SHELL");
        struct passwd *pw = sh == NULL ? getpwuid(getuid()) : NULL;
        shell[0] = (char *)(sh ? sh : pw ? pw->pw_shell : "/bin/sh");
        cmd = shell;
    }
    /* Slurm names an allocation "interactive", whatever its command. */
    const char *name = o.name ? o.name : "interactive";
    json_t *env = al__sl_export_env("salloc", o.export_vars);
    if (env == NULL)
        return AL_EXIT_FAIL;
    json_t *command = json_pack("[s, s, s]", "/bin/sh", "-c", holder);
    json_t *body = al__sl_body("salloc", &o, env, name, command);
    if (body == NULL)
        return AL_EXIT_FAIL;
    al_client_t c;
    long long id;
    json_t *job = al__sl_submit_wait(&c, "salloc", body,
                                     "Job submit/allocate failed", false, &id);
    if (job == NULL)
        return AL_EXIT_FAIL;
    fprintf(stderr, "salloc: Granted job allocation %lld\n", id);
    job_env(&o, job, name);
    /* Where srun counts the allocation's steps (srun.c). */
    const char *tmp = getenv("TMPDIR");
    char steps[4096];
    snprintf(steps, sizeof steps, "%s/allot-salloc-XXXXXX",
             tmp != NULL && tmp[0] == '/' ? tmp : "/tmp");
    int sfd = mkstemp(steps);
    if (sfd >= 0) {
        close(sfd);
        setenv("ALLOT_STEPS", steps, 1);
    }
    signal(SIGWINCH, SIG_DFL);
    rc = run_here(cmd);
    if (sfd >= 0)
        unlink(steps);
    relinquish(&c, job, rc);
    json_decref(job);
    al_client_fini(&c);
    return rc;
}
