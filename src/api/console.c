/* SPDX-License-Identifier: MIT */
/*
 * console.c: the web console and the API reference pages (contract §17), none of which needs a
 * key: GET / and /console redirect to /console/, GET /console/{file} serves an embedded file
 * (console_assets.h), and GET /docs the reference page, which renders /v1/openapi.json in the
 * browser. The pages are clients of /v1 like any other: the key stays in the browser.
 *
 * Every page carries the headers of api_page_headers(). Files are answered from the binary's
 * own memory, gzip-compressed for a client that takes it, with an ETag so that a reload costs a
 * 304 (Cache-Control: no-cache: a new build is seen at once).
 */
#include "api.h"

#include "console_assets.h"

#include <stdlib.h>
#include <string.h>

/* The pages load only what the binary serves: no other host, no inline script or style, no
 * plugin, no frame around them. */
#define CSP                                                                                        \
    "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none';"              \
    " form-action 'self'"

/* See api.h. */
void api_page_headers(struct router_req *r)
{
    http_resp_header(r->http, "Content-Security-Policy", CSP);
    http_resp_header(r->http, "X-Content-Type-Options", "nosniff");
    http_resp_header(r->http, "Referrer-Policy", "no-referrer");
    http_resp_header(r->http, "X-Frame-Options", "DENY");
}

static int by_name(const void *key, const void *elem)
{
    return strcmp(key, ((const struct console_asset *)elem)->name);
}

/* Whether 'accept' (an Accept-Encoding header) takes gzip: named, and not with q=0. */
static bool takes_gzip(const char *accept)
{
    const char *p = accept ? strstr(accept, "gzip") : NULL;
    size_t params;
    const char *q;
    if (!p)
        return false;
    p += 4;
    params = strcspn(p, ",");
    q = strstr(p, "q=");
    return !q || (size_t)(q - p) > params || strtod(q + 2, NULL) > 0;
}

/* Answer the embedded file 'name', or 404 route_not_found. */
static int serve(struct router_req *r, const char *name, struct err *e)
{
    const struct console_asset *f =
        bsearch(name, console_assets, console_assets_count, sizeof(*f), by_name);
    const char *match;

    if (!f)
        return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL, "No such console file.");
    api_page_headers(r);
    http_resp_header(r->http, "ETag", f->etag);
    http_resp_header(r->http, "Cache-Control", "no-cache");
    http_resp_header(r->http, "Vary", "Accept-Encoding");
    match = http_req_header(r->http, "If-None-Match");
    if (match && strstr(match, f->etag)) {
        r->status = 304;
        http_resp_static(r->http, 304, NULL, "", 0);
        return 0;
    }
    r->status = 200;
    if (takes_gzip(http_req_header(r->http, "Accept-Encoding"))) {
        http_resp_header(r->http, "Content-Encoding", "gzip");
        http_resp_static(r->http, 200, f->ctype, f->gz, f->gz_len);
    } else {
        http_resp_static(r->http, 200, f->ctype, f->body, f->len);
    }
    return 0;
}

/* GET / and GET /console: to the console. */
int api_console_redirect(struct router_req *r, struct err *e)
{
    static const char body[] = "The console is at /console/.\n";
    (void)e;
    api_page_headers(r);
    http_resp_header(r->http, "Location", "/console/");
    r->status = 302;
    http_resp_static(r->http, 302, "text/plain; charset=utf-8", body, sizeof(body) - 1);
    return 0;
}

/* GET /console/ */
int api_console_index(struct router_req *r, struct err *e)
{
    return serve(r, "index.html", e);
}

/* GET /console/{file} */
int api_console_file(struct router_req *r, struct err *e)
{
    return serve(r, r->params[0], e);
}

/* GET /v1/openapi.json: the document, embedded with the console's files (compressed, with an
 * ETag: the reference page loads 62 KB instead of 611 KB). */
int api_openapi(struct router_req *r, struct err *e)
{
    return serve(r, "openapi.json", e);
}

/* GET /docs: the API reference, rendered in the browser from /v1/openapi.json. */
int api_docs(struct router_req *r, struct err *e)
{
    return serve(r, "docs.html", e);
}
