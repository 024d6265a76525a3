/*
 * api_tokens.c -- who is asking: /v1/healthz (open to all, more for a
 * token), /v1/whoami and the creation of tokens (POST /v1/tokens).
 *
 * May call: auth.c (tokens), doc.c (names), store.c and req.c.
 */
#include <stdlib.h>
#include <string.h>

#include "api_int.h"
#include "json.h"
#include "xmalloc.h"

void
al__api_healthz(al_ctl_t *ctl, al__req_t *req)
{
    /* Anyone may ask whether the controller is up; what it holds is for
     * callers with a token. */
    if (al__token_check(ctl, req->token) == NULL) {
        al__reply(req, 200, json_pack("{s:b}", "ok", 1));
        return;
    }
    al__reply(req, 200,
              json_pack("{s:b, s:I, s:i, s:I}", "ok", 1, "jobs",
                        (json_int_t)ctl->njobs, "nodes", ctl->nnodes, "cycles",
                        (json_int_t)ctl->cycles));
}

void
al__api_whoami(al_ctl_t *ctl, al__req_t *req)
{
    al__reply(req, 200,
              json_pack("{s:s, s:s}", "user", req->user, "role",
                        al__role_name(req->role)));
}

void
al__api_token_create(al_ctl_t *ctl, al__req_t *req)
{
    const char *user = al_json_str(req->body, "user", NULL);
    const char *role = al_json_str(req->body, "role", "user");
    int r = al__role_parse(role);
    if (user == NULL || !al__valid_name(user, 64) || r == ROLE_NONE) {
        al__reply_error(req, 400, "bad_request",
                        "need {\"user\": NAME, \"role\": "
                        "\"user\"|\"admin\"|\"agent\"|\"metrics\"}");
        return;
    }
    al__token_t t;
    char *secret = al__token_create(user, r, &t);
    ctl->tokens =
        al_xreallocarray(ctl->tokens, (size_t)ctl->ntokens + 1, sizeof t);
    ctl->tokens[ctl->ntokens++] = t;
    al__store_put_token(ctl, &t);
    req->mutating = true;
    al__reply(req, 201,
              json_pack("{s:s, s:s, s:s, s:s}", "id", t.id, "user", user,
                        "role", role, "token", secret));
    free(secret);
}
