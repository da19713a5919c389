/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of mcpc, the MCP client: the checks of what a client registers (check.c) and the
 * reading of answers (read.c), both table-driven and pure; then the exchanges (client.c)
 * against a real peer, an MCP server built with the official TypeScript SDK
 * (tests/npm/mcp_server.mjs), started here with node on a free port of 127.0.0.1: JSON and
 * event-stream answers, sessions, paginated tool lists, tool errors, headers, deadlines, the
 * address policy and the bounds. Without node (or the SDK) those are skipped, not passed.
 */
#include "../../src/api/api.h"
#include "../../src/core/clock.h"
#include "../../src/httpc/httpc.h"
#include "../../src/mcpc/mcpc.h"
#include "t.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- Names, URLs, headers ---- */

static void test_checks(void)
{
    subtest("server names")
    {
        ok(mcpc_name_ok("crm", 3), "crm");
        ok(mcpc_name_ok("a_1", 3), "a_1");
        ok(mcpc_name_ok("abcdefghijklmnopqrstuvwxyz012345", 32), "32 characters");
        ok(!mcpc_name_ok("abcdefghijklmnopqrstuvwxyz0123456", 33), "not 33");
        ok(!mcpc_name_ok("", 0), "not empty");
        ok(!mcpc_name_ok("Crm", 3), "no capitals");
        ok(!mcpc_name_ok("c-rm", 4), "no dash");
        ok(!mcpc_name_ok("c.rm", 4), "no dot");
        ok(!mcpc_name_ok("c\0rm", 4), "no NUL");
    }
    subtest("server URLs")
    {
        static const struct {
            const char *url;
            bool allow_private;
            const char *why; /* NULL: accepted */
        } urls[] = {
            {"https://mcp.example.com/mcp", false, NULL},
            {"http://mcp.example.com:8080/", false, NULL},
            {"http://localhost:3000/mcp", false, NULL}, /* a name: judged at connect time */
            {"http://8.8.8.8/mcp", false, NULL},
            {"http://127.0.0.1:3000/mcp", false, "127.0.0.1 is a loopback address"},
            {"http://127.0.0.1:3000/mcp", true, NULL},
            {"http://10.1.2.3/mcp", false, "a private address"},
            {"http://10.1.2.3/mcp", true, NULL},
            {"http://[::1]/mcp", false, "::1 is a loopback address"},
            {"http://[::1]/mcp", true, NULL},
            {"http://169.254.169.254/latest", false, "cloud metadata"},
            {"http://169.254.169.254/latest", true, "cloud metadata"},
            {"http://169.254.1.1/", true, "cloud metadata"},
            {"http://[fd00:ec2::254]/", true, "cloud metadata"},
            {"http://[::ffff:169.254.169.254]/", true, "cloud metadata"},
            {"http://[fd00:ec3::254]/", true, NULL},
            {"ftp://mcp.example.com/", true, "absolute"},
            {"https://user:pw@mcp.example.com/", true, "user name"},
            {"https://mcp.example.com/#x", true, "fragment"},
            {"mcp.example.com", true, "absolute"},
        };
        size_t wrong = 0;
        for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
            struct err e;
            int rc;
            err_clear(&e);
            rc = mcpc_url_check(urls[i].url, urls[i].allow_private, "url", &e);
            if (urls[i].why ? (rc != ERR_INVALID || strcmp(e.param, "url") != 0 ||
                               !strstr(e.msg, urls[i].why))
                            : rc != 0) {
                printf("# %s (%d): rc %d '%s'\n", urls[i].url, urls[i].allow_private, rc, e.msg);
                wrong++;
            }
        }
        is_int(wrong, 0, "each URL of the table is judged as listed");
    }
    subtest("headers")
    {
        static const struct {
            const char *json;
            const char *param; /* NULL: accepted */
            const char *why;
        } cases[] = {
            {"{}", NULL, NULL},
            {"{\"Authorization\": \"Bearer x\", \"X-Api-Key\": \"k\\tv\"}", NULL, NULL},
            {"{\"x!#$%&'*+-.^_`|~9\": \"v\"}", NULL, NULL},
            {"[]", "headers", "object"},
            {"{\"a\": \"v\", \"A\": \"w\"}", "headers", "same header"},
            {"{\"Bad Name\": \"v\"}", "headers", "token"},
            {"{\"\": \"v\"}", "headers", "token"},
            {"{\"X(y)\": \"v\"}", "headers", "token"},
            {"{\"Content-Type\": \"text/plain\"}", "headers", "set by the server"},
            {"{\"host\": \"evil\"}", "headers", "set by the server"},
            {"{\"Mcp-Session-Id\": \"x\"}", "headers", "set by the server"},
            {"{\"Transfer-Encoding\": \"chunked\"}", "headers", "set by the server"},
            {"{\"X\": \"a\\r\\nInjected: 1\"}", "headers.X", "line breaks"},
            {"{\"X\": \"a\\nb\"}", "headers.X", "line breaks"},
            {"{\"X\": \"a\\u0000b\"}", "headers.X", "control"},
            {"{\"X\": \"a\\u007fb\"}", "headers.X", "control"},
            {"{\"X\": \"\"}", "headers.X", "1 to 4096"},
            {"{\"X\": 1}", "headers.X", "string"},
            {"{\"X\": null}", "headers.X", "string"},
        };
        size_t wrong = 0;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            json_t *h = json_loads(cases[i].json, JSON_ALLOW_NUL, NULL);
            struct err e;
            int rc;
            err_clear(&e);
            rc = mcpc_headers_check(h, "headers", &e);
            if (cases[i].param ? (rc != ERR_INVALID || strcmp(e.param, cases[i].param) != 0 ||
                                  !strstr(e.msg, cases[i].why))
                               : rc != 0) {
                printf("# %s: rc %d param '%s' '%s'\n", cases[i].json, rc, e.param, e.msg);
                wrong++;
            }
            json_decref(h);
        }
        is_int(wrong, 0, "each header object of the table is judged as listed");
    }
    subtest("header bounds")
    {
        json_t *h = json_object();
        char name[160], *value = malloc(MCPC_HEADER_VALUE_MAX + 2);
        struct err e;
        for (int i = 0; i < MCPC_HEADERS_MAX; i++) {
            snprintf(name, sizeof(name), "X-%d", i);
            json_object_set_new(h, name, json_string("v"));
        }
        is_int(mcpc_headers_check(h, "headers", &e), 0, "16 headers");
        json_object_set_new(h, "X-16", json_string("v"));
        is_int(mcpc_headers_check(h, "headers", &e), ERR_INVALID, "not 17");
        json_object_clear(h);
        memset(name, 'n', 100);
        name[100] = '\0';
        json_object_set_new(h, name, json_string("v"));
        is_int(mcpc_headers_check(h, "headers", &e), 0, "a name of 100 bytes");
        name[100] = 'n';
        name[101] = '\0';
        json_object_set_new(h, name, json_string("v"));
        is_int(mcpc_headers_check(h, "headers", &e), ERR_INVALID, "not 101");
        json_object_clear(h);
        memset(value, 'v', MCPC_HEADER_VALUE_MAX);
        value[MCPC_HEADER_VALUE_MAX] = '\0';
        json_object_set_new(h, "X", json_string(value));
        is_int(mcpc_headers_check(h, "headers", &e), 0, "a value of 4096 characters");
        value[MCPC_HEADER_VALUE_MAX] = 'v';
        value[MCPC_HEADER_VALUE_MAX + 1] = '\0';
        json_object_set_new(h, "X", json_string(value));
        is_int(mcpc_headers_check(h, "headers", &e), ERR_INVALID, "not 4097");
        is_str(e.param, "headers.X", "param");
        free(value);
        json_decref(h);
    }
    subtest("header lines")
    {
        struct arena a;
        const char **lines = NULL;
        size_t n = 9;
        arena_init(&a);
        is_int(mcpc_header_lines(NULL, &a, &lines, &n), 0, "none");
        is_int(n, 0, "no line");
        is_int(
            mcpc_header_lines("{\"Authorization\":\"Bearer t\",\"X-K\":\"v w\"}", &a, &lines, &n),
            0, "two");
        is_int(n, 2, "two lines");
        ok(n == 2 && strcmp(lines[0], "Authorization: Bearer t") == 0 &&
               strcmp(lines[1], "X-K: v w") == 0,
           "as Name: value");
        is_int(mcpc_header_lines("{\"X\":\"a\\r\\nY: b\"}", &a, &lines, &n), ERR_INVALID,
               "a line break is refused here too");
        is_int(mcpc_header_lines("[1]", &a, &lines, &n), ERR_INVALID, "not an object");
        arena_cleanup(&a);
    }
    subtest("protocol versions")
    {
        size_t i = 0;
        for (; mcpc_versions[i] && api_mcp_versions[i]; i++)
            is_str(mcpc_versions[i], api_mcp_versions[i], "the same as our MCP server's");
        ok(!mcpc_versions[i] && !api_mcp_versions[i], "as many");
    }
    subtest("headers schema")
    {
        json_t *s = mcpc_headers_schema();
        is_int(json_integer_value(json_object_get(s, "maxProperties")), MCPC_HEADERS_MAX,
               "maxProperties");
        ok(json_object_get(json_object_get(s, "additionalProperties"), "pattern") != NULL,
           "values have a pattern");
        json_decref(s);
    }
}

/* ---- Answers ---- */

/* Feed 'body' to a reader of 'kind' for id 'id', 'step' bytes at a time; rc of the finish. */
static int read_all(enum mcpc_body kind, const char *body, size_t step, int64_t id,
                    char **result_text)
{
    struct mcpc_reader r;
    char why[200];
    size_t len = strlen(body), at = 0;
    int rc = 0;

    mcpc_reader_init(&r, kind, id, 4096);
    while (at < len && rc == 0) {
        size_t n = len - at < step ? len - at : step;
        rc = mcpc_reader_feed(&r, body + at, n);
        at += n;
    }
    if (rc == 0 || rc == MCPC_READ_DONE)
        rc = mcpc_reader_finish(&r, why, sizeof(why));
    *result_text = NULL;
    if (!rc)
        *result_text = json_dumps(mcpc_reader_response(&r), JSON_COMPACT | JSON_SORT_KEYS);
    mcpc_reader_cleanup(&r);
    return rc;
}

static void test_answers(void)
{
    subtest("content types")
    {
        is_int(mcpc_body_kind("application/json", 16), MCPC_BODY_JSON, "json");
        is_int(mcpc_body_kind("Application/JSON; charset=utf-8", 31), MCPC_BODY_JSON, "json+");
        is_int(mcpc_body_kind("text/event-stream", 17), MCPC_BODY_SSE, "sse");
        is_int(mcpc_body_kind("text/event-stream;charset=utf-8", 31), MCPC_BODY_SSE, "sse+");
        is_int(mcpc_body_kind("text/plain", 10), MCPC_BODY_OTHER, "text");
        is_int(mcpc_body_kind("application/jsonx", 17), MCPC_BODY_OTHER, "no prefix match");
        is_int(mcpc_body_kind("", 0), MCPC_BODY_OTHER, "none");
    }
    subtest("readers")
    {
        static const struct {
            enum mcpc_body kind;
            const char *body;
            const char *want; /* the response, compact with sorted keys; NULL: none */
        } cases[] = {
            {MCPC_BODY_JSON, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":1}}",
             "{\"id\": 7, \"jsonrpc\": \"2.0\", \"result\": {\"a\": 1}}"},
            {MCPC_BODY_JSON,
             "[{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}},{\"jsonrpc\":\"2.0\","
             "\"id\":7,\"error\":{\"code\":-1,\"message\":\"m\"}}]",
             "{\"error\": {\"code\": -1, \"message\": \"m\"}, \"id\": 7, \"jsonrpc\": \"2.0\"}"},
            {MCPC_BODY_JSON, "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}", NULL},
            {MCPC_BODY_JSON, "{\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}", NULL},
            {MCPC_BODY_JSON, "{\"jsonrpc\":\"2.0\",\"id\":7}", NULL},
            {MCPC_BODY_JSON, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}", NULL},
            {MCPC_BODY_JSON, "", NULL},
            {MCPC_BODY_JSON, "{\"id\":7,\"id\":7,\"result\":{}}", NULL},
            {MCPC_BODY_SSE,
             "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\"}\n\n"
             ": a comment\n\nevent: message\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,"
             "\"result\":{\"b\":2}}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,"
             "\"result\":{\"late\":1}}\n\n",
             "{\"id\": 7, \"jsonrpc\": \"2.0\", \"result\": {\"b\": 2}}"},
            {MCPC_BODY_SSE,
             "data: not json\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\n"
             "data: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":7,\"result\":{}}\r\n\r\n",
             "{\"id\": 7, \"jsonrpc\": \"2.0\", \"result\": {}}"},
            {MCPC_BODY_SSE, "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", NULL},
            {MCPC_BODY_SSE, "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n", NULL},
            {MCPC_BODY_OTHER, "hello", NULL},
        };
        size_t wrong = 0;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            for (size_t step = 1; step <= 64; step *= 4) {
                char *got = NULL;
                int rc = read_all(cases[i].kind, cases[i].body, step, 7, &got);
                char *want = NULL;
                if (cases[i].want) {
                    json_t *w = json_loads(cases[i].want, 0, NULL);
                    want = json_dumps(w, JSON_COMPACT | JSON_SORT_KEYS);
                    json_decref(w);
                }
                if (want ? (rc != 0 || !got || strcmp(got, want) != 0) : rc == 0) {
                    printf("# case %zu step %zu: rc %d got %s\n", i, step, rc, got ? got : "-");
                    wrong++;
                }
                free(got);
                free(want);
            }
        }
        is_int(wrong, 0, "each body of the table is read as listed, split anywhere");
    }
    subtest("reader bounds")
    {
        struct mcpc_reader r;
        char big[64];
        memset(big, ' ', sizeof(big));
        mcpc_reader_init(&r, MCPC_BODY_JSON, 1, 100);
        is_int(mcpc_reader_feed(&r, big, 64), 0, "64 bytes");
        is_int(mcpc_reader_feed(&r, big, 37), ERR_LIMIT, "then not 37 more past 100");
        mcpc_reader_cleanup(&r);
        mcpc_reader_init(&r, MCPC_BODY_SSE, 1, 100);
        is_int(mcpc_reader_feed(&r, ": ", 2), 0, "a stream");
        for (int i = 0; i < 2; i++)
            mcpc_reader_feed(&r, big, 40);
        is_int(mcpc_reader_feed(&r, big, 40), ERR_LIMIT, "a stream is bounded as a whole");
        mcpc_reader_cleanup(&r);
        mcpc_reader_init(&r, MCPC_BODY_OTHER, 1, 100);
        is_int(mcpc_reader_feed(&r, "x", 1), ERR_INVALID, "another type is refused at once");
        mcpc_reader_cleanup(&r);
    }
    subtest("responses")
    {
        json_t *m = json_loads("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,"
                               "\"message\":\"Method\\nnot found\"}}",
                               0, NULL);
        const json_t *res = NULL;
        char why[300];
        is_int(mcpc_response_result(m, &res, why, sizeof(why)), ERR_UPSTREAM, "an error");
        is_str(why, "MCP error -32601: Method not found", "its words, line breaks as spaces");
        json_decref(m);
        m = json_loads("{\"id\":1,\"result\":{\"x\":1}}", 0, NULL);
        is_int(mcpc_response_result(m, &res, why, sizeof(why)), 0, "a result");
        ok(res && json_object_get(res, "x"), "borrowed");
        json_decref(m);
        m = json_loads("{\"id\":1,\"result\":3}", 0, NULL);
        is_int(mcpc_response_result(m, &res, why, sizeof(why)), ERR_INVALID, "not an object");
        json_decref(m);
    }
    subtest("tool pages")
    {
        json_t *tools = json_array();
        const char *cursor = "x";
        char why[200];
        json_t *page = json_loads(
            "{\"tools\":[{\"name\":\"a\",\"description\":\"A\",\"inputSchema\":{\"type\":"
            "\"object\",\"properties\":{\"q\":{\"type\":\"string\"}}},\"annotations\":{"
            "\"readOnlyHint\":true}},{\"name\":\"b\",\"annotations\":{\"readOnlyHint\":\"yes\"}},"
            "{\"name\":\"a\"},{\"name\":3},{\"description\":\"no name\"},{\"name\":\"\"},7,"
            "{\"name\":\"c\",\"inputSchema\":[1]}],\"nextCursor\":\"p2\"}",
            0, NULL);
        is_int(mcpc_tools_page(page, tools, &cursor, why, sizeof(why)), 0, "a page");
        is_str(cursor, "p2", "its cursor");
        is_int(json_array_size(tools), 3, "a, b, c: the others skipped");
        is_str(json_string_value(json_object_get(json_array_get(tools, 0), "effect")), "read",
               "readOnlyHint true: read");
        is_str(json_string_value(json_object_get(json_array_get(tools, 1), "effect")), "write",
               "anything else: write");
        is_str(json_string_value(json_object_get(json_array_get(tools, 1), "description")), "",
               "no description: empty");
        is_str(json_string_value(json_object_get(
                   json_object_get(json_array_get(tools, 2), "input_schema"), "type")),
               "object", "a schema that is not an object: {type: object}");
        ok(json_object_get(
               json_object_get(json_object_get(json_array_get(tools, 0), "input_schema"),
                               "properties"),
               "q"),
           "a schema is kept");
        json_decref(page);
        page = json_loads("{\"tools\":[],\"nextCursor\":\"\"}", 0, NULL);
        is_int(mcpc_tools_page(page, tools, &cursor, why, sizeof(why)), 0, "an empty page");
        ok(cursor == NULL, "an empty cursor is the end");
        json_decref(page);
        page = json_loads("{\"tool\":[]}", 0, NULL);
        is_int(mcpc_tools_page(page, tools, &cursor, why, sizeof(why)), ERR_INVALID,
               "no tools array");
        json_decref(page);
        json_array_clear(tools);
        page = json_array();
        for (int i = 0; i <= MCPC_TOOLS_MAX; i++) {
            char name[16];
            snprintf(name, sizeof(name), "t%d", i);
            json_array_append_new(page, json_pack("{s:s}", "name", name));
        }
        page = json_pack("{s:o}", "tools", page);
        is_int(mcpc_tools_page(page, tools, &cursor, why, sizeof(why)), ERR_LIMIT, "1001 tools");
        ok(strstr(why, "1000") != NULL, "says the bound");
        json_decref(page);
        json_decref(tools);
    }
    subtest("descriptions are cut on a character")
    {
        json_t *tools = json_array();
        const char *cursor;
        char why[100], *d = malloc(MCPC_DESCRIPTION_MAX + 8);
        json_t *page;
        memset(d, 'a', MCPC_DESCRIPTION_MAX - 1);
        memcpy(d + MCPC_DESCRIPTION_MAX - 1, "\xc3\xa9zz", 5);
        page = json_pack("{s:[{s:s,s:s}]}", "tools", "name", "t", "description", d);
        mcpc_tools_page(page, tools, &cursor, why, sizeof(why));
        is_int(json_string_length(json_object_get(json_array_get(tools, 0), "description")),
               MCPC_DESCRIPTION_MAX - 1, "cut before the character that does not fit");
        free(d);
        json_decref(page);
        json_decref(tools);
    }
    subtest("results")
    {
        static const struct {
            const char *result;
            const char *text;
            bool is_error;
        } cases[] = {
            {"{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}", "hi", false},
            {"{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],"
             "\"isError\":true}",
             "a\nb", true},
            {"{\"content\":[{\"type\":\"image\",\"data\":\"x\",\"mimeType\":\"image/png\"},"
             "{\"type\":\"audio\",\"data\":\"x\"},{\"type\":\"resource\",\"resource\":{\"uri\":"
             "\"u:1\",\"text\":\"inside\"}},{\"type\":\"resource\",\"resource\":{\"uri\":\"u:2\","
             "\"blob\":\"x\"}},{\"type\":\"resource_link\",\"uri\":\"u:3\"},{\"type\":\"new\"},"
             "{}]}",
             "[image: image/png]\n[audio: unknown type]\ninside\n[resource: u:2]\n"
             "[resource link: u:3]\n[new content]\n[unknown content]",
             false},
            {"{\"content\":[],\"structuredContent\":{\"answer\":42}}", "{\"answer\":42}", false},
            {"{\"structuredContent\":[1,2]}", "[1,2]", false},
            {"{\"content\":[{\"type\":\"text\",\"text\":\"t\"}],\"structuredContent\":{\"a\":1}}",
             "t", false},
            {"{}", "", false},
            {"{\"isError\":\"true\"}", "", false},
        };
        size_t wrong = 0;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            json_t *r = json_loads(cases[i].result, 0, NULL);
            struct buf b;
            bool is_error = !cases[i].is_error;
            buf_init(&b, 4096);
            if (mcpc_result_text(r, &b, &is_error) != 0 || strcmp(buf_ptr(&b), cases[i].text) ||
                is_error != cases[i].is_error) {
                printf("# %s: '%s' %d\n", cases[i].result, buf_ptr(&b), is_error);
                wrong++;
            }
            buf_cleanup(&b);
            json_decref(r);
        }
        is_int(wrong, 0, "each result of the table gives its text");
    }
}

/* ---- The peer ---- */

static pid_t peer_pid;
static int peer_stdin = -1, peer_port;

/* Start `node tests/npm/mcp_server.mjs` and read its port (at most 20 s). 0, or -1. */
static int peer_start(void)
{
    int in[2], out[2];
    char line[128];
    size_t got = 0;
    int64_t deadline = clock_mono_us() + 20 * 1000000LL;

    if (access("node_modules/@modelcontextprotocol/sdk/package.json", R_OK) != 0 || pipe(in) != 0)
        return -1;
    if (pipe(out) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    peer_pid = fork();
    if (peer_pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execlp("node", "node", "tests/npm/mcp_server.mjs", (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    peer_stdin = in[1];
    while (peer_pid > 0 && got < sizeof(line) - 1 && !memchr(line, '\n', got)) {
        struct pollfd p = {out[0], POLLIN, 0};
        int64_t left = (deadline - clock_mono_us()) / 1000;
        ssize_t n;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        n = read(out[0], line + got, sizeof(line) - 1 - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(out[0]);
    line[got] = '\0';
    if (sscanf(line, "listening %d", &peer_port) != 1 || peer_port <= 0) {
        printf("# the peer did not start: '%s'\n", line);
        return -1;
    }
    return 0;
}

static void peer_stop(void)
{
    if (peer_stdin >= 0)
        close(peer_stdin); /* the peer exits when its stdin closes */
    if (peer_pid > 0) {
        int status;
        kill(peer_pid, SIGTERM);
        waitpid(peer_pid, &status, 0);
    }
}

/* GET http://127.0.0.1:<peer>/stats: a new JSON object, or NULL. */
static json_t *peer_stats(void)
{
    struct sockaddr_in a;
    char req[128], resp[8192];
    size_t got = 0;
    const char *body;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    json_t *out = NULL;

    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)peer_port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    snprintf(req, sizeof(req), "GET /stats HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t n;
        while (got < sizeof(resp) - 1 && poll(&p, 1, 5000) > 0 &&
               (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
            got += (size_t)n;
    }
    if (fd >= 0)
        close(fd);
    resp[got] = '\0';
    body = strstr(resp, "\r\n\r\n");
    if (body)
        out = json_loads(body + 4, 0, NULL);
    return out;
}

static char url_buf[8][128];

/* "http://127.0.0.1:<port>/<path>" (one of a few buffers). */
static const char *peer_url(const char *path)
{
    static int next;
    char *u = url_buf[next++ % 8];
    snprintf(u, sizeof(url_buf[0]), "http://127.0.0.1:%d/%s", peer_port, path);
    return u;
}

/* The names of 'tools', joined by ','. */
static void names_of(const json_t *tools, char *out, size_t n)
{
    size_t i, at = 0;
    const json_t *t;
    out[0] = '\0';
    json_array_foreach(tools, i, t)
    {
        int w = snprintf(out + at, n - at, "%s%s", i ? "," : "",
                         json_string_value(json_object_get(t, "name")));
        if (w < 0 || (size_t)w >= n - at)
            break;
        at += (size_t)w;
    }
}

#define ALL_TOOLS "echo,add,fail,secret,sleep,structured,mixed,files.read,Bad Name!"

static void test_lists(struct mcpc_env *env)
{
    static const char *const paths[] = {"json", "sse", "stateless"};
    for (size_t i = 0; i < 3; i++) {
        subtest(paths[i])
        {
            struct mcpc_server srv = {peer_url(paths[i]), NULL, 0};
            json_t *tools = NULL, *stats;
            char why[256] = "", names[512];
            int rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
            is_int(rc, 0, "the tool list is read over 3 pages");
            if (rc)
                printf("# %s\n", why);
            names_of(tools, names, sizeof(names));
            is_str(names, ALL_TOOLS, "every tool, in order");
            is_str(json_string_value(json_object_get(json_array_get(tools, 0), "effect")), "read",
                   "echo is read only");
            is_str(json_string_value(json_object_get(json_array_get(tools, 2), "effect")), "write",
                   "fail writes");
            is_str(json_string_value(json_object_get(
                       json_object_get(json_array_get(tools, 0), "input_schema"), "type")),
                   "object", "schemas kept");
            json_decref(tools);
            stats = peer_stats();
            is_str(json_string_value(json_object_get(
                       json_object_get(json_object_get(stats, "last"), paths[i]), "protocol")),
                   "2025-11-25", "MCP-Protocol-Version is sent after initialize");
            if (i < 2)
                ok(json_string_value(json_object_get(
                       json_object_get(json_object_get(stats, "last"), paths[i]), "session")),
                   "Mcp-Session-Id is sent after initialize");
            json_decref(stats);
        }
    }
    subtest("sessions are ended")
    {
        int64_t deadline = clock_mono_us() + 10 * 1000000LL;
        json_t *stats = NULL;
        bool ended = false;
        while (!ended && clock_mono_us() < deadline) {
            json_decref(stats);
            stats = peer_stats();
            ended = json_integer_value(json_object_get(stats, "open")) == 0;
            if (!ended)
                usleep(20000);
        }
        ok(json_integer_value(json_object_get(stats, "opened")) >= 2, "sessions were opened");
        ok(ended, "and each was DELETEd by the client");
        json_decref(stats);
    }
}

/* One call; the outcome's text into 'text' ('n' bytes). */
static int call(struct mcpc_env *env, const char *path, const char *tool, const char *args,
                const char *const *headers, size_t nh, char *text, size_t n, bool *is_error)
{
    struct mcpc_server srv = {peer_url(path), headers, nh};
    struct mcpc_outcome o;
    json_t *a = args ? json_loads(args, 0, NULL) : NULL;
    int rc = mcpc_call(env, &srv, tool, a, &o);
    snprintf(text, n, "%s", o.text ? o.text : "(null)");
    *is_error = o.is_error;
    mcpc_outcome_cleanup(&o);
    json_decref(a);
    return rc;
}

static void test_calls(struct mcpc_env *env)
{
    static const char *const auth[] = {"Authorization: Bearer s3cret"};
    static const char *const wrong_auth[] = {"Authorization: Bearer nope"};
    char text[512];
    bool is_error;
    int rc;

    for (int i = 0; i < 2; i++) {
        const char *path = i ? "sse" : "json";
        subtest(path)
        {
            rc = call(env, path, "echo", "{\"text\":\"hi\"}", NULL, 0, text, sizeof(text),
                      &is_error);
            is_int(rc, 0, "echo answers");
            is_str(text, "echo: hi", "its text");
            ok(!is_error, "not an error");
            rc = call(env, path, "add", "{\"a\":2,\"b\":40}", NULL, 0, text, sizeof(text),
                      &is_error);
            is_str(text, "42", "add");
            rc = call(env, path, "fail", NULL, NULL, 0, text, sizeof(text), &is_error);
            is_int(rc, 0, "a tool error is an answer");
            ok(is_error, "isError");
            is_str(text, "it failed on purpose", "with its text");
            rc = call(env, path, "structured", NULL, NULL, 0, text, sizeof(text), &is_error);
            is_str(text, "{\"answer\":42}", "structured content as JSON");
            rc = call(env, path, "mixed", NULL, NULL, 0, text, sizeof(text), &is_error);
            is_str(text, "first\n[image: image/png]\n[resource link: file:///tmp/x.txt]",
                   "content of several kinds");
            rc = call(env, path, "files.read", "{\"path\":\"/a\"}", NULL, 0, text, sizeof(text),
                      &is_error);
            is_str(text, "read /a", "a name with a dot");
            rc = call(env, path, "nope", NULL, NULL, 0, text, sizeof(text), &is_error);
            ok(rc == ERR_UPSTREAM && is_error, "an unknown tool: a JSON-RPC error");
            ok(strstr(text, "MCP error") && strstr(text, "Unknown tool: nope"), text);
            rc = call(env, path, "secret", NULL, auth, 1, text, sizeof(text), &is_error);
            is_str(text, "accepted", "the server's headers are sent");
            rc = call(env, path, "secret", NULL, NULL, 0, text, sizeof(text), &is_error);
            ok(rc == 0 && is_error, "without them the tool refuses");
        }
    }
    subtest("headers the server requires")
    {
        struct mcpc_server srv = {peer_url("auth"), NULL, 0};
        json_t *tools = NULL;
        char why[256];
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "refused without them");
        is_str(why, "the server answered HTTP 401 (MCP error -32001: Unauthorized)", why);
        srv.headers = wrong_auth;
        srv.nheaders = 1;
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "and with a wrong one");
        srv.headers = auth;
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, 0, "read with them");
        is_int(json_array_size(tools), 9, "every tool");
        json_decref(tools);
        rc = call(env, "auth", "secret", NULL, auth, 1, text, sizeof(text), &is_error);
        is_str(text, "accepted", "and called");
    }
}

static void test_failures(struct mcpc_env *env)
{
    char why[256];
    json_t *tools = NULL;
    struct mcpc_server srv = {NULL, NULL, 0};
    int rc;

    subtest("bounds")
    {
        srv.url = peer_url("pages70");
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_LIMIT, "70 pages");
        is_str(why, "the tool list has more than 64 pages", why);
        srv.url = peer_url("tools1001");
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_LIMIT, "1001 tools");
        is_str(why, "the server has more than 1000 tools", why);
        ok(tools == NULL, "no list");
    }
    subtest("answers that break the protocol")
    {
        srv.url = peer_url("raw/old");
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_INVALID, "an old protocol version");
        ok(strstr(why, "2024-11-05") != NULL, why);
        srv.url = peer_url("raw/text");
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_INVALID, "text/plain");
        is_str(why, "the answer is neither JSON nor an event stream", why);
        srv.url = peer_url("nowhere");
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "a 404");
        is_str(why, "the server answered HTTP 404", why);
    }
    subtest("deadlines")
    {
        struct mcpc_env quick = *env;
        char text[256];
        bool is_error;
        int64_t t0 = clock_mono_us();
        quick.timeout_ms = 400;
        srv.url = peer_url("raw/hang");
        rc = mcpc_list(&quick, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "a server that never answers");
        is_str(why, "timed out after 400 ms", why);
        ok(clock_mono_us() - t0 < 3000000, "within the deadline, give or take");
        quick.timeout_ms = 1000;
        rc = call(&quick, "sse", "sleep", "{\"ms\":5000}", NULL, 0, text, sizeof(text), &is_error);
        is_int(rc, ERR_UPSTREAM, "a call longer than the deadline");
        is_str(text, "timed out after 1 s", text);
        rc = call(env, "json", "sleep", "{\"ms\":50}", NULL, 0, text, sizeof(text), &is_error);
        is_str(text, "slept", "a short one answers");
    }
    subtest("addresses")
    {
        struct mcpc_env strict = *env;
        char url[128];
        strict.allow_private = false;
        srv.url = peer_url("json");
        rc = mcpc_list(&strict, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "127.0.0.1 without the setting");
        is_str(why, "address refused: 127.0.0.1 is a loopback address", why);
        snprintf(url, sizeof(url), "http://localhost:%d/json", peer_port);
        srv.url = url;
        rc = mcpc_list(&strict, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "a name of a loopback address too");
        ok(strstr(why, "address refused:") && strstr(why, "loopback"), why);
        srv.url = "http://169.254.169.254/latest";
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "metadata, even with the setting");
        is_str(why, "address refused: 169.254.169.254 is a cloud metadata address", why);
    }
    subtest("nobody listening")
    {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        socklen_t len = sizeof(a);
        char url[128];
        memset(&a, 0, sizeof(a));
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd, (struct sockaddr *)&a, sizeof(a));
        getsockname(fd, (struct sockaddr *)&a, &len);
        close(fd); /* a port nobody listens on */
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/mcp", ntohs(a.sin_port));
        srv.url = url;
        rc = mcpc_list(env, &srv, &tools, why, sizeof(why));
        is_int(rc, ERR_UPSTREAM, "refused");
        is_str(why, "connection refused", why);
    }
    subtest("malformed input")
    {
        static const char *const bad[] = {"X: a\r\nY: b"};
        struct mcpc_outcome o;
        srv.url = peer_url("json");
        srv.headers = bad;
        srv.nheaders = 1;
        is_int(mcpc_call(env, &srv, "echo", NULL, &o), ERR_INVALID, "a line break in a line");
        mcpc_outcome_cleanup(&o);
        srv.headers = NULL;
        srv.nheaders = 0;
        is_int(mcpc_call(env, &srv, NULL, NULL, &o), ERR_INVALID, "no tool");
        mcpc_outcome_cleanup(&o);
    }
}

/* ---- Many at once ---- */

struct many {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int left, good;
};

static void many_done(void *ud, struct mcpc_outcome *o)
{
    struct many *m = ud;
    pthread_mutex_lock(&m->mu);
    if (o->rc == 0 && strcmp(o->text, "echo: x") == 0)
        m->good++;
    m->left--;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

static void test_many(struct mcpc_env *env)
{
    subtest("20 calls at once, no thread each")
    {
        struct many m = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 20, 0};
        json_t *args = json_pack("{s:s}", "text", "x");
        for (int i = 0; i < 20; i++) {
            struct mcpc_server srv = {peer_url(i % 2 ? "sse" : "json"), NULL, 0};
            mcpc_call_start(env, &srv, "echo", args, many_done, &m);
        }
        json_decref(args);
        pthread_mutex_lock(&m.mu);
        while (m.left > 0)
            pthread_cond_wait(&m.cv, &m.mu);
        pthread_mutex_unlock(&m.mu);
        is_int(m.good, 20, "every one answered");
    }
}

int main(void)
{
    struct httpc *h = NULL;
    struct mcpc_env env;

    signal(SIGPIPE, SIG_IGN);
    test_checks();
    test_answers();
    if (peer_start() != 0) {
        skip("the exchanges with the SDK's server", "node or @modelcontextprotocol/sdk missing");
        peer_stop();
        return done_testing();
    }
    if (httpc_new(&h) != 0) {
        ok(0, "httpc starts");
        peer_stop();
        return done_testing();
    }
    memset(&env, 0, sizeof(env));
    env.httpc = h;
    env.allow_private = true;
    env.timeout_ms = 20000;
    test_lists(&env);
    test_calls(&env);
    test_failures(&env);
    test_many(&env);
    httpc_free(h);
    peer_stop();
    return done_testing();
}
