/* SPDX-License-Identifier: MIT */
/*
 * auth: API keys and scopes. A secret key is "svc_live_sk_" or "svc_test_sk_" and 40 base62
 * characters; only its HMAC-SHA256 under the server secret is stored. Scopes are a bit set;
 * an empty set means full access.
 */
#ifndef WORKFORCE_AUTH_H
#define WORKFORCE_AUTH_H

#include "../core/err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AUTH_KEY_RANDOM 40
#define AUTH_KEY_MAX 64 /* buffer that holds any key we make */
#define AUTH_SECRET_LEN 32

enum auth_scope {
    AUTH_SCOPE_NONE = 0,
    AUTH_SCOPE_EMPLOYEES_READ = 1 << 0,
    AUTH_SCOPE_EMPLOYEES_WRITE = 1 << 1,
    AUTH_SCOPE_CHAT = 1 << 2,
    AUTH_SCOPE_CONVERSATIONS = 1 << 3,
    AUTH_SCOPE_TASKS = 1 << 4,
    AUTH_SCOPE_KNOWLEDGE = 1 << 5,
    AUTH_SCOPE_WORKFLOWS = 1 << 6,
    AUTH_SCOPE_INTEGRATIONS = 1 << 7,
    AUTH_SCOPE_WEBHOOKS = 1 << 8,
    AUTH_SCOPE_TOOLS = 1 << 9,      /* §19: the tools and MCP servers */
    AUTH_SCOPE_APPROVALS = 1 << 10, /* §19: deciding approvals (must be named explicitly) */
    AUTH_SCOPE_AUDIT = 1 << 11,     /* §20: reading the audit log (must be named explicitly) */
    AUTH_SCOPE_BILLING = 1 << 12    /* §21: packs, the ledger; buying needs it named explicitly */
};

/* Parse "Bearer <key>" into the key and its mode (0 live, 1 test); 0 or ERR_AUTH. */
int auth_bearer_parse(const char *header, const char **key, size_t *keylen, int *mode);
/* True when 'key' has the form of a secret key; '*mode' gets 0 (live) or 1 (test). */
bool auth_key_wellformed(const char *key, size_t len, int *mode);
/* Make a new secret for 'mode' into 'out' (AUTH_KEY_MAX bytes). */
int auth_key_generate(int mode, char out[AUTH_KEY_MAX]);
/* Keyed hash of 'key' under the server 'secret'. */
int auth_key_hash(const unsigned char secret[AUTH_SECRET_LEN], const char *key, size_t len,
                  unsigned char out[32]);
/* Load the server secret from 'path', creating it (mode 0600) when absent. */
int auth_secret_load(const char *path, unsigned char out[AUTH_SECRET_LEN], struct err *e);

/* ---- People's passwords and tokens (password.c, contract §20) ---- */
#define AUTH_PASSWORD_MIN 12
#define AUTH_PASSWORD_MAX 256
#define AUTH_PASSWORD_ENCODED_MAX 128
#define AUTH_TOKEN_RANDOM 32 /* random bytes of a session or set-password token */
#define AUTH_TOKEN_MAX 64    /* a prefix of up to 8 bytes, 43 base64url characters, NUL */
/* 0, or 400 naming "password" when it is shorter than 12 or longer than 256 bytes. */
int auth_password_check(const char *pw, struct err *e);
/* The argon2id encoding of 'pw' with a new salt; 0 or ERR_INTERNAL. */
int auth_password_hash(const char *pw, char out[AUTH_PASSWORD_ENCODED_MAX]);
/* True when 'pw' is the password of 'encoded'. With 'encoded' NULL (no such user, no password
 * set) it still does the work of a check and answers false. */
bool auth_password_verify(const char *encoded, const char *pw);
/* A new token: 'prefix' then 43 base64url characters of 32 random bytes, into 'out'. */
int auth_token_new(const char *prefix, char *out, size_t n);

/* "employees:read,chat" -> bits; 0 or ERR_INVALID naming the bad scope in e->msg. */
int auth_scopes_parse(const char *s, uint32_t *out, struct err *e);
const char *auth_scope_name(uint32_t bit); /* one bit -> "chat" */
/* The names of every scope bit of 'bits', comma-separated, into 'out' (0 gives ""). */
void auth_scopes_text(uint32_t bits, char *out, size_t n);
/* True when 'have' (0 = all) grants 'need' (0 = nothing needed). */
bool auth_scope_allows(uint32_t have, uint32_t need);
/* True when 'have' (0 = all) grants at least one of the scopes of 'need' (0 = nothing needed). */
bool auth_scope_allows_any(uint32_t have, uint32_t need);

#endif
