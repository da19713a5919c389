/* SPDX-License-Identifier: MIT */
/*
 * http: the server's HTTP surface over libmicrohttpd, which no other module sees. A request is
 * a struct http_req (opaque) with an arena that lives until the response is done. The
 * application plugs in with three callbacks (struct http_app): begin (headers known, may
 * answer at once or set a body cap), handle (body complete, must set a response) and done.
 */
#ifndef WORKFORCE_HTTP_H
#define WORKFORCE_HTTP_H

#include "../core/mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct http_req;
struct http_server;

/* The largest request line + header block served, each header line counting
 * HTTP_HEADER_COST bytes more (431 beyond; see server.c), and the largest request target
 * (414 beyond). */
#define HTTP_HEADER_MAX 8192
#define HTTP_HEADER_COST 64
#define HTTP_URI_MAX 4096

enum http_begin { HTTP_READ_BODY, HTTP_RESPOND_NOW };

struct http_app {
    enum http_begin (*begin)(struct http_req *r, void *ud);
    void (*handle)(struct http_req *r, void *ud);
    void (*done)(struct http_req *r, void *ud); /* response sent or connection lost */
    /*
     * The application's error writer, for the answers this layer makes itself: a handler that
     * set no response ("internal_error") and a deferred request still waiting when the server
     * stops ("service_unavailable"). It sets the response of 'r' (http_resp_set) from the
     * error 'code' and the client-safe 'msg'. This layer knows no error format: without a
     * writer (NULL) it answers with the status and an empty body.
     */
    void (*error)(struct http_req *r, const char *code, const char *msg, void *ud);
    void *ud;
};

struct http_options {
    const char *host;
    unsigned port;
    unsigned threads;
    unsigned conn_timeout_s;
    unsigned ping_s;       /* a stream silent this long gets ping_text; 0: 15 */
    const char *ping_text; /* NULL: ": ping\n\n" */
    unsigned per_address;  /* connections one client address may hold open; 0: no limit */
};

/* ---- Server ---- */
int http_server_start(const struct http_options *o, const struct http_app *app,
                      struct http_server **out);
unsigned http_server_port(const struct http_server *s); /* bound port (for port 0) */
/* Stop accepting and wait up to 'drain_s' seconds for requests in flight (may be repeated). */
void http_server_drain(struct http_server *s, unsigned drain_s);
void http_server_stop(struct http_server *s, unsigned drain_s); /* drain, end the rest, free */

/* ---- Request ---- */
struct arena *http_req_arena(struct http_req *r);
const char *http_req_method(const struct http_req *r);
const char *http_req_path(const struct http_req *r);
const char *http_req_header(struct http_req *r, const char *name); /* NULL when absent */
const char *http_req_query(const struct http_req *r); /* raw query after '?', or NULL */
const char *http_req_peer(struct http_req *r);        /* the client address, or "" */
/* Why the HTTP layer refuses the request before the application (framing, sizes). */
struct http_refusal {
    const char *code;  /* contract error code */
    const char *param; /* NULL when none */
    const char *msg;
};
const struct http_refusal *http_req_refusal(const struct http_req *r); /* NULL: none */
/* A body is announced and still to be read (chunked, or Content-Length above 'small'). */
bool http_req_body_pending(struct http_req *r, uint64_t small);
/* begin() only: close the connection when more than 'max' body bytes arrive (default cap+1MiB) */
void http_req_set_body_max(struct http_req *r, uint64_t max);
const char *http_req_body(const struct http_req *r, size_t *len);
bool http_req_body_too_large(const struct http_req *r);
void http_req_set_body_cap(struct http_req *r, size_t cap);
/* begin() only: body bytes go to 'fn' as they arrive instead of the buffer (no cap applies).
 * A non-zero return stops the calls; the rest of the body is read and dropped. */
typedef int (*http_body_fn)(void *ud, const char *p, size_t n);
void http_req_set_body_sink(struct http_req *r, http_body_fn fn, void *ud);
void http_req_set_user(struct http_req *r, void *p);
void *http_req_user(const struct http_req *r);

/* ---- Response ---- */
/* Set status and body; 'body' (may be NULL when len is 0) is taken: it will be free()d. */
void http_resp_set(struct http_req *r, unsigned status, const char *content_type, char *body,
                   size_t len);
/* Set status and a body that is neither copied nor freed: it must outlive the server. */
void http_resp_static(struct http_req *r, unsigned status, const char *content_type,
                      const char *body, size_t len);
void http_resp_header(struct http_req *r, const char *name, const char *value); /* copied */
unsigned http_resp_status(const struct http_req *r);
/* The response body set so far (borrowed; NULL when none) and its content type. */
const char *http_resp_peek(const struct http_req *r, size_t *len, const char **ctype);

/* ---- Pulled responses ---- */
/*
 * A body produced on demand, on the HTTP thread, each time the client can take more: fill up
 * to 'max' bytes of 'out' and return how many (> 0), 0 at the end, or -1 to abort (a failure
 * after the status was sent: the connection is closed, so the client sees a cut body).
 */
typedef long (*http_pull_fn)(void *ud, char *out, size_t max);
/* Called in handle(): answer with 'status' and a pulled body; 'release(ud)' runs at the end. */
void http_resp_pull(struct http_req *r, unsigned status, const char *ctype, http_pull_fn fn,
                    void (*release)(void *ud), void *ud);

/* ---- Deferred responses ---- */
/*
 * Called in handle(): the response will be set later, from any thread. The connection is
 * suspended (no worker thread waits) until http_req_resume(). Every deferred request must be
 * resumed exactly once, after http_resp_set().
 */
void http_req_defer(struct http_req *r);
void http_req_resume(struct http_req *r);

/* ---- Streamed responses (SSE) ---- */
struct http_stream;
/*
 * Called in handle(): answer 'r' with 'status' and a body of unknown length written by
 * http_stream_write() from any thread. The caller holds one reference and must drop it with
 * http_stream_close() exactly once; the connection holds the other until it ends.
 */
struct http_stream *http_stream_open(struct http_req *r, unsigned status, const char *ctype);
/* Queue bytes; ERR_IO when the client has gone (the bytes are dropped), ERR_LIMIT when full. */
int http_stream_write(struct http_stream *s, const char *p, size_t n);
bool http_stream_gone(struct http_stream *s);
void http_stream_close(struct http_stream *s); /* end of body; drops the caller's reference */

#endif
