/*
 * term.h -- the local terminal of the CLI's interactive commands (`allot
 * run`, attach, exec; srun and salloc --pty): raw mode, its size, and a
 * self-pipe that signals are written to.
 */
#ifndef AL_CLI_TERM_H
#define AL_CLI_TERM_H

#include <stdbool.h>
#include <stddef.h>

/* Puts stdin's terminal in raw mode (every key as it is), restored by
 * al_term_restore() or at exit; nothing when stdin is no terminal. */
void al_term_raw(void);
/* Restores the terminal's mode that al_term_raw() saved, if it is raw. */
void al_term_restore(void);
/* Whether al_term_raw() put the terminal in raw mode. */
bool al_term_is_raw(void);
/* stdin's terminal's rows and columns; 0 and 0 when it has none. */
void al_term_size(int *rows, int *cols);
/* The n signals sigs to a self-pipe (both ends close-on-exec), one byte
 * each, the signal's number; the pipe is made once. */
void al_term_signals_on(const int *sigs, size_t n);
/* The self-pipe's read end; -1 before al_term_signals_on(). */
int al_term_signal_fd(void);

#endif
