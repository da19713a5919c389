/* SPDX-License-Identifier: MIT */
/* Unit tests of auth/: key form, Bearer parsing, hashing, the secret file, scopes. */
#include "../../src/auth/auth.h"
#include "t.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void)
{
    char key[AUTH_KEY_MAX], hdr[128];
    const char *k;
    size_t kl;
    int mode = -1;
    unsigned char s1[AUTH_SECRET_LEN], s2[AUTH_SECRET_LEN], h1[32], h2[32];
    char dir[] = "/tmp/workforce-auth-XXXXXX";
    char path[128];
    struct stat st;
    uint32_t bits = 0;
    struct err e;

    subtest("keys")
    {
        ok(auth_key_generate(1, key) == 0 && strncmp(key, "svc_test_sk_", 12) == 0 &&
               strlen(key) == 12 + AUTH_KEY_RANDOM,
           "test key form");
        ok(auth_key_wellformed(key, strlen(key), &mode) && mode == 1, "well-formed, test mode");
        snprintf(hdr, sizeof(hdr), "Bearer %s", key);
        ok(auth_bearer_parse(hdr, &k, &kl, &mode) == 0 && kl == strlen(key), "Bearer parsed");
        snprintf(hdr, sizeof(hdr), "bearer %s", key);
        ok(auth_bearer_parse(hdr, &k, &kl, &mode) == 0, "scheme is case-insensitive");
        snprintf(hdr, sizeof(hdr), "Basic %s", key);
        ok(auth_bearer_parse(hdr, &k, &kl, &mode) != 0, "Basic refused");
        ok(auth_bearer_parse("Bearer svc_live_sk_short", &k, &kl, &mode) != 0, "short refused");
        ok(auth_bearer_parse("Bearer sk_live_0123456789012345678901234567890123456789", &k, &kl,
                             &mode) != 0,
           "foreign prefix refused");
        snprintf(hdr, sizeof(hdr), "Bearer %s ", key);
        ok(auth_bearer_parse(hdr, &k, &kl, &mode) != 0, "trailing space refused");
        ok(auth_bearer_parse("Bearer ", &k, &kl, &mode) != 0, "empty key refused");
    }
    subtest("secret and hash")
    {
        ok(mkdtemp(dir) != NULL, "temp dir");
        snprintf(path, sizeof(path), "%s/server.secret", dir);
        err_clear(&e);
        ok(auth_secret_load(path, s1, &e) == 0, "secret created");
        ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600, "secret file mode 0600");
        ok(auth_secret_load(path, s2, &e) == 0 && memcmp(s1, s2, sizeof(s1)) == 0,
           "secret read back the same");
        auth_key_hash(s1, key, strlen(key), h1);
        auth_key_hash(s2, key, strlen(key), h2);
        ok(memcmp(h1, h2, 32) == 0, "hash is deterministic under one secret");
        s2[0] ^= 1;
        auth_key_hash(s2, key, strlen(key), h2);
        ok(memcmp(h1, h2, 32) != 0, "hash depends on the secret");
        unlink(path);
        rmdir(dir);
    }
    subtest("scopes")
    {
        ok(auth_scopes_parse("employees:read,chat", &bits, &e) == 0 &&
               bits == (AUTH_SCOPE_EMPLOYEES_READ | AUTH_SCOPE_CHAT),
           "two scopes");
        ok(auth_scopes_parse("", &bits, &e) == 0 && bits == 0, "empty is full access");
        ok(auth_scopes_parse("chat,admin", &bits, &e) != 0 && strstr(e.msg, "admin"),
           "unknown scope named");
        ok(auth_scopes_parse("chat,", &bits, &e) != 0, "trailing comma refused");
        ok(auth_scope_allows(0, AUTH_SCOPE_TASKS), "no scopes: full access");
        ok(!auth_scope_allows(AUTH_SCOPE_CHAT, AUTH_SCOPE_TASKS), "out of scope");
        ok(auth_scope_allows(AUTH_SCOPE_CHAT, 0), "routes without scope allow any key");
        is_str(auth_scope_name(AUTH_SCOPE_EMPLOYEES_WRITE), "employees:write", "scope name");
        ok(auth_scopes_parse("audit", &bits, &e) == 0 && bits == AUTH_SCOPE_AUDIT, "audit");
        {
            char text[256];
            auth_scopes_text(AUTH_SCOPE_CHAT | AUTH_SCOPE_AUDIT | AUTH_SCOPE_TASKS, text,
                             sizeof(text));
            is_str(text, "chat,tasks,audit", "scope bits back to text, in table order");
            auth_scopes_text(0, text, sizeof(text));
            is_str(text, "", "no bits: no text");
        }
    }
    subtest("passwords and tokens")
    {
        char enc[AUTH_PASSWORD_ENCODED_MAX], enc2[AUTH_PASSWORD_ENCODED_MAX];
        char t1[AUTH_TOKEN_MAX], t2[AUTH_TOKEN_MAX];

        ok(auth_password_check("eleven char", &e) == ERR_INVALID &&
               strcmp(e.param, "password") == 0,
           "11 characters refused, naming password");
        ok(auth_password_check("twelve chars", &e) == 0, "12 accepted");
        {
            char big[AUTH_PASSWORD_MAX + 2];
            memset(big, 'x', sizeof(big) - 1);
            big[sizeof(big) - 1] = '\0';
            ok(auth_password_check(big, &e) == ERR_INVALID, "257 bytes refused");
            big[AUTH_PASSWORD_MAX] = '\0';
            ok(auth_password_check(big, &e) == 0, "256 bytes accepted");
        }
        ok(auth_password_hash("correct horse battery", enc) == 0, "hashed");
        ok(strncmp(enc, "$argon2id$v=19$m=19456,t=2,p=1$", 31) == 0, "argon2id, 19 MiB, 2 passes");
        ok(strstr(enc, "correct") == NULL, "the password is not in its encoding");
        ok(auth_password_verify(enc, "correct horse battery"), "the right password");
        ok(!auth_password_verify(enc, "correct horse batterY"), "a wrong one");
        ok(!auth_password_verify(NULL, "correct horse battery"), "no encoding: never");
        ok(!auth_password_verify("$2b$10$notargon", "x"), "another scheme: never");
        ok(auth_password_hash("correct horse battery", enc2) == 0 && strcmp(enc, enc2) != 0,
           "a new salt each time");
        ok(auth_token_new("wfs_", t1, sizeof(t1)) == 0 &&
               auth_token_new("wfs_", t2, sizeof(t2)) == 0,
           "tokens made");
        is_int(strlen(t1), 4 + 43, "prefix and 43 base64url characters");
        ok(strncmp(t1, "wfs_", 4) == 0 && strspn(t1 + 4, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl"
                                                         "mnopqrstuvwxyz0123456789-_") == 43,
           "base64url");
        ok(strcmp(t1, t2) != 0, "two tokens differ");
        ok(auth_token_new("wfs_", t1, 20) != 0, "a buffer too small is refused");
    }
    return done_testing();
}
