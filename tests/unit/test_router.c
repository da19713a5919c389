/* SPDX-License-Identifier: MIT */
/* Unit tests of router/: route matching (404/405/params) and pagination cursors. */
#include "../../src/api/api.h"
#include "../../src/router/router.h"
#include "t.h"

static void test_match(void)
{
    subtest("match")
    {
        struct arena a;
        struct router_match m;
        arena_init(&a);
        router_match(api_routes, api_nroutes, "GET", "/v1/employees", &a, &m);
        ok(m.route >= 0 && strcmp(api_routes[m.route].pattern, "/v1/employees") == 0,
           "literal route");
        router_match(api_routes, api_nroutes, "GET", "/v1/employees/emp_1/stats", &a, &m);
        ok(m.route >= 0 && strcmp(m.params[0], "emp_1") == 0, "param captured");
        router_match(api_routes, api_nroutes, "DELETE", "/v1/employees/emp_1", &a, &m);
        ok(m.route < 0 && strstr(m.allow, "GET") && strstr(m.allow, "PATCH"), "405 Allow list");
        router_match(api_routes, api_nroutes, "POST", "/v1/employees", &a, &m);
        ok(m.route >= 0 && m.allow[0] == '\0', "a match leaves no Allow list");
        router_match(api_routes, api_nroutes, "GET", "/v1/employees/", &a, &m);
        ok(m.route < 0 && m.allow[0] == '\0', "empty segment does not match a param");
        router_match(api_routes, api_nroutes, "GET", "/v1/nothing", &a, &m);
        ok(m.route < 0 && m.allow[0] == '\0', "unknown path is 404");
        router_match(api_routes, api_nroutes, "GET", "/v1/employees/a/b/c", &a, &m);
        ok(m.route < 0, "extra segments do not match");
        router_match(api_routes, api_nroutes, "GET", "", &a, &m);
        ok(m.route < 0, "empty path");
        arena_cleanup(&a);
    }
}

static void test_cursor(void)
{
    subtest("cursor")
    {
        struct arena a;
        const char *in[2] = {"Ava Ω", "emp_123"};
        const char *out[3];
        char *c;
        arena_init(&a);
        c = router_cursor_encode(&a, in, 2);
        ok(strspn(c, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") ==
               strlen(c),
           "cursor is base64url");
        ok(router_cursor_decode(c, strlen(c), &a, out, 2) == 0 && strcmp(out[0], in[0]) == 0 &&
               strcmp(out[1], in[1]) == 0,
           "round trip");
        ok(router_cursor_decode(c, strlen(c), &a, out, 3) != 0, "wrong field count refused");
        ok(router_cursor_decode("zzz", 3, &a, out, 2) != 0, "garbage refused");
        ok(router_cursor_decode("", 0, &a, out, 2) != 0, "empty refused");
        ok(router_cursor_decode("MQ", 2, &a, out, 1) != 0, "no fields refused");
        ok(router_cursor_decode("Mv__", 4, &a, out, 1) != 0, "invalid UTF-8 refused");
        ok(router_cursor_decode("M=E=", 4, &a, out, 1) != 0, "padding refused");
        ok(router_cursor_decode("MUE", 3, &a, out, 1) == 0 && strcmp(out[0], "A") == 0,
           "canonical two-byte tail");
        ok(router_cursor_decode("MUF", 3, &a, out, 1) != 0, "non-canonical tail bits refused");
        {
            char f1[513], f2[513], f3[511];
            const char *big[3] = {f1, f2, f3};
            memset(f1, 'a', 512);
            f1[512] = '\0';
            memset(f2, 'b', 512);
            f2[512] = '\0';
            memset(f3, 'c', 510);
            f3[510] = '\0';
            c = router_cursor_encode(&a, big, 3);
            ok(router_cursor_decode(c, strlen(c), &a, out, 3) == 0 && strlen(out[2]) == 510,
               "the longest fields still decode (fuzz regression)");
        }
        arena_cleanup(&a);
    }
}

/* The pure parts of a person's request (people.c): cookies, trusted proxies, the client. */
static void test_people(void)
{
    char v[64], ip[ROUTER_IP_MAX];

    subtest("cookies")
    {
        ok(router_cookie_value("a=1; wf_session=wfs_x; b=2", "wf_session", v, sizeof(v)) &&
               strcmp(v, "wfs_x") == 0,
           "found among others");
        ok(router_cookie_value("wf_session=abc", "wf_session", v, sizeof(v)) &&
               strcmp(v, "abc") == 0,
           "alone");
        ok(!router_cookie_value("xwf_session=abc", "wf_session", v, sizeof(v)), "a longer name");
        ok(!router_cookie_value("wf_sessionx=abc", "wf_session", v, sizeof(v)),
           "a name that starts the same");
        ok(!router_cookie_value("wf_session=", "wf_session", v, sizeof(v)), "empty");
        ok(!router_cookie_value(NULL, "wf_session", v, sizeof(v)), "no header");
        ok(!router_cookie_value("wf_session=0123456789", "wf_session", v, 10), "too long");
        ok(router_cookie_value("wf_session=012345678", "wf_session", v, 10), "just fits");
    }
    subtest("trusted proxies")
    {
        ok(router_ip_trusted("127.0.0.1", "127.0.0.1"), "an address");
        ok(router_ip_trusted("10.0.0.0/8, ::1", "10.200.3.4"), "a block");
        ok(!router_ip_trusted("10.0.0.0/8", "11.0.0.1"), "outside the block");
        ok(router_ip_trusted("192.168.1.0/25", "192.168.1.127"), "a partial byte, in");
        ok(!router_ip_trusted("192.168.1.0/25", "192.168.1.128"), "a partial byte, out");
        ok(router_ip_trusted("fd00::/8", "fd12::1"), "IPv6");
        ok(!router_ip_trusted("10.0.0.0/x", "10.0.0.1"), "a bad prefix length trusts nothing");
        ok(!router_ip_trusted("10.0.0.0/", "10.0.0.1"), "an empty one too");
        ok(!router_ip_trusted("10.0.0.0/33", "10.0.0.1"), "too long a prefix");
        ok(!router_ip_trusted("", "127.0.0.1"), "an empty list");
        ok(!router_ip_trusted("127.0.0.1", ""), "no peer");
    }
    subtest("the client's address")
    {
        router_forwarded_client("203.0.113.5", "", "127.0.0.1", ip);
        is_str(ip, "127.0.0.1", "an untrusted peer: the header is ignored");
        router_forwarded_client("203.0.113.5", "127.0.0.1", "127.0.0.1", ip);
        is_str(ip, "203.0.113.5", "a trusted proxy: the header's client");
        router_forwarded_client("198.51.100.1, 203.0.113.5, 10.0.0.2", "127.0.0.1,10.0.0.0/8",
                                "127.0.0.1", ip);
        is_str(ip, "203.0.113.5", "the rightmost address that is not a proxy");
        router_forwarded_client("nonsense, 10.0.0.2", "127.0.0.1,10.0.0.0/8", "127.0.0.1", ip);
        is_str(ip, "10.0.0.2", "a malformed hop stops the walk");
        router_forwarded_client(NULL, "127.0.0.1", "127.0.0.1", ip);
        is_str(ip, "127.0.0.1", "no header");
    }
}

int main(void)
{
    test_match();
    test_cursor();
    test_people();
    return done_testing();
}
