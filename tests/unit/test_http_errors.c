/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the answers the HTTP layer (http/) makes itself, when the application did not:
 * a handler that set no response (500), and a deferred request still waiting when the server
 * stops (503). The layer knows no error format: it asks the application's error writer
 * (struct http_app's 'error') for the body, and sends that body whole.
 *
 * The first test found a defect: the layer wrote its own 500 body, with a length one byte
 * short, so clients received invalid JSON (and no doc_url).
 */
#include "../../src/http/http.h"
#include "t.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

static const char *mode = "none"; /* what handle() does: "none" or "defer" */
static atomic_bool parked;        /* handle() deferred a request */

static enum http_begin begin(struct http_req *r, void *ud)
{
    (void)r;
    (void)ud;
    return HTTP_READ_BODY;
}

static void handle(struct http_req *r, void *ud)
{
    (void)ud;
    if (strcmp(mode, "defer") == 0) {
        http_req_defer(r); /* never resumed: only the server's stop answers it */
        atomic_store(&parked, true);
    }
}

static void done(struct http_req *r, void *ud)
{
    (void)r;
    (void)ud;
}

static char last_code[64];

/* The application's error writer, as the router's: a JSON body naming the code. */
static void error(struct http_req *r, const char *code, const char *msg, void *ud)
{
    char body[512];
    int n;

    (void)ud;
    snprintf(last_code, sizeof(last_code), "%s", code);
    n = snprintf(body, sizeof(body),
                 "{\"error\":{\"code\":\"%s\",\"message\":\"%s\",\"doc_url\":"
                 "\"http://x/docs/errors/%s\"}}",
                 code, msg, code);
    http_resp_set(r, strcmp(code, "internal_error") == 0 ? 500 : 503, "application/json",
                  strndup(body, (size_t)n), (size_t)n);
}

static const struct http_app app = {begin, handle, done, error, NULL};

/* Send a GET to 'port' and read the whole answer into 'out' (NUL-terminated); its length. */
static long ask(unsigned port, char *out, size_t max)
{
    static const char q[] = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    struct sockaddr_in a;
    struct timeval tv = {10, 0};
    long got = 0;
    ssize_t n;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        send(fd, q, sizeof(q) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(q) - 1)) {
        close(fd);
        return -1;
    }
    while ((size_t)got + 1 < max && (n = recv(fd, out + got, max - 1 - (size_t)got, 0)) > 0)
        got += n;
    out[got] = '\0';
    close(fd);
    return got;
}

/* Check that the answer in 'resp' has 'status' and a JSON body whose error code is 'code'. */
static void check_answer(const char *resp, const char *status, const char *code)
{
    const char *body = strstr(resp, "\r\n\r\n");
    json_error_t je;
    json_t *doc = NULL;

    ok(strncmp(resp, status, strlen(status)) == 0, "the status line");
    if (body)
        doc = json_loads(body + 4, 0, &je);
    ok(doc != NULL, "the body is whole, valid JSON");
    if (!doc)
        printf("#   body: %s\n", body ? body + 4 : "(none)");
    is_str(json_string_value(json_object_get(json_object_get(doc, "error"), "code")), code,
           "the error code");
    ok(json_object_get(json_object_get(doc, "error"), "doc_url") != NULL,
       "the application's writer made it (doc_url)");
    json_decref(doc);
}

struct asker {
    unsigned port;
    char resp[4096];
    long got;
};

static void *ask_thread(void *arg)
{
    struct asker *k = arg;
    k->got = ask(k->port, k->resp, sizeof(k->resp));
    return NULL;
}

int main(void)
{
    struct http_options o;
    struct http_server *s = NULL;

    memset(&o, 0, sizeof(o));
    o.host = "127.0.0.1";
    o.threads = 1;

    subtest("a handler that set no response")
    {
        char resp[4096];

        mode = "none";
        if (http_server_start(&o, &app, &s) != 0) {
            ok(0, "server started");
        } else {
            ok(ask(http_server_port(s), resp, sizeof(resp)) > 0, "an answer");
            check_answer(resp, "HTTP/1.1 500", "internal_error");
            http_server_stop(s, 0);
        }
    }

    subtest("a deferred request when the server stops")
    {
        struct asker k;
        pthread_t th;

        mode = "defer";
        last_code[0] = '\0';
        memset(&k, 0, sizeof(k));
        if (http_server_start(&o, &app, &s) != 0) {
            ok(0, "server started");
        } else {
            k.port = http_server_port(s);
            pthread_create(&th, NULL, ask_thread, &k);
            /* wait (10 s at most) for the request to be parked, then stop */
            for (int i = 0; i < 10000 && !atomic_load(&parked); i++)
                nanosleep(&(struct timespec){0, 1000000L}, NULL);
            ok(atomic_load(&parked), "the request is parked");
            http_server_stop(s, 0);
            pthread_join(th, NULL);
            check_answer(k.resp, "HTTP/1.1 503", "service_unavailable");
        }
    }
    return done_testing();
}
