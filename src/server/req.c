/*
 * req.c -- a request as the handlers and the loop see it: its query
 * arguments, its caller's role, setting its reply (JSON or an error), and
 * queueing it for release after the iteration's commit.  The intake
 * (server.c) fills a request and sends its reply; nothing here knows HTTP
 * beyond status codes.
 *
 * May call: nothing of the server (common's JSON only).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "server_int.h"

void
al__reply_error(al__req_t *req, int status, const char *code, const char *fmt,
                ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    /* The va_list is initialised (va_start/va_copy above); clang 14's
     * analyzer reports it when clang-tidy checks several files in one
     * run. */
    /* NOLINTNEXTLINE(clang-analyzer-valist.Uninitialized) */
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_decref(req->resp);
    req->status = status;
    req->resp = json_pack("{s:s, s:s}", "error", code, "message", msg);
}

void
al__reply(al__req_t *req, int status, json_t *body)
{
    json_decref(req->resp);
    req->status = status;
    req->resp = body;
}

const char *
al__req_arg(const al__req_t *req, const char *key)
{
    for (int i = 0; i < req->nargs; i++)
        if (strcmp(req->argk[i], key) == 0)
            return req->argv[i];
    return NULL;
}

bool
al__req_admin(const al__req_t *req)
{
    return req->role == ROLE_ADMIN;
}

void
al__req_complete(al_ctl_t *ctl, al__req_t *req)
{
    req->next = ctl->ready;
    ctl->ready = req;
}
