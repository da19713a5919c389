/* SPDX-License-Identifier: MIT */
/*
 * providers.c: the provider table (see providers.h). The defaults are the providers' public
 * endpoints, from their own documentation:
 *  - Slack: OAuth v2 (slack.com/oauth/v2/authorize, api/oauth.v2.access), auth.revoke; bot
 *    scopes joined by commas.
 *  - Google Calendar: accounts.google.com/o/oauth2/v2/auth, oauth2.googleapis.com/token and
 *    /revoke; access_type=offline and prompt=consent, or no refresh token is given.
 *  - Outlook: the Microsoft identity platform v2.0 (login.microsoftonline.com/common) and
 *    Microsoft Graph; offline_access for a refresh token; no revocation endpoint for a token.
 *  - GitHub: github.com/login/oauth; a token is revoked by DELETE /applications/{client_id}/token.
 *  - HubSpot: app.hubspot.com/oauth/authorize, api.hubapi.com/oauth/v1/token; a refresh token is
 *    revoked by DELETE /oauth/v1/refresh-tokens/{token}.
 * The account's name: Slack's token answer has the workspace (team.name); the others are asked
 * (GitHub GET /user login, Google's userinfo email, Graph GET /v1.0/me userPrincipalName,
 * HubSpot's token metadata hub_domain).
 */
#include "providers.h"

#include <string.h>

static const char *const ops_slack[] = {"slack.post_message", NULL};
static const char *const ops_google[] = {"google_calendar.create_event", NULL};
static const char *const ops_outlook[] = {"outlook.send_mail", NULL};
static const char *const ops_github[] = {"github.create_issue", NULL};
static const char *const ops_hubspot[] = {"hubspot.create_note", NULL};

static const struct integ_provider providers[INTEG_PROVIDERS] = {
    {"slack", "Slack", "team_chat", 0, "https://slack.com/oauth/v2/authorize",
     "https://slack.com/api/oauth.v2.access", "https://slack.com/api/auth.revoke",
     "https://slack.com/api", "chat:write channels:history", ',', "", INTEG_REVOKE_FORM, ops_slack,
     INTEG_EVENTS_SLACK, NULL, NULL, false},
    {"google_calendar", "Google Calendar", "calendar", 1,
     "https://accounts.google.com/o/oauth2/v2/auth", "https://oauth2.googleapis.com/token",
     "https://oauth2.googleapis.com/revoke", "https://www.googleapis.com",
     "openid email https://www.googleapis.com/auth/calendar.events", ' ',
     "&access_type=offline&prompt=consent", INTEG_REVOKE_FORM, ops_google, INTEG_EVENTS_NONE,
     "/oauth2/v3/userinfo", "email", false},
    {"outlook", "Outlook", "email_calendar", 2,
     "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
     "https://login.microsoftonline.com/common/oauth2/v2.0/token", "",
     "https://graph.microsoft.com", "offline_access User.Read Mail.Send", ' ', "",
     INTEG_REVOKE_NONE, ops_outlook, INTEG_EVENTS_NONE, "/v1.0/me", "userPrincipalName", false},
    {"github", "GitHub", "code_hosting", 3, "https://github.com/login/oauth/authorize",
     "https://github.com/login/oauth/access_token", "https://api.github.com/applications",
     "https://api.github.com", "repo", ' ', "", INTEG_REVOKE_GITHUB, ops_github,
     INTEG_EVENTS_GITHUB, "/user", "login", true},
    {"hubspot", "HubSpot", "crm", 4, "https://app.hubspot.com/oauth/authorize",
     "https://api.hubapi.com/oauth/v1/token", "https://api.hubapi.com/oauth/v1/refresh-tokens",
     "https://api.hubapi.com", "crm.objects.contacts.read crm.objects.contacts.write", ' ', "",
     INTEG_REVOKE_HUBSPOT, ops_hubspot, INTEG_EVENTS_NONE, "/oauth/v1/access-tokens/{token}",
     "hub_domain", false},
};

/* See providers.h. */
const struct integ_provider *integ_provider_find(const char *id)
{
    for (size_t i = 0; id && i < INTEG_PROVIDERS; i++) {
        if (strcmp(providers[i].id, id) == 0)
            return &providers[i];
    }
    return NULL;
}

/* See providers.h. */
const struct integ_provider *integ_provider_at(size_t i)
{
    return i < INTEG_PROVIDERS ? &providers[i] : NULL;
}

/* See providers.h. */
const char *integ_setting(const struct config *c, const struct integ_provider *p,
                          enum config_oauth_field f)
{
    const char *v = c->oauth[p->config_index][f];
    if (*v)
        return v;
    switch (f) {
    case CONFIG_OAUTH_AUTH_URL:
        return p->auth_url;
    case CONFIG_OAUTH_TOKEN_URL:
        return p->token_url;
    case CONFIG_OAUTH_REVOKE_URL:
        return p->revoke_url;
    case CONFIG_OAUTH_API_URL:
        return p->api_url;
    case CONFIG_OAUTH_SCOPES:
        return p->scopes;
    default:
        return "";
    }
}

/* See providers.h. */
bool integ_configured(const struct config *c, const struct integ_provider *p)
{
    return *integ_setting(c, p, CONFIG_OAUTH_CLIENT_ID) &&
           *integ_setting(c, p, CONFIG_OAUTH_CLIENT_SECRET);
}

/* See providers.h. Checked before a URL is built from a value that a template, a provider or an
 * operator gave, so that nothing is sent to a path other than the operation's. */
bool integ_segment_ok(const char *s, size_t max, const char *extra)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > max || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        bool alnum =
            (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9');
        if (*c < 0x20 || *c == 0x7f || (extra && !alnum && !strchr(extra, *c)))
            return false;
    }
    return true;
}
