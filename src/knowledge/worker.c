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
#include "../embed/embed.h"
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

struct knowledge_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool woken;
    bool stop;
    char *files_dir;
    struct store_pool *pool;
    const struct embed_model *embed;
    struct kindex *index;
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

static void process(struct knowledge_worker *w, struct store *s, const struct store_document *d)
{
    struct extract_limits lim = {60000, 512u << 20, 64u << 20, 256u << 20};
    struct extract_result res;
    struct chunk *chunks = NULL;
    struct store_chunk *sc = NULL;
    float *vecs = NULL;
    size_t n = 0;
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
        if (w->embed)
            vecs = xmalloc(n * EMBED_DIM * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            if (stopping(w)) {
                /* Left 'processing': the next start takes the document up again. */
                for (size_t k = 0; k < i; k++)
                    free((char *)(uintptr_t)sc[k].content);
                free(sc);
                free(vecs);
                free(chunks);
                extract_result_cleanup(&res);
                return;
            }
            sc[i].content = xstrndup(res.text + chunks[i].off, chunks[i].len);
            sc[i].page = chunks[i].page;
            if (vecs &&
                embed_text(w->embed, sc[i].content, chunks[i].len, vecs + i * EMBED_DIM) == 0) {
                sc[i].embedding = vecs + i * EMBED_DIM;
                sc[i].dim = EMBED_DIM;
            }
        }
    }
    if (rc) {
        log_warn("knowledge: document %s failed: %s", d->id, e.msg);
        rc = store_document_finish(s, d->id, NULL, 0, e.msg[0] ? e.msg : "extraction failed");
    } else {
        rc = store_document_finish(s, d->id, sc, n, NULL);
        log_info("knowledge: document %s ready: %zu chunks, %zu bytes of text, %lld ms", d->id, n,
                 res.len, (long long)((clock_mono_us() - t0) / 1000));
    }
    if (rc)
        log_error("knowledge: cannot store the result of document %s", d->id);
    kindex_invalidate(w->index, &d->tenant);
    for (size_t i = 0; sc && i < n; i++)
        free((char *)(uintptr_t)sc[i].content);
    free(sc);
    free(vecs);
    free(chunks);
    extract_result_cleanup(&res);
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
        store_pool_put(w->pool, s);
    }
    return NULL;
}

/* Start the worker thread. */
int knowledge_worker_start(const char *files_dir, struct store_pool *pool,
                           const struct embed_model *embed, struct kindex *index,
                           struct knowledge_worker **out)
{
    struct knowledge_worker *w = xcalloc(1, sizeof(*w));
    w->index = index;
    w->files_dir = xstrdup(files_dir);
    w->pool = pool;
    w->embed = embed;
    w->woken = true; /* look for documents left processing by an earlier run */
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
