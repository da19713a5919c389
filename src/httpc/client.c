/* SPDX-License-Identifier: MIT */
/*
 * client.c: the only libcurl user. DESIGN: callers queue a transfer under a mutex and wake the
 * loop (curl_multi_wakeup); the loop thread owns the multi handle and every easy handle, adds
 * queued transfers whose start time has come, runs curl_multi_poll, and reports completions.
 * Nothing else touches curl objects, so no curl call needs a lock.
 */
#include "httpc.h"

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    void *ud;
    int abort_rc;
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
        curl_multi_remove_handle(h->multi, m->easy_handle);
        if (x->aprev)
            x->aprev->anext = x->anext;
        else
            h->active = x->anext;
        if (x->anext)
            x->anext->aprev = x->aprev;
        x->on_done(x->ud, rc, status,
                   rc ? (x->errbuf[0] ? x->errbuf : curl_easy_strerror(m->data.result)) : "");
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
