/* SPDX-License-Identifier: MIT */
/*
 * worker.c: WORKFORCE_KNOWLEDGE_WORKERS threads (default 2), woken by uploads (and every few
 * seconds in case a wake-up was missed), that process the documents in status 'processing'.
 * Extraction runs in a child process with limits, so a malicious file can fail its document,
 * not a thread.
 *
 * DESIGN. Fairness: a thread picks its next document round-robin by tenant (organization and
 * key mode); a tenant that already has a document in work is passed over while another tenant
 * waits, and with several threads one tenant never holds more than all but one of them, so a
 * thread is always there for the others: one organization's large or hanging files cannot
 * hold up another's (with one thread, a long document still delays the next one; see docs). Cancel:
 * a deleted document's job is flagged; its extraction child is killed within 200 ms, its embedding
 * rounds stop, and nothing of it is stored (the store's foreign keys refuse chunks of a document
 * deleted in the last instant).
 */
#include "worker.h"

#include "../core/clock.h"
#include "../core/id.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../embed/pool.h"
#include "../store/store.h"
#include "extract.h"
#include "index.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TARGET_WORDS 100
#define OVERLAP_WORDS 20
#define STALE_BATCH                                                                                \
    32 /* chunks per embedding round: a cancel or stop waits for one round, and                    \
        * another document waits behind two pool jobs of this one at most */
#define STALE_RETRY_MS 60000 /* after a failed embedding */
#define STALE_MAX_MISSES 3   /* failures in a row that mean the provider is down */

#define CANDIDATES 256 /* processing documents looked at per pick */

/* A document in work on one thread. */
struct kjob {
    bool busy;
    char doc_id[ID_MAX];
    struct store_tenant tenant;
    atomic_bool cancel;
};

struct knowledge_worker {
    pthread_t *threads;
    unsigned nthreads;
    pthread_mutex_t mu; /* guards everything below but the jobs' cancel flags' reads */
    pthread_cond_t cv;
    unsigned wakes; /* bumped by each wake: a thread that saw it looks again */
    bool stop;
    struct kjob *jobs;        /* one per thread */
    struct store_tenant last; /* the tenant served last, for the round-robin */
    char *files_dir;
    struct store_pool *pool;
    struct embed_pool *embed; /* NULL: no vectors */
    struct kindex *index;
    _Atomic int64_t stale_after_ms; /* the next stale pass (thread 0), not before */
};

struct kthread {
    struct knowledge_worker *w;
    unsigned index;
};

static enum extract_type type_of(const char *mime)
{
    for (int t = EXTRACT_TXT; t <= EXTRACT_DOCX; t++) {
        if (strcmp(extract_type_mime((enum extract_type)t), mime) == 0)
            return (enum extract_type)t;
    }
    return EXTRACT_UNKNOWN;
}

static bool stopping(struct knowledge_worker *w)
{
    bool stop;
    pthread_mutex_lock(&w->mu);
    stop = w->stop;
    pthread_mutex_unlock(&w->mu);
    return stop;
}

/* A document's chunks were stored without vectors: the stale pass runs within a minute. */
static void retry_stale_later(struct knowledge_worker *w)
{
    int64_t at = clock_now_ms() + STALE_RETRY_MS;
    if (w->stale_after_ms > at)
        w->stale_after_ms = at;
}

/* The vectors of 'n' texts through the pool; false (vectors left out) when it failed. */
static bool embed_texts(struct knowledge_worker *w, const char *const *texts, const size_t *lens,
                        size_t n, float **vecs, size_t *dim)
{
    struct err e;
    err_clear(&e);
    *vecs = NULL;
    *dim = 0;
    if (!w->embed || n == 0)
        return false;
    if (embed_pool_embed_all(w->embed, texts, lens, n, vecs, dim, &e) != 0) {
        log_warn("knowledge: embedding failed (%s); the chunks are searched by words until "
                 "it succeeds",
                 e.msg);
        return false;
    }
    return true;
}

static bool cancelled(const struct kjob *job)
{
    return atomic_load(&job->cancel);
}

static void process(struct knowledge_worker *w, struct store *s, const struct store_document *d,
                    struct kjob *job)
{
    struct extract_limits lim = {60000, 512u << 20, 64u << 20, 256u << 20, &job->cancel, NULL};
    struct extract_result res;
    struct chunk *chunks = NULL;
    struct store_chunk *sc = NULL;
    const char **texts = NULL;
    size_t *lens = NULL;
    float *vecs = NULL;
    size_t n = 0, dim = 0;
    char path[1200];
    struct err e;
    int64_t t0 = clock_mono_us();
    int rc;

    err_clear(&e);
    memset(&res, 0, sizeof(res));
    log_info("knowledge: processing document %s", d->id);
    snprintf(path, sizeof(path), "%s/%s", w->files_dir, d->id);
    rc = extract_file(path, type_of(d->content_type), &lim, &res, &e);
    if (!rc && res.len == 0)
        rc = err_set(&e, ERR_INVALID, "invalid_request", NULL, "the file holds no text");
    if (!rc)
        rc = chunk_text(res.text, res.len, res.pages, res.npages, TARGET_WORDS, OVERLAP_WORDS,
                        &chunks, &n);
    if (!rc && n > 0) {
        sc = xcalloc(n, sizeof(*sc));
        texts = xcalloc(n, sizeof(*texts));
        lens = xcalloc(n, sizeof(*lens));
        for (size_t i = 0; i < n; i++) {
            sc[i].content = xstrndup(res.text + chunks[i].off, chunks[i].len);
            sc[i].page = chunks[i].page;
            texts[i] = sc[i].content;
            lens[i] = chunks[i].len;
        }
        if (store_document_progress(s, d->id, (int64_t)n, 0))
            log_warn("knowledge: cannot note the progress of document %s", d->id);
        /* In rounds, so that a stop does not wait for a whole large document. */
        for (size_t first = 0; w->embed && first < n && !stopping(w) && !cancelled(job);
             first += STALE_BATCH) {
            size_t cnt = n - first < STALE_BATCH ? n - first : STALE_BATCH;
            float *part;
            size_t pdim;
            if (!embed_texts(w, texts + first, lens + first, cnt, &part, &pdim) ||
                (dim && pdim != dim)) {
                free(part);
                retry_stale_later(w); /* the chunks stay searchable by their words */
                break;
            }
            if (!vecs) {
                dim = pdim;
                vecs = xmalloc(n * dim * sizeof(float));
            }
            memcpy(vecs + first * dim, part, cnt * dim * sizeof(float));
            free(part);
            for (size_t i = first; i < first + cnt; i++) {
                sc[i].embedding = vecs + i * dim;
                sc[i].dim = dim;
                sc[i].embed_model = embed_pool_model(w->embed);
            }
            /* Watchers of a large upload see it move (GET .../documents/{id}: progress). */
            if (store_document_progress(s, d->id, (int64_t)n, (int64_t)(first + cnt)))
                log_warn("knowledge: cannot note the progress of document %s", d->id);
        }
    }
    if (cancelled(job)) {
        log_info("knowledge: document %s deleted during processing: stopped", d->id);
    } else if (!rc && stopping(w)) {
        /* Left 'processing': the next start takes the document up again. */
        log_info("knowledge: document %s left for the next start", d->id);
    } else if (rc) {
        log_warn("knowledge: document %s failed: %s", d->id, e.msg);
        rc = store_document_finish(s, d->id, NULL, 0, e.msg[0] ? e.msg : "extraction failed");
        if (rc)
            log_error("knowledge: cannot store the result of document %s", d->id);
    } else {
        rc = store_document_finish(s, d->id, sc, n, NULL);
        log_info("knowledge: document %s ready: %zu chunks, %zu bytes of text, %lld ms", d->id, n,
                 res.len, (long long)((clock_mono_us() - t0) / 1000));
        if (rc)
            log_error("knowledge: cannot store the result of document %s", d->id);
    }
    kindex_invalidate(w->index, &d->tenant);
    for (size_t i = 0; sc && i < n; i++)
        free((char *)(uintptr_t)sc[i].content);
    free(sc);
    free(texts);
    free(lens);
    free(vecs);
    free(chunks);
    extract_result_cleanup(&res);
}

/*
 * Embed and store the 'n' chunks 'c' one at a time (a batch of them failed: one text may be
 * what the provider refuses). Returns how many were stored; after STALE_MAX_MISSES failures
 * in a row the provider is taken to be down and the round ends.
 */
static size_t embed_one_by_one(struct knowledge_worker *w, struct store *s,
                               const struct store_stale_chunk *c, size_t n, size_t *tried)
{
    size_t stored = 0, misses = 0, i;
    for (i = 0; i < n && misses < STALE_MAX_MISSES && !stopping(w); i++) {
        const char *text = c[i].content;
        size_t len = strlen(text), dim = 0;
        float *vec = NULL;
        if (!embed_texts(w, &text, &len, 1, &vec, &dim)) {
            misses++;
            continue;
        }
        misses = 0;
        if (store_chunks_set_vectors(s, &c[i].rowid, 1, vec, dim, embed_pool_model(w->embed)) == 0)
            stored++;
        free(vec);
    }
    *tried = i;
    return stored;
}

/*
 * Chunks of ready documents without a vector of the current model (a provider that failed, a
 * model changed between runs): embed them in batches, oldest first. A batch that fails is
 * tried one chunk at a time, skipping the chunks the provider refuses. When the provider
 * seems down the pass waits a minute; when nothing is left it waits for the next failure (or
 * the next start).
 */
static void embed_stale_held(struct knowledge_worker *w, struct store *s)
{
    int64_t after = 0;
    if (!w->embed || clock_now_ms() < w->stale_after_ms)
        return;
    while (!stopping(w)) {
        struct store_stale_chunk *c = NULL;
        size_t n = 0, dim = 0, done = 0, tried = 0;
        float *vecs = NULL;
        struct arena a;
        arena_init(&a);
        if (store_chunks_stale(s, embed_pool_model(w->embed), after, STALE_BATCH, &a, &c, &n) ||
            n == 0) {
            arena_cleanup(&a);
            w->stale_after_ms = INT64_MAX; /* nothing left: until something fails again */
            return;
        }
        {
            const char **texts = arena_alloc(&a, n * sizeof(*texts));
            size_t *lens = arena_alloc(&a, n * sizeof(*lens));
            int64_t *rowids = arena_alloc(&a, n * sizeof(*rowids));
            for (size_t i = 0; i < n; i++) {
                texts[i] = c[i].content;
                lens[i] = strlen(c[i].content);
                rowids[i] = c[i].rowid;
            }
            if (embed_texts(w, texts, lens, n, &vecs, &dim)) {
                tried = n;
                if (store_chunks_set_vectors(s, rowids, n, vecs, dim, embed_pool_model(w->embed)) ==
                    0)
                    done = n;
                free(vecs);
            } else {
                done = embed_one_by_one(w, s, c, n, &tried);
            }
        }
        for (size_t i = 0; i < tried; i++) {
            if (i == 0 || strcmp(c[i].tenant.org_id, c[i - 1].tenant.org_id) != 0 ||
                c[i].tenant.mode != c[i - 1].tenant.mode)
                kindex_invalidate(w->index, &c[i].tenant);
        }
        if (done > 0)
            log_info("knowledge: %zu chunks embedded again with %s", done,
                     embed_pool_model(w->embed));
        if (done == 0 || tried < n) {
            /* The provider or the store failed: later. */
            w->stale_after_ms = clock_now_ms() + STALE_RETRY_MS;
            arena_cleanup(&a);
            return;
        }
        after = c[n - 1].rowid;
        arena_cleanup(&a);
    }
}

/* Chunks without a vector of the current model are embedded again by one node at a time (the
 * others would embed the same chunks): the node that holds the store's lock does it. */
static void embed_stale(struct knowledge_worker *w, struct store *s)
{
    if (!w->embed || clock_now_ms() < w->stale_after_ms)
        return;
    if (store_lock_try(s, STORE_LOCK_REEMBED, 0) != 0)
        return; /* another node is at it; this one looks again at its next round */
    embed_stale_held(w, s);
    store_lock_release(s, STORE_LOCK_REEMBED, 0);
}

static bool same_tenant(const struct store_tenant *a, const struct store_tenant *b)
{
    return a->mode == b->mode && strcmp(a->org_id, b->org_id) == 0;
}

/* Order of tenants for the round-robin (org id, then mode). */
static int tenant_cmp(const struct store_tenant *a, const struct store_tenant *b)
{
    int c = strcmp(a->org_id, b->org_id);
    return c ? c : (int)a->mode - (int)b->mode;
}

/*
 * Pick the next document for job 'me' (w->mu held): round-robin by tenant after w->last, among
 * documents no thread has; a tenant with a document in work is passed over while another one
 * waits. The caller's arena 'a' holds the candidates. Returns 0 with '*out', or ERR_NOT_FOUND.
 */
static int pick(struct knowledge_worker *w, struct store *s, struct arena *a,
                struct store_document *out)
{
    struct store_document *c = arena_alloc(a, CANDIDATES * sizeof(*c));
    size_t n = 0;
    const char *after = NULL;
    int best = -1, best_busy = -1;
    /* with several threads, one tenant never holds them all: one stays for the others */
    unsigned cap = w->nthreads > 1 ? w->nthreads - 1 : 1;

    while (n < CANDIDATES && store_document_next(s, after, a, &c[n]) == 0) {
        after = c[n].id;
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        bool doc_taken = false;
        unsigned tenant_jobs = 0;
        bool tenant_busy;
        int *slot;
        for (unsigned k = 0; k < w->nthreads; k++) {
            if (!w->jobs[k].busy)
                continue;
            doc_taken |= strcmp(w->jobs[k].doc_id, c[i].id) == 0;
            tenant_jobs += same_tenant(&w->jobs[k].tenant, &c[i].tenant);
        }
        if (doc_taken || tenant_jobs >= cap)
            continue;
        tenant_busy = tenant_jobs > 0;
        slot = tenant_busy ? &best_busy : &best;
        /* the first tenant after 'last' in the cycle, and its oldest document (by id) */
        if (*slot < 0) {
            *slot = (int)i;
            continue;
        }
        {
            int ci = tenant_cmp(&c[i].tenant, &w->last) > 0;
            int cb = tenant_cmp(&c[*slot].tenant, &w->last) > 0;
            int order = tenant_cmp(&c[i].tenant, &c[*slot].tenant);
            if (ci != cb ? ci : order < 0 || (order == 0 && c[i].created_at < c[*slot].created_at))
                *slot = (int)i;
        }
    }
    if (best < 0)
        best = best_busy;
    if (best < 0)
        return ERR_NOT_FOUND;
    *out = c[best];
    return 0;
}

static void *loop(void *arg)
{
    struct kthread *kt = arg;
    struct knowledge_worker *w = kt->w;
    struct kjob *job = &w->jobs[kt->index];
    unsigned seen = 0;

    for (;;) {
        struct timespec until;
        struct store *s;
        pthread_mutex_lock(&w->mu);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 3;
        while (w->wakes == seen && !w->stop)
            if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0)
                break;
        seen = w->wakes;
        if (w->stop) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        pthread_mutex_unlock(&w->mu);
        s = store_pool_get(w->pool);
        for (;;) {
            struct store_document d;
            struct arena a;
            int rc;
            arena_init(&a);
            pthread_mutex_lock(&w->mu);
            rc = w->stop ? ERR_INTERNAL : pick(w, s, &a, &d);
            if (rc == 0 && store_document_claim(s, d.id) != 0) {
                /* another node took it since it was read (or it was deleted): pick again;
                 * the next read no longer finds it */
                pthread_mutex_unlock(&w->mu);
                arena_cleanup(&a);
                continue;
            }
            if (rc == 0) {
                job->busy = true;
                snprintf(job->doc_id, sizeof(job->doc_id), "%s", d.id);
                job->tenant = d.tenant;
                atomic_store(&job->cancel, false);
                w->last = d.tenant;
            }
            pthread_mutex_unlock(&w->mu);
            if (rc == 0) {
                process(w, s, &d, job);
                pthread_mutex_lock(&w->mu);
                job->busy = false;
                job->doc_id[0] = '\0';
                w->wakes++; /* a tenant passed over may go now */
                pthread_cond_broadcast(&w->cv);
                pthread_mutex_unlock(&w->mu);
            }
            arena_cleanup(&a);
            if (rc)
                break;
        }
        if (kt->index == 0)
            embed_stale(w, s);
        store_pool_put(w->pool, s);
    }
    free(kt);
    return NULL;
}

/* Start 'nthreads' worker threads (at least 1). */
int knowledge_worker_start(const char *files_dir, struct store_pool *pool, struct embed_pool *embed,
                           struct kindex *index, unsigned nthreads, struct knowledge_worker **out)
{
    struct knowledge_worker *w = xcalloc(1, sizeof(*w));
    w->index = index;
    w->files_dir = xstrdup(files_dir);
    w->pool = pool;
    w->embed = embed;
    w->nthreads = nthreads ? nthreads : 1;
    w->threads = xcalloc(w->nthreads, sizeof(*w->threads));
    w->jobs = xcalloc(w->nthreads, sizeof(*w->jobs));
    w->wakes = 1;          /* look for documents left processing by an earlier run */
    w->stale_after_ms = 0; /* and for chunks without a vector of the current model */
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    for (unsigned i = 0; i < w->nthreads; i++) {
        struct kthread *kt = xcalloc(1, sizeof(*kt));
        kt->w = w;
        kt->index = i;
        if (pthread_create(&w->threads[i], NULL, loop, kt) != 0) {
            free(kt);
            w->nthreads = i;
            knowledge_worker_stop(w);
            *out = NULL;
            return ERR_INTERNAL;
        }
    }
    *out = w;
    return 0;
}

/*
 * Document 'doc_id' was deleted: if a thread is processing it, stop that (its extraction child
 * is killed, nothing of it is stored). NULL 'w' is a no-op.
 */
void knowledge_worker_cancel(struct knowledge_worker *w, const char *doc_id)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    for (unsigned k = 0; k < w->nthreads; k++) {
        if (w->jobs[k].busy && strcmp(w->jobs[k].doc_id, doc_id) == 0)
            atomic_store(&w->jobs[k].cancel, true);
    }
    pthread_mutex_unlock(&w->mu);
}

/* Wake the worker: a document is waiting. */
void knowledge_worker_wake(struct knowledge_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->wakes++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Stop after the current document and free 'w'; NULL is a no-op. */
void knowledge_worker_stop(struct knowledge_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (unsigned i = 0; i < w->nthreads; i++)
        pthread_join(w->threads[i], NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->threads);
    free(w->jobs);
    free(w->files_dir);
    free(w);
}
