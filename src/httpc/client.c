/* SPDX-License-Identifier: MIT */
/*
 * client.c: the only libcurl user. DESIGN: callers queue a transfer under a mutex and wake the
 * loop (curl_multi_wakeup); the loop thread owns the multi handle and every easy handle, adds
 * queued transfers whose start time has come, runs curl_multi_poll, and reports completions.
 * Nothing else touches curl objects, so no curl call needs a lock.
 *
 * Webhook delivery (httpc_hook_post(), at the end) is the exception to that loop: a blocking
 * call on the caller's thread with an easy handle of its own, since the webhook worker's
 * threads wait for each answer anyway. See the DESIGN note above it.
 */
#include "httpc.h"

#include "hook.h"

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct xfer {
    struct xfer *next;
    struct xfer *aprev, *anext; /* the active list (loop thread only) */
    CURL *easy;
    struct curl_slist *headers;
    char *body;
    char *url;
    char *method;
    long connect_timeout_ms, timeout_ms;
    int64_t start_at_ms;
    httpc_data_fn on_data;
    httpc_done_fn on_done;
    httpc_header_fn on_header;
    void *ud;
    int abort_rc;
    enum httpc_peers peers;
    int allowed, refused;  /* addresses the policy let through / refused */
    char refused_why[128]; /* the first refusal: "127.0.0.1 is a loopback address" */
    char why[256];         /* a guarded transfer's client-safe reason */
    char errbuf[CURL_ERROR_SIZE];
};

struct httpc {
    CURLM *multi;
    pthread_t thread;
    pthread_mutex_t mu;
    struct xfer *queue;  /* waiting to be added (or for their start time) */
    struct xfer *active; /* in the multi handle; touched by the loop thread only */
    atomic_bool stop;
    bool closed; /* under 'mu': shut down, new transfers fail at once */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;

static void global_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void xfer_free(struct xfer *x)
{
    if (x->easy)
        curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->headers);
    free(x->body);
    free(x->url);
    free(x->method);
    free(x);
}

static size_t on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    long status = 0;
    size_t n = size * nmemb;
    int rc;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    rc = x->on_data(x->ud, status, p, n);
    if (rc) {
        x->abort_rc = rc;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    return n;
}

static size_t on_header(char *p, size_t size, size_t nitems, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nitems;
    int rc = x->on_header(x->ud, p, n);
    if (rc) {
        x->abort_rc = rc;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    return n;
}

static bool addr_allowed(enum httpc_peers peers, const struct sockaddr *sa, size_t len,
                         enum httpc_addr_class *cls);

/* libcurl's socket() for a transfer with a peer policy: refuses an address the policy refuses
 * (CURL_SOCKET_BAD, which libcurl takes as a failed connection to that address). */
static curl_socket_t open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct xfer *x = ud;
    enum httpc_addr_class k = HTTPC_ADDR_UNKNOWN;

    if (purpose != CURLSOCKTYPE_IPCXN || !addr_allowed(x->peers, &a->addr, a->addrlen, &k)) {
        if (x->refused++ == 0) {
            char ip[64];
            httpc_addr_format(&a->addr, a->addrlen, ip, sizeof(ip));
            snprintf(x->refused_why, sizeof(x->refused_why), "%s is %s", ip,
                     httpc_addr_metadata(&a->addr, a->addrlen) ? "a cloud metadata address"
                                                               : httpc_addr_class_desc(k));
        }
        return CURL_SOCKET_BAD;
    }
    x->allowed++;
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int setup(struct xfer *x)
{
    x->easy = curl_easy_init();
    if (!x->easy)
        return ERR_NOMEM;
    curl_easy_setopt(x->easy, CURLOPT_URL, x->url);
    curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x);
    curl_easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->errbuf);
    curl_easy_setopt(x->easy, CURLOPT_CONNECTTIMEOUT_MS, x->connect_timeout_ms);
    curl_easy_setopt(x->easy, CURLOPT_TIMEOUT_MS, x->timeout_ms);
    /* 4 KiB receive buffer: model streams come in small events, and each open stream keeps it. */
    curl_easy_setopt(x->easy, CURLOPT_BUFFERSIZE, 4096L);
    curl_easy_setopt(x->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(x->easy, CURLOPT_FOLLOWLOCATION, 0L);
    /* Some APIs (GitHub) refuse a request without one; a caller's own header replaces it. */
    curl_easy_setopt(x->easy, CURLOPT_USERAGENT, "workforce/1");
    if (x->on_header) {
        curl_easy_setopt(x->easy, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
    }
    if (x->peers != HTTPC_PEERS_ANY) {
        /* the address judged is the address used: a connection of its own, opened through the
         * policy, left to no other transfer, and no proxy in between (see the DESIGN note of
         * webhook delivery below) */
        curl_easy_setopt(x->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
        curl_easy_setopt(x->easy, CURLOPT_OPENSOCKETDATA, x);
        curl_easy_setopt(x->easy, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(x->easy, CURLOPT_FORBID_REUSE, 1L);
        curl_easy_setopt(x->easy, CURLOPT_PROXY, "");
        curl_easy_setopt(x->easy, CURLOPT_NOPROXY, "*");
    }
    if (strcmp(x->method, "GET") != 0 && strcmp(x->method, "POST") != 0)
        curl_easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, x->method); /* DELETE, PATCH, PUT */
    if (strcmp(x->method, "POST") == 0 || (x->body && strcmp(x->method, "GET") != 0)) {
        curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->body ? x->body : "");
        curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE,
                         (curl_off_t)(x->body ? strlen(x->body) : 0));
    }
    return 0;
}

/* Move due transfers from the queue into the multi handle; returns ms until the next one. */
static long admit(struct httpc *h)
{
    struct xfer *due = NULL, **pp;
    int64_t now = clock_now_ms();
    long wait = 1000;

    pthread_mutex_lock(&h->mu);
    pp = &h->queue;
    while (*pp) {
        struct xfer *x = *pp;
        if (x->start_at_ms <= now) {
            *pp = x->next;
            x->next = due;
            due = x;
        } else {
            if (x->start_at_ms - now < wait)
                wait = (long)(x->start_at_ms - now);
            pp = &x->next;
        }
    }
    pthread_mutex_unlock(&h->mu);
    while (due) {
        struct xfer *x = due;
        due = x->next;
        if (setup(x) != 0 || curl_multi_add_handle(h->multi, x->easy) != CURLM_OK) {
            x->on_done(x->ud, ERR_UPSTREAM, 0, "cannot start the transfer");
            xfer_free(x);
            continue;
        }
        x->aprev = NULL;
        x->anext = h->active;
        if (h->active)
            h->active->aprev = x;
        h->active = x;
    }
    return wait;
}

static void why_of(CURL *easy, CURLcode cc, int refused, int allowed, const char *refused_why,
                   long timeout_ms, char *out, size_t n);

static void reap(struct httpc *h)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left))) {
        struct xfer *x = NULL;
        long status = 0;
        int rc;
        if (m->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &status);
        rc = m->data.result == CURLE_OK ? 0 : (x->abort_rc ? x->abort_rc : ERR_UPSTREAM);
        if (rc && x->peers != HTTPC_PEERS_ANY)
            why_of(m->easy_handle, m->data.result, x->refused, x->allowed, x->refused_why,
                   x->timeout_ms, x->why, sizeof(x->why));
        curl_multi_remove_handle(h->multi, m->easy_handle);
        if (x->aprev)
            x->aprev->anext = x->anext;
        else
            h->active = x->anext;
        if (x->anext)
            x->anext->aprev = x->aprev;
        x->on_done(x->ud, rc, status,
                   !rc                           ? ""
                   : x->peers != HTTPC_PEERS_ANY ? x->why
                   : x->errbuf[0]                ? x->errbuf
                                                 : curl_easy_strerror(m->data.result));
        xfer_free(x);
    }
}

static void *loop(void *arg)
{
    struct httpc *h = arg;
    while (!atomic_load(&h->stop)) {
        int running = 0;
        long wait = admit(h);
        curl_multi_perform(h->multi, &running);
        reap(h);
        curl_multi_poll(h->multi, NULL, 0, (int)(wait < 1 ? 1 : wait), NULL);
    }
    return NULL;
}

/* Start the client thread; '*out' is owned by the caller (httpc_free()). */
int httpc_new(struct httpc **out)
{
    struct httpc *h = xcalloc(1, sizeof(*h));
    pthread_once(&global_once, global_init);
    h->multi = curl_multi_init();
    pthread_mutex_init(&h->mu, NULL);
    if (!h->multi || pthread_create(&h->thread, NULL, loop, h) != 0) {
        if (h->multi)
            curl_multi_cleanup(h->multi);
        pthread_mutex_destroy(&h->mu);
        free(h);
        *out = NULL;
        return ERR_INTERNAL;
    }
    *out = h;
    return 0;
}

/* Stop the thread and end every transfer (ERR_UPSTREAM); NULL is a no-op. */
void httpc_shutdown(struct httpc *h)
{
    struct xfer *q;
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    if (h->closed) {
        pthread_mutex_unlock(&h->mu);
        return;
    }
    h->closed = true;
    pthread_mutex_unlock(&h->mu);
    atomic_store(&h->stop, true);
    curl_multi_wakeup(h->multi);
    pthread_join(h->thread, NULL);
    while (h->active) {
        struct xfer *x = h->active;
        h->active = x->anext;
        curl_multi_remove_handle(h->multi, x->easy);
        x->on_done(x->ud, ERR_UPSTREAM, 0, "the client is stopping");
        xfer_free(x);
    }
    pthread_mutex_lock(&h->mu);
    q = h->queue;
    h->queue = NULL;
    pthread_mutex_unlock(&h->mu);
    while (q) {
        struct xfer *x = q;
        q = x->next;
        x->on_done(x->ud, ERR_UPSTREAM, 0, "the client is stopping");
        xfer_free(x);
    }
}

void httpc_free(struct httpc *h)
{
    if (!h)
        return;
    httpc_shutdown(h);
    curl_multi_cleanup(h->multi);
    pthread_mutex_destroy(&h->mu);
    free(h);
}

/*
 * Queue a transfer. Everything in 'req' is copied. 'on_data' and 'on_done' run on the client
 * thread; 'on_done' runs exactly once, also when this returns an error (it does not: errors
 * are reported through on_done).
 */
int httpc_start(struct httpc *h, const struct httpc_request *req, httpc_data_fn on_data,
                httpc_done_fn on_done, void *ud)
{
    struct xfer *x = xcalloc(1, sizeof(*x));
    x->url = xstrdup(req->url);
    x->method = xstrdup(req->method ? req->method : "GET");
    x->body = req->body ? xstrndup(req->body, req->body_len) : NULL;
    for (size_t i = 0; i < req->nheaders; i++)
        x->headers = curl_slist_append(x->headers, req->headers[i]);
    x->connect_timeout_ms = req->connect_timeout_ms > 0 ? req->connect_timeout_ms : 10000;
    x->timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : 120000;
    x->start_at_ms = req->start_at_ms;
    x->on_data = on_data;
    x->on_done = on_done;
    x->on_header = req->on_header;
    x->peers = req->peers;
    x->ud = ud;
    pthread_mutex_lock(&h->mu);
    if (h->closed) {
        pthread_mutex_unlock(&h->mu);
        on_done(ud, ERR_UPSTREAM, 0, "the client is stopping");
        xfer_free(x);
        return 0;
    }
    x->next = h->queue;
    h->queue = x;
    pthread_mutex_unlock(&h->mu);
    curl_multi_wakeup(h->multi);
    return 0;
}

/* The Authorization line of an API key. */
char *httpc_bearer(const char *key)
{
    static const char bearer[] = "Authorization: Bearer ";
    size_t kl;
    char *line;
    if (!key || !*key)
        return NULL;
    kl = strlen(key);
    line = xmalloc(sizeof(bearer) + kl);
    memcpy(line, bearer, sizeof(bearer) - 1);
    memcpy(line + sizeof(bearer) - 1, key, kl + 1);
    return line;
}

/* POST a JSON body, as one attempt of a provider call (see httpc.h). */
int httpc_post_json(struct httpc *h, const struct httpc_post *p, httpc_data_fn on_data,
                    httpc_done_fn on_done, void *ud)
{
    char accept[128];
    const char *headers[3];
    struct httpc_request req;
    size_t nh = 0;

    snprintf(accept, sizeof(accept), "Accept: %s", p->accept);
    headers[nh++] = "Content-Type: application/json";
    headers[nh++] = accept;
    if (p->auth)
        headers[nh++] = p->auth;
    memset(&req, 0, sizeof(req));
    req.method = "POST";
    req.url = p->url;
    req.headers = headers;
    req.nheaders = nh;
    req.body = p->body;
    req.body_len = strlen(p->body);
    req.connect_timeout_ms = p->connect_timeout_ms;
    req.timeout_ms = p->timeout_ms;
    req.start_at_ms = p->attempt > 0 ? clock_now_ms() + 250 * ((int64_t)1 << p->attempt) : 0;
    return httpc_start(h, &req, on_data, on_done, ud);
}

/* ---- Webhook delivery ----
 *
 * DESIGN: httpc_hook_post() is one blocking POST on an easy handle made for the call and freed
 * after it. Nothing is shared between calls (no share handle, no connection or DNS cache), so
 * calls from several worker threads need no lock, and every delivery resolves the host anew:
 * what an endpoint's name points to now is what is judged now. A connection per delivery costs
 * a TCP (and TLS) handshake; at webhook rates that is cheap next to a reused connection whose
 * peer nobody checks again.
 *
 * The address policy runs in CURLOPT_OPENSOCKETFUNCTION, which libcurl calls with each address
 * it is about to connect to, after its own resolution, before any packet is sent. So the
 * address judged is the address used, whatever DNS answered to an earlier check (rebinding),
 * and every address of a multi-address answer is judged on its own. Nothing else may pick the
 * peer: proxies are off whatever the environment says, only http and https are spoken,
 * redirects are not followed (a 3xx is an answer like any other), and no Alt-Svc, HSTS or
 * CONNECT_TO is set up.
 */

#define HOOK_READ_MAX (64 * 1024) /* answer bytes read before the rest is left unread */

struct hook_call {
    struct httpc_hook_res *out;
    bool allow_private;
    int allowed, refused;  /* addresses the policy let through / refused */
    char refused_why[128]; /* the first refusal: "127.0.0.1 is a loopback address" */
    size_t seen;           /* answer bytes read */
};

/* libcurl's socket(): refuses an address the policy refuses (CURL_SOCKET_BAD, which libcurl
 * takes as a failed connection to that address). */
static curl_socket_t hook_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    struct hook_call *c = ud;
    const struct sockaddr *sa = &a->addr;
    enum httpc_addr_class k = httpc_addr_classify(sa, a->addrlen);

    if (purpose != CURLSOCKTYPE_IPCXN || (!c->allow_private && k != HTTPC_ADDR_PUBLIC)) {
        if (c->refused++ == 0) {
            char ip[64];
            httpc_addr_format(sa, a->addrlen, ip, sizeof(ip));
            snprintf(c->refused_why, sizeof(c->refused_why), "%s is %s", ip,
                     httpc_addr_class_desc(k));
        }
        return CURL_SOCKET_BAD;
    }
    c->allowed++;
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* Keep the first HTTPC_HOOK_BODY_KEEP bytes of the answer; stop reading after HOOK_READ_MAX. */
static size_t hook_on_write(char *p, size_t size, size_t nmemb, void *ud)
{
    struct hook_call *c = ud;
    struct httpc_hook_res *out = c->out;
    size_t n = size * nmemb, room = HTTPC_HOOK_BODY_KEEP - out->body_len;
    size_t take = n < room ? n : room;

    memcpy(out->body + out->body_len, p, take);
    out->body_len += take;
    out->body[out->body_len] = '\0';
    if (take < n)
        out->body_cut = true;
    c->seen += n;
    if (c->seen > HOOK_READ_MAX)
        return 0; /* enough: curl ends with CURLE_WRITE_ERROR, the status is already known */
    return n;
}

/* Client-safe reasons for the curl results a delivery meets most; others use curl's own. */
static const struct {
    CURLcode cc;
    const char *why;
} hook_errors[] = {
    {CURLE_COULDNT_RESOLVE_HOST, "could not resolve host"},
    {CURLE_SSL_CONNECT_ERROR, "TLS handshake failed"},
    {CURLE_PEER_FAILED_VERIFICATION, "TLS certificate not valid for the host"},
    {CURLE_GOT_NOTHING, "connection closed without an answer"},
    {CURLE_SEND_ERROR, "connection lost while sending"},
    {CURLE_RECV_ERROR, "connection lost while receiving"},
    {CURLE_WEIRD_SERVER_REPLY, "the answer is not HTTP"},
    {CURLE_HTTP2, "HTTP/2 error"},
    {CURLE_HTTP2_STREAM, "HTTP/2 stream error"},
};

/* Why a connection failed, from the socket error. */
static const char *connect_why(long os_errno)
{
    switch (os_errno) {
    case ECONNREFUSED:
        return "connection refused";
    case ENETUNREACH:
        return "network unreachable";
    case EHOSTUNREACH:
        return "host unreachable";
    default:
        return "could not connect";
    }
}

/* Into 'out' ('n' bytes): why a transfer that ended with 'cc' got no (whole) answer, in
 * client-safe words; 'refused' and 'allowed' count the addresses the policy judged. */
static void why_of(CURL *easy, CURLcode cc, int refused, int allowed, const char *refused_why,
                   long timeout_ms, char *out, size_t n)
{
    long os_errno = 0;
    const char *why = curl_easy_strerror(cc);

    if (cc == CURLE_OPERATION_TIMEDOUT) {
        if (timeout_ms % 1000 == 0)
            snprintf(out, n, "timed out after %ld s", timeout_ms / 1000);
        else
            snprintf(out, n, "timed out after %ld ms", timeout_ms);
        return;
    }
    if (cc == CURLE_COULDNT_CONNECT && refused > 0 && allowed == 0) {
        snprintf(out, n, "address refused: %s", refused_why);
        return;
    }
    if (cc == CURLE_COULDNT_CONNECT) {
        curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, &os_errno);
        why = connect_why(os_errno);
    }
    for (size_t i = 0; i < sizeof(hook_errors) / sizeof(hook_errors[0]); i++) {
        if (hook_errors[i].cc == cc)
            why = hook_errors[i].why;
    }
    snprintf(out, n, "%s", why);
}

/* Fill 'out->error' for a delivery that ended with 'cc' and no HTTP answer. */
static void hook_why(CURL *easy, CURLcode cc, const struct hook_call *c, long timeout_ms,
                     struct httpc_hook_res *out)
{
    why_of(easy, cc, c->refused, c->allowed, c->refused_why, timeout_ms, out->error,
           sizeof(out->error));
}

/* Whether policy 'peers' lets a transfer connect to 'sa'; its class into '*cls'. */
static bool addr_allowed(enum httpc_peers peers, const struct sockaddr *sa, size_t len,
                         enum httpc_addr_class *cls)
{
    *cls = httpc_addr_classify(sa, len);
    switch (peers) {
    case HTTPC_PEERS_ANY:
        return true;
    case HTTPC_PEERS_PUBLIC:
        return *cls == HTTPC_ADDR_PUBLIC;
    case HTTPC_PEERS_NO_METADATA:
        return *cls != HTTPC_ADDR_UNKNOWN && !httpc_addr_metadata(sa, len);
    }
    return false;
}

/* True when 's' can be a header value: no CR, LF or other control byte. */
static bool header_value_ok(const char *s)
{
    for (; *s; s++) {
        if ((unsigned char)*s < ' ' && *s != '\t')
            return false;
    }
    return true;
}

/* Append "'name': 'value'" (or the line 'name' when 'value' is NULL) to '*list'. */
static int hook_header(struct curl_slist **list, const char *name, const char *value)
{
    char line[1024];
    struct curl_slist *l;
    int n;
    if (!header_value_ok(name) || (value && !header_value_ok(value)))
        return ERR_INVALID;
    n = value ? snprintf(line, sizeof(line), "%s: %s", name, value)
              : snprintf(line, sizeof(line), "%s", name);
    if (n < 0 || (size_t)n >= sizeof(line))
        return ERR_INVALID;
    l = curl_slist_append(*list, line);
    if (!l)
        return ERR_NOMEM;
    *list = l;
    return 0;
}

/* The request headers of 'req' into '*list' (the caller frees it with curl_slist_free_all()). */
static int hook_headers(const struct httpc_hook_req *req, struct curl_slist **list)
{
    char ts[24];
    int rc;

    if (!req->id || !*req->id || !req->signature || !*req->signature)
        return ERR_INVALID;
    snprintf(ts, sizeof(ts), "%" PRId64, req->timestamp);
    rc = hook_header(list, "Content-Type", "application/json");
    if (!rc)
        rc = hook_header(list, "webhook-id", req->id);
    if (!rc)
        rc = hook_header(list, "webhook-timestamp", ts);
    if (!rc)
        rc = hook_header(list, "webhook-signature", req->signature);
    if (!rc)
        rc = hook_header(list, "Expect:", NULL); /* no 100-continue round trip */
    for (size_t i = 0; !rc && i < req->nheaders; i++)
        rc = strchr(req->headers[i], ':') ? hook_header(list, req->headers[i], NULL) : ERR_INVALID;
    return rc;
}

/* Set up 'easy' for the delivery 'req' (see the DESIGN note). */
static void hook_setup(CURL *easy, const struct httpc_hook_req *req, struct curl_slist *headers,
                       struct hook_call *c)
{
    long timeout = req->timeout_ms > 0 ? req->timeout_ms : 10000;
    curl_easy_setopt(easy, CURLOPT_URL, req->url);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(easy, CURLOPT_PROXY, "");    /* not http_proxy and friends either */
    curl_easy_setopt(easy, CURLOPT_NOPROXY, "*"); /* and no proxy for any host */
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETFUNCTION, hook_open_socket);
    curl_easy_setopt(easy, CURLOPT_OPENSOCKETDATA, c);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, timeout);
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req->body ? req->body : "");
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)(req->body ? req->body_len : 0));
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_USERAGENT, HTTPC_HOOK_USER_AGENT);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, hook_on_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, c);
}

/*
 * Deliver 'req' once (see hook.h): resolve, connect to an address the policy allows, POST,
 * read the answer. Returns 0 when an HTTP status came back ('out->status' > 0, even when the
 * answer's body was then cut short), ERR_UPSTREAM when none did ('out->error' says why),
 * ERR_INVALID when the URL or a header is malformed, ERR_NOMEM. 'out' is always filled; it
 * owns nothing. Thread-safe.
 */
int httpc_hook_post(const struct httpc_hook_req *req, struct httpc_hook_res *out)
{
    struct hook_call c;
    struct curl_slist *headers = NULL;
    struct err e;
    CURL *easy = NULL;
    CURLcode cc;
    long status = 0, timeout = req->timeout_ms > 0 ? req->timeout_ms : 10000;
    int64_t t0 = clock_mono_us();
    int rc;

    memset(out, 0, sizeof(*out));
    memset(&c, 0, sizeof(c));
    c.out = out;
    c.allow_private = req->allow_private;
    pthread_once(&global_once, global_init);
    rc = httpc_hook_url_parse(req->url, req->url ? strlen(req->url) : 0, NULL, "url", &e);
    if (rc) {
        snprintf(out->error, sizeof(out->error), "%s", e.msg);
        goto out;
    }
    rc = hook_headers(req, &headers);
    if (rc) {
        snprintf(out->error, sizeof(out->error), "%s",
                 rc == ERR_INVALID ? "invalid header" : "out of memory");
        goto out;
    }
    rc = ERR_NOMEM;
    easy = curl_easy_init();
    if (!easy)
        goto out;
    hook_setup(easy, req, headers, &c);
    cc = curl_easy_perform(easy);
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    if (status > 0) {
        out->status = (int)status;
        rc = 0;
    } else {
        hook_why(easy, cc, &c, timeout, out);
        rc = ERR_UPSTREAM;
    }
out:
    curl_easy_cleanup(easy);
    curl_slist_free_all(headers);
    out->elapsed_ms = (clock_mono_us() - t0) / 1000;
    return rc;
}
