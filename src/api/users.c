/* SPDX-License-Identifier: MIT */
/*
 * users.c: /v1/users, the people of an organization (contract §20). Admins and owners manage
 * them with a session (keys never do); only an owner grants or changes the role `owner`, and a
 * role never grants more than it has; the last active owner stays one (409 last_owner). An
 * invitation answers, once, a link to set a password (24 h; kept for an Idempotency-Key replay
 * only sealed). POST /v1/users/set_password uses such a token up; POST /v1/users/me/password
 * changes one's own. A password change ends every session of the user.
 */
#include "api.h"

#include "../core/clock.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define TOKEN_TTL_MS (24 * 3600 * 1000LL)
#define NAME_MAX_CHARS 100
#define TOKEN_PREFIX "wfp_"

/* ---- Bodies ---- */

struct user_body {
    const char *email;
    const char *name;
    int role;
    int status;
};

enum { F_EMAIL, F_NAME, F_ROLE, F_STATUS };

static const char *const statuses[] = {"active", "disabled", NULL};

static bool email_ok(const char *s, size_t len)
{
    const char *at = memchr(s, '@', len);
    return at && at > s && at < s + len - 1 && !memchr(at + 1, '@', (size_t)(s + len - at - 1)) &&
           !memchr(s, ' ', len) && memchr(at, '.', (size_t)(s + len - at));
}

static const struct jb_field create_fields[] = {
    {"email", JB_STRING, offsetof(struct user_body, email), JB_REQUIRED, 3, 254, NULL, email_ok,
     "must be an email address (name@domain)"},
    {"name", JB_STRING, offsetof(struct user_body, name), 0, 0, NAME_MAX_CHARS, NULL, NULL, NULL},
    {"role", JB_ENUM, offsetof(struct user_body, role), JB_REQUIRED, 0, 0, store_role_names, NULL,
     NULL},
};
const struct jb_binding api_users_create_body = {create_fields, 3};

static const struct jb_field update_fields[] = {
    {"email", JB_STRING, offsetof(struct user_body, email), 0, 3, 254, NULL, email_ok,
     "must be an email address (name@domain)"},
    {"name", JB_STRING, offsetof(struct user_body, name), 0, 0, NAME_MAX_CHARS, NULL, NULL, NULL},
    {"role", JB_ENUM, offsetof(struct user_body, role), 0, 0, 0, store_role_names, NULL, NULL},
    {"status", JB_ENUM, offsetof(struct user_body, status), 0, 0, 0, statuses, NULL, NULL},
};
const struct jb_binding api_users_update_body = {update_fields, 4};

struct password_body {
    const char *token;
    const char *password;
    const char *current_password;
    const char *new_password;
};

static const struct jb_field set_fields[] = {
    {"token", JB_STRING, offsetof(struct password_body, token), JB_REQUIRED, 1, AUTH_TOKEN_MAX,
     NULL, NULL, NULL},
    {"password", JB_STRING, offsetof(struct password_body, password), JB_REQUIRED, 1,
     AUTH_PASSWORD_MAX, NULL, NULL, NULL},
};
const struct jb_binding api_users_set_password_body = {set_fields, 2};

static const struct jb_field change_fields[] = {
    {"current_password", JB_STRING, offsetof(struct password_body, current_password), JB_REQUIRED,
     1, AUTH_PASSWORD_MAX, NULL, NULL, NULL},
    {"new_password", JB_STRING, offsetof(struct password_body, new_password), JB_REQUIRED, 1,
     AUTH_PASSWORD_MAX, NULL, NULL, NULL},
};
const struct jb_binding api_users_password_body = {change_fields, 2};

/* ---- Answers ---- */

static int not_found(const char *id, struct err *e)
{
    return err_set(e, ERR_NOT_FOUND, "user_not_found", "id", "No user %.60s.", id);
}

static int respond(struct router_req *r, const struct store_user *u, const char *link,
                   struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, 64 * 1024);
    jw_init(&w, &b);
    if (!link) {
        api_user_write(&w, u);
        return router_respond_jw(r, &w, &b, e);
    }
    jw_obj(&w);
    jw_key(&w, "user");
    api_user_write(&w, u);
    jw_key(&w, "set_password_url");
    jw_str(&w, link);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* See api.h. */
int api_user_invite_link(struct store *s, const struct router_env *env, const char *user_id,
                         struct arena *a, const char **out)
{
    char token[AUTH_TOKEN_MAX];
    unsigned char hash[32];
    int rc = auth_token_new(TOKEN_PREFIX, token, sizeof(token));
    if (!rc)
        rc = router_session_hash(env, token, hash);
    if (!rc)
        rc = store_user_token_create(s, user_id, hash, clock_now_ms() + TOKEN_TTL_MS);
    if (!rc)
        *out = arena_printf(a, "%s/console/#/set-password?token=%s", env->cfg->public_url, token);
    return rc;
}

/* A session's user may give 'role' (and take away 'from'): never above its own, and only an
 * owner touches `owner`. */
static int may_grant(const struct router_req *r, int role, int from, struct err *e)
{
    if ((role > r->role || from > r->role) ||
        ((role == STORE_ROLE_OWNER || from == STORE_ROLE_OWNER) && r->role != STORE_ROLE_OWNER))
        return err_set(e, ERR_FORBIDDEN, "permission_denied", "role",
                       "Your role (%s) cannot grant or change the role %s.",
                       store_role_name(r->role), store_role_name(role > from ? role : from));
    return 0;
}

/* POST /v1/users {email, role, name?} (admins; sessions only). */
int api_users_create(struct router_req *r, struct err *e)
{
    struct user_body b;
    struct jb_result res;
    struct store_user u;
    const char *link = NULL;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, create_fields, 3, &b, r->arena, &res, e);
    if (!rc)
        rc = may_grant(r, b.role, -1, e);
    if (rc)
        return rc;
    memset(&u, 0, sizeof(u));
    if (id_new("usr", u.id, sizeof(u.id)))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no id");
    snprintf(u.org_id, sizeof(u.org_id), "%s", r->tenant.org_id);
    snprintf(u.email, sizeof(u.email), "%s", api_email_lower(r->arena, b.email));
    snprintf(u.name, sizeof(u.name), "%s", b.name ? b.name : "");
    u.role = b.role;
    u.status = STORE_USER_ACTIVE;
    u.created_at = u.updated_at = clock_now_ms();
    r->audit.target_id = u.id;
    rc = store_user_create(r->store, &u, e);
    if (!rc)
        rc = api_user_invite_link(r->store, r->env, u.id, r->arena, &link);
    if (rc)
        return e->code ? rc : err_set(e, rc, "internal_error", NULL, "invitation failed");
    return respond(r, &u, link, e);
}

/* GET /v1/users (admins): newest first. */
int api_users_list(struct router_req *r, struct err *e)
{
    struct store_user *v;
    size_t n;
    bool more;
    unsigned limit;
    int64_t bt = 0;
    const char *bid = NULL;
    struct buf b;
    struct jw w;
    int rc = router_query_limit(r, &limit, e);

    if (!rc)
        rc = router_query_before(r, "usr", &bt, &bid, e);
    if (rc)
        return rc;
    rc = store_user_page(r->store, r->tenant.org_id, bt, bid, limit, r->arena, &v, &n, &more);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "user list failed");
    buf_init(&b, 16u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "users");
    jw_arr(&w);
    for (size_t i = 0; i < n; i++)
        api_user_write(&w, &v[i]);
    jw_arr_end(&w);
    router_write_more(r, &w, more, n ? v[n - 1].created_at : 0, n ? v[n - 1].id : NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/users/{id} (admins). */
int api_users_get(struct router_req *r, struct err *e)
{
    struct store_user u;
    int rc = store_user_get(r->store, r->tenant.org_id, r->params[0], &u);
    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "user read failed");
    return respond(r, &u, NULL, e);
}

/* PATCH /v1/users/{id} {name?, role?, status?} (admins). The email is not changed here: a
 * person's email is who they are at sign-in. */
int api_users_update(struct router_req *r, struct err *e)
{
    struct user_body b;
    struct jb_result res;
    struct store_user cur, u;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, update_fields, 4, &b, r->arena, &res, e);
    if (rc)
        return rc;
    if (JB_HAS(res, F_EMAIL))
        return err_set(e, ERR_INVALID, "invalid_request", "email",
                       "A user's email cannot be changed; invite the new address instead.");
    rc = store_user_get(r->store, r->tenant.org_id, r->params[0], &cur);
    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "user read failed");
    /* an admin changes no one above itself, and only an owner changes an owner */
    if (JB_HAS(res, F_ROLE) || JB_HAS(res, F_STATUS))
        rc = may_grant(r, JB_HAS(res, F_ROLE) ? b.role : cur.role, cur.role, e);
    if (rc)
        return rc;
    rc = store_user_update(r->store, r->tenant.org_id, r->params[0],
                           JB_HAS(res, F_NAME) ? b.name : NULL, JB_HAS(res, F_ROLE) ? b.role : -1,
                           JB_HAS(res, F_STATUS) ? b.status : -1, clock_now_ms(), &u, e);
    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    return rc ? rc : respond(r, &u, NULL, e);
}

/* DELETE /v1/users/{id} (admins). */
int api_users_delete(struct router_req *r, struct err *e)
{
    struct store_user cur;
    struct buf b;
    struct jw w;
    int rc = store_user_get(r->store, r->tenant.org_id, r->params[0], &cur);

    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "user read failed");
    rc = may_grant(r, cur.role, cur.role, e);
    if (!rc)
        rc = store_user_delete(r->store, r->tenant.org_id, r->params[0], e);
    if (rc == ERR_NOT_FOUND)
        return not_found(r->params[0], e);
    if (rc)
        return rc;
    buf_init(&b, 1024);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, cur.id);
    jw_key(&w, "deleted");
    jw_bool(&w, true);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* POST /v1/users/set_password {token, password} (no key): the token is used up. */
int api_users_set_password(struct router_req *r, struct err *e)
{
    struct password_body b;
    struct jb_result res;
    struct store_user u;
    struct store_audit a;
    char enc[AUTH_PASSWORD_ENCODED_MAX];
    unsigned char hash[32];
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, set_fields, 2, &b, r->arena, &res, e);
    if (!rc)
        rc = auth_password_check(b.password, e);
    if (rc)
        return rc;
    if (strncmp(b.token, TOKEN_PREFIX, strlen(TOKEN_PREFIX)) != 0 ||
        router_session_hash(r->env, b.token, hash))
        return err_set(e, ERR_INVALID, "invalid_token", "token",
                       "The token is unknown, used or expired.");
    if (auth_password_hash(b.password, enc))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the password could not be set");
    /* the entry is written in the token's transaction, once its user is known (the store
     * fills the organization, and 'u' before the commit) */
    memset(&a, 0, sizeof(a));
    memset(&u, 0, sizeof(u));
    router_audit_actor(r, &a);
    a.tenant.org_id[0] = '\0';
    a.actor_type = STORE_ACTOR_USER;
    a.actor_id = a.target_id = u.id;
    a.actor_label = u.email;
    a.action = "user.set_password";
    a.target_type = "user";
    store_audit_arm(r->store, &a);
    rc = store_user_token_use(r->store, hash, enc, clock_now_ms(), &u);
    store_audit_arm(r->store, NULL);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, ERR_INVALID, "invalid_token", "token",
                       "The token is unknown, used or expired.");
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the password could not be set");
    return respond(r, &u, NULL, e);
}

/* POST /v1/users/me/password {current_password, new_password} (sessions). Every session of
 * the user ends, this one too: the person signs in again. */
int api_users_me_password(struct router_req *r, struct err *e)
{
    struct password_body b;
    struct jb_result res;
    char enc[AUTH_PASSWORD_ENCODED_MAX];
    const char *cur = NULL;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, change_fields, 2, &b, r->arena, &res, e);
    if (rc)
        return rc;
    rc = store_user_password(r->store, r->user.id, r->arena, &cur);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the password could not be read");
    if (!auth_password_verify(cur, b.current_password))
        return err_set(e, ERR_INVALID, "invalid_request", "current_password",
                       "The current password is wrong.");
    rc = auth_password_check(b.new_password, e);
    if (rc) {
        snprintf(e->param, sizeof(e->param), "new_password");
        return rc;
    }
    if (auth_password_hash(b.new_password, enc))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "the password could not be set");
    r->audit.target_type = "user";
    r->audit.target_id = r->user.id;
    rc = store_user_password_set(r->store, r->user.id, enc, clock_now_ms());
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the password could not be set");
    return respond(r, &r->user, NULL, e);
}
