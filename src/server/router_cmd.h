/*
 * router_cmd.h -- `allot router`'s command line: the structure its options
 * (router_cmd.c) store into, read by al_router_main() (routerd.c).
 */
#ifndef AL_ROUTER_CMD_H
#define AL_ROUTER_CMD_H

#include "daemon.h"

typedef struct router_args {
    const char *server, *token_file, *listen, *name, *url_file;
    int64_t head_ms; /* --head-timeout; 0: the router's default */
    al_daemon_t d;
} router_args_t;
#endif /* AL_ROUTER_CMD_H */
