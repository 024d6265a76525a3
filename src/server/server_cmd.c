/*
 * server_cmd.c -- `allot server`'s options and --help text, data only, in
 * a file of their own: the allot command lists them in its help without
 * linking the controller (and its libraries: libmicrohttpd, SQLite,
 * libpq); the controller itself runs in allot-daemon.
 *
 * May call: nothing (src/common's option and daemon tables' types only).
 */
#include <stddef.h>
#include <stdint.h>

#include "opt.h"
#include "server_cmd.h"

#define S(f) offsetof(server_args_t, f)

static const al_opt_t server_opts[] = {
    { .name = "--listen",
      .kind = AL_OPT_STR,
      .off = S(o.listen),
      .arg = "HOST:PORT",
      .help = "where to listen (default 127.0.0.1:7070; port 0 picks a "
              "free one)",
      .flags = AL_OPT_BRIEF },
    { .name = "--state",
      .kind = AL_OPT_STR,
      .off = S(o.state_dir),
      .arg = "DIR",
      .help = "the state directory, created if missing (default "
              "./allot-state)",
      .flags = AL_OPT_BRIEF },
    { .name = "--store",
      .kind = AL_OPT_STR,
      .off = S(o.store),
      .arg = "URI",
      .help = "where the state lives: sqlite (the default, STATE/allot.db) "
              "or postgresql://[USER@]HOST[:PORT]/DATABASE (any libpq URI; a "
              "password is better in ~/.pgpass or PGPASSWORD)" },
    { .name = "--metrics-listen",
      .kind = AL_OPT_STR,
      .off = S(o.metrics_listen),
      .arg = "HOST:PORT",
      .help = "also listen here for GET /metrics only, without a token "
              "(for Prometheus; port 0 picks a free one; elsewhere /metrics "
              "needs a token of the metrics or admin role)" },
    { .name = "--standby",
      .kind = AL_OPT_FLAG,
      .off = S(o.standby),
      .help = "with --store postgresql://...: while another controller "
              "is active on the database, wait as its standby and take over "
              "when it goes" },
    { .name = "--tls-self-signed",
      .kind = AL_OPT_STR,
      .off = S(o.tls_self_signed),
      .arg = "DIR",
      .help = "serve HTTPS with a certificate signed by a private CA made "
              "in DIR on first start (clients trust DIR/ca.pem)" },
    { .name = "--tls-cert",
      .kind = AL_OPT_STR,
      .off = S(o.tls_cert),
      .arg = "FILE",
      .help = "serve HTTPS with this PEM certificate (chain), with "
              "--tls-key" },
    { .name = "--tls-key",
      .kind = AL_OPT_STR,
      .off = S(o.tls_key),
      .arg = "FILE",
      .help = "the PEM private key of --tls-cert" },
    { .name = "--usage-keep-minutes",
      .kind = AL_OPT_INT,
      .off = S(o.usage_keep_fine_days),
      .min = 1,
      .max = 36500,
      .arg = "DAYS",
      .help = "keep the usage history's minutes this long (default 7)" },
    { .name = "--usage-keep-hours",
      .kind = AL_OPT_INT,
      .off = S(o.usage_keep_coarse_days),
      .min = 1,
      .max = 36500,
      .arg = "DAYS",
      .help = "keep its hours this long (default 365)" },
    { .name = "--usage-interval",
      .kind = AL_OPT_INT,
      .off = S(o.usage_interval_s),
      .min = 0,
      .max = 3600,
      .arg = "SECONDS",
      .help = "sample the usage history this often (default 60; 0: never)",
      .flags = AL_OPT_HIDDEN },
    { .name = "--usage-rollup",
      .kind = AL_OPT_INT,
      .off = S(o.usage_rollup),
      .min = 2,
      .max = 1000,
      .arg = "N",
      .help = "a coarse row of the usage history every N samples (default "
              "60: hours of minutes)",
      .flags = AL_OPT_HIDDEN },
    { .name = "--topology",
      .kind = AL_OPT_STR,
      .off = S(o.topology),
      .arg = "KEY,...",
      .help = "node label keys that name topology levels, innermost first "
              "(rack,block): a gang goes inside one rack when one holds it" },
    { .name = "--pool-placement",
      .kind = AL_OPT_STR,
      .off = S(o.pool_placement),
      .arg = "POOL=S,...",
      .help = "placement strategy per node pool, S one of bin (the "
              "default), spread, frag (fragmentation-aware)" },
    { .name = "--consolidate",
      .kind = AL_OPT_INT,
      .off = S(o.consolidate_s),
      .min = 0,
      .max = 86400,
      .arg = "SECONDS",
      .help = "every SECONDS, move checkpointing jobs to free a whole node "
              "for a waiting gang (default 0: never)" },
    { .name = "--consolidate-moves",
      .kind = AL_OPT_INT,
      .off = S(o.consolidate_moves),
      .min = 0,
      .max = 10000,
      .arg = "N",
      .help = "at most N such moves per queue and hour (default 4)" },
    { .name = "--fair-share-half-life",
      .kind = AL_OPT_INT,
      .off = S(o.fairshare_half_life_s),
      .min = 60,
      .max = INT64_C(365) * 86400,
      .arg = "SECONDS",
      .help = "half-life of the queues' past GPU usage behind fair share "
              "(default 604800: 7 days); kept in the store" },
    { .name = "--lookahead-depth",
      .kind = AL_OPT_INT,
      .off = S(o.lookahead_depth),
      .min = 0,
      .max = 100000,
      .arg = "N",
      .help = "pipelines: at most N waiting stages a cycle get a look-ahead "
              "reservation at their inputs' expected end (default 8; 0: "
              "none)" },
    { .name = "--lookahead-horizon",
      .kind = AL_OPT_INT,
      .off = S(o.lookahead_horizon_s),
      .min = 0,
      .max = INT64_C(365) * 86400,
      .arg = "SECONDS",
      .help = "pipelines: a look-ahead only for inputs expected to end "
              "within SECONDS (default 0: any)" },
    { .name = "--lookahead-hold",
      .kind = AL_OPT_FLAG,
      .off = S(o.lookahead_hold),
      .help = "a look-ahead holds the free GPUs its stage will need beyond "
              "what its inputs give back, lent to work that ends in time "
              "(default: it holds nothing)" },
    { .name = "--min-runtime",
      .kind = AL_OPT_STR,
      .off = S(o.min_runtime),
      .arg = "CLASS=SECONDS,...",
      .help = "jobs of a class run this long before they may be preempted "
              "or reclaimed (default none; a queue's min_runtime too)" },
    { .name = "--retry-backoff",
      .kind = AL_OPT_INT,
      .off = S(o.retry_backoff_s),
      .min = 0,
      .max = 3600,
      .arg = "SECONDS",
      .help = "a job run again (--retry) waits this long first, twice as "
              "long each next time (default 10)" },
    { .name = "--router-listen",
      .kind = AL_OPT_STR,
      .off = S(o.router_listen),
      .arg = "HOST:PORT",
      .help = "serve inference services: take their requests here, at "
              "/s/NAME/... (port 0 picks a free one; STATE/router-url tells "
              "which)" },
    { .name = "--router-head-timeout",
      .kind = AL_OPT_INT,
      .off = S(o.router_head_ms),
      .min = 1,
      .max = INT64_C(3600000),
      .arg = "MS",
      .help = "a request whose head has not come whole this long after "
              "the connection or its first bytes gets 408 (default "
              "10000)" },
    { .name = "--service-ports",
      .kind = AL_OPT_STR,
      .off = S(o.svc_ports),
      .arg = "LO-HI",
      .help = "the ports given to service replicas in PORT (default "
              "30000-32767)" },
    { .name = "--node-timeout",
      .kind = AL_OPT_INT,
      .off = S(o.node_timeout_ms),
      .min = 100,
      .max = INT64_C(86400000),
      .arg = "MS",
      .help = "a node silent this long is marked down (default 30000)" },
    { .name = "--grace",
      .kind = AL_OPT_INT,
      .off = S(o.grace_ms),
      .min = 0,
      .max = INT64_C(86400000),
      .arg = "MS",
      .help = "from SIGTERM to SIGKILL when a task is stopped (default "
              "10000)" },
    { .name = "--gpu-fault",
      .kind = AL_OPT_STR,
      .off = S(o.gpu_fault),
      .arg = "drain|fence",
      .help = "what a GPU found faulty does to its node: drain it (the "
              "default), or fence only that GPU while the node's other "
              "GPUs take new work" },
    { .name = "--max-body",
      .kind = AL_OPT_INT,
      .off = S(max_body),
      .min = 1024,
      .max = INT64_C(1) << 30,
      .arg = "BYTES",
      .help = "the largest request body (default 1048576)" },
    { .name = "--sync",
      .kind = AL_OPT_STR,
      .off = S(sync),
      .arg = "normal|full",
      .help = "full (the default): a commit is on disk before its reply; "
              "normal: faster, a power cut may lose the last ones" },
    AL_DAEMON_OPTS(server_args_t, d),
    { .name = NULL },
};

#undef S

const al_opt_cmd_t al_server_cmd = {
    .name = "server",
    .opts = server_opts,
    .about = "Runs the controller until SIGINT or SIGTERM.\n",
};