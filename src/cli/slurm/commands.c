/*
 * commands.c -- the table of Slurm's command names (main.c asks
 * al_slurm_main() first, so the allot binary answers to them) and `allot
 * slurm-commands DIR`, which links those names to it.
 *
 * May call: the commands (sbatch.c, squeue.c, ...), src/common.
 */
#include "slurm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opt.h"
#include "slurm_int.h"
#include "xmalloc.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} commands[] = {
    { "sbatch", al__sbatch },     { "squeue", al__squeue },
    { "scancel", al__scancel },   { "sinfo", al__sinfo },
    { "sacct", al__sacct },       { "scontrol", al__scontrol },
    { "sacctmgr", al__sacctmgr }, { "srun", al__srun },
    { "salloc", al__salloc },
};

#define NCOMMANDS (sizeof commands / sizeof commands[0])

int
al_slurm_main(int argc, char **argv)
{
    if (argc < 1 || argv[0] == NULL)
        return -1;
    const char *slash = strrchr(argv[0], '/');
    const char *name = slash != NULL ? slash + 1 : argv[0];
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0) {
            argv[0] = (char *)commands[i].name;
            return commands[i].fn(argc, argv);
        }
    return -1;
}

typedef struct links_args {
    bool help, force;
} links_args_t;

static const al_opt_t links_opts[] = {
    { .name = "--force",
      .kind = AL_OPT_FLAG,
      .off = offsetof(links_args_t, force),
      .help = "replace files of those names that are not links to allot" },
    { .name = "--help",
      .kind = AL_OPT_FLAG,
      .off = offsetof(links_args_t, help),
      .help = "this text" },
    { .name = NULL },
};

const al_opt_cmd_t al_cli_slurm_commands_cmd = {
    .name = "slurm-commands",
    .opts = links_opts,
    .args = "DIR",
    .about = "Links sbatch, srun, salloc, squeue, scancel, sacct, sinfo,\n"
             "scontrol and sacctmgr in DIR (e.g. /usr/local/bin or\n"
             "~/.local/bin) to this allot: run under those names, it "
             "answers\n"
             "as Slurm's commands do (docs/slurm.md).  A link already there "
             "is\nreplaced.\n",
};

int
al_cli_slurm_commands(int argc, char **argv)
{
    links_args_t a = { false, false };
    char *pos[2] = { NULL, NULL };
    int npos = 0;
    int rc = al_opt_parse_cmd(&al_cli_slurm_commands_cmd, NULL, &a, argc, argv,
                              pos, 2, &npos);
    if (rc != 0 || a.help || npos != 1) {
        al_opt_usage(a.help ? stdout : stderr, &al_cli_slurm_commands_cmd);
        return a.help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    const char *dir = pos[0];
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "allot slurm-commands: cannot find this program: %s\n",
                strerror(errno));
        return AL_EXIT_FAIL;
    }
    self[n] = '\0';
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "allot slurm-commands: %s is not a directory\n", dir);
        return AL_EXIT_USAGE;
    }
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char *path = al_xasprintf("%s/%s", dir, commands[i].name);
        struct stat ls;
        if (lstat(path, &ls) == 0 && !S_ISLNK(ls.st_mode) && !a.force) {
            fprintf(stderr,
                    "allot slurm-commands: %s exists and is not a link "
                    "(a real Slurm?); left alone (--force replaces it)\n",
                    path);
            free(path);
            rc = AL_EXIT_FAIL;
            continue;
        }
        if ((unlink(path) != 0 && errno != ENOENT) ||
            symlink(self, path) != 0) {
            fprintf(stderr, "allot slurm-commands: %s: %s\n", path,
                    strerror(errno));
            rc = AL_EXIT_FAIL;
        } else {
            printf("%s -> %s\n", path, self);
        }
        free(path);
    }
    return rc;
}
