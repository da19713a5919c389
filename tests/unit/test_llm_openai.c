/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of llm/openai.c with tools, against a scripted server on 127.0.0.1 run by a thread
 * of this file (each connection gets the next answer of a script, and the request bodies are
 * kept): the request body (tools, history and steps with tool calls and results, no `tools`
 * member without tools), tool calls read from a stream split as real providers split it and
 * from a whole answer, text and calls in one step, a retry after a stream cut in the middle of
 * a call (assembled afresh), a malformed call, a sink without tool_calls, and a tool whose
 * parameters are not JSON. Then the same engine against tests/mock/openai_mock.py (python3)
 * with its [[tools:B64]] script: the stand-in the HTTP suites use speaks what we read.
 * Run from the repository root.
 */
#include "../../src/core/buf.h"
#include "../../src/core/clock.h"
#include "../../src/core/str.h"
#include "../../src/httpc/httpc.h"
#include "../../src/llm/llm.h"
#include "t.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define WAIT_MS 20000 /* bound on every wait */
#define MAX_REQ 8     /* requests kept per script */

/* ---- A scripted server ---- */

struct server {
    int fd, port;
    int stop[2]; /* a byte on stop[1] ends the thread */
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    const char *const *answers; /* under 'mu': the script, one answer per connection */
    size_t nanswers;
    size_t requests;            /* under 'mu': requests read */
    struct buf bodies[MAX_REQ]; /* under 'mu': their bodies */
};

static int wait_readable(struct server *s, int fd)
{
    struct pollfd p[2] = {{fd, POLLIN, 0}, {s->stop[0], POLLIN, 0}};
    if (poll(p, 2, WAIT_MS) <= 0 || p[1].revents)
        return 0;
    return 1;
}

/* Read one request from 'c' into 'b' (headers and body); its body's offset in '*body'. */
static bool read_request(struct server *s, int c, struct buf *b, size_t *body)
{
    size_t want = 0;
    char tmp[4096];
    bool continued = false;

    while (!want || buf_len(b) < want) {
        ssize_t r;
        const char *end;
        if (!wait_readable(s, c))
            return false;
        r = read(c, tmp, sizeof(tmp));
        if (r <= 0 || buf_append(b, tmp, (size_t)r) != 0)
            return false;
        end = memmem(buf_ptr(b), buf_len(b), "\r\n\r\n", 4);
        if (end && !want) {
            const char *cl = strcasestr(buf_ptr(b), "\r\ncontent-length:");
            uint64_t n = 0;
            *body = (size_t)(end + 4 - buf_ptr(b));
            want = *body;
            if (cl && cl < end) {
                const char *p = cl + 17, *q;
                while (*p == ' ')
                    p++;
                q = p;
                while (*q >= '0' && *q <= '9')
                    q++;
                if (str_to_u64((struct str){p, (size_t)(q - p)}, &n) == 0)
                    want += (size_t)n;
            }
            if (!continued && strcasestr(buf_ptr(b), "\r\nexpect: 100-continue")) {
                ssize_t w = write(c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
                (void)w;
                continued = true;
            }
        }
    }
    return true;
}

static void *serve(void *arg)
{
    struct server *s = arg;
    struct buf req;

    buf_init(&req, 8u << 20);
    while (wait_readable(s, s->fd)) {
        size_t body = 0;
        int c = accept(s->fd, NULL, NULL);
        if (c < 0)
            continue;
        buf_reset(&req);
        if (read_request(s, c, &req, &body)) {
            const char *answer;
            pthread_mutex_lock(&s->mu);
            if (s->requests < MAX_REQ) {
                buf_reset(&s->bodies[s->requests]);
                buf_append(&s->bodies[s->requests], buf_ptr(&req) + body, buf_len(&req) - body);
            }
            answer = s->requests < s->nanswers ? s->answers[s->requests] : NULL;
            s->requests++;
            pthread_mutex_unlock(&s->mu);
            if (!answer)
                answer = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
                         "Connection: close\r\n\r\n";
            for (size_t off = 0, n = strlen(answer); off < n;) {
                /* in pieces of 7 bytes: the engine must join what the network splits */
                ssize_t w = write(c, answer + off, n - off < 7 ? n - off : 7);
                if (w <= 0)
                    break;
                off += (size_t)w;
            }
        }
        shutdown(c, SHUT_RDWR);
        close(c);
    }
    buf_cleanup(&req);
    return NULL;
}

static int server_start(struct server *s)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);

    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    for (size_t i = 0; i < MAX_REQ; i++)
        buf_init(&s->bodies[i], 1u << 20);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s->fd, 16) ||
        getsockname(s->fd, (struct sockaddr *)&a, &len) != 0 || pipe(s->stop) != 0)
        return -1;
    s->port = ntohs(a.sin_port);
    s->running = pthread_create(&s->thread, NULL, serve, s) == 0;
    return s->running ? 0 : -1;
}

/* Answer the next connections with 'answers' (n of them), forgetting the requests so far. */
static void server_script(struct server *s, const char *const *answers, size_t n)
{
    pthread_mutex_lock(&s->mu);
    s->answers = answers;
    s->nanswers = n;
    s->requests = 0;
    pthread_mutex_unlock(&s->mu);
}

static size_t server_requests(struct server *s)
{
    size_t n;
    pthread_mutex_lock(&s->mu);
    n = s->requests;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* The body of request 'i' as JSON (a new reference), or NULL. */
static json_t *server_body(struct server *s, size_t i)
{
    json_t *v = NULL;
    pthread_mutex_lock(&s->mu);
    if (i < s->requests && i < MAX_REQ)
        v = json_loadb(buf_ptr(&s->bodies[i]), buf_len(&s->bodies[i]), 0, NULL);
    pthread_mutex_unlock(&s->mu);
    return v;
}

static void server_stop(struct server *s)
{
    if (s->running) {
        ssize_t w = write(s->stop[1], "x", 1);
        (void)w;
        pthread_join(s->thread, NULL);
    }
    close(s->stop[0]);
    close(s->stop[1]);
    close(s->fd);
    for (size_t i = 0; i < MAX_REQ; i++)
        buf_cleanup(&s->bodies[i]);
    pthread_mutex_destroy(&s->mu);
}

/* ---- Answers ---- */

/* An event stream of the events 'ev' (NULL-terminated), closed by the server; into 'b'. */
static const char *sse(struct buf *b, const char *const *ev)
{
    buf_reset(b);
    buf_appends(b, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                   "Connection: close\r\n\r\n");
    for (size_t i = 0; ev[i]; i++)
        buf_appendf(b, "data: %s\n\n", ev[i]);
    return buf_ptr(b);
}

/* A JSON answer 'body' (a server that ignores "stream"); into 'b'. */
static const char *whole(struct buf *b, const char *body)
{
    buf_reset(b);
    buf_appendf(b,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                "Connection: close\r\n\r\n%s",
                strlen(body), body);
    return buf_ptr(b);
}

#define CHUNK(delta, finish)                                                                       \
    "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","   \
    "\"choices\":[{\"index\":0,\"delta\":" delta ",\"finish_reason\":" finish "}]}"
#define USAGE                                                                                      \
    "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","   \
    "\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":9,"                      \
    "\"total_tokens\":49}}"

/* ---- The sink ---- */

struct got {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct buf text;
    struct buf calls; /* "id|name|args" lines */
    int tool_calls;   /* times sink.tool_calls ran */
    int done;
    bool calls_before_done;
    bool failed;
    char msg[256];
    struct llm_usage usage;
};

static void on_delta(void *ud, const char *p, size_t n)
{
    struct got *g = ud;
    pthread_mutex_lock(&g->mu);
    buf_append(&g->text, p, n);
    pthread_mutex_unlock(&g->mu);
}

static void on_tool_calls(void *ud, const struct llm_tool_call *calls, size_t n)
{
    struct got *g = ud;
    pthread_mutex_lock(&g->mu);
    g->tool_calls++;
    g->calls_before_done = g->done == 0;
    for (size_t i = 0; i < n; i++)
        buf_appendf(&g->calls, "%s|%s|%s\n", calls[i].id, calls[i].name, calls[i].arguments);
    pthread_mutex_unlock(&g->mu);
}

static void on_done(void *ud, const struct llm_usage *u, const struct err *e)
{
    struct got *g = ud;
    pthread_mutex_lock(&g->mu);
    g->done++;
    g->failed = e != NULL;
    if (e)
        snprintf(g->msg, sizeof(g->msg), "%s", e->msg);
    if (u)
        g->usage = *u;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* Call 'l' with 'req' and wait (at most WAIT_MS) for done(); 'with_calls': a sink that takes
 * tool calls. 'g' is cleaned up by got_cleanup(). */
static void run(struct llm *l, const struct llm_request *req, struct got *g, bool with_calls)
{
    struct llm_sink sink = {0};
    struct timespec until;

    memset(g, 0, sizeof(*g));
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    buf_init(&g->text, 1u << 20);
    buf_init(&g->calls, 1u << 20);
    sink.delta = on_delta;
    sink.tool_calls = with_calls ? on_tool_calls : NULL;
    sink.done = on_done;
    sink.ud = g;
    llm_call(l, req, &sink);
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += WAIT_MS / 1000;
    pthread_mutex_lock(&g->mu);
    while (g->done == 0 && pthread_cond_timedwait(&g->cv, &g->mu, &until) == 0)
        ;
    pthread_mutex_unlock(&g->mu);
}

static void got_cleanup(struct got *g)
{
    buf_cleanup(&g->text);
    buf_cleanup(&g->calls);
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}

/* ---- The cases ---- */

/* The string at 'path' in 'v' (members and [indexes]: "messages[3].tool_calls[0].id"), or
 * NULL when there is none. */
static const char *at_str(json_t *v, const char *path)
{
    char key[64];
    const char *p = path;
    while (v && *p) {
        if (*p == '[') {
            uint64_t i = 0;
            const char *q = ++p;
            while (*q >= '0' && *q <= '9')
                q++;
            if (str_to_u64((struct str){p, (size_t)(q - p)}, &i) != 0)
                return NULL;
            v = json_array_get(v, (size_t)i);
            p = *q == ']' ? q + 1 : q;
        } else {
            size_t n = strcspn(p, ".[");
            if (n >= sizeof(key))
                return NULL;
            memcpy(key, p, n);
            key[n] = '\0';
            v = json_object_get(v, key);
            p += n;
        }
        if (*p == '.')
            p++;
    }
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Item 'i' of the array member 'member' of 'v', or NULL. */
static json_t *at(json_t *v, const char *member, size_t i)
{
    return json_array_get(json_object_get(v, member), i);
}

static void test_body(struct llm *l, struct server *s)
{
    struct buf b1;
    const char *ev[] = {CHUNK("{\"role\":\"assistant\",\"content\":\"Done.\"}", "null"),
                        CHUNK("{}", "\"stop\""), "[DONE]", NULL};
    const char *answers[2];
    struct llm_tool tools[] = {
        {"knowledge__search", "Search the knowledge base.",
         "{\"type\":\"object\",\"properties\":{\"query\":{\"type\":\"string\"}},"
         "\"required\":[\"query\"]}"},
        {"tasks__get", NULL, NULL},
    };
    struct llm_tool_call hcall[] = {{"call_h1", "knowledge__search", "{\"query\":\"refunds\"}"}};
    struct llm_tool_call scalls[] = {{"call_s1", "tasks__get", "{\"task_id\":\"tsk_1\"}"},
                                     {"call_s2", "knowledge__search", NULL}};
    struct llm_message hist[5], steps[3];
    struct llm_request req = {0};
    struct got g;
    json_t *body, *m;

    memset(hist, 0, sizeof(hist));
    memset(steps, 0, sizeof(steps));
    hist[0].role = "user";
    hist[0].content = "What is our refund policy?";
    hist[1].role = "assistant";
    hist[1].tool_calls = hcall;
    hist[1].ntool_calls = 1;
    hist[2].role = "tool";
    hist[2].tool_call_id = "call_h1";
    hist[2].content = "{\"passages\":[]}";
    hist[3].role = "assistant";
    hist[3].content = "Nothing is written about refunds.";
    steps[0].role = "assistant";
    steps[0].content = "Let me look.";
    steps[0].tool_calls = scalls;
    steps[0].ntool_calls = 2;
    steps[1].role = "tool";
    steps[1].tool_call_id = "call_s1";
    steps[1].content = "{\"status\":\"done\"}";
    steps[2].role = "tool";
    steps[2].tool_call_id = "call_s2";
    steps[2].content = "error: bad arguments";
    req.employee_name = "Ava";
    req.employee_role = "Support";
    req.history = hist;
    req.nhistory = 4;
    req.message = "And for task tsk_1?";
    req.tools = tools;
    req.ntools = 2;
    req.steps = steps;
    req.nsteps = 3;

    buf_init(&b1, 1u << 20);
    answers[0] = sse(&b1, ev);
    answers[1] = answers[0];
    server_script(s, answers, 2);
    subtest("the request with tools and steps")
    {
        run(l, &req, &g, true);
        is_int(g.done, 1, "done");
        if (!ok(!g.failed, "no error"))
            printf("#   %s\n", g.msg);
        is_str(buf_ptr(&g.text), "Done.", "the reply");
        is_int(g.tool_calls, 0, "no tool calls");
        body = server_body(s, 0);
        ok(body != NULL, "a JSON body");
        is_int(json_array_size(json_object_get(body, "tools")), 2, "two tools");
        is_str(at_str(body, "tools[0].type"), "function", "type function");
        is_str(at_str(body, "tools[0].function.name"), "knowledge__search", "its name");
        is_str(at_str(body, "tools[0].function.description"), "Search the knowledge base.",
               "its description");
        is_str(at_str(body, "tools[0].function.parameters.type"), "object",
               "its parameters, as JSON");
        is_str(at_str(body, "tools[0].function.parameters.required[0]"), "query", "whole");
        m = json_object_get(at(body, "tools", 1), "function");
        ok(json_object_get(m, "description") == NULL && json_object_get(m, "parameters") == NULL,
           "no description or parameters when there are none");
        is_int(json_array_size(json_object_get(body, "messages")), 9,
               "system, 4 of history, the message, 3 steps");
        is_str(at_str(body, "messages[0].role"), "system", "the system message first");
        is_str(at_str(body, "messages[1].content"), "What is our refund policy?", "history");
        m = at(body, "messages", 2);
        is_str(at_str(m, "role"), "assistant", "an assistant that called a tool");
        ok(json_is_null(json_object_get(m, "content")), "content null when it said nothing");
        is_str(at_str(m, "tool_calls[0].id"), "call_h1", "the call's id");
        is_str(at_str(m, "tool_calls[0].type"), "function", "type");
        is_str(at_str(m, "tool_calls[0].function.name"), "knowledge__search", "name");
        is_str(at_str(m, "tool_calls[0].function.arguments"), "{\"query\":\"refunds\"}",
               "arguments, as text");
        ok(json_object_get(m, "tool_call_id") == NULL, "no tool_call_id on an assistant");
        m = at(body, "messages", 3);
        is_str(at_str(m, "role"), "tool", "its result");
        is_str(at_str(m, "tool_call_id"), "call_h1", "answers the call");
        is_str(at_str(m, "content"), "{\"passages\":[]}", "the result");
        ok(json_object_get(m, "tool_calls") == NULL, "no tool_calls on a result");
        m = at(body, "messages", 4);
        is_str(at_str(m, "content"), "Nothing is written about refunds.", "a plain reply");
        ok(json_object_get(m, "tool_calls") == NULL, "without tool_calls");
        is_str(at_str(body, "messages[5].role"), "user", "then the message");
        is_str(at_str(body, "messages[5].content"), "And for task tsk_1?", "its text");
        m = at(body, "messages", 6);
        is_str(at_str(m, "content"), "Let me look.", "a step with text and calls");
        is_int(json_array_size(json_object_get(m, "tool_calls")), 2, "two calls");
        is_str(at_str(m, "tool_calls[1].id"), "call_s2", "in order");
        is_str(at_str(m, "tool_calls[1].function.arguments"), "{}", "no arguments: {}");
        is_str(at_str(body, "messages[7].tool_call_id"), "call_s1", "first result");
        is_str(at_str(body, "messages[8].tool_call_id"), "call_s2", "second result");
        is_str(at_str(body, "messages[8].content"), "error: bad arguments", "its text");
        ok(json_is_true(json_object_get(body, "stream")), "still streamed");
        json_decref(body);
        got_cleanup(&g);
    }
    subtest("no tools: no tools member")
    {
        req.ntools = 0;
        req.tools = NULL;
        req.nsteps = 0;
        run(l, &req, &g, true);
        ok(g.done == 1 && !g.failed, "done");
        body = server_body(s, 1);
        ok(body != NULL && json_object_get(body, "tools") == NULL, "no tools member");
        is_int(json_array_size(json_object_get(body, "messages")), 6, "no steps");
        json_decref(body);
        got_cleanup(&g);
    }
    subtest("a tool whose parameters are not a JSON object")
    {
        struct llm_tool bad[] = {{"t", "x", "[1,2]"}};
        req.tools = bad;
        req.ntools = 1;
        server_script(s, answers, 2);
        run(l, &req, &g, true);
        ok(g.done == 1 && g.failed, "the call fails");
        is_int(server_requests(s), 0, "nothing is sent");
        got_cleanup(&g);
    }
    buf_cleanup(&b1);
}

static void test_stream(struct llm *l, struct server *s)
{
    struct buf b1;
    /* As OpenAI streams two calls: id, type and name in the first piece of each index, the
     * arguments over several, finish_reason "tool_calls", then usage and [DONE]. */
    const char *ev[] = {
        CHUNK("{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,"
              "\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
              "\"arguments\":\"\"}}],\"refusal\":null}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"lo\"}}]}", "null"),
        CHUNK(
            "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"cation\\\": \\\"Pa\"}}]}",
            "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"ris\\\"}\"}}]}", "null"),
        CHUNK("{\"tool_calls\":[{\"index\":1,\"id\":\"call_b\",\"type\":\"function\","
              "\"function\":{\"name\":\"slack__post_message\",\"arguments\":\"\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"{\\\"text\\\":\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"\\\"hi\\\"}\"}}]}",
              "null"),
        CHUNK("{}", "\"tool_calls\""),
        USAGE,
        "[DONE]",
        NULL};
    const char *noname[] = {CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\","
                                  "\"function\":{\"arguments\":\"{}\"}}]}",
                                  "null"),
                            CHUNK("{}", "\"tool_calls\""), "[DONE]", NULL};
    const char *answers[1];
    struct llm_request req = {0};
    struct got g;

    req.message = "Weather in Paris, then tell the team";
    buf_init(&b1, 1u << 20);
    answers[0] = sse(&b1, ev);
    server_script(s, answers, 1);
    subtest("streamed calls, the arguments in pieces")
    {
        run(l, &req, &g, true);
        ok(g.done == 1 && !g.failed, "done");
        is_int(g.tool_calls, 1, "tool_calls once");
        ok(g.calls_before_done, "before done");
        is_str(buf_ptr(&g.calls),
               "call_a|get_weather|{\"location\": \"Paris\"}\n"
               "call_b|slack__post_message|{\"text\":\"hi\"}\n",
               "both calls, whole");
        is_str(buf_ptr(&g.text), "", "no text");
        ok(g.usage.input_tokens == 40 && g.usage.output_tokens == 9, "the server's usage");
        got_cleanup(&g);
    }
    server_script(s, answers, 1);
    subtest("a sink that takes no calls")
    {
        run(l, &req, &g, false);
        ok(g.done == 1 && !g.failed, "done, the calls dropped");
        got_cleanup(&g);
    }
    answers[0] = sse(&b1, noname);
    server_script(s, answers, 1);
    subtest("calls that do not add up at the end of the step")
    {
        run(l, &req, &g, true);
        ok(g.done == 1 && g.failed, "an error");
        is_int(g.tool_calls, 0, "no calls");
        if (!ok(strstr(g.msg, "tool call 0 has no name") != NULL, "it says why"))
            printf("#   got '%s'\n", g.msg);
        got_cleanup(&g);
    }
    buf_cleanup(&b1);
}

static void test_text_and_calls(struct llm *l, struct server *s)
{
    struct buf b1;
    const char *ev[] = {
        CHUNK("{\"role\":\"assistant\",\"content\":\"Let me \"}", "null"),
        CHUNK("{\"content\":\"check.\"}", "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_x\",\"type\":\"function\","
              "\"function\":{\"name\":\"knowledge__search\",\"arguments\":\"{\\\"query\\\"\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":\\\"refunds\\\"}\"}}]}",
              "null"),
        CHUNK("{}", "\"tool_calls\""),
        "[DONE]",
        NULL};
    const char *answers[1];
    struct llm_request req = {0};
    struct got g;

    req.message = "Refunds?";
    buf_init(&b1, 1u << 20);
    answers[0] = sse(&b1, ev);
    server_script(s, answers, 1);
    subtest("text and a call in one step")
    {
        run(l, &req, &g, true);
        ok(g.done == 1 && !g.failed, "done");
        is_str(buf_ptr(&g.text), "Let me check.", "the text, as deltas");
        is_str(buf_ptr(&g.calls), "call_x|knowledge__search|{\"query\":\"refunds\"}\n", "the call");
        ok(g.usage.output_tokens == 2 + 1 + 2, "no usage: the words of text and call");
        got_cleanup(&g);
    }
    buf_cleanup(&b1);
}

static void test_whole(struct llm *l, struct server *s)
{
    struct buf b1;
    const char *answers[1];
    struct llm_request req = {0};
    struct got g;

    req.message = "two things";
    buf_init(&b1, 1u << 20);
    answers[0] = whole(
        &b1, "{\"id\":\"chatcmpl-2\",\"object\":\"chat.completion\",\"created\":1,\"model\":\"m\","
             "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,"
             "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
             "\"tasks__get\",\"arguments\":\"{\\\"task_id\\\":\\\"tsk_1\\\"}\"}},{\"id\":"
             "\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"tasks__create\","
             "\"arguments\":\"{\\\"title\\\":\\\"x\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}],"
             "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":20,\"total_tokens\":32}}");
    server_script(s, answers, 1);
    subtest("a whole answer with calls")
    {
        run(l, &req, &g, true);
        ok(g.done == 1 && !g.failed, "done");
        is_int(g.tool_calls, 1, "tool_calls once");
        is_str(
            buf_ptr(&g.calls),
            "call_1|tasks__get|{\"task_id\":\"tsk_1\"}\ncall_2|tasks__create|{\"title\":\"x\"}\n",
            "the calls");
        ok(g.usage.input_tokens == 12 && g.usage.output_tokens == 20, "its usage");
        got_cleanup(&g);
    }
    buf_cleanup(&b1);
}

static void test_retry(struct server *s, struct httpc *h, int port)
{
    struct buf b1, b2, b3;
    char url[64];
    struct llm_config cfg = {0};
    struct llm *l = NULL;
    struct err e;
    /* the first attempt stops in the middle of a call's arguments */
    const char *cut[] = {
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
              "\"function\":{\"name\":\"tasks__get\",\"arguments\":\"{\\\"task_\"}}]}",
              "null"),
        NULL};
    const char *full[] = {
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_9\",\"type\":\"function\","
              "\"function\":{\"name\":\"tasks__get\",\"arguments\":\"{\\\"task_\"}}]}",
              "null"),
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"id\\\":\\\"t\\\"}\"}}]}",
              "null"),
        CHUNK("{}", "\"tool_calls\""), "[DONE]", NULL};
    const char *bad[] = {CHUNK("{\"tool_calls\":[{\"index\":16,\"id\":\"c\",\"type\":\"function\","
                               "\"function\":{\"name\":\"x\",\"arguments\":\"{}\"}}]}",
                               "null"),
                         CHUNK("{}", "\"tool_calls\""), "[DONE]", NULL};
    const char *answers[2];
    struct llm_request req = {0};
    struct got g;

    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
    cfg.provider = "openai";
    cfg.base_url = url;
    cfg.model = "m";
    cfg.timeout_ms = WAIT_MS;
    cfg.connect_timeout_ms = 5000;
    cfg.retries = 1;
    err_clear(&e);
    is_int(llm_new(&cfg, h, &l, &e), 0, "an engine that retries once");
    req.message = "status of tsk_1";
    buf_init(&b1, 1u << 20);
    buf_init(&b2, 1u << 20);
    buf_init(&b3, 1u << 20);
    answers[0] = sse(&b1, cut);
    answers[1] = sse(&b2, full);
    server_script(s, answers, 2);
    subtest("a stream cut in the middle of a call is retried, the call assembled afresh")
    {
        run(l, &req, &g, true);
        ok(g.done == 1 && !g.failed, "done");
        is_int(server_requests(s), 2, "two attempts");
        is_int(g.tool_calls, 1, "tool_calls once");
        is_str(buf_ptr(&g.calls), "call_9|tasks__get|{\"task_id\":\"t\"}\n",
               "the second attempt's call alone");
        got_cleanup(&g);
    }
    answers[0] = sse(&b3, bad);
    answers[1] = answers[0];
    server_script(s, answers, 2);
    subtest("a malformed call fails the step, after the retry")
    {
        run(l, &req, &g, true);
        ok(g.done == 1 && g.failed, "an error");
        is_int(server_requests(s), 2, "retried once");
        is_int(g.tool_calls, 0, "no calls");
        if (!ok(strstr(g.msg, "more than 16 tool calls in one step") != NULL, "it says why"))
            printf("#   got '%s'\n", g.msg);
        got_cleanup(&g);
    }
    llm_free(l);
    buf_cleanup(&b1);
    buf_cleanup(&b2);
    buf_cleanup(&b3);
}

/* ---- Against tests/mock/openai_mock.py ---- */

/* Start the mock; its pid in '*pid' and its port returned, or -1. */
static int mock_start(pid_t *pid)
{
    int out[2];
    char line[64];
    size_t n = 0;
    uint64_t port = 0;
    posix_spawn_file_actions_t fa;
    char *argv[] = {"python3", "tests/mock/openai_mock.py", NULL};

    if (access("tests/mock/openai_mock.py", R_OK) != 0 || pipe(out) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    if (posix_spawnp(pid, "python3", &fa, NULL, argv, environ) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        close(out[0]);
        close(out[1]);
        return -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    /* "PORT <n>\n", within WAIT_MS */
    while (n < sizeof(line) - 1) {
        struct pollfd p = {out[0], POLLIN, 0};
        ssize_t r;
        if (poll(&p, 1, WAIT_MS) <= 0)
            break;
        r = read(out[0], line + n, sizeof(line) - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (memchr(line, '\n', n))
            break;
    }
    close(out[0]);
    line[n] = '\0';
    if (strncmp(line, "PORT ", 5) != 0 ||
        str_to_u64((struct str){line + 5, strcspn(line + 5, "\r\n")}, &port) != 0) {
        kill(*pid, SIGTERM);
        waitpid(*pid, NULL, 0);
        return -1;
    }
    return (int)port;
}

static void test_mock(struct httpc *h)
{
    pid_t pid;
    int port = mock_start(&pid);
    char url[64];
    struct llm_config cfg = {0};
    struct llm *l = NULL;
    struct err e;
    struct llm_request req = {0};
    struct llm_tool tools[] = {{"tasks__get", "Read a task.", "{\"type\":\"object\"}"}};
    struct llm_message steps[2];
    struct llm_tool_call first;
    struct got g;
    /* [{"calls":[{"name":"tasks__get","arguments":{"task_id":"tsk_1"}}]},{"say":"All done."}] */
    const char *script = "W3siY2FsbHMiOlt7Im5hbWUiOiJ0YXNrc19fZ2V0IiwiYXJndW1lbnRzIjp7InRhc2tfaW"
                         "QiOiJ0c2tfMSJ9fV19LHsic2F5IjoiQWxsIGRvbmUuIn1d";
    char message[256];

    if (port < 0) {
        skip("the engine against tests/mock/openai_mock.py", "python3 cannot run the mock");
        return;
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", port);
    snprintf(message, sizeof(message), "Check tsk_1 [[tools:%s]]", script);
    cfg.provider = "openai";
    cfg.base_url = url;
    cfg.timeout_ms = WAIT_MS;
    cfg.connect_timeout_ms = 5000;
    err_clear(&e);
    is_int(llm_new(&cfg, h, &l, &e), 0, "an engine on the mock");
    req.message = message;
    req.tools = tools;
    req.ntools = 1;
    memset(steps, 0, sizeof(steps));
    memset(&first, 0, sizeof(first));
    subtest("the mock's scripted call")
    {
        run(l, &req, &g, true);
        if (!ok(g.done == 1 && !g.failed, "done"))
            printf("#   %s\n", g.msg);
        is_int(g.tool_calls, 1, "tool_calls once");
        ok(strncmp(buf_ptr(&g.calls), "call_", 5) == 0 &&
               strstr(buf_ptr(&g.calls), "|tasks__get|{\"task_id\": \"tsk_1\"}\n") != NULL,
           "call_...|tasks__get|{\"task_id\": \"tsk_1\"}");
        ok(g.usage.input_tokens > 0, "usage");
    }
    subtest("its next step, given the result")
    {
        char id[80];
        size_t n = strcspn(buf_ptr(&g.calls), "|");
        snprintf(id, sizeof(id), "%.*s", (int)(n < 64 ? n : 64), buf_ptr(&g.calls));
        first.id = id;
        first.name = "tasks__get";
        first.arguments = "{\"task_id\": \"tsk_1\"}";
        steps[0].role = "assistant";
        steps[0].tool_calls = &first;
        steps[0].ntool_calls = 1;
        steps[1].role = "tool";
        steps[1].tool_call_id = id;
        steps[1].content = "{\"status\":\"done\"}";
        req.steps = steps;
        req.nsteps = 2;
        got_cleanup(&g);
        run(l, &req, &g, true);
        if (!ok(g.done == 1 && !g.failed, "done"))
            printf("#   %s\n", g.msg);
        is_int(g.tool_calls, 0, "no calls");
        is_str(buf_ptr(&g.text), "All done.", "the scripted answer");
    }
    got_cleanup(&g);
    llm_free(l);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

int main(void)
{
    struct server s;
    struct httpc *h = NULL;
    struct llm *l = NULL;
    struct llm_config cfg = {0};
    struct err e;
    char url[64];

    signal(SIGPIPE, SIG_IGN);
    if (server_start(&s) != 0 || httpc_new(&h) != 0) {
        ok(0, "a server and a client");
        return done_testing();
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1", s.port);
    cfg.provider = "openai";
    cfg.base_url = url;
    cfg.model = "m";
    cfg.timeout_ms = WAIT_MS;
    cfg.connect_timeout_ms = 5000;
    cfg.retries = 0;
    err_clear(&e);
    is_int(llm_new(&cfg, h, &l, &e), 0, "the openai engine");
    test_body(l, &s);
    test_stream(l, &s);
    test_text_and_calls(l, &s);
    test_whole(l, &s);
    test_retry(&s, h, s.port);
    llm_free(l);
    test_mock(h);
    httpc_free(h);
    server_stop(&s);
    return done_testing();
}
