/*
 * api_web.c -- the dashboard's files: GET / (the page) and GET /ui/NAME
 * (its script and style), from the table the build makes of
 * src/server/web/ (web_files.c).  They hold no data and need no token:
 * the page asks for one and calls the API with it, under the API's rules.
 * The intake sends them with the dashboard's security headers (a content
 * security policy that allows only these files' scripts and styles).
 *
 * May call: req.c and web_files.c (data).
 */
#include <string.h>

#include "api_int.h"
#include "xmalloc.h"

static void
serve(al__req_t *req, const char *name)
{
    for (int i = 0; i < al__nweb_files; i++) {
        const al__web_file_t *f = &al__web_files[i];
        if (strcmp(f->name, name) != 0)
            continue;
        req->text = al_xmalloc(f->len + 1);
        memcpy(req->text, f->data, f->len);
        req->text_len = f->len;
        req->ctype = f->ctype;
        req->web = true;
        req->status = 200;
        return;
    }
    al__reply_error(req, 404, "not_found", "no file %s in the dashboard", name);
}

void
al__api_web_index(al_ctl_t *ctl, al__req_t *req)
{
    (void)ctl;
    serve(req, "index.html");
}

void
al__api_web_file(al_ctl_t *ctl, al__req_t *req)
{
    (void)ctl;
    /* index.html only at /, where its relative links resolve. */
    if (strcmp(req->cap[0], "index.html") == 0)
        al__reply_error(req, 404, "not_found", "the dashboard is at /");
    else
        serve(req, req->cap[0]);
}
