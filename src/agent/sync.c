/*
 * sync.c -- the agent's side of the protocol with the controller:
 * registration (the node's resources and GPUs), then syncs, each a
 * long-poll that reports every task (its state, exit, and the next chunk
 * of its log) with the GPUs' telemetry, and applies the answer: the acks,
 * the desired set of tasks (starting what is missing, stopping what is no
 * longer wanted, forgetting what is over and fully reported).
 *
 * May call: session.c (streams asked for), start.c, task.c, tasklog.c,
 * the platform (telemetry),
 * src/common (HTTP, JSON).
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_int.h"
#include "buf.h"
#include "clock.h"
#include "core/error.h"
#include "http.h"
#include "json.h"
#include "log.h"
#include "platform.h"
#include "xmalloc.h"

#define IDLE_POLL_MS 25000
#define BUSY_POLL_MS 1000

/* POSTs body to path.  A task's end interrupts the request (AL_EBUSY)
 * when intr is true; a stop signal always does. */
static int
call(agent_t *a, const char *path, json_t *body, int timeout_ms,
     al_http_resp_t *resp, json_t **out, char **cause, bool intr)
{
    char *text = al_json_dump(body);
    al_http_conn_t *c = &a->conn[a->cur];
    int rc = al_http_conn_request(c, "POST", path, a->token, text, strlen(text),
                                  al__fence_bound(a, timeout_ms),
                                  intr ? a->wake_fd : a->stop_fd, resp, cause);
    free(text);
    if (rc == 0)
        al__fence_heard(a);
    if (rc == AL_EBUSY && c->pending)
        a->cur ^= 1;
    if (rc != 0)
        return rc;
    *out = al_json_parse(resp->body.data ? resp->body.data : "", resp->body.len,
                         NULL);
    return 0;
}

/* The node's pool and labels ("k=v,..." from --label) into the body. */
static void
register_labels(const agent_t *a, json_t *body)
{
    json_t *labels = json_object();
    for (const char *s = a->labels; s != NULL && *s != '\0';) {
        size_t len = strcspn(s, ",");
        const char *eq = memchr(s, '=', len);
        if (eq != NULL) {
            char *k = al_xstrndup(s, (size_t)(eq - s));
            char *v = al_xstrndup(eq + 1, len - (size_t)(eq - s) - 1);
            json_object_set_new(labels, k, json_string(v));
            free(k);
            free(v);
        }
        s += len + (s[len] == ',');
    }
    json_object_set_new(body, "pool", json_string(a->pool ? a->pool : ""));
    json_object_set_new(body, "labels", labels);
}

int
al__sync_register(agent_t *a)
{
    json_t *gpus = json_array();
    for (int i = 0; i < a->plat.ngpus; i++) {
        const al_gpu_info_t *g = &a->plat.gpus[i];
        json_array_append_new(gpus,
                              json_pack("{s:s, s:s, s:I, s:i, s:i}", "uuid",
                                        g->uuid, "model", g->model, "mem_bytes",
                                        (json_int_t)g->mem_bytes, "numa",
                                        g->numa, "nvlink", g->nvlink));
    }
    json_t *body =
        json_pack("{s:s, s:s, s:I, s:I, s:b, s:o}", "name", a->name, "addr",
                  a->addr, "cpu_milli", (json_int_t)a->plat.cpu_milli,
                  "mem_bytes", (json_int_t)a->plat.mem_bytes, "emulated",
                  a->plat.emulated, "gpus", gpus);
    /* Whether fractions are enforced here (MPS), which `allot nodes`
     * tells. */
    json_object_set_new(body, "mps", json_boolean(a->mps.on));
    register_labels(a, body);
    al_http_resp_t resp;
    json_t *out = NULL;
    char *cause = NULL;
    int rc =
        call(a, "/v1/agent/register", body, 10000, &resp, &out, &cause, true);
    json_decref(body);
    if (rc != 0) {
        if (rc != AL_EBUSY)
            al_warn("register: %s", cause ? cause : al_strerror(rc));
        free(cause);
        return rc;
    }
    if (resp.status != 200) {
        al_error("register refused (%d): %s", resp.status,
                 al_json_str(out, "message", al_buf_cstr(&resp.body)));
        rc = resp.status == 401 || resp.status == 403 ? AL_EAUTH : AL_EIO;
    } else {
        a->grace_ms = al_json_int(out, "grace_ms", a->grace_ms);
        a->registered = true;
        al_info("registered as node %s with %s (%d GPUs%s)", a->name,
                a->url.host, a->plat.ngpus,
                a->plat.emulated ? ", emulated" : "");
    }
    json_decref(out);
    al_http_resp_fini(&resp);
    return rc;
}

/* Adds t's use (cgroup.c) to its report: looked at again while it runs
 * when `look` (the telemetry period is over), its last figures else. */
static void
report_usage(agent_t *a, task_t *t, json_t *o, bool look)
{
    if (a->cg.version == 0)
        return;
    if (look && t->state == T_RUNNING) {
        char name[64];
        al__cg_name(name, sizeof name, t->job, t->index, t->restart);
        al__cg_usage(&a->cg, name, &t->usage);
    }
    const struct {
        const char *key;
        int64_t v;
    } f[] = { { "cpu_usec", t->usage.cpu_usec },
              { "mem_bytes", t->usage.mem_bytes },
              { "mem_peak", t->usage.mem_peak } };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
        if (f[k].v >= 0)
            json_object_set_new(o, f[k].key, json_integer((json_int_t)f[k].v));
}

/* The report of one task, with the next chunk of its log. */
static json_t *
report_task(agent_t *a, task_t *t, bool *more)
{
    json_t *o = json_pack("{s:I, s:i, s:i, s:s, s:I}", "job",
                          (json_int_t)t->job, "task", t->index, "restart",
                          t->restart, "state", al__task_state_name(t->state),
                          "log_off", (json_int_t)t->log_acked);
    if (t->state == T_EXITED) {
        json_object_set_new(o, "exit_code", json_integer(t->exit_code));
        json_object_set_new(o, "signal", json_integer(t->signal));
        if (t->oom)
            json_object_set_new(o, "oom", json_true());
        if (t->error != NULL)
            json_object_set_new(o, "error", json_string(t->error));
    }
    if (al__tasklog_chunk(a, t, o))
        *more = true;
    report_usage(a, t, o, a->usage_due);
    return o;
}

static void
apply(agent_t *a, json_t *out)
{
    json_t *acks = json_object_get(out, "acks");
    for (size_t i = 0; i < json_array_size(acks); i++) {
        json_t *k = json_array_get(acks, i);
        task_t *t =
            al__task_find(a, (unsigned long long)al_json_int(k, "job", 0),
                          (int)al_json_int(k, "task", -1),
                          (int)al_json_int(k, "restart", -1));
        if (t == NULL)
            continue;
        t->log_acked = al_json_int(k, "log_off", t->log_acked);
        if (t->state == T_EXITED)
            t->acked_exit = true;
    }
    a->grace_ms = al_json_int(out, "grace_ms", a->grace_ms);
    al__health_apply(a, out);
    a->mps.synced = true; /* the entries below name tasks' shares */
    for (int i = 0; i < a->ntasks; i++)
        a->tasks[i].desired = false;
    json_t *want = json_object_get(out, "tasks");
    for (size_t i = 0; i < json_array_size(want); i++) {
        json_t *d = json_array_get(want, i);
        unsigned long long job = (unsigned long long)al_json_int(d, "job", 0);
        int index = (int)al_json_int(d, "task", -1);
        int restart = (int)al_json_int(d, "restart", -1);
        task_t *t = al__task_find(a, job, index, restart);
        if (t == NULL) {
            t = al__task_add(a, job, index, restart);
            t->state = T_WAITING;
            t->log_acked = al_json_int(d, "log_off", 0);
        }
        t->desired = true;
        /* Any entry may name a fraction (an adopted task learns it so). */
        json_int_t milli = al_json_int(d, "gpu_milli", 0);
        if (milli > 0 && milli < 1000)
            t->gpu_share = (int)milli;
        t->want_suspended = al_json_int(d, "suspended", 0) != 0;
        const char *notice = al_json_str(d, "notice", NULL);
        if (notice != NULL)
            al__tasklog_notice(a, t, notice);
        if (t->spec == NULL) {
            t->spec = json_incref(d);
            json_t *g = json_object_get(d, "gpus");
            for (size_t k = 0; k < json_array_size(g); k++) {
                json_int_t dev = json_integer_value(json_array_get(g, k));
                if (dev >= 0 && dev < 64)
                    t->devices |= (uint64_t)1 << dev;
            }
        }
    }
    /* Stop what is not wanted; forget what is over and fully reported. */
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        if (t->desired)
            continue;
        if (t->state == T_RUNNING) {
            al__task_stop(a, t);
        } else if (t->state == T_WAITING) {
            al__task_remove(a, t, -1);
            i--;
        } else if (t->state == T_EXITED && t->acked_exit) {
            char *lp = al__task_file(a, t, "log");
            int64_t size = al__file_size(lp);
            free(lp);
            if (t->log_acked >= size) {
                al__task_remove(a, t, size);
                i--;
            }
        }
    }
    al__start_tasks(a);
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].desired)
            al__task_suspend(&a->tasks[i], a->tasks[i].want_suspended);
    /* Interactive sessions' streams, once their tasks run. */
    al__session_want(a, json_object_get(out, "streams"));
}

/* Whether the GPUs have telemetry: real ones through NVML, emulated ones
 * when STATE/gpu-util exists (fake.c). */
static bool
sampled(const agent_t *a)
{
    return a->plat.emulated ? al_platform_fake_util_on(a->state_dir)
                            : a->plat.nvml != NULL;
}

/* The GPUs' telemetry, at most every a->telemetry_ms: an array of {index,
 * util, mem_util, mem_used, temp_c, power_mw} (fields the driver does not
 * give left out), or NULL when none is due. */
static json_t *
telemetry(agent_t *a, int64_t now)
{
    if (a->sampled_at != 0 && now - a->sampled_at < a->telemetry_ms)
        return NULL;
    a->sampled_at = now;
    al__health_check(a);
    if (!(a->telemetry_on = sampled(a)))
        return NULL;
    json_t *arr = json_array();
    for (int i = 0; i < a->plat.ngpus; i++) {
        al_gpu_sample_t g;
        if ((a->plat.emulated ? al_platform_fake_sample(a->state_dir, i, &g)
                              : al_platform_sample(&a->plat, i, &g)) != 0)
            continue;
        json_t *o = json_pack("{s:i}", "index", i);
        const struct {
            const char *key;
            int64_t v;
        } f[] = {
            { "util", g.util_pct },     { "mem_util", g.mem_util_pct },
            { "mem_used", g.mem_used }, { "temp_c", g.temp_c },
            { "power_mw", g.power_mw },
        };
        for (size_t k = 0; k < sizeof f / sizeof f[0]; k++)
            if (f[k].v >= 0)
                json_object_set_new(o, f[k].key,
                                    json_integer((json_int_t)f[k].v));
        json_array_append_new(arr, o);
    }
    return arr;
}

int
al__sync_once(agent_t *a)
{
    json_t *tasks = json_array();
    bool more = false, running = false, exited_unacked = false;
    /* Tasks' use is looked at as often as the GPUs are sampled. */
    a->usage_due = a->sampled_at == 0 ||
                   al_clock_mono_ms() - a->sampled_at >= a->telemetry_ms;
    for (int i = 0; i < a->ntasks; i++) {
        task_t *t = &a->tasks[i];
        json_array_append_new(tasks, report_task(a, t, &more));
        running = running || t->state == T_RUNNING;
        exited_unacked =
            exited_unacked || (t->state == T_EXITED && !t->acked_exit);
    }
    int64_t wait = more || exited_unacked ? 0
                   : running              ? BUSY_POLL_MS
                                          : IDLE_POLL_MS;
    int64_t now = al_clock_mono_ms();
    for (int i = 0; i < a->ntasks; i++)
        if (a->tasks[i].killing && a->tasks[i].kill_at - now < wait)
            wait = a->tasks[i].kill_at > now ? a->tasks[i].kill_at - now : 0;
    /* Cgroups of ended tasks still busy (their last processes dying) are
     * swept within a second or so. */
    if (a->cg_dirty && wait > 1000)
        wait = 1000;
    json_t *gpus = telemetry(a, now);
    if (a->telemetry_on && wait > a->sampled_at + a->telemetry_ms - now)
        wait = a->sampled_at + a->telemetry_ms - now;
    json_t *body = json_pack("{s:s, s:o, s:I}", "node", a->name, "tasks", tasks,
                             "wait_ms", (json_int_t)(wait > 0 ? wait : 0));
    if (gpus != NULL)
        json_object_set_new(body, "gpus", gpus);
    al__health_report(a, body);
    al_http_resp_t resp;
    json_t *out = NULL;
    char *cause = NULL;
    int rc = call(a, "/v1/agent/sync", body, (int)wait + 15000, &resp, &out,
                  &cause, wait > 0);
    json_decref(body);
    if (rc != 0) {
        if (rc != AL_EBUSY)
            al_warn("sync: %s", cause ? cause : al_strerror(rc));
        free(cause);
        return rc;
    }
    if (resp.status == 409) {
        a->registered = false;
    } else if (resp.status != 200 || !json_is_object(out)) {
        al_warn("sync refused (%d): %s", resp.status,
                al_json_str(out, "message", al_buf_cstr(&resp.body)));
        rc = AL_EIO;
    } else {
        apply(a, out);
    }
    json_decref(out);
    al_http_resp_fini(&resp);
    return rc;
}
