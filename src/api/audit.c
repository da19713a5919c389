/* SPDX-License-Identifier: MIT */
/*
 * audit.c: GET /v1/audit_events, the organization's audit log (contract §20), newest first,
 * both modes; filters actor_id, action, target_id, since (Unix seconds). Admins and owners read
 * it with a session; a key only when its scopes name `audit` (a key without scopes does not).
 * No route changes or deletes an entry.
 */
#include "api.h"

#include "../core/str.h"

#include <string.h>

/* See api.h. */
void api_audit_write(struct jw *w, const struct store_audit *a)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, a->id);
    jw_key(w, "object");
    jw_str(w, "audit_event");
    jw_key(w, "actor");
    jw_obj(w);
    jw_key(w, "type");
    jw_str(w, store_actor_names[a->actor_type]);
    jw_key(w, "id");
    jw_str(w, a->actor_id);
    jw_key(w, "label");
    jw_str(w, a->actor_label);
    jw_obj_end(w);
    jw_key(w, "action");
    jw_str(w, a->action);
    jw_key(w, "target");
    if (a->target_type) {
        jw_obj(w);
        jw_key(w, "type");
        jw_str(w, a->target_type);
        jw_key(w, "id");
        jw_str(w, a->target_id);
        jw_obj_end(w);
    } else {
        jw_null(w);
    }
    jw_key(w, "mode");
    jw_str(w, a->tenant.mode == STORE_TEST ? "test" : "live");
    jw_key(w, "ip");
    jw_str(w, a->ip);
    jw_key(w, "user_agent");
    jw_str(w, a->user_agent);
    jw_key(w, "request_id");
    jw_str(w, a->request_id);
    jw_key(w, "created_at");
    jw_time(w, a->created_at);
    jw_obj_end(w);
}

/* GET /v1/audit_events */
int api_audit_list(struct router_req *r, struct err *e)
{
    struct store_audit_filter f;
    struct store_audit *v;
    size_t n;
    bool more;
    unsigned limit;
    struct buf b;
    struct jw w;
    int rc;

    if (!r->by_session && !(r->scopes & AUTH_SCOPE_AUDIT))
        return err_set(e, ERR_FORBIDDEN, "permission_denied", NULL,
                       "Reading the audit log needs a key whose scopes name audit; a key without "
                       "scopes does not read it.");
    memset(&f, 0, sizeof(f));
    rc = router_query_limit(r, &limit, e);
    if (!rc)
        rc = router_query_before(r, "aud", &f.before_t, &f.before_id, e);
    if (!rc)
        rc = router_query_since(r, &f.since, e);
    if (rc)
        return rc;
    f.limit = limit;
    f.actor_id = router_query(r, "actor_id");
    f.action = router_query(r, "action");
    f.target_id = router_query(r, "target_id");
    rc = store_audit_list(r->store, r->tenant.org_id, &f, r->arena, &v, &n, &more);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "audit list failed");
    buf_init(&b, 16u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "audit_events");
    jw_arr(&w);
    for (size_t i = 0; i < n; i++)
        api_audit_write(&w, &v[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, more, n ? v[n - 1].created_at : 0, n ? v[n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}
