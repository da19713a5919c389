/* SPDX-License-Identifier: MIT */
/*
 * api_keys.c: /v1/api_keys, the organization's keys managed by people (contract §20). Sessions
 * only: keys never make keys. A developer manages test keys, an admin live ones too. A new key
 * is answered once (kept for an Idempotency-Key replay only sealed); the list shows its last
 * four characters, who made it and when it was last used (to the minute). A deleted key is
 * revoked: the next request with it, on any node, is 401 (the key cache follows the store's
 * generation, which the revocation's commit changes).
 */
#include "api.h"

#include "../core/clock.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct key_body {
    const char *name;
    int mode;
    struct jb_strings scopes;
    int64_t expires_at;
};

enum { F_NAME, F_MODE, F_SCOPES, F_EXPIRES };

static const char *const modes[] = {"live", "test", NULL};

static const struct jb_field create_fields[] = {
    {"name", JB_STRING, offsetof(struct key_body, name), JB_REQUIRED, 1, 100, NULL, NULL, NULL},
    {"mode", JB_ENUM, offsetof(struct key_body, mode), JB_REQUIRED, 0, 0, modes, NULL, NULL},
    {"scopes", JB_STRING_ARRAY, offsetof(struct key_body, scopes), JB_UNIQUE, 0, 16, NULL, NULL,
     NULL},
    {"expires_at", JB_INT, offsetof(struct key_body, expires_at), 0, 1, 253402300799LL, NULL, NULL,
     NULL},
};
const struct jb_binding api_keys_create_body = {create_fields, 4};

/* See api.h. */
void api_key_write(struct jw *w, const struct store_key *k, const char *secret)
{
    char scopes[256];
    const char *p;
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, k->id);
    jw_key(w, "object");
    jw_str(w, "api_key");
    jw_key(w, "name");
    jw_str(w, k->name);
    jw_key(w, "mode");
    jw_str(w, k->mode == STORE_TEST ? "test" : "live");
    jw_key(w, "last4");
    jw_str(w, k->last4);
    jw_key(w, "scopes");
    jw_arr(w);
    snprintf(scopes, sizeof(scopes), "%s", k->scopes);
    for (p = scopes; *p;) {
        size_t n = strcspn(p, ",");
        char one[64];
        snprintf(one, sizeof(one), "%.*s", (int)n, p);
        jw_str(w, one);
        p += n;
        if (*p == ',')
            p++;
    }
    jw_arr_end(w);
    jw_key(w, "created_by");
    jw_str(w, k->created_by[0] ? k->created_by : NULL);
    jw_key(w, "created_at");
    jw_time(w, k->created_at);
    jw_key(w, "last_used_at");
    jw_time(w, k->last_used_at);
    jw_key(w, "expires_at");
    jw_time(w, k->expires_at);
    if (secret) {
        jw_key(w, "key");
        jw_str(w, secret);
    }
    jw_obj_end(w);
}

/* A developer manages test keys; live ones need an admin. */
static int may_manage(const struct router_req *r, enum store_mode mode, struct err *e)
{
    if (mode == STORE_LIVE && r->role < STORE_ROLE_ADMIN)
        return err_set(e, ERR_FORBIDDEN, "permission_denied", "mode",
                       "Your role (%s) manages test keys only; live keys need admin or above.",
                       store_role_name(r->role));
    return 0;
}

/* POST /v1/api_keys {name, mode, scopes?, expires_at?} (sessions only). */
int api_keys_create(struct router_req *r, struct err *e)
{
    struct key_body b;
    struct jb_result res;
    struct store_key k;
    char key[AUTH_KEY_MAX];
    char joined[512] = "";
    uint32_t bits = 0;
    size_t used = 0;
    struct buf buf;
    struct jw w;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, create_fields, 4, &b, r->arena, &res, e);
    if (!rc)
        rc = may_manage(r, b.mode == 1 ? STORE_TEST : STORE_LIVE, e);
    if (rc)
        return rc;
    for (size_t i = 0; i < b.scopes.n; i++) {
        int n = snprintf(joined + used, sizeof(joined) - used, "%s%s", i ? "," : "", b.scopes.v[i]);
        used += n > 0 ? (size_t)n : 0;
        if (used >= sizeof(joined) || !b.scopes.v[i][0] || strchr(b.scopes.v[i], ','))
            return err_set(e, ERR_INVALID, "invalid_request", "scopes",
                           "scopes must be scope names (employees:read, chat, ...).");
    }
    if (auth_scopes_parse(joined, &bits, e))
        return ERR_INVALID;
    if (b.scopes.n && bits == 0)
        return ERR_INVALID;
    if (JB_HAS(res, F_EXPIRES) && b.expires_at * 1000 <= clock_now_ms())
        return err_set(e, ERR_INVALID, "invalid_request", "expires_at",
                       "expires_at must be in the future (Unix seconds).");
    memset(&k, 0, sizeof(k));
    rc = auth_key_generate(b.mode == 1, key);
    if (!rc)
        rc = id_new("key", k.id, sizeof(k.id));
    if (!rc)
        rc = auth_key_hash(r->env->secret, key, strlen(key), k.hash);
    if (rc)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no key could be made");
    snprintf(k.org_id, sizeof(k.org_id), "%s", r->tenant.org_id);
    k.mode = b.mode == 1 ? STORE_TEST : STORE_LIVE;
    snprintf(k.last4, sizeof(k.last4), "%s", key + strlen(key) - 4);
    auth_scopes_text(bits, k.scopes, sizeof(k.scopes));
    snprintf(k.name, sizeof(k.name), "%s", b.name);
    snprintf(k.created_by, sizeof(k.created_by), "%s", r->user.id);
    k.created_at = clock_now_ms();
    k.expires_at = JB_HAS(res, F_EXPIRES) ? b.expires_at * 1000 : 0;
    r->audit.target_id = k.id;
    rc = store_key_create(r->store, &k);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the key could not be stored");
    buf_init(&buf, 16 * 1024);
    jw_init(&w, &buf);
    api_key_write(&w, &k, key);
    http_resp_header(r->http, "Cache-Control", "no-store");
    return router_respond_jw(r, &w, &buf, e);
}

/* GET /v1/api_keys (sessions only): the keys not deleted, newest first. */
int api_keys_list(struct router_req *r, struct err *e)
{
    struct store_key *v;
    size_t n;
    bool more;
    unsigned limit;
    int64_t bt = 0;
    const char *bid = NULL;
    struct buf b;
    struct jw w;
    int rc = router_query_limit(r, &limit, e);

    if (!rc)
        rc = router_query_before(r, "key", &bt, &bid, e);
    if (rc)
        return rc;
    rc = store_key_page(r->store, r->tenant.org_id, bt, bid, limit, r->arena, &v, &n, &more);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "key list failed");
    buf_init(&b, 16u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "api_keys");
    jw_arr(&w);
    for (size_t i = 0; i < n; i++)
        api_key_write(&w, &v[i], NULL);
    jw_arr_end(&w);
    router_write_more(r, &w, more, n ? v[n - 1].created_at : 0, n ? v[n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* DELETE /v1/api_keys/{id} (sessions only): the key is revoked. */
int api_keys_delete(struct router_req *r, struct err *e)
{
    struct store_key k;
    struct buf b;
    struct jw w;
    int rc = store_key_get(r->store, r->tenant.org_id, r->params[0], &k);

    if (rc == ERR_NOT_FOUND || (!rc && k.revoked_at))
        return err_set(e, ERR_NOT_FOUND, "api_key_not_found", "id", "No API key %.60s.",
                       r->params[0]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "key read failed");
    rc = may_manage(r, k.mode, e);
    if (rc)
        return rc;
    rc = store_key_revoke(r->store, k.id, clock_now_ms());
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the key could not be revoked");
    buf_init(&b, 1024);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, k.id);
    jw_key(&w, "deleted");
    jw_bool(&w, true);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}
