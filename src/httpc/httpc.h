/* SPDX-License-Identifier: MIT */
/*
 * httpc: outbound HTTP for the language-model and OAuth providers. One thread runs libcurl's
 * multi interface for every transfer, so a thousand slow upstream streams cost a thousand easy
 * handles, not a thousand threads. Callbacks run on that thread: they must not block.
 */
#ifndef WORKFORCE_HTTPC_H
#define WORKFORCE_HTTPC_H

#include "../core/err.h"

#include <stddef.h>
#include <stdint.h>

struct httpc;

/* Which peers a transfer may connect to. The operator's own upstreams (the model provider,
 * OAuth providers) are reached as configured; a URL a tenant chose is judged at each connection
 * by the address policy of hook.h, on a fresh connection that no other transfer shares, without
 * a proxy. */
enum httpc_peers {
    HTTPC_PEERS_ANY = 0,    /* no check */
    HTTPC_PEERS_PUBLIC,     /* public addresses only (httpc_addr_classify()) */
    HTTPC_PEERS_NO_METADATA /* any address but cloud metadata (httpc_addr_metadata()) */
};

/* One response header line as it arrives ("Name: value\r\n"; status lines too); non-zero
 * aborts the transfer. Runs on the client thread. */
typedef int (*httpc_header_fn)(void *ud, const char *line, size_t n);

struct httpc_request {
    const char *method; /* "GET", "POST", "DELETE", "PATCH", "PUT" */
    const char *url;
    const char *const *headers; /* "Name: value" lines */
    size_t nheaders;
    const char *body; /* copied */
    size_t body_len;
    long connect_timeout_ms;
    long timeout_ms;     /* whole transfer */
    int64_t start_at_ms; /* 0: now; else not before this wall time (retry backoff) */
    enum httpc_peers peers;
    httpc_header_fn on_header; /* or NULL; called with the ud of httpc_start() */
};

/* Body bytes as they arrive, with the response status; non-zero aborts the transfer. */
typedef int (*httpc_data_fn)(void *ud, long status, const char *p, size_t n);
/* End of the transfer: 0, ERR_UPSTREAM (network, timeout) or the data callback's abort. 'why'
 * says what failed; for a transfer with a peer policy it is client-safe ("connection refused",
 * "timed out after 30 s", "address refused: 127.0.0.1 is a loopback address"). */
typedef void (*httpc_done_fn)(void *ud, int rc, long status, const char *why);

int httpc_new(struct httpc **out);
/* Stop the thread: transfers under way and queued end with ERR_UPSTREAM, and later ones at
 * once (on the caller's thread). Any thread, once or more; NULL is a no-op. */
void httpc_shutdown(struct httpc *h);
void httpc_free(struct httpc *h); /* shuts down; no call may be under way or come later */
int httpc_start(struct httpc *h, const struct httpc_request *req, httpc_data_fn on_data,
                httpc_done_fn on_done, void *ud);

/* ---- For OpenAI-compatible providers ---- */

/* "Authorization: Bearer <key>" (the caller frees it), or NULL when 'key' is NULL or empty. */
char *httpc_bearer(const char *key);

/* One attempt of a JSON POST; attempt n > 0 starts 250 * 2^n ms from now (retry backoff). */
struct httpc_post {
    const char *url;
    const char *accept; /* the Accept header's value */
    const char *auth;   /* an httpc_bearer() line, or NULL */
    const char *body;   /* NUL-terminated JSON, copied */
    long connect_timeout_ms, timeout_ms;
    int attempt;
};
int httpc_post_json(struct httpc *h, const struct httpc_post *p, httpc_data_fn on_data,
                    httpc_done_fn on_done, void *ud);

#endif
