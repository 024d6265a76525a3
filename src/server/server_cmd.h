/*
 * server_cmd.h -- `allot server`'s command line: the structure its options
 * (server_cmd.c) store into, read by al_server_main() (server.c).
 */
#ifndef AL_SERVER_CMD_H
#define AL_SERVER_CMD_H

#include <stdint.h>

#include "daemon.h"
#include "server.h"

typedef struct server_args {
    al_server_opts_t o;
    const char *sync;
    int64_t max_body;
    al_daemon_t d;
} server_args_t;
#endif /* AL_SERVER_CMD_H */
