/*
 * api_usage.c -- the handlers of the usage history and accounting: GET
 * /v1/usage (series by queue or GPU model, history.c) and GET /v1/report
 * (accounting over a period, report.c).  Times in the query are seconds
 * since the epoch; the CLI turns dates and "-7d" into them.
 *
 * May call: history.c, report.c and req.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "clock.h"

/* Query argument key as seconds (an integer, maybe negative), or dflt
 * when absent; false after a 400 reply. */
static bool
arg_secs(al__req_t *req, const char *key, int64_t dflt, int64_t *out)
{
    const char *s = al__req_arg(req, key);
    if (s == NULL) {
        *out = dflt;
        return true;
    }
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < 0 ||
        v > INT64_C(253402300799)) { /* 9999-12-31 */
        al__reply_error(req, 400, "bad_request",
                        "%s must be seconds since the epoch, not '%s'", key, s);
        return false;
    }
    *out = v;
    return true;
}

/* from/to (or since/until) of a query: defaults the last day; false
 * after a 400 reply. */
static bool
period(al__req_t *req, const char *kfrom, const char *kto, int64_t *from,
       int64_t *to)
{
    int64_t now = al_clock_ms() / 1000;
    if (!arg_secs(req, kto, now, to) ||
        !arg_secs(req, kfrom, *to - 86400, from))
        return false;
    if (*from >= *to) {
        al__reply_error(req, 400, "bad_request", "%s must be before %s", kfrom,
                        kto);
        return false;
    }
    return true;
}

void
al__api_usage(al_ctl_t *ctl, al__req_t *req)
{
    int64_t from, to, step;
    if (!period(req, "from", "to", &from, &to))
        return;
    /* Default: about 300 points over the span. */
    int64_t dflt = (to - from) / 300 > 0 ? (to - from) / 300 : 1;
    const char *ss = al__req_arg(req, "step");
    char *end = NULL;
    step = ss != NULL ? strtoll(ss, &end, 10) : dflt;
    if ((ss != NULL && (end == ss || *end != '\0')) || step < 1 ||
        (to - from) / step > 100000) {
        al__reply_error(req, 400, "bad_request",
                        "step must be 1 second or more, and at most 100000 "
                        "steps in the span");
        return;
    }
    const char *by = al__req_arg(req, "by");
    if (by != NULL && strcmp(by, "queue") != 0 && strcmp(by, "model") != 0) {
        al__reply_error(req, 400, "bad_request",
                        "by must be queue or model, not '%s'", by);
        return;
    }
    bool by_model = by != NULL && strcmp(by, "model") == 0;
    const char *key = al__req_arg(req, by_model ? "model" : "queue");
    if (al__req_arg(req, by_model ? "queue" : "model") != NULL) {
        al__reply_error(req, 400, "bad_request",
                        by_model ? "queue= goes with by=queue"
                                 : "model= goes with by=model");
        return;
    }
    al__reply(req, 200, al__usage_series(ctl, from, to, step, by_model, key));
}

void
al__api_report(al_ctl_t *ctl, al__req_t *req)
{
    int64_t since, until;
    if (!period(req, "since", "until", &since, &until))
        return;
    static const char *const bys[] = { "queue", "user", "class", "model",
                                       "node" };
    const char *by = al__req_arg(req, "by");
    bool ok = by == NULL;
    for (size_t i = 0; !ok && i < sizeof bys / sizeof bys[0]; i++)
        ok = strcmp(by, bys[i]) == 0;
    if (!ok) {
        al__reply_error(req, 400, "bad_request",
                        "by must be queue, user, class, model or node, not "
                        "'%s'",
                        by);
        return;
    }
    al__reply(req, 200,
              al__usage_report(ctl, since * 1000, until * 1000,
                               by ? by : "queue",
                               al__req_admin(req) ? NULL : req->user));
}
