/*
 * cli_client.h -- what the client subcommands share: option tables, the
 * server URL and token (flags, then ALLOT_SERVER / ALLOT_TOKEN, then the
 * user's config file), calls to the API with errors printed the same way
 * everywhere, and small formatting helpers.
 */
#ifndef AL_CLI_CLIENT_H
#define AL_CLI_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "opt.h"

#define AL_CLI_DEFAULT_SERVER "http://127.0.0.1:7070"

/* The options every client command takes, as entries of a static option
 * table over struct `type`: --server URL, --token T and --help into its
 * members server, token and help. */
// clang-format off
#define AL_CLI_CONN_OPTS(type)                                              \
    { .name = "--server", .kind = AL_OPT_STR,                               \
      .off = offsetof(type, server), .arg = "URL",                          \
      .help = "the controller (default: ALLOT_SERVER, then your config "    \
              "file, then " AL_CLI_DEFAULT_SERVER ")" },                    \
    { .name = "--token", .kind = AL_OPT_STR,                                \
      .off = offsetof(type, token), .arg = "T",                             \
      .help = "an API token (default: ALLOT_TOKEN, then your config "       \
              "file)" },                                                    \
    { .name = "--help", .kind = AL_OPT_FLAG,                                \
      .off = offsetof(type, help), .help = "this text" }
// clang-format on

typedef struct al_client {
    al_url_t url; /* the controller that answered last (urls[0] at first) */
    char *server;
    char *token;
    /* --server A,B,C: a failover group's controllers, tried in turn while
     * one cannot be reached or answers 503 (al_client_call()). */
    al_url_t urls[AL_URL_LIST_MAX];
    int nurls;
} al_client_t;

/* Resolves the server and token; server/token may be NULL (not given on
 * the command line).  0 or AL_EXIT_USAGE after printing why. */
int al_client_init(al_client_t *c, const char *server, const char *token);
void al_client_fini(al_client_t *c);

/*
 * Calls the API.  On a 2xx answer returns 0 and the parsed JSON in *out
 * (caller decrefs; NULL for a non-JSON body, whose text goes to raw when
 * raw is not NULL).  Otherwise prints the error ("allot: MESSAGE") and
 * returns AL_EXIT_FAIL.
 */
int al_client_call(al_client_t *c, const char *method, const char *path,
                   json_t *body, json_t **out, char **raw, size_t *rawlen);

/* "3m", "2h", "5d" for a duration in ms. */
void al_cli_age(int64_t ms, char *buf, size_t len);
/* Parses "4G", "512M", "100K", "2T" (binary units) or a plain number of
 * MiB.  0 or -1 if malformed. */
int al_cli_parse_mem(const char *s, int64_t *bytes);
/* Parses a duration: seconds, or a number with s, m, h or d ("90",
 * "30m", "1.5h").  0 or -1 if malformed. */
int al_cli_parse_duration(const char *s, int64_t *seconds);
/* Parses a point in time for --since/--until, into seconds since the
 * epoch: "now", "-DURATION" (before now: "-7d", "-90m"), "@SECONDS",
 * "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS]" in local time, or with a trailing
 * "Z" in UTC.  0 or -1 if malformed. */
int al_cli_parse_when(const char *s, int64_t now, int64_t *out);
/* Prints v as indented JSON on stdout. */
void al_cli_print_json(const json_t *v);

#endif /* AL_CLI_CLIENT_H */
