/* SPDX-License-Identifier: MIT */
/*
 * middleware.c: the pipeline of every request, in the order the contract's clients observe:
 *
 *   begin   request id -> route (404/405) -> key (401) -> limits (429) -> scope (403); a
 *           Content-Length over the JSON cap is refused (413) unread
 *   handle  the error found in begin, if any -> [ROUTE_VERIFY: body size (413) -> the
 *           application's verify() (401) -> limits (429)] -> body size (413) -> content type
 *           (415) -> JSON (400) -> query parameters (400) -> handler
 *   done    rate-limit slot released, metrics counted, request memory freed
 *
 * Every response carries X-Request-Id; every response after a valid key also carries the
 * X-RateLimit-* headers. Errors are rendered only by the application's writer (app->error).
 */
#include "router.h"
#include "router_int.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/crypto.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../core/str.h"
#include "../metrics/metrics.h"
#include "../ratelimit/ratelimit.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* A refusal known at the headers is answered before a body larger than this (or chunked). */
#define EARLY_BODY_MIN (64u * 1024)

/* ---- Helpers for handlers ---- */

/* The value of query parameter 'name', or NULL when absent. Borrowed for the request. */
const char *router_query(const struct router_req *r, const char *name)
{
    for (size_t i = 0; i < r->nquery; i++) {
        if (strcmp(r->qname[i], name) == 0)
            return r->qvalue[i];
    }
    return NULL;
}

/* The row of the route's query parameter 'name', or NULL. */
static const struct router_qparam *qparam(const struct router_req *r, const char *name)
{
    const struct route *rt = r->handling ? r->handling : router_req_route(r);
    for (size_t i = 0; rt && rt->query && rt->query[i].name; i++) {
        if (strcmp(rt->query[i].name, name) == 0)
            return &rt->query[i];
    }
    return NULL;
}

/*
 * Read the 'limit' query parameter: absent gives the row's default; otherwise it must be
 * decimal digits from the row's min to its max, else 400 with param "limit".
 */
int router_query_limit(const struct router_req *r, unsigned *out, struct err *e)
{
    const struct router_qparam *q = qparam(r, "limit");
    const char *v = router_query(r, "limit");
    uint64_t n;

    if (!q || q->type != ROUTER_Q_LIMIT)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the route has no limit");
    if (!v) {
        *out = (unsigned)q->def;
        return 0;
    }
    if (str_to_u64(str_c(v), &n) || n < (uint64_t)q->min || n > (uint64_t)q->max)
        return err_set(e, ERR_INVALID, "invalid_request", "limit",
                       "Invalid limit: must be an integer from %lld to %lld.", (long long)q->min,
                       (long long)q->max);
    *out = (unsigned)n;
    return 0;
}

/* See router.h. */
int router_query_since(const struct router_req *r, int64_t *ms, struct err *e)
{
    const char *v = router_query(r, "since");
    uint64_t secs = 0;

    *ms = 0;
    if (v && (str_to_u64(str_c(v), &secs) || secs > 253402300799ull))
        return err_set(e, ERR_INVALID, "invalid_request", "since",
                       "since must be a time in Unix seconds.");
    *ms = (int64_t)secs * 1000;
    return 0;
}

/* See router.h. */
int router_query_enum(const struct router_req *r, const char *name, int *out, struct err *e)
{
    const struct router_qparam *q = qparam(r, name);
    const char *v = router_query(r, name);
    char list[256];
    size_t used = 0;

    *out = -1;
    if (!q || q->type != ROUTER_Q_ENUM)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the route has no %s", name);
    if (!v) {
        *out = (int)q->def;
        return 0;
    }
    for (int i = 0; q->values[i]; i++) {
        if (strcmp(v, q->values[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    list[0] = '\0';
    for (int i = 0; q->values[i] && used < sizeof(list); i++) {
        int w = snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "", q->values[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
    return err_set(e, ERR_INVALID, "invalid_request", q->name, "Invalid %s: must be one of %s.",
                   q->name, list);
}

/* The 'before' cursor of a newest-first list: see router.h. */
int router_query_before(const struct router_req *r, const char *id_prefix, int64_t *t,
                        const char **id, struct err *e)
{
    const char *v = router_query(r, "before");
    const char *fields[2];
    *t = 0;
    *id = NULL;
    if (!v)
        return 0;
    if (router_cursor_decode(v, strlen(v), r->arena, fields, 2) ||
        str_to_i64(str_c(fields[0]), t) || !id_valid(fields[1], id_prefix))
        return err_set(e, ERR_INVALID, "invalid_request", "before",
                       "Invalid before: not a cursor this list returned.");
    *id = fields[1];
    return 0;
}

/* Write the tail of a newest-first list: "has_more" and "next_cursor". */
void router_write_more(const struct router_req *r, struct jw *w, bool more, int64_t t,
                       const char *id)
{
    jw_key(w, "has_more");
    jw_bool(w, more);
    jw_key(w, "next_cursor");
    if (more) {
        const char *fields[2] = {arena_printf(r->arena, "%lld", (long long)t), id};
        jw_str(w, router_cursor_encode(r->arena, fields, 2));
    } else {
        jw_null(w);
    }
}

/* Answer 200 with the JSON 'body' (taken). */
void router_respond(struct router_req *r, json_t *body)
{
    if (r->resp)
        json_decref(r->resp);
    r->resp = body;
}

/* Answer 200 with what the writer 'w' put in 'b'; 'b' is emptied either way. */
int router_respond_jw(struct router_req *r, struct jw *w, struct buf *b, struct err *e)
{
    return router_respond_jw_kept(r, w, b, NULL, NULL, 0, e);
}

/* As router_respond_jw(), keeping a copy of the answer in 'c' (NULL: none) under 'key' for
 * store generation 'gen'. */
int router_respond_jw_kept(struct router_req *r, struct jw *w, struct buf *b, struct cache *c,
                           const char *key, uint64_t gen, struct err *e)
{
    size_t len;
    char *s;
    if (jw_finish(w)) {
        buf_cleanup(b);
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "response too large");
    }
    s = buf_take(b, &len);
    if (c)
        cache_put(c, key, strlen(key), gen, s, len);
    router_respond_raw(r, 200, "application/json", s, len);
    return 0;
}

/* Answer with a non-JSON body (taken; released with free()). */
void router_respond_raw(struct router_req *r, unsigned status, const char *ctype, char *body,
                        size_t len)
{
    if (r->resp) {
        json_decref(r->resp);
        r->resp = NULL;
    }
    r->status = status;
    http_resp_set(r->http, status, ctype, body, len);
}

/* ---- Pipeline steps ---- */

static bool sane_request_id(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++) {
        char c = s[n];
        if (n >= 128 || !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
            return false;
    }
    return n > 0;
}

/* Unknown or repeated query parameters are refused, naming the first offender. */
/*
 * bench/people.sh builds a reference server with -DWORKFORCE_BENCH_NO_AUDIT: the same server
 * whose routes write no audit entry, to measure what the entries cost a write. Never a
 * product build (the Makefile does not know the flag).
 */
#ifdef WORKFORCE_BENCH_NO_AUDIT
#define AUDIT_ON 0
#else
#define AUDIT_ON 1
#endif

static int check_query(struct router_req *r, const struct route *rt, struct err *e)
{
    for (size_t i = 0; i < r->nquery; i++) {
        bool known = false;
        for (size_t j = 0; rt->query && rt->query[j].name; j++) {
            if (strcmp(rt->query[j].name, r->qname[i]) == 0)
                known = true;
        }
        if (!known && !(rt->flags & ROUTE_LOOSE_QUERY))
            return err_set(e, ERR_INVALID, "invalid_request", r->qname[i],
                           "Unknown query parameter: %.80s.", r->qname[i]);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(r->qname[j], r->qname[i]) == 0)
                return err_set(e, ERR_INVALID, "invalid_request", r->qname[i],
                               "Query parameter %.80s is repeated.", r->qname[i]);
        }
    }
    return 0;
}

/* What the key cache keeps for a key: the key's row and its organization's. */
struct verified {
    struct store_key key;
    struct store_org org;
};

/*
 * The key whose HMAC is 'hash' and its organization, from the cache when nothing was committed
 * since it was read, else from the store. A key's revocation, its organization's tier or
 * credits: each is a commit, so the next request reads them again.
 */
static int find_key(struct router_req *r, const unsigned char hash[32])
{
    struct verified v;
    uint64_t gen = 0;
    int rc;

    if (r->env->keys) {
        gen = store_generation(r->store);
        if (cache_get_into(r->env->keys, hash, 32, gen, &v, sizeof(v))) {
            r->key = v.key;
            r->org = v.org;
            return 0;
        }
    }
    rc = store_key_auth(r->store, hash, &r->key, &r->org);
    if (!rc && r->env->keys) {
        memset(&v, 0, sizeof(v));
        v.key = r->key;
        v.org = r->org;
        cache_put(r->env->keys, hash, 32, gen, &v, sizeof(v));
    }
    return rc;
}

static int authenticate(struct router_req *r, struct err *e)
{
    const char *h = http_req_header(r->http, "Authorization");
    const char *key;
    size_t keylen;
    int mode;
    unsigned char hash[32];
    int rc;

    if (!h)
        return err_set(e, ERR_AUTH, "missing_api_key", NULL,
                       "No API key provided. Send the header Authorization: Bearer <API_KEY>.");
    if (auth_bearer_parse(h, &key, &keylen, &mode))
        return err_set(e, ERR_AUTH, "invalid_api_key", NULL,
                       "The Authorization header must be 'Bearer ' followed by a secret key "
                       "(svc_live_sk_… or svc_test_sk_…).");
    rc = r->env->key_mac ? crypto_hmac_sign(r->env->key_mac, key, keylen, hash)
                         : auth_key_hash(r->env->secret, key, keylen, hash);
    if (rc)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "The key could not be checked.");
    rc = find_key(r, hash);
    if (rc == ERR_NOT_FOUND || (!rc && !crypto_equal(hash, r->key.hash, sizeof(hash))))
        return err_set(e, ERR_AUTH, "invalid_api_key", NULL, "The API key is not valid.");
    if (rc)
        return err_set(e, ERR_STORE, "internal_error", NULL, "The key could not be checked.");
    if (r->key.revoked_at)
        return err_set(e, ERR_AUTH, "invalid_api_key", NULL, "The API key has been revoked.");
    if (r->key.expires_at && r->key.expires_at <= clock_now_ms())
        return err_set(e, ERR_AUTH, "invalid_api_key", NULL, "The API key has expired.");
    if ((int)r->key.mode != mode)
        return err_set(e, ERR_AUTH, "invalid_api_key", NULL, "The API key is not valid.");
    if (auth_scopes_parse(r->key.scopes, &r->scopes, NULL))
        r->scopes = 1u << 31; /* damaged scope text: a bit no route asks for, so no scope */
    snprintf(r->tenant.org_id, sizeof(r->tenant.org_id), "%s", r->org.id);
    r->tenant.mode = r->key.mode;
    snprintf(r->rl_tenant, sizeof(r->rl_tenant), "%s:%s", r->org.id,
             r->key.mode == STORE_TEST ? "test" : "live");
    r->limits = r->env->cfg->limits[r->key.mode == STORE_TEST ? TIER_STARTER : r->org.tier];
    r->authed = true;
    return 0;
}

/*
 * What an error message may quote of the request line: the method when it is 1-10 capital
 * letters, the path when it is at most 200 bytes of the characters our routes are made of
 * (letters, digits, "/-._~"). Anything else (decoded from '%' escapes: markup, quotes, control
 * bytes, a long string) is never sent back: NULL.
 */
static const char *quotable(const char *s, size_t max, const char *allowed)
{
    size_t n = s ? strspn(s, allowed) : 0;
    return s && n > 0 && n <= max && s[n] == '\0' ? s : NULL;
}

static const char *quote_method(const struct http_req *h)
{
    return quotable(http_req_method(h), 10, "ABCDEFGHIJKLMNOPQRSTUVWXYZ");
}

static const char *quote_path(const struct http_req *h)
{
    return quotable(http_req_path(h), 200,
                    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/-._~");
}

/* See router.h. */
int router_no_route(const struct http_req *h, struct err *e)
{
    const char *method = quote_method(h), *path = quote_path(h);
    if (method && path)
        return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL, "No such route: %s %s.", method,
                       path);
    return err_set(e, ERR_NOT_FOUND, "route_not_found", NULL,
                   "No such route (the request line is not shown: it holds characters no route "
                   "has).");
}

/* A webhook's token (the route's first parameter) names a workflow: its organization and mode
 * are the request's tenant. An unknown token is an unknown route. */
static int hook_authenticate(struct router_req *r, struct err *e)
{
    struct store_workflow wf;
    int rc;
    if (r->app->routes[r->route].flags & ROUTE_EVENTS) {
        /* An integration's events URL: the token names an organization and mode. */
        memset(&wf, 0, sizeof(wf));
        rc = store_events_tenant(r->store, r->params[0], r->params[1], &wf.tenant);
    } else {
        rc = store_workflow_by_token(r->store, r->params[0], r->arena, &wf);
        if (!rc && strcmp(wf.trigger_type, "webhook") != 0)
            rc = ERR_NOT_FOUND;
    }
    if (!rc)
        rc = store_org_get(r->store, wf.tenant.org_id, &r->org);
    if (rc == ERR_NOT_FOUND)
        return router_no_route(r->http, e);
    if (rc)
        return err_set(e, ERR_STORE, "internal_error", NULL, "The webhook could not be checked.");
    r->tenant = wf.tenant;
    snprintf(r->rl_tenant, sizeof(r->rl_tenant), "%s:%s", r->org.id,
             wf.tenant.mode == STORE_TEST ? "test" : "live");
    r->limits = r->env->cfg->limits[wf.tenant.mode == STORE_TEST ? TIER_STARTER : r->org.tier];
    r->authed = true;
    return 0;
}

static void set_limit_headers(struct router_req *r, const struct ratelimit_result *res)
{
    char v[32];
    snprintf(v, sizeof(v), "%u", res->limit);
    http_resp_header(r->http, "X-RateLimit-Limit", v);
    snprintf(v, sizeof(v), "%u", res->remaining);
    http_resp_header(r->http, "X-RateLimit-Remaining", v);
    snprintf(v, sizeof(v), "%lld", (long long)res->reset_s);
    http_resp_header(r->http, "X-RateLimit-Reset", v);
}

static int admit(struct router_req *r, struct err *e)
{
    struct ratelimit_result res;

    ratelimit_enter(r->env->rl, r->rl_tenant, &r->limits, clock_now_ms(), &res);
    set_limit_headers(r, &res);
    if (res.verdict == RATELIMIT_OK) {
        r->rl_entered = true;
        r->rl_admitted = res;
        return 0;
    }
    {
        char v[24];
        snprintf(v, sizeof(v), "%lld", (long long)res.retry_after);
        http_resp_header(r->http, "Retry-After", v);
    }
    if (res.verdict == RATELIMIT_CONCURRENCY)
        return err_set(e, ERR_LIMIT, "concurrency_limit_exceeded", NULL,
                       "Too many requests in flight at once (limit %u). Retry after %lld s.",
                       r->limits.concurrent, (long long)res.retry_after);
    return err_set(e, ERR_LIMIT, "rate_limit_exceeded", NULL,
                   "Rate limit exceeded (%u requests per minute, burst %u). Retry after %lld s.",
                   r->limits.per_minute, r->limits.burst, (long long)res.retry_after);
}

static bool is_json_type(const char *ct)
{
    size_t n = strcspn(ct, ";");
    while (n > 0 && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
        n--;
    return n == 16 && strncasecmp(ct, "application/json", 16) == 0;
}

static int read_body(struct router_req *r, struct err *e)
{
    const char *m = http_req_method(r->http);
    const char *ct;
    const char *body;
    size_t len;

    if (strcmp(m, "POST") != 0 && strcmp(m, "PATCH") != 0 && strcmp(m, "PUT") != 0)
        return 0;
    if (r->route >= 0 && (r->app->routes[r->route].flags & ROUTE_UPLOAD))
        return 0; /* streamed to the upload sink */
    if (http_req_body_too_large(r->http))
        return err_set(e, ERR_LIMIT, "request_too_large", NULL,
                       "The request body is larger than %u bytes.", ROUTER_JSON_BODY_MAX);
    body = http_req_body(r->http, &len);
    /* Elsewhere an empty body counts as {}; a webhook's body is its whole message. */
    if (len == 0 && r->route >= 0 && (r->app->routes[r->route].flags & ROUTE_HOOK))
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "The webhook body must be a JSON object; it is empty.");
    ct = http_req_header(r->http, "Content-Type");
    if (len > 0 && (!ct || !is_json_type(ct)) &&
        !(r->route >= 0 && (r->app->routes[r->route].flags & ROUTE_HOOK)))
        return err_set(e, ERR_INVALID, "unsupported_media_type", NULL,
                       "Send the request body as application/json.");
    if (r->route >= 0 && (r->app->routes[r->route].flags & ROUTE_RAW_BODY))
        return 0; /* the handler parses it */
    return jb_parse(body, len, &r->body, e);
}

/* ---- Idempotency-Key (contract §5) ---- */

#define IDEM_MAX_AGE_MS (24LL * 3600 * 1000)

static bool idem_key_ok(const char *k)
{
    size_t n = 0;
    for (; k[n]; n++) {
        if (n >= 255 || (unsigned char)k[n] < 0x20 || (unsigned char)k[n] > 0x7E)
            return false;
    }
    return n > 0;
}

/*
 * Claim the request's Idempotency-Key. 0 with '*replayed' false: run the handler (r->idem_key
 * is set); 0 with '*replayed' true: the first response was set again; or an error.
 */
static int idem_begin(struct router_req *r, const char *key, bool *replayed, struct err *e)
{
    unsigned char fp[CRYPTO_SHA256_LEN];
    struct buf in;
    struct store_idem rec;
    const char *body;
    size_t len;
    int rc;

    *replayed = false;
    if (!idem_key_ok(key))
        return err_set(e, ERR_INVALID, "invalid_request", "Idempotency-Key",
                       "Invalid Idempotency-Key: 1 to 255 printable ASCII characters.");
    /* The fingerprint covers method, path and body: another request under the key is refused. */
    body = http_req_body(r->http, &len);
    buf_init(&in, (2u << 20));
    buf_appends(&in, http_req_method(r->http));
    buf_append(&in, "", 1);
    buf_appends(&in, http_req_path(r->http));
    buf_append(&in, "", 1);
    buf_append(&in, body, len);
    if (r->body_digest)
        buf_appends(&in, r->body_digest);
    crypto_sha256(buf_ptr(&in), buf_len(&in), fp);
    buf_cleanup(&in);
    rc = store_idem_claim(r->store, &r->tenant, key, fp, clock_now_ms(), IDEM_MAX_AGE_MS, r->arena,
                          &rec);
    if (rc == 0) {
        r->idem_key = arena_strdup(r->arena, key);
        return 0;
    }
    if (rc != ERR_CONFLICT)
        return err_set(e, rc, "internal_error", NULL, "idempotency check failed");
    if (!crypto_equal(fp, rec.fingerprint, sizeof(fp)))
        return err_set(e, ERR_INVALID, "idempotency_key_reused", "Idempotency-Key",
                       "This Idempotency-Key was used with another request.");
    if (rec.state == 0)
        return err_set(e, ERR_CONFLICT, "idempotency_key_in_use", "Idempotency-Key",
                       "A request with this Idempotency-Key is still in progress.");
    if (r->route >= 0 && (r->app->routes[r->route].flags & ROUTE_SECRET_ANSWER)) {
        /* kept sealed (idem_end): opened for the replay, never stored open */
        char *open_body;
        if (rec.body_len < CRYPTO_SEAL_OVERHEAD)
            return err_set(e, ERR_INTERNAL, "internal_error", NULL,
                           "the answer cannot be replayed");
        open_body = arena_alloc(r->arena, rec.body_len - CRYPTO_SEAL_OVERHEAD + 1);
        if (crypto_open(r->env->seal_key, key, strlen(key), (const unsigned char *)rec.body,
                        rec.body_len, open_body))
            return err_set(e, ERR_INTERNAL, "internal_error", NULL,
                           "the answer cannot be replayed");
        rec.body = open_body;
        rec.body_len -= CRYPTO_SEAL_OVERHEAD;
    }
    http_resp_header(r->http, "Idempotent-Replayed", "true");
    if (rec.content_type && strcmp(rec.content_type, "text/event-stream") == 0) {
        http_resp_header(r->http, "Cache-Control", "no-cache");
        http_resp_header(r->http, "X-Accel-Buffering", "no");
    }
    router_respond_raw(r, (unsigned)rec.status,
                       rec.content_type ? arena_strdup(r->arena, rec.content_type)
                                        : "application/json",
                       xstrndup(rec.body, rec.body_len), rec.body_len);
    *replayed = true;
    return 0;
}

/* Keep (or, for a 5xx, release) the response of a synchronous request under its key. */
static void idem_end(struct router_req *r, struct store *s)
{
    unsigned status = http_resp_status(r->http);
    const char *ctype = NULL;
    size_t len = 0;
    const char *body = http_resp_peek(r->http, &len, &ctype);
    unsigned char *sealed = NULL;
    int rc = 0;

    if (!body)
        body = "";
    if (status < 500 && r->route >= 0 && (r->app->routes[r->route].flags & ROUTE_SECRET_ANSWER)) {
        sealed = xmalloc(len + CRYPTO_SEAL_OVERHEAD);
        rc = crypto_seal(r->env->seal_key, r->idem_key, strlen(r->idem_key), body, len, sealed);
        body = (const char *)sealed;
        len += CRYPTO_SEAL_OVERHEAD;
    }
    if (rc || status >= 500)
        rc = store_idem_release(s, &r->tenant, r->idem_key);
    else
        rc = store_idem_complete(s, &r->tenant, r->idem_key, (int)status, ctype, body, len);
    free(sealed);
    if (rc)
        log_error("request %s: cannot record the Idempotency-Key response", r->request_id);
}

static void render(struct router_req *r)
{
    size_t len;
    char *s;
    if (!r->resp)
        return; /* a raw response was set */
    s = jo_dump(r->resp, &len);
    json_decref(r->resp);
    r->resp = NULL;
    http_resp_set(r->http, r->status ? r->status : 200, "application/json", s, len);
}

/* The answer of a deferred handler is ready; see router.h. */
void router_async_finish(struct router_req *r, int rc, const struct err *e)
{
    struct err fallback;
    if (rc && (!e || !e->code)) {
        err_set(&fallback, (enum err_code)rc, "internal_error", NULL, "Internal error.");
        e = &fallback;
    }
    if (r->answer_wrap) {
        r->answer_wrap(r, rc, rc ? e : NULL); /* sets the response in its own shape */
    } else if (rc) {
        if (r->resp) {
            json_decref(r->resp);
            r->resp = NULL;
        }
        r->app->error(r, e);
    } else {
        render(r);
    }
    if (r->idem_key) {
        struct store *s = store_pool_get(r->env->pool);
        idem_end(r, s);
        store_pool_put(r->env->pool, s);
    }
    http_req_resume(r->http);
}

/* ---- libmicrohttpd-facing callbacks ---- */

/* No route matched: 404 or 405, unless a valid key's request is over its limits (429): a valid
 * key's request counts and carries its limits, whatever the path. */
static void begin_unrouted(struct router_req *r, const struct router_match *m)
{
    struct http_req *h = r->http;

    if (http_req_header(h, "Authorization")) {
        r->store = store_pool_get(r->env->pool);
        if (authenticate(r, &r->early) == 0)
            admit(r, &r->early);
        store_pool_put(r->env->pool, r->store);
        r->store = NULL;
        if (r->early.code && strcmp(r->early.code, "rate_limit_exceeded") != 0 &&
            strcmp(r->early.code, "concurrency_limit_exceeded") != 0)
            err_clear(&r->early); /* the path is what is wrong: 404 or 405 below */
    }
    if (r->early.code) {
        /* over a limit: 429 */
    } else if (m->allow[0]) {
        http_resp_header(h, "Allow", m->allow);
        if (quote_method(h))
            err_set(&r->early, ERR_INVALID, "method_not_allowed", NULL,
                    "Method %s is not allowed here. Allowed: %s.", quote_method(h), m->allow);
        else
            err_set(&r->early, ERR_INVALID, "method_not_allowed", NULL,
                    "This method is not allowed here. Allowed: %s.", m->allow);
    } else {
        router_no_route(h, &r->early);
    }
}

/* 403 permission_denied into 'e' naming the scopes route 'rt' needs ("tools or
 * employees:read" when any one suffices, else each one it needs). */
static int scope_refused(const struct route *rt, struct err *e)
{
    char names[200] = "";
    size_t used = 0;
    const char *sep = (rt->flags & ROUTE_SCOPE_ANY) ? " or " : " and ";
    for (unsigned bit = 0; bit < 32 && used < sizeof(names); bit++) {
        if (rt->scope & (1u << bit))
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", used ? sep : "",
                                     auth_scope_name(1u << bit));
    }
    return err_set(e, ERR_FORBIDDEN, "permission_denied", NULL, "This API key lacks the scope %s.",
                   names);
}

/* A route matched: its key (or hook token), limits, scope and upload sink. Returns
 * HTTP_RESPOND_NOW when the answer is already set (a declared upload over the limit). */
static enum http_begin begin_routed(struct router_req *r, const struct router_match *m)
{
    const struct route *rt = &r->app->routes[m->route];
    int rc;

    r->route = m->route;
    memcpy(r->params, m->params, sizeof(r->params));
    /* the query is decoded once, here (libmicrohttpd never parses it) */
    if (router_query_parse(http_req_query(r->http), r->arena, ROUTER_MAX_QUERY, r->qname, r->qvalue,
                           &r->nquery, &r->query_err) != 0)
        r->query_bad = true;
    if (rt->flags & ROUTE_HOOK) {
        r->store = store_pool_get(r->env->pool);
        /* a sender that proves itself in the body is admitted once it has (on_handle) */
        if (hook_authenticate(r, &r->early) == 0 && !(rt->flags & ROUTE_VERIFY))
            admit(r, &r->early);
        store_pool_put(r->env->pool, r->store);
        r->store = NULL;
        return HTTP_READ_BODY;
    }
    if (rt->flags & ROUTE_PUBLIC)
        return HTTP_READ_BODY;
    r->store = store_pool_get(r->env->pool);
    /* A request with an Authorization header is judged by its key alone (contract §20). */
    if (!http_req_header(r->http, "Authorization") && router_has_session_cookie(r)) {
        rc = router_session_authenticate(r, &r->early);
    } else {
        rc = authenticate(r, &r->early);
        if (!rc)
            router_key_touch(r);
    }
    store_pool_put(r->env->pool, r->store);
    r->store = NULL;
    /* Limits before scope: every request of a valid key counts and gets the headers. */
    if (!rc)
        rc = admit(r, &r->early);
    if (rc && r->authed && (rt->flags & ROUTE_LIMIT_SOFT) && r->early.kind == ERR_LIMIT) {
        /* the handler answers the refusal itself */
        r->limited = true;
        r->limit_err = r->early;
        err_clear(&r->early);
        rc = 0;
    }
    if (!rc && !((rt->flags & ROUTE_SCOPE_ANY) ? auth_scope_allows_any(r->scopes, rt->scope)
                                               : auth_scope_allows(r->scopes, rt->scope)))
        rc = scope_refused(rt, &r->early);
    if (!rc)
        rc = router_role_refused(r, rt, &r->early);
    if (!rc && (rt->flags & ROUTE_UPLOAD)) {
        rc = rt->upload_begin(r, &r->early);
        /* A declared body over the limit is refused at once, unread. */
        if (rc && r->early.code && strcmp(r->early.code, "file_too_large") == 0) {
            r->app->error(r, &r->early);
            return HTTP_RESPOND_NOW;
        }
    }
    return HTTP_READ_BODY;
}

/*
 * Headers are known: route, key, limits. Everything that decides whether the request may run
 * happens here, so that a request counts toward the concurrency limit from its first byte to
 * its response (a slow upload is in flight while it uploads). An error found here is answered
 * in on_handle(), after the body is drained, so the keep-alive connection survives; only a
 * declared body over the cap is answered at once, unread.
 */
static enum http_begin on_begin(struct http_req *h, void *ud)
{
    const struct router_app *app = ud;
    struct arena *a = http_req_arena(h);
    struct router_req *r = arena_calloc(a, sizeof(*r));
    const char *rid = http_req_header(h, "X-Request-Id");
    const char *cl = http_req_header(h, "Content-Length");
    struct router_match m;
    const struct http_refusal *refusal;
    const char *method;
    uint64_t n;

    r->http = h;
    r->arena = a;
    r->app = app;
    r->env = app->env;
    r->route = -1;
    r->t0_us = clock_mono_us();
    err_clear(&r->early);
    if (rid && sane_request_id(rid)) {
        snprintf(r->request_id, sizeof(r->request_id), "%s", rid);
    } else if (id_new("req", r->request_id, sizeof(r->request_id))) {
        snprintf(r->request_id, sizeof(r->request_id), "req_unknown");
    }
    http_req_set_user(h, r);
    http_resp_header(h, "X-Request-Id", r->request_id);
    http_req_set_body_cap(h, ROUTER_JSON_BODY_MAX);

    refusal = http_req_refusal(h);
    if (refusal) {
        /* bad framing or sizes: answered unread, and the connection closes */
        err_set(&r->early, ERR_INVALID, refusal->code, refusal->param, "%s", refusal->msg);
        app->error(r, &r->early);
        return HTTP_RESPOND_NOW;
    }
    /* HEAD is GET without the body (libmicrohttpd leaves the body out). */
    method = strcmp(http_req_method(h), "HEAD") == 0 ? "GET" : http_req_method(h);
    router_match(app->routes, app->nroutes, method, http_req_path(h), a, &m);
    if (m.route < 0 && strcmp(method, http_req_method(h)) != 0 && m.allow[0])
        router_match(app->routes, app->nroutes, http_req_method(h), http_req_path(h), a, &m);
    if (m.route < 0)
        begin_unrouted(r, &m);
    else if (begin_routed(r, &m) == HTTP_RESPOND_NOW)
        return HTTP_RESPOND_NOW;
    if (!r->early.code && r->query_bad)
        r->early = r->query_err;
    if (!r->early.code && r->route >= 0)
        check_query(r, &app->routes[r->route], &r->early);
    if (!r->early.code && cl && !str_to_u64(str_c(cl), &n) && n > ROUTER_JSON_BODY_MAX &&
        !(r->route >= 0 && (app->routes[r->route].flags & ROUTE_UPLOAD))) {
        err_set(&r->early, ERR_LIMIT, "request_too_large", NULL,
                "The request body is larger than %u bytes.", ROUTER_JSON_BODY_MAX);
    }
    /*
     * A refusal known now is answered now when that saves reading a body that is large or of
     * unknown length (the connection then closes); a small body is read first, so that the
     * keep-alive connection survives.
     */
    if (r->early.code && http_req_body_pending(h, EARLY_BODY_MIN)) {
        app->error(r, &r->early);
        return HTTP_RESPOND_NOW;
    }
    return HTTP_READ_BODY;
}

/*
 * Give back the request's concurrency slot, once. A finished answer does it before the answer is
 * sent, so a client that has read it never finds the request still counted (with several nodes
 * the slot is given back over the network, which can take longer than the client's next request
 * to another node). A stream gives it back when it ends (on_done).
 */
static void release_slot(struct router_req *r)
{
    if (!r->rl_entered)
        return;
    r->rl_entered = false;
    ratelimit_leave(r->env->rl, r->rl_tenant, &r->rl_admitted);
}

/*
 * ROUTE_VERIFY: the body is whole and within the cap, the application has checked its sender,
 * and only then does the request count against its tenant's limits (429 from here). A refused
 * request was never admitted: it costs the tenant nothing.
 */
static int verify_then_admit(struct router_req *r, struct err *e)
{
    int rc;
    if (http_req_body_too_large(r->http))
        return err_set(e, ERR_LIMIT, "request_too_large", NULL,
                       "The request body is larger than %u bytes.", ROUTER_JSON_BODY_MAX);
    rc = r->app->verify ? r->app->verify(r, e)
                        : err_set(e, ERR_INTERNAL, "internal_error", NULL, "nothing verifies");
    if (!rc && r->authed)
        rc = admit(r, e);
    return rc;
}

static void on_handle(struct http_req *h, void *ud)
{
    struct router_req *r = http_req_user(h);
    struct err e;
    const struct route *rt;
    int rc;

    (void)ud;
    err_clear(&e);
    if (r->early.code) {
        r->app->error(r, &r->early);
        release_slot(r);
        return;
    }
    rt = &r->app->routes[r->route];
    r->store = store_pool_get(r->env->pool);
    if (r->body_end)
        r->body_end(r); /* uploads: the body digest the Idempotency-Key fingerprint covers */
    rc = (rt->flags & ROUTE_VERIFY) ? verify_then_admit(r, &e) : 0;
    if (!rc)
        rc = read_body(r, &e);
    if (!rc && strcmp(http_req_method(h), "POST") == 0 && !(rt->flags & ROUTE_PUBLIC)) {
        const char *key = http_req_header(h, "Idempotency-Key");
        bool replayed = false;
        if (key)
            rc = idem_begin(r, key, &replayed, &e);
        if (!rc && replayed) {
            store_pool_put(r->env->pool, r->store);
            r->store = NULL;
            release_slot(r);
            return;
        }
    }
    r->handling = rt;
    /* The route's audit entry commits with its change (store_audit_arm). */
    router_audit_prepare(r, rt);
    if (!rc && AUDIT_ON && r->audit.action)
        store_audit_arm(r->store, &r->audit);
    if (!rc)
        rc = rt->handler(r, &e);
    store_audit_arm(r->store, NULL);
    if (rc) {
        if (!e.code) {
            log_error("request %s: %s %s failed with %s and no details", r->request_id,
                      http_req_method(h), rt->pattern, err_name((enum err_code)rc));
            err_set(&e, (enum err_code)rc, "internal_error", NULL, "Internal error.");
        }
        if (r->resp) {
            json_decref(r->resp);
            r->resp = NULL;
        }
        r->app->error(r, &e);
    } else if (!r->async) {
        render(r); /* an asynchronous handler answers through router_async_finish() */
    }
    /* An asynchronous handler records its own response when it has one. */
    if (r->idem_key && !r->async)
        idem_end(r, r->store);
    store_pool_put(r->env->pool, r->store);
    r->store = NULL;
    if (!r->async)
        release_slot(r);
}

static void on_done(struct http_req *h, void *ud)
{
    struct router_req *r = http_req_user(h);
    const struct router_env *env = ((const struct router_app *)ud)->env;
    if (!r)
        return;
    if (r->cleanup)
        r->cleanup(r);
    release_slot(r); /* a stream, or a request that never reached on_handle */
    metrics_observe(env->metrics, r->route, http_resp_status(h), clock_mono_us() - r->t0_us);
    if (r->body)
        json_decref(r->body);
    if (r->resp)
        json_decref(r->resp);
}

/* The HTTP layer's own answers (no response set, stopping) through the application's writer. */
static void on_error(struct http_req *h, const char *code, const char *msg, void *ud)
{
    struct router_req *r = http_req_user(h);
    const struct router_app *app = ud;
    struct err e;

    if (!r)
        return; /* no request state: the HTTP layer answers with the bare status */
    if (r->resp) {
        json_decref(r->resp);
        r->resp = NULL;
    }
    err_set(&e, ERR_INTERNAL, code, NULL, "%s", msg);
    app->error(r, &e);
}

/* See router.h. */
const struct route *router_req_route(const struct router_req *r)
{
    return r->route >= 0 ? &r->app->routes[r->route] : NULL;
}

/* The callbacks that connect the HTTP server to this pipeline, with 'app' as their state. */
struct http_app router_http_app(const struct router_app *app)
{
    struct http_app h = {on_begin, on_handle, on_done, on_error, (void *)(uintptr_t)app};
    return h;
}
