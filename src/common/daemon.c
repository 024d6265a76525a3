/* daemon.c -- the daemons' shared start-up: options, usage, signals. */
#include "daemon.h"

#include <pthread.h>
#include <string.h>

#include "log.h"

int
al_daemon_parse(al_daemon_t *d, const al_opt_cmd_t *c, void *args, int argc,
                char **argv)
{
    d->level = "info";
    d->help = false;
    int npos;
    return al_opt_parse_cmd(c, NULL, args, argc, argv, NULL, 0, &npos);
}

bool
al_daemon_begin(const al_daemon_t *d, const al_opt_cmd_t *c, int rc, bool ok,
                int *status)
{
    int level = al_log_level_parse(d->level);
    if (rc != 0 || d->help || level < 0 || !ok) {
        al_opt_usage(d->help ? stdout : stderr, c);
        *status = d->help ? AL_EXIT_OK : AL_EXIT_USAGE;
        return false;
    }
    al_log_setup(c->name, (al_log_level_t)level);
    return true;
}

void
al_daemon_block(al_daemon_t *d)
{
    sigemptyset(&d->stop);
    sigaddset(&d->stop, SIGINT);
    sigaddset(&d->stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &d->stop, &d->old);
    signal(SIGPIPE, SIG_IGN);
}

int
al_daemon_wait(al_daemon_t *d)
{
    int sig = 0;
    sigwait(&d->stop, &sig);
    return sig;
}

void
al_daemon_unblock(const al_daemon_t *d)
{
    pthread_sigmask(SIG_SETMASK, &d->old, NULL);
}

void
al_daemon_catch(void (*on_stop)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sa.sa_handler = on_stop;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}
