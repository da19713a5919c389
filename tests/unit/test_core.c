/* SPDX-License-Identifier: MIT */
/* Unit tests of core/: buf, str, clock, id, crypto (with Standard Webhooks signing), config, mem
 * (arena and the fault hook). */
#include "../../src/core/buf.h"
#include "../../src/core/clock.h"
#include "../../src/core/config.h"
#include "../../src/core/crypto.h"
#include "../../src/core/err.h"
#include "../../src/core/id.h"
#include "../../src/core/mem.h"
#include "../../src/core/str.h"
#include "../../src/core/utf8.h"
#include "t.h"

#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_buf(void)
{
    subtest("buf")
    {
        struct buf b;
        char *s;
        size_t n;
        buf_init(&b, 8);
        is_str(buf_ptr(&b), "", "empty buffer reads as empty string");
        is_int(buf_append(&b, "abcd", 4), 0, "append within cap");
        is_int(buf_appendf(&b, "%d", 1234), 0, "appendf within cap");
        is_int(buf_append(&b, "x", 1), ERR_LIMIT, "append past the cap is refused");
        is_str(buf_ptr(&b), "abcd1234", "content unchanged after a refused append");
        s = buf_take(&b, &n);
        is_int(n, 8, "take gives the length");
        is_str(s, "abcd1234", "take gives the content");
        is_int(buf_len(&b), 0, "buffer empty after take");
        free(s);
        buf_cleanup(&b);
    }
}

static void test_str(void)
{
    subtest("str")
    {
        int64_t i = 0;
        uint64_t u = 0;
        ok(str_to_u64(str_c("18446744073709551615"), &u) == 0 && u == UINT64_MAX, "u64 max");
        ok(str_to_u64(str_c("18446744073709551616"), &u) != 0, "u64 overflow refused");
        ok(str_to_u64(str_c(""), &u) != 0, "empty refused");
        ok(str_to_u64(str_c("+1"), &u) != 0, "plus sign refused");
        ok(str_to_u64(str_c(" 1"), &u) != 0, "leading space refused");
        ok(str_to_u64(str_c("1.5"), &u) != 0, "fraction refused");
        ok(str_to_i64(str_c("-9223372036854775808"), &i) == 0 && i == INT64_MIN, "i64 min");
        ok(str_to_i64(str_c("9223372036854775808"), &i) != 0, "i64 overflow refused");
        ok(str_to_i64(str_c("-"), &i) != 0, "lone minus refused");
        ok(str_eq_nocase(str_c("BeArEr"), "bearer"), "case-insensitive compare");
    }
}

static void test_clock(void)
{
    subtest("clock")
    {
        char buf[32];
        int64_t ms = 0;
        is_str(clock_fmt_iso(0 + 1, buf, sizeof(buf)), "1970-01-01T00:00:00.001Z", "epoch + 1 ms");
        is_str(clock_fmt_iso(1795253400123LL, buf, sizeof(buf)), "2026-11-21T09:30:00.123Z",
               "a contract example timestamp");
        ok(clock_parse_iso("2026-11-21T09:30:00.123Z", 24, &ms) == 0 && ms == 1795253400123LL,
           "parse with milliseconds");
        ok(clock_parse_iso("2026-11-21T10:30:00+01:00", 25, &ms) == 0 && ms == 1795253400000LL,
           "parse with an offset");
        ok(clock_parse_iso("2024-02-29T00:00Z", 17, &ms) == 0, "leap day without seconds");
        ok(clock_parse_iso("2023-02-29T00:00:00Z", 20, &ms) != 0, "non-leap Feb 29 refused");
        ok(clock_parse_iso("2026-11-21T24:00:00Z", 20, &ms) != 0, "hour 24 refused");
        ok(clock_parse_iso("2026-11-21T09:30:00", 19, &ms) != 0, "missing zone refused");
        ok(clock_parse_iso("2026-11-21", 10, &ms) != 0, "date only refused");
        is_int(clock_days_from_civil(2000, 3, 1), 11017, "days from civil");
        clock_set_fake_ms(1234);
        is_int(clock_now_ms(), 1234, "fake clock");
        clock_set_fake_ms(0);
        ok(clock_now_ms() > 1700000000000LL, "real clock again");
    }
}

static void test_id(void)
{
    subtest("id")
    {
        char a[ID_MAX], b[ID_MAX];
        ok(id_new("emp", a, sizeof(a)) == 0 && strlen(a) == 4 + ID_RANDOM_LEN, "id length");
        ok(id_valid(a, "emp"), "new id is valid");
        ok(!id_valid(a, "task"), "wrong prefix is invalid");
        ok(id_new("emp", b, sizeof(b)) == 0 && strcmp(a, b) != 0, "two ids differ");
        ok(!id_valid("emp_short", "emp"), "short id invalid");
        ok(!id_valid("emp_aaaaaaaaaaaaaaaaaaaaaaa-", "emp"), "non-base62 invalid");
        ok(id_new("a_very_long_prefix_that_does_not_fit", a, 20) != 0, "small buffer refused");
    }
    subtest("ids sort by creation time")
    {
        char a[ID_MAX], b[ID_MAX], c[ID_MAX];
        clock_set_fake_ms(1795219200000LL);
        id_new("msg", a, sizeof(a));
        id_new("msg", b, sizeof(b));
        clock_set_fake_ms(1795219200001LL);
        id_new("msg", c, sizeof(c));
        clock_set_fake_ms(0);
        ok(memcmp(a, b, 4 + ID_TIME_LEN) == 0, "the same millisecond, the same prefix");
        ok(strcmp(a, b) != 0, "and a random rest");
        ok(strcmp(a, c) < 0 && strcmp(b, c) < 0, "a later millisecond sorts later");
        id_new("msg", c, sizeof(c));
        ok(strcmp(b, c) < 0, "the real clock is later than that fake time");
    }
    subtest("ids after fork")
    {
        /* The parent's block of random bytes must not be handed out again by a child. */
        char parent[ID_MAX], child[ID_MAX] = "";
        int fds[2];
        pid_t pid;
        ok(id_new("req", parent, sizeof(parent)) == 0, "parent has a block");
        ok(pipe(fds) == 0, "pipe");
        pid = fork();
        if (pid == 0) {
            char id[ID_MAX];
            close(fds[0]);
            if (id_new("req", id, sizeof(id)) == 0 && write(fds[1], id, strlen(id) + 1) < 0)
                _exit(2);
            _exit(0);
        }
        close(fds[1]);
        ok(pid > 0 && read(fds[0], child, sizeof(child) - 1) > 0, "child made an id");
        close(fds[0]);
        waitpid(pid, NULL, 0);
        ok(id_new("req", parent, sizeof(parent)) == 0 && id_valid(child, "req") &&
               strcmp(parent, child) != 0,
           "the child's next id is not the parent's next id");
    }
    subtest("many ids")
    {
        /* More than one 4 KiB block: all valid and distinct from their neighbours. */
        char prev[ID_MAX] = "", id[ID_MAX];
        bool good = true;
        for (int i = 0; i < 1000; i++) {
            if (id_new("x", id, sizeof(id)) || !id_valid(id, "x") || strcmp(id, prev) == 0)
                good = false;
            memcpy(prev, id, sizeof(id));
        }
        ok(good, "1000 ids over several blocks are valid and differ");
    }
}

static void test_crypto(void)
{
    subtest("crypto")
    {
        unsigned char mac[32];
        char hex[65];
        /* RFC 4231 test case 2 */
        crypto_hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, mac);
        crypto_hex(mac, 32, hex);
        is_str(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
               "HMAC-SHA256 RFC 4231 vector");
        {
            /* The keyed form gives the one-shot form's answer, message after message. */
            struct crypto_hmac *h = crypto_hmac_new("Jefe", 4);
            unsigned char again[32];
            ok(h && crypto_hmac_sign(h, "what do ya want for nothing?", 28, again) == 0 &&
                   memcmp(again, mac, 32) == 0,
               "keyed HMAC: the RFC 4231 vector");
            ok(h && crypto_hmac_sign(h, "what do ya want for nothing?", 28, again) == 0 &&
                   memcmp(again, mac, 32) == 0,
               "keyed HMAC: the same answer a second time");
            crypto_hmac_sha256("Jefe", 4, "other", 5, mac);
            ok(h && crypto_hmac_sign(h, "other", 5, again) == 0 && memcmp(again, mac, 32) == 0,
               "keyed HMAC: another message");
            crypto_hmac_free(h);
            crypto_hmac_free(NULL);
        }
        crypto_sha256("abc", 3, mac);
        crypto_hex(mac, 32, hex);
        is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
               "SHA-256 of abc");
        ok(crypto_equal("abcd", "abcd", 4) && !crypto_equal("abcd", "abce", 4), "ct compare");
    }
    subtest("base64url and URL encoding")
    {
        /* RFC 7636 appendix B: the S256 challenge of the example verifier */
        const char *verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        unsigned char h[32];
        char b64[45], out[8];
        struct buf b;
        crypto_sha256(verifier, strlen(verifier), h);
        crypto_base64url(h, 32, b64);
        is_str(b64, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "RFC 7636 S256 challenge");
        crypto_base64url((const unsigned char *)"f", 1, out);
        is_str(out, "Zg", "one byte, no padding");
        crypto_base64url((const unsigned char *)"fo", 2, out);
        is_str(out, "Zm8", "two bytes");
        crypto_base64url((const unsigned char *)"\xfb\xff", 2, out);
        is_str(out, "-_8", "the URL alphabet");
        crypto_base64((const unsigned char *)"\xfb\xff", 2, out);
        is_str(out, "+/8=", "base64: its alphabet and padding");
        crypto_base64((const unsigned char *)"user:pa", 7, b64);
        is_str(b64, "dXNlcjpwYQ==", "base64 of a basic credential");
        buf_init(&b, 1024);
        buf_append_urlenc(&b, "a b&c=d/é~._-Z9");
        is_str(buf_ptr(&b), "a%20b%26c%3Dd%2F%C3%A9~._-Z9", "percent-encoding");
        buf_cleanup(&b);
    }
    subtest("hkdf")
    {
        /* RFC 5869 test case 1 */
        unsigned char ikm[22], salt[13], info[10], okm[42];
        char hex[85];
        memset(ikm, 0x0b, sizeof(ikm));
        for (int i = 0; i < 13; i++)
            salt[i] = (unsigned char)i;
        for (int i = 0; i < 10; i++)
            info[i] = (unsigned char)(0xf0 + i);
        is_int(crypto_hkdf_sha256(ikm, 22, salt, 13, info, 10, okm, 42), 0, "derives");
        crypto_hex(okm, 42, hex);
        is_str(
            hex,
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865",
            "RFC 5869 case 1 OKM");
        is_int(crypto_hkdf_sha256(ikm, 22, salt, 13, info, 10, okm, 0), ERR_INTERNAL, "n 0");
    }
    subtest("seal")
    {
        unsigned char key[32], other[32], sealed[64 + CRYPTO_SEAL_OVERHEAD],
            again[64 + CRYPTO_SEAL_OVERHEAD];
        char plain[65];
        const char *msg = "refresh-token-abcdef";
        size_t n = strlen(msg);
        memset(key, 7, sizeof(key));
        memset(other, 8, sizeof(other));
        is_int(crypto_seal(key, "org1/slack", 10, msg, n, sealed), 0, "seals");
        ok(memmem(sealed, n + CRYPTO_SEAL_OVERHEAD, "refresh", 7) == NULL, "no plaintext inside");
        memset(plain, 0, sizeof(plain));
        is_int(crypto_open(key, "org1/slack", 10, sealed, n + CRYPTO_SEAL_OVERHEAD, plain), 0,
               "opens");
        is_str(plain, msg, "round trip");
        crypto_seal(key, "org1/slack", 10, msg, n, again);
        ok(memcmp(sealed, again, n + CRYPTO_SEAL_OVERHEAD) != 0, "a fresh nonce each time");
        is_int(crypto_open(other, "org1/slack", 10, sealed, n + CRYPTO_SEAL_OVERHEAD, plain),
               ERR_INVALID, "another key");
        is_int(crypto_open(key, "org2/slack", 10, sealed, n + CRYPTO_SEAL_OVERHEAD, plain),
               ERR_INVALID, "another aad");
        {
            size_t tried = 0, refused = 0;
            for (size_t i = 0; i < n + CRYPTO_SEAL_OVERHEAD; i += 3) {
                sealed[i] ^= 1;
                tried++;
                refused += crypto_open(key, "org1/slack", 10, sealed, n + CRYPTO_SEAL_OVERHEAD,
                                       plain) == ERR_INVALID;
                sealed[i] ^= 1;
            }
            is_int((int64_t)refused, (int64_t)tried, "every altered byte is refused");
        }
        is_int(crypto_open(key, "org1/slack", 10, sealed, CRYPTO_SEAL_OVERHEAD - 1, plain),
               ERR_INVALID, "too short");
        is_int(crypto_seal(key, NULL, 0, "", 0, sealed), 0, "empty plaintext seals");
        is_int(crypto_open(key, NULL, 0, sealed, CRYPTO_SEAL_OVERHEAD, plain), 0, "and opens");
    }
}

/* The sign test of the Standard Webhooks libraries (libraries/python/tests/test_webhooks.py,
 * test_sign_function, and the same values in the Go, JavaScript, Java, C# and PHP tests). */
static const struct {
    const char *secret, *msg_id, *body, *sig;
    int64_t ts;
} whsec_vector = {
    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "{\"test\": 2432232314}",
    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    1614265330,
};

/* Secrets the decoder refuses, and why. */
static const struct {
    const char *s, *why;
} whsec_bad[] = {
    {"", "empty"},
    {"whsec_", "no key"},
    {"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "no prefix"},
    {"WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "prefix in capitals"},
    {"whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "another prefix"},
    {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!", "a byte outside the alphabet"},
    {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-w", "the URL alphabet"},
    {"whsec_MfKQ9r8GKYqrTwjU PD8ILPZIo2LaLaSw", "a space"},
    {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwA", "one digit too many (4n+1)"},
    {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=", "padding after a full quantum"},
    {"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa==", "padding of the wrong length"},
    {"whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB", "left-over bits set"},
    {"whsec_c2hvcnQ=", "5 bytes: under the 24 the specification asks"},
    {"whsec_" /* 88 digits */
     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
     "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
     "66 bytes: over 64"},
};

static void test_whsec(void)
{
    subtest("standard webhooks")
    {
        char sig[CRYPTO_WHSIG_LEN], sec[CRYPTO_WHSEC_STR_LEN], again[CRYPTO_WHSIG_LEN];
        unsigned char key[CRYPTO_WHSEC_KEY_MAX], raw[CRYPTO_WHSEC_KEY_MAX];
        size_t n = 0, bad = 0;
        const char *v = whsec_vector.secret;

        is_int(crypto_whsec_sign(v, strlen(v), whsec_vector.msg_id, whsec_vector.ts,
                                 whsec_vector.body, strlen(whsec_vector.body), sig),
               0, "signs the published vector");
        is_str(sig, whsec_vector.sig, "the published signature");
        is_int(crypto_whsec_decode(v, strlen(v), key, &n), 0, "decodes the vector's secret");
        is_int(n, 24, "24 key bytes");
        {
            /* The same HMAC by hand: key = decoded bytes, message = id.ts.body. */
            char msg[128], b64[45];
            unsigned char mac[32];
            int len = snprintf(msg, sizeof(msg), "%s.%lld.%s", whsec_vector.msg_id,
                               (long long)whsec_vector.ts, whsec_vector.body);
            crypto_hmac_sha256(key, n, msg, (size_t)len, mac);
            crypto_base64(mac, 32, b64);
            is_str(sig + 3, b64, "the signature is base64 HMAC-SHA256 of id.ts.body");
        }
        is_int(crypto_whsec_decode("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 38, raw, &n), 0,
               "length-bounded: the slice is read, not the NUL");
        is_int(crypto_whsec_decode("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwXXXX", 38, raw, &n), 0,
               "bytes after 'len' are not read");
        for (size_t i = 0; i < sizeof(whsec_bad) / sizeof(whsec_bad[0]); i++) {
            int rc = crypto_whsec_decode(whsec_bad[i].s, strlen(whsec_bad[i].s), raw, &n);
            if (rc != ERR_INVALID) {
                printf("# not refused: %s (%s)\n", whsec_bad[i].s, whsec_bad[i].why);
                bad++;
            }
        }
        is_int(bad, 0, "malformed secrets are refused");
        {
            /* Padding is optional: 25 bytes, padded and not. */
            memset(raw, 0xab, 25);
            char padded[6 + 88 + 1] = "whsec_"; /* room for 64 bytes */
            crypto_base64(raw, 25, padded + 6);
            ok(strchr(padded, '=') != NULL, "25 bytes need padding");
            ok(crypto_whsec_decode(padded, strlen(padded), key, &n) == 0 && n == 25 &&
                   memcmp(key, raw, 25) == 0,
               "padded secret decodes");
            *strchr(padded, '=') = '\0';
            ok(crypto_whsec_decode(padded, strlen(padded), key, &n) == 0 && n == 25 &&
                   memcmp(key, raw, 25) == 0,
               "unpadded secret decodes alike");
            memset(raw, 0xcd, 64);
            crypto_base64(raw, 64, padded + 6);
            ok(crypto_whsec_decode(padded, strlen(padded), key, &n) == 0 && n == 64 &&
                   memcmp(key, raw, 64) == 0,
               "64 bytes, the most");
        }
        is_int(crypto_whsec_new(sec), 0, "new secret");
        is_int(strlen(sec), CRYPTO_WHSEC_STR_LEN - 1, "whsec_ + 32 characters");
        ok(strncmp(sec, "whsec_", 6) == 0, "prefixed");
        ok(crypto_whsec_decode(sec, strlen(sec), key, &n) == 0 && n == CRYPTO_WHSEC_KEY_LEN,
           "a new secret decodes to 24 bytes");
        crypto_base64(key, n, (char *)raw);
        is_str((const char *)raw, sec + 6, "round trip: decoded bytes encode to the secret");
        {
            char other[CRYPTO_WHSEC_STR_LEN];
            crypto_whsec_new(other);
            ok(strcmp(sec, other) != 0, "two new secrets differ");
        }
        is_int(crypto_whsec_sign(sec, strlen(sec), "evt_1", 1700000000, "{}", 2, sig), 0,
               "signs under a new secret");
        crypto_whsec_sign(sec, strlen(sec), "evt_1", 1700000000, "{}", 2, again);
        is_str(again, sig, "deterministic");
        is_int(strlen(sig), CRYPTO_WHSIG_LEN - 1, "v1, + 44 characters");
        crypto_whsec_sign(sec, strlen(sec), "evt_1", 1700000001, "{}", 2, again);
        ok(strcmp(again, sig) != 0, "another timestamp, another signature");
        crypto_whsec_sign(sec, strlen(sec), "evt_2", 1700000000, "{}", 2, again);
        ok(strcmp(again, sig) != 0, "another id, another signature");
        crypto_whsec_sign(sec, strlen(sec), "evt_1", 1700000000, "{ }", 3, again);
        ok(strcmp(again, sig) != 0, "another body, another signature");
        is_int(crypto_whsec_sign(sec, strlen(sec), "evt_1", 1700000000, NULL, 0, again), 0,
               "an empty body signs");
        is_int(crypto_whsec_sign("whsec_", 6, "evt_1", 1, "{}", 2, again), ERR_INVALID,
               "a malformed secret is refused");
        is_int(crypto_whsec_sign(sec, strlen(sec), "evt.1", 1, "{}", 2, again), ERR_INVALID,
               "an id with a '.' is refused");
        is_int(crypto_whsec_sign(sec, strlen(sec), "", 1, "{}", 2, again), ERR_INVALID,
               "an empty id is refused");
        is_int(crypto_whsec_sign(sec, strlen(sec), "evt\r\n1", 1, "{}", 2, again), ERR_INVALID,
               "an id with CR LF is refused");
    }
}

static void test_config(void)
{
    subtest("config")
    {
        struct config c;
        struct err e;
        char *env_ok[] = {"WORKFORCE_LISTEN=127.0.0.1:9999",     "WORKFORCE_THREADS=3",
                          "WORKFORCE_RATE_LIMITS=manager:5/2/1", "HOME=/root",
                          "WORKFORCE_OAUTH_SLACK_CLIENT_ID=x",   NULL};
        char *env_unknown[] = {"WORKFORCE_FOO=1", NULL};
        char *env_bad_rl[] = {"WORKFORCE_RATE_LIMITS=manager:5/2", NULL};
        char *env_bad_llm[] = {"WORKFORCE_LLM=gpt", NULL};
        char *env_bad_port[] = {"WORKFORCE_LISTEN=127.0.0.1:70000", NULL};
        int64_t ms = 0;

        err_clear(&e);
        is_int(config_load_env(&c, env_ok, &e), 0, "valid environment loads");
        is_str(c.oauth[0][CONFIG_OAUTH_CLIENT_ID], "x", "an OAuth setting is kept");
        is_str(c.oauth[3][CONFIG_OAUTH_API_URL], "", "one not given is empty");
        {
            static struct config c2;
            char *env_oauth[] = {"WORKFORCE_OAUTH_GITHUB_API_URL=http://127.0.0.1:9/gh",
                                 "WORKFORCE_OAUTH_HUBSPOT_SIGNING_SECRET=s3",
                                 "WORKFORCE_OAUTH_GOOGLE_CALENDAR_SCOPES=a b", NULL};
            char *env_oauth_bad[] = {"WORKFORCE_OAUTH_OUTLOOK_TOKEN_URL=ftp://x", NULL};
            char *env_oauth_unknown[] = {"WORKFORCE_OAUTH_DROPBOX_CLIENT_ID=x", NULL};
            is_int(config_load_env(&c2, env_oauth, &e), 0, "OAuth settings load");
            is_str(c2.oauth[3][CONFIG_OAUTH_API_URL], "http://127.0.0.1:9/gh", "github api url");
            is_str(c2.oauth[4][CONFIG_OAUTH_SIGNING_SECRET], "s3", "hubspot signing secret");
            is_str(c2.oauth[1][CONFIG_OAUTH_SCOPES], "a b", "google scopes");
            is_int(config_load_env(&c2, env_oauth_bad, &e), ERR_INVALID, "a URL must be http(s)");
            is_str(e.param, "WORKFORCE_OAUTH_OUTLOOK_TOKEN_URL", "named");
            is_int(config_load_env(&c2, env_oauth_unknown, &e), ERR_INVALID, "unknown provider");
        }
        is_int(c.listen_port, 9999, "listen port from env");
        is_int(c.threads, 3, "threads from env");
        is_int(c.limits[TIER_MANAGER].per_minute, 5, "manager limit overridden");
        is_int(c.limits[TIER_STARTER].per_minute, 60, "starter keeps its default");
        is_int(c.limits[TIER_AGENCY].concurrent, 100, "agency keeps its default");
        ok(config_load_env(&c, env_unknown, &e) != 0 && strstr(e.msg, "WORKFORCE_FOO"),
           "unknown WORKFORCE_ variable named");
        ok(config_load_env(&c, env_bad_rl, &e) != 0 &&
               strcmp(e.param, "WORKFORCE_RATE_LIMITS") == 0,
           "malformed rate limits named");
        ok(config_load_env(&c, env_bad_llm, &e) != 0 && strcmp(e.param, "WORKFORCE_LLM") == 0,
           "unknown engine named");
        ok(config_load_env(&c, env_bad_port, &e) != 0, "port out of range refused");
        ok(config_parse_duration("30d", 3, &ms) == 0 && ms == 30LL * 86400000, "30d");
        ok(config_parse_duration("90s", 3, &ms) == 0 && ms == 90000, "90s");
        ok(config_parse_duration("0s", 2, &ms) != 0, "zero refused");
        ok(config_parse_duration("5w", 2, &ms) != 0, "unknown unit refused");
        ok(config_parse_rate_limits("starter:1/1/1,", 14, c.limits, &e) != 0,
           "trailing comma refused");
        ok(config_parse_rate_limits("gold:1/1/1", 10, c.limits, &e) != 0, "unknown tier refused");
        ok(config_parse_rate_limits("starter\0:1/2/3", 14, c.limits, &e) != 0,
           "NUL in a tier name refused (fuzz regression)");
        ok(config_parse_rate_limits("starter:0/1/1", 13, c.limits, &e) != 0, "zero refused");
        config_load_env(&c, env_ok, &e);
        config_set_database(&c, "/tmp/x/w.db", &e);
        is_int(config_finish(&c, &e), 0, "finish");
        is_str(c.secret_file, "/tmp/x/server.secret", "secret beside the database");
        is_str(c.files_dir, "/tmp/x/files", "files beside the database");
        is_str(c.public_url, "http://127.0.0.1:9999", "public url from listen");
        {
            struct config pg;
            static char *const env_pg[] = {"WORKFORCE_DATABASE=postgres://u@127.0.0.1:5/w", NULL};
            static char *const env_pg_secret[] = {"WORKFORCE_DATABASE=postgres://u@127.0.0.1:5/w",
                                                  "WORKFORCE_SECRET_FILE=/etc/workforce/secret",
                                                  NULL};
            static char *const env_pg_all[] = {"WORKFORCE_DATABASE=postgres://u@127.0.0.1:5/w",
                                               "WORKFORCE_SECRET_FILE=/etc/workforce/secret",
                                               "WORKFORCE_FILES_DIR=/srv/workforce/files", NULL};
            ok(config_load_env(&pg, env_pg, &e) == 0 && config_finish(&pg, &e) != 0 &&
                   strcmp(e.param, "WORKFORCE_SECRET_FILE") == 0,
               "postgres: no default secret file beside it");
            ok(config_load_env(&pg, env_pg_secret, &e) == 0 && config_finish(&pg, &e) != 0 &&
                   strcmp(e.param, "WORKFORCE_FILES_DIR") == 0,
               "postgres: no default files directory beside it");
            ok(config_load_env(&pg, env_pg_all, &e) == 0 && config_finish(&pg, &e) == 0 &&
                   strcmp(pg.files_dir, "/srv/workforce/files") == 0,
               "postgres: with both set");
        }
    }
}

static void test_arena(void)
{
    subtest("mem")
    {
        struct arena a;
        char *p, *q;
        void *big;
        arena_init(&a);
        p = arena_strdup(&a, "hello");
        big = arena_alloc(&a, 100000);
        q = arena_printf(&a, "%s-%d", p, 42);
        memset(big, 1, 100000);
        is_str(q, "hello-42", "arena printf");
        is_str(p, "hello", "small allocation survives a big one");
        ok(((uintptr_t)big & 15) == 0, "16-byte alignment");
        ok(arena_total(&a) >= 100000, "arena counts what it handed out");
        arena_cleanup(&a);
        is_int(arena_total(&a), 0, "cleanup empties the arena");
        mem_fail_after(1);
        ok(mem_try_alloc(10) == NULL, "fault hook fails the next try-allocation");
        p = mem_try_alloc(10);
        ok(p != NULL, "and only that one");
        free(p);
    }
}

static void test_buf_oom(void)
{
    subtest("buf oom")
    {
        /* Fail the Nth allocation upward: every failure is a clean ERR_NOMEM, content intact. */
        for (long n = 1; n < 6; n++) {
            struct buf b;
            int rc = 0;
            buf_init(&b, 1 << 20);
            mem_fail_after(n);
            for (int i = 0; i < 2000 && !rc; i++)
                rc = buf_append(&b, "0123456789", 10);
            mem_fail_after(0);
            ok(rc == ERR_NOMEM && buf_len(&b) % 10 == 0, "allocation failure is clean");
            buf_cleanup(&b);
        }
    }
}

static void test_err(void)
{
    struct err e;
    char name[200];
    size_t n = 0;
    subtest("err")
    {
        for (int i = 0; i < 99; i++) {
            name[n++] = (char)0xC3;
            name[n++] = (char)0xA9; /* é */
        }
        name[n] = '\0';
        err_set(&e, ERR_INVALID, "invalid_request", name, "Unknown parameter: %.61s.", name);
        ok(strlen(e.param) == 127 && e.param[126] == '?',
           "a param cut inside a character ends in ?");
        ok(strncmp(e.msg + 19, "\xC3\xA9", 2) == 0 && strstr(e.msg, "?.") != NULL,
           "a message cut inside a character: whole characters, then ?");
        err_set(&e, ERR_INVALID, "x",
                "a\xFF\xC0\x80"
                "b\xED\xA0\x80\xF4\x90\x80\x80"
                "c",
                "ok \xE2\x82");
        is_str(e.param, "a???b???????c", "invalid bytes, overlongs, surrogates, > U+10FFFF: ?");
        is_str(e.msg, "ok ??", "a truncated sequence at the end");
        err_set(&e, ERR_INVALID, "x", "\xF0\x9F\x98\x80 \xE2\x82\xAC", "\xC3\xA9");
        is_str(e.param, "\xF0\x9F\x98\x80 \xE2\x82\xAC", "valid 4- and 3-byte characters kept");
    }
}

static void test_utf8_encode(void)
{
    subtest("utf8 encode")
    {
        static const struct {
            uint32_t cp;
            const char *want;
        } cases[] = {{0x41, "A"},
                     {0x7F, "\x7F"},
                     {0x80, "\xC2\x80"},
                     {0xFC, "\xC3\xBC"},
                     {0x7FF, "\xDF\xBF"},
                     {0x800, "\xE0\xA0\x80"},
                     {0x20AC, "\xE2\x82\xAC"},
                     {0xFFFD, "\xEF\xBF\xBD"},
                     {0x10000, "\xF0\x90\x80\x80"},
                     {0x1F600, "\xF0\x9F\x98\x80"},
                     {0x10FFFF, "\xF4\x8F\xBF\xBF"}};
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            char out[5] = {0};
            size_t n = utf8_encode(cases[i].cp, out), skip = 0;
            ok(n == strlen(cases[i].want) && memcmp(out, cases[i].want, n) == 0, "encoded");
            ok(utf8_seq(out, n, &skip) == n, "decodes back as one character");
        }
    }
}

int main(void)
{
    test_utf8_encode();
    test_err();
    test_buf();
    test_str();
    test_clock();
    test_id();
    test_crypto();
    test_whsec();
    test_config();
    test_arena();
    test_buf_oom();
    return done_testing();
}
