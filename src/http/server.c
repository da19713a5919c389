/* SPDX-License-Identifier: MIT */
/*
 * server.c: the only user of libmicrohttpd. It runs MHD's internal thread pool over epoll,
 * turns each connection's request into a struct http_req, and calls the application.
 *
 * DESIGN
 * - First call of the access handler: the request is created and begin() runs with headers
 *   only. A body announced by Content-Length above the cap is refused here (413) before a byte
 *   is read; everything else waits for the body, because answering on the first call makes MHD
 *   close the keep-alive connection.
 * - Body calls: bytes are appended up to the cap; past it they are counted and dropped, and the
 *   request is marked too large (the application answers 413 when the body ends).
 * - Last call: handle() runs and its response is queued.
 * - The completion callback calls done() and frees the request and its arena.
 * - Deferred responses (http_req_defer): handle() returns without a response, the connection
 *   is suspended, and another thread sets the response and resumes it; MHD then calls the
 *   access handler once more and the response is queued. No worker thread waits.
 * - Streams (http_stream_open): the body comes from a content-reader callback over a locked
 *   buffer. With nothing to send, the reader suspends the connection and returns 0; a write
 *   resumes it. A stream is shared by the producer and the connection (two references).
 * - Parked requests (deferred or streaming) are on a list. A ticker thread writes the ping to
 *   streams silent for ping_s seconds: that also makes MHD notice a client that left, which it
 *   cannot while the connection is suspended.
 * - Stop: new connections are closed as soon as they are accepted (the accept policy), requests
 *   in flight get up to 'drain_s' seconds, then every parked request is ended and resumed (MHD
 *   must not stop with suspended connections), and the daemon stops (closing idle keep-alive
 *   connections). MHD_quiesce_daemon is not used: with a thread pool and epoll it races each
 *   worker's own removal of the listening socket from its epoll set, and the loser aborts the
 *   process ("Failed to remove listen FD from epoll set", libmicrohttpd 0.9.75 to 0.9.77).
 */
#include "http.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/err.h"
#include "../core/log.h"
#include "../core/str.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEADERS 16

/*
 * The largest request line + header block served. The connection's 12 KiB memory pool holds
 * the request's header block, about 64 bytes of bookkeeping per header line, and then the
 * response's head. When a request filled it (11,880 bytes in one header, or 160 empty header
 * lines in 1,640 bytes) there was no room left for a 250-byte response head: the handler ran
 * and the client got no answer; a little further libmicrohttpd itself answers 431. So a
 * request costs its header bytes plus 64 per header line, and one costing more than 8 KiB is
 * refused before the application: the 4 KiB left always hold the largest response head we
 * make. tests/http/test_framing.py walks every size and count.
 */
/* The connections held open at once, in all (libmicrohttpd closes any more at once). */
#define HTTP_CONNECTIONS_MAX 20000u

#define HTTP_HEADER_MAX_TEXT "8,192" /* HTTP_HEADER_MAX (http.h) */
#define HTTP_URI_MAX_TEXT "4,096"    /* HTTP_URI_MAX (http.h) */

struct http_server {
    struct MHD_Daemon *d;
    struct http_app app;
    atomic_int inflight;
    unsigned port;
    atomic_bool draining; /* new connections are refused */
    pthread_mutex_t mu;   /* guards 'parked' and 'reading' */
    pthread_cond_t tick;  /* wakes the ticker at once when the server stops */
    struct http_req *parked;
    struct http_req *reading; /* requests waiting for the rest of their body */
    pthread_t ticker;
    bool ticker_started;
    atomic_bool stopping;
    unsigned ping_s;
    const char *ping_text;
    atomic_uint refused;           /* connections over a limit since the last log line */
    _Atomic int64_t refused_at_ms; /* when that line was written */
    char per_address_text[16];     /* the per-address limit, for that line */
};

struct http_stream {
    pthread_mutex_t mu;
    struct MHD_Connection *conn; /* valid while !gone */
    struct buf data;
    size_t off;  /* bytes of 'data' already handed to MHD */
    bool closed; /* the producer is done */
    bool gone;   /* the connection ended */
    bool suspended;
    int refs;
    int64_t last_ms; /* last write or send, for the ping */
};

struct http_req {
    struct http_server *srv;
    struct MHD_Connection *conn;
    struct arena arena;
    const char *method;
    const char *path;
    char *body;
    size_t body_len;
    size_t body_cap;
    size_t body_alloc;
    bool too_large;
    bool responded;
    void *user;
    http_body_fn sink;
    void *sink_ud;
    int sink_rc;
    unsigned status;
    const char *ctype;
    char *resp_body;
    size_t resp_len;
    const char *resp_static; /* instead of resp_body: a body that outlives the server */
    const char *hname[MAX_HEADERS];
    const char *hvalue[MAX_HEADERS];
    unsigned nheaders;
    /* deferred responses and streams */
    pthread_mutex_t mu;
    bool handled;   /* handle() has run */
    bool deferred;  /* the response comes later */
    bool ready;     /* the deferred response is set */
    bool suspended; /* the connection is suspended waiting for it */
    struct http_stream *stream;
    struct http_req *park_prev, *park_next;
    bool is_parked;
    /* before the application: the raw query and what the framing checks refused */
    bool began;  /* begin() has run (done() is owed) */
    char *query; /* the raw query string after '?', or NULL; arena */
    struct http_refusal refusal;
    bool refused;       /* 'refusal' is set: answer it at once and close */
    bool early;         /* the response was queued before the body was read */
    uint64_t body_seen; /* body bytes received */
    uint64_t body_max;  /* past this many body bytes the connection is closed; 0: cap + 1 MiB */
    struct pull *pull;  /* a pulled body (http_resp_pull), until MHD takes it */
    int fd;             /* the connection's socket, while on the 'reading' list */
    struct http_req *rd_prev, *rd_next;
    bool is_reading;
};

/* ---- Request accessors ---- */

/* The arena of 'r': memory that lives until the response is done. */
struct arena *http_req_arena(struct http_req *r)
{
    return &r->arena;
}

/* The request method ("GET"). */
const char *http_req_method(const struct http_req *r)
{
    return r->method;
}

/* The request path without the query string. */
const char *http_req_path(const struct http_req *r)
{
    return r->path;
}

/* The value of header 'name' (case-insensitive), or NULL. Borrowed for the request. */
const char *http_req_header(struct http_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* The client's address as text ("192.0.2.1", "2001:db8::1"), from the request's arena; ""
 * when it cannot be read (a test harness without a socket). */
const char *http_req_peer(struct http_req *r)
{
    const union MHD_ConnectionInfo *ci =
        r->conn ? MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS) : NULL;
    char text[INET6_ADDRSTRLEN] = "";
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;

    if (sa && sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, text,
                  sizeof(text));
    else if (sa && sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, text,
                  sizeof(text));
    return arena_strdup(&r->arena, text);
}

/*
 * The raw query string of the request (what follows '?', still percent-encoded), or NULL when
 * there is none. libmicrohttpd is kept from parsing it (see on_uri): the router decodes it.
 */
const char *http_req_query(const struct http_req *r)
{
    return r->query;
}

/* Why the HTTP layer refuses the request (framing, sizes), or NULL; begin() answers it. */
const struct http_refusal *http_req_refusal(const struct http_req *r)
{
    return r->refused ? &r->refusal : NULL;
}

/*
 * True when the request announces a body that is still to be read: a Transfer-Encoding, or a
 * Content-Length above 'small'. An answer given before such a body is read closes the
 * connection, so only a verdict that saves reading it is worth giving early.
 */
bool http_req_body_pending(struct http_req *r, uint64_t small)
{
    const char *cl = MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Content-Length");
    uint64_t n;
    if (MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, "Transfer-Encoding"))
        return true;
    return cl && str_to_u64(str_c(cl), &n) == 0 && n > small;
}

/* Close the connection once more than 'max' body bytes arrived (begin() only). */
void http_req_set_body_max(struct http_req *r, uint64_t max)
{
    r->body_max = max;
}

/* The body read so far (complete in handle()); '*len' gets its length. Borrowed. */
const char *http_req_body(const struct http_req *r, size_t *len)
{
    *len = r->body_len;
    return r->body ? r->body : "";
}

/* True when the body passed the cap and was dropped. */
bool http_req_body_too_large(const struct http_req *r)
{
    return r->too_large;
}

/* Set the most body bytes kept for 'r' (begin() only). */
void http_req_set_body_cap(struct http_req *r, size_t cap)
{
    r->body_cap = cap;
}

/* Stream the body to 'fn' instead of buffering it (see http.h). */
void http_req_set_body_sink(struct http_req *r, http_body_fn fn, void *ud)
{
    r->sink = fn;
    r->sink_ud = ud;
}

/* Attach the application's per-request state. */
void http_req_set_user(struct http_req *r, void *p)
{
    r->user = p;
}

/* The application's per-request state. */
void *http_req_user(const struct http_req *r)
{
    return r->user;
}

/* ---- Response ---- */

/* Set the response of 'r'; 'body' is taken and will be released with free(). */
void http_resp_set(struct http_req *r, unsigned status, const char *content_type, char *body,
                   size_t len)
{
    free(r->resp_body);
    r->status = status;
    r->ctype = content_type;
    r->resp_body = body;
    r->resp_len = len;
    r->resp_static = NULL;
}

/* Set the response of 'r' to 'body', which is not copied and must outlive the server. */
void http_resp_static(struct http_req *r, unsigned status, const char *content_type,
                      const char *body, size_t len)
{
    http_resp_set(r, status, content_type, NULL, 0);
    r->resp_static = body;
    r->resp_len = len;
}

/* Add a response header; 'name' and 'value' are copied. Past 16 headers it is dropped. */
void http_resp_header(struct http_req *r, const char *name, const char *value)
{
    if (r->nheaders >= MAX_HEADERS) {
        log_error("http: too many response headers, dropped %s", name);
        return;
    }
    r->hname[r->nheaders] = arena_strdup(&r->arena, name);
    r->hvalue[r->nheaders] = arena_strdup(&r->arena, value);
    r->nheaders++;
}

/* The status set so far (0 before a response is set). */
unsigned http_resp_status(const struct http_req *r)
{
    return r->status;
}

/* The response body set so far and its content type; borrowed until the response is sent. */
const char *http_resp_peek(const struct http_req *r, size_t *len, const char **ctype)
{
    *len = r->resp_len;
    if (ctype)
        *ctype = r->ctype;
    return r->resp_static ? r->resp_static : r->resp_body;
}

/* Answer 'r' with error 'code' through the application's writer (http_app.error); without one,
 * or when it set nothing, with 'status' and an empty body. */
static void app_error(struct http_req *r, unsigned status, const char *code, const char *msg)
{
    r->status = 0;
    if (r->srv->app.error)
        r->srv->app.error(r, code, msg, r->srv->app.ud);
    if (!r->status)
        http_resp_set(r, status, "text/plain", NULL, 0);
}

/*
 * The application's headers of 'r' on 'resp', and X-Content-Type-Options: nosniff on every
 * answer that does not carry it already: a browser never reads a JSON answer (whose message may
 * quote what the client sent) or an event stream as another type, HTML above all.
 */
static void add_headers(struct MHD_Response *resp, const struct http_req *r)
{
    bool nosniff = false;
    if (r->ctype)
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->ctype);
    for (unsigned i = 0; i < r->nheaders; i++) {
        MHD_add_response_header(resp, r->hname[i], r->hvalue[i]);
        nosniff = nosniff || strcasecmp(r->hname[i], "X-Content-Type-Options") == 0;
    }
    if (!nosniff)
        MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
}

static enum MHD_Result send_response(struct http_req *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    if (!r->status) {
        log_error("http: no response was set for %s %s", r->method, r->path);
        app_error(r, 500, "internal_error", "Internal error.");
    }
    if (r->resp_static) {
        /* PERSISTENT: MHD only reads it (0.9.75 has no const variant) */
        union {
            const char *c;
            void *v;
        } body = {.c = r->resp_static};
        resp = MHD_create_response_from_buffer(r->resp_len, body.v, MHD_RESPMEM_PERSISTENT);
    } else
        resp = MHD_create_response_from_buffer(r->resp_len, r->resp_body, MHD_RESPMEM_MUST_FREE);
    if (!resp)
        return MHD_NO;
    r->resp_body = NULL; /* MHD owns it now */
    add_headers(resp, r);
    if (r->early) /* the body is not read: MHD closes the connection after this answer */
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    ret = MHD_queue_response(r->conn, r->status, resp);
    MHD_destroy_response(resp);
    r->responded = true;
    return ret;
}

/* ---- Pulled responses ---- */

struct pull {
    http_pull_fn fn;
    void (*release)(void *ud);
    void *ud;
};

/* Answer 'r' with a body that 'fn' produces as the client takes it (see http.h). */
void http_resp_pull(struct http_req *r, unsigned status, const char *ctype, http_pull_fn fn,
                    void (*release)(void *ud), void *ud)
{
    struct pull *p = xcalloc(1, sizeof(*p));
    p->fn = fn;
    p->release = release;
    p->ud = ud;
    r->pull = p;
    r->status = status;
    r->ctype = ctype;
}

static ssize_t pull_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct pull *p = cls;
    long n = p->fn(p->ud, out, max);
    (void)pos;
    if (n < 0)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    return n == 0 ? MHD_CONTENT_READER_END_OF_STREAM : (ssize_t)n;
}

static void pull_free(void *cls)
{
    struct pull *p = cls;
    if (p->release)
        p->release(p->ud);
    free(p);
}

static enum MHD_Result send_pull(struct http_req *r)
{
    struct pull *p = r->pull;
    struct MHD_Response *resp;
    enum MHD_Result ret;

    r->pull = NULL;
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, pull_read, p, pull_free);
    if (!resp) {
        pull_free(p);
        return MHD_NO;
    }
    add_headers(resp, r);
    ret = MHD_queue_response(r->conn, r->status, resp);
    MHD_destroy_response(resp);
    r->responded = true;
    return ret;
}

/* ---- Parking (deferred and streaming requests) ---- */

static void park(struct http_req *r)
{
    struct http_server *srv = r->srv;
    pthread_mutex_lock(&srv->mu);
    if (!r->is_parked) {
        r->park_prev = NULL;
        r->park_next = srv->parked;
        if (srv->parked)
            srv->parked->park_prev = r;
        srv->parked = r;
        r->is_parked = true;
    }
    pthread_mutex_unlock(&srv->mu);
}

static void unpark(struct http_req *r)
{
    struct http_server *srv = r->srv;
    pthread_mutex_lock(&srv->mu);
    if (r->is_parked) {
        if (r->park_prev)
            r->park_prev->park_next = r->park_next;
        else
            srv->parked = r->park_next;
        if (r->park_next)
            r->park_next->park_prev = r->park_prev;
        r->is_parked = false;
    }
    pthread_mutex_unlock(&srv->mu);
}

/*
 * The 'reading' list: requests between their headers and the end of their body. libmicrohttpd
 * 0.9.75 misses a client's close when the close arrived together with the last bytes it read
 * (a client that connects, sends part of a body and closes at once): the request then stays in
 * flight, holding its concurrency slot, until the connection times out (60 s). The ticker
 * looks at these sockets and shuts down the ones whose peer has closed, which wakes the library.
 */
static void reading_add(struct http_req *r)
{
    struct http_server *srv = r->srv;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return;
    pthread_mutex_lock(&srv->mu);
    r->fd = ci->connect_fd;
    r->rd_prev = NULL;
    r->rd_next = srv->reading;
    if (srv->reading)
        srv->reading->rd_prev = r;
    srv->reading = r;
    r->is_reading = true;
    pthread_mutex_unlock(&srv->mu);
}

static void reading_remove_locked(struct http_server *srv, struct http_req *r)
{
    if (!r->is_reading)
        return;
    if (r->rd_prev)
        r->rd_prev->rd_next = r->rd_next;
    else
        srv->reading = r->rd_next;
    if (r->rd_next)
        r->rd_next->rd_prev = r->rd_prev;
    r->is_reading = false;
}

static void reading_remove(struct http_req *r)
{
    pthread_mutex_lock(&r->srv->mu);
    reading_remove_locked(r->srv, r);
    pthread_mutex_unlock(&r->srv->mu);
}

/* Ticker: shut down the sockets of reading requests whose client has closed (srv->mu held). */
static void reap_closed_locked(struct http_server *srv)
{
    struct http_req *r = srv->reading, *next;
    for (; r; r = next) {
        char c;
        next = r->rd_next;
        if (recv(r->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
            shutdown(r->fd, SHUT_RDWR);
            reading_remove_locked(srv, r);
        }
    }
}

/* ---- Deferred responses ---- */

/* The response of 'r' will be set later by another thread (see http.h). */
void http_req_defer(struct http_req *r)
{
    r->deferred = true;
}

/* The deferred response of 'r' is set: let MHD send it. Any thread, exactly once. */
void http_req_resume(struct http_req *r)
{
    pthread_mutex_lock(&r->mu);
    r->ready = true;
    if (r->suspended) {
        r->suspended = false;
        MHD_resume_connection(r->conn);
    }
    pthread_mutex_unlock(&r->mu);
}

/* ---- Streams ---- */

static void stream_unref(struct http_stream *st)
{
    int left;
    pthread_mutex_lock(&st->mu);
    left = --st->refs;
    pthread_mutex_unlock(&st->mu);
    if (left == 0) {
        buf_cleanup(&st->data);
        pthread_mutex_destroy(&st->mu);
        free(st);
    }
}

/* Wake a suspended stream; the caller holds st->mu. */
static void stream_wake(struct http_stream *st)
{
    if (st->suspended && !st->gone) {
        st->suspended = false;
        MHD_resume_connection(st->conn);
    }
}

/* Start a streamed response of 'r' (see http.h). Never NULL. */
struct http_stream *http_stream_open(struct http_req *r, unsigned status, const char *ctype)
{
    struct http_stream *st = xcalloc(1, sizeof(*st));
    pthread_mutex_init(&st->mu, NULL);
    buf_init(&st->data, 8u << 20);
    st->refs = 2;
    st->conn = r->conn;
    st->last_ms = clock_now_ms();
    r->stream = st;
    r->status = status;
    r->ctype = ctype;
    return st;
}

/* Queue 'n' bytes for the client (any thread). ERR_IO when it has gone. */
int http_stream_write(struct http_stream *st, const char *p, size_t n)
{
    int rc = 0;
    pthread_mutex_lock(&st->mu);
    if (st->gone || st->closed) {
        rc = ERR_IO;
    } else {
        if (st->off > 0 && st->off == buf_len(&st->data)) {
            buf_reset(&st->data);
            st->off = 0;
        }
        rc = buf_append(&st->data, p, n);
        st->last_ms = clock_now_ms();
        stream_wake(st);
    }
    pthread_mutex_unlock(&st->mu);
    return rc;
}

/* True when the client's connection has ended. */
bool http_stream_gone(struct http_stream *st)
{
    bool g;
    pthread_mutex_lock(&st->mu);
    g = st->gone;
    pthread_mutex_unlock(&st->mu);
    return g;
}

/* End the body (what was queued is still sent) and drop the producer's reference. */
void http_stream_close(struct http_stream *st)
{
    pthread_mutex_lock(&st->mu);
    st->closed = true;
    stream_wake(st);
    pthread_mutex_unlock(&st->mu);
    stream_unref(st);
}

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    struct http_stream *st = cls;
    ssize_t n;
    (void)pos;
    pthread_mutex_lock(&st->mu);
    if (buf_len(&st->data) > st->off) {
        size_t left = buf_len(&st->data) - st->off;
        n = (ssize_t)(left < max ? left : max);
        memcpy(out, buf_ptr(&st->data) + st->off, (size_t)n);
        st->off += (size_t)n;
        st->last_ms = clock_now_ms();
    } else if (st->closed) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else {
        /* Nothing to send: park the connection until a write (or the ping) wakes it. */
        st->suspended = true;
        MHD_suspend_connection(st->conn);
        n = 0;
    }
    pthread_mutex_unlock(&st->mu);
    return n;
}

static void stream_free(void *cls)
{
    struct http_stream *st = cls;
    pthread_mutex_lock(&st->mu);
    st->gone = true;
    st->conn = NULL;
    pthread_mutex_unlock(&st->mu);
    stream_unref(st);
}

static enum MHD_Result send_stream(struct http_req *r)
{
    struct MHD_Response *resp;
    enum MHD_Result ret;

    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 1024, stream_read, r->stream,
                                             stream_free);
    if (!resp) {
        stream_free(r->stream);
        return MHD_NO;
    }
    add_headers(resp, r);
    park(r);
    ret = MHD_queue_response(r->conn, r->status, resp);
    MHD_destroy_response(resp);
    r->responded = true;
    return ret;
}

/* After handle(): send now, stream, or park the connection until the response is set. */
static enum MHD_Result after_handle(struct http_req *r)
{
    r->handled = true;
    if (r->stream)
        return send_stream(r);
    if (r->pull)
        return send_pull(r);
    if (!r->deferred)
        return send_response(r);
    pthread_mutex_lock(&r->mu);
    if (r->ready) {
        pthread_mutex_unlock(&r->mu);
        return send_response(r);
    }
    park(r);
    r->suspended = true;
    MHD_suspend_connection(r->conn);
    pthread_mutex_unlock(&r->mu);
    return MHD_YES;
}

static void *ticker_main(void *arg)
{
    struct http_server *srv = arg;
    const char *ping = srv->ping_text ? srv->ping_text : ": ping\n\n";
    size_t plen = strlen(ping);

    pthread_mutex_lock(&srv->mu);
    while (!atomic_load(&srv->stopping)) {
        struct timespec until;
        int64_t now;

        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&srv->tick, &srv->mu, &until);
        if (atomic_load(&srv->stopping))
            break;
        now = clock_now_ms();
        reap_closed_locked(srv);
        for (struct http_req *r = srv->parked; r; r = r->park_next) {
            struct http_stream *st = r->stream;
            if (!st)
                continue;
            pthread_mutex_lock(&st->mu);
            if (!st->closed && !st->gone && now - st->last_ms >= (int64_t)srv->ping_s * 1000) {
                if (buf_append(&st->data, ping, plen) == 0)
                    st->last_ms = now;
                stream_wake(st);
            }
            pthread_mutex_unlock(&st->mu);
        }
    }
    pthread_mutex_unlock(&srv->mu);
    return NULL;
}

/* End every parked request so that no connection stays suspended (stop only). */
static void unpark_all(struct http_server *srv)
{
    pthread_mutex_lock(&srv->mu);
    for (struct http_req *r = srv->parked; r; r = r->park_next) {
        if (r->stream) {
            pthread_mutex_lock(&r->stream->mu);
            r->stream->closed = true;
            stream_wake(r->stream);
            pthread_mutex_unlock(&r->stream->mu);
        } else {
            pthread_mutex_lock(&r->mu);
            if (!r->ready) {
                r->ready = true;
                app_error(r, 503, "service_unavailable", "The server is stopping.");
                if (r->suspended) {
                    r->suspended = false;
                    MHD_resume_connection(r->conn);
                }
            }
            pthread_mutex_unlock(&r->mu);
        }
    }
    pthread_mutex_unlock(&srv->mu);
}

static int append_body(struct http_req *r, const char *data, size_t n)
{
    if (r->sink) {
        if (!r->sink_rc)
            r->sink_rc = r->sink(r->sink_ud, data, n);
        return 0;
    }
    if (r->too_large || n > r->body_cap - r->body_len) {
        r->too_large = true;
        return 0;
    }
    if (r->body_len + n + 1 > r->body_alloc) {
        /* Start from what this piece needs: small bodies stay small (a stream keeps it). */
        size_t want = r->body_alloc ? r->body_alloc : 256;
        char *nb;
        while (want < r->body_len + n + 1)
            want *= 2;
        nb = mem_try_alloc(want);
        if (!nb)
            return -1;
        if (r->body_len)
            memcpy(nb, r->body, r->body_len);
        free(r->body);
        r->body = nb;
        r->body_alloc = want;
    }
    memcpy(r->body + r->body_len, data, n);
    r->body_len += n;
    r->body[r->body_len] = '\0';
    return 0;
}

/* ---- Before the application: request line and header block ---- */

static struct http_req *req_new(struct http_server *srv, struct MHD_Connection *conn)
{
    struct http_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    arena_init(&r->arena);
    r->srv = srv;
    r->conn = conn;
    r->body_cap = 1 << 20;
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

/*
 * MHD_OPTION_URI_LOG_CALLBACK: called with the request target before libmicrohttpd parses its
 * query string. The request is created here, the query is copied for the router, and it is cut
 * from MHD's (writable) buffer so that MHD parses no parameter: 0.9.75 keeps each one in the
 * connection's small memory pool and, when that runs out, stalls the connection until its
 * timeout without an answer (about 180 parameters did it).
 */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
    struct http_req *r = req_new(cls, conn);
    const char *q = strchr(uri, '?');
    if (r && q) {
        r->query = arena_strdup(&r->arena, q + 1);
        ((char *)(uintptr_t)q)[1] = '\0';
    }
    return r;
}

static void refuse(struct http_req *r, const char *code, const char *param, const char *msg)
{
    if (r->refused)
        return;
    r->refused = true;
    r->refusal.code = code;
    r->refusal.param = param;
    r->refusal.msg = msg;
}

struct hdr_scan {
    struct http_req *r;
    unsigned cl, te, auth, host, count;
    const char *te_value;
};

static bool is_tchar(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("!#$%&'*+-.^_`|~", c));
}

/*
 * libmicrohttpd 0.9.75 keeps a header line in place in its read buffer: the name, the NUL that
 * replaced the colon, optional whitespace, the value. It joins an obs-fold continuation line by
 * appending it to the *name* (moving the name when it cannot grow in place), so a name and a
 * value that do not sit like that in memory come from a folded line. tests/http/test_framing.py
 * sends folded lines, so a libmicrohttpd that lays headers out otherwise fails there.
 */
static bool one_line(const char *key, size_t klen, const char *value)
{
    uintptr_t k = (uintptr_t)key, v = (uintptr_t)value;
    if (v < k + klen + 1 || v - (k + klen + 1) > 1024)
        return false;
    for (const char *p = key + klen + 1; p != value; p++) {
        if (*p != ' ' && *p != '\t')
            return false;
    }
    return true;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   const char *value)
{
    struct hdr_scan *h = cls;
    size_t klen = strlen(key);
    (void)kind;
    h->count++;
    for (size_t i = 0; i < klen; i++) {
        if (!is_tchar((unsigned char)key[i]))
            refuse(h->r, "invalid_request", NULL,
                   "Invalid header field name (RFC 9112 5.1: no whitespace before the colon).");
    }
    if (klen == 0)
        refuse(h->r, "invalid_request", NULL, "Empty header field name.");
    if (value && !one_line(key, klen, value))
        refuse(h->r, "invalid_request", NULL,
               "Obsolete line folding is not accepted (RFC 9112 5.2).");
    if (strcasecmp(key, "Content-Length") == 0)
        h->cl++;
    else if (strcasecmp(key, "Transfer-Encoding") == 0) {
        h->te++;
        h->te_value = value;
    } else if (strcasecmp(key, "Authorization") == 0)
        h->auth++;
    else if (strcasecmp(key, "Host") == 0)
        h->host++;
    return MHD_YES;
}

/*
 * The framing checks of RFC 9112 that libmicrohttpd 0.9.75 does not make, and the size rule of
 * the header block, before the application sees the request. A refused request is answered
 * at once, unread, and its connection closed: a proxy in front may frame it otherwise.
 */
static void check_framing(struct http_req *r, const char *version)
{
    struct hdr_scan h = {r, 0, 0, 0, 0, 0, NULL};
    const union MHD_ConnectionInfo *ci;

    MHD_get_connection_values(r->conn, MHD_HEADER_KIND, scan_header, &h);
    if (h.cl > 1)
        refuse(r, "invalid_request", "Content-Length", "More than one Content-Length header.");
    if (h.te && h.cl)
        refuse(r, "invalid_request", "Transfer-Encoding",
               "Content-Length and Transfer-Encoding together (RFC 9112 6.1).");
    if (h.te > 1 || (h.te && strcasecmp(h.te_value ? h.te_value : "", "chunked") != 0))
        refuse(r, "invalid_request", "Transfer-Encoding",
               "The only transfer coding accepted is a single 'chunked'.");
    if (h.auth > 1)
        refuse(r, "invalid_request", "Authorization", "More than one Authorization header.");
    if (h.host > 1)
        refuse(r, "invalid_request", "Host", "More than one Host header.");
    if (!h.host && version && strcmp(version, MHD_HTTP_VERSION_1_1) == 0)
        refuse(r, "invalid_request", "Host", "An HTTP/1.1 request needs a Host header.");
    if (strlen(r->path) + (r->query ? strlen(r->query) + 1 : 0) > HTTP_URI_MAX)
        refuse(r, "uri_too_long", NULL,
               "The request target is longer than " HTTP_URI_MAX_TEXT " bytes.");
    ci = MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (ci && ci->header_size + (size_t)h.count * HTTP_HEADER_COST > HTTP_HEADER_MAX)
        refuse(r, "request_header_fields_too_large", NULL,
               "The request line and headers are larger than " HTTP_HEADER_MAX_TEXT
               " bytes (each header line counts 64 bytes more than its length).");
}

/* ---- The access handler ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls)
{
    struct http_server *srv = cls;
    struct http_req *r = *con_cls;

    if (!r) {
        r = req_new(srv, conn); /* on_uri could not allocate it */
        if (!r)
            return MHD_NO;
        *con_cls = r;
    }
    if (!r->began) {
        r->method = arena_strdup(&r->arena, method);
        r->path = arena_strdup(&r->arena, url);
        r->began = true;
        atomic_fetch_add(&srv->inflight, 1);
        check_framing(r, version);
        if (srv->app.begin(r, srv->app.ud) == HTTP_RESPOND_NOW || r->refused) {
            r->early = true;
            return send_response(r);
        }
        reading_add(r);
        return MHD_YES;
    }
    r->conn = conn;
    if (*upload_size) {
        uint64_t max = r->body_max ? r->body_max : (uint64_t)r->body_cap + (1u << 20);
        r->body_seen += *upload_size;
        if (r->body_seen > max) {
            /* Far past what could be accepted: libmicrohttpd cannot answer while a body is
             * coming in, so stop reading it and close (see docs/security.md). */
            log_info("http: %s %s: closed after %llu body bytes", r->method, r->path,
                     (unsigned long long)r->body_seen);
            return MHD_NO;
        }
        if (!r->responded && append_body(r, upload, *upload_size) != 0)
            r->too_large = true; /* memory refused: answered as too large */
        *upload_size = 0;
        return MHD_YES;
    }
    if (r->responded)
        return MHD_YES;
    if (r->handled) {
        /* Resumed: a deferred response is ready (or the connection woke spuriously). */
        bool ready;
        pthread_mutex_lock(&r->mu);
        ready = r->ready;
        if (!ready) {
            r->suspended = true;
            MHD_suspend_connection(conn);
        }
        pthread_mutex_unlock(&r->mu);
        return ready ? send_response(r) : MHD_YES;
    }
    reading_remove(r);
    srv->app.handle(r, srv->app.ud);
    return after_handle(r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    struct http_server *srv = cls;
    struct http_req *r = *con_cls;
    (void)conn;
    (void)toe;
    if (!r)
        return;
    unpark(r);
    reading_remove(r);
    if (r->began) {
        srv->app.done(r, srv->app.ud);
        atomic_fetch_sub(&srv->inflight, 1);
    }
    pthread_mutex_destroy(&r->mu);
    if (r->pull)
        pull_free(r->pull); /* never handed to MHD */
    free(r->body);
    free(r->resp_body);
    arena_cleanup(&r->arena);
    free(r);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/*
 * libmicrohttpd's messages, into our log. A connection over the per-address or the total limit
 * is closed by the library with a message each time: a client that keeps trying would fill the
 * log, so those are counted and written at most once every REFUSED_LOG_MS.
 */
#define REFUSED_LOG_MS 10000

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct http_server *srv = cls;
    char line[512];
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    if (srv && strstr(line, "reached connection limit")) {
        int64_t now = clock_now_ms(), at = atomic_load(&srv->refused_at_ms);
        unsigned n = atomic_fetch_add(&srv->refused, 1) + 1;
        if (now - at < REFUSED_LOG_MS ||
            !atomic_compare_exchange_strong(&srv->refused_at_ms, &at, now))
            return;
        atomic_fetch_sub(&srv->refused, n);
        log_warn("http: %u connection%s closed at once, over the limit of connections per "
                 "client address (%s) or in all (%u)",
                 n, n == 1 ? "" : "s", srv->per_address_text, HTTP_CONNECTIONS_MAX);
        return;
    }
    log_warn("http: %s", line);
}

/* The accept policy: while the server drains, a new connection is closed at once. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    struct http_server *srv = cls;

    (void)addr;
    (void)addrlen;
    return atomic_load(&srv->draining) ? MHD_NO : MHD_YES;
}

/*
 * Bind 'o->host':'o->port' and serve with 'o->threads' threads. '*out' is owned by the caller
 * and released by http_server_stop(). Returns 0 or ERR_IO (address unusable, port taken).
 */
int http_server_start(const struct http_options *o, const struct http_app *app,
                      struct http_server **out)
{
    struct http_server *srv = xcalloc(1, sizeof(*srv));
    struct addrinfo hints, *ai = NULL;
    char port[8];
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
                     MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    const union MHD_DaemonInfo *info;
    pthread_condattr_t ca;

    *out = NULL;
    srv->app = *app;
    srv->ping_s = o->ping_s ? o->ping_s : 15;
    srv->ping_text = o->ping_text;
    if (o->per_address)
        snprintf(srv->per_address_text, sizeof(srv->per_address_text), "%u", o->per_address);
    else
        snprintf(srv->per_address_text, sizeof(srv->per_address_text), "none");
    pthread_mutex_init(&srv->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&srv->tick, &ca);
    pthread_condattr_destroy(&ca);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port, sizeof(port), "%u", o->port);
    if (getaddrinfo(o->host, port, &hints, &ai) != 0 || !ai) {
        log_error("http: cannot resolve listen address %s", o->host);
        pthread_cond_destroy(&srv->tick);
        pthread_mutex_destroy(&srv->mu);
        free(srv);
        return ERR_IO;
    }
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    srv->d = MHD_start_daemon(
        flags, (uint16_t)o->port, on_accept, srv, on_request, srv,
        /* the logger first, so that MHD never prints with its own */
        MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, srv, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_URI_LOG_CALLBACK, on_uri, srv, MHD_OPTION_THREAD_POOL_SIZE,
        (unsigned)(o->threads ? o->threads : 1),
        /* 12 KiB per connection (headers, response head, send buffer) instead of MHD's 32:
         * an open stream holds it for its whole life. */
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(12 * 1024), MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, srv, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned)(o->conn_timeout_s ? o->conn_timeout_s : 60), MHD_OPTION_CONNECTION_LIMIT,
        HTTP_CONNECTIONS_MAX, MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
        /* one client address holds at most this many of them (0: the option is not given) */
        o->per_address ? MHD_OPTION_PER_IP_CONNECTION_LIMIT : MHD_OPTION_END, o->per_address,
        MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!srv->d) {
        log_error("http: cannot listen on %s:%u", o->host, o->port);
        pthread_cond_destroy(&srv->tick);
        pthread_mutex_destroy(&srv->mu);
        free(srv);
        return ERR_IO;
    }
    info = MHD_get_daemon_info(srv->d, MHD_DAEMON_INFO_BIND_PORT);
    srv->port = info ? info->port : o->port;
    srv->ticker_started = pthread_create(&srv->ticker, NULL, ticker_main, srv) == 0;
    *out = srv;
    return 0;
}

/* The port the server is bound to. */
unsigned http_server_port(const struct http_server *s)
{
    return s->port;
}

/* Stop accepting new connections and wait up to 'drain_s' seconds for requests in flight. */
void http_server_drain(struct http_server *s, unsigned drain_s)
{
    struct timespec tick = {0, 10 * 1000 * 1000};
    unsigned waited = 0;

    atomic_store(&s->draining, true);
    while (atomic_load(&s->inflight) > 0 && waited < drain_s * 100) {
        nanosleep(&tick, NULL);
        waited++;
    }
}

/*
 * Drain for up to 'drain_s' seconds, end whatever is still parked (streams end, deferred
 * requests get 503), then stop and free 's'. NULL is a no-op.
 */
void http_server_stop(struct http_server *s, unsigned drain_s)
{
    struct timespec tick = {0, 10 * 1000 * 1000};
    unsigned waited = 0;

    if (!s)
        return;
    http_server_drain(s, drain_s);
    if (atomic_load(&s->inflight) > 0) {
        log_warn("http: stopping with %d requests still in flight", atomic_load(&s->inflight));
        unpark_all(s);
        waited = 0;
        while (atomic_load(&s->inflight) > 0 && waited < 200) {
            nanosleep(&tick, NULL);
            waited++;
        }
    }
    pthread_mutex_lock(&s->mu);
    atomic_store(&s->stopping, true);
    pthread_cond_signal(&s->tick);
    pthread_mutex_unlock(&s->mu);
    if (s->ticker_started)
        pthread_join(s->ticker, NULL);
    MHD_stop_daemon(s->d);
    pthread_cond_destroy(&s->tick);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
