/* SPDX-License-Identifier: MIT */
/*
 * errors.c: contract §2. The table maps each error code to its status and to the text of its
 * documentation page (GET /docs/errors/<code>). A struct err whose code is not in the table is
 * a bug: it is logged and answered as internal_error, with no internals in the message.
 *
 * Routes of the OpenAI-compatible door (ROUTE_OPENAI, contract §16) get the same statuses and
 * codes in OpenAI's shape, {"error":{"message","type","param","code"}}, with OpenAI's type
 * names: the one branch is in api_error_respond().
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *code;
    unsigned status;
    const char *doc;
} codes[] = {
    {"invalid_request", 400,
     "A parameter is missing, has the wrong type, is out of range or is not known. The "
     "<code>param</code> member names it (nested members as <code>recurring.time</code> or "
     "<code>steps[2].input</code>). Malformed JSON and a body that is not an object also give "
     "this code."},
    {"idempotency_key_reused", 400,
     "The Idempotency-Key was used before with a different request body."},
    {"integration_not_configured", 400,
     "The operator has not configured OAuth client credentials for this provider."},
    {"missing_api_key", 401,
     "No Authorization header was sent. Send Authorization: Bearer "
     "&lt;API_KEY&gt;."},
    {"invalid_api_key", 401,
     "The key is malformed, unknown, revoked or expired. Keys start with svc_live_sk_ or "
     "svc_test_sk_."},
    {"invalid_signature", 401,
     "An integration event's signature is missing, wrong or too old: nothing was started."},
    {"insufficient_credits", 402, "The organization's credit balance is too low for a live call."},
    {"permission_denied", 403,
     "The key lacks the scope this operation needs, or the employee's tier is above the "
     "organization's subscription tier."},
    {"route_not_found", 404, "No route has this path."},
    {"employee_not_found", 404, "No employee with this id exists for this key."},
    {"conversation_not_found", 404, "No conversation with this id exists for this key."},
    {"message_not_found", 404, "No message with this id exists in the conversation."},
    {"task_not_found", 404, "No task with this id exists for this key."},
    {"document_not_found", 404, "No knowledge document with this id exists for this key."},
    {"workflow_not_found", 404, "No workflow with this id exists for this key."},
    {"run_not_found", 404, "No run with this id exists for this workflow."},
    {"event_not_found", 404,
     "No event with this id exists for this key (events are kept 30 days)."},
    {"webhook_endpoint_not_found", 404, "No webhook endpoint with this id exists for this key."},
    {"provider_not_found", 404,
     "The provider is not one of slack, google_calendar, outlook, github, hubspot."},
    {"method_not_allowed", 405, "The path exists, but not with this method. See the Allow header."},
    {"employee_offline", 409, "The employee is offline. Set it back to idle to chat with it."},
    {"workflow_disabled", 409,
     "The workflow is disabled: only a manual run starts it. Enable it with PATCH."},
    {"run_not_cancellable", 409, "The run has already ended, so it cannot be cancelled."},
    {"idempotency_key_in_use", 409,
     "A request with this Idempotency-Key is still being processed. Retry later."},
    {"request_too_large", 413, "The JSON body is larger than 1 MiB."},
    {"uri_too_long", 414,
     "The request target is longer than 4,096 bytes, or has more than 16 query parameters."},
    {"file_too_large", 413, "The uploaded file is larger than 50 MB (52,428,800 bytes)."},
    {"unsupported_media_type", 415, "Send JSON bodies with Content-Type: application/json."},
    {"unsupported_file_type", 415, "The uploaded file's type is not supported or cannot be read."},
    {"request_header_fields_too_large", 431,
     "The request line and headers together are larger than 8,192 bytes."},
    {"rate_limit_exceeded", 429,
     "Too many requests this minute, or faster than the burst allows. Wait Retry-After "
     "seconds."},
    {"concurrency_limit_exceeded", 429,
     "Too many requests in flight at once for this organization and key mode."},
    {"internal_error", 500, "The server failed. The request id in X-Request-Id identifies it."},
    {"upstream_error", 502, "The language-model or OAuth provider failed."},
    {"service_unavailable", 503, "The service cannot answer now (for example, the database)."},
};

#define NCODES (sizeof(codes) / sizeof(codes[0]))

/* OpenAI's error type of each of our statuses; any other status below 500 is a request error
 * (404 too, as OpenAI answers an unknown model), and 500 and above are api_error. */
static const struct {
    unsigned status;
    const char *type;
} openai_types[] = {
    {401, "authentication_error"},
    {402, "insufficient_quota"},
    {403, "permission_error"},
    {429, "rate_limit_error"},
};

static int find(const char *code)
{
    for (size_t i = 0; i < NCODES; i++) {
        if (code && strcmp(codes[i].code, code) == 0)
            return (int)i;
    }
    return -1;
}

/* The HTTP status of contract error 'code' (500 when unknown). */
unsigned api_error_status(const char *code)
{
    int i = find(code);
    return i < 0 ? 500 : codes[i].status;
}

/* See api.h. */
const char *api_error_code(size_t i, unsigned *status)
{
    if (i >= sizeof(codes) / sizeof(codes[0]))
        return NULL;
    *status = codes[i].status;
    return codes[i].code;
}

static const char *openai_type(unsigned status)
{
    for (size_t i = 0; i < sizeof(openai_types) / sizeof(openai_types[0]); i++) {
        if (openai_types[i].status == status)
            return openai_types[i].type;
    }
    return status >= 500 ? "api_error" : "invalid_request_error";
}

/* {"error":{"message","type","param","code"}}: OpenAI's shape of error 'code' (known). */
static json_t *openai_body(const char *code, const char *msg, const char *param)
{
    json_t *body = jo_object(), *err = jo_object();
    jo_str(err, "message", msg);
    jo_str(err, "type", openai_type(api_error_status(code)));
    jo_str(err, "param", param && param[0] ? param : NULL);
    jo_str(err, "code", code);
    jo_set(body, "error", err);
    return body;
}

/* Whether 'r' is answered in OpenAI's error shape: its route is the OpenAI door's, or it
 * matched no route and its path is under the door's prefix. */
static bool openai_shaped(const struct router_req *r)
{
    const char *path;
    size_t n = sizeof(ROUTER_OPENAI_PREFIX) - 1;
    if (r->route >= 0)
        return (router_req_route(r)->flags & ROUTE_OPENAI) != 0;
    path = http_req_path(r->http);
    return path && strncmp(path, ROUTER_OPENAI_PREFIX, n) == 0 &&
           (path[n] == '\0' || path[n] == '/');
}

/*
 * Append to 'out' the OpenAI-shaped JSON of 'e' (an error event of a stream of the OpenAI
 * door): an unknown code is internal_error, and internal_error carries no internals.
 */
void api_error_openai_write(const struct err *e, struct buf *out)
{
    bool known = find(e->code) >= 0;
    bool internal = !known || strcmp(e->code, "internal_error") == 0;
    json_t *body = openai_body(known ? e->code : "internal_error",
                               internal ? "Internal error." : e->msg, internal ? NULL : e->param);
    size_t len;
    char *s = jo_dump(body, &len);
    json_decref(body);
    buf_append(out, s, len);
    free(s);
}

/*
 * Set the error response of 'r' from 'e': status by code, body
 * {"error":{"code","message","param"?,"doc_url"}}, or OpenAI's shape on the OpenAI door's
 * routes. Unknown codes become internal_error.
 */
void api_error_respond(struct router_req *r, const struct err *e)
{
    const char *code = e->code;
    const char *msg = e->msg;
    json_t *body, *err;
    char url[700];
    char *s;
    size_t len;

    if (e->kind == ERR_STORE && store_unreachable()) {
        /* the database is out of reach, not wrong: the client may try again shortly */
        code = "service_unavailable";
        msg = "The database is unavailable; try again shortly.";
        http_resp_header(r->http, "Retry-After", "1");
    } else if (find(code) < 0) {
        log_error("request %s: unmapped error code %s (%s): %s", r->request_id,
                  code ? code : "(none)", err_name(e->kind), e->msg);
        code = "internal_error";
        msg = "Internal error.";
    } else if (strcmp(code, "internal_error") == 0) {
        log_error("request %s: internal error (%s): %s", r->request_id, err_name(e->kind), e->msg);
        msg = "Internal error.";
    }
    r->status = api_error_status(code);
    if (openai_shaped(r)) {
        body = openai_body(code, msg, strcmp(code, "internal_error") != 0 ? e->param : NULL);
        s = jo_dump(body, &len);
        json_decref(body);
        http_resp_set(r->http, r->status, "application/json", s, len);
        return;
    }
    body = jo_object();
    err = jo_object();
    jo_str(err, "code", code);
    jo_str(err, "message", msg);
    if (e->param[0] && strcmp(code, "internal_error") != 0)
        jo_str(err, "param", e->param);
    snprintf(url, sizeof(url), "%s/docs/errors/%s", r->env->cfg->public_url, code);
    jo_str(err, "doc_url", url);
    jo_set(body, "error", err);
    s = jo_dump(body, &len);
    json_decref(body);
    http_resp_set(r->http, r->status, "application/json", s, len);
}

/* GET /docs/errors/{code}: a short HTML page for each contract error code. */
int api_docs_error(struct router_req *r, struct err *e)
{
    int i = find(r->params[0]);
    struct buf b;

    if (i < 0)
        return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL, "No such error code.");
    buf_init(&b, 16384);
    if (buf_appendf(&b,
                    "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                    "<title>%s</title><link rel=\"icon\" href=\"/console/icon.svg\">"
                    "</head>\n<body><main><h1>%s</h1>\n<p>HTTP status %u.</p>\n"
                    "<p>%s</p>\n<p>Error bodies have the form <code>{\"error\": {\"code\", "
                    "\"message\", \"param\", \"doc_url\"}}</code>.</p>\n</main></body></html>\n",
                    codes[i].code, codes[i].code, codes[i].status, codes[i].doc)) {
        buf_cleanup(&b);
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "page too large");
    }
    {
        size_t len;
        char *s = buf_take(&b, &len);
        api_page_headers(r);
        router_respond_raw(r, 200, "text/html; charset=utf-8", s, len);
    }
    return 0;
}
