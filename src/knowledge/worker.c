/* SPDX-License-Identifier: MIT */
/*
 * worker.c: one thread, woken by uploads (and every few seconds in case a wake-up was missed),
 * that walks the documents in status 'processing' in id order. Extraction runs in a child
 * process with limits, so a malicious file can fail its document, not this thread.
 */
#include "worker.h"

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../embed/pool.h"
#include "../store/store.h"
#include "extract.h"
#include "index.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TARGET_WORDS 100
#define OVERLAP_WORDS 20
#define STALE_BATCH 256      /* chunks per embedding round */
#define STALE_RETRY_MS 60000 /* after a failed embedding */
#define STALE_MAX_MISSES 3   /* failures in a row that mean the provider is down */

struct knowledge_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool woken;
    bool stop;
    char *files_dir;
    struct store_pool *pool;
    struct embed_pool *embed; /* NULL: no vectors */
    struct kindex *index;
    int64_t stale_after_ms; /* the next stale pass, not before (worker thread only) */
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

static void process(struct knowledge_worker *w, struct store *s, const struct store_document *d)
{
    struct extract_limits lim = {60000, 512u << 20, 64u << 20, 256u << 20};
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
        /* In rounds, so that a stop does not wait for a whole large document. */
        for (size_t first = 0; w->embed && first < n && !stopping(w); first += STALE_BATCH) {
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
        }
    }
    if (!rc && stopping(w)) {
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
static void embed_stale(struct knowledge_worker *w, struct store *s)
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

static void *loop(void *arg)
{
    struct knowledge_worker *w = arg;
    for (;;) {
        struct timespec until;
        struct store *s;
        char after[ID_MAX] = "";
        pthread_mutex_lock(&w->mu);
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 3;
        while (!w->woken && !w->stop)
            if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0)
                break;
        w->woken = false;
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
            rc = store_document_next(s, after[0] ? after : NULL, &a, &d);
            if (rc == 0) {
                snprintf(after, sizeof(after), "%s", d.id);
                process(w, s, &d);
            }
            arena_cleanup(&a);
            pthread_mutex_lock(&w->mu);
            if (w->stop)
                rc = ERR_INTERNAL;
            pthread_mutex_unlock(&w->mu);
            if (rc)
                break;
        }
        embed_stale(w, s);
        store_pool_put(w->pool, s);
    }
    return NULL;
}

/* Start the worker thread. */
int knowledge_worker_start(const char *files_dir, struct store_pool *pool, struct embed_pool *embed,
                           struct kindex *index, struct knowledge_worker **out)
{
    struct knowledge_worker *w = xcalloc(1, sizeof(*w));
    w->index = index;
    w->files_dir = xstrdup(files_dir);
    w->pool = pool;
    w->embed = embed;
    w->woken = true;       /* look for documents left processing by an earlier run */
    w->stale_after_ms = 0; /* and for chunks without a vector of the current model */
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, loop, w) != 0) {
        free(w->files_dir);
        free(w);
        *out = NULL;
        return ERR_INTERNAL;
    }
    *out = w;
    return 0;
}

/* Wake the worker: a document is waiting. */
void knowledge_worker_wake(struct knowledge_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->woken = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* Stop after the current document and free 'w'; NULL is a no-op. */
void knowledge_worker_stop(struct knowledge_worker *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w->files_dir);
    free(w);
}
