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
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
    subtest("cloud metadata addresses")
    {
        static const struct {
            const char *addr;
            bool metadata;
        } meta[] = {
            {"169.254.169.254", true},
            {"169.254.170.2", true},
            {"169.254.0.0", true},
            {"169.255.0.1", false},
            {"169.253.255.255", false},
            {"127.0.0.1", false},
            {"10.0.0.1", false},
            {"8.8.8.8", false},
            {"fd00:ec2::254", true},
            {"fd00:ec2:ffff::1", true},
            {"fd00:ec3::254", false},
            {"fd00::254", false},
            {"fe80::1", false},
            {"::1", false},
            {"::ffff:169.254.169.254", true},
            {"64:ff9b::a9fe:a9fe", true},
            {"2002:a9fe:a9fe::", true},
            {"2001:db8::1", false},
        };
        size_t wrong = 0;
        struct sockaddr_in s4;
        for (size_t i = 0; i < sizeof(meta) / sizeof(meta[0]); i++) {
            struct sockaddr_storage ss;
            size_t len;
            memset(&ss, 0, sizeof(ss));
            if (strchr(meta[i].addr, ':')) {
                struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
                s6->sin6_family = AF_INET6;
                inet_pton(AF_INET6, meta[i].addr, &s6->sin6_addr);
                len = sizeof(*s6);
            } else {
                struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
                a4->sin_family = AF_INET;
                inet_pton(AF_INET, meta[i].addr, &a4->sin_addr);
                len = sizeof(*a4);
            }
            if (httpc_addr_metadata((struct sockaddr *)&ss, len) != meta[i].metadata) {
                printf("# %s: want %s\n", meta[i].addr, meta[i].metadata ? "metadata" : "not");
                wrong++;
            }
        }
        is_int(wrong, 0, "169.254.0.0/16 and fd00:ec2::/32 (and IPv4 169.254 inside IPv6)");
        memset(&s4, 0, sizeof(s4));
        s4.sin_family = AF_INET;
        inet_pton(AF_INET, "169.254.169.254", &s4.sin_addr);
        ok(!httpc_addr_metadata((struct sockaddr *)&s4, sizeof(s4) - 1), "a short address is not");
        ok(!httpc_addr_metadata(NULL, 0), "NULL is not");
    }
}

/* ---- A listener on 127.0.0.1 ---- */

/*
 * One thread accepts connections one after the other. For each it reads a request (headers,
 * then Content-Length bytes of body), keeps it, and sends 'answer' and closes, or, when
 * 'answer' is NULL, says nothing until the client goes away or the test stops it. Every wait
 * is a poll() that the stop pipe interrupts, bounded besides by LISTEN_WAIT_MS.
 */
#define LISTEN_WAIT_MS 5000

struct listener {
    int fd, port;
    int stop[2]; /* a byte on stop[1] ends the thread */
    const char *answer;
    pthread_t thread;
    bool running;
    pthread_mutex_t mu;
    int accepted, requests; /* under 'mu' */
    char req[16384];        /* the last request, under 'mu' */
    size_t req_len;
};

/* A socket bound to 127.0.0.1 on a free port; listening when 'listen_too'. -1 on failure. */
static int bind_local(bool listen_too, int *port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        (listen_too && listen(fd, 16) != 0) || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Wait until 'fd' is readable or the test says stop: 1 readable, 0 stop or time out. */
static int wait_readable(struct listener *l, int fd)
{
    struct pollfd p[2] = {{fd, POLLIN, 0}, {l->stop[0], POLLIN, 0}};
    if (poll(p, 2, LISTEN_WAIT_MS) <= 0 || p[1].revents)
        return 0;
    return 1;
}

/* Read one request from 'c' into l->req; false when the client went away first. */
static bool read_request(struct listener *l, int c, char *buf, size_t cap, size_t *len)
{
    size_t n = 0, want = 0;
    while (!want || n < want) {
        ssize_t r;
        char *end;
        if (n == cap || !wait_readable(l, c))
            return false;
        r = read(c, buf + n, cap - n);
        if (r <= 0)
            return false;
        n += (size_t)r;
        end = memmem(buf, n, "\r\n\r\n", 4);
        if (end && !want) {
            char *cl = strcasestr(buf, "\r\ncontent-length:");
            want = (size_t)(end + 4 - buf);
            if (cl && cl < end)
                want += strtoul(cl + 17, NULL, 10);
        }
    }
    *len = n;
    return true;
}

static void *listen_loop(void *arg)
{
    struct listener *l = arg;
    static __thread char buf[16384];
    while (wait_readable(l, l->fd)) {
        size_t n = 0;
        int c = accept(l->fd, NULL, NULL);
        if (c < 0)
            continue;
        pthread_mutex_lock(&l->mu);
        l->accepted++;
        pthread_mutex_unlock(&l->mu);
        if (read_request(l, c, buf, sizeof(buf), &n)) {
            pthread_mutex_lock(&l->mu);
            memcpy(l->req, buf, n);
            l->req_len = n;
            l->requests++;
            pthread_mutex_unlock(&l->mu);
            if (l->answer) {
                ssize_t w = write(c, l->answer, strlen(l->answer));
                (void)w;
            } else {
                while (wait_readable(l, c) && read(c, buf, sizeof(buf)) > 0)
                    ; /* silent until the client gives up */
            }
        }
        close(c);
    }
    return NULL;
}

/* Start a listener answering 'answer' (NULL: never). 0 or -1. */
static int listener_start(struct listener *l, const char *answer)
{
    memset(l, 0, sizeof(*l));
    l->answer = answer;
    pthread_mutex_init(&l->mu, NULL);
    l->fd = bind_local(true, &l->port);
    if (l->fd < 0 || pipe(l->stop) != 0)
        return -1;
    l->running = pthread_create(&l->thread, NULL, listen_loop, l) == 0;
    return l->running ? 0 : -1;
}

static void listener_stop(struct listener *l)
{
    if (l->running) {
        ssize_t w = write(l->stop[1], "x", 1);
        (void)w;
        pthread_join(l->thread, NULL);
    }
    close(l->stop[0]);
    close(l->stop[1]);
    close(l->fd);
    pthread_mutex_destroy(&l->mu);
}

/* True when a connection waits on the listening socket 'fd' (nothing accepts there). */
static bool pending(int fd)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0;
}

/* A request to 'port' on 127.0.0.1 with the test's body and headers. */
static struct httpc_hook_req hook_req(char *url, size_t n, int port, const char *host)
{
    static const char *const extra[] = {"X-Extra: 1"};
    struct httpc_hook_req r;
    memset(&r, 0, sizeof(r));
    snprintf(url, n, "http://%s:%d/hook?x=1", host, port);
    r.url = url;
    r.body = "{\"type\":\"task.completed\",\"data\":{\"id\":\"tsk_1\"}}";
    r.body_len = strlen(r.body);
    r.id = "evt_1";
    r.timestamp = 1700000000;
    r.signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    r.headers = extra;
    r.nheaders = 1;
    r.timeout_ms = 5000;
    return r;
}

/* ---- Delivery ---- */

static void test_post_refused(void)
{
    subtest("delivery: private addresses refused")
    {
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128];
        int port = 0, fd = bind_local(true, &port);
        ok(fd >= 0, "a listening socket");
        r = hook_req(url, sizeof(url), port, "127.0.0.1");
        is_int(httpc_hook_post(&r, &res), ERR_UPSTREAM, "127.0.0.1 is refused");
        is_int(res.status, 0, "no status");
        is_str(res.error, "address refused: 127.0.0.1 is a loopback address", "the reason");
        ok(!pending(fd), "no connection reached the listener");
        r = hook_req(url, sizeof(url), port, "localhost");
        is_int(httpc_hook_post(&r, &res), ERR_UPSTREAM, "localhost is refused");
        ok(strcmp(res.error, "address refused: 127.0.0.1 is a loopback address") == 0 ||
               strcmp(res.error, "address refused: ::1 is a loopback address") == 0,
           "resolved, then refused by address");
        printf("# localhost: %s\n", res.error);
        r = hook_req(url, sizeof(url), port, "[::ffff:127.0.0.1]");
        is_int(httpc_hook_post(&r, &res), ERR_UPSTREAM, "IPv4-mapped loopback is refused");
        is_str(res.error, "address refused: ::ffff:127.0.0.1 is a loopback address", "its reason");
        r = hook_req(url, sizeof(url), port, "0.0.0.0");
        is_int(httpc_hook_post(&r, &res), ERR_UPSTREAM, "0.0.0.0 is refused");
        is_str(res.error, "address refused: 0.0.0.0 is an unspecified address", "its reason");
        ok(!pending(fd), "still no connection");
        close(fd);
    }
}

static void test_post_delivered(void)
{
    subtest("delivery: delivered")
    {
        struct listener l;
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128], *req, *body;
        static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n"
                                     "Connection: close\r\n\r\nthanks";
        ok(listener_start(&l, answer) == 0, "listener");
        r = hook_req(url, sizeof(url), l.port, "127.0.0.1");
        r.allow_private = true;
        is_int(httpc_hook_post(&r, &res), 0, "delivered");
        is_int(res.status, 200, "status");
        is_str(res.error, "", "no error");
        is_str(res.body, "thanks", "the answer's body");
        ok(res.body_len == 6 && !res.body_cut, "whole");
        ok(res.elapsed_ms >= 0 && res.elapsed_ms < 5000, "elapsed");
        pthread_mutex_lock(&l.mu);
        l.req[l.req_len] = '\0';
        req = l.req;
        is_int(l.requests, 1, "one request");
        ok(strncmp(req, "POST /hook?x=1 HTTP/1.1\r\n", 25) == 0, "POST to the path and query");
        ok(strcasestr(req, "\r\nContent-Type: application/json\r\n") != NULL, "content type");
        ok(strcasestr(req, "\r\nUser-Agent: Workforce-Webhooks/1\r\n") != NULL, "user agent");
        ok(strstr(req, "\r\nwebhook-id: evt_1\r\n") != NULL, "webhook-id");
        ok(strstr(req, "\r\nwebhook-timestamp: 1700000000\r\n") != NULL, "webhook-timestamp");
        ok(strstr(req,
                  "\r\nwebhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=\r\n") !=
               NULL,
           "webhook-signature");
        ok(strstr(req, "\r\nX-Extra: 1\r\n") != NULL, "the extra header");
        ok(strcasestr(req, "\r\nExpect:") == NULL, "no Expect: 100-continue");
        {
            char cl[64];
            snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", r.body_len);
            ok(strcasestr(req, cl) != NULL, "content length");
        }
        body = strstr(req, "\r\n\r\n");
        is_str(body ? body + 4 : NULL, r.body, "the body arrives as sent");
        pthread_mutex_unlock(&l.mu);
        listener_stop(&l);
    }
    subtest("delivery: long answers are cut")
    {
        struct listener l;
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128];
        static char answer[256 * 1024];
        size_t h = (size_t)snprintf(answer, sizeof(answer),
                                    "HTTP/1.1 500 Oops\r\nContent-Length: %zu\r\n\r\n",
                                    sizeof(answer) - 100);
        memset(answer + h, 'a', sizeof(answer) - 100);
        answer[h + sizeof(answer) - 100] = '\0';
        ok(listener_start(&l, answer) == 0, "listener");
        r = hook_req(url, sizeof(url), l.port, "127.0.0.1");
        r.allow_private = true;
        is_int(httpc_hook_post(&r, &res), 0, "an answer");
        is_int(res.status, 500, "its status");
        ok(res.body_len == HTTPC_HOOK_BODY_KEEP && res.body_cut, "4 KiB kept");
        is_int(strlen(res.body), HTTPC_HOOK_BODY_KEEP, "NUL-terminated");
        listener_stop(&l);
    }
}

static void test_post_redirect(void)
{
    subtest("delivery: redirects are not followed")
    {
        struct listener l;
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128], answer[256];
        int port = 0, other = bind_local(true, &port);
        snprintf(answer, sizeof(answer),
                 "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:%d/elsewhere\r\n"
                 "Content-Length: 0\r\n\r\n",
                 port);
        ok(other >= 0 && listener_start(&l, answer) == 0, "listeners");
        r = hook_req(url, sizeof(url), l.port, "127.0.0.1");
        r.allow_private = true;
        is_int(httpc_hook_post(&r, &res), 0, "an answer");
        is_int(res.status, 302, "the 302 is the answer");
        ok(!pending(other), "the Location was not visited");
        listener_stop(&l);
        close(other);
    }
}

static void test_post_failures(void)
{
    subtest("delivery: no answer in time")
    {
        struct listener l;
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128];
        int64_t t0;
        ok(listener_start(&l, NULL) == 0, "a silent listener");
        r = hook_req(url, sizeof(url), l.port, "127.0.0.1");
        r.allow_private = true;
        r.timeout_ms = 300;
        t0 = clock_mono_us();
        is_int(httpc_hook_post(&r, &res), ERR_UPSTREAM, "no answer");
        t0 = (clock_mono_us() - t0) / 1000;
        is_int(res.status, 0, "no status");
        is_str(res.error, "timed out after 300 ms", "the reason");
        ok(t0 >= 290 && t0 < 300 + 2000, "within the timeout and a margin");
        ok(res.elapsed_ms >= 290 && res.elapsed_ms <= t0, "elapsed says so too");
        printf("# timed out after %lld ms\n", (long long)t0);
        listener_stop(&l);
    }
    subtest("delivery: nobody listening")
    {
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128];
        int port = 0, fd = bind_local(false, &port); /* bound, not listening: the port is ours */
        ok(fd >= 0, "a bound port");
        r = hook_req(url, sizeof(url), port, "127.0.0.1");
        r.allow_private = true;
        is_int(httpc_hook_post(&r, &res), ERR_UPSTREAM, "no connection");
        is_int(res.status, 0, "no status");
        is_str(res.error, "connection refused", "the reason");
        close(fd);
    }
    subtest("delivery: malformed requests")
    {
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128];
        static const char *const bad_header[] = {"X-Bad: a\r\nX-Injected: b"};
        static const char *const no_colon[] = {"X-Bad"};
        int port = 0, fd = bind_local(true, &port);
        r = hook_req(url, sizeof(url), port, "127.0.0.1");
        r.allow_private = true;
        r.url = "http://user:pw@127.0.0.1/";
        is_int(httpc_hook_post(&r, &res), ERR_INVALID, "user info refused");
        ok(strstr(res.error, "user name") != NULL, "the reason");
        r = hook_req(url, sizeof(url), port, "127.0.0.1");
        r.allow_private = true;
        r.id = "evt_1\r\nX-Injected: 1";
        is_int(httpc_hook_post(&r, &res), ERR_INVALID, "CR LF in an id");
        r.id = "evt_1";
        r.headers = bad_header;
        is_int(httpc_hook_post(&r, &res), ERR_INVALID, "CR LF in an extra header");
        r.headers = no_colon;
        is_int(httpc_hook_post(&r, &res), ERR_INVALID, "an extra header without a colon");
        r.headers = NULL;
        r.nheaders = 0;
        r.signature = NULL;
        is_int(httpc_hook_post(&r, &res), ERR_INVALID, "no signature");
        ok(!pending(fd), "nothing was sent");
        close(fd);
    }
    subtest("delivery: unknown host")
    {
        struct httpc_hook_res res;
        struct httpc_hook_req r;
        char url[128];
        r = hook_req(url, sizeof(url), 80, "no-such-host.invalid");
        r.timeout_ms = 3000;
        is_int(httpc_hook_post(&r, &res), ERR_UPSTREAM, "no answer");
        ok(strcmp(res.error, "could not resolve host") == 0 ||
               strcmp(res.error, "timed out after 3 s") == 0,
           "could not resolve (or the resolver did not answer in time)");
        printf("# %s\n", res.error);
    }
}

/* Several threads deliver at once: each call is on its own. */
struct worker_arg {
    int port, ok;
};

static void *deliver_some(void *arg)
{
    struct worker_arg *w = arg;
    for (int i = 0; i < 5; i++) {
        struct httpc_hook_res res;
        char url[128];
        struct httpc_hook_req r = hook_req(url, sizeof(url), w->port, "127.0.0.1");
        r.allow_private = true;
        if (httpc_hook_post(&r, &res) == 0 && res.status == 204)
            w->ok++;
    }
    return NULL;
}

static void test_post_threads(void)
{
    subtest("delivery: from several threads")
    {
        struct listener l;
        struct worker_arg w[4];
        pthread_t t[4];
        int total = 0;
        ok(listener_start(&l, "HTTP/1.1 204 No Content\r\n\r\n") == 0, "listener");
        for (int i = 0; i < 4; i++) {
            w[i].port = l.port;
            w[i].ok = 0;
            pthread_create(&t[i], NULL, deliver_some, &w[i]);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(t[i], NULL);
            total += w[i].ok;
        }
        is_int(total, 20, "every delivery answered 204");
        listener_stop(&l);
    }
}

int main(void)
{
    test_urls();
    test_addrs();
    test_post_refused();
    test_post_delivered();
    test_post_redirect();
    test_post_failures();
    test_post_threads();
    return done_testing();
}
