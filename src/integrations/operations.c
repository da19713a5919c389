/* SPDX-License-Identifier: MIT */
/*
 * operations.c: see operations.h. Each operation is the provider's documented request:
 *  - slack.post_message: POST {api}/chat.postMessage {channel, text}; Slack answers HTTP 200
 *    with {ok: false, error} when it refuses. Output {id: ts, url: null}.
 *  - github.create_issue: POST {api}/repos/{owner}/{repo}/issues {title, body} with GitHub's
 *    Accept, API version and User-Agent headers. Output {id, url: html_url}.
 *  - google_calendar.create_event: POST {api}/calendar/v3/calendars/{id}/events with the
 *    input's {summary, start, end, description?} (start and end as RFC 3339 date-times, or
 *    dates for all-day events). Output {id, url: htmlLink}.
 *  - outlook.send_mail: POST {api}/v1.0/me/sendMail to one or more addresses (separated by
 *    ',' or ';'); Graph answers 202 without a body, so the id is the client-request-id we
 *    sent. Output {id, url: null}.
 *  - hubspot.create_note: the contact found by email when asked (POST .../contacts/search),
 *    then POST {api}/crm/v3/objects/notes with the association. Output {id, url: null}.
 *
 * A part of a path that comes from the options (a repository, a calendar id) is checked before
 * the URL is built: "../user" or ".." is refused with the step's error, and nothing is sent.
 *
 * DESIGN. A worker thread waits for each call (a small condition, as agent.c does); a store
 * handle is borrowed only around store calls. The refresh of a connection happens under one of
 * REFRESH_LOCKS mutexes chosen by the connection, and the connection is read again once the
 * lock is held: of two steps that find the token expiring, the second uses what the first got.
 */
#include "operations.h"
#include "operations_int.h"

#include "oauth.h"
#include "providers.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../httpc/httpc.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CALL_CONNECT_MS 10000
#define CALL_TIMEOUT_MS 30000
#define ANSWER_MAX (1u << 20)
#define REFRESH_LOCKS 64

/* ---- Outcomes ---- */

/* See operations_int.h. */
void integ_failf(struct integ_result *out, bool retry, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->error, sizeof(out->error), fmt, ap);
    va_end(ap);
    out->failed = true;
    out->retry = retry;
}

static void succeed(struct integ_result *out, const char *id, const char *url)
{
    out->output = json_pack("{s:s?, s:s?}", "id", id, "url", url);
}

/* ---- A blocking call ---- */

static int call_data(void *ud, long status, const char *p, size_t n)
{
    struct integ_call *c = ud;
    c->status = status;
    return buf_append(&c->body, p, n) ? 1 : 0; /* over ANSWER_MAX: abort */
}

static void call_done(void *ud, int rc, long status, const char *why)
{
    struct integ_call *c = ud;
    pthread_mutex_lock(&c->mu);
    c->rc = rc;
    if (status)
        c->status = status;
    snprintf(c->why, sizeof(c->why), "%s", why ? why : "");
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* See operations_int.h: the whole answer is waited for; ERR_UPSTREAM when the provider could
 * not be reached or did not answer in time. */
int integ_call_run(const struct integ_env *env, const char *method, const char *url,
                   const char *const *headers, size_t nh, const char *body, struct integ_call *c)
{
    struct httpc_request req;

    memset(c, 0, sizeof(*c));
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    buf_init(&c->body, ANSWER_MAX);
    memset(&req, 0, sizeof(req));
    req.method = method;
    req.url = url;
    req.headers = headers;
    req.nheaders = nh;
    req.body = body;
    req.body_len = body ? strlen(body) : 0;
    req.connect_timeout_ms = CALL_CONNECT_MS;
    req.timeout_ms = CALL_TIMEOUT_MS;
    httpc_start(env->httpc, &req, call_data, call_done, c);
    pthread_mutex_lock(&c->mu);
    while (!c->done)
        pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
    return c->rc ? ERR_UPSTREAM : 0;
}

/* See operations_int.h. */
void integ_call_cleanup(struct integ_call *c)
{
    buf_cleanup(&c->body);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
}

/* ---- The token ---- */

static pthread_mutex_t refresh_locks[REFRESH_LOCKS] = {
#define L PTHREAD_MUTEX_INITIALIZER
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
    L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L, L,
#undef L
};

/* FNV-1a of the connection's name: which lock is its, in this process and across nodes. */
static uint32_t connection_hash(const struct store_tenant *t, const char *provider)
{
    uint32_t h = 2166136261u;
    for (const char *s = t->org_id; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h = (h ^ (unsigned)t->mode) * 16777619u;
    for (const char *s = provider; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The connection's row and its tokens object ('*tokens', a new reference), or a failure. */
static int load(const struct integ_env *env, const struct store_tenant *t,
                const struct integ_provider *p, struct arena *a, struct store_integration *row,
                json_t **tokens, struct integ_result *out)
{
    struct store *s = store_pool_get(env->pool);
    int rc = store_integration_get(s, t, p->id, a, row);
    const char *text;

    store_pool_put(env->pool, s);
    *tokens = NULL;
    if (rc && rc != ERR_NOT_FOUND) {
        integ_failf(out, true, "The connection to %s could not be read.", p->name);
        return rc;
    }
    if (rc || strcmp(row->status, "connected") != 0 || !row->secrets) {
        integ_failf(out, false, "integration_not_connected: %s is not connected%s%s.", p->name,
                    !rc && row->error ? ": " : "", !rc && row->error ? row->error : "");
        return ERR_NOT_FOUND;
    }
    text = integ_open(env->key, t, p->id, "secrets", row->secrets, row->secrets_len, a);
    *tokens = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_string_value(json_object_get(*tokens, "access_token"))) {
        json_decref(*tokens);
        *tokens = NULL;
        integ_failf(
            out, false,
            "integration_not_connected: the %s tokens do not open (another server secret?); "
            "connect again.",
            p->name);
        return ERR_INVALID;
    }
    return 0;
}

static bool expiring(const json_t *tokens, int64_t now)
{
    int64_t at = json_integer_value(json_object_get(tokens, "expires_at"));
    return at && at - now < INTEG_REFRESH_AHEAD_MS;
}

/* Refresh the connection (the lock held, the row read again): 0 with a new row written and
 * '*tokens' replaced, or a failure. A refusal marks the connection reauthorization_required. */
static int refresh(const struct integ_env *env, const struct store_tenant *t,
                   const struct integ_provider *p, struct arena *a,
                   const struct store_integration *row, json_t **tokens, struct integ_result *out)
{
    const char *refresh_token = json_string_value(json_object_get(*tokens, "refresh_token"));
    const char *headers[2] = {"Content-Type: application/x-www-form-urlencoded",
                              "Accept: application/json"};
    const char *form = integ_refresh_form(env->cfg, p, refresh_token, a);
    struct integ_token tok;
    struct store_integration now_row = *row;
    char code[64], why[512];
    struct integ_call c;
    struct store *s;
    json_t *fresh;
    char *text;
    int rc;

    rc = integ_call_run(env, "POST", integ_setting(env->cfg, p, CONFIG_OAUTH_TOKEN_URL), headers, 2,
                        form, &c);
    if (rc) {
        integ_failf(out, true,
                    "The %s token could not be refreshed: the provider did not answer (%s).",
                    p->name, c.why);
        integ_call_cleanup(&c);
        return rc;
    }
    rc = integ_token_parse(c.status, buf_ptr(&c.body), buf_len(&c.body), a, &tok, code,
                           sizeof(code), why, sizeof(why));
    integ_call_cleanup(&c);
    if (rc && (strcmp(code, "invalid_response") == 0 || c.status >= 500 || c.status == 429)) {
        integ_failf(out, true, "The %s token could not be refreshed: %s.", p->name, why);
        return rc;
    }
    s = store_pool_get(env->pool);
    if (rc) {
        /* The provider refused: the connection needs the user again. */
        now_row.status = "error";
        now_row.error = "reauthorization_required";
        now_row.secrets = NULL;
        now_row.secrets_len = 0;
        now_row.updated_at = clock_now_ms();
        if (store_integration_put(s, t, &now_row))
            log_warn("integrations: cannot mark %s of %s for reauthorization", p->id, t->org_id);
        store_pool_put(env->pool, s);
        log_warn("integrations: the %s refresh of %s was refused: %s", p->id, t->org_id, why);
        integ_failf(out, false,
                    "integration_not_connected: %s refused the refresh (%s): "
                    "reauthorization_required.",
                    p->name, code);
        return rc;
    }
    /* The same secrets with the new token; a provider that rotates sends a new refresh token,
     * one that does not keeps the old. */
    fresh = json_deep_copy(*tokens);
    json_object_set_new(fresh, "access_token", json_string(tok.access_token));
    json_object_set_new(fresh, "refresh_token",
                        json_string(tok.refresh_token ? tok.refresh_token : refresh_token));
    json_object_set_new(fresh, "expires_at",
                        json_integer(tok.expires_in ? clock_now_ms() + tok.expires_in * 1000 : 0));
    text = json_dumps(fresh, JSON_COMPACT);
    now_row.secrets = integ_seal(env->key, t, p->id, "secrets", text, a, &now_row.secrets_len);
    memset(text, 0, strlen(text));
    free(text);
    now_row.updated_at = clock_now_ms();
    now_row.error = NULL;
    rc = now_row.secrets ? store_integration_put(s, t, &now_row) : ERR_INTERNAL;
    store_pool_put(env->pool, s);
    if (rc) {
        json_decref(fresh);
        integ_failf(out, true, "The refreshed %s token could not be stored.", p->name);
        return rc;
    }
    log_info("integrations: the %s token of %s was refreshed", p->id, t->org_id);
    json_decref(*tokens);
    *tokens = fresh;
    return 0;
}

/* See operations_int.h. */
const char *integ_token_now(const struct integ_env *env, const struct store_tenant *t,
                            const struct integ_provider *p, struct arena *a,
                            struct integ_result *out)
{
    struct store_integration row;
    json_t *tokens = NULL;
    const char *token = NULL;
    int rc = load(env, t, p, a, &row, &tokens, out);

    if (!rc && expiring(tokens, clock_now_ms()) &&
        json_string_value(json_object_get(tokens, "refresh_token"))) {
        /* One refresh at a time per connection: in this process (the mutex), and across nodes
         * (the store's lock, held on a connection of its own meanwhile). */
        uint32_t h = connection_hash(t, p->id);
        pthread_mutex_t *mu = &refresh_locks[h % REFRESH_LOCKS];
        struct store *held;
        pthread_mutex_lock(mu);
        held = store_pool_get(env->pool);
        json_decref(tokens); /* another step may have refreshed it meanwhile */
        tokens = NULL;
        rc = store_lock_wait(held, STORE_LOCK_REFRESH, h);
        if (rc) {
            integ_failf(out, true, "The %s token could not be refreshed: the lock was not taken.",
                        p->name);
        } else {
            rc = load(env, t, p, a, &row, &tokens, out);
            if (!rc && expiring(tokens, clock_now_ms()))
                rc = refresh(env, t, p, a, &row, &tokens, out);
            store_lock_release(held, STORE_LOCK_REFRESH, h);
        }
        store_pool_put(env->pool, held);
        pthread_mutex_unlock(mu);
    }
    if (!rc)
        token = arena_strdup(a, json_string_value(json_object_get(tokens, "access_token")));
    json_decref(tokens);
    return token;
}

/* ---- The operations ---- */

/* See operations_int.h. */
void integ_refused(struct integ_result *out, const struct integ_provider *p,
                   const struct integ_call *c)
{
    json_t *o = json_loadb(buf_ptr(&c->body), buf_len(&c->body), 0, NULL);
    const json_t *err = json_object_get(o, "error");
    const char *reason = json_string_value(json_object_get(o, "message"));
    bool busy = c->status == 429 || c->status >= 500;

    if (!reason && json_is_object(err))
        reason = json_string_value(json_object_get(err, "message")); /* Google, Graph */
    if (!reason && json_is_string(err))
        reason = json_string_value(err); /* Slack */
    integ_failf(out, busy, "%s refused: HTTP %ld: %.300s", p->name, c->status,
                reason ? reason : "no reason given");
    json_decref(o);
}

static const char *opt(const json_t *options, const char *name)
{
    const char *v = json_string_value(json_object_get(options, name));
    return v && *v ? v : NULL;
}

/* See operations_int.h. */
const char *integ_auth_header(struct arena *a, const char *token)
{
    size_t n = strlen(token) + 32;
    char *h = arena_alloc(a, n);
    snprintf(h, n, "Authorization: Bearer %s", token);
    return h;
}

static char *dump(json_t *o)
{
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return s;
}

/* Send 'body' (taken) to {api}'path'; 0 with the answer in 'c' (cleaned up by the caller). */
static int send_json(const struct integ_env *env, const struct integ_provider *p, const char *path,
                     const char *const *headers, size_t nh, char *body, struct integ_call *c,
                     struct integ_result *out)
{
    struct buf url;
    int rc;
    buf_init(&url, 64 * 1024);
    buf_appends(&url, integ_setting(env->cfg, p, CONFIG_OAUTH_API_URL));
    buf_appends(&url, path);
    rc = integ_call_run(env, "POST", buf_ptr(&url), headers, nh, body, c);
    buf_cleanup(&url);
    free(body);
    if (rc)
        integ_failf(out, true, "%s did not answer: %s", p->name, c->why[0] ? c->why : "no answer");
    return rc;
}

static void slack_post(const struct integ_env *env, const struct integ_provider *p,
                       const char *token, const json_t *options, const char *input, struct arena *a,
                       struct integ_result *out)
{
    const char *h[] = {integ_auth_header(a, token), "Content-Type: application/json; charset=utf-8",
                       "Accept: application/json"};
    struct integ_call c;
    json_t *o;

    if (send_json(env, p, "/chat.postMessage", h, 3,
                  dump(json_pack("{s:s, s:s}", "channel", opt(options, "channel"), "text", input)),
                  &c, out))
        goto out;
    o = json_loadb(buf_ptr(&c.body), buf_len(&c.body), 0, NULL);
    if (c.status == 200 && json_is_true(json_object_get(o, "ok")) &&
        json_string_value(json_object_get(o, "ts")))
        succeed(out, json_string_value(json_object_get(o, "ts")), NULL);
    else
        integ_refused(out, p, &c);
    json_decref(o);
out:
    integ_call_cleanup(&c);
}

/* See operations_int.h: an owner of letters, digits, '-' and '_' (enterprise accounts), a name
 * of those and '.', neither "." nor "..". Each part becomes a segment of the URL path, so
 * nothing else may pass. */
bool integ_repo_ok(const char *repo)
{
    const char *slash = repo ? strchr(repo, '/') : NULL;
    char owner[INTEG_GITHUB_NAME_MAX + 1];
    size_t n = slash ? (size_t)(slash - repo) : 0;

    if (n == 0 || n > INTEG_GITHUB_NAME_MAX)
        return false;
    memcpy(owner, repo, n);
    owner[n] = '\0';
    return integ_segment_ok(owner, INTEG_GITHUB_NAME_MAX, "-_") &&
           integ_segment_ok(slash + 1, INTEG_GITHUB_NAME_MAX, "-_.");
}

static void github_issue(const struct integ_env *env, const struct integ_provider *p,
                         const char *token, const json_t *options, const char *input,
                         struct arena *a, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(a, token), "Content-Type: application/json",
                       "Accept: application/vnd.github+json", "X-GitHub-Api-Version: 2022-11-28"};
    const char *repo = opt(options, "repo"), *nl = strchr(input, '\n');
    char *title, id[32];
    struct buf path;
    struct integ_call c;
    json_t *o;

    if (!integ_repo_ok(repo)) {
        integ_failf(out, false,
                    "options.repo must be owner/name (letters, digits, '-', '_' and, in the name, "
                    "'.'; neither part . or ..), not %.100s.",
                    repo ? repo : "empty");
        return;
    }
    title = nl ? arena_strndup(a, input, (size_t)(nl - input)) : arena_strdup(a, input);
    if (!*title) {
        integ_failf(out, false, "The input's first line, the issue's title, is empty.");
        return;
    }
    buf_init(&path, 4096);
    buf_appendf(&path, "/repos/%s/issues", repo);
    if (send_json(env, p, buf_ptr(&path), h, 4,
                  dump(json_pack("{s:s, s:s}", "title", title, "body", nl ? nl + 1 : "")), &c,
                  out)) {
        buf_cleanup(&path);
        goto out;
    }
    buf_cleanup(&path);
    o = json_loadb(buf_ptr(&c.body), buf_len(&c.body), 0, NULL);
    if (c.status == 201 && json_is_integer(json_object_get(o, "id"))) {
        snprintf(id, sizeof(id), "%lld", (long long)json_integer_value(json_object_get(o, "id")));
        succeed(out, id, json_string_value(json_object_get(o, "html_url")));
    } else {
        integ_refused(out, p, &c);
    }
    json_decref(o);
out:
    integ_call_cleanup(&c);
}

/* start/end as Google wants them: a date-time, or a date for an all-day event. */
static json_t *when(const char *v)
{
    return strlen(v) == 10 ? json_pack("{s:s}", "date", v) : json_pack("{s:s}", "dateTime", v);
}

static void calendar_event(const struct integ_env *env, const struct integ_provider *p,
                           const char *token, const json_t *options, const char *input,
                           struct arena *a, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(a, token), "Content-Type: application/json",
                       "Accept: application/json"};
    json_t *in = json_loads(input, 0, NULL), *ev, *o;
    const char *summary = json_string_value(json_object_get(in, "summary"));
    const char *start = json_string_value(json_object_get(in, "start"));
    const char *end = json_string_value(json_object_get(in, "end"));
    const char *desc = json_string_value(json_object_get(in, "description"));
    const char *cal = opt(options, "calendar_id");
    struct buf path;
    struct integ_call c;

    if (cal && !integ_segment_ok(cal, INTEG_CALENDAR_ID_MAX, NULL)) {
        json_decref(in);
        integ_failf(out, false, "options.calendar_id must be a calendar's id, not %.100s.", cal);
        return;
    }
    if (!summary || !start || !end) {
        json_decref(in);
        integ_failf(out, false,
                    "The input must be a JSON object {summary, start, end, description?} "
                    "with RFC 3339 start and end.");
        return;
    }
    ev = json_pack("{s:s, s:o, s:o}", "summary", summary, "start", when(start), "end", when(end));
    if (desc)
        json_object_set_new(ev, "description", json_string(desc));
    json_decref(in);
    buf_init(&path, 4096);
    buf_appends(&path, "/calendar/v3/calendars/");
    buf_append_urlenc(&path, cal ? cal : "primary");
    buf_appends(&path, "/events");
    if (send_json(env, p, buf_ptr(&path), h, 3, dump(ev), &c, out)) {
        buf_cleanup(&path);
        goto out;
    }
    buf_cleanup(&path);
    o = json_loadb(buf_ptr(&c.body), buf_len(&c.body), 0, NULL);
    if (c.status >= 200 && c.status <= 299 && json_string_value(json_object_get(o, "id")))
        succeed(out, json_string_value(json_object_get(o, "id")),
                json_string_value(json_object_get(o, "htmlLink")));
    else
        integ_refused(out, p, &c);
    json_decref(o);
out:
    integ_call_cleanup(&c);
}

/* Graph's toRecipients of 'to': one or more addresses separated by ',' or ';'. */
static json_t *recipients(const char *to)
{
    json_t *list = json_array();

    while (to && *to) {
        size_t n = strcspn(to, ",;");
        const char *end = to + n;
        while (to < end && (*to == ' ' || *to == '\t'))
            to++;
        while (end > to && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end > to)
            json_array_append_new(
                list, json_pack("{s:{s:s%}}", "emailAddress", "address", to, (size_t)(end - to)));
        to += strcspn(to, ",;");
        to += *to ? 1 : 0;
    }
    return list;
}

static void outlook_mail(const struct integ_env *env, const struct integ_provider *p,
                         const char *token, const json_t *options, const char *input,
                         struct arena *a, struct integ_result *out)
{
    char rid[37], hex[33], line[64];
    unsigned char r[16];
    const char *h[4];
    struct integ_call c;
    json_t *msg;

    /* A client-request-id (a v4 UUID) names the mail: Graph's 202 has no body. */
    if (crypto_random(r, sizeof(r))) {
        integ_failf(out, true, "No random bytes.");
        return;
    }
    r[6] = (unsigned char)((r[6] & 0x0f) | 0x40);
    r[8] = (unsigned char)((r[8] & 0x3f) | 0x80);
    crypto_hex(r, sizeof(r), hex);
    snprintf(rid, sizeof(rid), "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16,
             hex + 20);
    snprintf(line, sizeof(line), "client-request-id: %s", rid);
    h[0] = integ_auth_header(a, token);
    h[1] = "Content-Type: application/json";
    h[2] = "Accept: application/json";
    h[3] = line;
    msg = json_pack("{s:{s:s, s:{s:s, s:s}, s:o}, s:b}", "message", "subject",
                    opt(options, "subject"), "body", "contentType", "Text", "content", input,
                    "toRecipients", recipients(opt(options, "to")), "saveToSentItems", 1);
    if (send_json(env, p, "/v1.0/me/sendMail", h, 4, dump(msg), &c, out))
        goto out;
    if (c.status == 202)
        succeed(out, rid, NULL);
    else
        integ_refused(out, p, &c);
out:
    integ_call_cleanup(&c);
}

static void hubspot_note(const struct integ_env *env, const struct integ_provider *p,
                         const char *token, const json_t *options, const char *input,
                         struct arena *a, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(a, token), "Content-Type: application/json",
                       "Accept: application/json"};
    const char *email = opt(options, "contact_email");
    char *contact = NULL;
    json_t *note, *o;
    struct integ_call c;

    if (email) {
        json_t *q = json_pack("{s:[{s:[{s:s, s:s, s:s}]}], s:[s], s:i}", "filterGroups", "filters",
                              "propertyName", "email", "operator", "EQ", "value", email,
                              "properties", "email", "limit", 1);
        if (send_json(env, p, "/crm/v3/objects/contacts/search", h, 3, dump(q), &c, out))
            goto out;
        o = json_loadb(buf_ptr(&c.body), buf_len(&c.body), 0, NULL);
        if (c.status != 200) {
            integ_refused(out, p, &c);
        } else {
            const char *id = json_string_value(
                json_object_get(json_array_get(json_object_get(o, "results"), 0), "id"));
            if (id)
                contact = xstrdup(id);
            else
                integ_failf(out, false, "HubSpot has no contact with the email %.200s.", email);
        }
        json_decref(o);
        integ_call_cleanup(&c);
        if (!contact)
            return;
    }
    note = json_pack("{s:{s:s, s:I}}", "properties", "hs_note_body", input, "hs_timestamp",
                     (json_int_t)clock_now_ms());
    if (contact)
        json_object_set_new(note, "associations",
                            json_pack("[{s:{s:s}, s:[{s:s, s:i}]}]", "to", "id", contact, "types",
                                      "associationCategory", "HUBSPOT_DEFINED", "associationTypeId",
                                      202));
    free(contact);
    if (send_json(env, p, "/crm/v3/objects/notes", h, 3, dump(note), &c, out))
        goto out;
    o = json_loadb(buf_ptr(&c.body), buf_len(&c.body), 0, NULL);
    if (c.status == 201 && json_string_value(json_object_get(o, "id")))
        succeed(out, json_string_value(json_object_get(o, "id")), NULL);
    else
        integ_refused(out, p, &c);
    json_decref(o);
out:
    integ_call_cleanup(&c);
}

/* See operations.h. */
void integ_operation(const struct integ_env *env, const struct store_tenant *t, const char *action,
                     const json_t *options, const char *input, struct integ_result *out)
{
    const char *dot = strchr(action, '.');
    char provider[32];
    const struct integ_provider *p;
    const char *token;
    struct arena a;

    memset(out, 0, sizeof(*out));
    snprintf(provider, sizeof(provider), "%.*s", dot ? (int)(dot - action) : 0, action);
    p = integ_provider_find(provider);
    if (!p) {
        integ_failf(out, false, "Unknown operation %.100s.", action);
        return;
    }
    arena_init(&a);
    token = integ_token_now(env, t, p, &a, out);
    if (!token)
        goto out;
    if (strcmp(action, "slack.post_message") == 0)
        slack_post(env, p, token, options, input, &a, out);
    else if (strcmp(action, "github.create_issue") == 0)
        github_issue(env, p, token, options, input, &a, out);
    else if (strcmp(action, "google_calendar.create_event") == 0)
        calendar_event(env, p, token, options, input, &a, out);
    else if (strcmp(action, "outlook.send_mail") == 0)
        outlook_mail(env, p, token, options, input, &a, out);
    else if (strcmp(action, "hubspot.create_note") == 0)
        hubspot_note(env, p, token, options, input, &a, out);
    else
        integ_failf(out, false, "Unknown operation %.100s.", action);
out:
    arena_cleanup(&a);
}
