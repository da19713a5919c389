/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the HTTP server's stop (http/): a stop that begins while connections arrive
 * must never end the process, and a draining server closes new connections at once.
 *
 * The first test is a race: libmicrohttpd's own quiesce, with a thread pool and epoll, aborted
 * the process when a worker removed the listening socket from its epoll set at the same moment
 * (about one stop in 300 to 700 with connections arriving, measured). Servers are stopped in
 * parallel so that many stops fit in a few seconds; before the fix the binary aborted within
 * its first rounds.
 */
#include "../../src/http/http.h"
#include "t.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NSERVERS 2
#define NHAMMERS 4

static atomic_uint ports[NSERVERS];
static atomic_bool quit;
static atomic_long answered;

static enum http_begin begin(struct http_req *r, void *ud)
{
    (void)r;
    (void)ud;
    return HTTP_READ_BODY;
}

static void handle(struct http_req *r, void *ud)
{
    char *body = malloc(2);

    (void)ud;
    memcpy(body, "ok", 2);
    http_resp_set(r, 200, "text/plain", body, 2);
}

static void done(struct http_req *r, void *ud)
{
    (void)r;
    (void)ud;
}

static const struct http_app app = {begin, handle, done, NULL, NULL};

/* Connect to 'port', send a request; returns the bytes of the answer read (0: closed). */
static long ask(unsigned port)
{
    static const char q[] = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    struct sockaddr_in a;
    struct timeval tv = {0, 50 * 1000};
    char b[512];
    long got = -1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        send(fd, q, sizeof(q) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(q) - 1)) {
        ssize_t n;
        got = 0;
        while ((n = recv(fd, b, sizeof(b), 0)) > 0)
            got += n;
        if (n < 0 && errno != ECONNRESET)
            got = -1;
    }
    close(fd);
    return got;
}

static void *hammer(void *arg)
{
    unsigned i = (unsigned)(uintptr_t)arg;

    while (!atomic_load(&quit)) {
        unsigned port = atomic_load(&ports[i++ % NSERVERS]);
        if (!port)
            sched_yield(); /* between rounds */
        else if (ask(port) > 0)
            atomic_fetch_add(&answered, 1);
    }
    return NULL;
}

static void *stop_one(void *arg)
{
    http_server_stop(arg, 1);
    return NULL;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 3000;
    struct http_options o;

    memset(&o, 0, sizeof(o));
    o.host = "127.0.0.1";
    o.threads = 2;

    subtest("stops while connections arrive")
    {
        pthread_t hammers[NHAMMERS], stoppers[NSERVERS];
        struct http_server *srv[NSERVERS];
        int started = 1, stops = 0;

        for (int h = 0; h < NHAMMERS; h++)
            pthread_create(&hammers[h], NULL, hammer, (void *)(uintptr_t)(h * 5));
        for (int r = 0; r < rounds && started; r++) {
            for (int i = 0; i < NSERVERS; i++) {
                if (http_server_start(&o, &app, &srv[i]) != 0) {
                    started = 0;
                    break;
                }
                atomic_store(&ports[i], http_server_port(srv[i]));
            }
            if (!started)
                break;
            pause_ms(2 + r % 4);
            /* every server begins its drain while the hammers connect; then all stop at once */
            for (int i = 0; i < NSERVERS; i++)
                http_server_drain(srv[i], 0);
            for (int i = 0; i < NSERVERS; i++) {
                atomic_store(&ports[i], 0);
                pthread_create(&stoppers[i], NULL, stop_one, srv[i]);
            }
            for (int i = 0; i < NSERVERS; i++)
                pthread_join(stoppers[i], NULL);
            stops += NSERVERS;
        }
        atomic_store(&quit, true);
        for (int h = 0; h < NHAMMERS; h++)
            pthread_join(hammers[h], NULL);
        ok(started, "every server started");
        is_int(stops, rounds * NSERVERS, "every stop returned (none aborted the process)");
        ok(atomic_load(&answered) > 0, "the servers answered while they ran");
        printf("# %d stops, %ld answers\n", stops, atomic_load(&answered));
    }

    subtest("a draining server closes new connections at once")
    {
        struct http_server *s = NULL;
        unsigned port;

        if (http_server_start(&o, &app, &s) == 0) {
            port = http_server_port(s);
            ok(ask(port) > 0, "answers before the drain");
            http_server_drain(s, 0);
            is_int(ask(port), 0, "a connection made while draining is closed without an answer");
            http_server_stop(s, 0);
        } else {
            ok(0, "server started");
        }
    }
    return done_testing();
}
