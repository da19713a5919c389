/* SPDX-License-Identifier: MIT */
/*
 * providers: the five providers of contract §13 in one table: name, category, the real OAuth
 * and API endpoints and default scopes (each overridable by WORKFORCE_OAUTH_<PROVIDER>_*), how
 * each wants its token request and revocation, and the workflow operations it offers.
 */
#ifndef WORKFORCE_INTEGRATIONS_PROVIDERS_H
#define WORKFORCE_INTEGRATIONS_PROVIDERS_H

#include "../core/config.h"

#include <stdbool.h>
#include <stddef.h>

#define INTEG_PROVIDERS CONFIG_OAUTH_PROVIDERS

/* How a provider takes the revocation of a token. */
enum integ_revoke {
    INTEG_REVOKE_NONE,    /* no endpoint: the tokens are only forgotten */
    INTEG_REVOKE_FORM,    /* POST token=<token> (RFC 7009; Google, Slack auth.revoke) */
    INTEG_REVOKE_GITHUB,  /* DELETE {url} with basic client auth, {"access_token": ...} */
    INTEG_REVOKE_HUBSPOT, /* DELETE {url}/<refresh token> */
};

/* Which inbound events a provider sends that can be verified (contract §13). */
enum integ_events {
    INTEG_EVENTS_NONE,   /* not signed in a way the server can check: no events URL */
    INTEG_EVENTS_SLACK,  /* X-Slack-Signature v0 */
    INTEG_EVENTS_GITHUB, /* X-Hub-Signature-256 */
};

struct integ_provider {
    const char *id;       /* "slack": the path segment and the API's name */
    const char *name;     /* "Slack" */
    const char *category; /* "team_chat" */
    int config_index;     /* into config.oauth */
    const char *auth_url, *token_url, *revoke_url, *api_url; /* defaults */
    const char *scopes;                                      /* default, space separated */
    char scope_sep;                /* how the provider joins scopes in the URL */
    const char *extra_auth_params; /* appended to the authorization URL ("" none) */
    enum integ_revoke revoke;
    const char *const *operations; /* workflow actions, NULL-terminated */
    enum integ_events events;
    /* Where the account's name is asked for when the token answer does not tell it: a path
     * under the API URL ("{token}" replaced by the access token) and the member naming it. */
    const char *whoami_path, *whoami_field;
    /* Whether an organization may set its own signing secret for its events (GitHub's webhook
     * secret is chosen for each repository; Slack signs with its app's, the server's). */
    bool own_secret;
};

/* The provider named 'id', or NULL. */
const struct integ_provider *integ_provider_find(const char *id);
/* The i-th provider (0 <= i < INTEG_PROVIDERS), in the contract's order. */
const struct integ_provider *integ_provider_at(size_t i);

/* A provider's setting: the WORKFORCE_OAUTH_<PROVIDER>_<FIELD> value, else the default ("" for
 * the client credentials and signing secret, which have none). */
const char *integ_setting(const struct config *c, const struct integ_provider *p,
                          enum config_oauth_field f);
/* Whether its client id and secret are set. */
bool integ_configured(const struct config *c, const struct integ_provider *p);

/* Whether 's' may be one segment of a URL path at a provider: 1 to 'max' bytes, none a control
 * character, and not "." or ".." (which a URL resolves to another path). 'extra' NULL: any other
 * byte may follow (the caller percent-encodes it); else only letters, digits and 'extra'. */
bool integ_segment_ok(const char *s, size_t max, const char *extra);

#endif
