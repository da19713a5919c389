/* SPDX-License-Identifier: MIT */
/*
 * scopes.c: the scope names of contract §3 and their bits.
 */
#include "auth.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    uint32_t bit;
} scopes[] = {
    {"employees:read", AUTH_SCOPE_EMPLOYEES_READ},
    {"employees:write", AUTH_SCOPE_EMPLOYEES_WRITE},
    {"chat", AUTH_SCOPE_CHAT},
    {"conversations", AUTH_SCOPE_CONVERSATIONS},
    {"tasks", AUTH_SCOPE_TASKS},
    {"knowledge", AUTH_SCOPE_KNOWLEDGE},
    {"workflows", AUTH_SCOPE_WORKFLOWS},
    {"integrations", AUTH_SCOPE_INTEGRATIONS},
    {"webhooks", AUTH_SCOPE_WEBHOOKS},
    {"tools", AUTH_SCOPE_TOOLS},
    {"approvals", AUTH_SCOPE_APPROVALS},
    {"audit", AUTH_SCOPE_AUDIT},
    {"billing", AUTH_SCOPE_BILLING},
};

#define NSCOPES (sizeof(scopes) / sizeof(scopes[0]))

/* Parse a comma-separated scope list ("" is full access) into bits. */
int auth_scopes_parse(const char *s, uint32_t *out, struct err *e)
{
    uint32_t bits = 0;

    while (*s) {
        size_t n = strcspn(s, ",");
        size_t i;
        for (i = 0; i < NSCOPES; i++) {
            if (strlen(scopes[i].name) == n && strncmp(s, scopes[i].name, n) == 0)
                break;
        }
        if (i == NSCOPES)
            return err_set(e, ERR_INVALID, "invalid_request", "scopes",
                           "unknown scope '%.*s' (known: employees:read, employees:write, chat, "
                           "conversations, tasks, knowledge, workflows, integrations, webhooks, "
                           "tools, approvals, audit, billing)",
                           (int)(n > 40 ? 40 : n), s);
        bits |= scopes[i].bit;
        s += n;
        if (*s == ',') {
            s++;
            if (!*s)
                return err_set(e, ERR_INVALID, "invalid_request", "scopes", "trailing comma");
        }
    }
    *out = bits;
    return 0;
}

/* Name of the single scope bit 'bit', or "" when unknown. */
const char *auth_scope_name(uint32_t bit)
{
    for (size_t i = 0; i < NSCOPES; i++) {
        if (scopes[i].bit == bit)
            return scopes[i].name;
    }
    return "";
}

/* A key with scopes 'have' (0 = unrestricted) may do what needs 'need' (0 = any key). */
bool auth_scope_allows(uint32_t have, uint32_t need)
{
    return have == 0 || need == 0 || (have & need) == need;
}

/* A key with scopes 'have' (0 = unrestricted) may do what any one scope of 'need' allows. */
bool auth_scope_allows_any(uint32_t have, uint32_t need)
{
    return have == 0 || need == 0 || (have & need) != 0;
}

/* See auth.h. */
void auth_scopes_text(uint32_t bits, char *out, size_t n)
{
    size_t used = 0;
    if (n)
        out[0] = '\0';
    for (size_t i = 0; i < NSCOPES && used < n; i++) {
        if (bits & scopes[i].bit) {
            int w = snprintf(out + used, n - used, "%s%s", used ? "," : "", scopes[i].name);
            used += w > 0 ? (size_t)w : 0;
        }
    }
}
