/* SPDX-License-Identifier: MIT */
/*
 * keys.c: secret key format, generation and hashing, and the server secret file. The key
 * itself never leaves this file except to the one who created it (the CLI prints it once).
 */
#include "auth.h"

#include "../core/crypto.h"
#include "../core/id.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const prefixes[2] = {"svc_live_sk_", "svc_test_sk_"};
#define PREFIX_LEN 12

/* True when the 'len' bytes at 'key' are a prefix and 32..64 base62 characters. */
bool auth_key_wellformed(const char *key, size_t len, int *mode)
{
    for (int m = 0; m < 2; m++) {
        if (len >= PREFIX_LEN + 32 && len <= PREFIX_LEN + 64 &&
            memcmp(key, prefixes[m], PREFIX_LEN) == 0 &&
            id_is_base62(key + PREFIX_LEN, len - PREFIX_LEN)) {
            *mode = m;
            return true;
        }
    }
    return false;
}

/*
 * Split an Authorization header "Bearer <key>" (scheme case-insensitive, one space). Returns 0
 * with the key slice borrowed from 'header', or ERR_AUTH when it is not a well-formed key.
 */
int auth_bearer_parse(const char *header, const char **key, size_t *keylen, int *mode)
{
    size_t n = strlen(header);
    if (n < 7 || strncasecmp(header, "Bearer ", 7) != 0)
        return ERR_AUTH;
    header += 7;
    n -= 7;
    if (!auth_key_wellformed(header, n, mode))
        return ERR_AUTH;
    *key = header;
    *keylen = n;
    return 0;
}

/* Write a new secret key of 'mode' (0 live, 1 test) into 'out'. */
int auth_key_generate(int mode, char out[AUTH_KEY_MAX])
{
    memcpy(out, prefixes[mode ? 1 : 0], PREFIX_LEN);
    return id_base62(out + PREFIX_LEN, AUTH_KEY_RANDOM);
}

/* HMAC-SHA256 of the key under the server secret: the only form in which keys are stored. */
int auth_key_hash(const unsigned char secret[AUTH_SECRET_LEN], const char *key, size_t len,
                  unsigned char out[32])
{
    return crypto_hmac_sha256(secret, AUTH_SECRET_LEN, key, len, out);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/*
 * Read the 32-byte server secret (64 hex characters) from 'path'; if the file does not exist,
 * create it with mode 0600 and fresh random bytes. O_EXCL makes two processes starting at once
 * agree: the loser reads the winner's file.
 */
int auth_secret_load(const char *path, unsigned char out[AUTH_SECRET_LEN], struct err *e)
{
    char hex[2 * AUTH_SECRET_LEN + 2];
    ssize_t got = 0;
    int fd;

    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        unsigned char raw[AUTH_SECRET_LEN];
        int ok;
        if (crypto_random(raw, sizeof(raw))) {
            close(fd);
            unlink(path);
            return err_set(e, ERR_INTERNAL, "internal_error", "WORKFORCE_SECRET_FILE",
                           "no random bytes for the server secret");
        }
        crypto_hex(raw, sizeof(raw), hex);
        hex[2 * AUTH_SECRET_LEN] = '\n';
        ok = write(fd, hex, 2 * AUTH_SECRET_LEN + 1) == 2 * AUTH_SECRET_LEN + 1 && fsync(fd) == 0;
        close(fd);
        if (!ok) {
            unlink(path);
            return err_set(e, ERR_IO, "invalid_setting", "WORKFORCE_SECRET_FILE",
                           "cannot write the server secret %s", path);
        }
        memcpy(out, raw, sizeof(raw));
        return 0;
    }
    if (errno != EEXIST)
        return err_set(e, ERR_IO, "invalid_setting", "WORKFORCE_SECRET_FILE",
                       "cannot create the server secret %s: %s", path, strerror(errno));
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        got = read(fd, hex, sizeof(hex));
        close(fd);
    }
    if (fd < 0 || got < 2 * AUTH_SECRET_LEN)
        return err_set(e, ERR_IO, "invalid_setting", "WORKFORCE_SECRET_FILE",
                       "cannot read the server secret %s", path);
    for (int i = 0; i < AUTH_SECRET_LEN; i++) {
        int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_SECRET_FILE",
                           "the server secret %s is damaged", path);
        out[i] = (unsigned char)(hi << 4 | lo);
    }
    return 0;
}
