/*
 * test_agent.c -- the agent's pure parts: a task's environment (entries,
 * de-duplication, what allot and a Slurm script's tasks are told), task
 * records (their fields and parsing), slot file names, the GPU shares of
 * fractional tasks, and the task table's slots and records on disk (a
 * task that could not start, adopting one after a restart).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "agent_int.h"
#include "core/error.h"
#include "platform.h"
#include "test.h"

/* The entry of e named name ("NAME=..."), or NULL; *count gets how many
 * entries have that name. */
static const char *
env_find(const al__env_t *e, const char *name, int *count)
{
    const char *found = NULL;
    size_t len = strlen(name);
    *count = 0;
    for (size_t i = 0; i < e->n; i++)
        if (strncmp(e->v[i], name, len) == 0 && e->v[i][len] == '=') {
            found = e->v[i] + len + 1;
            (*count)++;
        }
    return found;
}

/* The value of name in e, which must be there exactly once. */
#define ASSERT_ENV(e, name, value)                                             \
    do {                                                                       \
        int al__n;                                                             \
        const char *al__v = env_find((e), (name), &al__n);                     \
        ASSERT_EQ(al__n, 1);                                                   \
        ASSERT_STR_EQ(al__v, (value));                                         \
    } while (0)

#define ASSERT_NO_ENV(e, name)                                                 \
    do {                                                                       \
        int al__n;                                                             \
        env_find((e), (name), &al__n);                                         \
        ASSERT_EQ(al__n, 0);                                                   \
    } while (0)

static void
env_entry(void)
{
    char *s = al__env_entry("KEY", "a=b c");
    ASSERT_STR_EQ(s, "KEY=a=b c");
    free(s);
    s = al__env_entry("EMPTY", "");
    ASSERT_STR_EQ(s, "EMPTY=");
    free(s);
}

/* The last setting of a name wins, in its place; borrowed entries stay a
 * prefix and are not freed; a name is not a prefix of another. */
static void
env_dedup_order(void)
{
    static char borrowed[][8] = { "A=1", "AB=2", "B=3" };
    al__env_t e = { NULL, 0, 0, 0 };
    for (size_t i = 0; i < 3; i++)
        al__env_push(&e, borrowed[i]);
    e.borrowed = e.n;
    al__env_push(&e, al__env_entry("A", "4"));
    al__env_push(&e, al__env_entry("C", "5"));
    al__env_push(&e, al__env_entry("C", "6"));
    ASSERT_EQ(e.n, 6);
    ASSERT(e.v[6] == NULL);
    al__env_dedup(&e);
    ASSERT_EQ(e.n, 4);
    ASSERT_EQ(e.borrowed, 2);
    ASSERT_STR_EQ(e.v[0], "AB=2");
    ASSERT_STR_EQ(e.v[1], "B=3");
    ASSERT_STR_EQ(e.v[2], "A=4");
    ASSERT_STR_EQ(e.v[3], "C=6");
    ASSERT(e.v[4] == NULL);
    /* The borrowed strings are untouched. */
    ASSERT_STR_EQ(borrowed[0], "A=1");
    al__env_fini(&e);
}

/* Enough names to grow the hash set and the array several times. */
static void
env_dedup_many(void)
{
    al__env_t e = { NULL, 0, 0, 0 };
    char name[16], value[16];
    for (int round = 0; round < 3; round++)
        for (int i = 0; i < 200; i++) {
            snprintf(name, sizeof name, "V%d", i);
            snprintf(value, sizeof value, "%d", round * 1000 + i);
            al__env_push(&e, al__env_entry(name, value));
        }
    ASSERT_EQ(e.n, 600);
    al__env_dedup(&e);
    ASSERT_EQ(e.n, 200);
    for (int i = 0; i < 200; i++) {
        char want[32];
        snprintf(want, sizeof want, "V%d=%d", i, 2000 + i);
        ASSERT_STR_EQ(e.v[i], want);
    }
    ASSERT(e.v[200] == NULL);
    al__env_fini(&e);
}

static json_t *
spec(bool slurm)
{
    json_t *s = json_pack(
        "{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:{s:s, s:s}}", "job", 7,
        "task", 1, "restart", 2, "rank", 3, "world_size", 4, "local_rank", 1,
        "master_port", 29500, "master_addr", "10.0.0.1", "cwd", "/work", "env",
        "UNIT_FOO", "job", "CUDA_VISIBLE_DEVICES", "9");
    if (slurm)
        json_object_set_new(json_object_get(s, "env"), "ALLOT_SLURM",
                            json_string("1"));
    return s;
}

/* The agent's environment without its ALLOT_* settings, then the job's,
 * then allot's; every name once, the last setting winning. */
static void
task_env_plain(void)
{
    setenv("ALLOT_UNIT_SECRET", "x", 1);
    setenv("UNIT_KEEP", "agent", 1);
    setenv("UNIT_FOO", "agent", 1);
    agent_t a;
    memset(&a, 0, sizeof a);
    a.name = (char *)"node-a";
    json_t *s = spec(false);
    al__env_t e = al__task_env(&a, s, "0,1");
    ASSERT_NO_ENV(&e, "ALLOT_UNIT_SECRET");
    ASSERT_ENV(&e, "UNIT_KEEP", "agent");
    ASSERT_ENV(&e, "UNIT_FOO", "job");
    ASSERT_ENV(&e, "CUDA_VISIBLE_DEVICES", "0,1");
    ASSERT_ENV(&e, "ALLOT_NODE", "node-a");
    ASSERT_NO_ENV(&e, "ALLOT_EMULATED_GPUS");
    ASSERT_ENV(&e, "ALLOT_JOB_ID", "7");
    ASSERT_ENV(&e, "ALLOT_TASK_INDEX", "1");
    ASSERT_ENV(&e, "ALLOT_RESTART_COUNT", "2");
    ASSERT_ENV(&e, "RANK", "3");
    ASSERT_ENV(&e, "WORLD_SIZE", "4");
    ASSERT_ENV(&e, "LOCAL_RANK", "1");
    ASSERT_ENV(&e, "MASTER_PORT", "29500");
    ASSERT_ENV(&e, "MASTER_ADDR", "10.0.0.1");
    ASSERT_NO_ENV(&e, "SLURM_JOB_ID");
    ASSERT_NO_ENV(&e, "SLURMD_NODENAME");
    ASSERT_STR_EQ(e.v[e.n - 1], "MASTER_ADDR=10.0.0.1");
    ASSERT(e.v[e.n] == NULL);
    /* The agent's own entries come first, borrowed from environ. */
    int keep = -1, foo = -1;
    for (size_t i = 0; i < e.n; i++) {
        if (strcmp(e.v[i], "UNIT_KEEP=agent") == 0)
            keep = (int)i;
        if (strcmp(e.v[i], "UNIT_FOO=job") == 0)
            foo = (int)i;
    }
    ASSERT_LT(keep, (int64_t)e.borrowed);
    ASSERT_GE(foo, (int64_t)e.borrowed);
    al__env_fini(&e);
    json_decref(s);
    unsetenv("ALLOT_UNIT_SECRET");
    unsetenv("UNIT_KEEP");
    unsetenv("UNIT_FOO");
}

/* A Slurm script's tasks are told what srun would tell them. */
static void
task_env_slurm(void)
{
    agent_t a;
    memset(&a, 0, sizeof a);
    a.name = (char *)"node-b";
    a.plat.emulated = true;
    json_t *s = spec(true);
    al__env_t e = al__task_env(&a, s, "3");
    ASSERT_ENV(&e, "ALLOT_EMULATED_GPUS", "1");
    ASSERT_ENV(&e, "ALLOT_SLURM", "1");
    ASSERT_ENV(&e, "CUDA_VISIBLE_DEVICES", "3");
    ASSERT_ENV(&e, "SLURM_JOB_ID", "7");
    ASSERT_ENV(&e, "SLURM_JOBID", "7");
    ASSERT_ENV(&e, "SLURM_PROCID", "3");
    ASSERT_ENV(&e, "SLURM_NTASKS", "4");
    ASSERT_ENV(&e, "SLURM_NPROCS", "4");
    ASSERT_ENV(&e, "SLURM_LOCALID", "1");
    ASSERT_ENV(&e, "SLURM_RESTART_COUNT", "2");
    ASSERT_ENV(&e, "SLURM_SUBMIT_DIR", "/work");
    ASSERT_STR_EQ(e.v[e.n - 1], "SLURMD_NODENAME=node-b");
    ASSERT_ENV(&e, "SLURM_GPUS_ON_NODE", "1");
    ASSERT_ENV(&e, "SLURM_STEP_ID", "0");
    ASSERT_NO_ENV(&e, "SLURM_JOB_NODELIST");
    al__env_fini(&e);
    /* The nodes the controller sends a Slurm job's tasks. */
    json_object_set_new(s, "slurm_nodelist", json_string("node-a,node-b"));
    json_object_set_new(s, "slurm_tasks_per_node", json_string("2(x2)"));
    e = al__task_env(&a, s, "3,5");
    ASSERT_ENV(&e, "SLURM_JOB_NODELIST", "node-a,node-b");
    ASSERT_ENV(&e, "SLURM_NODELIST", "node-a,node-b");
    ASSERT_ENV(&e, "SLURM_NNODES", "2");
    ASSERT_ENV(&e, "SLURM_NODEID", "1");
    ASSERT_ENV(&e, "SLURM_TASKS_PER_NODE", "2(x2)");
    ASSERT_ENV(&e, "SLURM_GPUS_ON_NODE", "2");
    al__env_fini(&e);
    json_object_del(s, "slurm_nodelist");
    /* No cwd: no SLURM_SUBMIT_DIR. */
    json_object_del(s, "cwd");
    e = al__task_env(&a, s, "3");
    ASSERT_NO_ENV(&e, "SLURM_SUBMIT_DIR");
    ASSERT_ENV(&e, "SLURMD_NODENAME", "node-b");
    al__env_fini(&e);
    json_decref(s);
}

static void
slot_names(void)
{
    int slot = -1;
    ASSERT(al__task_slot_parse("12.state", &slot));
    ASSERT_EQ(slot, 12);
    ASSERT(al__task_slot_parse("007.state", &slot));
    ASSERT_EQ(slot, 7);
    ASSERT(al__task_slot_parse("16777216.state", &slot));
    ASSERT_EQ(slot, 1 << 24);
    slot = -1;
    ASSERT(!al__task_slot_parse("16777217.state", &slot));
    ASSERT(!al__task_slot_parse("12.log", &slot));
    ASSERT(!al__task_slot_parse("12.script", &slot));
    ASSERT(!al__task_slot_parse("12.state.tmp", &slot));
    ASSERT(!al__task_slot_parse("-1.state", &slot));
    ASSERT(!al__task_slot_parse("x.state", &slot));
    ASSERT(!al__task_slot_parse(".state", &slot));
    ASSERT(!al__task_slot_parse("lock", &slot));
    ASSERT_EQ(slot, -1); /* untouched when false */
}

static void
records(void)
{
    char rec[AL__REC_LEN + 1];
    al__rec_field(rec, AL__REC_ID, "7 1 2 4242 123456 5");
    al__rec_field(rec + AL__REC_ID, AL__REC_LEN - AL__REC_ID, "3 0");
    rec[AL__REC_LEN] = '\0';
    ASSERT_EQ(rec[AL__REC_ID - 1], '\n');
    ASSERT_EQ(rec[AL__REC_LEN - 1], '\n');
    ASSERT_EQ(rec[19], ' ');
    ASSERT_EQ(rec[AL__REC_ID + 3], ' ');
    ASSERT_EQ(strlen(rec), AL__REC_LEN);
    al__rec_t r;
    ASSERT(al__rec_parse(rec, &r));
    ASSERT_EQ(r.job, 7);
    ASSERT_EQ(r.index, 1);
    ASSERT_EQ(r.restart, 2);
    ASSERT_EQ(r.pid, 4242);
    ASSERT_EQ(r.start, 123456);
    ASSERT_EQ(r.devices, 5);
    /* A field too long is cut, the newline kept. */
    char small[8];
    al__rec_field(small, sizeof small, "123456789");
    ASSERT(memcmp(small, "1234567\n", 8) == 0);
    /* A task that never started: pid 0, start -1. */
    ASSERT(al__rec_parse("18446744073709551615 0 0 0 -1 0\n", &r));
    ASSERT(r.job == 18446744073709551615ULL);
    ASSERT_EQ(r.start, -1);
    /* A free slot, missing or malformed fields, out of range. */
    ASSERT(!al__rec_parse("-", &r));
    ASSERT(!al__rec_parse("-7 1 2 3 4 5\n", &r));
    ASSERT(!al__rec_parse("7 1 2 3 4\n", &r));
    ASSERT(!al__rec_parse("7 1 2 3 4 5x\n", &r));
    ASSERT(!al__rec_parse("7 -1 2 3 4 5\n", &r));
    ASSERT(!al__rec_parse("7 1048577 2 3 4 5\n", &r));
    ASSERT(!al__rec_parse("7 1 2 3 99999999999999999999 5\n", &r));
    ASSERT(!al__rec_parse("18446744073709551616 1 2 3 4 5\n", &r));
}

static task_t
share_task(uint64_t devices, int share)
{
    task_t t;
    memset(&t, 0, sizeof t);
    t.devices = devices;
    t.gpu_share = share;
    return t;
}

/* Fractional tasks share a GPU up to 1000 thousandths; whole ones take
 * it all. */
static void
gpu_shares(void)
{
    int used[64] = { 0 };
    task_t a = share_task(1, 400), b = share_task(1, 400),
           c = share_task(1, 200), d = share_task(1, 400);
    al__share_count(used, &a, 1);
    al__share_count(used, &b, 1);
    ASSERT_EQ(used[0], 800);
    al__share_count(used, &c, 1);
    ASSERT(al__share_fits(used, &c));
    ASSERT_EQ(used[0], 1000);
    al__share_count(used, &d, 1);
    ASSERT_EQ(used[0], 1400);
    ASSERT(!al__share_fits(used, &d));
    al__share_count(used, &d, -1);
    ASSERT_EQ(used[0], 1000);
    ASSERT_EQ(used[1], 0);
    /* Whole GPUs 1, 2 and 63. */
    uint64_t mask =
        (UINT64_C(1) << 1) | (UINT64_C(1) << 2) | (UINT64_C(1) << 63);
    task_t w = share_task(mask, 1000), x = share_task(UINT64_C(1) << 2, 1000);
    al__share_count(used, &w, 1);
    ASSERT(al__share_fits(used, &w));
    ASSERT_EQ(used[1], 1000);
    ASSERT_EQ(used[2], 1000);
    ASSERT_EQ(used[63], 1000);
    ASSERT_EQ(used[3], 0);
    al__share_count(used, &x, 1);
    ASSERT(!al__share_fits(used, &x));
    ASSERT(al__share_fits(used, &a)); /* GPU 0 is just full */
    al__share_count(used, &x, -1);
    ASSERT(al__share_fits(used, &x));
    /* d again, once c has gone: 1200 on GPU 0. */
    al__share_count(used, &c, -1);
    al__share_count(used, &d, 1);
    ASSERT_EQ(used[0], 1200);
    ASSERT(!al__share_fits(used, &d));
    ASSERT(!al__share_fits(used, &a));
}

/* The task table on disk: a task that could not start gets a record with
 * exit 127 and the reason in its log; a task adopted from that record
 * has ended with it; removing a task frees its slot for the next. */
static void
table_on_disk(void)
{
    char dir[] = "/tmp/allot-unit-agent-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    agent_t a;
    memset(&a, 0, sizeof a);
    a.task_dir = dir;
    task_t *t = al__task_add(&a, 7, 1, 2);
    ASSERT_EQ(t->slot, -1);
    ASSERT_EQ(t->gpu_share, 1000);
    ASSERT_EQ(t->state, T_WAITING);
    t->devices = 5;
    al__task_fail(&a, t, "no such program");
    ASSERT_EQ(t->slot, 0);
    ASSERT_EQ(t->state, T_EXITED);
    ASSERT_EQ(t->exit_code, 127);
    ASSERT_STR_EQ(al__task_state_name(t->state), "exited");

    char *lp = al__task_file(&a, t, "log"), *sp = al__task_file(&a, t, "state");
    char want[64];
    snprintf(want, sizeof want, "%s/0.log", dir);
    ASSERT_STR_EQ(lp, want);
    ASSERT_EQ(al__file_size(lp), strlen("allot: no such program\n"));
    ASSERT_EQ(al__file_size(sp), AL__REC_LEN);

    /* A restarted agent finds the record and adopts the ended task. */
    task_t *u = al__task_add(&a, 7, 1, 2);
    u->slot = 0;
    al__task_adopt(&a, u, 0, -1);
    ASSERT_EQ(u->state, T_EXITED);
    ASSERT_EQ(u->exit_code, 127);
    ASSERT_EQ(u->signal, 0);
    ASSERT(u->adopted);
    ASSERT(al__task_find(&a, 7, 1, 2) == &a.tasks[0]);
    ASSERT(al__task_find(&a, 7, 1, 3) == NULL);

    /* Removing frees the slot: the log is emptied, the record marked.  (u
     * only read t's slot: it leaves without touching it.) */
    u->slot = -1;
    al__task_remove(&a, u, -1);
    ASSERT_EQ(a.ntasks, 1);
    ASSERT_EQ(a.nfree, 0);
    ASSERT_EQ(al__file_size(lp), strlen("allot: no such program\n"));
    al__task_remove(&a, &a.tasks[0], -1);
    ASSERT_EQ(a.ntasks, 0);
    ASSERT_EQ(a.nfree, 1);
    ASSERT_EQ(al__file_size(lp), 0);
    ASSERT_EQ(al__file_size(sp), AL__REC_LEN);
    FILE *f = fopen(sp, "r");
    ASSERT(f != NULL);
    ASSERT_EQ(fgetc(f), '-');
    fclose(f);

    /* The next task takes the freed slot, then new ones. */
    t = al__task_add(&a, 8, 0, 0);
    al__task_take_slot(&a, t);
    ASSERT_EQ(t->slot, 0);
    t = al__task_add(&a, 9, 0, 0);
    al__task_take_slot(&a, t);
    ASSERT_EQ(t->slot, 1);
    ASSERT_EQ(a.nslots, 2);

    unlink(lp);
    unlink(sp);
    free(lp);
    free(sp);
    rmdir(dir);
    free(a.tasks);
    free(a.free_slots);
}

/* A task adopted without a recorded exit runs if its process is the same
 * one (pid and start time), and has ended by SIGKILL otherwise. */
static void
adopt_alive(void)
{
    char dir[] = "/tmp/allot-unit-agent-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    agent_t a;
    memset(&a, 0, sizeof a);
    a.task_dir = dir;
    int64_t start = -1;
    ASSERT_EQ(al_platform_proc_state((long)getpid(), &start), 1);
    task_t *t = al__task_add(&a, 1, 0, 0);
    t->slot = 3; /* no record there */
    al__task_adopt(&a, t, (long)getpid(), start);
    ASSERT_EQ(t->state, T_RUNNING);
    ASSERT_STR_EQ(al__task_state_name(t->state), "running");
    al__task_adopt(&a, t, (long)getpid(), start + 1);
    ASSERT_EQ(t->state, T_EXITED);
    ASSERT_EQ(t->signal, SIGKILL);
    ASSERT_EQ(t->exit_code, 0);
    rmdir(dir);
    free(a.tasks);
}

/* The next chunk of a task's log for a report (tasklog.c): what follows
 * the acknowledged offset, base64; nothing when all is acknowledged; a
 * quiet running task is not looked at again at once. */
static void
log_chunks(void)
{
    char dir[] = "/tmp/allot-unit-agent-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    agent_t a;
    memset(&a, 0, sizeof a);
    a.task_dir = dir;
    task_t *t = al__task_add(&a, 5, 0, 0);
    al__task_take_slot(&a, t);
    t->state = T_RUNNING;
    char *lp = al__task_file(&a, t, "log");
    FILE *f = fopen(lp, "w");
    ASSERT(f != NULL);
    fputs("hello\n", f);
    fclose(f);

    json_t *r = json_object();
    ASSERT(al__tasklog_chunk(&a, t, r));
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "log")), "aGVsbG8K");
    json_decref(r);

    /* From the acknowledged offset on: "llo\n". */
    t->log_acked = 2;
    t->log_quiet = false;
    r = json_object();
    ASSERT(al__tasklog_chunk(&a, t, r));
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "log")), "bGxvCg==");
    json_decref(r);

    /* All acknowledged: nothing, and the task counts as quiet. */
    t->log_acked = 6;
    r = json_object();
    ASSERT(!al__tasklog_chunk(&a, t, r));
    ASSERT(json_object_get(r, "log") == NULL);
    ASSERT(t->log_quiet);
    json_decref(r);

    /* Quiet and looked at just now: new output waits for the next look;
     * an ended task is always looked at. */
    f = fopen(lp, "a");
    ASSERT(f != NULL);
    fputs("more", f);
    fclose(f);
    r = json_object();
    ASSERT(!al__tasklog_chunk(&a, t, r));
    t->state = T_EXITED;
    ASSERT(al__tasklog_chunk(&a, t, r));
    ASSERT_STR_EQ(json_string_value(json_object_get(r, "log")), "bW9yZQ==");
    json_decref(r);

    unlink(lp);
    free(lp);
    char *sp = al__task_file(&a, t, "state");
    unlink(sp);
    free(sp);
    rmdir(dir);
    free(a.logbuf);
    free(a.tasks);
    free(a.free_slots);
}

/* The controller's notice (idle reclaim's warning) goes into a running
 * task's log once, after what the task wrote; another notice goes too. */
static void
log_notice(void)
{
    char dir[] = "/tmp/allot-unit-agent-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    agent_t a;
    memset(&a, 0, sizeof a);
    a.task_dir = dir;
    task_t *t = al__task_add(&a, 7, 0, 0);
    al__task_take_slot(&a, t);
    char *lp = al__task_file(&a, t, "log");
    FILE *f = fopen(lp, "w");
    ASSERT(f != NULL);
    fputs("out\n", f);
    fclose(f);
    t->state = T_WAITING; /* not running: nothing */
    al__tasklog_notice(&a, t, "first\n");
    t->state = T_RUNNING;
    al__tasklog_notice(&a, t, "first\n");
    al__tasklog_notice(&a, t, "first\n");
    al__tasklog_notice(&a, t, "second\n");
    char text[64] = { 0 };
    f = fopen(lp, "r");
    ASSERT(f != NULL);
    ASSERT_EQ(fread(text, 1, sizeof text - 1, f),
              strlen("out\nfirst\nsecond\n"));
    fclose(f);
    ASSERT_STR_EQ(text, "out\nfirst\nsecond\n");
    unlink(lp);
    free(lp);
    char *sp = al__task_file(&a, t, "state");
    unlink(sp);
    free(sp);
    rmdir(dir);
    free(a.tasks);
    free(a.free_slots);
}

/* Emulated GPUs' utilisation: STATE/gpu-util/INDEX, a percentage. */
static void
fake_util(void)
{
    static const struct {
        const char *text;
        int pct; /* -1: refused */
    } cases[] = {
        { "0", 0 },       { "60\n", 60 },
        { " 7 \r\n", 7 }, { "100", 100 },
        { "101", -1 },    { "-1", -1 },
        { "", -1 },       { "5%", -1 },
        { "1 2", -1 },    { "99999999999999", -1 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int pct = -7;
        int rc =
            al_platform_util_parse(cases[i].text, strlen(cases[i].text), &pct);
        ASSERT_EQ(rc, cases[i].pct < 0 ? AL_EINVAL : 0);
        ASSERT_EQ(pct, cases[i].pct < 0 ? -7 : cases[i].pct);
    }
    char dir[] = "/tmp/allot-unit-agent-XXXXXX";
    ASSERT(mkdtemp(dir) != NULL);
    ASSERT(!al_platform_fake_util_on(dir));
    char sub[64], file[80];
    snprintf(sub, sizeof sub, "%s/gpu-util", dir);
    ASSERT_EQ(mkdir(sub, 0700), 0);
    ASSERT(al_platform_fake_util_on(dir));
    al_gpu_sample_t s;
    ASSERT_EQ(al_platform_fake_sample(dir, 1, &s), AL_ENOENT);
    snprintf(file, sizeof file, "%s/1", sub);
    FILE *f = fopen(file, "w");
    ASSERT(f != NULL);
    fputs("42\n", f);
    fclose(f);
    ASSERT_EQ(al_platform_fake_sample(dir, 1, &s), 0);
    ASSERT_EQ(s.util_pct, 42);
    ASSERT_EQ(s.mem_used, -1);
    unlink(file);
    rmdir(sub);
    rmdir(dir);
}

const al_test_t test_agent[] = {
    { "env_entry", env_entry },
    { "env_dedup_order", env_dedup_order },
    { "env_dedup_many", env_dedup_many },
    { "task_env_plain", task_env_plain },
    { "task_env_slurm", task_env_slurm },
    { "slot_names", slot_names },
    { "records", records },
    { "gpu_shares", gpu_shares },
    { "table_on_disk", table_on_disk },
    { "adopt_alive", adopt_alive },
    { "log_chunks", log_chunks },
    { "log_notice", log_notice },
    { "fake_util", fake_util },
    { NULL, NULL },
};
