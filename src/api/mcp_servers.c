/* SPDX-License-Identifier: MIT */
/*
 * mcp_servers.c: /v1/mcp_servers, the MCP servers of an organization (contract §19), scope
 * `tools`. A server is a URL and headers (an Authorization, an API key) that this server sends
 * with every request to it; the header values are sealed at once (integ_seal(), bound to the
 * tenant and the server's id) and never answered, logged or stored in clear: answers show
 * their names only.
 *
 * The tool list is read (mcpc) at creation, on POST .../refresh, and when a PATCH changes the
 * URL or the headers. The request is deferred meanwhile (no request thread waits on the MCP
 * server): the read ends on httpc's thread, which stores what it found and resumes the
 * request. A server that cannot be read is stored all the same, with status "error" and why;
 * a refresh that fails keeps the tools last read (GET /v1/tools shows them unavailable). A
 * read that ends after a PATCH changed the URL or headers is not written over it (the store's
 * generation); its request answers the server as it now is.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"
#include "../integrations/oauth.h"
#include "../integrations/operations.h"
#include "../mcpc/mcpc.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESP_CAP (8u << 20)
#define KEY(r) (api_svc(r)->agent.integ->key)

/* ---- Bodies ---- */

struct server_body {
    const char *name;
    const char *url;
    json_t *headers;
    bool enabled;
};

enum { F_NAME, F_URL, F_HEADERS, F_ENABLED, F_N };

static const struct jb_field create_fields[F_N] = {
    {"name", JB_STRING, offsetof(struct server_body, name), JB_REQUIRED, 1, MCPC_NAME_MAX, NULL,
     mcpc_name_ok, MCPC_NAME_RULE},
    {"url", JB_STRING, offsetof(struct server_body, url), JB_REQUIRED, 1, MCPC_URL_MAX, NULL, NULL,
     NULL},
    {"headers", JB_ANY, offsetof(struct server_body, headers), JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"enabled", JB_BOOL, offsetof(struct server_body, enabled), 0, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_mcp_servers_create_body = {create_fields, F_N};

static const struct jb_field update_fields[F_N] = {
    {"name", JB_STRING, offsetof(struct server_body, name), 0, 1, MCPC_NAME_MAX, NULL, mcpc_name_ok,
     MCPC_NAME_RULE},
    {"url", JB_STRING, offsetof(struct server_body, url), 0, 1, MCPC_URL_MAX, NULL, NULL, NULL},
    {"headers", JB_ANY, offsetof(struct server_body, headers), JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"enabled", JB_BOOL, offsetof(struct server_body, enabled), 0, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_mcp_servers_update_body = {update_fields, F_N};

/* ---- Answers ---- */

/* The tools text 'tools' (as stored) as answered: [{name, description, effect}]. */
static void write_tools(struct jw *w, const char *tools)
{
    json_t *list = jo_parse_or_null(tools);
    size_t i;
    json_t *t;

    jw_arr(w);
    json_array_foreach(list, i, t)
    {
        jw_obj(w);
        jw_key(w, "name");
        jw_str(w, json_string_value(json_object_get(t, "name")));
        jw_key(w, "description");
        jw_str(w, json_string_value(json_object_get(t, "description")));
        jw_key(w, "effect");
        jw_str(w, json_string_value(json_object_get(t, "effect")));
        jw_obj_end(w);
    }
    jw_arr_end(w);
    json_decref(list);
}

/* {id, name, url, header_names, enabled, status, error, tools, refreshed_at, created_at} */
static void write_server(struct jw *w, const struct store_mcp_server *m)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, m->id);
    jw_key(w, "name");
    jw_str(w, m->name);
    jw_key(w, "url");
    jw_str(w, m->url);
    jw_key(w, "header_names");
    jw_raw(w, m->header_names, "[]");
    jw_key(w, "enabled");
    jw_bool(w, m->enabled);
    jw_key(w, "status");
    jw_str(w, m->status);
    jw_key(w, "error");
    jw_str(w, m->error);
    jw_key(w, "tools");
    write_tools(w, m->tools);
    jw_key(w, "refreshed_at");
    jw_time(w, m->refreshed_at);
    jw_key(w, "created_at");
    jw_time(w, m->created_at);
    jw_obj_end(w);
}

static int respond_server(struct router_req *r, const struct store_mcp_server *m, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    write_server(&w, m);
    return router_respond_jw(r, &w, &b, e);
}

static int not_found(const char *id, struct err *e)
{
    return err_set(e, ERR_NOT_FOUND, "mcp_server_not_found", "id", "No MCP server %.60s.", id);
}

static int read_server(struct router_req *r, struct store *s, const char *id,
                       struct store_mcp_server *m, struct err *e)
{
    int rc = store_mcp_server_get(s, &r->tenant, id, r->arena, m);
    if (rc == ERR_NOT_FOUND)
        return not_found(id, e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "MCP server read failed");
    return 0;
}

static int name_taken(const char *name, struct err *e)
{
    return err_set(e, ERR_CONFLICT, "mcp_server_name_taken", "name",
                   "An MCP server named %s exists already: choose another name.", name);
}

/* 409 when another server of the tenant than 'id' (NULL: any) is named 'name'. */
static int name_free(struct router_req *r, const char *name, const char *id, struct err *e)
{
    struct store_mcp_server other;
    int rc = store_mcp_server_find(r->store, &r->tenant, name, r->arena, &other);
    if (rc == ERR_NOT_FOUND)
        return 0;
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "MCP server read failed");
    return id && strcmp(other.id, id) == 0 ? 0 : name_taken(name, e);
}

/* ---- Headers ---- */

/* The headers object 'h' (NULL: none) as the names answered (a JSON array), its lines for
 * mcpc and its sealed text (NULL when there are none), all in r->arena; 'id' is the server's. */
static int take_headers(struct router_req *r, const char *id, json_t *h, const char **names,
                        const char ***lines, size_t *nlines, const unsigned char **sealed,
                        size_t *sealed_len, struct err *e)
{
    json_t *list = json_array();
    const char *key;
    json_t *v;
    char *text;
    size_t i = 0;

    *lines = arena_alloc(r->arena, (json_object_size(h) + 1) * sizeof(**lines));
    if (h) {
        json_object_foreach(h, key, v)
        {
            json_array_append_new(list, json_string(key));
            (*lines)[i++] = arena_printf(r->arena, "%s: %s", key, json_string_value(v));
        }
    }
    *nlines = i;
    text = jo_dump(list, NULL);
    json_decref(list);
    *names = arena_strdup(r->arena, text ? text : "[]");
    free(text);
    *sealed = NULL;
    *sealed_len = 0;
    if (i == 0)
        return 0;
    text = jo_dump(h, NULL);
    *sealed =
        text ? integ_seal(KEY(r), &r->tenant, id, STORE_MCP_SEAL_WHAT, text, r->arena, sealed_len)
             : NULL;
    if (text) {
        memset(text, 0, strlen(text));
        free(text);
    }
    return *sealed ? 0 : err_set(e, ERR_INTERNAL, "internal_error", NULL, "sealing failed");
}

/* The lines of the sealed headers of 'm' into '*lines' (r->arena): 0, or ERR_INVALID when
 * they do not open (the server secret changed). */
static int open_headers(struct router_req *r, const struct store_mcp_server *m, const char ***lines,
                        size_t *n)
{
    char *text;
    int rc;
    *lines = NULL;
    *n = 0;
    if (!m->headers)
        return 0;
    text = integ_open(KEY(r), &r->tenant, m->id, STORE_MCP_SEAL_WHAT, m->headers, m->headers_len,
                      r->arena);
    if (!text)
        return ERR_INVALID;
    rc = mcpc_header_lines(text, r->arena, lines, n);
    memset(text, 0, strlen(text));
    return rc;
}

#define HEADERS_SEALED_WHY                                                                         \
    "the headers cannot be opened (the server's secret changed): give them again"

/* ---- Reading the tool list ---- */

enum read_kind { READ_CREATE, READ_REFRESH, READ_PATCH };

/* A read under way: the request and what to store when it ends (all in r->arena). */
struct pending {
    struct router_req *r;
    enum read_kind kind;
    struct store_mcp_server m; /* the row to write; status, error, tools filled at the end */
    unsigned fields;           /* READ_PATCH: what the PATCH changes */
    const char *kept_tools;    /* a failed read keeps these */
};

/* Store what the read of 'p' found; the answer or the error. Runs on httpc's thread. */
static int store_read(struct pending *p, struct store *s, struct err *e)
{
    struct router_req *r = p->r;
    struct store_mcp_server now;
    int rc;

    if (p->kind == READ_CREATE) {
        rc = store_mcp_server_create(s, &r->tenant, &p->m);
        if (rc == ERR_CONFLICT)
            return name_taken(p->m.name, e);
        if (rc == ERR_LIMIT)
            return err_set(e, ERR_INVALID, "invalid_request", NULL,
                           "An organization has at most %d MCP servers per key mode: delete one "
                           "first.",
                           STORE_MCP_SERVERS_MAX);
    } else {
        rc = store_mcp_server_update(s, &r->tenant, &p->m, p->fields | STORE_MCP_TOOLS);
        if (rc == ERR_CONFLICT)
            return name_taken(p->m.name, e);
        if (rc == ERR_NOT_FOUND && p->kind == READ_REFRESH) {
            /* deleted, or changed by a PATCH since the read began: answer it as it is */
            rc = read_server(r, s, p->m.id, &now, e);
            return rc ? rc : respond_server(r, &now, e);
        }
    }
    if (rc == ERR_NOT_FOUND)
        return not_found(p->m.id, e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "MCP server write failed");
    rc = read_server(r, s, p->m.id, &now, e);
    return rc ? rc : respond_server(r, &now, e);
}

/* An mcpc_list_fn: the read ended (httpc's thread); store, answer, resume the request. */
static void read_done(void *ud, int rc, json_t *tools, const char *why)
{
    struct pending *p = ud;
    struct router_req *r = p->r;
    struct store *s;
    struct err e;
    char *text = NULL;

    err_clear(&e);
    p->m.refreshed_at = clock_now_ms();
    p->m.updated_at = p->m.refreshed_at;
    if (!rc)
        text = jo_dump(tools, NULL);
    p->m.status = text ? "ok" : "error";
    p->m.error = text ? NULL : arena_strdup(r->arena, why && *why ? why : "the read failed");
    p->m.tools = text ? arena_strdup(r->arena, text) : p->kept_tools;
    free(text);
    s = store_pool_get(api_svc(r)->router.pool);
    /* the request's audit entry commits with the write, on this thread's handle */
    if (r->audit.action) {
        r->audit.target_id = p->m.id;
        store_audit_arm(s, &r->audit);
    }
    rc = store_read(p, s, &e);
    store_audit_arm(s, NULL);
    store_pool_put(api_svc(r)->router.pool, s);
    router_async_finish(r, rc, rc ? &e : NULL);
}

/* Read the tool list of p->m at its URL with header 'lines' (or, when 'why' is set, do not:
 * the read fails with it), then store and answer. The request answers later. */
static int read_tools(struct pending *p, const char *const *lines, size_t nlines, const char *why)
{
    struct router_req *r = p->r;
    struct mcpc_env env = {api_svc(r)->httpc, api_svc(r)->router.cfg->mcp_allow_private, 0};
    struct mcpc_server srv = {p->m.url, lines, nlines};

    r->async = true;
    http_req_defer(r->http);
    if (why) {
        read_done(p, ERR_INVALID, NULL, why);
        return 0;
    }
    return mcpc_list_start(&env, &srv, read_done, p); /* 'r' is the read's until it ends */
}

/* ---- Routes ---- */

/* POST /v1/mcp_servers {name, url, headers?, enabled?} */
int api_mcp_servers_create(struct router_req *r, struct err *e)
{
    struct server_body b = {.enabled = true};
    struct store_mcp_server_page page;
    struct jb_result res;
    struct pending *p;
    const char **lines = NULL;
    size_t nlines = 0;
    char *id = arena_alloc(r->arena, ID_MAX);
    int rc = jb_bind(r->body, create_fields, F_N, &b, r->arena, &res, e);

    if (!rc)
        rc = mcpc_url_check(b.url, api_svc(r)->router.cfg->mcp_allow_private, "url", e);
    if (!rc && b.headers)
        rc = mcpc_headers_check(b.headers, "headers", e);
    if (!rc)
        rc = name_free(r, b.name, NULL, e);
    if (rc)
        return rc;
    rc = store_mcp_servers_list(r->store, &r->tenant, STORE_MCP_SERVERS_MAX, 0, NULL, r->arena,
                                &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "MCP server list failed");
    if (page.n >= STORE_MCP_SERVERS_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "An organization has at most %d MCP servers per key mode: delete one "
                       "first.",
                       STORE_MCP_SERVERS_MAX);
    if (id_new("mcp", id, ID_MAX))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    p = arena_calloc(r->arena, sizeof(*p));
    p->r = r;
    p->kind = READ_CREATE;
    p->kept_tools = "[]";
    p->m.id = id;
    p->m.name = b.name;
    p->m.url = b.url;
    p->m.enabled = b.enabled;
    p->m.created_at = clock_now_ms();
    rc = take_headers(r, id, b.headers, &p->m.header_names, &lines, &nlines, &p->m.headers,
                      &p->m.headers_len, e);
    if (rc)
        return rc;
    return read_tools(p, lines, nlines, NULL);
}

/* GET /v1/mcp_servers: newest first. */
int api_mcp_servers_list(struct router_req *r, struct err *e)
{
    struct store_mcp_server_page page;
    int64_t before_created = 0;
    const char *before_id = NULL;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc = router_query_limit(r, &limit, e);

    if (!rc)
        rc = router_query_before(r, "mcp", &before_created, &before_id, e);
    if (rc)
        return rc;
    rc = store_mcp_servers_list(r->store, &r->tenant, limit, before_created, before_id, r->arena,
                                &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "MCP server list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "mcp_servers");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++)
        write_server(&w, &page.items[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, page.has_more, page.n ? page.items[page.n - 1].created_at : 0,
                      page.n ? page.items[page.n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/mcp_servers/{id} */
int api_mcp_servers_get(struct router_req *r, struct err *e)
{
    struct store_mcp_server m;
    int rc = read_server(r, r->store, r->params[0], &m, e);
    return rc ? rc : respond_server(r, &m, e);
}

/* PATCH /v1/mcp_servers/{id}: any of name, url, headers (the whole set), enabled; a new URL or
 * new headers read the tool list again. */
int api_mcp_servers_update(struct router_req *r, struct err *e)
{
    struct server_body b = {0};
    struct store_mcp_server m;
    struct jb_result res;
    struct pending *p;
    const char **lines = NULL;
    const char *why = NULL;
    size_t nlines = 0;
    unsigned fields = 0;
    int rc = jb_bind(r->body, update_fields, F_N, &b, r->arena, &res, e);

    if (!rc && JB_HAS(res, F_URL))
        rc = mcpc_url_check(b.url, api_svc(r)->router.cfg->mcp_allow_private, "url", e);
    if (!rc && JB_HAS(res, F_HEADERS))
        rc = mcpc_headers_check(b.headers, "headers", e);
    if (!rc)
        rc = read_server(r, r->store, r->params[0], &m, e);
    if (!rc && JB_HAS(res, F_NAME))
        rc = name_free(r, b.name, m.id, e);
    if (rc)
        return rc;
    if (JB_HAS(res, F_NAME)) {
        m.name = b.name;
        fields |= STORE_MCP_NAME;
    }
    if (JB_HAS(res, F_ENABLED)) {
        m.enabled = b.enabled;
        fields |= STORE_MCP_ENABLED;
    }
    if (!JB_HAS(res, F_URL) && !JB_HAS(res, F_HEADERS)) {
        m.updated_at = clock_now_ms();
        rc = store_mcp_server_update(r->store, &r->tenant, &m, fields);
        if (rc == ERR_CONFLICT)
            return name_taken(m.name, e);
        if (rc == ERR_NOT_FOUND)
            return not_found(m.id, e);
        if (rc)
            return err_set(e, rc, "internal_error", NULL, "MCP server write failed");
        return respond_server(r, &m, e);
    }
    p = arena_calloc(r->arena, sizeof(*p));
    p->r = r;
    p->kind = READ_PATCH;
    p->fields = fields | STORE_MCP_TARGET;
    /* the tools of another URL are not this one's; new headers keep them until read again */
    p->kept_tools = JB_HAS(res, F_URL) && strcmp(b.url, m.url) != 0 ? "[]" : m.tools;
    if (JB_HAS(res, F_URL))
        m.url = b.url;
    if (JB_HAS(res, F_HEADERS)) {
        rc = take_headers(r, m.id, b.headers, &m.header_names, &lines, &nlines, &m.headers,
                          &m.headers_len, e);
        if (rc)
            return rc;
    } else if (open_headers(r, &m, &lines, &nlines) != 0) {
        why = HEADERS_SEALED_WHY;
    }
    p->m = m;
    return read_tools(p, lines, nlines, why);
}

/* DELETE /v1/mcp_servers/{id} */
int api_mcp_servers_delete(struct router_req *r, struct err *e)
{
    const char *id = r->params[0];
    json_t *body;
    int rc = store_mcp_server_delete(r->store, &r->tenant, id);
    if (rc == ERR_NOT_FOUND)
        return not_found(id, e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "MCP server delete failed");
    body = jo_object();
    jo_str(body, "id", id);
    json_object_set_new(body, "deleted", json_true());
    router_respond(r, body);
    return 0;
}

/* POST /v1/mcp_servers/{id}/refresh: the tool list read again. */
int api_mcp_servers_refresh(struct router_req *r, struct err *e)
{
    struct store_mcp_server m;
    struct jb_result res;
    struct pending *p;
    const char **lines = NULL;
    size_t nlines = 0;
    int rc = jb_bind(r->body, NULL, 0, NULL, r->arena, &res, e); /* takes no parameters */

    if (!rc)
        rc = read_server(r, r->store, r->params[0], &m, e);
    if (rc)
        return rc;
    p = arena_calloc(r->arena, sizeof(*p));
    p->r = r;
    p->kind = READ_REFRESH;
    p->kept_tools = m.tools;
    p->m = m;
    rc = open_headers(r, &m, &lines, &nlines);
    return read_tools(p, lines, nlines, rc ? HEADERS_SEALED_WHY : NULL);
}
