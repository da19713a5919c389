/* SPDX-License-Identifier: MIT */
/*
 * worker: the background thread that turns uploaded documents into searchable chunks: extract
 * the text in an isolated child (extract.c), chunk it (chunk.c), embed the chunks in batches
 * through the embedding pool (embed/pool.h), and store chunks and status in one transaction.
 * Documents still 'processing' when the server stopped are taken up again when it starts, and
 * chunks without a vector of the current model are embedded again in the background.
 */
#ifndef WORKFORCE_KNOWLEDGE_WORKER_H
#define WORKFORCE_KNOWLEDGE_WORKER_H

struct embed_pool;
struct kindex;
struct store_pool;
struct knowledge_worker;

/* Start the thread; documents are read from 'files_dir'. '*out' owned by the caller. */
int knowledge_worker_start(const char *files_dir, struct store_pool *pool, struct embed_pool *embed,
                           struct kindex *index, unsigned nthreads, struct knowledge_worker **out);
/* A document was deleted: stop processing it, if a thread is (NULL ok). */
void knowledge_worker_cancel(struct knowledge_worker *w, const char *doc_id);
void knowledge_worker_wake(struct knowledge_worker *w); /* a document was uploaded; NULL ok */
void knowledge_worker_stop(struct knowledge_worker *w); /* finishes the current document */

#endif
