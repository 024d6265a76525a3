/*
 * api_lifecycle.c -- the handlers of POST /v1/jobs/ID/suspend and
 * /v1/jobs/ID/resume: a running job's tasks stopped (SIGSTOP to each
 * task's whole process group, by its agent) and continued, its GPUs kept
 * meanwhile.  Its owner or an admin only.
 *
 * May call: lifecycle.c, table.c, doc.c (the job's form) and req.c.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "json.h"
#include "xmalloc.h"

static void
suspend(al_ctl_t *ctl, al__req_t *req, bool on)
{
    const char *s = req->cap[0];
    bool digits = s[0] != '\0' && strlen(s) <= 19;
    for (const char *p = s; digits && *p; p++)
        digits = isdigit((unsigned char)*p) != 0;
    al__job_t *j = digits ? al__ctl_job(ctl, strtoull(s, NULL, 10)) : NULL;
    if (j == NULL) {
        al__reply_error(req, 404, "not_found", "no job %s", s);
        return;
    }
    if (!al__req_admin(req) && strcmp(j->user, req->user) != 0) {
        al__reply_error(req, 403, "forbidden",
                        "job %s is not yours; only its owner or an admin may "
                        "%s it",
                        s, on ? "suspend" : "resume");
        return;
    }
    char *cause = NULL;
    int st = al__lifecycle_suspend(ctl, j, on, req->user, &cause);
    if (st != 0) {
        al__reply_error(req, st, "conflict", "%s", cause);
        free(cause);
        return;
    }
    req->mutating = true;
    al__reply(req, 200, al__job_json(ctl, j, false));
}

void
al__api_job_suspend(al_ctl_t *ctl, al__req_t *req)
{
    suspend(ctl, req, true);
}

void
al__api_job_resume(al_ctl_t *ctl, al__req_t *req)
{
    suspend(ctl, req, false);
}
