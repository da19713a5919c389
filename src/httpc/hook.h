/* SPDX-License-Identifier: MIT */
/*
 * httpc/hook: the outbound side of webhook delivery, below the webhooks module. Three pieces:
 *
 *   - httpc_hook_url_parse(): the pure check of an endpoint URL a client registers (url.c);
 *   - httpc_addr_classify(): the pure policy on the socket addresses a delivery may connect
 *     to (addr.c): loopback, private, link-local, multicast and other special ranges are
 *     refused unless the operator allows private targets;
 *   - httpc_hook_post(): one blocking, signed POST (client.c), with the policy applied to each
 *     address libcurl is about to connect to, after resolving the host at delivery time.
 *
 * Signing is crypto_whsec_sign() (core/crypto.h); the caller passes its result here.
 */
#ifndef WORKFORCE_HTTPC_HOOK_H
#define WORKFORCE_HTTPC_HOOK_H

#include "../core/err.h"
#include "../core/str.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sockaddr;

/* ---- Endpoint URLs (url.c) ---- */

#define HTTPC_HOOK_URL_MAX 2048

/* The parts of an accepted URL; slices into the caller's buffer. */
struct httpc_hook_url {
    bool https;
    struct str host; /* a DNS name, a dotted-quad IPv4 or an IPv6 literal (without brackets) */
    int port;        /* as given, else 80 or 443 */
    struct str rest; /* path and query ("" or starting with '/' or '?') */
};

/* Check the 'len' bytes of 'url' as a webhook endpoint: absolute http(s), a host, no user
 * info, no fragment, at most HTTPC_HOOK_URL_MAX bytes of printable ASCII. 0 with 'out' (may be
 * NULL) filled, or ERR_INVALID with a client-safe message on 'param' in 'e'. Pure. */
int httpc_hook_url_parse(const char *url, size_t len, struct httpc_hook_url *out, const char *param,
                         struct err *e);

/* ---- Address policy (addr.c) ---- */

/* What an address is, for the policy; every class but HTTPC_ADDR_PUBLIC is refused unless
 * private targets are allowed. */
enum httpc_addr_class {
    HTTPC_ADDR_PUBLIC = 0,
    HTTPC_ADDR_LOOPBACK,    /* 127/8, ::1 */
    HTTPC_ADDR_UNSPECIFIED, /* 0/8, :: */
    HTTPC_ADDR_PRIVATE,     /* 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10 */
    HTTPC_ADDR_SHARED,      /* 100.64/10 (carrier-grade NAT) */
    HTTPC_ADDR_LINK_LOCAL,  /* 169.254/16, fe80::/10 */
    HTTPC_ADDR_MULTICAST,   /* 224/4, ff00::/8 */
    HTTPC_ADDR_BROADCAST,   /* 255.255.255.255 */
    HTTPC_ADDR_RESERVED,    /* documentation, benchmarking, 240/4, IPv6 outside 2000::/3, ... */
    HTTPC_ADDR_UNKNOWN      /* neither IPv4 nor IPv6, or too short */
};

/* Classify the 'len' bytes of socket address 'sa' (AF_INET or AF_INET6). IPv6 forms carrying
 * an IPv4 address (mapped ::ffff:0:0/96, NAT64 64:ff9b::/96, 6to4 2002::/16) take the class
 * of that address. Pure. */
enum httpc_addr_class httpc_addr_classify(const struct sockaddr *sa, size_t len);
/* Whether 'sa' is a cloud metadata address, refused even where private targets are allowed:
 * 169.254.0.0/16 (the embedded-IPv4 forms above included) and fd00:ec2::/32. Pure. */
bool httpc_addr_metadata(const struct sockaddr *sa, size_t len);
/* "a loopback address", for "address refused: 127.0.0.1 is a loopback address". */
const char *httpc_addr_class_desc(enum httpc_addr_class c);
/* The numeric address of 'sa' ("127.0.0.1", "::1") into 'out' ("?" when unknown). */
void httpc_addr_format(const struct sockaddr *sa, size_t len, char *out, size_t n);

/* ---- Delivery (client.c) ---- */

#define HTTPC_HOOK_BODY_KEEP 4096 /* response bytes kept; the rest is read and dropped */
#define HTTPC_HOOK_USER_AGENT "Workforce-Webhooks/1"

struct httpc_hook_req {
    const char *url;  /* checked again with httpc_hook_url_parse() */
    const char *body; /* the event JSON, sent as is (not copied: the call blocks) */
    size_t body_len;
    const char *id;        /* webhook-id (the event id); required */
    int64_t timestamp;     /* webhook-timestamp, Unix seconds */
    const char *signature; /* webhook-signature (required): crypto_whsec_sign()'s, or several by
                            * spaces while a secret rotates */
    const char *const *headers; /* more "Name: value" lines, or NULL */
    size_t nheaders;
    long timeout_ms;    /* the whole attempt: resolve, connect, send, answer; <= 0: 10000 */
    bool allow_private; /* WORKFORCE_WEBHOOKS_ALLOW_PRIVATE: skip the address policy */
};

struct httpc_hook_res {
    int status;         /* the HTTP status, 0 when no answer came */
    char error[256];    /* "" when status > 0; else why, client-safe ("connection refused") */
    int64_t elapsed_ms; /* from the call to the end of the attempt */
    char body[HTTPC_HOOK_BODY_KEEP + 1]; /* the first bytes of the answer, NUL-terminated */
    size_t body_len;                     /* bytes in 'body' */
    bool body_cut;                       /* the answer was longer */
};

/*
 * POST 'req' once and wait for the answer (at most 'timeout_ms'). Headers: Content-Type:
 * application/json, User-Agent: Workforce-Webhooks/1, webhook-id, webhook-timestamp,
 * webhook-signature and 'headers'. Redirects are not followed, proxies are not used, only http
 * and https are spoken, and unless 'allow_private' every address the host resolves to that
 * httpc_addr_classify() does not call public is refused before a connection is opened.
 * Returns 0 when an HTTP answer came (any status: judge 'out->status'), ERR_UPSTREAM when none
 * did ('out->error' says why), ERR_INVALID for a malformed URL or header (a CR or LF in a
 * value). 'out' is always filled. Thread-safe: each call has its own connection.
 */
int httpc_hook_post(const struct httpc_hook_req *req, struct httpc_hook_res *out);

#endif
