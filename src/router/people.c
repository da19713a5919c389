/* SPDX-License-Identifier: MIT */
/*
 * people.c: a person's requests (contract §20). A request without an Authorization header may
 * name a session in the cookie `wf_session`: the session, its user and organization are read
 * (from the cache while nothing was committed), then checked (revoked, idle 12 h, 7 days old,
 * user disabled: 401 invalid_session); a request that changes anything carries the session's
 * CSRF token (403 csrf_token_invalid); the user's role must reach the route's (403
 * permission_denied). A person is limited per user, apart from the organization's keys.
 *
 * Also here: the client's address (X-Forwarded-For only from WORKFORCE_TRUSTED_PROXIES), and
 * the audit context of a request.
 */
#include "router.h"
#include "router_int.h"

#include "../core/clock.h"
#include "../core/crypto.h"
#include "../core/log.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define TOUCH_MS (60 * 1000LL) /* seen_at and last_used_at are written at most once a minute */

struct verified_session {
    struct store_session ses;
    struct store_user user;
    struct store_org org;
};

/* See router.h. */
bool router_cookie_find(const char *h, const char *name, const char **value, size_t *len)
{
    size_t nl = strlen(name);

    while (h && *h) {
        while (*h == ' ' || *h == ';')
            h++;
        if (strncmp(h, name, nl) == 0 && h[nl] == '=') {
            const char *v = h + nl + 1;
            size_t n = strcspn(v, ";");
            while (n && v[n - 1] == ' ')
                n--;
            *value = v;
            *len = n;
            return n > 0;
        }
        h = strchr(h, ';');
    }
    return false;
}

/* See router.h. */
bool router_cookie_value(const char *h, const char *name, char *out, size_t n)
{
    const char *v;
    size_t len;

    if (!router_cookie_find(h, name, &v, &len) || len >= n)
        return false;
    memcpy(out, v, len);
    out[len] = '\0';
    return true;
}

/* See router.h. */
const char *router_cookie(struct router_req *r, const char *name)
{
    const char *v;
    size_t len;
    return router_cookie_find(http_req_header(r->http, "Cookie"), name, &v, &len)
               ? arena_strndup(r->arena, v, len)
               : NULL;
}

/* The value of cookie 'name' of the request into 'out' ('n' bytes). */
static bool cookie(struct router_req *r, const char *name, char *out, size_t n)
{
    return router_cookie_value(http_req_header(r->http, "Cookie"), name, out, n);
}

/* See router_int.h. */
bool router_has_session_cookie(struct router_req *r)
{
    char tok[AUTH_TOKEN_MAX];
    return cookie(r, ROUTER_SESSION_COOKIE, tok, sizeof(tok));
}

/* See router.h. */
int router_csrf_token(const struct router_env *env, const char *token, char out[ROUTER_CSRF_LEN])
{
    unsigned char mac[32];
    char in[AUTH_TOKEN_MAX + 8];
    int n = snprintf(in, sizeof(in), "csrf:%s", token);
    int rc = auth_key_hash(env->secret, in, (size_t)n, mac);
    if (!rc)
        crypto_base64url(mac, sizeof(mac), out);
    return rc;
}

/* See router.h. */
int router_session_hash(const struct router_env *env, const char *token, unsigned char out[32])
{
    return env->key_mac ? crypto_hmac_sign(env->key_mac, token, strlen(token), out)
                        : auth_key_hash(env->secret, token, strlen(token), out);
}

static int invalid(struct err *e, const char *why)
{
    return err_set(e, ERR_AUTH, "invalid_session", NULL, "%s Sign in again.", why);
}

/* The session of 'hash' with its user and organization, from the cache when nothing was
 * committed since it was read. */
static int find_session(struct router_req *r, const unsigned char hash[32],
                        struct verified_session *v)
{
    uint64_t gen = 0;
    int rc;

    if (r->env->sessions) {
        gen = store_generation(r->store);
        if (cache_get_into(r->env->sessions, hash, 32, gen, v, sizeof(*v)))
            return 0;
    }
    memset(v, 0, sizeof(*v));
    rc = store_session_auth(r->store, hash, &v->ses, &v->user, &v->org);
    if (!rc && r->env->sessions)
        cache_put(r->env->sessions, hash, 32, gen, v, sizeof(*v));
    return rc;
}

static bool changes_state(const char *method)
{
    return strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
           strcmp(method, "OPTIONS") != 0;
}

/* See router_int.h. */
int router_session_authenticate(struct router_req *r, struct err *e)
{
    char token[AUTH_TOKEN_MAX];
    char csrf[ROUTER_CSRF_LEN];
    unsigned char hash[32];
    struct verified_session v;
    const char *mode = http_req_header(r->http, "Workforce-Mode");
    const char *sent;
    int64_t now = clock_now_ms();
    int rc;

    if (!cookie(r, ROUTER_SESSION_COOKIE, token, sizeof(token)) ||
        strncmp(token, ROUTER_SESSION_PREFIX, strlen(ROUTER_SESSION_PREFIX)) != 0)
        return invalid(e, "The session cookie is not valid.");
    if (router_session_hash(r->env, token, hash))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL,
                       "The session could not be checked.");
    rc = find_session(r, hash, &v);
    if (rc == ERR_NOT_FOUND)
        return invalid(e, "The session is not valid.");
    if (rc)
        return err_set(e, ERR_STORE, "internal_error", NULL, "The session could not be checked.");
    if (v.ses.revoked_at)
        return invalid(e, "The session has ended.");
    if (v.ses.expires_at <= now || v.ses.seen_at + ROUTER_SESSION_IDLE_MS <= now)
        return invalid(e, "The session has expired.");
    if (v.user.status != STORE_USER_ACTIVE)
        return invalid(e, "The user is disabled.");
    if (mode && strcmp(mode, "test") != 0 && strcmp(mode, "live") != 0)
        return err_set(e, ERR_INVALID, "invalid_request", "Workforce-Mode",
                       "Workforce-Mode must be live or test.");
    if (changes_state(http_req_method(r->http))) {
        sent = http_req_header(r->http, "X-CSRF-Token");
        if (router_csrf_token(r->env, token, csrf) || !sent || strlen(sent) != strlen(csrf) ||
            !crypto_equal(sent, csrf, strlen(csrf)))
            return err_set(e, ERR_FORBIDDEN, "csrf_token_invalid", "X-CSRF-Token",
                           "A request that changes anything with a session must carry its CSRF "
                           "token in X-CSRF-Token (GET /v1/sessions/current answers it).");
    }
    if (now - v.ses.seen_at >= TOUCH_MS && store_session_touch(r->store, v.ses.id, now))
        log_warn("request %s: the session's last use could not be recorded", r->request_id);
    r->by_session = true;
    r->session = v.ses;
    r->user = v.user;
    r->org = v.org;
    r->role = v.user.role;
    r->scopes = 0; /* the role decides */
    snprintf(r->tenant.org_id, sizeof(r->tenant.org_id), "%s", v.org.id);
    r->tenant.mode = mode && strcmp(mode, "test") == 0 ? STORE_TEST : STORE_LIVE;
    snprintf(r->rl_tenant, sizeof(r->rl_tenant), "user:%s", v.user.id);
    r->limits = r->env->cfg->session_limits;
    r->authed = true;
    return 0;
}

/* See router_int.h. */
void router_key_touch(struct router_req *r)
{
    int64_t now = clock_now_ms();
    if (now - r->key.last_used_at >= TOUCH_MS && store_key_touch(r->store, r->key.id, now))
        log_warn("request %s: the key's last use could not be recorded", r->request_id);
}

/* See router_int.h. */
int router_role_refused(const struct router_req *r, const struct route *rt, struct err *e)
{
    if (rt->flags & ROUTE_SESSION_ONLY && !r->by_session)
        return err_set(e, ERR_FORBIDDEN, "permission_denied", NULL,
                       "This route is for signed-in users (a session); API keys cannot use it.");
    if (r->by_session && r->role < (int)rt->role)
        return err_set(e, ERR_FORBIDDEN, "permission_denied", NULL,
                       "Your role (%s) does not allow this; it needs %s or above.",
                       store_role_name(r->role), store_role_name(rt->role));
    return 0;
}

/* See router.h. */
const char *router_actor_id(const struct router_req *r)
{
    if (r->by_session)
        return r->user.id;
    return r->authed && r->key.id[0] ? r->key.id : NULL;
}

/* See router.h. */
bool router_sees_secrets(const struct router_req *r)
{
    return !r->by_session || r->role >= STORE_ROLE_DEVELOPER;
}

/* See router.h. */
uint32_t router_rights(const struct router_req *r)
{
    const uint32_t member = AUTH_SCOPE_EMPLOYEES_READ | AUTH_SCOPE_CHAT | AUTH_SCOPE_CONVERSATIONS |
                            AUTH_SCOPE_TASKS | AUTH_SCOPE_KNOWLEDGE | AUTH_SCOPE_WORKFLOWS |
                            AUTH_SCOPE_APPROVALS;
    if (!r->by_session)
        return r->scopes;
    switch (r->role) {
    case STORE_ROLE_VIEWER:
        return AUTH_SCOPE_EMPLOYEES_READ | AUTH_SCOPE_CONVERSATIONS;
    case STORE_ROLE_MEMBER:
        return member;
    case STORE_ROLE_DEVELOPER:
        return member | AUTH_SCOPE_INTEGRATIONS | AUTH_SCOPE_WEBHOOKS | AUTH_SCOPE_TOOLS;
    default:
        return 0;
    }
}

/* ---- The client's address ---- */

/* 'ip' within the address or CIDR block 'net' ('len' bytes). */
static bool in_block(const char *ip, const char *net, size_t len)
{
    char text[INET6_ADDRSTRLEN + 8];
    unsigned char a[16], b[16];
    const char *slash;
    int fam, bits, nbytes;

    if (len >= sizeof(text))
        return false;
    memcpy(text, net, len);
    text[len] = '\0';
    slash = strchr(text, '/');
    if (slash)
        text[slash - text] = '\0';
    fam = strchr(text, ':') ? AF_INET6 : AF_INET;
    nbytes = fam == AF_INET ? 4 : 16;
    if (inet_pton(fam, text, b) != 1 || inet_pton(fam, ip, a) != 1)
        return false;
    bits = nbytes * 8;
    if (slash) {
        const char *d = slash + 1;
        size_t nd = strspn(d, "0123456789");
        if (nd == 0 || nd > 3 || d[nd] != '\0')
            return false; /* "/x", "/", "/0001": not a prefix length */
        bits = 0;
        for (size_t i = 0; i < nd; i++)
            bits = bits * 10 + (d[i] - '0');
    }
    if (bits > nbytes * 8)
        return false;
    for (int i = 0; i < nbytes && bits > 0; i++, bits -= 8) {
        unsigned mask = bits >= 8 ? 0xFFu : (0xFFu << (8 - bits)) & 0xFFu;
        if ((a[i] & mask) != (b[i] & mask))
            return false;
    }
    return true;
}

/* See router.h. */
bool router_ip_trusted(const char *list, const char *ip)
{
    while (list && *list && ip && *ip) {
        size_t n;
        while (*list == ',' || *list == ' ')
            list++;
        n = strcspn(list, ", ");
        if (n && in_block(ip, list, n))
            return true;
        list += n;
    }
    return false;
}

/* See router.h. */
void router_forwarded_client(const char *xff, const char *trusted, const char *peer,
                             char out[ROUTER_IP_MAX])
{
    char hop[ROUTER_IP_MAX];

    snprintf(out, ROUTER_IP_MAX, "%s", peer ? peer : "");
    if (!xff || !router_ip_trusted(trusted, out))
        return;
    /* from the right: the first address that is not one of our proxies is the client's; a
     * malformed hop ends the walk at the last address found */
    for (size_t end = strlen(xff); end > 0;) {
        size_t start = end;
        const char *s;
        size_t n;
        unsigned char probe[16];

        while (start > 0 && xff[start - 1] != ',')
            start--;
        s = xff + start;
        n = end - start;
        while (n && *s == ' ')
            s++, n--;
        while (n && s[n - 1] == ' ')
            n--;
        if (n == 0 || n >= sizeof(hop))
            return;
        memcpy(hop, s, n);
        hop[n] = '\0';
        if (inet_pton(strchr(hop, ':') ? AF_INET6 : AF_INET, hop, probe) != 1)
            return;
        memcpy(out, hop, n + 1);
        if (!router_ip_trusted(trusted, hop))
            return;
        end = start > 0 ? start - 1 : 0;
    }
}

/* See router.h. */
const char *router_client_ip(struct router_req *r)
{
    char ip[ROUTER_IP_MAX];

    if (r->client_ip)
        return r->client_ip;
    router_forwarded_client(http_req_header(r->http, "X-Forwarded-For"),
                            r->env->cfg->trusted_proxies, http_req_peer(r->http), ip);
    r->client_ip = arena_strdup(r->arena, ip);
    return r->client_ip;
}

/* ---- The audit context ---- */

/* See router.h. */
void router_audit_actor(struct router_req *r, struct store_audit *a)
{
    a->tenant = r->tenant;
    if (r->by_session) {
        a->actor_type = STORE_ACTOR_USER;
        a->actor_id = r->user.id;
        a->actor_label = r->user.email;
    } else if (r->authed && r->key.id[0]) {
        a->actor_type = STORE_ACTOR_API_KEY;
        a->actor_id = r->key.id;
        a->actor_label =
            arena_printf(r->arena, "%s…%s",
                         r->key.mode == STORE_TEST ? "svc_test_sk_" : "svc_live_sk_", r->key.last4);
    } else {
        a->actor_type = STORE_ACTOR_SYSTEM;
        a->actor_id = "";
        a->actor_label = "";
    }
    a->ip = router_client_ip(r);
    a->user_agent = http_req_header(r->http, "User-Agent");
    a->request_id = r->request_id;
}

/* See router_int.h. */
void router_audit_prepare(struct router_req *r, const struct route *rt)
{
    const char *dot;
    memset(&r->audit, 0, sizeof(r->audit));
    if (!rt->audit || !r->authed)
        return;
    router_audit_actor(r, &r->audit);
    r->audit.action = rt->audit;
    dot = strchr(rt->audit, '.');
    r->audit.target_type =
        dot ? arena_strndup(r->arena, rt->audit, (size_t)(dot - rt->audit)) : rt->audit;
    r->audit.target_id = r->params[0];
}
