/* SPDX-License-Identifier: MIT */
/*
 * password.c: people's passwords (contract §20) as argon2id encodings (libargon2, the only
 * user of <argon2.h>), and the opaque tokens of sessions and set-password links.
 *
 * The cost is OWASP's first argon2id choice (19 MiB, 2 passes, 1 lane): about 30 ms here, so
 * a sign-in is cheap for a person and costly for a guesser. A password is checked for length
 * only (12 to 256 bytes, contract §20); what it is made of is the person's choice.
 */
#include "auth.h"

#include "../core/crypto.h"

#include <argon2.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define T_COST 2
#define M_COST (19 * 1024) /* KiB */
#define LANES 1
#define SALT_LEN 16
#define HASH_LEN 32

/* See auth.h. */
int auth_password_check(const char *pw, struct err *e)
{
    size_t n = strlen(pw);
    if (n < AUTH_PASSWORD_MIN)
        return err_set(e, ERR_INVALID, "invalid_request", "password",
                       "The password must be at least 12 characters long.");
    if (n > AUTH_PASSWORD_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", "password",
                       "The password must be at most 256 bytes long.");
    return 0;
}

/* See auth.h. */
int auth_password_hash(const char *pw, char out[AUTH_PASSWORD_ENCODED_MAX])
{
    unsigned char salt[SALT_LEN];
    int rc = crypto_random(salt, sizeof(salt));

    if (rc)
        return rc;
    rc = argon2id_hash_encoded(T_COST, M_COST, LANES, pw, strlen(pw), salt, sizeof(salt), HASH_LEN,
                               out, AUTH_PASSWORD_ENCODED_MAX);
    return rc == ARGON2_OK ? 0 : ERR_INTERNAL;
}

/* A valid encoding of a password no one knows, checked when no user matched, so that a sign-in
 * takes as long whether or not the email exists. Made once, at the first use. */
static char decoy_enc[AUTH_PASSWORD_ENCODED_MAX];
static pthread_once_t decoy_once = PTHREAD_ONCE_INIT;

static void decoy_make(void)
{
    static const unsigned char salt[SALT_LEN] = "workforce-decoy";
    if (argon2id_hash_encoded(T_COST, M_COST, LANES, "decoy", 5, salt, sizeof(salt), HASH_LEN,
                              decoy_enc, sizeof(decoy_enc)) != ARGON2_OK)
        decoy_enc[0] = '\0';
}

static const char *decoy(void)
{
    pthread_once(&decoy_once, decoy_make);
    return decoy_enc;
}

/* See auth.h. */
bool auth_password_verify(const char *encoded, const char *pw)
{
    if (!encoded || strncmp(encoded, "$argon2id$", 10) != 0) {
        const char *d = decoy();
        if (d[0])
            (void)argon2id_verify(d, pw, strlen(pw));
        return false;
    }
    return argon2id_verify(encoded, pw, strlen(pw)) == ARGON2_OK;
}

/* See auth.h. */
int auth_token_new(const char *prefix, char *out, size_t n)
{
    unsigned char raw[AUTH_TOKEN_RANDOM];
    char text[AUTH_TOKEN_RANDOM * 2];
    int rc = crypto_random(raw, sizeof(raw));

    if (rc)
        return rc;
    crypto_base64url(raw, sizeof(raw), text);
    if ((size_t)snprintf(out, n, "%s%s", prefix, text) >= n)
        return ERR_INTERNAL;
    return 0;
}
