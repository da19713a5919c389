/* SPDX-License-Identifier: MIT */
/*
 * sessions.c: people signing in and out (contract §20). POST /v1/sessions checks an email and
 * password (argon2id); every failure is the same 401 invalid_credentials, and the work of a
 * password check is done even when no user has the email. Ten failures of a pair (email,
 * address) within 15 minutes lock it out (429). A sign-in makes a new session (a new token at
 * every sign-in: a cookie set before is never adopted), answers the user, the CSRF token and
 * the end of the session, and sets the cookie `wf_session` (HttpOnly, SameSite=Lax, Secure when
 * the public URL is https). Every sign-in and failed one is an audit entry.
 */
#include "api.h"

#include "../core/clock.h"
#include "../core/log.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define FAIL_WINDOW_MS (15 * 60 * 1000LL)
#define FAIL_MAX 10
#define EMAIL_MAX 254

struct signin_body {
    const char *email;
    const char *password;
};

static const struct jb_field signin_fields[] = {
    {"email", JB_STRING, offsetof(struct signin_body, email), JB_REQUIRED, 1, EMAIL_MAX, NULL, NULL,
     NULL},
    {"password", JB_STRING, offsetof(struct signin_body, password), JB_REQUIRED, 1,
     AUTH_PASSWORD_MAX, NULL, NULL, NULL},
};
const struct jb_binding api_sessions_create_body = {signin_fields, 2};

/* See api.h. */
char *api_email_lower(struct arena *a, const char *email)
{
    char *out = arena_strdup(a, email);
    for (char *p = out; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return out;
}

/* See api.h. */
void api_user_write(struct jw *w, const struct store_user *u)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, u->id);
    jw_key(w, "object");
    jw_str(w, "user");
    jw_key(w, "email");
    jw_str(w, u->email);
    jw_key(w, "name");
    jw_str(w, u->name);
    jw_key(w, "role");
    jw_str(w, store_role_name(u->role));
    jw_key(w, "status");
    jw_str(w, u->status == STORE_USER_ACTIVE ? "active" : "disabled");
    jw_key(w, "created_at");
    jw_time(w, u->created_at);
    jw_key(w, "last_login_at");
    jw_time(w, u->last_login_at);
    jw_obj_end(w);
}

/* The answer of a sign-in and of GET /v1/sessions/current. */
static int respond_session(struct router_req *r, const struct store_user *u,
                           const struct store_session *ses, const char *csrf, struct err *e)
{
    struct buf b;
    struct jw w;
    int64_t idle_end = ses->seen_at + ROUTER_SESSION_IDLE_MS;

    buf_init(&b, 64 * 1024);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "object");
    jw_str(&w, "session");
    jw_key(&w, "user");
    api_user_write(&w, u);
    jw_key(&w, "csrf_token");
    jw_str(&w, csrf);
    jw_key(&w, "expires_at");
    jw_time(&w, idle_end < ses->expires_at ? idle_end : ses->expires_at);
    jw_key(&w, "mode");
    jw_str(&w, r->tenant.mode == STORE_TEST ? "test" : "live");
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

static bool https(const struct router_req *r)
{
    return strncmp(r->env->cfg->public_url, "https://", 8) == 0;
}

/* See api.h. */
int api_session_open(struct router_req *r, const struct store_user *u, const char *how,
                     char csrf[ROUTER_CSRF_LEN], struct store_session *out, struct err *e)
{
    char token[AUTH_TOKEN_MAX];
    unsigned char hash[32];
    struct store_session ses;
    struct store_audit a;
    int64_t now = clock_now_ms();
    int rc;

    memset(&ses, 0, sizeof(ses));
    rc = auth_token_new(ROUTER_SESSION_PREFIX, token, sizeof(token));
    if (!rc)
        rc = id_new("ses", ses.id, sizeof(ses.id));
    if (!rc)
        rc = router_session_hash(r->env, token, hash);
    if (!rc)
        rc = router_csrf_token(r->env, token, csrf);
    if (rc)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no session could be made");
    snprintf(ses.method, sizeof(ses.method), "%s", how);
    ses.created_at = ses.seen_at = now;
    ses.expires_at = now + ROUTER_SESSION_MAX_MS;
    /* the sign-in and its entry commit together */
    memset(&a, 0, sizeof(a));
    r->by_session = true;
    r->user = *u;
    r->tenant.mode = STORE_LIVE;
    snprintf(r->tenant.org_id, sizeof(r->tenant.org_id), "%s", u->org_id);
    router_audit_actor(r, &a);
    a.action = "session.create";
    a.target_type = "session";
    a.target_id = ses.id;
    store_audit_arm(r->store, &a);
    rc = store_session_create(r->store, hash, &ses, u->id);
    store_audit_arm(r->store, NULL);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the session could not be stored");
    http_resp_header(r->http, "Set-Cookie",
                     arena_printf(r->arena, "%s=%s; Path=/; HttpOnly; SameSite=Lax; Max-Age=%lld%s",
                                  ROUTER_SESSION_COOKIE, token,
                                  (long long)(ROUTER_SESSION_MAX_MS / 1000),
                                  https(r) ? "; Secure" : ""));
    http_resp_header(r->http, "Cache-Control", "no-store");
    *out = ses;
    return 0;
}

/* A failed sign-in: counted for the lockout and written to the audit log of the email's
 * organization (when a user has it); always the same 401. */
static int failed(struct router_req *r, const char *email, const char *ip,
                  const struct store_user *u, struct err *e)
{
    int64_t now = clock_now_ms();
    struct store_audit a;

    /* the failure counts and, when the email is a user's, is an entry of its organization's
     * log: both in one transaction */
    memset(&a, 0, sizeof(a));
    if (u) {
        router_audit_actor(r, &a);
        memcpy(a.tenant.org_id, u->org_id, sizeof(a.tenant.org_id));
        a.tenant.mode = STORE_LIVE;
        a.actor_type = STORE_ACTOR_USER;
        a.actor_id = u->id;
        a.actor_label = u->email;
        a.action = "session.create_failed";
        a.target_type = "user";
        a.target_id = u->id;
        store_audit_arm(r->store, &a);
    }
    if (store_signin_fail(r->store, email, ip, now, now - FAIL_WINDOW_MS))
        log_warn("request %s: a failed sign-in could not be counted", r->request_id);
    store_audit_arm(r->store, NULL);
    return err_set(e, ERR_AUTH, "invalid_credentials", NULL, "The email or password is wrong.");
}

/* POST /v1/sessions {email, password} (public). */
int api_sessions_create(struct router_req *r, struct err *e)
{
    struct signin_body b;
    struct jb_result res;
    struct store_user u;
    struct store_session ses;
    char csrf[ROUTER_CSRF_LEN];
    const char *ip = router_client_ip(r);
    const char *email;
    const char *enc = NULL;
    int64_t fails = 0, now = clock_now_ms();
    bool found;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, signin_fields, 2, &b, r->arena, &res, e);
    if (rc)
        return rc;
    email = api_email_lower(r->arena, b.email);
    rc = store_signin_failures(r->store, email, ip, now - FAIL_WINDOW_MS, &fails);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "sign-in failed");
    if (fails >= FAIL_MAX) {
        http_resp_header(r->http, "Retry-After", "900");
        return err_set(e, ERR_LIMIT, "too_many_sign_in_attempts", NULL,
                       "Too many failed sign-ins for this email from this address; try again "
                       "in 15 minutes.");
    }
    rc = store_user_by_email(r->store, email, &u);
    if (rc && rc != ERR_NOT_FOUND)
        return err_set(e, rc, "internal_error", NULL, "sign-in failed");
    found = rc == 0;
    if (found && store_user_password(r->store, u.id, r->arena, &enc))
        return err_set(e, ERR_STORE, "internal_error", NULL, "sign-in failed");
    /* the password's work is done whether or not the email exists */
    if (!auth_password_verify(found ? enc : NULL, b.password) || !found ||
        u.status != STORE_USER_ACTIVE)
        return failed(r, email, ip, found ? &u : NULL, e);
    if (store_signin_clear(r->store, email, ip))
        log_warn("request %s: the failed sign-ins could not be forgotten", r->request_id);
    rc = api_session_open(r, &u, "password", csrf, &ses, e);
    if (rc)
        return rc;
    rc = store_user_get(r->store, u.org_id, u.id, &u); /* last_login_at as stored */
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "sign-in failed");
    return respond_session(r, &u, &ses, csrf, e);
}

/* GET /v1/sessions/options (public): the ways to sign in this server offers, for a sign-in page
 * (the console shows its single sign-on button when `oidc` is true). */
int api_sessions_options(struct router_req *r, struct err *e)
{
    struct buf b;
    struct jw w;
    buf_init(&b, 256);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "password");
    jw_bool(&w, true);
    jw_key(&w, "oidc");
    jw_bool(&w, api_svc(r)->oidc != NULL);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* The cookie's token of a session request (already checked by the router). */
static const char *session_token(struct router_req *r)
{
    const char *h = http_req_header(r->http, "Cookie");
    const char *p = h ? strstr(h, ROUTER_SESSION_COOKIE "=") : NULL;
    size_t n;
    if (!p)
        return "";
    p += strlen(ROUTER_SESSION_COOKIE "=");
    n = strcspn(p, "; ");
    return arena_strndup(r->arena, p, n);
}

/* GET /v1/sessions/current (sessions only). */
int api_sessions_current(struct router_req *r, struct err *e)
{
    char csrf[ROUTER_CSRF_LEN];
    if (router_csrf_token(r->env, session_token(r), csrf))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no CSRF token");
    http_resp_header(r->http, "Cache-Control", "no-store");
    return respond_session(r, &r->user, &r->session, csrf, e);
}

/* DELETE /v1/sessions/current (sessions only): the session ends; the cookie is cleared. */
int api_sessions_delete(struct router_req *r, struct err *e)
{
    struct buf b;
    struct jw w;
    int rc;

    r->audit.target_type = "session";
    r->audit.target_id = r->session.id;
    rc = store_session_revoke(r->store, r->session.id, clock_now_ms());
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "sign-out failed");
    http_resp_header(r->http, "Set-Cookie",
                     arena_printf(r->arena, "%s=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0%s",
                                  ROUTER_SESSION_COOKIE, https(r) ? "; Secure" : ""));
    buf_init(&b, 1024);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "id");
    jw_str(&w, r->session.id);
    jw_key(&w, "deleted");
    jw_bool(&w, true);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}
