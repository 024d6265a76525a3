/* agent_int.h -- internals shared by the agent's files (agent.c, launch.c). */
#ifndef AL_AGENT_INT_H
#define AL_AGENT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "platform.h"

/* nvml.c: fills info->gpus from NVML when the driver's library loads and
 * keeps it open in info->nvml; returns the number of GPUs found (0 without
 * NVML). */
int al__nvml_probe(al_platform_info_t *info);
/* Telemetry of GPU i (see al_platform_sample()). */
int al__nvml_sample(struct al__nvml *nv, int i, al_gpu_sample_t *s);
void al__nvml_close(struct al__nvml *nv);

/*
 * A task's record, tasks/SLOT.state, is AL__REC_LEN bytes: the line
 * "JOB TASK RESTART PID START DEVICES" (the task's pid, which leads its
 * process group, its start time, its GPU mask) padded with spaces to
 * AL__REC_ID bytes, then "CODE SIGNAL" once it has ended (spaces before).
 * A slot whose record begins with '-' is free.  Fixed places, written with
 * pwrite(): no truncation, no new file per task.
 */
#define AL__REC_ID 96
#define AL__REC_LEN 128

/* The first line of a record, parsed. */
typedef struct al__rec {
    unsigned long long job, devices;
    int index, restart;
    long pid;
    long long start;
} al__rec_t;

/* Parses "JOB TASK RESTART PID START DEVICES" at rec (the first line of a
 * record); false if malformed (a free slot's '-' included). */
bool al__rec_parse(const char *rec, al__rec_t *r);
/* Writes text into a record field of len bytes: padded with spaces, the
 * last byte '\n', no NUL. */
void al__rec_field(char *dst, size_t len, const char *text);

/* What a task needs to start. */
typedef struct al__launch {
    const char *ident;      /* "JOB TASK RESTART", first in the record */
    char *const *argv;      /* NULL-terminated; argv[0] searched in PATH */
    const char *cwd;        /* or NULL: the agent's */
    char *const *envp;      /* NULL-terminated */
    const char *log_path;   /* stdout and stderr, appended */
    const char *state_path; /* the record */
    unsigned long long devices;
    const char *user; /* run as this user when root, or NULL */
} al__launch_t;

/*
 * Starts a task in a new session (its pid is its process group) with
 * vfork() (fork() when it must become another user), signals blocked
 * around it and restored in the child, descriptors closed; writes its
 * record.  Returns the task's pid with the record's descriptor (kept open
 * to write the exit) in *state_fd, or -1 with a message in *cause and
 * errno set.  Runs in the spawner, which is the task's parent.
 */
pid_t al__launch(const al__launch_t *l, int *state_fd, char **cause);
/* Prepares the process that starts tasks, once: raises its soft limit of
 * open files to its hard limit (each running task holds a descriptor: the
 * usual soft limit, 1,024, capped a node at about 1,000 tasks; tasks
 * started afterwards get the old soft limit back), and reads the test
 * hook ALLOT_TEST_LAUNCH_HANG (see launch.c). */
void al__launch_init(void);
/* Writes the exit part of a record: exit code, or signal.  0 or -1. */
int al__record_exit(int state_fd, int code, int sig);

/* A self-pipe for SIGCHLD: p[] non-blocking and close-on-exec, handler
 * (which writes a byte to p[1]) installed with SA_RESTART | SA_NOCLDSTOP.
 * 0 or -1. */
int al__chld_pipe(int p[2], void (*handler)(int));

/* spawner.c: a small process, the parent of the tasks (see there why). */
typedef struct al__spawner {
    pid_t pid;       /* -1: none (tasks are launched from the agent itself) */
    int sock;        /* requests and replies */
    int exit_fd;     /* {pid, wait status} of ended tasks */
    int32_t (*q)[2]; /* records read while awaiting a reply */
    size_t nq, qcap;
    int unread; /* requests sent whose replies were not read yet */
    /* How long a reply may take (ms): a task's start blocks the spawner
     * until its program runs, and a working directory or program on a
     * file system that hangs (NFS) would block it, and every start after
     * it, for good.  0: no limit. */
    int64_t timeout_ms;
} al__spawner_t;

/* How many requests the agent may send before it reads their replies. */
#define AL__SPAWN_BATCH 16

/* Forks the spawner, which writes a byte to wake_fd whenever a record
 * waits in exit_fd.  0 or AL_EIO. */
int al__spawner_start(al__spawner_t *s, int wake_fd);
/* Closes the connection (the spawner exits) and waits for it. */
void al__spawner_stop(al__spawner_t *s);
/* Starts a task through the spawner: its pid; -1 with *cause when it
 * could not start; AL_EUNAVAIL when the spawner is gone. */
pid_t al__spawner_launch(al__spawner_t *s, const al__launch_t *l, char **cause);
/* The same in two halves, so that several tasks start with one exchange:
 * al__spawner_send() sends a request (0; AL_ELIMIT, nothing sent, when it
 * is too large; AL_EUNAVAIL when the spawner is gone);
 * al__spawner_result() reads the reply to the oldest request sent and not
 * yet answered, and returns what al__spawner_launch() would.  At most
 * AL__SPAWN_BATCH requests may wait for their replies: the spawner answers
 * those that came together at once, after starting them all. */
int al__spawner_send(al__spawner_t *s, const al__launch_t *l);
pid_t al__spawner_result(al__spawner_t *s, char **cause);
/* When al__spawner_result() times out it returns AL_ETIMEDOUT: the start
 * it waits for hangs.  The caller then calls al__spawner_kill_hung() with
 * the pids of the tasks it knows the spawner started (known[0..n-1]): the
 * spawner's other children, starts that never reached their program, are
 * killed (SIGKILL: they die before running it, even when the kill waits
 * for the file system), then the spawner itself; its tasks come to the
 * agent, a child subreaper. */
void al__spawner_kill_hung(al__spawner_t *s, const pid_t *known, size_t n);
/* One ended task ({pid, wait status}; its record has the exit already),
 * without blocking: 1, or 0 if none. */
int al__spawner_reaped(al__spawner_t *s, pid_t *pid, int *status);

#endif /* AL_AGENT_INT_H */
