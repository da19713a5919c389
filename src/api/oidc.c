/* SPDX-License-Identifier: MIT */
/*
 * oidc.c: OpenID Connect sign-in (contract §20): GET /v1/sessions/oidc/start sends the browser
 * to the provider, and GET /v1/sessions/oidc/callback comes back with a code, which becomes
 * a session of the user the verified email names.
 *
 * DESIGN. The flow is bound to the browser that started it: start keeps the state, nonce,
 * PKCE verifier and the flow's expiry (10 minutes) in a cookie, wf_oidc, sealed (AES-256-GCM)
 * under a key derived from the server secret, so no row is written before anyone signs in and
 * any node can finish a flow any node began. The callback opens it, requires the state the
 * provider sent back to be the cookie's (a code injected into another browser finds no
 * cookie), forgets the cookie, and hands the code to the provider handle (src/oidc), which
 * exchanges it and checks the ID token off the request threads; the request is deferred until
 * then. With the checked claims: a verified email is required; the user of that email signs
 * in when active (a disabled one is refused); with none, a user is created as a member of
 * WORKFORCE_OIDC_ORG (or of the only organization) when the email's domain is allowed; else
 * refused. The browser goes to /console/ signed in, or to the console's sign-in page with one
 * of three codes (oidc_failed, oidc_email_not_allowed, user_disabled); why it failed is only
 * in the log.
 */
#include "api.h"

#include "../core/clock.h"
#include "../core/crypto.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../core/str.h"
#include "../oidc/oidc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COOKIE "wf_oidc"
#define COOKIE_PATH "/v1/sessions/oidc"
#define FLOW_TTL_MS 600000 /* a sign-in must come back within 10 minutes */
#define FLOW_TEXT_MAX 256  /* "v1 state nonce verifier expiry" */
#define SIGNED_IN "/console/"
#define REFUSED "/console/#/sign-in?error="

/* ---- The flow's cookie ---- */

/* The key that seals the flow's cookie: HKDF-SHA256 of the server secret for this purpose. */
static int cookie_key(const struct router_req *r, unsigned char key[CRYPTO_SEAL_KEY_LEN])
{
    static const char info[] = "workforce oidc flow cookie";
    return crypto_hkdf_sha256(r->env->secret, sizeof(r->env->secret), NULL, 0, info,
                              sizeof(info) - 1, key, CRYPTO_SEAL_KEY_LEN);
}

/* Set the flow's cookie to 'value' for 'max_age' seconds ("" and 0: forget it). */
static void set_cookie(struct router_req *r, const char *value, int max_age)
{
    char *c = arena_printf(r->arena, "%s=%s; Path=%s; Max-Age=%d; HttpOnly; SameSite=Lax%s", COOKIE,
                           value, COOKIE_PATH, max_age,
                           strncmp(r->env->cfg->public_url, "https://", 8) == 0 ? "; Secure" : "");
    http_resp_header(r->http, "Set-Cookie", c);
}

/* Seal flow 'f' expiring at 'expires' into the cookie's value (base64url, in the arena). */
static const char *seal_flow(struct router_req *r, const struct oidc_flow *f, int64_t expires)
{
    unsigned char key[CRYPTO_SEAL_KEY_LEN], sealed[FLOW_TEXT_MAX + CRYPTO_SEAL_OVERHEAD];
    char text[FLOW_TEXT_MAX], *out = NULL;
    int n = snprintf(text, sizeof(text), "v1 %s %s %s %lld", f->state, f->nonce, f->verifier,
                     (long long)expires);

    if (n <= 0 || (size_t)n >= sizeof(text) || cookie_key(r, key) ||
        crypto_seal(key, COOKIE, strlen(COOKIE), text, (size_t)n, sealed))
        goto out;
    out = arena_alloc(r->arena, (4 * ((size_t)n + CRYPTO_SEAL_OVERHEAD) + 2) / 3 + 1);
    crypto_base64url(sealed, (size_t)n + CRYPTO_SEAL_OVERHEAD, out);
out:
    memset(key, 0, sizeof(key));
    memset(text, 0, sizeof(text));
    return out;
}

/* The next space-separated word of '*p' into 'out' (room for 'n' bytes with its NUL), '*p'
 * moved past it; false when there is none or it does not fit. */
static bool word(const char **p, char *out, size_t n)
{
    size_t len = strcspn(*p, " ");
    if (len == 0 || len >= n)
        return false;
    memcpy(out, *p, len);
    out[len] = '\0';
    *p += len;
    if (**p == ' ')
        (*p)++;
    return true;
}

/* Open the cookie's value 'v' into '*f': 0, or ERR_INVALID when it does not open, is not a
 * flow, or has expired. */
static int open_flow(struct router_req *r, const char *v, struct oidc_flow *f)
{
    unsigned char key[CRYPTO_SEAL_KEY_LEN], sealed[FLOW_TEXT_MAX + CRYPTO_SEAL_OVERHEAD];
    char text[FLOW_TEXT_MAX + 1], version[4], expiry[24];
    const char *p = text;
    int64_t expires = 0;
    size_t n = 0;
    int rc = ERR_INVALID;

    memset(f, 0, sizeof(*f));
    if (!v || crypto_base64url_decode(v, strlen(v), sealed, sizeof(sealed), &n) ||
        n <= CRYPTO_SEAL_OVERHEAD || cookie_key(r, key))
        goto out;
    if (crypto_open(key, COOKIE, strlen(COOKIE), sealed, n, text))
        goto out;
    text[n - CRYPTO_SEAL_OVERHEAD] = '\0';
    if (!word(&p, version, sizeof(version)) || strcmp(version, "v1") != 0 ||
        !word(&p, f->state, sizeof(f->state)) || !word(&p, f->nonce, sizeof(f->nonce)) ||
        !word(&p, f->verifier, sizeof(f->verifier)) || !word(&p, expiry, sizeof(expiry)) || *p)
        goto out;
    if (str_to_i64(str_c(expiry), &expires) || expires < clock_now_ms())
        goto out; /* a flow older than 10 minutes */
    rc = 0;
out:
    memset(key, 0, sizeof(key));
    memset(text, 0, sizeof(text));
    if (rc)
        memset(f, 0, sizeof(*f));
    return rc;
}

/* {public_url}/v1/sessions/oidc/callback, the redirect_uri registered at the provider. */
static const char *callback_url(const struct router_req *r)
{
    const char *base = r->env->cfg->public_url;
    size_t n = strlen(base);
    return arena_printf(r->arena, "%.*s%s/callback", (int)(n > 0 && base[n - 1] == '/' ? n - 1 : n),
                        base, COOKIE_PATH);
}

/* ---- Answers ---- */

/* 302 to 'location' (a path of this server or the provider's URL). */
static void redirect(struct router_req *r, const char *location)
{
    static const char page[] = "<!doctype html><title>Redirecting</title><p>Redirecting.</p>\n";
    http_resp_header(r->http, "Location", location);
    http_resp_header(r->http, "Cache-Control", "no-store");
    http_resp_header(r->http, "Referrer-Policy", "no-referrer");
    router_respond_raw(r, 302, "text/html; charset=utf-8", xstrdup(page), sizeof(page) - 1);
}

/* The browser goes to the console's sign-in page with 'code'. */
static void refuse(struct router_req *r, const char *code)
{
    redirect(r, arena_printf(r->arena, "%s%s", REFUSED, code));
}

/* ---- Start ---- */

/* The provider's URL is known (or could not be): the browser goes there, or is refused. */
static void start_done(void *ud, int rc, const char *url, const struct err *e)
{
    struct router_req *r = ud;
    (void)e; /* logged by the provider handle */
    if (rc)
        refuse(r, "oidc_failed");
    else
        redirect(r, url);
    router_async_finish(r, 0, NULL);
}

/* GET /v1/sessions/oidc/start: no key. 404 oidc_not_configured without an issuer. */
int api_oidc_start(struct router_req *r, struct err *e)
{
    struct oidc *o = api_svc(r)->oidc;
    struct oidc_flow f;
    const char *sealed;

    if (!o)
        return err_set(e, ERR_NOT_FOUND, "oidc_not_configured", NULL,
                       "OpenID Connect sign-in is not configured (WORKFORCE_OIDC_ISSUER).");
    if (oidc_flow_new(&f))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "No random bytes.");
    sealed = seal_flow(r, &f, clock_now_ms() + FLOW_TTL_MS);
    if (!sealed)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "The flow could not be sealed.");
    set_cookie(r, sealed, FLOW_TTL_MS / 1000);
    r->async = true;
    http_req_defer(r->http);
    /* From here 'r' belongs to the provider handle: start_done() answers (maybe at once). */
    oidc_authorize(o, &f, callback_url(r), start_done, r);
    memset(&f, 0, sizeof(f));
    return 0;
}

/* ---- Callback ---- */

/* The organization new OIDC users join: WORKFORCE_OIDC_ORG, or the only one. */
static int member_org(struct router_req *r, struct store_org *out)
{
    const char *slug = r->env->cfg->oidc_org;
    int rc = slug[0] ? store_org_get_by_slug(r->store, slug, out) : store_org_only(r->store, out);
    if (rc == ERR_NOT_FOUND)
        log_warn("oidc: sign-in refused: %s", slug[0] ? "WORKFORCE_OIDC_ORG names no organization"
                                                      : "WORKFORCE_OIDC_ORG is not set and there "
                                                        "is not exactly one organization");
    return rc;
}

/* A new active member 'email' ('name' from the claims, or NULL) of the organization new OIDC
 * users join, into '*u', with its audit entry (user.create, by the user itself). */
static int member_create(struct router_req *r, const char *email, const char *name,
                         struct store_user *u)
{
    struct store_audit a;
    struct store_org org;
    struct err e;
    int rc = member_org(r, &org);

    if (rc)
        return rc;
    memset(u, 0, sizeof(*u));
    if (id_new("usr", u->id, sizeof(u->id)))
        return ERR_INTERNAL;
    snprintf(u->org_id, sizeof(u->org_id), "%s", org.id);
    snprintf(u->email, sizeof(u->email), "%s", email);
    snprintf(u->name, sizeof(u->name), "%s", name ? name : "");
    u->role = STORE_ROLE_MEMBER;
    u->status = STORE_USER_ACTIVE;
    u->created_at = u->updated_at = clock_now_ms();
    memset(&a, 0, sizeof(a));
    r->tenant.mode = STORE_LIVE;
    snprintf(r->tenant.org_id, sizeof(r->tenant.org_id), "%s", org.id);
    r->by_session = true; /* the actor of the entry is the new user */
    r->user = *u;
    router_audit_actor(r, &a);
    a.action = "user.create";
    a.target_type = "user";
    a.target_id = u->id;
    err_clear(&e);
    store_audit_arm(r->store, &a);
    rc = store_user_create(r->store, u, &e);
    store_audit_arm(r->store, NULL);
    if (rc == ERR_CONFLICT) /* made by another sign-in just now */
        rc = store_user_by_email(r->store, email, u);
    if (!rc)
        log_info("oidc: user %s created as a member of %s at its first sign-in", u->id, org.slug);
    return rc;
}

/*
 * The user the checked claims 'c' sign in as, into '*u': the one of the verified email (an
 * existing or invited user) when active; else a new member when the email's domain is
 * allowed. 0, or the code the browser is told ("oidc_email_not_allowed", "user_disabled",
 * "oidc_failed") in '*refusal'.
 */
static int user_for(struct router_req *r, const struct oidc_claims *c, struct store_user *u,
                    const char **refusal)
{
    const char *email;
    int rc;

    *refusal = "oidc_email_not_allowed";
    if (!c->email || !*c->email || strlen(c->email) >= sizeof(u->email) || !c->email_verified) {
        log_warn("oidc: sign-in refused: the provider did not give a verified email");
        return ERR_FORBIDDEN;
    }
    email = api_email_lower(r->arena, c->email);
    rc = store_user_by_email(r->store, email, u);
    if (rc == 0 && u->status != STORE_USER_ACTIVE) {
        *refusal = "user_disabled";
        log_warn("oidc: sign-in refused: user %s is disabled", u->id);
        return ERR_FORBIDDEN;
    }
    if (rc == 0)
        return 0;
    if (rc != ERR_NOT_FOUND) {
        *refusal = "oidc_failed";
        return rc;
    }
    if (!oidc_email_domain_allowed(email, r->env->cfg->oidc_allowed_domains)) {
        log_warn("oidc: sign-in refused: no user has the email, and its domain is not allowed");
        return ERR_FORBIDDEN;
    }
    rc = member_create(r, email, c->name, u);
    if (rc)
        *refusal = "oidc_failed";
    return rc;
}

/*
 * A callback waiting for the provider. The router still uses the request's own store handle
 * for a moment after the handler returns (it puts it back to the pool), and the provider may
 * answer before that: the user's lookup and the session are made on 'shadow', a copy of the
 * request taken before the exchange starts, with a handle of its own; 'r' itself is only
 * answered.
 */
struct pending {
    struct router_req *r;
    struct router_req shadow;
};

/* The provider answered (on httpc's thread): a session for the user, or a refusal. */
static void callback_done(void *ud, int rc, const struct oidc_claims *c, const struct err *e)
{
    struct pending *p = ud;
    struct router_req *r = p->r, *q = &p->shadow;
    const char *refusal = "oidc_failed";
    char csrf[ROUTER_CSRF_LEN];
    struct store_session ses;
    struct store_user u;
    struct err se;

    (void)e; /* logged by the provider handle */
    if (!rc) {
        err_clear(&se);
        q->store = store_pool_get(q->env->pool);
        rc = user_for(q, c, &u, &refusal);
        if (!rc)
            rc = api_session_open(q, &u, "oidc", csrf, &ses, &se); /* its cookie on q->http */
        store_pool_put(q->env->pool, q->store);
        q->store = NULL;
        if (rc && se.code)
            log_warn("oidc: the session could not be opened: %s", se.msg);
    }
    if (rc)
        refuse(r, refusal);
    else
        redirect(r, SIGNED_IN);
    router_async_finish(r, 0, NULL);
}

/* GET /v1/sessions/oidc/callback?code&state[&iss] (or ?error&state): no key. */
int api_oidc_callback(struct router_req *r, struct err *e)
{
    struct oidc *o = api_svc(r)->oidc;
    const char *state = router_query(r, "state"), *code = router_query(r, "code");
    const char *iss = router_query(r, "iss");
    struct pending *p;
    struct oidc_flow f;

    if (!o)
        return err_set(e, ERR_NOT_FOUND, "oidc_not_configured", NULL,
                       "OpenID Connect sign-in is not configured (WORKFORCE_OIDC_ISSUER).");
    set_cookie(r, "", 0); /* whatever happens, this flow is over */
    if (open_flow(r, router_cookie(r, COOKIE), &f) || !state || strlen(state) != OIDC_RANDOM_LEN ||
        !crypto_equal(state, f.state, OIDC_RANDOM_LEN)) {
        log_warn("oidc: callback refused: no flow cookie, or not the state of this browser's");
        refuse(r, "oidc_failed");
        return 0;
    }
    if (!code || !*code || router_query(r, "error") ||
        (iss && strcmp(iss, r->env->cfg->oidc_issuer) != 0)) {
        log_warn("oidc: callback refused: the provider sent %s",
                 router_query(r, "error") ? "an error"
                 : !code || !*code        ? "no code"
                                          : "another issuer");
        refuse(r, "oidc_failed");
        return 0;
    }
    p = arena_calloc(r->arena, sizeof(*p));
    p->r = r;
    p->shadow = *r;
    p->shadow.store = NULL;
    r->async = true;
    http_req_defer(r->http);
    /* From here 'r' belongs to the provider handle: callback_done() answers. */
    oidc_sign_in(o, code, callback_url(r), f.verifier, f.nonce, callback_done, p);
    memset(&f, 0, sizeof(f));
    return 0;
}
