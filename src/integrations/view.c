/* SPDX-License-Identifier: MIT */
/*
 * view.c: a tenant's connection to each provider as the API shows it (see connection.h).
 * The stored row says connected or error; no row is available, or pending while an
 * authorization is under way; what the provider gave (account, scopes, expiry) is opened from
 * the sealed secrets, of which nothing else leaves this file. The inbound events URL carries
 * the tenant's events token, made the first time a view is asked for.
 */
#include "connection.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The tenant's events token, made the first time it is asked for. */
static int events_token(struct store *s, const struct store_tenant *t, struct arena *a,
                        const char **token, struct err *e)
{
    char fresh[INTEG_STATE_LEN + 1];
    if (id_base62(fresh, INTEG_STATE_LEN))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    if (store_events_token(s, t, fresh, a, token))
        return err_set(e, ERR_STORE, "internal_error", NULL, "events token failed");
    return 0;
}

/* The tenant's inbound events URL for 'p' ({public_url}/v1/integrations/{p}/events/<token>). */
static const char *events_url(const struct config *c, const struct integ_provider *p,
                              const char *token, struct arena *a)
{
    const char *base = c->public_url;
    size_t n = strlen(base);
    struct buf b;
    const char *url;
    buf_init(&b, 4096);
    buf_append(&b, base, n > 0 && base[n - 1] == '/' ? n - 1 : n);
    buf_appendf(&b, "/v1/integrations/%s/events/%s", p->id, token);
    url = arena_strdup(a, buf_ptr(&b));
    buf_cleanup(&b);
    return url;
}

/* Fill what the sealed secrets 'sec' (NULL: none) tell of the connection. */
static void view_secrets(struct integ_view *v, const json_t *sec, struct arena *a)
{
    const json_t *scopes = json_object_get(sec, "scopes");
    const json_t *exp = json_object_get(sec, "expires_at");
    const char *account = json_string_value(json_object_get(sec, "account"));

    if (json_is_array(scopes)) {
        char *text = json_dumps(scopes, JSON_COMPACT);
        v->scopes = text ? arena_strdup(a, text) : NULL;
        free(text);
    }
    v->expires_at = json_is_integer(exp) ? json_integer_value(exp) : 0;
    v->account = account ? arena_strdup(a, account) : NULL;
}

/* Read the tenant's connection to 'p' into '*v'; 'token' is the tenant's events token. */
static int view_read(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                     const struct integ_provider *p, const char *token, struct arena *a,
                     struct integ_view *v, struct err *e)
{
    struct store_integration row;
    json_t *sec = NULL;
    bool pending = false;
    int rc = store_integration_get(s, t, p->id, a, &row);

    if (rc && rc != ERR_NOT_FOUND)
        return err_set(e, rc, "internal_error", NULL, "integration read failed");
    if (rc == ERR_NOT_FOUND && store_oauth_state_open(s, t, p->id, clock_now_ms(), &pending))
        return err_set(e, ERR_STORE, "internal_error", NULL, "state read failed");
    if (!rc && row.secrets) {
        const char *text =
            integ_open(env->key, t, p->id, "secrets", row.secrets, row.secrets_len, a);
        sec = text ? json_loads(text, 0, NULL) : NULL;
    }
    memset(v, 0, sizeof(*v));
    v->p = p;
    v->status = !rc ? row.status : pending ? "pending" : "available";
    v->configured = integ_configured(env->cfg, p);
    view_secrets(v, sec, a);
    v->connected_at = rc ? 0 : row.connected_at;
    v->error = rc ? NULL : row.error;
    v->events_url =
        token && p->events != INTEG_EVENTS_NONE ? events_url(env->cfg, p, token, a) : NULL;
    json_decref(sec);
    return 0;
}

/*
 * See connection.h. 'env' gives the configuration and the sealing key, 's' the tenant's store
 * handle; the strings of '*out' live in 'a'. 0, or an error in 'e': ERR_STORE or the store's
 * code (the database failed), ERR_INTERNAL (no random bytes for a new events token).
 */
int integ_view_get(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                   const struct integ_provider *p, struct arena *a, struct integ_view *out,
                   struct err *e)
{
    const char *token = NULL;
    int rc = events_token(s, t, a, &token, e);
    return rc ? rc : view_read(env, s, t, p, token, a, out, e);
}

/* See connection.h: integ_view_get() of each provider in turn; the same errors. */
int integ_view_list(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                    struct arena *a, struct integ_view out[INTEG_PROVIDERS], struct err *e)
{
    const char *token = NULL;
    int rc = events_token(s, t, a, &token, e);
    for (size_t i = 0; i < INTEG_PROVIDERS && !rc; i++)
        rc = view_read(env, s, t, integ_provider_at(i), token, a, &out[i], e);
    return rc;
}
