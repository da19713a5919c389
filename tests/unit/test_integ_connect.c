/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of integrations/connect.c, view.c and revoke.c, without the HTTP layer: the
 * provider's answers read into a token or a failure code, the account lookup, the OAuth error
 * codes users get back, the revocation requests; then, on a SQLite database and a fake
 * provider on 127.0.0.1 (a thread answering canned HTTP answers), a whole connection: start,
 * callback refused or exchanged (the waiter deferred before it is told), the account asked
 * for, a failed reconnection keeping the working connection, an unreachable provider, the
 * views, disconnection with its revocation, and a repeated event delivery.
 */
#include "../../src/core/config.h"
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/httpc/httpc.h"
#include "../../src/integrations/connection.h"
#include "../../src/integrations/inbound.h"
#include "../../src/integrations/providers.h"
#include "../../src/store/store.h"
#include "t.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 10000 /* the longest any asynchronous step may take */

static struct config cfg;

/* ---- A fake provider: one canned answer per connection, the requests kept ---- */

#define FAKE_MAX 8

static struct fake {
    int fd;
    int port;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;
    size_t nanswers, served;
    long status[FAKE_MAX];
    const char *body[FAKE_MAX];
    char seen[FAKE_MAX][4096]; /* each request as received (cut) */
} fake = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Queue the answer to the next request. */
static void fake_answer(long status, const char *body)
{
    pthread_mutex_lock(&fake.mu);
    fake.status[fake.nanswers] = status;
    fake.body[fake.nanswers] = body;
    fake.nanswers++;
    pthread_mutex_unlock(&fake.mu);
}

/* Read one request (headers and Content-Length bytes of body) into 'out'. */
static void fake_read(int c, char *out, size_t cap)
{
    size_t n = 0, want = 0;
    char *end = NULL;

    while (n + 1 < cap) {
        struct pollfd p = {c, POLLIN, 0};
        ssize_t got;
        if (poll(&p, 1, WAIT_MS) <= 0)
            break;
        got = read(c, out + n, cap - 1 - n);
        if (got <= 0)
            break;
        n += (size_t)got;
        out[n] = '\0';
        if (!end && (end = strstr(out, "\r\n\r\n")) != NULL) {
            const char *cl = strcasestr(out, "\r\nContent-Length:");
            want = (size_t)(end + 4 - out) + (cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
        }
        if (end && n >= want)
            break;
    }
    out[n] = '\0';
}

static void *fake_run(void *unused)
{
    (void)unused;
    for (;;) {
        struct pollfd p = {fake.fd, POLLIN, 0};
        char head[256];
        size_t i;
        int c;

        pthread_mutex_lock(&fake.mu);
        if (fake.stop) {
            pthread_mutex_unlock(&fake.mu);
            return NULL;
        }
        pthread_mutex_unlock(&fake.mu);
        if (poll(&p, 1, 50) <= 0 || (c = accept(fake.fd, NULL, NULL)) < 0)
            continue;
        pthread_mutex_lock(&fake.mu);
        i = fake.served < FAKE_MAX ? fake.served : FAKE_MAX - 1;
        pthread_mutex_unlock(&fake.mu);
        fake_read(c, fake.seen[i], sizeof(fake.seen[i]));
        snprintf(head, sizeof(head),
                 "HTTP/1.1 %ld X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                 "Connection: close\r\n\r\n",
                 i < fake.nanswers ? fake.status[i] : 500L,
                 i < fake.nanswers ? strlen(fake.body[i]) : 0);
        if (write(c, head, strlen(head)) < 0 ||
            (i < fake.nanswers && write(c, fake.body[i], strlen(fake.body[i])) < 0))
            perror("fake provider");
        close(c);
        pthread_mutex_lock(&fake.mu);
        fake.served++;
        pthread_cond_broadcast(&fake.cv);
        pthread_mutex_unlock(&fake.mu);
    }
}

static int fake_start(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    fake.fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fake.fd < 0 || bind(fake.fd, (struct sockaddr *)&a, sizeof(a)) || listen(fake.fd, 16) ||
        getsockname(fake.fd, (struct sockaddr *)&a, &len))
        return -1;
    fake.port = ntohs(a.sin_port);
    return pthread_create(&fake.thread, NULL, fake_run, NULL);
}

static void fake_stop(void)
{
    pthread_mutex_lock(&fake.mu);
    fake.stop = true;
    pthread_mutex_unlock(&fake.mu);
    pthread_join(fake.thread, NULL);
    close(fake.fd);
}

static struct timespec deadline(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += WAIT_MS / 1000;
    return t;
}

/* Wait (bounded) until the fake provider has served 'n' requests in all. */
static bool fake_wait(size_t n)
{
    struct timespec t = deadline();
    bool reached;
    pthread_mutex_lock(&fake.mu);
    while (fake.served < n && pthread_cond_timedwait(&fake.cv, &fake.mu, &t) != ETIMEDOUT)
        ;
    reached = fake.served >= n;
    pthread_mutex_unlock(&fake.mu);
    return reached;
}

/* ---- A waiter that records what it is told ---- */

struct waited {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool deferred, done, deferred_first;
    char error[64];
    struct err err;
    char redirect_uri[256];
};

static void on_defer(void *ud)
{
    struct waited *w = ud;
    pthread_mutex_lock(&w->mu);
    w->deferred = true;
    pthread_mutex_unlock(&w->mu);
}

static void on_done(void *ud, const struct integ_outcome *o)
{
    struct waited *w = ud;
    pthread_mutex_lock(&w->mu);
    w->deferred_first = w->deferred;
    snprintf(w->error, sizeof(w->error), "%s", o->error ? o->error : "");
    snprintf(w->redirect_uri, sizeof(w->redirect_uri), "%s",
             o->redirect_uri ? o->redirect_uri : "");
    w->err = o->err;
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void waited_init(struct waited *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
}

/* Wait (bounded) for the outcome. */
static bool waited_wait(struct waited *w)
{
    struct timespec t = deadline();
    bool done;
    pthread_mutex_lock(&w->mu);
    while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &t) != ETIMEDOUT)
        ;
    done = w->done;
    pthread_mutex_unlock(&w->mu);
    return done;
}

static void waited_cleanup(struct waited *w)
{
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* ---- Pure pieces ---- */

static int read_answer(int rc, long status, bool too_big, const char *body, struct arena *a,
                       struct integ_token *t, char *code, char *why)
{
    struct integ_answer ans = {rc,      status, rc ? "Connection refused" : NULL,
                               too_big, body,   strlen(body)};
    return integ_exchange_read(&ans, a, t, code, 64, why, 256);
}

static void exchange_answers(void)
{
    subtest("exchange answers")
    {
        const struct integ_provider *gh = integ_provider_find("github");
        struct integ_answer ans = {0, 200, NULL, false, "{\"login\":\"octo\"}", 16};
        struct integ_token t;
        char code[64], why[256];
        struct arena a;

        arena_init(&a);
        is_int(read_answer(0, 200, false, "{\"access_token\":\"at\",\"scope\":\"repo\"}", &a, &t,
                           code, why),
               0, "a token answer");
        is_str(t.access_token, "at", "its token");
        is_int(read_answer(ERR_UPSTREAM, 0, false, "", &a, &t, code, why), ERR_UPSTREAM,
               "no answer");
        is_str(code, "provider_unreachable", "the provider is unreachable");
        ok(strstr(why, "Connection refused") != NULL, "saying why");
        ok(t.access_token == NULL, "no token");
        is_int(read_answer(ERR_UPSTREAM, 200, true, "{\"access_token\":\"at\"", &a, &t, code, why),
               ERR_UPSTREAM, "an answer cut for its size");
        is_str(code, "invalid_response", "is no token answer");
        ok(strstr(why, "more than") != NULL, "too large");
        is_int(read_answer(0, 400, false, "{\"error\":\"invalid_grant\"}", &a, &t, code, why),
               ERR_UPSTREAM, "a refusal");
        is_str(code, "invalid_grant", "the provider's code");
        is_int(read_answer(0, 503, false, "<html>down</html>", &a, &t, code, why), ERR_UPSTREAM,
               "a failing provider");
        is_str(code, "invalid_response", "no token answer");
        ok(strstr(why, "HTTP 503") != NULL, "its status said");

        is_str(integ_account_read(gh, &ans, &a), "octo", "GitHub's login is the account");
        ans.status = 401;
        ok(integ_account_read(gh, &ans, &a) == NULL, "a refused lookup names nobody");
        ans.status = 200;
        ans.rc = ERR_UPSTREAM;
        ok(integ_account_read(gh, &ans, &a) == NULL, "nor an unanswered one");
        ans.rc = 0;
        ans.body = "{\"login\":\"\"}";
        ans.len = strlen(ans.body);
        ok(integ_account_read(gh, &ans, &a) == NULL, "nor an empty name");
        ans.body = "not json";
        ans.len = strlen(ans.body);
        ok(integ_account_read(gh, &ans, &a) == NULL, "nor garbage");
        ok(integ_account_read(integ_provider_find("slack"), &ans, &a) == NULL,
           "Slack is never asked");

        memset(&cfg, 0, sizeof(cfg));
        is_str(integ_account_url(&cfg, gh, "t", &a), "https://api.github.com/user",
               "GitHub: GET /user");
        is_str(integ_account_url(&cfg, integ_provider_find("hubspot"), "a/b c", &a),
               "https://api.hubapi.com/oauth/v1/access-tokens/a%2Fb%20c",
               "HubSpot: the token in the path, encoded");
        arena_cleanup(&a);
    }
}

static void oauth_errors(void)
{
    subtest("oauth errors")
    {
        char out[64], small[8];
        integ_oauth_error_clean("access_denied", out, sizeof(out));
        is_str(out, "access_denied", "an OAuth code stays");
        integ_oauth_error_clean("Bad Thing!<script>", out, sizeof(out));
        is_str(out, "_ad__hing__script_", "anything else becomes _");
        integ_oauth_error_clean("consent_required_by_admin", small, sizeof(small));
        is_str(small, "consent", "cut to its size");
    }
}

static void revocations(void)
{
    subtest("revocations")
    {
        struct httpc_request req;
        struct arena a;
        char want[256], b64[64];

        arena_init(&a);
        memset(&cfg, 0, sizeof(cfg));
        snprintf(cfg.oauth[0][CONFIG_OAUTH_CLIENT_ID], CONFIG_OAUTH_VALUE_MAX, "sl id");
        snprintf(cfg.oauth[0][CONFIG_OAUTH_CLIENT_SECRET], CONFIG_OAUTH_VALUE_MAX, "s&c");
        snprintf(cfg.oauth[3][CONFIG_OAUTH_CLIENT_ID], CONFIG_OAUTH_VALUE_MAX, "gh-id");
        snprintf(cfg.oauth[3][CONFIG_OAUTH_CLIENT_SECRET], CONFIG_OAUTH_VALUE_MAX, "gh-secret");

        is_int(integ_revoke_request(&cfg, integ_provider_find("slack"), "xoxb/1", "access_token",
                                    &a, &req),
               0, "Slack");
        is_str(req.method, "POST", "RFC 7009: POST");
        is_str(req.url, "https://slack.com/api/auth.revoke", "to auth.revoke");
        is_str(req.body,
               "token=xoxb%2F1&token_type_hint=access_token&client_id=sl%20id&client_secret=s%26c",
               "the token and the client, encoded");
        ok(req.body_len == strlen(req.body) && req.nheaders == 2 &&
               strcmp(req.headers[0], "Content-Type: application/x-www-form-urlencoded") == 0,
           "a form");

        is_int(integ_revoke_request(&cfg, integ_provider_find("github"), "gho_1", "access_token",
                                    &a, &req),
               0, "GitHub");
        is_str(req.method, "DELETE", "DELETE");
        is_str(req.url, "https://api.github.com/applications/gh-id/token",
               "/applications/{client_id}/token");
        is_str(req.body, "{\"access_token\":\"gho_1\"}", "the token in a JSON body");
        crypto_base64((const unsigned char *)"gh-id:gh-secret", 15, b64);
        snprintf(want, sizeof(want), "Authorization: Basic %s", b64);
        ok(req.nheaders == 3 && strcmp(req.headers[2], want) == 0, "basic client auth");

        is_int(integ_revoke_request(&cfg, integ_provider_find("hubspot"), "r/1", "refresh_token",
                                    &a, &req),
               0, "HubSpot, a refresh token");
        is_str(req.url, "https://api.hubapi.com/oauth/v1/refresh-tokens/r%2F1",
               "the token in the path");
        ok(strcmp(req.method, "DELETE") == 0 && !req.body && req.nheaders == 0, "DELETE, no body");
        is_int(integ_revoke_request(&cfg, integ_provider_find("hubspot"), "a", "access_token", &a,
                                    &req),
               ERR_NOT_FOUND, "HubSpot revokes no access token");
        is_int(integ_revoke_request(&cfg, integ_provider_find("outlook"), "a", "refresh_token", &a,
                                    &req),
               ERR_NOT_FOUND, "Outlook has no revocation");
        snprintf(cfg.oauth[0][CONFIG_OAUTH_REVOKE_URL], CONFIG_OAUTH_VALUE_MAX, "http://x/revoke");
        integ_revoke_request(&cfg, integ_provider_find("slack"), "t", "refresh_token", &a, &req);
        is_str(req.url, "http://x/revoke", "the configured endpoint");
        arena_cleanup(&a);
    }
}

/* ---- A whole connection ---- */

static struct store_pool *pool;
static struct integ_env env;
static struct store_tenant tenant;

static int view(const char *provider, struct arena *a, struct integ_view *v)
{
    struct store *s = store_pool_get(pool);
    int rc = integ_view_get(&env, s, &tenant, integ_provider_find(provider), a, v, NULL);
    store_pool_put(pool, s);
    return rc;
}

/* The cookie of the browser that started the last connect (start()). */
static char binding[INTEG_STATE_LEN + 1];

/* Start connecting 'provider' (redirect_uri 'back'); the state into 'state', the browser's
 * cookie into 'binding'. */
static int start(const char *provider, const char *back, struct arena *a, char *state)
{
    struct integ_authorization auth;
    struct store *s = store_pool_get(pool);
    int rc = integ_connect_start(&env, s, &tenant, integ_provider_find(provider), back, NULL, 0, a,
                                 &auth, NULL);
    store_pool_put(pool, s);
    if (!rc) {
        snprintf(state, INTEG_STATE_LEN + 1, "%s", auth.state);
        snprintf(binding, sizeof(binding), "%s", auth.binding);
    }
    return rc;
}

/* A browser with cookies 'cookie' and 'confirm_cookie' opens the start page of 'state'. */
static int open_page(const char *provider, const char *state, const char *confirm,
                     const char *cookie, const char *confirm_cookie, struct arena *a,
                     struct integ_opened *out, struct err *e)
{
    struct integ_open q = {state, confirm, cookie, confirm_cookie};
    struct store *s = store_pool_get(pool);
    int rc;
    err_clear(e);
    rc = integ_connect_open(&env, s, integ_provider_find(provider), &q, a, out, e);
    store_pool_put(pool, s);
    return rc;
}

/* The callback 'q' of 'provider': 0 with '*now', or the error in 'e'; 'w' for an exchange. */
static int callback(const char *provider, const struct integ_callback *q, struct waited *w,
                    struct arena *a, struct integ_outcome *now, struct err *e)
{
    struct integ_waiter iw = {on_defer, on_done, w};
    struct store *s = store_pool_get(pool);
    int rc;
    err_clear(e);
    rc = integ_connect_finish(&env, s, integ_provider_find(provider), q, &iw, a, now, e);
    store_pool_put(pool, s);
    return rc;
}

static void starting(void)
{
    subtest("start")
    {
        const struct integ_provider *sl = integ_provider_find("slack");
        const char *asked[] = {"chat:write", "users:read"};
        struct integ_authorization auth;
        struct integ_view v;
        struct store *s = store_pool_get(pool);
        struct arena a;
        struct err e;

        arena_init(&a);
        err_clear(&e);
        is_int(integ_connect_start(&env, s, &tenant, integ_provider_find("hubspot"), NULL, NULL, 0,
                                   &a, &auth, &e),
               ERR_INVALID, "no client credentials");
        is_str(e.code, "integration_not_configured", "not configured");
        ok(strstr(e.msg, "WORKFORCE_OAUTH_HUBSPOT_CLIENT_ID") != NULL, "naming the settings");
        is_int(integ_connect_start(&env, s, &tenant, sl, NULL, asked, 2, &a, &auth, &e), 0,
               "Slack");
        store_pool_put(pool, s);
        ok(strlen(auth.state) == INTEG_STATE_LEN, "a state");
        ok(strlen(auth.binding) == INTEG_STATE_LEN && strcmp(auth.binding, auth.state) != 0,
           "and the cookie of the browser it is bound to");
        is_str(auth.url,
               arena_printf(&a, "https://wf.example.com/v1/integrations/slack/authorize?state=%s",
                            auth.state),
               "the URL is this server's start page");
        {
            struct integ_opened o;
            is_int(open_page("slack", auth.state, NULL, auth.binding, NULL, &a, &o, &e), 0,
                   "opened by the browser with the cookie");
            ok(o.provider_url &&
                   strncmp(o.provider_url, "https://slack.com/oauth/v2/authorize?", 37) == 0,
               "it goes on to the provider");
            ok(o.provider_url && strstr(o.provider_url, auth.state) &&
                   strstr(o.provider_url, "&scope=chat%3Awrite%2Cusers%3Aread&"),
               "the provider's URL carries the state and the scopes asked");
            ok(o.provider_url && strstr(o.provider_url, "&code_challenge=") &&
                   strstr(o.provider_url, "code_challenge_method=S256"),
               "and a PKCE challenge");
        }
        ok(auth.expires_at > 0, "the state ends");
        is_int(view("slack", &a, &v), 0, "the view");
        is_str(v.status, "pending", "pending while the authorization is under way");
        ok(v.configured && v.events_url && strstr(v.events_url, "/v1/integrations/slack/events/"),
           "configured, with its events URL");
        is_int(view("outlook", &a, &v), 0, "another provider");
        ok(strcmp(v.status, "available") == 0 && !v.configured && !v.events_url,
           "available, not configured, no events");
        arena_cleanup(&a);
    }
}

static void refusing(void)
{
    subtest("callback refused")
    {
        struct integ_callback q = {NULL, "code", NULL, binding};
        struct integ_outcome now;
        struct integ_view v;
        struct waited w;
        char state[INTEG_STATE_LEN + 1];
        struct arena a;
        struct err e;

        arena_init(&a);
        waited_init(&w);
        is_int(callback("slack", &q, &w, &a, &now, &e), ERR_INVALID, "no state");
        ok(strcmp(e.code, "invalid_request") == 0 && strcmp(e.param, "state") == 0,
           "invalid_request, param state");
        q.state = "not-a-state";
        is_int(callback("slack", &q, &w, &a, &now, &e), ERR_INVALID, "an unknown state");
        is_str(e.param, "state", "param state");

        ok(start("slack", "https://app.example/back", &a, state) == 0, "a connect");
        q.state = state;
        q.code = NULL;
        q.error = "access_denied";
        is_int(callback("slack", &q, &w, &a, &now, &e), 0, "the user said no");
        ok(!now.pending && !w.deferred, "answered now");
        is_str(now.error, "access_denied", "with the provider's error");
        is_str(now.redirect_uri, "https://app.example/back", "back to the redirect_uri");
        is_int(view("slack", &a, &v), 0, "the view");
        ok(strcmp(v.status, "error") == 0 && v.error && strcmp(v.error, "access_denied") == 0,
           "kept as the record's error");
        is_int(callback("slack", &q, &w, &a, &now, &e), ERR_INVALID, "the state again");
        is_str(e.param, "state", "is used");

        ok(start("slack", NULL, &a, state) == 0, "a connect without redirect_uri");
        q.error = "Bad Thing!";
        is_int(callback("slack", &q, &w, &a, &now, &e), 0, "an odd error");
        is_str(now.error, "_ad__hing_", "cleaned to an OAuth code");
        ok(now.redirect_uri == NULL, "no way back");
        ok(now.err.kind == ERR_INVALID && strcmp(now.err.code, "invalid_request") == 0 &&
               strcmp(now.err.param, "error") == 0,
           "the answer is invalid_request, param error");
        ok(strstr(now.err.msg, "The connection to Slack was not made: _ad__hing_.") != NULL,
           "saying so");
        ok(start("slack", NULL, &a, state) == 0, "again");
        q.error = NULL;
        is_int(callback("slack", &q, &w, &a, &now, &e), 0, "no code and no error");
        is_str(now.error, "invalid_request", "invalid_request");
        ok(strstr(now.err.msg, "the provider sent no code") != NULL, "no code said");
        waited_cleanup(&w);
        arena_cleanup(&a);
    }
}

/* A callback with 'code' for a new connect of 'provider', waited for. */
static void exchange(const char *provider, const char *back, struct waited *w, struct arena *a)
{
    char state[INTEG_STATE_LEN + 1];
    struct integ_callback q = {state, "the-code", NULL, binding};
    struct integ_outcome now;
    struct err e;

    waited_init(w);
    ok(start(provider, back, a, state) == 0, "a connect");
    is_int(callback(provider, &q, w, a, &now, &e), 0, "a code");
    ok(now.pending, "exchanged in the background");
    ok(waited_wait(w), "the waiter is told");
    ok(w->deferred_first, "after it was told to defer");
}

static void exchanging(void)
{
    subtest("callback exchanged")
    {
        struct integ_view v;
        struct waited w;
        struct arena a;

        arena_init(&a);
        fake_answer(200, "{\"access_token\":\"gho_secret\",\"refresh_token\":\"ghr_secret\","
                         "\"scope\":\"repo,user\",\"expires_in\":3600}");
        fake_answer(200, "{\"login\":\"octo\"}");
        exchange("github", "https://app.example/back?x=1", &w, &a);
        is_str(w.error, "", "connected");
        is_str(w.redirect_uri, "https://app.example/back?x=1", "back to the redirect_uri");
        ok(fake_wait(2), "the token endpoint and the account lookup were asked");
        ok(strncmp(fake.seen[0], "POST /token ", 12) == 0 &&
               strstr(fake.seen[0], "code=the-code") && strstr(fake.seen[0], "code_verifier="),
           "the code exchanged with its verifier");
        ok(strncmp(fake.seen[1], "GET /api/user ", 14) == 0 &&
               strcasestr(fake.seen[1], "Authorization: Bearer gho_secret"),
           "the account asked with the token");
        is_int(view("github", &a, &v), 0, "the view");
        is_str(v.status, "connected", "connected");
        is_str(v.account, "octo", "the account's name");
        is_str(v.scopes, "[\"repo\",\"user\"]", "the granted scopes");
        ok(v.expires_at > 0 && v.connected_at > 0, "when");
        waited_cleanup(&w);

        fake_answer(400, "{\"error\":\"invalid_grant\",\"error_description\":\"bad code\"}");
        exchange("github", NULL, &w, &a);
        is_str(w.error, "invalid_grant", "a refused code");
        ok(w.err.kind == ERR_UPSTREAM && strcmp(w.err.code, "upstream_error") == 0,
           "answered as the provider's failure");
        ok(strstr(w.err.msg, "The connection to GitHub failed: the provider refused: "
                             "invalid_grant: bad code") != NULL,
           "saying why");
        is_int(view("github", &a, &v), 0, "the view");
        ok(strcmp(v.status, "connected") == 0 && v.account && strcmp(v.account, "octo") == 0,
           "the working connection is kept");
        waited_cleanup(&w);

        snprintf(cfg.oauth[0][CONFIG_OAUTH_TOKEN_URL], CONFIG_OAUTH_VALUE_MAX,
                 "http://127.0.0.1:1/token");
        exchange("slack", "https://app.example/back", &w, &a);
        is_str(w.error, "provider_unreachable", "an unreachable provider");
        is_int(view("slack", &a, &v), 0, "the view");
        ok(strcmp(v.status, "error") == 0 && strcmp(v.error, "provider_unreachable") == 0,
           "kept as the record's error");
        waited_cleanup(&w);
        arena_cleanup(&a);
    }
}

static void disconnecting(void)
{
    subtest("disconnect")
    {
        struct integ_view v;
        struct store *s;
        struct arena a;
        int rc;

        arena_init(&a);
        fake_answer(204, "");
        fake_answer(204, "");
        s = store_pool_get(pool);
        rc = integ_disconnect(&env, s, &tenant, integ_provider_find("github"), &a, &v, NULL);
        store_pool_put(pool, s);
        is_int(rc, 0, "GitHub disconnected");
        ok(strcmp(v.status, "available") == 0 && !v.account && !v.scopes, "available at once");
        ok(fake_wait(5), "its tokens revoked in the background");
        ok(strncmp(fake.seen[3], "DELETE /revoke/gh-id/token ", 27) == 0 &&
               strncmp(fake.seen[4], "DELETE /revoke/gh-id/token ", 27) == 0,
           "both, at GitHub's endpoint");
        ok((strstr(fake.seen[3], "ghr_secret") && strstr(fake.seen[4], "gho_secret")) ||
               (strstr(fake.seen[3], "gho_secret") && strstr(fake.seen[4], "ghr_secret")),
           "the refresh token and the access token");
        s = store_pool_get(pool);
        is_int(integ_disconnect(&env, s, &tenant, integ_provider_find("hubspot"), &a, &v, NULL), 0,
               "never connected: fine");
        store_pool_put(pool, s);
        is_str(v.status, "available", "available");
        arena_cleanup(&a);
    }
}

/* Issue 26 finding 6: where a user may be sent back. */
static void redirects(void)
{
    subtest("redirect_uri")
    {
        static const struct {
            const char *in, *out;
        } cases[] = {
            {"https://app.example/back?x=1", "https://app.example/back?x=1"},
            {"HTTPS://App.Example:443/", "https://app.example/"},
            {"https://app.example", "https://app.example"},
            {"https://app.example/caf\xc3\xa9?q=\"<x>\"&p=%41%g",
             "https://app.example/caf%C3%A9?q=%22%3Cx%3E%22&p=%41%25g"},
            {"http://127.0.0.1:8080/console/", "http://127.0.0.1:8080/console/"},
            {"https://evil.example/", NULL},
            {"https://app.example:444/", NULL},
            {"http://app.example/", NULL},
            {"https://app.example.evil.example/", NULL},
            {"https://user:pw@app.example/", NULL},
            {"https://app.example@evil.example/", NULL},
            {"https://app.example\\@evil.example/", NULL},
            {"https://app.example/#x", NULL},
            {"https://app.example/a b", NULL},
            {"https://", NULL},
            {"https:///x", NULL},
            {"https://app.example:0/", NULL},
            {"https://app.example:x/", NULL},
            {"ftp://app.example/", NULL},
            {"//app.example/", NULL},
        };
        struct arena a;
        arena_init(&a);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            const char *out = NULL;
            struct err e;
            int rc;
            err_clear(&e);
            rc = integ_redirect_uri(&cfg, cases[i].in, &a, &out, &e);
            if (cases[i].out) {
                is_int(rc, 0, cases[i].in);
                is_str(out, cases[i].out, "kept canonical and percent-encoded");
            } else {
                is_int(rc, ERR_INVALID, cases[i].in);
                ok(strcmp(e.param, "redirect_uri") == 0, "param redirect_uri");
            }
        }
        arena_cleanup(&a);
    }
}

/* Issue 26 finding 6: a connection is bound to the browser that started it. */
static void bindings(void)
{
    subtest("bound to a browser")
    {
        char state[INTEG_STATE_LEN + 1], mine[INTEG_STATE_LEN + 1];
        struct integ_callback q = {state, "the-code", NULL, NULL};
        struct integ_outcome now;
        struct integ_opened o, o2;
        struct waited w;
        struct arena a;
        struct err e;

        arena_init(&a);
        waited_init(&w);
        ok(start("slack", NULL, &a, state) == 0, "a connect");
        snprintf(mine, sizeof(mine), "%s", binding);
        is_int(callback("slack", &q, &w, &a, &now, &e), ERR_INVALID,
               "a callback in a browser without the cookie");
        ok(strcmp(e.code, "invalid_request") == 0 && strcmp(e.param, "state") == 0 &&
               strstr(e.msg, "another browser"),
           "is refused, param state");
        q.binding = "0123456789012345678901234567890123456789";
        is_int(callback("slack", &q, &w, &a, &now, &e), ERR_INVALID, "then another cookie");
        q.binding = mine;
        is_int(callback("slack", &q, &w, &a, &now, &e), ERR_INVALID, "and then even its own");
        ok(strstr(e.msg, "already used") != NULL, "the state was used up");
        ok(!w.deferred, "nothing was exchanged");

        ok(start("slack", NULL, &a, state) == 0, "another connect");
        is_int(open_page("slack", state, NULL, NULL, NULL, &a, &o, &e), 0,
               "opened by a browser without the cookie");
        ok(!o.provider_url && o.org && strcmp(o.org, "acme") == 0 && o.mode == STORE_LIVE &&
               strlen(o.confirm) == INTEG_STATE_LEN,
           "it is asked, naming the organization");
        is_int(open_page("slack", state, o.confirm, NULL, NULL, &a, &o2, &e), ERR_INVALID,
               "Continue without the page's cookie (another site)");
        is_str(e.param, "confirm", "param confirm");
        is_int(open_page("slack", state, "x", NULL, o.confirm, &a, &o2, &e), ERR_INVALID,
               "a token that is not the cookie's");
        is_int(open_page("slack", state, o.confirm, NULL, o.confirm, &a, &o2, &e), 0,
               "Continue on the page");
        ok(o2.provider_url && strlen(o2.binding) == INTEG_STATE_LEN &&
               strcmp(o2.binding, binding) != 0,
           "goes on, with a cookie of its own");
        is_int(open_page("slack", state, NULL, binding, NULL, &a, &o, &e), ERR_INVALID,
               "the browser that called connect comes too late");
        is_int(open_page("slack", state, NULL, NULL, NULL, &a, &o, &e), ERR_INVALID,
               "and any other");
        is_int(open_page("slack", state, NULL, o2.binding, NULL, &a, &o, &e), 0,
               "the one that went on may open it again");
        ok(o.provider_url != NULL, "and goes on");
        q.binding = binding;
        is_int(callback("slack", &q, &w, &a, &now, &e), ERR_INVALID,
               "the callback in the browser that called connect");
        ok(start("slack", NULL, &a, state) == 0, "a third connect");
        is_int(open_page("slack", "A0123456789012345678901234567890123456789", NULL, binding, NULL,
                         &a, &o, &e),
               ERR_INVALID, "an unknown state");
        is_str(e.param, "state", "param state");
        is_int(open_page("google_calendar", state, NULL, binding, NULL, &a, &o, &e), ERR_INVALID,
               "another provider's");
        waited_cleanup(&w);
        arena_cleanup(&a);
    }
}

/* GitHub's headers: 'ud' is the X-Hub-Signature-256 value. */
static const char *github_header(void *ud, const char *name)
{
    if (strcmp(name, "X-Hub-Signature-256") == 0)
        return ud;
    if (strcmp(name, "X-GitHub-Event") == 0)
        return "push";
    return strcmp(name, "X-GitHub-Delivery") == 0 ? "d-1" : NULL;
}

static void deliveries(void)
{
    subtest("deliveries")
    {
        const char *body = "{\"ref\":\"main\"}";
        unsigned char mac[CRYPTO_SHA256_LEN];
        char sig[80] = "sha256=";
        const struct integ_provider *gh = integ_provider_find("github");
        struct integ_inbound in;
        struct integ_event ev;
        struct store *s = store_pool_get(pool);
        struct arena a;

        arena_init(&a);
        snprintf(cfg.oauth[3][CONFIG_OAUTH_SIGNING_SECRET], CONFIG_OAUTH_VALUE_MAX, "hook");
        crypto_hmac_sha256("hook", 4, body, strlen(body), mac);
        crypto_hex(mac, sizeof(mac), sig + 7);
        memset(&in, 0, sizeof(in));
        in.body = body;
        in.len = strlen(body);
        in.header = github_header;
        in.header_ud = sig;
        in.now_ms = 1790000000000LL;
        is_int(integ_event_receive(&cfg, s, &tenant, gh, &in, &a, &ev, NULL), 0, "a push");
        ok(ev.name && strcmp(ev.name, "github.push") == 0 && !ev.duplicate, "the first delivery");
        is_int(integ_event_receive(&cfg, s, &tenant, gh, &in, &a, &ev, NULL), 0, "again");
        ok(ev.name && ev.duplicate, "the same delivery is a duplicate");
        in.header_ud = "sha256=00";
        is_int(integ_event_receive(&cfg, s, &tenant, gh, &in, &a, &ev, NULL), ERR_AUTH,
               "a bad signature");
        ok(!ev.name && !ev.duplicate, "is nothing");
        arena_cleanup(&a);
        store_pool_put(pool, s);
    }
}

/* Issue 26: a resend without a delivery id is known by its body for a day; the events URL is
 * rotated; the organization's own secret is sealed and replaces the server's. */
static void inbound(void)
{
    subtest("inbound")
    {
        const char *body = "{\"ref\":\"main\"}";
        const struct integ_provider *gh = integ_provider_find("github");
        const int64_t t0 = 1790000000000LL, hour = 3600LL * 1000;
        unsigned char mac[CRYPTO_SHA256_LEN];
        char sig[80] = "sha256=", old[INTEG_STATE_LEN + 1];
        struct integ_events_view v;
        struct store_tenant found;
        struct integ_inbound in;
        struct integ_event ev;
        struct store *s = store_pool_get(pool);
        struct arena a;
        struct err e;

        arena_init(&a);
        memset(&in, 0, sizeof(in));
        in.body = body;
        in.len = strlen(body);
        in.header = github_header;
        in.header_ud = sig;
        memset(&ev, 0, sizeof(ev));
        ev.name = "github.push";
        ev.id = "body:00";
        ev.by_body = true;
        in.now_ms = t0;
        is_int(integ_event_note(s, &tenant, gh, &in, &ev, NULL), 0, "a body noted");
        ok(!ev.duplicate, "the first time");
        in.now_ms = t0 + 23 * hour;
        is_int(integ_event_note(s, &tenant, gh, &in, &ev, NULL), 0, "23 hours later");
        ok(ev.duplicate, "the same");
        in.now_ms = t0 + 48 * hour;
        is_int(integ_event_note(s, &tenant, gh, &in, &ev, NULL), 0, "a day after that");
        ok(!ev.duplicate, "a new event");
        ev.id = "delivery-7";
        ev.by_body = false;
        in.now_ms = t0;
        integ_event_note(s, &tenant, gh, &in, &ev, NULL);
        in.now_ms = t0 + 6 * 24 * hour;
        is_int(integ_event_note(s, &tenant, gh, &in, &ev, NULL), 0, "a provider's id, 6 days on");
        ok(ev.duplicate, "is still known");

        is_int(integ_events_get(&env, s, &tenant, gh, &a, &v, &e), 0, "the events view");
        snprintf(old, sizeof(old), "%s", strrchr(v.events_url, '/') + 1);
        is_int(store_events_tenant(s, "github", old, &found), 0, "its token names the tenant");
        is_int(store_events_tenant(s, "slack", old, &found), ERR_NOT_FOUND,
               "not at another provider");
        is_int(integ_events_rotate(&env, s, &tenant, gh, &a, &v, &e), 0, "rotated");
        is_int(store_events_tenant(s, "github", old, &found), ERR_NOT_FOUND, "the old is gone");
        is_int(store_events_tenant(s, "github", strrchr(v.events_url, '/') + 1, &found), 0,
               "the new one names it");

        snprintf(cfg.oauth[3][CONFIG_OAUTH_SIGNING_SECRET], CONFIG_OAUTH_VALUE_MAX, "server-one");
        crypto_hmac_sha256("server-one", 10, body, strlen(body), mac);
        crypto_hex(mac, sizeof(mac), sig + 7);
        in.now_ms = t0;
        is_int(integ_event_authenticate(&env, s, &tenant, gh, &in, &a, &e), 0,
               "the server's secret, while it has none of its own");
        is_int(integ_events_secret(&env, s, &tenant, gh, "its-own-secret-0123", &a, &v, &e), 0,
               "its own");
        ok(v.secret_set && strcmp(v.verified_with, "organization") == 0, "said so");
        is_int(integ_event_authenticate(&env, s, &tenant, gh, &in, &a, &e), ERR_AUTH,
               "the server's no longer signs");
        crypto_hmac_sha256("its-own-secret-0123", 19, body, strlen(body), mac);
        crypto_hex(mac, sizeof(mac), sig + 7);
        is_int(integ_event_authenticate(&env, s, &tenant, gh, &in, &a, &e), 0, "its own does");
        is_int(integ_event_authenticate(&env, s, NULL, gh, &in, &a, &e), ERR_AUTH,
               "and only for it");
        is_int(integ_events_secret(&env, s, &tenant, gh, "short", &a, &v, &e), ERR_INVALID,
               "a short secret");
        is_str(e.param, "secret", "param secret");
        is_int(integ_events_secret(&env, s, &tenant, integ_provider_find("slack"),
                                   "x-0123456789abcdef", &a, &v, &e),
               ERR_INVALID, "Slack's is the app's");
        is_int(integ_events_secret(&env, s, &tenant, gh, NULL, &a, &v, &e), 0, "forgotten");
        ok(!v.secret_set && strcmp(v.verified_with, "server") == 0, "the server's again");

        {
            const struct integ_provider *sl = integ_provider_find("slack");
            const char *k1 = integ_account_key(env.key, sl, "T1", &a);
            ok(k1 && strlen(k1) == 64, "a workspace's key: hex HMAC-SHA256");
            is_str(integ_account_key(env.key, sl, "T1", &a), k1, "the same each time");
            ok(strcmp(integ_account_key(env.key, sl, "T2", &a), k1) != 0, "another workspace's");
            ok(strcmp(integ_account_key(env.key, gh, "T1", &a), k1) != 0, "another provider's");
            ok(integ_account_key(env.key, sl, "", &a) == NULL, "none without an id");
        }
        arena_cleanup(&a);
        store_pool_put(pool, s);
    }
}

int main(void)
{
    char dir[] = "/tmp/test_integ_connect.XXXXXX", path[64], *url;
    unsigned char secret[32];
    struct httpc *h = NULL;
    struct store_org org;
    struct store *s;
    struct err e;

    exchange_answers();
    oauth_errors();
    revocations();

    err_clear(&e);
    ok(mkdtemp(dir) != NULL && fake_start() == 0 && httpc_new(&h) == 0, "a fake provider");
    snprintf(path, sizeof(path), "%s/db", dir);
    ok(store_pool_new(path, 2, &pool, &e) == 0, "a database");
    s = store_pool_get(pool);
    ok(store_migrate(s, &e) == 0 && store_org_create(s, "acme", 0, 1000, NULL, 0, &org, &e) == 0,
       "an organization");
    store_pool_put(pool, s);
    snprintf(tenant.org_id, sizeof(tenant.org_id), "%s", org.id);
    tenant.mode = STORE_LIVE;

    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.public_url, sizeof(cfg.public_url), "https://wf.example.com");
    for (int i = 0; i < 4; i += 3) { /* Slack and GitHub */
        snprintf(cfg.oauth[i][CONFIG_OAUTH_CLIENT_ID], CONFIG_OAUTH_VALUE_MAX, "%s",
                 i ? "gh-id" : "sl-id");
        snprintf(cfg.oauth[i][CONFIG_OAUTH_CLIENT_SECRET], CONFIG_OAUTH_VALUE_MAX, "secret");
        url = cfg.oauth[i][CONFIG_OAUTH_TOKEN_URL];
        snprintf(url, CONFIG_OAUTH_VALUE_MAX, "http://127.0.0.1:%d/token", fake.port);
        url = cfg.oauth[i][CONFIG_OAUTH_API_URL];
        snprintf(url, CONFIG_OAUTH_VALUE_MAX, "http://127.0.0.1:%d/api", fake.port);
        url = cfg.oauth[i][CONFIG_OAUTH_REVOKE_URL];
        snprintf(url, CONFIG_OAUTH_VALUE_MAX, "http://127.0.0.1:%d/revoke", fake.port);
    }
    memset(secret, 7, sizeof(secret));
    env.cfg = &cfg;
    env.pool = pool;
    env.httpc = h;
    integ_key(secret, sizeof(secret), env.key);

    snprintf(cfg.oauth_redirect_origins, sizeof(cfg.oauth_redirect_origins),
             "https://app.example,http://127.0.0.1:8080");
    redirects();
    starting();
    bindings();
    refusing();
    exchanging();
    disconnecting();
    deliveries();
    inbound();

    httpc_free(h);
    fake_stop();
    store_pool_free(pool);
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/db%s", dir, (const char *[]){"", "-wal", "-shm"}[i]);
        unlink(path);
    }
    rmdir(dir);
    return done_testing();
}
