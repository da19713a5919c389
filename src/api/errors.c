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

/* Each code's status and its one description: the documentation page of the code (GET
 * /docs/errors/<code>, with `x` shown as code) and the API document (`workforce describe`). */
static const struct {
    const char *code;
    unsigned status;
    const char *doc;
} codes[] = {
    {"invalid_request", 400,
     "A request field, query parameter or body is invalid, or a required one is missing; "
     "`param` names it when one field is at fault (nested members as `recurring.time` or "
     "`steps[2].input`). Malformed JSON and a body that is not an object also give this code."},
    {"idempotency_key_reused", 400,
     "This Idempotency-Key was used in the last 24 hours with another method, path or request "
     "body."},
    {"integration_not_configured", 400,
     "The operator has not configured OAuth client credentials for this provider."},
    {"invalid_token", 400,
     "The set-password token is unknown, was used already, or is older than 24 hours; ask an "
     "admin for a new invitation."},
    {"missing_api_key", 401,
     "No Authorization header was sent. Send `Authorization: Bearer <key>`."},
    {"invalid_api_key", 401,
     "The Authorization header is not `Bearer <key>`, or the key is malformed, unknown, revoked "
     "or expired. Keys start with `svc_live_sk_` or `svc_test_sk_`."},
    {"invalid_credentials", 401,
     "The email and password do not match an active user. The answer is the same whatever was "
     "wrong."},
    {"invalid_session", 401,
     "The session cookie names no session, or it ended: signed out, expired (12 hours idle, 7 "
     "days old), its user's password changed or the user was disabled. Sign in again."},
    {"invalid_signature", 401,
     "An inbound integration event's signature is missing, does not match, or its timestamp is "
     "more than 5 minutes away; nothing was started."},
    {"insufficient_credits", 402,
     "The organization's credit balance is below 1 (live keys only); no work was done."},
    {"permission_denied", 403,
     "The key's scopes do not cover this operation, the signed-in user's role does not allow "
     "it, or the employee's tier is above the organization's subscription tier."},
    {"csrf_token_invalid", 403,
     "A request that changes anything with a session must send the session's CSRF token in "
     "`X-CSRF-Token` (`GET /v1/sessions/current` answers it)."},
    {"user_not_found", 404, "No such user in this organization."},
    {"api_key_not_found", 404, "No such API key in this organization."},
    {"route_not_found", 404, "No route matches this path."},
    {"oidc_not_configured", 404,
     "OpenID Connect sign-in is not configured on this server (WORKFORCE_OIDC_ISSUER)."},
    {"employee_not_found", 404, "No such employee in this organization and key mode."},
    {"conversation_not_found", 404, "No such conversation in this organization and key mode."},
    {"message_not_found", 404, "No such message in this conversation."},
    {"task_not_found", 404, "No such task in this organization and key mode."},
    {"document_not_found", 404, "No such knowledge document in this organization and key mode."},
    {"workflow_not_found", 404, "No such workflow in this organization and key mode."},
    {"run_not_found", 404, "No such run of this workflow."},
    {"event_not_found", 404,
     "No such event in this organization and key mode (events are kept 30 days)."},
    {"webhook_endpoint_not_found", 404,
     "No such webhook endpoint in this organization and key mode."},
    {"mcp_server_not_found", 404, "No such MCP server in this organization and key mode."},
    {"approval_not_found", 404, "No such approval in this organization and key mode."},
    {"provider_not_found", 404,
     "The provider is not one of `slack`, `google_calendar`, `outlook`, `github`, `hubspot`."},
    {"method_not_allowed", 405,
     "The path exists but not with this method; the `Allow` header lists the methods it has."},
    {"employee_offline", 409, "The employee is offline. Set it back to `idle` to chat with it."},
    {"conversation_busy", 409,
     "The conversation's last turn is still running its tools (or waits for an approval): "
     "send the next message once its reply has ended."},
    {"workflow_disabled", 409,
     "The workflow is disabled: only a manual run starts it. Enable it with PATCH."},
    {"run_not_cancellable", 409, "The run has already ended (completed, failed or cancelled)."},
    {"mcp_server_name_taken", 409,
     "The organization already has an MCP server of this name in this key mode; names are "
     "unique, since tools are named `mcp.<server>.<tool>`."},
    {"user_exists", 409,
     "A user with this email exists already (emails are unique on the server)."},
    {"last_owner", 409,
     "The organization's last active owner cannot be removed, disabled or given another role."},
    {"approval_not_pending", 409,
     "The approval was already decided (approved, rejected) or expired: a decision is taken "
     "once."},
    {"idempotency_key_in_use", 409,
     "A request with this Idempotency-Key is still in flight. Retry later."},
    {"request_too_large", 413, "The JSON body is over 1 MiB (1,048,576 bytes)."},
    {"uri_too_long", 414,
     "The request target is over 4,096 bytes, or has more than 16 query parameters; answered "
     "before any work, and the connection stays open."},
    {"file_too_large", 413,
     "The uploaded file is over 52,428,800 bytes (or the declared upload body is over "
     "52,690,944 bytes)."},
    {"unsupported_media_type", 415,
     "A body was sent with a Content-Type this operation does not take (JSON bodies need "
     "`Content-Type: application/json`)."},
    {"unsupported_file_type", 415,
     "The uploaded file is not PDF, DOCX, TXT, Markdown, HTML, CSV or JSON (detected by "
     "content, then by name), or it cannot be read."},
    {"request_header_fields_too_large", 431,
     "The request line and headers cost more than 8,192 bytes (each header line counts 64 "
     "bytes more than its length); answered before any work, and the connection closes."},
    {"too_many_sign_in_attempts", 429,
     "Ten sign-ins failed for this email from this address within 15 minutes: the pair is "
     "locked out until the oldest of them is 15 minutes old (`Retry-After`)."},
    {"rate_limit_exceeded", 429,
     "Over the minute window or the burst bucket; retry after `Retry-After` seconds."},
    {"concurrency_limit_exceeded", 429,
     "Too many requests in flight at once for this organization and key mode (an open stream "
     "counts); retry after `Retry-After` seconds."},
    {"internal_error", 500,
     "An unexpected server error; the message carries no internals. The request id in "
     "`X-Request-Id` identifies it."},
    {"upstream_error", 502, "The language-model or OAuth provider failed."},
    {"service_unavailable", 503,
     "The service cannot answer now (for example, the database does not answer)."},
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
const char *api_error_code(size_t i, unsigned *status, const char **doc)
{
    if (i >= sizeof(codes) / sizeof(codes[0]))
        return NULL;
    *status = codes[i].status;
    if (doc)
        *doc = codes[i].doc;
    return codes[i].code;
}

/* Append 'text' to 'b' as HTML: `x` as <code>x</code>, the rest escaped. */
static void append_html(struct buf *b, const char *text)
{
    bool code = false;
    for (const char *p = text; *p; p++) {
        if (*p == '`') {
            buf_appends(b, code ? "</code>" : "<code>");
            code = !code;
        } else if (*p == '<') {
            buf_appends(b, "&lt;");
        } else if (*p == '>') {
            buf_appends(b, "&gt;");
        } else if (*p == '&') {
            buf_appends(b, "&amp;");
        } else {
            buf_append(b, p, 1);
        }
    }
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
    buf_appendf(&b,
                "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<title>%s</title><link rel=\"icon\" href=\"/console/icon.svg\">"
                "</head>\n<body><main><h1>%s</h1>\n<p>HTTP status %u.</p>\n<p>",
                codes[i].code, codes[i].code, codes[i].status);
    append_html(&b, codes[i].doc);
    if (buf_appendf(&b,
                    "</p>\n<p>Error bodies have the form <code>{\"error\": {\"code\", "
                    "\"message\", \"param\", \"doc_url\"}}</code>.</p>\n</main></body></html>\n")) {
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
