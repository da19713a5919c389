/* SPDX-License-Identifier: MIT */
/*
 * openai.c: the `/embeddings` provider. One POST {base}/embeddings {"model", "input": [...],
 * "encoding_format": "float"} per batch through httpc (so no thread waits on the network);
 * a failed attempt (network, timeout, HTTP 429 or 5xx, an unreadable answer) is tried again
 * up to 'retries' times with a growing pause, other HTTP errors are final. The answer is
 * checked strictly (embed_openai_parse) and every vector is L2-normalised, because search
 * takes cosine as a dot product and not every compatible server normalises.
 */
#include "embed_int.h"
#include "pool.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../httpc/httpc.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BODY (64u << 20)

struct embed_openai {
    struct httpc *h;
    char *url;
    char *auth; /* "Authorization: Bearer ..." or NULL */
    char *model;
    long timeout_ms, connect_timeout_ms;
    int retries;
};

struct ecall {
    struct embed_openai *o;
    char *body;
    size_t n;
    int attempt;
    struct buf resp;
    embed_done_fn done;
    void *ud;
};

/* Parse an /embeddings answer (see embed_int.h). */
int embed_openai_parse(const char *body, size_t len, size_t n, size_t max_dim, float **vecs,
                       size_t *dim, struct err *e)
{
    json_t *root = json_loadb(body, len, 0, NULL), *data, *item;
    float *out = NULL;
    unsigned char *seen = NULL;
    size_t d = 0, i;
    int rc = 0;

    *vecs = NULL;
    *dim = 0;
    if (!root || !json_is_object(root))
        rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL, "the answer is not a JSON object");
    data = json_object_get(root, "data");
    if (!rc && (!json_is_array(data) || json_array_size(data) != n))
        rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL,
                     "the answer's data does not hold %zu embeddings", n);
    if (!rc)
        seen = xcalloc(n ? n : 1, 1);
    json_array_foreach(data, i, item)
    {
        json_t *idx = json_object_get(item, "index"), *emb = json_object_get(item, "embedding");
        json_int_t k = json_is_integer(idx) ? json_integer_value(idx) : -1;
        size_t w = json_array_size(emb), c;
        double ss = 0, top = 0;
        float *v;
        json_t *x;

        if (rc)
            break;
        if (k < 0 || (size_t)k >= n || seen[k]) {
            rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL,
                         "embedding %zu has a missing, repeated or out-of-range index", i);
            break;
        }
        if (!json_is_array(emb) || w == 0 || w > max_dim || (d && w != d)) {
            rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL,
                         "embedding %zu is not an array of 1 to %zu numbers of one width", i,
                         max_dim);
            break;
        }
        if (!out) {
            d = w;
            out = xmalloc(n * d * sizeof(float));
        }
        seen[k] = 1;
        v = out + (size_t)k * d;
        json_array_foreach(emb, c, x)
        {
            double f = json_is_number(x) ? json_number_value(x) : NAN;
            if (!isfinite(f) || fabs(f) > 1e30) {
                rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL,
                             "embedding %zu holds something other than a finite number", i);
                break;
            }
            top = fmax(top, fabs(f));
        }
        if (rc)
            break;
        if (!(top > 0)) {
            rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL, "embedding %zu is all zeros", i);
            break;
        }
        /* Normalised in double from the numbers sent, scaled by the largest first: a number
         * below float's range (1e-80) or a square below double's is still a direction. */
        json_array_foreach(emb, c, x)
        {
            double f = json_number_value(x) / top;
            ss += f * f;
        }
        json_array_foreach(emb, c, x)
        {
            v[c] = (float)(json_number_value(x) / top / sqrt(ss));
        }
    }
    json_decref(root);
    free(seen);
    if (!rc && n > 0 && !out)
        rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL, "the answer holds no embeddings");
    if (rc) {
        free(out);
        return rc;
    }
    *vecs = out;
    *dim = d;
    return 0;
}

static void attempt(struct ecall *c);

static int on_data(void *ud, long status, const char *p, size_t n)
{
    struct ecall *c = ud;
    (void)status;
    return buf_append(&c->resp, p, n) ? ERR_LIMIT : 0;
}

static void finish(struct ecall *c, int rc, const float *vecs, size_t dim, const struct err *e)
{
    c->done(c->ud, rc, vecs, c->n, dim, e);
    buf_cleanup(&c->resp);
    free(c->body);
    free(c);
}

static void on_done(void *ud, int rc, long status, const char *why)
{
    struct ecall *c = ud;
    struct err e;
    bool again = true;
    float *vecs = NULL;
    size_t dim = 0;

    err_clear(&e);
    if (!rc && status >= 200 && status < 300) {
        rc = embed_openai_parse(buf_ptr(&c->resp), buf_len(&c->resp), c->n, EMBED_POOL_MAX_DIM,
                                &vecs, &dim, &e);
        if (!rc) {
            finish(c, 0, vecs, dim, NULL);
            free(vecs);
            return;
        }
    } else if (rc == ERR_LIMIT) {
        err_set(&e, ERR_UPSTREAM, "upstream_error", NULL, "the answer is over %u bytes", MAX_BODY);
        again = false;
    } else if (rc) {
        err_set(&e, ERR_UPSTREAM, "upstream_error", NULL, "%s",
                why && *why ? why : "transfer failed");
    } else {
        err_set(&e, ERR_UPSTREAM, "upstream_error", NULL, "HTTP %ld: %.200s", status,
                buf_ptr(&c->resp));
        again = status == 408 || status == 429 || status >= 500;
    }
    log_warn("embed: openai attempt %d failed: %s", c->attempt + 1, e.msg);
    if (again && c->attempt < c->o->retries) {
        c->attempt++;
        attempt(c);
        return;
    }
    finish(c, ERR_UPSTREAM, NULL, 0, &e);
}

static void attempt(struct ecall *c)
{
    struct httpc_post p = {c->o->url, "application/json",       c->o->auth,
                           c->body,   c->o->connect_timeout_ms, c->o->timeout_ms,
                           c->attempt};
    buf_cleanup(&c->resp);
    buf_init(&c->resp, MAX_BODY);
    httpc_post_json(c->o->h, &p, on_data, on_done, c);
}

/* POST the 'n' texts to the provider; 'done' is called exactly once. */
void embed_openai_call(struct embed_openai *o, const char *const *texts, const size_t *lens,
                       size_t n, embed_done_fn done, void *ud)
{
    struct ecall *c = xcalloc(1, sizeof(*c));
    json_t *root = json_object(), *in = json_array();

    for (size_t i = 0; i < n; i++)
        json_array_append_new(in, json_stringn_nocheck(texts[i], lens[i]));
    json_object_set_new(root, "model", json_string(o->model));
    json_object_set_new(root, "input", in);
    json_object_set_new(root, "encoding_format", json_string("float"));
    c->body = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    c->o = o;
    c->n = n;
    c->done = done;
    c->ud = ud;
    buf_init(&c->resp, MAX_BODY);
    attempt(c);
}

/* The provider of 'o' (base_url, api_key, model_name, timeouts, retries, httpc). */
int embed_openai_new(const struct embed_pool_options *o, struct embed_openai **out, struct err *e)
{
    static const char path[] = "/embeddings";
    struct embed_openai *p;
    const char *model = o->model_name && *o->model_name ? o->model_name : "text-embedding-3-small";
    size_t n;

    *out = NULL;
    if (!o->base_url || !*o->base_url)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_EMBEDDINGS_BASE_URL",
                       "is required with WORKFORCE_EMBEDDINGS=openai (or WORKFORCE_LLM_BASE_URL)");
    if (strncmp(o->base_url, "http://", 7) != 0 && strncmp(o->base_url, "https://", 8) != 0)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_EMBEDDINGS_BASE_URL",
                       "must start with http:// or https://");
    if (!o->httpc)
        return err_set(e, ERR_INTERNAL, "internal_error", NULL, "no HTTP client");
    p = xcalloc(1, sizeof(*p));
    p->h = o->httpc;
    n = strlen(o->base_url);
    while (n > 0 && o->base_url[n - 1] == '/')
        n--;
    p->url = xmalloc(n + sizeof(path));
    memcpy(p->url, o->base_url, n);
    memcpy(p->url + n, path, sizeof(path));
    p->model = xstrdup(model);
    p->auth = httpc_bearer(o->api_key);
    p->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 60000;
    p->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
    p->retries = o->retries;
    *out = p;
    return 0;
}

void embed_openai_free(struct embed_openai *o)
{
    if (!o)
        return;
    free(o->url);
    free(o->auth);
    free(o->model);
    free(o);
}
