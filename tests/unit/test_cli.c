/*
 * test_cli.c -- the CLI's pure parts: the options of `allot submit` and a
 * job script's #ALLOT and #SBATCH lines (src/cli/script.c, with its table
 * of Slurm options), the checks of a job's request, and the parsers of
 * sizes, durations and ages (src/cli/cli_client.c).  Messages are compared
 * whole.
 */
#include <stdlib.h>

#include "cli_client.h"
#include "json.h"
#include "script.h"
#include "test.h"

/* The result of reading one script: what it set, its env and messages. */
typedef struct read {
    al_submit_args_t a;
    json_t *env;
    char *words, *msgs;
    int errors;
} read_t;

static void
read_script(const char *text, read_t *r)
{
    memset(r, 0, sizeof *r);
    r->env = json_object();
    size_t len = 0;
    FILE *saved = stderr, *mem = open_memstream(&r->msgs, &len);
    ASSERT(mem != NULL);
    stderr = mem;
    r->errors = al_script_directives("job.sh", text, &r->a, r->env, &r->words);
    stderr = saved;
    fclose(mem);
}

static void
read_fini(read_t *r)
{
    json_decref(r->env);
    free(r->words);
    free(r->msgs);
}

static void
script_allot_lines(void)
{
    read_t r;
    read_script("#!/bin/sh\n"
                "#ALLOT --gpus 2 --queue=q --env A=1\n"
                "  # a comment\n"
                "#ALLOT --name first --hold --env B=x=y\n"
                "#ALLOT --name second\n"
                "echo hi\n"
                "#ALLOT --gpus 7\n",
                &r);
    ASSERT_STR_EQ(r.msgs, "");
    ASSERT_EQ(r.errors, 0);
    ASSERT_STR_EQ(r.a.f.gpus, "2"); /* the line after a command is not read */
    ASSERT_STR_EQ(r.a.queue, "q");
    ASSERT_STR_EQ(r.a.name, "second"); /* a later line wins */
    ASSERT(r.a.hold);
    ASSERT_STR_EQ(al_json_str(r.env, "A", NULL), "1");
    ASSERT_STR_EQ(al_json_str(r.env, "B", NULL), "x=y");
    ASSERT(json_object_get(r.env, "ALLOT_SLURM") == NULL);
    read_fini(&r);
}

static void
script_allot_errors(void)
{
    read_t r;
    read_script("#ALLOT --gpuz 2\n"
                "#ALLOT --gpus 99\n"
                "#ALLOT stray\n"
                "#ALLOT --env NOEQUALS\n"
                "#ALLOT --hold=yes\n"
                "#ALLOT --tasks 4\n",
                &r);
    ASSERT_STR_EQ(r.msgs,
                  "allot submit: job.sh:1: unknown option '--gpuz'; see "
                  "`allot submit --help`\n"
                  "allot submit: job.sh:2: --gpus wants a whole number 0..64 "
                  "(use --gpu-fraction for part of a GPU)\n"
                  "allot submit: job.sh:3: too many arguments ('stray')\n"
                  "allot submit: job.sh:4: --env wants NAME=VALUE (in UTF-8)\n"
                  "allot submit: job.sh:5: --hold takes no value\n");
    ASSERT_EQ(r.errors, 5);
    ASSERT(r.a.f.gpus == NULL); /* refused lines set nothing */
    ASSERT_STR_EQ(r.a.f.tasks, "4");
    read_fini(&r);
}

static void
script_sbatch(void)
{
    read_t r;
    read_script("#!/bin/bash\n"
                "#SBATCH -J train --partition=gpu\n"
                "#SBATCH -N 2 --ntasks-per-node 2 --gres=gpu:a100:4\n"
                "#SBATCH --mem=64G -c 8 -t 1:30:00 # the rest is a comment\n"
                "#SBATCH --dependency=afterok:6:11\n"
                "#ALLOT --queue override\n",
                &r);
    ASSERT_STR_EQ(r.msgs, "");
    ASSERT_EQ(r.errors, 0);
    ASSERT_STR_EQ(r.a.name, "train");
    ASSERT_STR_EQ(r.a.queue, "override"); /* #ALLOT over #SBATCH */
    ASSERT_STR_EQ(r.a.f.tasks, "4");      /* 2 nodes x 2 */
    ASSERT_STR_EQ(r.a.f.gpus, "2");       /* 4 per node over 2 tasks */
    ASSERT_STR_EQ(r.a.f.mem, "32768");    /* 64G per node, MiB per task */
    ASSERT_STR_EQ(r.a.f.cpus, "8");
    ASSERT_STR_EQ(r.a.f.tlimit, "5400");
    ASSERT_STR_EQ(r.a.f.after, "6:11");
    ASSERT_STR_EQ(al_json_str(r.env, "ALLOT_SLURM", NULL), "1");
    read_fini(&r);

    /* Per task and in all; --mem-per-cpu times the task's CPUs. */
    read_script("#SBATCH --ntasks=3 --gpus=6 --cpus-per-task=2\n"
                "#SBATCH --mem-per-cpu=1G\n",
                &r);
    ASSERT_EQ(r.errors, 0);
    ASSERT_STR_EQ(r.a.f.gpus, "2");
    ASSERT_STR_EQ(r.a.f.tasks, "3");
    ASSERT_STR_EQ(r.a.f.mem, "2048");
    read_fini(&r);
    read_script("#SBATCH --gpus-per-task 1 -n 2 -G 5\n", &r);
    ASSERT_EQ(r.errors, 0);
    ASSERT_STR_EQ(r.a.f.gpus, "1"); /* per task first */
    read_fini(&r);
    /* The other kinds of dependency, and job arrays. */
    read_script("#SBATCH -d afterany:5,singleton --array=1-8:2%2\n", &r);
    ASSERT_EQ(r.errors, 0);
    ASSERT_STR_EQ(r.a.f.dep, "afterany:5,singleton");
    ASSERT(r.a.f.after == NULL);
    ASSERT_STR_EQ(r.a.f.array, "1-8:2%2");
    read_fini(&r);
}

static void
script_sbatch_ignored(void)
{
    read_t r;
    read_script("#SBATCH --output=x.log --exclusive next -o f.log --frob 3 -Z\n"
                "#SBATCH --mail-user u --requeue -D /tmp\n",
                &r);
    ASSERT_STR_EQ(
        r.msgs,
        "allot submit: job.sh:1: note: #SBATCH --output does not apply "
        "here; ignored\n"
        "allot submit: job.sh:1: note: #SBATCH --exclusive does not apply "
        "here; ignored\n"
        /* --exclusive takes no value: "next" is a stray word */
        "allot submit: job.sh:1: unexpected 'next' in #SBATCH\n"
        "allot submit: job.sh:1: note: #SBATCH -o does not apply here; "
        "ignored\n"
        "allot submit: job.sh:1: note: #SBATCH --frob is not known to "
        "allot; ignored\n"
        "allot submit: job.sh:1: note: #SBATCH -Z is not known to allot; "
        "ignored\n"
        "allot submit: job.sh:2: note: #SBATCH --mail-user does not apply "
        "here; ignored\n"
        "allot submit: job.sh:2: note: #SBATCH --requeue does not apply "
        "here; ignored\n"
        "allot submit: job.sh:2: note: #SBATCH -D does not apply here; "
        "ignored\n");
    ASSERT_EQ(r.errors, 1);
    read_fini(&r);
}

static void
script_sbatch_errors(void)
{
    static const struct {
        const char *text, *msgs;
    } cases[] = {
        { "#SBATCH --array=5-1\n",
          "allot submit: job.sh: #SBATCH lines: --array: array spec '5-1': "
          "the range 5-1 ends before it starts\n" },
        { "#SBATCH -a 0-9%0\n",
          "allot submit: job.sh: #SBATCH lines: --array: array spec "
          "'0-9%0': %0 would run nothing; the limit is at least 1\n" },
        { "#SBATCH --dependency=afterburner:5\n",
          "allot submit: job.sh:1: #SBATCH --dependency: cannot use "
          "'afterburner:5' (afterok, afterany, afternotok, aftercorr with "
          "job ids, or singleton; ',' between them)\n" },
        { "#SBATCH -t 1:2:3:4\n",
          "allot submit: job.sh:1: #SBATCH --time: cannot use '1:2:3:4'\n" },
        { "#SBATCH --gres=tpu:2\n",
          "allot submit: job.sh:1: #SBATCH --gres: cannot use 'tpu:2'\n" },
        { "#SBATCH --ntasks=-1\n",
          "allot submit: job.sh:1: #SBATCH --ntasks: cannot use '-1'\n" },
        { "#SBATCH --nodes\n",
          "allot submit: job.sh:1: #SBATCH --nodes wants a value\n" },
        { "#SBATCH --ntasks=3 --gpus=4\n",
          "allot submit: job.sh: #SBATCH: 4 GPUs in all do not split "
          "evenly over 3 tasks; say --gpus-per-task\n" },
        { "#SBATCH -N 2 --ntasks 6 --gres=gpu:4\n",
          "allot submit: job.sh: #SBATCH: 4 GPUs per node do not split "
          "evenly over 3 tasks per node; say --gpus-per-task\n" },
        { "#SBATCH --mem=lots\n",
          "allot submit: job.sh: #SBATCH lines: --mem wants a size like 16G "
          "or 512M\n" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        read_t r;
        read_script(cases[k].text, &r);
        bool same = strcmp(r.msgs, cases[k].msgs) == 0;
        if (!same)
            fprintf(stderr, "    case %zu: got \"%s\"\n", k, r.msgs);
        int errors = r.errors;
        read_fini(&r);
        ASSERT(same);
        ASSERT_EQ(errors, 1);
    }
}

/* al_script_resources on one flag: the error, or the member it set. */
static void
resources(void)
{
    static const struct {
        size_t off;
        const char *val, *err, *key, *json;
    } cases[] = {
#define F(f) offsetof(al_req_flags_t, f)
        { F(gpus), "64", NULL, "gpus", "64" },
        { F(gpus), "65",
          "--gpus wants a whole number 0..64 (use "
          "--gpu-fraction for part of a GPU)",
          NULL, NULL },
        { F(frac), "0.25", NULL, "gpu_fraction", "0.25" },
        { F(frac), "1",
          "--gpu-fraction wants a number between 0 and 1, "
          "without --gpus",
          NULL, NULL },
        { F(cpus), "0.5", NULL, "cpu_milli", "500" },
        { F(cpus), "nan", "--cpus wants a number of cores (e.g. 4 or 0.5)",
          NULL, NULL },
        { F(mem), "1.5G", NULL, "mem_bytes", "1610612736" },
        { F(mem), "512", NULL, "mem_bytes", "536870912" },
        { F(mem), "1X", "--mem wants a size like 16G or 512M", NULL, NULL },
        { F(tasks), "4096", NULL, "tasks", "4096" },
        { F(tasks), "0",
          "--tasks wants a number 1..4096, or MIN..MAX (2..8) for an elastic "
          "gang",
          NULL, NULL },
        { F(tasks), "2..8", NULL, "max_tasks", "8" },
        { F(tasks), "2..2", NULL, "tasks", "2" },
        { F(tasks), "8..2",
          "--tasks wants a number 1..4096, or MIN..MAX (2..8) "
          "for an elastic gang",
          NULL, NULL },
        { F(after), "6,11", NULL, "after", "[6,11]" },
        { F(after), "6,,x", "--after wants job ids (6, or 6,11: after both)",
          NULL, NULL },
        { F(tlimit), "90m", NULL, "time_limit", "5400" },
        { F(tlimit), "2-00:00:00", NULL, "time_limit", "172800" },
        { F(tlimit), "10:30", NULL, "time_limit", "630" },
        { F(tlimit), "0",
          "--time wants a duration like 3600, 90m, 2h, 1d or "
          "Slurm's 1:30:00 or 2-00:00:00",
          NULL, NULL },
        { F(cls), "build", NULL, "class", "\"build\"" },
        { F(cls), "test", "--class must be train, build or inference", NULL,
          NULL },
        { F(model), "H100", NULL, "gpu_model", "\"H100\"" },
#undef F
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        al_req_flags_t f;
        memset(&f, 0, sizeof f);
        *(const char **)((char *)&f + cases[k].off) = cases[k].val;
        json_t *body = json_object();
        const char *err = al_script_resources(body, &f);
        char *got = cases[k].key != NULL
                        ? al_json_dump(json_object_get(body, cases[k].key))
                        : NULL;
        json_decref(body);
        bool ok = cases[k].err != NULL
                      ? err != NULL && strcmp(err, cases[k].err) == 0
                      : err == NULL && strcmp(got, cases[k].json) == 0;
        if (!ok)
            fprintf(stderr, "    case %zu: err \"%s\", got %s\n", k,
                    err ? err : "", got ? got : "");
        free(got);
        ASSERT(ok);
    }
}

static void
submit_options(void)
{
    al_submit_args_t a;
    memset(&a, 0, sizeof a);
    char *argv[] = { (char *)"submit",
                     (char *)"--gpus",
                     (char *)"2",
                     (char *)"--hold",
                     (char *)"--server=http://s",
                     (char *)"train.py",
                     (char *)"--gpus",
                     (char *)"9",
                     NULL };
    int first = -1;
    ASSERT_EQ(
        al_opt_parse_cmd(&al_script_cmd, NULL, &a, 8, argv, NULL, 0, &first),
        0);
    ASSERT_EQ(first, 5); /* the command's own --gpus is not ours */
    ASSERT_STR_EQ(a.f.gpus, "2");
    ASSERT(a.hold);
    ASSERT_STR_EQ(a.server, "http://s");
    /* Every --env counts, not only the last the table kept. */
    char *envs[] = { (char *)"submit",    (char *)"--env", (char *)"A=1",
                     (char *)"--env=B=2", (char *)"cmd",   NULL };
    json_t *env = json_object();
    ASSERT(al_script_env(env, 4, envs, NULL));
    ASSERT_EQ(json_object_size(env), 2);
    ASSERT_STR_EQ(al_json_str(env, "B", NULL), "2");
    json_decref(env);
    /* Merging: given settings win, flags add up. */
    al_submit_args_t to, from;
    memset(&to, 0, sizeof to);
    memset(&from, 0, sizeof from);
    to.f.gpus = "1";
    to.name = "n";
    to.json = true;
    from.f.gpus = "3";
    from.hold = true;
    al_script_merge(&to, &from);
    ASSERT_STR_EQ(to.f.gpus, "3");
    ASSERT_STR_EQ(to.name, "n");
    ASSERT(to.json && to.hold);
}

static void
units(void)
{
    int64_t b = 0, s = 0;
    ASSERT_EQ(al_cli_parse_mem("100K", &b), 0);
    ASSERT_EQ(b, 102400);
    ASSERT_EQ(al_cli_parse_mem("2TiB", &b), 0);
    ASSERT_EQ(b, INT64_C(2) << 40);
    ASSERT_EQ(al_cli_parse_mem("0.5", &b), 0);
    ASSERT_EQ(b, 524288);
    ASSERT_EQ(al_cli_parse_mem("-1G", &b), -1);
    ASSERT_EQ(al_cli_parse_mem("9e9T", &b), -1);
    ASSERT_EQ(al_cli_parse_mem("1g", &b), -1);
    ASSERT_EQ(b, 524288); /* untouched on error */
    ASSERT_EQ(al_cli_parse_duration("1.5h", &s), 0);
    ASSERT_EQ(s, 5400);
    ASSERT_EQ(al_cli_parse_duration("2d", &s), 0);
    ASSERT_EQ(s, 172800);
    ASSERT_EQ(al_cli_parse_duration("45", &s), 0);
    ASSERT_EQ(s, 45);
    ASSERT_EQ(al_cli_parse_duration("1w", &s), -1);
    ASSERT_EQ(al_cli_parse_duration("1hh", &s), -1);
    ASSERT_EQ(s, 45);
    char age[16];
    static const struct {
        int64_t ms;
        const char *text;
    } ages[] = {
        { -5, "0s" },        { 119999, "119s" }, { 120000, "2m" },
        { 7199999, "119m" }, { 7200000, "2h" },  { 172799999, "47h" },
        { 172800000, "2d" },
    };
    for (size_t k = 0; k < sizeof ages / sizeof ages[0]; k++) {
        al_cli_age(ages[k].ms, age, sizeof age);
        ASSERT_STR_EQ(age, ages[k].text);
    }
}

const al_test_t test_cli[] = {
    { "script_allot_lines", script_allot_lines },
    { "script_allot_errors", script_allot_errors },
    { "script_sbatch", script_sbatch },
    { "script_sbatch_ignored", script_sbatch_ignored },
    { "script_sbatch_errors", script_sbatch_errors },
    { "resources", resources },
    { "submit_options", submit_options },
    { "units", units },
    { NULL, NULL },
};
