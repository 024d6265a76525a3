/*
 * scancel.c -- `scancel`: cancels jobs by id or by filter (-u, -n, -t, -p,
 * -A).  allot cancels with SIGTERM then SIGKILL (what --signal=KILL
 * does too); another --signal goes to the job's tasks through the
 * controller, by a command beside each (step.c).
 *
 * May call: slurm.c (the API, the mapping), step.c (the streams).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "slurm_int.h"
#include "xmalloc.h"

static const struct option longopts[] = {
    { "user", required_argument, NULL, 'u' },
    { "name", required_argument, NULL, 'n' },
    { "state", required_argument, NULL, 't' },
    { "partition", required_argument, NULL, 'p' },
    { "account", required_argument, NULL, 'A' },
    { "signal", required_argument, NULL, 's' },
    { "batch", no_argument, NULL, 'b' },
    { "full", no_argument, NULL, 'f' },
    { "quiet", no_argument, NULL, 'Q' },
    { "verbose", no_argument, NULL, 'v' },
    { "me", no_argument, NULL, 'M' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
};

/* What a --signal does beside each task of the job: $1 the signal, $2
 * whom (batch: the task's own process, steps: its children, full: both). */
static const char signal_sh[] =
    AL_SL_SIG_KIDS "P=$ALLOT_TASK_PID; S=$1\n"
                   "[ -n \"$P\" ] || exit 3\n"
                   "case $2 in batch) kill -$S $P;; steps) sig_kids;;\n"
                   "*) kill -$S $P; sig_kids;; esac\nexit 0\n";

/* --signal=SIG: sent to the running job's tasks through the controller (a
 * command beside each, as `allot exec` runs one).  A batch script's steps
 * get it (its children: srun passes it on), the script itself with -b,
 * both with -f; a job that srun started is its step: its tasks get it. */
static int
signal_job(al_client_t *c, const al_sl_id_t *id, const char *w, int sig,
           char mode, bool quiet)
{
    int st;
    json_t *j = al__sl_job(c, id, &st);
    const char *state = al_json_str(j, "state", "");
    int rc = 0;
    if (j == NULL) {
        if (st == 404 && !quiet)
            fprintf(stderr,
                    "scancel: error: Kill job error on job id %s: Invalid "
                    "job id specified\n",
                    w);
        rc = 1;
    } else if (strcmp(state, "pending") == 0 || strcmp(state, "held") == 0) {
        /* Slurm's ESLURM_TRANSITION_STATE_NO_UPDATE, as its exit status
         * (2020 modulo 256). */
        fprintf(stderr,
                "scancel: error: Kill job error on job id %s: Job can not "
                "be altered now, try again later\n",
                w);
        rc = 228;
    } else if (strcmp(state, "running") != 0) {
        if (!quiet)
            fprintf(stderr,
                    "scancel: error: Kill job error on job id %s: Job/step "
                    "already completing or completed\n",
                    w);
        rc = 1;
    }
    if (rc != 0) {
        json_decref(j);
        return rc;
    }
    bool batch = json_object_get(j, "script") != NULL;
    const char *whom = mode == 'f'             ? "full"
                       : mode == 'b' || !batch ? "batch"
                                               : "steps";
    char num[16];
    snprintf(num, sizeof num, "%d", sig);
    int n = (int)al_json_int(j, "tasks", 1);
    n = n < 1 ? 1 : n;
    json_t **cmds = al_xcalloc((size_t)n, sizeof(json_t *));
    for (int k = 0; k < n; k++)
        cmds[k] = json_pack("[s, s, s, s, s, s]", "/bin/sh", "-c", signal_sh,
                            "scancel", num, whom);
    rc = al__sl_step(c, "scancel", j, n, cmds,
                     AL_SL_STEP_QUIET | AL_SL_STEP_CUT_OK) != 0;
    for (int k = 0; k < n; k++)
        json_decref(cmds[k]);
    free(cmds);
    json_decref(j);
    return rc;
}

/* Cancels the job id (written w on the command line). */
static int
cancel(al_client_t *c, const al_sl_id_t *id, const char *w, bool quiet)
{
    int st = al__sl_post(c, id, "cancel");
    if (st == 0)
        return 1;
    if (st == 404 && !quiet)
        fprintf(stderr,
                "scancel: error: Kill job error on job id %s: Invalid job "
                "id specified\n",
                w);
    else if (st == 409 && !quiet)
        fprintf(stderr,
                "scancel: error: Kill job error on job id %s: Job/step "
                "already completing or completed\n",
                w);
    else if (st == 403)
        fprintf(stderr,
                "scancel: error: Kill job error on job id %s: Access/"
                "permission denied\n",
                w);
    return st == 403 ? 1 : 0;
}

/* What scancel does to job id: signal it (signum not 0) or cancel it. */
static int
act(al_client_t *c, const al_sl_id_t *id, const char *w, int signum, char mode,
    bool quiet)
{
    if (signum != 0)
        return signal_job(c, id, w, signum, mode, quiet);
    return cancel(c, id, w, quiet);
}

int
al__scancel(int argc, char **argv)
{
    const char *users = NULL, *names = NULL, *states = NULL, *parts = NULL,
               *accts = NULL, *sig = NULL;
    bool quiet = false, me = false;
    char mode = 0;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "u:n:t:p:A:s:bfQvh", longopts, NULL)) !=
           -1) {
        switch (c) {
        case 'u':
            users = optarg;
            break;
        case 'n':
            names = optarg;
            break;
        case 't':
            states = optarg;
            break;
        case 'p':
            parts = optarg;
            break;
        case 'A':
            accts = optarg;
            break;
        case 's':
            sig = optarg;
            break;
        case 'Q':
            quiet = true;
            break;
        case 'M':
            me = true;
            break;
        case 'b':
        case 'f':
            mode = (char)c;
            break;
        case 'v':
            break;
        case 'h':
            printf("Usage: scancel [-u USER] [-n NAME] [-t STATE] [-p "
                   "PARTITION] [-A ACCOUNT] [job_id...]\n");
            return 0;
        default:
            fprintf(stderr, "Try \"scancel --help\" for more information\n");
            return 1;
        }
    }
    int signum = sig != NULL ? al_sl_signum(sig) : SIGKILL;
    if (signum < 0) {
        fprintf(stderr, "scancel: error: Invalid job signal: %s\n", sig);
        return 1;
    }
    /* SIGKILL is a cancel (allot's: SIGTERM, then SIGKILL after the grace
     * period); any other signal is sent as it is. */
    if (signum == SIGKILL)
        signum = 0;
    bool filters = users || names || states || parts || accts || me;
    if (optind >= argc && !filters) {
        fprintf(stderr, "scancel: error: No job identification provided\n");
        return 1;
    }
    json_t *want = NULL;
    if (states != NULL && (want = al__sl_states(states)) == NULL) {
        fprintf(stderr, "scancel: error: Invalid job state: %s\n", states);
        return 1;
    }
    for (int i = optind; i < argc; i++) {
        al_sl_id_t id;
        if (!al__sl_parse_id(argv[i], &id)) {
            fprintf(stderr, "scancel: error: Invalid job id %s\n", argv[i]);
            json_decref(want);
            return 1;
        }
    }
    al_client_t cl;
    if (al__sl_connect(&cl) != 0) {
        json_decref(want);
        return 1;
    }
    int rc = 0;
    if (optind < argc && !filters) {
        for (int i = optind; i < argc; i++) {
            al_sl_id_t id = { 0, -1 };
            al__sl_parse_id(argv[i], &id);
            int r = act(&cl, &id, argv[i], signum, mode, quiet);
            if (r > rc)
                rc = r;
        }
    } else {
        char *self = NULL;
        if (me) {
            json_t *who = NULL;
            if (al_client_call(&cl, "GET", "/v1/whoami", NULL, &who, NULL,
                               NULL) == 0)
                self = strdup(al_json_str(who, "user", ""));
            json_decref(who);
        }
        json_t *list = al__sl_jobs(&cl, "state=active");
        json_t *fu = users ? al__sl_split(users) : NULL;
        json_t *fn = names ? al__sl_split(names) : NULL;
        json_t *fp = parts ? al__sl_split(parts) : NULL;
        json_t *fa = accts ? al__sl_split(accts) : NULL;
        rc = list == NULL;
        for (size_t i = 0; i < json_array_size(list); i++) {
            json_t *j = json_array_get(list, i);
            al_sl_id_t id = { al_json_int(j, "id", 0), -1 };
            bool listed = optind >= argc;
            for (int k = optind; k < argc && !listed; k++) {
                al_sl_id_t x = { 0, -1 };
                al__sl_parse_id(argv[k], &x);
                listed = x.id == id.id && x.index < 0;
            }
            if (!listed || (fu && !al__sl_in(fu, al_json_str(j, "user", ""))) ||
                (self && strcmp(self, al_json_str(j, "user", "")) != 0) ||
                (fn && !al__sl_in(fn, al_json_str(j, "name", ""))) ||
                (fp && !al__sl_in(fp, al__sl_partition(j))) ||
                (fa && !al__sl_in(fa, al_json_str(j, "queue", ""))) ||
                (want && !al__sl_in(want, al__sl_state(j))))
                continue;
            char w[32];
            snprintf(w, sizeof w, "%lld", id.id);
            int r = act(&cl, &id, w, signum, mode, true);
            if (r > rc)
                rc = r;
        }
        free(self);
        json_decref(fu);
        json_decref(fn);
        json_decref(fp);
        json_decref(fa);
        json_decref(list);
    }
    json_decref(want);
    al_client_fini(&cl);
    return rc;
}
