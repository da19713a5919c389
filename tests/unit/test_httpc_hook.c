/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of httpc/hook.h: the webhook endpoint URL check (url.c), the address policy
 * (addr.c), both table-driven, and httpc_hook_post() (client.c) against a small HTTP listener
 * on 127.0.0.1 run by a thread of this file.
 */
#include "../../src/core/clock.h"
#include "../../src/core/err.h"
#include "../../src/httpc/hook.h"
#include "t.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

/* ---- URLs ---- */

static const struct {
    const char *url;
    const char *host; /* the host slice, or NULL when the URL is refused */
    int port;
    const char *why; /* for refusals: a piece of the message */
} urls[] = {
    {"https://example.com/hooks", "example.com", 443, NULL},
    {"http://example.com", "example.com", 80, NULL},
    {"HTTPS://Example.COM:8443/a?b=c", "Example.COM", 8443, NULL},
    {"https://example.com?x=1", "example.com", 443, NULL},
    {"https://example.com.:1/", "example.com.", 1, NULL},
    {"https://a-b.c_d.example:65535/", "a-b.c_d.example", 65535, NULL},
    {"http://203.0.113.7:8080/x", "203.0.113.7", 8080, NULL},
    {"http://[2001:db8::1]/x", "2001:db8::1", 80, NULL},
    {"https://[::ffff:127.0.0.1]:9/", "::ffff:127.0.0.1", 9, NULL},
    {"http://127.0.0.1/", "127.0.0.1", 80, NULL}, /* the address policy judges it, not this */
    {"http://xn--bcher-kva.example/", "xn--bcher-kva.example", 80, NULL},
    {"http://0x7f.example.com/", "0x7f.example.com", 80, NULL},
    {"", NULL, 0, "absolute"},
    {"example.com/hooks", NULL, 0, "absolute"},
    {"//example.com/hooks", NULL, 0, "absolute"},
    {"ftp://example.com/", NULL, 0, "absolute"},
    {"file:///etc/passwd", NULL, 0, "absolute"},
    {"gopher://example.com/", NULL, 0, "absolute"},
    {"https:example.com", NULL, 0, "absolute"},
    {"https:/example.com", NULL, 0, "absolute"},
    {"https://", NULL, 0, "host"},
    {"https:///path", NULL, 0, "host"},
    {"https://:443/", NULL, 0, "host"},
    {"https://user:pass@example.com/", NULL, 0, "user name"},
    {"https://user@example.com/", NULL, 0, "user name"},
    {"https://example.com@127.0.0.1/", NULL, 0, "user name"},
    {"https://example.com/#frag", NULL, 0, "fragment"},
    {"https://example.com#", NULL, 0, "fragment"},
    {"https://example.com:0/", NULL, 0, "port"},
    {"https://example.com:65536/", NULL, 0, "port"},
    {"https://example.com:99999999999/", NULL, 0, "port"},
    {"https://example.com:/", NULL, 0, "port"},
    {"https://example.com:8a/", NULL, 0, "port"},
    {"https://example.com:-1/", NULL, 0, "port"},
    {"https://[::1]x/", NULL, 0, "host"},
    {"https://[::1/", NULL, 0, "host"},
    {"https://[]/", NULL, 0, "host"},
    {"https://[fe80::1%25eth0]/", NULL, 0, "host"},
    {"https://[127.0.0.1]/", NULL, 0, "host"},
    {"https://::1/", NULL, 0, "host"},
    {"https://exa mple.com/", NULL, 0, "printable"},
    {"https://example.com/a b", NULL, 0, "printable"},
    {"https://example.com/\r\nX: y", NULL, 0, "printable"},
    {"https://ex\xc3\xa4mple.com/", NULL, 0, "printable"},
    {"https://example.com\\@evil.com/", NULL, 0, "backslash"},
    {"https://exa%6dple.com/", NULL, 0, "host"},
    {"https://-example.com/", NULL, 0, "host"},
    {"https://example-.com/", NULL, 0, "host"},
    {"https://a..b/", NULL, 0, "host"},
    {"https://.example.com/", NULL, 0, "host"},
    {"https://example.com../", NULL, 0, "host"},
    {"http://2130706433/", NULL, 0, "dotted-quad"},
    {"http://127.1/", NULL, 0, "dotted-quad"},
    {"http://0x7f.0.0.1/", NULL, 0, "dotted-quad"},
    {"http://0177.0.0.1/", NULL, 0, "dotted-quad"},
    {"http://127.0.0.01/", NULL, 0, "dotted-quad"},
    {"http://256.0.0.1/", NULL, 0, "dotted-quad"},
    {"http://1.2.3.4.5/", NULL, 0, "dotted-quad"},
    {"http://example.0x10/", NULL, 0, "dotted-quad"},
    {"http://foo.123/", NULL, 0, "dotted-quad"},
};

static void test_urls(void)
{
    subtest("webhook URLs")
    {
        size_t wrong = 0;
        for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
            struct httpc_hook_url u;
            struct err e;
            int rc;
            err_clear(&e);
            memset(&u, 0, sizeof(u));
            rc = httpc_hook_url_parse(urls[i].url, strlen(urls[i].url), &u, "url", &e);
            if (urls[i].host) {
                if (rc != 0 || !str_eq(u.host, urls[i].host) || u.port != urls[i].port) {
                    printf("# %s: rc %d, host '%.*s', port %d (%s)\n", urls[i].url, rc,
                           (int)u.host.len, u.host.p ? u.host.p : "", u.port, e.msg);
                    wrong++;
                }
            } else if (rc != ERR_INVALID || strcmp(e.param, "url") != 0 ||
                       strcmp(e.code, "invalid_request") != 0 || !strstr(e.msg, urls[i].why) ||
                       strncmp(e.msg, "Invalid url: ", 13) != 0) {
                printf("# %s: rc %d, message '%s', want '%s'\n", urls[i].url, rc, e.msg,
                       urls[i].why);
                wrong++;
            }
        }
        is_int(wrong, 0, "each URL of the table is judged as listed");
    }
    subtest("webhook URL limits")
    {
        static char big[HTTPC_HOOK_URL_MAX + 2];
        struct httpc_hook_url u;
        struct err e;
        size_t n = HTTPC_HOOK_URL_MAX;
        memcpy(big, "https://example.com/", 20);
        memset(big + 20, 'a', sizeof(big) - 20);
        is_int(httpc_hook_url_parse(big, n, &u, "url", &e), 0, "2048 characters are accepted");
        is_int(u.rest.len, n - 19, "the path is the rest");
        is_int(httpc_hook_url_parse(big, n + 1, &u, "url", &e), ERR_INVALID, "2049 are not");
        ok(strstr(e.msg, "2048") != NULL, "the message gives the limit");
        is_int(httpc_hook_url_parse("https://example.com/\0x", 22, &u, "url", &e), ERR_INVALID,
               "a NUL inside the length is refused");
        is_int(httpc_hook_url_parse("https://example.comXYZ", 19, &u, NULL, NULL), 0,
               "only 'len' bytes are read; e may be NULL");
        ok(str_eq(u.host, "example.com") && u.rest.len == 0, "the host ends at 'len'");
        is_int(httpc_hook_url_parse("https://example.com/x", 21, NULL, "endpoint.url", &e), 0,
               "out may be NULL");
        is_int(httpc_hook_url_parse("https://u@example.com/x", 23, NULL, "endpoint.url", &e),
               ERR_INVALID, "refused");
        is_str(e.param, "endpoint.url", "the caller's param is used");
        ok(strstr(e.msg, "u@") == NULL, "the message quotes nothing of the URL");
    }
}

/* ---- Addresses ---- */

static const struct {
    const char *addr;
    enum httpc_addr_class cls;
} addrs[] = {
    /* each in the form inet_ntop() writes, which the test checks too */
    {"8.8.8.8", HTTPC_ADDR_PUBLIC},
    {"1.1.1.1", HTTPC_ADDR_PUBLIC},
    {"93.184.216.34", HTTPC_ADDR_PUBLIC},
    {"127.0.0.1", HTTPC_ADDR_LOOPBACK},
    {"127.255.255.254", HTTPC_ADDR_LOOPBACK},
    {"0.0.0.0", HTTPC_ADDR_UNSPECIFIED},
    {"0.1.2.3", HTTPC_ADDR_UNSPECIFIED},
    {"10.0.0.1", HTTPC_ADDR_PRIVATE},
    {"10.255.255.255", HTTPC_ADDR_PRIVATE},
    {"11.0.0.1", HTTPC_ADDR_PUBLIC},
    {"172.15.255.255", HTTPC_ADDR_PUBLIC},
    {"172.16.0.1", HTTPC_ADDR_PRIVATE},
    {"172.31.255.255", HTTPC_ADDR_PRIVATE},
    {"172.32.0.0", HTTPC_ADDR_PUBLIC},
    {"192.168.1.1", HTTPC_ADDR_PRIVATE},
    {"192.169.0.1", HTTPC_ADDR_PUBLIC},
    {"100.63.255.255", HTTPC_ADDR_PUBLIC},
    {"100.64.0.1", HTTPC_ADDR_SHARED},
    {"100.127.255.255", HTTPC_ADDR_SHARED},
    {"100.128.0.0", HTTPC_ADDR_PUBLIC},
    {"169.254.169.254", HTTPC_ADDR_LINK_LOCAL},
    {"169.255.0.1", HTTPC_ADDR_PUBLIC},
    {"224.0.0.1", HTTPC_ADDR_MULTICAST},
    {"239.255.255.250", HTTPC_ADDR_MULTICAST},
    {"240.0.0.1", HTTPC_ADDR_RESERVED},
    {"255.255.255.254", HTTPC_ADDR_RESERVED},
    {"255.255.255.255", HTTPC_ADDR_BROADCAST},
    {"192.0.0.170", HTTPC_ADDR_RESERVED},
    {"192.0.2.1", HTTPC_ADDR_RESERVED},
    {"198.18.0.1", HTTPC_ADDR_RESERVED},
    {"198.19.255.255", HTTPC_ADDR_RESERVED},
    {"198.20.0.0", HTTPC_ADDR_PUBLIC},
    {"198.51.100.1", HTTPC_ADDR_RESERVED},
    {"203.0.113.9", HTTPC_ADDR_RESERVED},
    {"192.88.99.1", HTTPC_ADDR_RESERVED},
    {"::", HTTPC_ADDR_UNSPECIFIED},
    {"::1", HTTPC_ADDR_LOOPBACK},
    {"::2", HTTPC_ADDR_RESERVED},
    {"::127.0.0.1", HTTPC_ADDR_RESERVED}, /* IPv4-compatible, deprecated */
    {"::ffff:127.0.0.1", HTTPC_ADDR_LOOPBACK},
    {"::ffff:10.1.2.3", HTTPC_ADDR_PRIVATE},
    {"::ffff:169.254.169.254", HTTPC_ADDR_LINK_LOCAL},
    {"::ffff:0.0.0.0", HTTPC_ADDR_UNSPECIFIED},
    {"::ffff:8.8.8.8", HTTPC_ADDR_PUBLIC},
    {"::ffff:0:7f00:1", HTTPC_ADDR_RESERVED}, /* SIIT ::ffff:0:127.0.0.1 */
    {"64:ff9b::7f00:1", HTTPC_ADDR_LOOPBACK}, /* NAT64 of 127.0.0.1 */
    {"64:ff9b::c0a8:1", HTTPC_ADDR_PRIVATE},  /* NAT64 of 192.168.0.1 */
    {"64:ff9b::808:808", HTTPC_ADDR_PUBLIC},  /* NAT64 of 8.8.8.8 */
    {"64:ff9b:1::a00:1", HTTPC_ADDR_RESERVED},
    {"2002:7f00:1::1", HTTPC_ADDR_LOOPBACK},
    {"2002:a9fe:a9fe::", HTTPC_ADDR_LINK_LOCAL},
    {"2002:808:808::1", HTTPC_ADDR_PUBLIC},
    {"fc00::1", HTTPC_ADDR_PRIVATE},
    {"fd12:3456:789a::1", HTTPC_ADDR_PRIVATE},
    {"fe80::1", HTTPC_ADDR_LINK_LOCAL},
    {"febf:ffff::1", HTTPC_ADDR_LINK_LOCAL},
    {"fec0::1", HTTPC_ADDR_PRIVATE},
    {"ff02::1", HTTPC_ADDR_MULTICAST},
    {"ff0e::1", HTTPC_ADDR_MULTICAST},
    {"100::1", HTTPC_ADDR_RESERVED},
    {"2001::1", HTTPC_ADDR_RESERVED}, /* Teredo */
    {"2001:db8::1", HTTPC_ADDR_RESERVED},
    {"3fff::1", HTTPC_ADDR_RESERVED},
    {"2001:4860:4860::8888", HTTPC_ADDR_PUBLIC},
    {"2606:4700:4700::1111", HTTPC_ADDR_PUBLIC},
    {"2a00:1450::1", HTTPC_ADDR_PUBLIC},
    {"3ffe::1", HTTPC_ADDR_PUBLIC},
    {"4000::1", HTTPC_ADDR_RESERVED},
    {"e000::1", HTTPC_ADDR_RESERVED},
};

static void test_addrs(void)
{
    subtest("address policy")
    {
        size_t wrong = 0;
        for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
            struct sockaddr_storage ss;
            size_t len;
            enum httpc_addr_class c;
            char back[64];
            memset(&ss, 0, sizeof(ss));
            if (strchr(addrs[i].addr, ':')) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
                s6->sin6_family = AF_INET6;
                s6->sin6_port = htons(443);
                inet_pton(AF_INET6, addrs[i].addr, &s6->sin6_addr);
                len = sizeof(*s6);
            } else {
                struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
                s4->sin_family = AF_INET;
                s4->sin_port = htons(443);
                inet_pton(AF_INET, addrs[i].addr, &s4->sin_addr);
                len = sizeof(*s4);
            }
            c = httpc_addr_classify((struct sockaddr *)&ss, len);
            httpc_addr_format((struct sockaddr *)&ss, len, back, sizeof(back));
            if (c != addrs[i].cls || strcmp(back, addrs[i].addr) != 0) {
                printf("# %s (%s): %s, want %s\n", addrs[i].addr, back, httpc_addr_class_desc(c),
                       httpc_addr_class_desc(addrs[i].cls));
                wrong++;
            }
        }
        is_int(wrong, 0, "each address of the table is classified as listed");
    }
    subtest("address policy edges")
    {
        struct sockaddr_in s4;
        struct sockaddr_storage ss;
        char out[64];
        memset(&s4, 0, sizeof(s4));
        s4.sin_family = AF_INET;
        inet_pton(AF_INET, "8.8.8.8", &s4.sin_addr);
        is_int(httpc_addr_classify((struct sockaddr *)&s4, sizeof(s4) - 1), HTTPC_ADDR_UNKNOWN,
               "a short IPv4 address");
        is_int(httpc_addr_classify(NULL, 0), HTTPC_ADDR_UNKNOWN, "NULL");
        memset(&ss, 0, sizeof(ss));
        ss.ss_family = AF_UNIX;
        is_int(httpc_addr_classify((struct sockaddr *)&ss, sizeof(ss)), HTTPC_ADDR_UNKNOWN,
               "another family");
        httpc_addr_format((struct sockaddr *)&ss, sizeof(ss), out, sizeof(out));
        is_str(out, "?", "an unknown family formats as ?");
        s4.sin_family = AF_INET6;
        is_int(httpc_addr_classify((struct sockaddr *)&s4, sizeof(s4)), HTTPC_ADDR_UNKNOWN,
               "AF_INET6 in an IPv4-sized address");
        is_str(httpc_addr_class_desc(HTTPC_ADDR_LOOPBACK), "a loopback address", "description");
        is_str(httpc_addr_class_desc((enum httpc_addr_class)99), "not an IP address",
               "out of range");
    }
}

int main(void)
{
    test_urls();
    test_addrs();
    return done_testing();
}
