/*
 * term.c -- the local terminal of the CLI's interactive commands: `allot
 * run`, attach and exec (cli_run.c), srun and salloc --pty (slurm/step.c).
 * Owns the terminal's saved mode (raw mode, restored at exit), its size,
 * and the self-pipe that signals are written to, to be read in a poll
 * loop.
 *
 * May call: libc alone.  No server or agent code: a client's.
 */
#include "term.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static int sig_pipe[2] = { -1, -1 };
static struct termios saved_tio;
static bool raw_on;

static void
on_signal(int sig)
{
    int e = errno;
    unsigned char b = (unsigned char)sig;
    ssize_t w = write(sig_pipe[1], &b, 1);
    (void)w;
    errno = e;
}

void
al_term_signals_on(const int *sigs, size_t n)
{
    if (sig_pipe[0] < 0 && pipe(sig_pipe) != 0)
        return;
    fcntl(sig_pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(sig_pipe[1], F_SETFD, FD_CLOEXEC);
    for (size_t i = 0; i < n; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

int
al_term_signal_fd(void)
{
    return sig_pipe[0];
}

void
al_term_restore(void)
{
    if (raw_on) {
        tcsetattr(0, TCSADRAIN, &saved_tio);
        raw_on = false;
    }
}

bool
al_term_is_raw(void)
{
    return raw_on;
}

void
al_term_raw(void)
{
    if (tcgetattr(0, &saved_tio) != 0)
        return;
    struct termios t = saved_tio;
    t.c_iflag &= ~(tcflag_t)(IGNBRK | BRKINT | PARMRK | ISTRIP | INLCR | IGNCR |
                             ICRNL | IXON);
    t.c_oflag &= ~(tcflag_t)OPOST;
    t.c_lflag &= ~(tcflag_t)(ECHO | ECHONL | ICANON | ISIG | IEXTEN);
    t.c_cflag &= ~(tcflag_t)(CSIZE | PARENB);
    t.c_cflag |= CS8;
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(0, TCSADRAIN, &t) == 0) {
        raw_on = true;
        atexit(al_term_restore);
    }
}

void
al_term_size(int *rows, int *cols)
{
    struct winsize ws;
    *rows = *cols = 0;
    if (ioctl(0, TIOCGWINSZ, &ws) == 0) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    }
}
