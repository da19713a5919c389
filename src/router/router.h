/* SPDX-License-Identifier: MIT */
/*
 * router: the request pipeline around every handler (request id, route match, auth, scope,
 * rate limits, body and query checks) and what handlers see of a request: struct router_req.
 * Handlers have the shape `int h(struct router_req *r, struct err *e)`: return 0 with r->resp
 * set (status 200 unless r->status says otherwise), or an error code with 'e' filled.
 *
 * The router knows no handler and no error format: the application (api/) gives it a struct
 * router_app at start: the route table, the one error writer that turns a struct err into a
 * response, the services the pipeline itself uses (struct router_env) and an opaque pointer to
 * the handlers' own services, which the router only carries.
 */
#ifndef WORKFORCE_ROUTER_H
#define WORKFORCE_ROUTER_H

#include "../auth/auth.h"
#include "../cache/cache.h"
#include "../core/config.h"
#include "../core/err.h"
#include "../core/mem.h"
#include "../http/http.h"
#include "../json/json.h"
#include "../ratelimit/ratelimit.h"
#include "../store/store.h"

#include <stdbool.h>
#include <stdint.h>

#define ROUTER_MAX_PARAMS 4
#define ROUTER_MAX_QUERY 16             /* query parameters of a request (414 beyond) */
#define ROUTER_JSON_BODY_MAX (1u << 20) /* bytes of a JSON body (413 beyond) */

struct metrics;
struct ratelimit;
struct router_req;

typedef int (*router_handler_fn)(struct router_req *r, struct err *e);

enum router_flag {
    ROUTE_PUBLIC = 1 << 0, /* no key needed */
    ROUTE_UPLOAD = 1 << 1, /* multipart body streamed to the route's upload_begin() sink */
    /* With ROUTE_PUBLIC: the path's {token} alone authenticates (a workflow's webhook): the
     * workflow's organization and mode are the tenant, its rate limits apply, and the body is
     * read as JSON whatever its Content-Type. */
    ROUTE_HOOK = 1 << 2,
    /* Query parameters the route does not list are ignored rather than refused (an OAuth
     * callback: providers add their own); repeated ones are still refused. */
    ROUTE_LOOSE_QUERY = 1 << 3,
    /* With ROUTE_HOOK: the {token} (second parameter) is an organization's inbound events
     * token for the provider named by the first, not a workflow's. */
    ROUTE_EVENTS = 1 << 4,
    /* The OpenAI-compatible door (contract §16): every error, including those found before
     * the handler, is answered in OpenAI's shape (api/errors.c). A path under
     * ROUTER_OPENAI_PREFIX that matches no route (404, 405) is answered so too. */
    ROUTE_OPENAI = 1 << 5,
    /* The body is checked for size and content type but not parsed: the handler reads it
     * (http_req_body) and answers malformed JSON itself (the MCP server's JSON-RPC errors). */
    ROUTE_RAW_BODY = 1 << 6,
    /* A refusal by the rate limits is not answered 429 before the handler: the handler runs
     * with r->limited set and r->limit_err saying why, and answers it in its own terms (an
     * MCP tool call's error result). The request is not counted then, as a 429 is not. */
    ROUTE_LIMIT_SOFT = 1 << 7,
    /* The sender proves itself in the body (a provider's signature): once the body is read,
     * and before the request counts against any limit, the application's verify() checks it.
     * A request it refuses, or one over the size cap, touches no tenant's rate limits nor
     * concurrency. With ROUTE_HOOK the token's tenant is admitted after verify() accepts. */
    ROUTE_VERIFY = 1 << 8,
    /* Any one of the route's scopes suffices (GET /v1/tools: `tools` or `employees:read`);
     * without it a key needs all of them. */
    ROUTE_SCOPE_ANY = 1 << 9,
    /* Only a person's session may call it (contract §20: keys never manage keys nor users). */
    ROUTE_SESSION_ONLY = 1 << 10,
    /* Its answer holds a secret (a key, a set-password link, a webhook secret): it is kept for
     * Idempotency-Key replay sealed, never as it is. */
    ROUTE_SECRET_ANSWER = 1 << 11,
};

/* A person's session (contract §20): the cookie, its token's prefix, idle and absolute ages. */
#define ROUTER_SESSION_COOKIE "wf_session"
#define ROUTER_SESSION_PREFIX "wfs_"
#define ROUTER_SESSION_IDLE_MS (12 * 3600 * 1000LL)
#define ROUTER_SESSION_MAX_MS (7 * 24 * 3600 * 1000LL)
#define ROUTER_CSRF_LEN 44 /* base64url of 32 bytes and NUL */

#define ROUTER_OPENAI_PREFIX "/v1/openai"

/* The kinds of query parameters (router_qparam.type). */
enum router_qtype {
    ROUTER_Q_TEXT,   /* any text: an id, a tag, a provider's OAuth parameter */
    ROUTER_Q_LIMIT,  /* a page size: decimal digits from 'min' to 'max', 'def' when absent */
    ROUTER_Q_ENUM,   /* one of 'values' */
    ROUTER_Q_CURSOR, /* the next_cursor a list answered */
};

/* One query parameter a route takes (its table ends with a NULL name). */
struct router_qparam {
    const char *name;
    enum router_qtype type;
    int64_t min, max, def;     /* ROUTER_Q_LIMIT; ROUTER_Q_ENUM: 'def' the default's index, or -1 */
    const char *const *values; /* ROUTER_Q_ENUM: NULL-terminated */
};

struct route {
    const char *method;
    const char *pattern; /* "/v1/employees/{id}/stats" */
    router_handler_fn handler;
    uint32_t scope;                    /* enum auth_scope bits needed; 0: any key */
    unsigned flags;                    /* enum router_flag */
    const struct router_qparam *query; /* the query parameters it takes; NULL: none */
    /* The JSON members the handler binds (its jb_bind() table); NULL: no JSON members (no
     * body, a multipart upload, or a free-form object). The document is checked against it. */
    const struct jb_binding *body;
    /* ROUTE_UPLOAD: called when the headers are accepted, to set up the body sink. */
    int (*upload_begin)(struct router_req *r, struct err *e);
    /* The least role (enum store_role) a person's session needs; keys are judged by scope. */
    int role;
    /* The audit log's action of a change made here ("workflow.update"; the target's type is
     * what precedes the dot, its id the path's first parameter unless the handler sets it), or
     * NULL: the route changes no resource (reads, chat, runs). */
    const char *audit;
};

/* What the pipeline itself uses (keys, limits, metrics); read-only once serving starts. */
struct router_env {
    const struct config *cfg;
    struct store_pool *pool;
    struct ratelimit *rl;
    struct metrics *metrics;
    unsigned char secret[AUTH_SECRET_LEN];
    struct crypto_hmac *key_mac; /* HMAC keyed with 'secret', or NULL (then HMAC per call) */
    struct cache *keys;          /* verified keys with their organization, or NULL */
    struct cache *sessions;      /* verified sessions with their user and organization, or NULL */
    /* AES-256-GCM key of the answers kept sealed for Idempotency-Key replay
     * (ROUTE_SECRET_ANSWER), derived from 'secret'. */
    unsigned char seal_key[32];
};

/* The one error writer: set the response of 'r' from the error 'e' (status by its code). */
typedef void (*router_error_fn)(struct router_req *r, const struct err *e);

/* The application the pipeline serves; read-only once serving starts. */
struct router_app {
    const struct route *routes; /* THE route table */
    size_t nroutes;
    router_error_fn error;
    const struct router_env *env;
    const void *services; /* the handlers' services: carried, never read by the router */
    /* ROUTE_VERIFY: check the sender of 'r' (the body is read, not parsed; r->tenant is the
     * token's with ROUTE_HOOK). 0, or the error to answer. */
    int (*verify)(struct router_req *r, struct err *e);
};

/*
 * The rate limits every node shares, kept in the database (store_rate_enter) as a place of
 * ratelimit_share(): each call takes a handle of 'pool'. The caller keeps 'db' alive as long as
 * the limiter.
 */
struct router_limits_db {
    struct store_pool *pool;
    int64_t lease_ms;
};
void router_limits_place(struct router_limits_db *db, struct ratelimit_place *out);

struct router_req {
    struct http_req *http;
    struct arena *arena;
    const struct router_app *app;
    const struct router_env *env; /* app->env */
    int route;                    /* index in app->routes, -1 when none matched */
    /* The route whose handler runs: the matched one, or the one a handler runs inside its own
     * request (the MCP server's tool calls); its query parameters are the ones read. */
    const struct route *handling;
    const char *params[ROUTER_MAX_PARAMS];
    const char *qname[ROUTER_MAX_QUERY];
    const char *qvalue[ROUTER_MAX_QUERY];
    size_t nquery;
    bool query_bad; /* the query string could not be decoded: 'query_err' says why */
    struct err query_err;
    bool authed;
    /* A person (contract §20): the request came with a session; its user and role. */
    bool by_session;
    struct store_session session;
    struct store_user user;
    int role;                 /* enum store_role of the session's user */
    struct store_audit audit; /* the route's entry, armed on the store around the handler */
    const char *client_ip;    /* router_client_ip() */
    struct store_tenant tenant;
    struct store_key key;
    struct store_org org;
    uint32_t scopes;
    struct config_limits limits;
    char rl_tenant[ID_MAX + 8];
    bool rl_entered;
    struct ratelimit_result rl_admitted; /* where it was admitted: where it leaves */
    struct store *store;                 /* borrowed from the pool for the length of handle() */
    json_t *body;                        /* owned; released when the request is done */
    unsigned status;                     /* 0: 200 */
    json_t *resp;                        /* owned until rendered */
    int64_t t0_us;
    struct err early;        /* refusal decided when the headers arrived, answered after the body */
    bool async;              /* the handler deferred or streamed its response */
    const char *body_digest; /* uploads: hex SHA-256 of the raw body (idempotency) */
    void *upload_state;      /* uploads: the sink state (api/knowledge.c) */
    void (*body_end)(struct router_req *r); /* uploads: called when the body is read */
    void (*cleanup)(struct router_req *r);  /* runs when the request is done */
    const char *idem_key;                   /* the claimed Idempotency-Key, or NULL */
    bool limited;                           /* ROUTE_LIMIT_SOFT: the limits refused it */
    struct err limit_err;                   /* ROUTE_LIMIT_SOFT: why (Retry-After is set) */
    /*
     * Set by a handler that runs another route's handler inside its own request (the MCP
     * server's tool calls): called with that handler's outcome ('rc' 0 with r->resp or a raw
     * response set, or the error 'e') to put the final response in place of it. The handler
     * calls it itself for an answer ready on return; router_async_finish() calls it for a
     * deferred one, before the response is recorded under the Idempotency-Key.
     */
    void (*answer_wrap)(struct router_req *r, int rc, const struct err *e);
    void *wrap_state; /* for answer_wrap */
    char request_id[160];
};

/* The route 'r' matched, or NULL when none did. */
const struct route *router_req_route(const struct router_req *r);

/* ---- match.c (pure) ---- */
struct router_match {
    int route;      /* index, or -1 */
    char allow[64]; /* methods of the path when it matched with another method */
    const char *params[ROUTER_MAX_PARAMS];
};
void router_match(const struct route *routes, size_t n, const char *method, const char *path,
                  struct arena *a, struct router_match *out);

/* ---- cursor.c (pure) ---- */
char *router_cursor_encode(struct arena *a, const char *const *fields, size_t n);
int router_cursor_decode(const char *s, size_t len, struct arena *a, const char **fields, size_t n);
/* Decode a raw query string into at most 'max' name/value pairs (arena); see query.c. */
int router_query_parse(const char *q, struct arena *a, size_t max, const char **names,
                       const char **values, size_t *n, struct err *e);

/* ---- People (people.c, contract §20) ---- */
/* The CSRF token of the session whose cookie token is 'token'. */
int router_csrf_token(const struct router_env *env, const char *token, char out[ROUTER_CSRF_LEN]);
/* The keyed hash a session (or set-password) token is stored under. */
int router_session_hash(const struct router_env *env, const char *token, unsigned char out[32]);
/* The client's address: X-Forwarded-For's rightmost address not of a trusted proxy when the
 * peer is one (WORKFORCE_TRUSTED_PROXIES), else the peer's. */
const char *router_client_ip(struct router_req *r);
/* 'ip' is one of the addresses or CIDR blocks of the comma-separated 'list'. */
bool router_ip_trusted(const char *list, const char *ip);
#define ROUTER_IP_MAX 46 /* INET6_ADDRSTRLEN */
/* The client of a request from 'peer' with header X-Forwarded-For 'xff' (NULL: none) into
 * 'out': the peer itself unless it is one of the 'trusted' proxies; then, from the right, the
 * first address of 'xff' that is not one (or the last well-formed one before a malformed
 * hop). Pure. */
void router_forwarded_client(const char *xff, const char *trusted, const char *peer,
                             char out[ROUTER_IP_MAX]);
/* The value of cookie 'name' in the Cookie header 'h' (NULL: none): '*value' points into 'h',
 * '*len' bytes, its trailing spaces left out; false when absent or empty. Pure: fuzzed. */
bool router_cookie_find(const char *h, const char *name, const char **value, size_t *len);
/* The same into 'out' ('n' bytes); false too when it is not shorter than 'n'. */
bool router_cookie_value(const char *h, const char *name, char *out, size_t n);
/* The value of cookie 'name' of request 'r' (from its arena), or NULL when absent or empty. */
const char *router_cookie(struct router_req *r, const char *name);
/* 403 permission_denied when route 'rt' is for sessions only and 'r' has a key, or when the
 * session's role is below the route's; else 0. */
int router_role_refused(const struct router_req *r, const struct route *rt, struct err *e);
/* Who a request acts for in what it starts (a turn, a task, a workflow and its runs): the key's
 * id, or the session's user's id ("usr_..."); NULL for neither. */
const char *router_actor_id(const struct router_req *r);
/* The rights that work acts with: the key's scopes, or those of the session's role (a member
 * chats, runs tasks and workflows, reads knowledge and decides; a developer also manages
 * tools, integrations and webhooks; an admin or owner has every scope: 0). */
uint32_t router_rights(const struct router_req *r);
/* The audit context of route 'rt' into r->audit (its action, target, actor; the target id is
 * the path's first parameter); nothing when the route writes no entry. The pipeline arms it on
 * the store around the handler; a handler that runs another route's handler does so for it. */
void router_audit_prepare(struct router_req *r, const struct route *rt);
/* Whether an answer to 'r' may hold the organization's secrets (a workflow's webhook URL, an
 * integration's events URL): a key (its scopes let it read the route), or a person whose role
 * manages them (developer and above). */
bool router_sees_secrets(const struct router_req *r);
/* Fill the actor, address, user agent and request id of entry 'a' from request 'r'. */
void router_audit_actor(struct router_req *r, struct store_audit *a);

/* ---- Helpers for handlers (middleware.c) ---- */
const char *router_query(const struct router_req *r, const char *name); /* NULL: absent */
/* 404 route_not_found for request 'h' into 'e' (returns ERR_NOT_FOUND): the message quotes the
 * method and path only when they are made of the characters routes are made of (letters,
 * digits, "/-._~", 200 bytes at most), so no input is ever sent back as it came. */
int router_no_route(const struct http_req *h, struct err *e);
/* The route's 'limit' query parameter (its row gives the default and the range): 400 with
 * param "limit" when it is not an integer in range. */
int router_query_limit(const struct router_req *r, unsigned *out, struct err *e);
/* The route's ROUTER_Q_ENUM query parameter 'name' as the index of its value in the row's
 * 'values' (absent: the row's default index, -1 when it has none): 400 naming it when it is
 * none of them. */
int router_query_enum(const struct router_req *r, const char *name, int *out, struct err *e);
/* The 'since' query parameter, a time in Unix seconds, as milliseconds into '*ms' (absent: 0):
 * 400 with param "since" when it is not one. */
int router_query_since(const struct router_req *r, int64_t *ms, struct err *e);
/* Read the newest-first keyset cursor 'before' (a time and an id with 'id_prefix'); absent
 * leaves '*t' 0 and '*id' NULL; malformed is 400 with param "before". */
int router_query_before(const struct router_req *r, const char *id_prefix, int64_t *t,
                        const char **id, struct err *e);
/* Write a list's tail: "has_more" and "next_cursor" (the cursor after (t, id) when 'more',
 * else null). */
void router_write_more(const struct router_req *r, struct jw *w, bool more, int64_t t,
                       const char *id);
void router_respond(struct router_req *r, json_t *body); /* status 200 JSON, takes 'body' */
/* Answer 200 with the JSON written by 'w' into 'b' (taken); ERR_INTERNAL when it did not fit. */
int router_respond_jw(struct router_req *r, struct jw *w, struct buf *b, struct err *e);
/* router_respond_jw() keeping a copy in cache 'c' (NULL: none) under 'key' for generation
 * 'gen'. */
int router_respond_jw_kept(struct router_req *r, struct jw *w, struct buf *b, struct cache *c,
                           const char *key, uint64_t gen, struct err *e);
void router_respond_raw(struct router_req *r, unsigned status, const char *ctype, char *body,
                        size_t len); /* takes 'body' (free()) */

/*
 * For a handler that answers later from another thread: it sets r->async, calls
 * http_req_defer(r->http) and returns 0; when its answer is ready (r->resp, a raw response, or
 * the error 'e' when 'rc' is not 0), this renders it, records it under the Idempotency-Key and
 * resumes the request. Any thread, exactly once; 'r' must not be touched afterwards.
 */
void router_async_finish(struct router_req *r, int rc, const struct err *e);

/* The libmicrohttpd-facing callbacks of the pipeline serving 'app' (which must outlive the
 * server), for http_server_start(). */
struct http_app router_http_app(const struct router_app *app);

#endif
