/*
 * router_cmd.c -- `allot router`'s options and --help text, data only, in
 * a file of their own, as server_cmd.c: the allot command lists them in
 * its help without linking the router.
 *
 * May call: nothing (src/common's option and daemon tables' types only).
 */
#include <stddef.h>
#include <stdint.h>

#include "opt.h"
#include "router_cmd.h"

#define R(f) offsetof(router_args_t, f)

static const al_opt_t router_opts[] = {
    { .name = "--server",
      .kind = AL_OPT_STR,
      .off = R(server),
      .arg = "URL",
      .help = "the controller (required)",
      .flags = AL_OPT_REQUIRED | AL_OPT_BRIEF },
    { .name = "--token-file",
      .kind = AL_OPT_STR,
      .off = R(token_file),
      .arg = "FILE",
      .help = "a file holding an admin's token (required; the router reads "
              "the service table and reports the load)",
      .flags = AL_OPT_REQUIRED },
    { .name = "--listen",
      .kind = AL_OPT_STR,
      .off = R(listen),
      .arg = "HOST:PORT",
      .help = "where to take requests, at /s/NAME/... (default "
              "127.0.0.1:8080; port 0 picks a free one)",
      .flags = AL_OPT_BRIEF },
    { .name = "--name",
      .kind = AL_OPT_STR,
      .off = R(name),
      .arg = "ID",
      .help = "this router's name in its reports (default: HOST:PORT)" },
    { .name = "--url-file",
      .kind = AL_OPT_STR,
      .off = R(url_file),
      .arg = "FILE",
      .help = "write the URL it listens on here once it does" },
    { .name = "--head-timeout",
      .kind = AL_OPT_INT,
      .off = R(head_ms),
      .min = 1,
      .max = INT64_C(3600000),
      .arg = "MS",
      .help = "a request whose head has not come whole this long after "
              "the connection or its first bytes gets 408 (default "
              "10000)" },
    AL_DAEMON_OPTS(router_args_t, d),
    { .name = NULL },
};

const al_opt_cmd_t al_router_cmd = {
    .name = "router",
    .opts = router_opts,
    .about = "A router for inference services, beside the controller's own "
             "(allot server\n--router-listen): it routes by the "
             "controller's service table and reports\nits load, which the "
             "autoscaler adds up.  Run several for scale.\n",
};
