/* SPDX-License-Identifier: MIT */
/*
 * pool.c: the job queue in front of the embedding providers (pool.h). 'threads' threads take
 * jobs from two FIFO lanes: interactive first, then document batches, which may occupy at most
 * threads - 1 of them (all, with one thread). For the built-in model a job is computed on the
 * thread. For openai a job is one HTTP call started at once (httpc runs every transfer without
 * a thread each); its answer comes back as a job too, so that the caller's callback runs on a
 * pool thread, never on the HTTP client's.
 */
#include "pool.h"

#include "embed.h"
#include "embed_int.h"

#include "../core/log.h"
#include "../core/mem.h"

#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct job {
    struct job *next;
    bool interactive;
    size_t n;
    char **texts;
    size_t *lens;
    embed_done_fn done;
    void *ud;
    /* openai: the provider's answer, handed to a pool thread to deliver */
    struct embed_pool *pool;
    bool answered;
    int rc;
    float *vecs;
    size_t nvecs, dim;
    struct err err;
};

struct lane {
    struct job *head, *tail;
};

struct embed_pool {
    const struct embed_model *model; /* builtin; NULL for openai, or until loaded */
    /* Loaded on first use (embed_pool_options.model_dir): idle servers hold no weights. */
    struct embed_model *own;
    char *model_dir, *model_cache;
    pthread_mutex_t load_mu;
    bool load_failed;
    struct embed_openai *openai;
    char name[256];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct lane lanes[2]; /* 0: interactive, 1: documents */
    unsigned nthreads, busy_docs;
    bool stop;
    pthread_t *threads;
};

static void job_free(struct job *j)
{
    for (size_t i = 0; i < j->n; i++)
        free(j->texts[i]);
    free(j->texts);
    free(j->lens);
    free(j->vecs);
    free(j);
}

/* An openai job's answer, on a pool thread. */
static void deliver(struct job *j)
{
    j->done(j->ud, j->rc, j->rc ? NULL : j->vecs, j->rc ? 0 : j->nvecs, j->dim,
            j->rc ? &j->err : NULL);
    job_free(j);
}

static void fail_job(struct job *j, const char *why)
{
    struct err e;
    err_set(&e, ERR_INTERNAL, "internal_error", NULL, "%s", why);
    j->done(j->ud, ERR_INTERNAL, NULL, 0, 0, &e);
    job_free(j);
}

/* The built-in model, loaded by the first job that needs it; NULL when it cannot be. */
static const struct embed_model *model_of(struct embed_pool *p)
{
    const struct embed_model *m;
    pthread_mutex_lock(&p->load_mu);
    if (!p->model && !p->load_failed && p->model_dir) {
        struct err e;
        err_clear(&e);
        if (embed_model_load_cached(p->model_dir, p->model_cache, &p->own, &e) == 0) {
            p->model = p->own;
            malloc_trim(0); /* the shards and JSON read to load it: give the pages back */
            log_info("knowledge: embedding model loaded on first use");
        } else {
            p->load_failed = true;
            log_error("knowledge: the embedding model cannot be loaded: %s", e.msg);
        }
    }
    m = p->model;
    pthread_mutex_unlock(&p->load_mu);
    return m;
}

/* The built-in model over one job, on a pool thread. */
static void run_builtin(const struct embed_model *m, struct job *j)
{
    float *vecs = xmalloc((j->n ? j->n : 1) * EMBED_DIM * sizeof(float));
    struct err e;
    int rc = 0;

    err_clear(&e);
    for (size_t i = 0; !rc && i < j->n; i++)
        rc = embed_text(m, j->texts[i], j->lens[i], vecs + i * EMBED_DIM);
    if (rc)
        err_set(&e, (enum err_code)rc, "internal_error", NULL, "the embedding failed (%s)",
                err_name((enum err_code)rc));
    j->done(j->ud, rc, rc ? NULL : vecs, rc ? 0 : j->n, EMBED_DIM, rc ? &e : NULL);
    free(vecs);
    job_free(j);
}

/* The next job this thread may run, or NULL when stopping. Called with 'mu' held. */
static struct job *take(struct embed_pool *p)
{
    for (;;) {
        struct lane *l = NULL;
        struct job *j;
        if (p->stop)
            return NULL;
        if (p->lanes[0].head)
            l = &p->lanes[0];
        else if (p->lanes[1].head && (p->nthreads == 1 || p->busy_docs + 1 < p->nthreads))
            l = &p->lanes[1];
        if (!l) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        j = l->head;
        l->head = j->next;
        if (!l->head)
            l->tail = NULL;
        if (!j->interactive)
            p->busy_docs++;
        return j;
    }
}

static void *thread_main(void *arg)
{
    struct embed_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        struct job *j = take(p);
        bool docs;
        if (!j)
            break;
        docs = !j->interactive;
        pthread_mutex_unlock(&p->mu);
        if (j->answered) {
            deliver(j);
        } else {
            const struct embed_model *m = model_of(p);
            if (m)
                run_builtin(m, j);
            else
                fail_job(j, "the embedding model cannot be loaded");
        }
        pthread_mutex_lock(&p->mu);
        if (docs) {
            p->busy_docs--;
            pthread_cond_broadcast(&p->cv); /* a document batch may run again */
        }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* A pool over the provider of 'o'; see pool.h. */
int embed_pool_new(const struct embed_pool_options *o, struct embed_pool **out, struct err *e)
{
    struct embed_pool *p;
    bool openai = o->provider && strcmp(o->provider, "openai") == 0;

    *out = NULL;
    if (!openai && !o->model && !o->model_dir)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_EMBEDDINGS",
                       "the built-in embedding model is not loaded");
    p = xcalloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->load_mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (openai) {
        int rc = embed_openai_new(o, &p->openai, e);
        if (rc) {
            embed_pool_free(p);
            return rc;
        }
        snprintf(p->name, sizeof(p->name), "openai:%.200s",
                 o->model_name && *o->model_name ? o->model_name : "text-embedding-3-small");
    } else {
        p->model = o->model;
        if (!o->model) {
            p->model_dir = xstrdup(o->model_dir);
            p->model_cache = o->model_cache ? xstrdup(o->model_cache) : NULL;
        }
        snprintf(p->name, sizeof(p->name), "use-lite-512");
    }
    p->threads = xcalloc(o->threads ? o->threads : 1, sizeof(*p->threads));
    for (unsigned i = 0; i < (o->threads ? o->threads : 1); i++) {
        if (pthread_create(&p->threads[i], NULL, thread_main, p) != 0) {
            embed_pool_free(p);
            return err_set(e, ERR_INTERNAL, "internal_error", NULL,
                           "cannot start an embedding thread");
        }
        p->nthreads++;
    }
    *out = p;
    return 0;
}

void embed_pool_free(struct embed_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    for (int l = 0; l < 2; l++) {
        while (p->lanes[l].head) {
            struct job *j = p->lanes[l].head;
            p->lanes[l].head = j->next;
            fail_job(j, "the server is stopping");
        }
    }
    embed_openai_free(p->openai);
    embed_model_free(p->own);
    free(p->model_dir);
    free(p->model_cache);
    free(p->threads);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->load_mu);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

const char *embed_pool_model(const struct embed_pool *p)
{
    return p->name;
}

/* Put 'j' in its lane for the threads (or fail it when the pool is stopping). */
static void enqueue(struct embed_pool *p, struct job *j)
{
    struct lane *l;
    pthread_mutex_lock(&p->mu);
    if (p->stop) {
        pthread_mutex_unlock(&p->mu);
        fail_job(j, "the server is stopping");
        return;
    }
    l = &p->lanes[j->interactive ? 0 : 1];
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* The provider answered, on the HTTP client's thread, which must not block: the caller's
 * callback (a search, an engine call) runs on a pool thread instead. */
static void arrived(void *ud, int rc, const float *vecs, size_t n, size_t dim, const struct err *e)
{
    struct job *j = ud;
    j->answered = true;
    j->rc = rc;
    if (!rc && n > 0) {
        j->vecs = xmalloc(n * dim * sizeof(float));
        memcpy(j->vecs, vecs, n * dim * sizeof(float));
    }
    j->nvecs = n;
    j->dim = dim;
    if (rc && e)
        j->err = *e;
    enqueue(j->pool, j);
}

/* Queue 'n' texts; see pool.h. */
int embed_pool_submit(struct embed_pool *p, bool interactive, const char *const *texts,
                      const size_t *lens, size_t n, embed_done_fn done, void *ud)
{
    struct job *j = xcalloc(1, sizeof(*j));

    j->interactive = interactive;
    j->done = done;
    j->ud = ud;
    j->pool = p;
    if (p->openai) {
        embed_openai_call(p->openai, texts, lens, n, arrived, j);
        return 0;
    }
    j->n = n;
    j->texts = xcalloc(n ? n : 1, sizeof(*j->texts));
    j->lens = xcalloc(n ? n : 1, sizeof(*j->lens));
    for (size_t i = 0; i < n; i++) {
        j->texts[i] = xstrndup(texts[i], lens[i]);
        j->lens[i] = lens[i];
    }
    enqueue(p, j);
    return 0;
}

/* ---- The blocking form, for background threads ---- */

struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t pending, n;
    float *vecs; /* n x dim, allocated by the first answer */
    size_t dim;
    int rc;
    struct err e;
};

struct part {
    struct waiter *w;
    size_t first; /* index of the batch's first text */
};

static void part_done(void *ud, int rc, const float *vecs, size_t n, size_t dim,
                      const struct err *e)
{
    struct part *pt = ud;
    struct waiter *w = pt->w;
    pthread_mutex_lock(&w->mu);
    if (!rc && !w->rc) {
        if (!w->vecs) {
            w->dim = dim;
            w->vecs = xmalloc(w->n * dim * sizeof(float));
        }
        if (dim != w->dim)
            rc = err_set(&w->e, ERR_UPSTREAM, "upstream_error", NULL,
                         "the provider changed the vector width from %zu to %zu", w->dim, dim);
        else
            memcpy(w->vecs + pt->first * dim, vecs, n * dim * sizeof(float));
    }
    if (rc && !w->rc) {
        w->rc = rc;
        if (e)
            w->e = *e;
    }
    w->pending--;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Embed 'n' texts in batches queued at once and wait; see pool.h. */
int embed_pool_embed_all(struct embed_pool *p, const char *const *texts, const size_t *lens,
                         size_t n, float **vecs, size_t *dim, struct err *e)
{
    struct waiter w;
    size_t nparts = (n + EMBED_POOL_BATCH - 1) / EMBED_POOL_BATCH;
    struct part *parts = xcalloc(nparts ? nparts : 1, sizeof(*parts));

    memset(&w, 0, sizeof(w));
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    w.n = n;
    w.pending = nparts;
    for (size_t i = 0; i < nparts; i++) {
        size_t first = i * EMBED_POOL_BATCH;
        size_t cnt = n - first < EMBED_POOL_BATCH ? n - first : EMBED_POOL_BATCH;
        parts[i].w = &w;
        parts[i].first = first;
        embed_pool_submit(p, false, texts + first, lens + first, cnt, part_done, &parts[i]);
    }
    pthread_mutex_lock(&w.mu);
    while (w.pending > 0)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    free(parts);
    if (w.rc) {
        free(w.vecs);
        if (e)
            *e = w.e;
        *vecs = NULL;
        *dim = 0;
        return w.rc;
    }
    *vecs = w.vecs;
    *dim = w.dim;
    return 0;
}

/* ---- Vectors ---- */

/* See pool.h. */
void embed_vec_normalise(float *v, size_t dim)
{
    double n = 0;
    for (size_t i = 0; i < dim; i++)
        n += (double)v[i] * v[i];
    n = sqrt(n);
    if (n > 0) {
        for (size_t i = 0; i < dim; i++)
            v[i] = (float)(v[i] / n);
    }
}

/* See pool.h. */
double embed_vec_dot(const float *a, const float *b, size_t dim)
{
    double d = 0;
    for (size_t i = 0; i < dim; i++)
        d += (double)a[i] * b[i];
    return d;
}
