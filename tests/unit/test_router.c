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

int main(void)
{
    test_match();
    test_cursor();
    return done_testing();
}
