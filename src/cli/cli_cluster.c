/* cli_cluster.c -- `allot nodes`, `allot queues`, `allot token create`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"
#include "cli_client.h"
#include "json.h"

/* Options every read command takes. */
struct read_opts {
    const char *server, *token;
    bool json, help;
};

static const al_opt_t read_table[] = {
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = offsetof(struct read_opts, json),
      .help = "the answer as JSON",
      .flags = AL_OPT_BRIEF },
    AL_CLI_CONN_OPTS(struct read_opts),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_nodes_cmd = { .name = "nodes", .opts = read_table };
const al_opt_cmd_t al_cli_queues_cmd = { .name = "queues", .opts = read_table };

/* 0, -1 after --help, or AL_EXIT_USAGE. */
static int
parse_read(const al_opt_cmd_t *cmd, int argc, char **argv, struct read_opts *o)
{
    memset(o, 0, sizeof *o);
    int npos, rc = al_opt_parse_cmd(cmd, NULL, o, argc, argv, NULL, 0, &npos);
    if (rc != 0 || o->help) {
        al_opt_usage(o->help ? stdout : stderr, cmd);
        return o->help ? -1 : AL_EXIT_USAGE;
    }
    return 0;
}

/* GETs path and returns member `key` of the answer (new reference). */
static int
fetch(const struct read_opts *o, const char *path, const char *key,
      json_t **out)
{
    al_client_t c;
    int rc = al_client_init(&c, o->server, o->token);
    if (rc != 0)
        return rc;
    json_t *v = NULL;
    rc = al_client_call(&c, "GET", path, NULL, &v, NULL, NULL);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    *out = json_incref(json_object_get(v, key));
    json_decref(v);
    return 0;
}

/* A node's labels as "k=v,k=v" (or "-") and its rack: the innermost
 * level of the controller's topology, else "-". */
static void
node_labels(const json_t *n, char *buf, size_t len, char *rack, size_t rlen)
{
    const char *k;
    json_t *v;
    size_t off = 0;
    buf[0] = '\0';
    json_object_foreach(json_object_get(n, "labels"), k, v)
    {
        if (off < len)
            off += (size_t)snprintf(buf + off, len - off, "%s%s=%s",
                                    off ? "," : "", k, json_string_value(v));
    }
    if (buf[0] == '\0')
        snprintf(buf, len, "-");
    snprintf(rack, rlen, "-");
    /* The topology object lists levels outermost first: the last one. */
    json_object_foreach(json_object_get(n, "topology"), k, v)
    {
        if (json_is_string(v))
            snprintf(rack, rlen, "%s", json_string_value(v));
        else
            snprintf(rack, rlen, "-");
    }
}

int
al_cli_nodes(int argc, char **argv)
{
    struct read_opts o;
    json_t *nodes;
    int rc = parse_read(&al_cli_nodes_cmd, argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? AL_EXIT_OK : rc;
    if ((rc = fetch(&o, "/v1/nodes", "nodes", &nodes)) != 0)
        return rc;
    if (o.json) {
        al_cli_print_json(nodes);
        json_decref(nodes);
        return AL_EXIT_OK;
    }
    printf("%-16s %-9s %-9s %-20s %6s %9s %5s %8s %-10s %-8s %s\n", "NAME",
           "STATE", "GPUS", "MODEL", "CPUS", "MEM", "UTIL", "GPU-MEM", "POOL",
           "RACK", "LABELS");
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        json_t *gpus = json_object_get(n, "gpus");
        char g[32], model[96];
        snprintf(g, sizeof g, "%lld/%zu",
                 (long long)al_json_int(n, "gpus_used", 0),
                 json_array_size(gpus));
        snprintf(model, sizeof model, "%s%s",
                 json_array_size(gpus)
                     ? al_json_str(json_array_get(gpus, 0), "model", "?")
                     : "-",
                 al_json_bool(n, "emulated", false) ? " (emulated)" : "");
        /* Telemetry (real GPUs): mean utilisation, GPU memory in use. */
        char util[24] = "-", gmem[24] = "-";
        int64_t usum = 0, mused = 0;
        int un = 0, mn = 0;
        for (size_t k = 0; k < json_array_size(gpus); k++) {
            json_t *x = json_array_get(gpus, k);
            int64_t u = al_json_int(x, "util", -1),
                    m = al_json_int(x, "mem_used", -1);
            if (u >= 0)
                usum += u, un++;
            if (m >= 0)
                mused += m, mn++;
        }
        if (un > 0)
            snprintf(util, sizeof util, "%lld%%", (long long)(usum / un));
        if (mn > 0)
            snprintf(gmem, sizeof gmem, "%.1fG", (double)mused / (1 << 30));
        char labels[512], rack[64];
        node_labels(n, labels, sizeof labels, rack, sizeof rack);
        const char *pool = al_json_str(n, "pool", "");
        printf("%-16s %-9s %-9s %-20s %6.1f %8lldG %5s %8s %-10s %-8s %s\n",
               al_json_str(n, "name", ""), al_json_str(n, "state", ""), g,
               model, (double)al_json_int(n, "cpu_milli", 0) / 1000.0,
               (long long)(al_json_int(n, "mem_bytes", 0) >> 30), util, gmem,
               pool[0] ? pool : "-", rack, labels);
    }
    /* Why a node was drained (an admin's reason or its GPUs' health),
     * under the table. */
    for (size_t i = 0; i < json_array_size(nodes); i++) {
        json_t *n = json_array_get(nodes, i);
        const char *why = al_json_str(n, "drain_reason", NULL);
        if (why != NULL)
            printf("%s: %s\n", al_json_str(n, "name", ""), why);
        /* Each faulty GPU the drain reason does not name already: a second
         * one, or one fenced while the node takes work (--gpu-fault). */
        json_t *gl = json_object_get(n, "gpus");
        for (size_t k = 0; k < json_array_size(gl); k++) {
            const char *bad =
                al_json_str(json_array_get(gl, k), "unhealthy", NULL);
            if (bad == NULL)
                continue;
            char line[512];
            snprintf(line, sizeof line, "GPU %zu unhealthy: %s", k, bad);
            if (why == NULL || strcmp(why, line) != 0)
                printf("%s: %s\n", al_json_str(n, "name", ""), line);
        }
        /* Fractional jobs share a GPU there without MPS: nothing keeps
         * one from taking all of it. */
        bool shared = false;
        json_t *gs = json_object_get(n, "gpus");
        for (size_t k = 0; k < json_array_size(gs); k++)
            shared =
                shared || al_json_bool(json_array_get(gs, k), "shared", false);
        if (shared && !al_json_bool(n, "mps", false))
            printf("%s: GPU fractions are not enforced here (the agent runs "
                   "without --mps)\n",
                   al_json_str(n, "name", ""));
    }
    json_decref(nodes);
    return AL_EXIT_OK;
}

int
al_cli_queues(int argc, char **argv)
{
    struct read_opts o;
    json_t *queues;
    int rc = parse_read(&al_cli_queues_cmd, argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? AL_EXIT_OK : rc;
    if ((rc = fetch(&o, "/v1/queues", "queues", &queues)) != 0)
        return rc;
    if (o.json) {
        al_cli_print_json(queues);
        json_decref(queues);
        return AL_EXIT_OK;
    }
    /* Per resource: deserved, fair share, allocated and limit (GPUs and
     * cores as numbers, memory in GiB); "-": no limit. */
    static const struct {
        const char *key, *head;
        double scale;
    } res[] = {
        { "gpu", "GPU", 1 },
        { "cpu", "CPU", 1 },
        { "mem", "MEM-GIB", 1.0 / (1 << 30) },
    };
    /* Build sessions' settings, when some queue has one: the cap on their
     * GPUs, and idle reclaim as TIMEOUT<UTIL% ("-": none). */
    bool build = false;
    for (size_t i = 0; i < json_array_size(queues); i++) {
        json_t *q = json_array_get(queues, i);
        build = build || al_json_num(q, "max_build_gpus", -1) >= 0 ||
                al_json_int(q, "idle_timeout", 0) > 0;
    }
    printf("%-16s %-12s", "QUEUE", "PARENT");
    for (size_t r = 0; r < sizeof res / sizeof *res; r++)
        printf(r + 1 < sizeof res / sizeof *res || build ? "  %-27s" : "  %s",
               res[r].head);
    if (build)
        printf("  %-5s %s", "BUILD", "IDLE");
    printf("\n%-16s %-12s", "", "");
    for (size_t r = 0; r < sizeof res / sizeof *res; r++)
        printf("  %6s %6s %6s %6s", "DES", "FAIR", "USED", "LIM");
    if (build)
        printf("  %5s %s", "CAP", "RECLAIM");
    printf("\n");
    for (size_t i = 0; i < json_array_size(queues); i++) {
        json_t *q = json_array_get(queues, i);
        printf("%-16s %-12s", al_json_str(q, "name", ""),
               al_json_str(q, "parent", "-"));
        for (size_t r = 0; r < sizeof res / sizeof *res; r++) {
            json_t *qr =
                json_object_get(json_object_get(q, "quota"), res[r].key);
            double k = res[r].scale, lim = al_json_num(qr, "limit", -1);
            char limtext[32] = "-";
            if (lim >= 0)
                snprintf(limtext, sizeof limtext, "%.1f", lim * k);
            printf(
                "  %6.1f %6.1f %6.1f %6s", al_json_num(qr, "deserved", 0) * k,
                al_json_num(json_object_get(q, "fair_share"), res[r].key, 0) *
                    k,
                al_json_num(json_object_get(q, "allocated"), res[r].key, 0) * k,
                limtext);
        }
        char cap[32] = "-", idle[48] = "-";
        double bc = al_json_num(q, "max_build_gpus", -1);
        long long it = al_json_int(q, "idle_timeout", 0);
        if (bc >= 0)
            snprintf(cap, sizeof cap, "%.1f", bc);
        if (it > 0)
            snprintf(idle, sizeof idle, "%llds<%lld%%", it,
                     (long long)al_json_int(q, "idle_util", 0));
        if (build)
            printf("  %5s %s", cap, idle);
        printf("\n");
    }
    al_cli_queues_policy(queues);
    json_decref(queues);
    return AL_EXIT_OK;
}

typedef struct token_args {
    const char *user, *role, *server, *token;
    bool json, help;
} token_args_t;

static const al_opt_t token_opts[] = {
    { .name = "--user",
      .kind = AL_OPT_STR,
      .off = offsetof(token_args_t, user),
      .arg = "NAME",
      .help = "whose token",
      .flags = AL_OPT_REQUIRED },
    { .name = "--role",
      .kind = AL_OPT_STR,
      .off = offsetof(token_args_t, role),
      .arg = "user|admin|agent|metrics",
      .help = "what it may do (default user; metrics: only GET /metrics, "
              "for Prometheus)",
      .flags = AL_OPT_BRIEF },
    { .name = "--json",
      .kind = AL_OPT_FLAG,
      .off = offsetof(token_args_t, json),
      .help = "the answer as JSON" },
    AL_CLI_CONN_OPTS(token_args_t),
    { .name = NULL },
};

const al_opt_cmd_t al_cli_token_cmd = {
    .name = "token",
    .opts = token_opts,
    .lead = "create",
    .about = "Creates a token (admins only) and prints it once; it is stored "
             "only as a salted hash.\n",
};

int
al_cli_token(int argc, char **argv)
{
    token_args_t a = { .role = "user" };
    char *pos[1];
    int npos, rc = al_opt_parse_cmd(&al_cli_token_cmd, NULL, &a, argc, argv,
                                    pos, 1, &npos);
    const char *user = a.user, *role = a.role;
    bool help = a.help;
    bool role_ok = strcmp(role, "user") == 0 || strcmp(role, "admin") == 0 ||
                   strcmp(role, "agent") == 0 || strcmp(role, "metrics") == 0;
    if (rc == 0 && !help && !role_ok)
        fprintf(stderr,
                "allot token: --role is user, admin, agent or metrics, not "
                "'%s'\n",
                role);
    else if (rc == 0 && !help && user == NULL)
        fprintf(stderr, "allot token: whose token? give --user NAME\n");
    if (rc != 0 || help || npos != 1 || strcmp(pos[0], "create") != 0 ||
        user == NULL || !role_ok) {
        al_opt_usage(help ? stdout : stderr, &al_cli_token_cmd);
        return help ? AL_EXIT_OK : AL_EXIT_USAGE;
    }
    al_client_t c;
    if ((rc = al_client_init(&c, a.server, a.token)) != 0)
        return rc;
    json_t *body = json_pack("{s:s, s:s}", "user", user, "role", role);
    json_t *out = NULL;
    rc = al_client_call(&c, "POST", "/v1/tokens", body, &out, NULL, NULL);
    json_decref(body);
    al_client_fini(&c);
    if (rc != 0)
        return rc;
    if (a.json)
        al_cli_print_json(out);
    else
        printf("%s\n", al_json_str(out, "token", ""));
    json_decref(out);
    return AL_EXIT_OK;
}
