/* SPDX-License-Identifier: MIT */
/*
 * connection: a tenant's connection to a provider from start to end (contract §13). What it
 * looks like now (view.c); the authorization started, and the callback that takes the state,
 * exchanges the code at the provider, asks for the account's name and stores the whole
 * connection (connect.c); the disconnection that forgets the tokens and asks the provider to
 * revoke them (revoke.c).
 *
 * The API's handlers parse a request, call one of these and render what it returns: nothing
 * here knows an HTTP request or an error body. The exchange runs on the outbound HTTP client
 * (httpc) and ends through a struct integ_waiter, which the caller supplies.
 */
#ifndef WORKFORCE_INTEGRATIONS_CONNECTION_H
#define WORKFORCE_INTEGRATIONS_CONNECTION_H

#include "oauth.h"
#include "operations.h"
#include "providers.h"

#include "../core/err.h"
#include "../core/mem.h"
#include "../store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct httpc_request;

/* ---- What a connection looks like (view.c) ---- */

/* The tenant's connection to one provider as the API shows it; strings live in the arena. */
struct integ_view {
    const struct integ_provider *p;
    const char *status;     /* available | pending | connected | error */
    bool configured;        /* the operator set the provider's client credentials */
    const char *account;    /* the account's name; NULL: unknown */
    const char *scopes;     /* the granted scopes as compact JSON text; NULL: none known */
    int64_t connected_at;   /* milliseconds; 0: not connected */
    int64_t expires_at;     /* milliseconds; 0: not said */
    const char *error;      /* the last failure's code, or NULL */
    const char *events_url; /* where the provider sends events; NULL: it sends none */
};

/* The tenant's view of 'p' (its events token made the first time it is asked for). */
int integ_view_get(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                   const struct integ_provider *p, struct arena *a, struct integ_view *out,
                   struct err *e);
/* The tenant's views of the five providers, in the contract's order. */
int integ_view_list(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                    struct arena *a, struct integ_view out[INTEG_PROVIDERS], struct err *e);

/* ---- Connecting (connect.c) ---- */

/* The cookies that bind a connection to the browser that started it (connect.c, DESIGN). */
#define INTEG_COOKIE_BINDING "workforce_oauth"
#define INTEG_COOKIE_CONFIRM "workforce_oauth_confirm"

/* Where to send the user to authorize a connection. */
struct integ_authorization {
    const char *url; /* this server's start page (arena), which goes on to the provider */
    char state[INTEG_STATE_LEN + 1];
    char binding[INTEG_STATE_LEN + 1]; /* the cookie of the browser the connection is bound to */
    int64_t expires_at;                /* milliseconds: the state's end */
};

/* Start connecting the tenant to 'p'; 'scopes' NULL: the configured or default ones. */
int integ_connect_start(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                        const struct integ_provider *p, const char *redirect_uri,
                        const char *const *scopes, size_t nscopes, struct arena *a,
                        struct integ_authorization *out, struct err *e);

/* A browser at the start page of a connect (each NULL when absent). */
struct integ_open {
    const char *state;
    const char *confirm;        /* the page's Continue: its confirmation token */
    const char *binding;        /* the browser's INTEG_COOKIE_BINDING */
    const char *confirm_cookie; /* the browser's INTEG_COOKIE_CONFIRM */
};

/* What the start page does. */
struct integ_opened {
    const char *provider_url; /* go on there; NULL: show whose connection it is, to confirm */
    char binding[INTEG_STATE_LEN + 1]; /* not empty: the browser's new INTEG_COOKIE_BINDING */
    const char *org;                   /* the page: the organization's slug, */
    enum store_mode mode;              /* its mode, */
    char confirm[INTEG_STATE_LEN + 1]; /* and the confirmation token (INTEG_COOKIE_CONFIRM) */
};

/* A browser opens the start page of a connect of 'p': go on to the provider, or confirm. */
int integ_connect_open(const struct integ_env *env, struct store *s, const struct integ_provider *p,
                       const struct integ_open *q, struct arena *a, struct integ_opened *out,
                       struct err *e);

/* What the provider's redirect to the callback carries (each NULL when absent). */
struct integ_callback {
    const char *state;
    const char *code;
    const char *error;   /* the provider's OAuth error ("access_denied") */
    const char *binding; /* the browser's INTEG_COOKIE_BINDING */
};

/* How a callback ended, for the user. */
struct integ_outcome {
    const struct integ_provider *p;
    const char *redirect_uri; /* where the user goes back; NULL: a page, or 'err' */
    const char *error;        /* NULL: connected; else the code the user goes back with */
    struct err err;           /* with 'error': the failure as an API error */
    bool pending;             /* integ_connect_finish(): the outcome comes through the waiter */
};

/* How the end of an exchange reaches the caller of integ_connect_finish(). */
struct integ_waiter {
    /* Called once on the calling thread, just before the exchange starts: from then on 'done'
     * may run on another thread, even before integ_connect_finish() returns. */
    void (*defer)(void *ud);
    /* Called once with the exchange's outcome ('o' is valid during the call only). */
    void (*done)(void *ud, const struct integ_outcome *o);
    void *ud;
};

/* Take the callback 'q' of 'p': the outcome now, or an exchange under way ('w'). */
int integ_connect_finish(const struct integ_env *env, struct store *s,
                         const struct integ_provider *p, const struct integ_callback *q,
                         const struct integ_waiter *w, struct arena *a, struct integ_outcome *out,
                         struct err *e);

/* What a transfer to the provider brought back. */
struct integ_answer {
    int rc;          /* httpc's: 0 when the answer is whole */
    long status;     /* HTTP status; 0: none */
    const char *why; /* httpc's reason when 'rc' (NULL: none given) */
    bool too_big;    /* the body passed INTEG_TOKEN_RESPONSE_MAX and was cut */
    const char *body;
    size_t len;
};

/* Read the token endpoint's 'ans': 0 with '*out', or ERR_UPSTREAM with 'code' and 'why'. */
int integ_exchange_read(const struct integ_answer *ans, struct arena *a, struct integ_token *out,
                        char *code, size_t code_n, char *why, size_t why_n);
/* The account's name in the answer 'ans' of the account lookup of 'p' ('a'), or NULL. */
const char *integ_account_read(const struct integ_provider *p, const struct integ_answer *ans,
                               struct arena *a);
/* The URL of the account lookup of 'p' for 'access_token' ('a'). */
const char *integ_account_url(const struct config *c, const struct integ_provider *p,
                              const char *access_token, struct arena *a);
/* An OAuth error code as the user gets it back: [a-z_] only, at most 'n' - 1 characters. */
void integ_oauth_error_clean(const char *error, char *out, size_t n);

/* ---- Disconnecting (revoke.c) ---- */

/* Forget the tenant's tokens for 'p' and have them revoked in the background; '*out' is the
 * view after (available). */
int integ_disconnect(const struct integ_env *env, struct store *s, const struct store_tenant *t,
                     const struct integ_provider *p, struct arena *a, struct integ_view *out,
                     struct err *e);
/* The request asking 'p' to revoke 'token' of kind 'hint' (strings in 'a'). */
int integ_revoke_request(const struct config *c, const struct integ_provider *p, const char *token,
                         const char *hint, struct arena *a, struct httpc_request *out);

#endif
