/* SPDX-License-Identifier: MIT */
/*
 * view.c: a tenant's connection to each provider as the API shows it (see connection.h).
 * The stored row says connected or error; no row is available, or pending while an
 * authorization is under way; what the provider gave (account, scopes, expiry) is opened from
 * the sealed secrets, of which nothing else leaves this file. The inbound events URL carries
 * the tenant's events token of that provider, made the first time a view is asked for.
 */
#include "connection.h"
#include "inbound.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The tenant's events URL of 'p' (its token made the first time it is asked for), or NULL
 * when 'p' sends no events the server can verify. */
static int events_url(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                      const struct integ_provider *p, struct arena *a, const char **url,
                      struct err *e)
{
    char fresh[INTEG_STATE_LEN + 1];
    struct store_inbound row;

    *url = NULL;
    if (p->events == INTEG_EVENTS_NONE)
        return 0;
    if (id_base62(fresh, INTEG_STATE_LEN))
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no random bytes");
    if (store_inbound_get(s, t, p->id, fresh, a, &row))
        return err_set(e, ERR_STORE, "internal_error", NULL, "events token failed");
    *url = integ_events_url(env->cfg, p, row.token, a);
    return 0;
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

/* Read the tenant's connection to 'p' into '*v'. */
static int view_read(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                     const struct integ_provider *p, struct arena *a, struct integ_view *v,
                     struct err *e)
{
    struct store_integration row;
    json_t *sec = NULL;
    bool pending = false;
    const char *url = NULL;
    int rc = events_url(env, s, t, p, a, &url, e);

    if (rc)
        return rc;
    rc = store_integration_get(s, t, p->id, a, &row);
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
    v->events_url = url;
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
    return view_read(env, s, t, p, a, out, e);
}

/* See connection.h: integ_view_get() of each provider in turn; the same errors. */
int integ_view_list(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                    struct arena *a, struct integ_view out[INTEG_PROVIDERS], struct err *e)
{
    int rc = 0;
    for (size_t i = 0; i < INTEG_PROVIDERS && !rc; i++)
        rc = view_read(env, s, t, integ_provider_at(i), a, &out[i], e);
    return rc;
}
