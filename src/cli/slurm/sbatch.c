/*
 * sbatch.c -- `sbatch`: a Slurm batch script submitted as an allot job.
 * Options come from the script's #SBATCH lines and the command line (which
 * wins), read by script.c's table, the one `allot submit` uses; the job's
 * output goes to Slurm's -o/-e files, written on the node by the script
 * itself (a redirection added to a shell script, a small sh wrapper around
 * any other).
 *
 * May call: script.c (options, the per-task request), slurm.c (the API),
 * format.c (the -o/-e patterns), src/common.
 */
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"
#include "script.h"
#include "slurm_int.h"
#include "xmalloc.h"

static void
merge(al_slurm_req_t *to, const al_slurm_req_t *from)
{
#define TAKE(f) to->f = from->f ? from->f : to->f
    TAKE(name);
    TAKE(partition);
    TAKE(cpus);
    TAKE(mem);
    TAKE(mem_per_cpu);
    TAKE(time);
    TAKE(dep);
    TAKE(array);
    TAKE(ntasks);
    TAKE(nodes);
    TAKE(per_node);
    TAKE(gpus_task);
    TAKE(gpus_total);
    TAKE(output);
    TAKE(error);
    TAKE(account);
    TAKE(export_vars);
    TAKE(chdir);
    TAKE(constraint);
    TAKE(signal);
    TAKE(open_mode);
    TAKE(wrap);
    TAKE(qos);
    TAKE(hold);
    TAKE(parsable);
    TAKE(test_only);
    TAKE(wait);
    TAKE(requeue);
    TAKE(no_requeue);
    TAKE(quiet);
#undef TAKE
    if (from->gpus_node >= 0)
        to->gpus_node = from->gpus_node;
}

static int
fail(const char *msg)
{
    fprintf(stderr, "sbatch: error: %s\n", msg);
    return AL_EXIT_FAIL;
}

/* The script's text: the file, or standard input. NULL after saying why. */
static char *
read_script(const char *path)
{
    FILE *f = path != NULL ? fopen(path, "r") : stdin;
    if (f == NULL) {
        fprintf(stderr, "sbatch: error: Unable to open file %s\n", path);
        return NULL;
    }
    char *buf = al_xmalloc(AL_SCRIPT_MAX + 1);
    size_t n = fread(buf, 1, AL_SCRIPT_MAX + 1, f);
    if (path != NULL)
        fclose(f);
    if (n > AL_SCRIPT_MAX || memchr(buf, '\0', n) != NULL) {
        fprintf(stderr,
                "sbatch: error: %s is larger than 512 KiB or not "
                "text\n",
                path ? path : "the script");
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (n == 0) {
        fprintf(stderr, "sbatch: error: Batch script is empty!\n");
        free(buf);
        return NULL;
    }
    if (strncmp(buf, "#!", 2) != 0) {
        fprintf(stderr,
                "sbatch: error: This does not look like a batch script.  The "
                "first\n"
                "sbatch: error: line must start with #! followed by the path "
                "to an interpreter.\n"
                "sbatch: error: For instance: #!/bin/sh\n");
        free(buf);
        return NULL;
    }
    return buf;
}

/* Is the script's interpreter a Bourne-style shell? */
static bool
shell_script(const char *text)
{
    static const char *const shells[] = { "sh",  "bash", "dash",
                                          "ksh", "zsh",  "ash" };
    size_t n = strcspn(text, "\n");
    char first[256];
    snprintf(first, sizeof first, "%.*s", (int)n, text);
    char *save = NULL, *w = strtok_r(first + 2, " \t\r", &save);
    if (w != NULL && strcmp(w, "/usr/bin/env") == 0)
        w = strtok_r(NULL, " \t\r", &save);
    if (w == NULL)
        return false;
    const char *base = strrchr(w, '/') ? strrchr(w, '/') + 1 : w;
    for (size_t i = 0; i < sizeof shells / sizeof shells[0]; i++)
        if (strcmp(base, shells[i]) == 0)
            return true;
    return false;
}

/* The text the node runs: the script with its output sent to the -o and
 * -e files. */
static char *
job_text(const char *text, const char *redirect)
{
    if (shell_script(text)) {
        /* After the first line: line numbers in the shell's messages
         * move by one, nothing else changes. */
        size_t n = strcspn(text, "\n");
        return al_xasprintf("%.*s\n%s\n%s", (int)n, text, redirect,
                            text[n] ? text + n + 1 : "");
    }
    /* Another interpreter: the script in a file of its own, run with the
     * redirection; a signal that ended it ends the wrapper too. */
    char tag[32];
    snprintf(tag, sizeof tag, "ALLOT_SBATCH_%08lx%04x",
             (unsigned long)time(NULL), (unsigned)getpid() & 0xffff);
    size_t len = strlen(text);
    return al_xasprintf(
        "#!/bin/sh\n"
        "# sbatch on allot: the job script below, with Slurm's output "
        "files\n"
        "f=\"${TMPDIR:-/tmp}/allot-sbatch-$SLURM_JOB_ID-$$\"\n"
        "(umask 077; cat > \"$f\") <<'%s'\n%s%s%s\n"
        "chmod 700 \"$f\"\n%s\n\"$f\" \"$@\"\nrc=$?\nrm -f \"$f\"\n"
        "if [ $rc -gt 128 ]; then kill -$((rc - 128)) $$; fi\nexit $rc\n",
        tag, text, len > 0 && text[len - 1] != '\n' ? "\n" : "", tag, redirect);
}

static void
setenv_str(json_t *env, const char *k, const char *v)
{
    json_object_set_new(env, k, json_string(v));
}

/* -W: waits until the job ends; its exit status as sbatch gives it. */
static int
wait_job(al_client_t *c, long long id)
{
    for (;;) {
        int st;
        al_sl_id_t jid = { id, -1 };
        json_t *j = al__sl_job(c, &jid, &st);
        if (j == NULL)
            return AL_EXIT_FAIL;
        const char *s = al_json_str(j, "state", "");
        int rc = -1;
        if (strcmp(s, "completed") == 0)
            rc = 0;
        else if (strcmp(s, "failed") == 0 || strcmp(s, "cancelled") == 0 ||
                 strcmp(s, "out_of_memory") == 0) {
            long long code = al_json_int(j, "exit_code", 0);
            rc = code > 0 && code < 256 ? (int)code : 1;
        }
        json_decref(j);
        if (rc >= 0)
            return rc;
        struct timespec ts = { 0, 100L * 1000 * 1000 };
        nanosleep(&ts, NULL);
    }
}

static void
usage(FILE *f)
{
    fprintf(f, "Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0) "
               "[args(0)...]\n"
               "allot's sbatch takes Slurm's options; docs/slurm.md says "
               "which differ and which are refused.\n");
}

/* What sbatch refuses or notes before submitting; -1 when the options are
 * fine (*cls gets the class a QOS names), else the exit status. */
static int
check_options(const al_slurm_req_t *sb, const char **cls)
{
    char feat[512];
    if (sb->constraint != NULL &&
        al__sl_features(sb->constraint, feat, sizeof feat) == NULL) {
        fprintf(stderr,
                "sbatch: error: -C/--constraint %s: allot's node labels "
                "take features joined by '&' only\n"
                "sbatch: error: Batch job submission failed: Invalid feature "
                "specification\n",
                sb->constraint);
        return AL_EXIT_FAIL;
    }
    if (al__sl_partition_check("sbatch", sb->partition) != 0)
        return AL_EXIT_FAIL;
    bool batch;
    int sig;
    long when;
    if (sb->signal != NULL &&
        !al_sl_signal_spec(sb->signal, &batch, &sig, &when)) {
        fprintf(stderr, "sbatch: error: Invalid --signal specification\n");
        return 255;
    }
    *cls = NULL;
    if (sb->qos != NULL && strcmp(sb->qos, "normal") != 0) {
        if (strcmp(sb->qos, "train") != 0 && strcmp(sb->qos, "build") != 0 &&
            strcmp(sb->qos, "inference") != 0) {
            fprintf(stderr, "sbatch: error: Batch job submission failed: "
                            "Invalid qos specification\n");
            return AL_EXIT_FAIL;
        }
        *cls = sb->qos;
    }
    if (sb->open_mode != NULL && strcmp(sb->open_mode, "append") != 0 &&
        strcmp(sb->open_mode, "truncate") != 0) {
        fprintf(stderr, "sbatch: error: Invalid --open-mode argument: %s\n",
                sb->open_mode);
        return 255;
    }
    if (sb->no_requeue)
        fprintf(stderr, "sbatch: --no-requeue: allot puts a job whose node "
                        "went down back in the queue; scontrol requeue of "
                        "the job is refused\n");
    return -1;
}

/* "exec >OUT 2>ERR" with op (">" or ">>") into b; false for a pattern
 * that is not a file name. */
static bool
exec_line(const al_slurm_req_t *sb, const char *name, const char *user,
          const char *op, al_buf_t *b)
{
    al_buf_printf(b, "exec %s", op);
    bool ok = al_sl_pattern(sb->output ? sb->output : "slurm-%j.out", name,
                            user, b) == 0;
    if (sb->error != NULL) {
        al_buf_printf(b, " 2%s", op);
        ok = ok && al_sl_pattern(sb->error, name, user, b) == 0;
    } else {
        al_buf_puts(b, " 2>&1");
    }
    return ok;
}

/* The line that sends the script's output to the -o and -e files, into
 * b; false after saying why.  A requeued job (SLURM_RESTART_COUNT above 0)
 * appends, as Slurm's does. */
static bool
redirect(const al_slurm_req_t *sb, const al_submit_args_t *a, const char *name,
         al_buf_t *b)
{
    struct passwd *pw = getpwuid(getuid());
    const char *user = pw ? pw->pw_name : "nobody";
    /* Every task of a job of several runs the script (as srun would start
     * it) and writes to the same files: they append. */
    bool several = a->f.tasks != NULL && strcmp(a->f.tasks, "1") != 0;
    bool append =
        several || (sb->open_mode && strcmp(sb->open_mode, "append") == 0);
    bool ok;
    if (append) {
        ok = exec_line(sb, name, user, ">>", b);
    } else {
        al_buf_puts(b, "if [ \"${SLURM_RESTART_COUNT:-0}\" -gt 0 ]; then ");
        ok = exec_line(sb, name, user, ">>", b);
        al_buf_puts(b, "; else ");
        ok = exec_line(sb, name, user, ">", b) && ok;
        al_buf_puts(b, "; fi");
    }
    if (!ok)
        fprintf(stderr, "sbatch: error: -o/-e: not a file name pattern\n");
    return ok;
}

/* --signal as a line of sh for the job's text: a watcher apart from the
 * script (not its child, so that the script's `wait` does not wait for
 * it) that sends the signal TIME seconds before the time limit to the
 * script with B:, else to its steps (the script's children: srun passes
 * it on to its tasks), and ends within 10 s of the script.  Nothing
 * without a time limit.  A script of another interpreter runs under a sh
 * wrapper: it gets the signal either way. */
static void
signal_line(const al_slurm_req_t *sb, bool shell, al_buf_t *b)
{
    bool batch;
    int sig;
    long when;
    long long limit = sb->time != NULL ? al_script_slurm_time(sb->time) : 0;
    if (!al_sl_signal_spec(sb->signal, &batch, &sig, &when) || when < 0 ||
        limit <= 0)
        return;
    long long delay = limit > when ? limit - when : 0;
    al_buf_printf(b,
                  "\n( ( t=%lld; while [ $t -gt 0 ]; do n=$((t < 10 ? t : "
                  "10)); sleep $n; t=$((t - n)); kill -0 $$ 2>/dev/null || "
                  "exit 0; done; P=$$; S=%d; %s%s ) </dev/null >/dev/null "
                  "2>&1 & )",
                  delay, sig, AL_SL_SIG_KIDS,
                  batch && shell ? "kill -$S $P" : "sig_kids");
}

/* The job's body: env, command, script, cwd, name, queue, hold.  NULL
 * after saying why. */
static json_t *
body_of(const al_slurm_req_t *sb, const al_submit_args_t *a, json_t *env,
        const char *job, const char *name, char **args, int nargs)
{
    json_t *body = json_object();
    const char *err = al_script_resources(body, &a->f);
    if (err != NULL) {
        fprintf(stderr, "sbatch: error: %s\n", err);
        json_decref(env);
        json_decref(body);
        return NULL;
    }
    char cwd[4096], host[256];
    char *dir = al__sl_dirs(sb->chdir, cwd, sizeof cwd, host, sizeof host);
    /* What Slurm tells a batch script that is known here; the agent adds
     * the rest (ids, ranks, nodes). */
    setenv_str(env, "ALLOT_SLURM", "1");
    setenv_str(env, "SLURM_JOB_NAME", name);
    setenv_str(env, "SLURM_JOB_ACCOUNT", sb->account ? sb->account : "default");
    setenv_str(env, "SLURM_JOB_PARTITION",
               sb->partition ? sb->partition : AL_SLURM_PARTITION);
    setenv_str(env, "SLURM_CLUSTER_NAME", AL_SLURM_PARTITION);
    setenv_str(env, "SLURM_SUBMIT_DIR", cwd);
    setenv_str(env, "SLURM_SUBMIT_HOST", host);
    if (sb->cpus != NULL)
        setenv_str(env, "SLURM_CPUS_PER_TASK", sb->cpus);
    /* scontrol requeue reads it: a job of --no-requeue is not requeued,
     * running or ended, as Slurm's. */
    if (sb->no_requeue)
        setenv_str(env, "ALLOT_SLURM_NO_REQUEUE", "1");
    json_object_set_new(body, "env", env);
    json_t *cmd = json_array();
    bool utf8 = json_array_append_new(cmd, json_string(args[0])) == 0;
    for (int i = 1; i < nargs; i++)
        utf8 = json_array_append_new(cmd, json_string(args[i])) == 0 && utf8;
    json_object_set_new(body, "command", cmd);
    utf8 = json_object_set_new(body, "script", json_string(job)) == 0 && utf8;
    utf8 = json_object_set_new(body, "cwd", json_string(dir)) == 0 && utf8;
    utf8 = json_object_set_new(body, "name", json_string(name)) == 0 && utf8;
    free(dir);
    if (sb->account != NULL)
        utf8 =
            json_object_set_new(body, "queue", json_string(sb->account)) == 0 &&
            utf8;
    if (sb->hold)
        json_object_set_new(body, "hold", json_true());
    if (!utf8) {
        fprintf(stderr, "sbatch: error: the script, its arguments, -J, -A "
                        "and the directory must be UTF-8 text\n");
        json_decref(body);
        return NULL;
    }
    return body;
}

/* Submits body; prints the id as sbatch does and waits with -W. */
static int
submit(const al_slurm_req_t *sb, json_t *body)
{
    al_client_t c;
    if (al__sl_connect(&c) != 0)
        return AL_EXIT_FAIL;
    json_t *res = NULL;
    if (al_client_call(&c, "POST", "/v1/jobs", body, &res, NULL, NULL) != 0) {
        fprintf(stderr, "sbatch: error: Batch job submission failed\n");
        al_client_fini(&c);
        return AL_EXIT_FAIL;
    }
    long long id = (long long)al_json_int(res, "id", 0);
    json_decref(res);
    if (sb->parsable)
        printf("%lld\n", id);
    else if (!sb->quiet)
        printf("Submitted batch job %lld\n", id);
    fflush(stdout);
    int rc = sb->wait ? wait_job(&c, id) : 0;
    al_client_fini(&c);
    return rc;
}

/* The script's text (--wrap's, the file's or standard input's) and the
 * job's default name; NULL after saying why. */
static char *
script_of(const al_slurm_req_t *cl, const char *path, const char **dflt)
{
    *dflt = "sbatch";
    if (cl->wrap != NULL) {
        if (path != NULL) {
            fail("script arguments not permitted with --wrap option");
            return NULL;
        }
        *dflt = "wrap";
        return al_xasprintf(
            "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n%s\n",
            cl->wrap);
    }
    char *text = read_script(path);
    if (text != NULL && path != NULL)
        *dflt = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    return text;
}

int
al__sbatch(int argc, char **argv)
{
    for (int i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "--usage") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            printf("slurm 22.05 (allot)\n");
            return 0;
        }
    }
    al_slurm_req_t cl, sb;
    al_script_slurm_init(&cl);
    al_script_slurm_init(&sb);
    int stop;
    if (al_script_sbatch_words(argv + 1, argc - 1, &cl, NULL, &stop) > 0) {
        if (cl.refused == 0)
            fprintf(stderr, "Try \"sbatch --help\" for more information\n");
        return cl.refused > 0 ? AL_EXIT_FAIL : 255;
    }
    stop++; /* index in argv */
    const char *path = stop < argc ? argv[stop] : NULL;
    const char *dflt = NULL;
    char *text = script_of(&cl, path, &dflt);
    if (text == NULL)
        return AL_EXIT_FAIL;
    char *lines = al_xstrdup(text);
    int errors = al_script_sbatch_lines(path ? path : "stdin", lines, &sb);
    merge(&sb, &cl);
    int rc = errors > 0 ? (sb.refused > 0 ? AL_EXIT_FAIL : 255) : -1;
    const char *cls = NULL;
    al_submit_args_t a;
    memset(&a, 0, sizeof a);
    char room[AL_SCRIPT_ROOM];
    if (rc < 0)
        rc = check_options(&sb, &cls);
    if (rc < 0 && al_script_slurm_apply(&sb, &a, room, dflt) != 0)
        rc = AL_EXIT_FAIL;
    a.f.cls = cls;
    /* A partition is a node pool (AL_SLURM_PARTITION: every node), a
     * feature a node label. */
    char feats[512];
    if (sb.partition != NULL && strcmp(sb.partition, AL_SLURM_PARTITION) != 0)
        a.f.pool = sb.partition;
    if (sb.constraint != NULL)
        a.f.constraint = al__sl_features(sb.constraint, feats, sizeof feats);
    const char *name = sb.name ? sb.name : dflt;
    al_buf_t redir;
    al_buf_init(&redir);
    json_t *env = NULL, *body = NULL;
    char *job = NULL;
    if (rc < 0 && (!redirect(&sb, &a, name, &redir) ||
                   (env = al__sl_export_env("sbatch", sb.export_vars)) == NULL))
        rc = AL_EXIT_FAIL;
    if (rc < 0 && sb.signal != NULL) /* after the redirection */
        signal_line(&sb, shell_script(text), &redir);
    if (rc < 0) {
        job = job_text(text, al_buf_cstr(&redir));
        char *args[] = { (char *)dflt };
        bool wrap = cl.wrap != NULL;
        /* The command: the script's name, then its arguments. */
        body = wrap || stop >= argc
                   ? body_of(&sb, &a, env, job, name, args, 1)
                   : body_of(&sb, &a, env, job, name, argv + stop, argc - stop);
        if (body == NULL)
            rc = AL_EXIT_FAIL;
    }
    if (rc < 0 && sb.test_only) {
        fprintf(stderr,
                "sbatch: Job would be submitted to partition %s; allot "
                "cannot tell when it would start (not submitted)\n",
                sb.partition ? sb.partition : AL_SLURM_PARTITION);
        rc = 0;
    }
    if (rc < 0)
        rc = submit(&sb, body);
    al_buf_fini(&redir);
    json_decref(body);
    free(job);
    free(lines);
    free(text);
    return rc;
}
