/* SPDX-License-Identifier: MIT */
/*
 * client.c: the exchanges with an MCP server (mcpc.h), as a chain of httpc transfers: each
 * transfer's end starts the next one, on httpc's thread, so that no thread waits on a server
 * (the blocking forms at the end wait on the caller's thread for the same chain).
 *
 * DESIGN. A session is one operation: STEP_INITIALIZE, STEP_INITIALIZED (the notification),
 * then STEP_REQUEST once (tools/call) or once per page (tools/list, following nextCursor), then
 * a DELETE of the server's session, which nobody waits for. The session owns copies of all it
 * was given and frees itself after telling the caller. Each transfer is guarded by the address
 * policy (httpc's peers), gets what is left of the operation's deadline, and its answer is read
 * by read.c as it arrives: the first response to our id ends the transfer, whatever the server
 * still streams. Response headers give the answer's kind (Content-Type) and, for initialize,
 * the session id; a line "HTTP/..." starts a response afresh (an interim 1xx came first).
 */
#include "mcpc.h"

#include "../core/clock.h"
#include "../httpc/httpc.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ERRBODY_MAX 4096 /* bytes of a refusal's body read for its message */
#define DELETE_MS 5000   /* at most, for the DELETE of a session */
/* httpc data callback returns, distinct from the error codes: the answer came, stop reading */
#define STOP_ANSWERED 1000
#define STOP_ENOUGH 1001

enum op { OP_LIST, OP_CALL };
enum step { STEP_INITIALIZE, STEP_INITIALIZED, STEP_REQUEST };

struct session {
    struct httpc *httpc;
    enum httpc_peers peers;
    long timeout_ms;
    int64_t deadline_us; /* clock_mono_us() */
    char *url;
    char **headers; /* the server's own lines */
    size_t nheaders;
    char *session_id; /* the server's, from initialize; NULL when none */
    const char *version;
    enum op op;
    enum step step;
    int64_t id; /* of the request in flight */
    /* the transfer in flight */
    long status;
    enum mcpc_body kind;
    bool reading;
    struct mcpc_reader reader;
    struct buf errbody;
    char *sid_seen; /* Mcp-Session-Id of this answer */
    bool sid_bad;
    /* OP_LIST */
    json_t *tools;
    char *cursor;
    int pages;
    /* OP_CALL */
    char *tool;
    json_t *args;
    /* the caller */
    mcpc_list_fn list_done;
    mcpc_call_fn call_done;
    void *ud;
};

static void send_step(struct session *s);

static void session_free(struct session *s)
{
    for (size_t i = 0; i < s->nheaders; i++)
        free(s->headers[i]);
    free(s->headers);
    free(s->url);
    free(s->session_id);
    free(s->sid_seen);
    free(s->cursor);
    free(s->tool);
    json_decref(s->tools);
    json_decref(s->args);
    if (s->reading)
        mcpc_reader_cleanup(&s->reader);
    buf_cleanup(&s->errbody);
    free(s);
}

/* A new session of 'op' for 'srv' under 'env' (everything copied). */
static struct session *session_new(const struct mcpc_env *env, const struct mcpc_server *srv,
                                   enum op op)
{
    struct session *s = xcalloc(1, sizeof(*s));
    s->httpc = env->httpc;
    s->peers = env->allow_private ? HTTPC_PEERS_NO_METADATA : HTTPC_PEERS_PUBLIC;
    s->timeout_ms = env->timeout_ms > 0 ? env->timeout_ms : MCPC_TIMEOUT_MS;
    s->deadline_us = clock_mono_us() + (int64_t)s->timeout_ms * 1000;
    s->url = xstrdup(srv->url ? srv->url : "");
    s->headers = xcalloc(srv->nheaders + 1, sizeof(*s->headers));
    for (size_t i = 0; i < srv->nheaders; i++)
        s->headers[s->nheaders++] = xstrdup(srv->headers[i]);
    s->op = op;
    s->step = STEP_INITIALIZE;
    buf_init(&s->errbody, ERRBODY_MAX);
    return s;
}

/* ---- The end ---- */

static int delete_data(void *ud, long status, const char *p, size_t n)
{
    (void)ud, (void)status, (void)p, (void)n;
    return 0;
}

static void delete_done(void *ud, int rc, long status, const char *why)
{
    (void)ud, (void)rc, (void)status, (void)why;
}

/* End the server's session, if it gave one (nobody waits for the answer). */
static void end_server_session(struct session *s)
{
    int64_t left_ms = (s->deadline_us - clock_mono_us()) / 1000;
    const char *headers[MCPC_HEADERS_MAX + 2];
    char sid[MCPC_SESSION_ID_MAX + 32], ver[64];
    struct httpc_request req;
    size_t nh = 0;

    if (!s->session_id || left_ms <= 0)
        return;
    snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", s->session_id);
    snprintf(ver, sizeof(ver), "MCP-Protocol-Version: %s", s->version);
    headers[nh++] = sid;
    headers[nh++] = ver;
    for (size_t i = 0; i < s->nheaders && nh < sizeof(headers) / sizeof(headers[0]); i++)
        headers[nh++] = s->headers[i];
    memset(&req, 0, sizeof(req));
    req.method = "DELETE";
    req.url = s->url;
    req.headers = headers;
    req.nheaders = nh;
    req.connect_timeout_ms = req.timeout_ms = left_ms < DELETE_MS ? (long)left_ms : DELETE_MS;
    req.peers = s->peers;
    httpc_start(s->httpc, &req, delete_data, delete_done, NULL);
}

/* The operation ended: 'rc' 0, or the error and 'why'. Tells the caller, frees 's'. */
static void finish(struct session *s, int rc, const char *why)
{
    end_server_session(s);
    if (s->op == OP_LIST) {
        if (!rc) {
            char *text = json_dumps(s->tools, JSON_COMPACT);
            size_t len = text ? strlen(text) : 0;
            free(text);
            if (len > MCPC_TOOLS_JSON_MAX) {
                rc = ERR_LIMIT;
                why = "the tool list is over 1 MiB";
            }
        }
        s->list_done(s->ud, rc, rc ? NULL : s->tools, rc ? why : "");
    } else {
        struct mcpc_outcome o = {rc, true, NULL, 0};
        if (rc) {
            o.text = xstrdup(why);
            o.len = strlen(o.text);
        } else {
            const json_t *resp = s->reading ? mcpc_reader_response(&s->reader) : NULL;
            struct buf b;
            buf_init(&b, MCPC_ANSWER_MAX);
            mcpc_result_text(json_object_get(resp, "result"), &b, &o.is_error);
            o.text = buf_take(&b, &o.len);
            if (!o.text) {
                o.text = xstrdup("");
                o.len = 0;
            }
        }
        s->call_done(s->ud, &o);
        mcpc_outcome_cleanup(&o);
    }
    session_free(s);
}

/* ---- One transfer ---- */

/* "timed out after 30 s" (or "500 ms"): the operation's deadline passed. */
static void timed_out(const struct session *s, char *out, size_t n)
{
    if (s->timeout_ms % 1000 == 0)
        snprintf(out, n, "timed out after %ld s", s->timeout_ms / 1000);
    else
        snprintf(out, n, "timed out after %ld ms", s->timeout_ms);
}

/* Whether 's' ('len' bytes, without the line end) is a usable Mcp-Session-Id: 1 to
 * MCPC_SESSION_ID_MAX visible ASCII characters, as the transport specifies. */
static bool sid_ok(const char *v, size_t len)
{
    if (len == 0 || len > MCPC_SESSION_ID_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < 0x21 || v[i] > 0x7e)
            return false;
    }
    return true;
}

/* An httpc_header_fn: the answer's kind and session id. */
static int on_header(void *ud, const char *line, size_t n)
{
    struct session *s = ud;
    const char *colon = memchr(line, ':', n);
    const char *v, *end = line + n;
    size_t name_len;

    if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) {
        s->kind = MCPC_BODY_OTHER; /* a response starts (again, after a 1xx) */
        free(s->sid_seen);
        s->sid_seen = NULL;
        s->sid_bad = false;
        return 0;
    }
    if (!colon)
        return 0;
    name_len = (size_t)(colon - line);
    v = colon + 1;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
        end--;
    if (name_len == 12 && strncasecmp(line, "Content-Type", 12) == 0) {
        s->kind = mcpc_body_kind(v, (size_t)(end - v));
    } else if (name_len == 14 && strncasecmp(line, "Mcp-Session-Id", 14) == 0) {
        free(s->sid_seen);
        s->sid_seen = NULL;
        s->sid_bad = !sid_ok(v, (size_t)(end - v));
        if (!s->sid_bad)
            s->sid_seen = xstrndup(v, (size_t)(end - v));
    }
    return 0;
}

/* An httpc_data_fn: the answer read as it comes. */
static int on_data(void *ud, long status, const char *p, size_t n)
{
    struct session *s = ud;
    int rc;

    s->status = status;
    if (status < 200 || status > 299) {
        size_t room = ERRBODY_MAX - buf_len(&s->errbody);
        buf_append(&s->errbody, p, n < room ? n : room);
        return n < room ? 0 : STOP_ENOUGH;
    }
    if (s->step == STEP_INITIALIZED)
        return 0; /* a notification's answer has nothing to read */
    if (!s->reading) {
        mcpc_reader_init(&s->reader, s->kind, s->id, MCPC_ANSWER_MAX);
        s->reading = true;
    }
    rc = mcpc_reader_feed(&s->reader, p, n);
    return rc == MCPC_READ_DONE ? STOP_ANSWERED : rc;
}

/* The message of a refusal with 'status': the JSON-RPC error message of its body, if any. */
static void refusal_why(struct session *s, char *why, size_t n)
{
    json_t *doc = json_loadb(buf_ptr(&s->errbody), buf_len(&s->errbody), 0, NULL);
    const json_t *result;
    char inner[256];

    if (json_is_object(json_object_get(doc, "error")) &&
        mcpc_response_result(doc, &result, inner, sizeof(inner)) == ERR_UPSTREAM)
        snprintf(why, n, "the server answered HTTP %ld (%s)", s->status, inner);
    else
        snprintf(why, n, "the server answered HTTP %ld", s->status);
    json_decref(doc);
}

/* What initialize answered: the version and the session. 0, or an error with 'why'. */
static int initialized(struct session *s, const json_t *result, char *why, size_t n)
{
    const char *v = json_string_value(json_object_get(result, "protocolVersion"));
    for (size_t i = 0; v && mcpc_versions[i]; i++) {
        if (strcmp(mcpc_versions[i], v) == 0)
            s->version = mcpc_versions[i];
    }
    if (!s->version) {
        snprintf(why, n, "the server speaks protocol version %.40s, not one of %s, %s, %s",
                 v ? v : "(none)", mcpc_versions[0], mcpc_versions[1], mcpc_versions[2]);
        for (char *c = why; *c; c++) {
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = ' ';
        }
        return ERR_INVALID;
    }
    if (s->sid_bad) {
        snprintf(why, n, "the server's Mcp-Session-Id is not 1 to %d visible characters",
                 MCPC_SESSION_ID_MAX);
        return ERR_INVALID;
    }
    s->session_id = s->sid_seen;
    s->sid_seen = NULL;
    return 0;
}

/* The response of STEP_REQUEST came with 'result': next page or the end. */
static void requested(struct session *s, const json_t *result)
{
    const char *cursor = NULL;
    char why[256];
    int rc;

    if (s->op == OP_CALL) {
        finish(s, 0, "");
        return;
    }
    rc = mcpc_tools_page(result, s->tools, &cursor, why, sizeof(why));
    if (!rc && cursor && ++s->pages >= MCPC_PAGES_MAX) {
        snprintf(why, sizeof(why), "the tool list has more than %d pages", MCPC_PAGES_MAX);
        rc = ERR_LIMIT;
    }
    if (rc || !cursor) {
        finish(s, rc, why);
        return;
    }
    free(s->cursor);
    s->cursor = xstrdup(cursor);
    send_step(s);
}

/* An httpc_done_fn: the transfer ended. */
static void on_done(void *ud, int rc, long status, const char *why)
{
    struct session *s = ud;
    const json_t *result = NULL;
    char text[320];

    if (status)
        s->status = status;
    if (rc == STOP_ANSWERED || rc == STOP_ENOUGH)
        rc = 0;
    if (rc == ERR_LIMIT) {
        finish(s, rc, "the answer is over 4 MiB");
        return;
    }
    if (rc == ERR_INVALID) {
        finish(s, rc, "the answer is neither JSON nor an event stream");
        return;
    }
    if (rc == ERR_UPSTREAM && why && strncmp(why, "timed out", 9) == 0) {
        /* each transfer is given what is left of the operation's deadline: its time out is the
         * operation's, whose length is what the caller knows */
        timed_out(s, text, sizeof(text));
        finish(s, rc, text);
        return;
    }
    if (rc) {
        finish(s, ERR_UPSTREAM, why && *why ? why : "the server did not answer");
        return;
    }
    if (s->status < 200 || s->status > 299) {
        refusal_why(s, text, sizeof(text));
        finish(s, ERR_UPSTREAM, text);
        return;
    }
    if (s->step == STEP_INITIALIZED) {
        s->step = STEP_REQUEST;
        send_step(s);
        return;
    }
    if (!s->reading) {
        mcpc_reader_init(&s->reader, s->kind, s->id, MCPC_ANSWER_MAX);
        s->reading = true;
    }
    rc = mcpc_reader_finish(&s->reader, text, sizeof(text));
    if (!rc)
        rc = mcpc_response_result(mcpc_reader_response(&s->reader), &result, text, sizeof(text));
    if (rc) {
        finish(s, rc, text);
        return;
    }
    if (s->step == STEP_INITIALIZE) {
        rc = initialized(s, result, text, sizeof(text));
        if (rc) {
            finish(s, rc, text);
            return;
        }
        s->step = STEP_INITIALIZED;
        send_step(s);
        return;
    }
    requested(s, result);
}

/* The JSON-RPC message of the step 's' is at (a new string; the caller frees it). */
static char *step_body(struct session *s)
{
    json_t *msg = json_pack("{s:s}", "jsonrpc", "2.0");
    char *text;

    if (s->step == STEP_INITIALIZED) {
        json_object_set_new(msg, "method", json_string("notifications/initialized"));
    } else {
        s->id++;
        json_object_set_new(msg, "id", json_integer(s->id));
        if (s->step == STEP_INITIALIZE) {
            json_object_set_new(msg, "method", json_string("initialize"));
            json_object_set_new(msg, "params",
                                json_pack("{s:s,s:{},s:{s:s,s:s}}", "protocolVersion",
                                          mcpc_versions[0], "capabilities", "clientInfo", "name",
                                          "workforce", "version", MCPC_CLIENT_VERSION));
        } else if (s->op == OP_LIST) {
            json_object_set_new(msg, "method", json_string("tools/list"));
            json_object_set_new(
                msg, "params", s->cursor ? json_pack("{s:s}", "cursor", s->cursor) : json_object());
        } else {
            json_object_set_new(msg, "method", json_string("tools/call"));
            json_object_set_new(msg, "params",
                                json_pack("{s:s,s:O}", "name", s->tool, "arguments", s->args));
        }
    }
    text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    return text;
}

/* Start the transfer of the step 's' is at; its end goes on (on_done()). */
static void send_step(struct session *s)
{
    const char *headers[MCPC_HEADERS_MAX + 4];
    char sid[MCPC_SESSION_ID_MAX + 32], ver[64];
    int64_t left_ms = (s->deadline_us - clock_mono_us()) / 1000;
    struct httpc_request req;
    char *body;
    size_t nh = 0;

    if (left_ms <= 0) {
        timed_out(s, sid, sizeof(sid));
        finish(s, ERR_UPSTREAM, sid);
        return;
    }
    body = step_body(s);
    if (!body) {
        finish(s, ERR_NOMEM, "out of memory");
        return;
    }
    headers[nh++] = "Content-Type: application/json";
    headers[nh++] = "Accept: application/json, text/event-stream";
    if (s->version) {
        snprintf(ver, sizeof(ver), "MCP-Protocol-Version: %s", s->version);
        headers[nh++] = ver;
    }
    if (s->session_id) {
        snprintf(sid, sizeof(sid), "Mcp-Session-Id: %s", s->session_id);
        headers[nh++] = sid;
    }
    for (size_t i = 0; i < s->nheaders && nh < sizeof(headers) / sizeof(headers[0]); i++)
        headers[nh++] = s->headers[i];
    /* the transfer in flight starts afresh */
    s->status = 0;
    s->kind = MCPC_BODY_OTHER;
    if (s->reading)
        mcpc_reader_cleanup(&s->reader);
    s->reading = false;
    buf_reset(&s->errbody);
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.url = s->url;
    req.headers = headers;
    req.nheaders = nh;
    req.body = body;
    req.body_len = strlen(body);
    req.connect_timeout_ms = req.timeout_ms = (long)left_ms;
    req.peers = s->peers;
    req.on_header = on_header;
    httpc_start(s->httpc, &req, on_data, on_done, s); /* copies; 's' may be gone after it */
    free(body);
}

/* ---- Operations ---- */

/* Lines given to the transport must not carry a line break of their own. */
static bool lines_ok(const struct mcpc_server *srv)
{
    for (size_t i = 0; i < srv->nheaders; i++) {
        if (!srv->headers[i] || strpbrk(srv->headers[i], "\r\n") || !strchr(srv->headers[i], ':'))
            return false;
    }
    return srv->url && srv->nheaders <= MCPC_HEADERS_MAX;
}

/* See mcpc.h. */
int mcpc_list_start(const struct mcpc_env *env, const struct mcpc_server *srv, mcpc_list_fn done,
                    void *ud)
{
    struct session *s;
    if (!lines_ok(srv)) {
        done(ud, ERR_INVALID, NULL, "the server's URL or headers are malformed");
        return 0;
    }
    s = session_new(env, srv, OP_LIST);
    s->tools = json_array();
    s->list_done = done;
    s->ud = ud;
    send_step(s);
    return 0;
}

/* See mcpc.h. */
void mcpc_outcome_cleanup(struct mcpc_outcome *o)
{
    free(o->text);
    o->text = NULL;
    o->len = 0;
}

/* See mcpc.h. */
int mcpc_call_start(const struct mcpc_env *env, const struct mcpc_server *srv, const char *tool,
                    const json_t *args, mcpc_call_fn done, void *ud)
{
    struct session *s;
    if (!lines_ok(srv) || !tool) {
        struct mcpc_outcome o = {ERR_INVALID, true, NULL, 0};
        o.text = xstrdup("the server's URL or headers, or the tool, are malformed");
        o.len = strlen(o.text);
        done(ud, &o);
        mcpc_outcome_cleanup(&o);
        return 0;
    }
    s = session_new(env, srv, OP_CALL);
    s->tool = xstrdup(tool);
    s->args = json_is_object(args) ? json_deep_copy(args) : json_object();
    s->call_done = done;
    s->ud = ud;
    send_step(s);
    return 0;
}

/* ---- Blocking forms ---- */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
    json_t *tools;
    char *why;
    size_t why_n;
    struct mcpc_outcome *out;
};

static void waiter_init(struct waiter *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

static void waiter_wait(struct waiter *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
}

static void waiter_wake(struct waiter *w)
{
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void list_ended(void *ud, int rc, json_t *tools, const char *why)
{
    struct waiter *w = ud;
    w->rc = rc;
    w->tools = rc ? NULL : json_incref(tools);
    if (w->why_n)
        snprintf(w->why, w->why_n, "%s", why);
    waiter_wake(w);
}

/* See mcpc.h. */
int mcpc_list(const struct mcpc_env *env, const struct mcpc_server *srv, json_t **tools, char *why,
              size_t n)
{
    struct waiter w;
    waiter_init(&w);
    w.why = why;
    w.why_n = n;
    mcpc_list_start(env, srv, list_ended, &w);
    waiter_wait(&w);
    *tools = w.tools;
    return w.rc;
}

static void call_ended(void *ud, struct mcpc_outcome *o)
{
    struct waiter *w = ud;
    *w->out = *o;
    o->text = NULL; /* taken */
    waiter_wake(w);
}

/* See mcpc.h. */
int mcpc_call(const struct mcpc_env *env, const struct mcpc_server *srv, const char *tool,
              const json_t *args, struct mcpc_outcome *out)
{
    struct waiter w;
    waiter_init(&w);
    memset(out, 0, sizeof(*out));
    w.out = out;
    mcpc_call_start(env, srv, tool, args, call_ended, &w);
    waiter_wait(&w);
    return out->rc;
}
