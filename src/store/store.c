/* SPDX-License-Identifier: MIT */
/*
 * store.c: the wrappers every caller goes through (SQLite os.c style). They pick the backend
 * from the URL, hold the fault-injection hook for tests, and implement the handle pool.
 *
 * DESIGN (pool): a handle is one database connection and is used by one thread at a time. The
 * HTTP server has a fixed number of worker threads, so the pool holds that many handles, opened
 * up front; store_pool_get() waits on a condition variable only if more threads than handles
 * ask at once (commands and background workers get their own).
 */
#include "store_int.h"

#include "../core/clock.h"
#include "../core/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- Fault injection (tests) ----
 *
 * DESIGN: a failure is injected inside the operation, where SQLite's test VFS injects its own
 * (src/test_vfs.c fails the N-th I/O call): store_fail_after(n) makes the n-th statement run
 * from then on, on any connection, fail with ERR_STORE as if the database had refused it, after
 * the statements of the operation that ran before it. The drivers ask store_fault() before each
 * prepare, step, begin, commit and savepoint (sqlite.c, postgres.c); the ways out of a
 * transaction (rollback, rollback to a savepoint, release) never fail, so a test sees whether
 * the operation took them. One failure per arming: the statements after it run.
 */
static atomic_long fail_countdown;

/* See store.h. */
long store_fail_after(long n)
{
    return atomic_exchange(&fail_countdown, n);
}

/* See store_int.h. */
bool store_fault(void)
{
    if (atomic_load_explicit(&fail_countdown, memory_order_relaxed) <= 0)
        return false;
    return atomic_fetch_sub(&fail_countdown, 1) == 1;
}

static char node_id[ID_MAX];
static pthread_once_t node_once = PTHREAD_ONCE_INIT;

static void node_make(void)
{
    if (id_new("node", node_id, sizeof(node_id)) != 0)
        abort(); /* the CSPRNG is gone: nothing can be trusted to be unique */
}

/* See store.h. */
const char *store_node_id(void)
{
    pthread_once(&node_once, node_make);
    return node_id;
}

/* A backend that lacks operation 'op' (PostgreSQL, while its operations are written): a clean
 * failure rather than a jump to NULL. */
static int unsupported(struct store *s, const char *op)
{
    log_error("store: %s is not available on %s yet", op, s->ops->name);
    return ERR_STORE;
}

/*
 * Open one connection to 'url': a file path (SQLite) for now; "postgres://" URLs are refused
 * until the PostgreSQL backend exists. On success '*out' is owned by the caller
 * (store_close()).
 */
int store_open(const char *url, struct store **out, struct err *e)
{
    *out = NULL;
    if (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0)
        return store_pg_open(url, out, e);
    return store_sqlite_open(url, out, e);
}

/* Close 's' and free it; NULL is a no-op. */
void store_close(struct store *s)
{
    if (s)
        s->ops->close(s);
}

/* Bring the schema to the newest version; running it again changes nothing. */
int store_migrate(struct store *s, struct err *e)
{
    return s->ops->migrate ? s->ops->migrate(s, e) : unsupported(s, "migrate");
}

/* 0 when the database answers a trivial query. */
int store_ping(struct store *s)
{
    if (!s->ops->ping)
        return unsupported(s, "ping");
    return s->ops->ping(s);
}

/* See store.h. */
int store_lock_try(struct store *s, enum store_lock lock, uint32_t sub)
{
    return s->ops->lock ? s->ops->lock(s, (int)lock, sub, false) : 0;
}

/* See store.h. */
int store_lock_wait(struct store *s, enum store_lock lock, uint32_t sub)
{
    return s->ops->lock ? s->ops->lock(s, (int)lock, sub, true) : 0;
}

/* See store.h. */
void store_lock_release(struct store *s, enum store_lock lock, uint32_t sub)
{
    if (s->ops->lock_release)
        s->ops->lock_release(s, (int)lock, sub);
}

/* See store.h. */
int store_node_start(struct store *s, int64_t now)
{
    return nodes_start(s, now);
}

/* See store.h. */
int store_node_stop(struct store *s)
{
    return nodes_stop(s);
}

/* See store.h. */
int store_rate_enter(struct store *s, const struct store_rate_ask *ask, struct store_rate *out)
{
    return nodes_rate_enter(s, ask, out);
}

/* See store.h. */
int store_rate_leave(struct store *s, const char *tenant, int64_t epoch)
{
    return nodes_rate_leave(s, tenant, epoch);
}

/* See store.h. */
int store_node_beat(struct store *s, int64_t now)
{
    return nodes_beat(s, now);
}

/* See store.h. */
int store_nodes_recover(struct store *s, int64_t now, int64_t lease_ms, bool starting,
                        struct store_recovery *out)
{
    int64_t dead_before = starting && db_dialect(s) == DB_SQLITE ? INT64_MAX : now - lease_ms;
    return nodes_recover(s, now, dead_before, out);
}

/* ---- Generation ----
 *
 * DESIGN: the in-memory caches of the request path (verified keys, employee lists) tag what
 * they keep with the generation current when they read it, and a reader serves an entry only
 * under the same generation. The generation moves on every commit of this process (the backend
 * calls store_note_commit() before its commit returns, so the change is visible to the
 * process's next request), and when a handle sees that another connection committed (SQLite's
 * data_version: another process such as the CLI). That look costs a read transaction (two
 * fcntl locks and a process-wide mutex of SQLite's file layer): taken on every request it held
 * the list at 0.6x nginx, and once every WATCH_MS for the whole process at 1.2x. So a change made
 * by another process is seen within WATCH_MS (the contract allows 1 s), one made here at once.
 * With several nodes on PostgreSQL the look is taken on every call instead (one round trip for
 * the WAL position): a client that alternates between nodes sees its own changes at once.
 * Read the generation before the data it tags: a commit in between leaves an entry tagged older
 * than its data, which is only a miss later, never a stale answer.
 */
#define WATCH_MS 100

static _Atomic uint64_t generation = 1;
static _Atomic int64_t watched_at_us; /* when a handle last looked for other processes' commits */

void store_note_commit(void)
{
    atomic_fetch_add_explicit(&generation, 1, memory_order_acq_rel);
    hook_note_commit();
}

static atomic_bool unreachable;

/* See store_int.h: a store only when it changes (this is on every statement's path). */
void store_note_reachable(bool ok)
{
    if (atomic_load_explicit(&unreachable, memory_order_relaxed) == ok)
        atomic_store_explicit(&unreachable, !ok, memory_order_relaxed);
}

/* See store.h. */
bool store_unreachable(void)
{
    return atomic_load_explicit(&unreachable, memory_order_relaxed);
}

/*
 * The current generation, as seen through 's': it differs from an earlier value whenever this
 * process committed since, or another did more than WATCH_MS ago. When the backend cannot tell,
 * the answer is a new value (every cached entry misses).
 */
static _Atomic int64_t shared_seen;    /* the last shared data version read (PostgreSQL) */
static _Atomic int64_t shared_aged_us; /* when the generation last moved by age (PostgreSQL) */
#define SHARED_MAX_AGE_US 1000000

uint64_t store_generation(struct store *s)
{
    int64_t now = clock_mono_us(),
            last = atomic_load_explicit(&watched_at_us, memory_order_relaxed);
    int64_t v;

    /* Several nodes (a shared version): a client whose last request went to another node must
     * see what that answer said, so the look (one round trip) is taken on every call. */
    if (s->ops->shared_version || (now - last >= (int64_t)WATCH_MS * 1000 &&
                                   atomic_compare_exchange_strong(&watched_at_us, &last, now))) {
        if (!s->ops->data_version || s->ops->data_version(s, &v)) {
            store_note_commit();
        } else if (s->ops->shared_version) {
            /* one number for the whole database: compared with what this process saw last,
             * whichever connection read it */
            int64_t aged = atomic_load_explicit(&shared_aged_us, memory_order_relaxed);
            if (atomic_exchange(&shared_seen, v) != v)
                store_note_commit();
            /* and once a second whatever the version says: a node that died between its
             * commit and moving the version leaves no entry stale for longer (the contract's
             * bound for a revoked key is 1 s) */
            else if (now - aged >= SHARED_MAX_AGE_US &&
                     atomic_compare_exchange_strong(&shared_aged_us, &aged, now))
                store_note_commit();
        } else if (v != s->seen_version) {
            s->seen_version = v;
            store_note_commit();
        }
    }
    return atomic_load_explicit(&generation, memory_order_acquire);
}

/* Read the organization 'slug' into 'out'; ERR_NOT_FOUND when absent. */
int store_org_get_by_slug(struct store *s, const char *slug, struct store_org *out)
{
    return orgs_get_by_slug(s, slug, out);
}

/* Read the one organization into 'out'; ERR_NOT_FOUND when there is none or several. */
int store_org_only(struct store *s, struct store_org *out)
{
    return orgs_only(s, out);
}

/* Read the organization 'id' into 'out'; ERR_NOT_FOUND when absent. */
int store_org_get(struct store *s, const char *id, struct store_org *out)
{
    return orgs_get(s, id, out);
}

/*
 * Create the organization 'slug' with 'tier' and 'credits', and copy the 'nseed' catalog
 * employees into both of its modes, all in one transaction. ERR_CONFLICT when it exists.
 */
int store_org_create(struct store *s, const char *slug, int tier, int64_t credits,
                     const struct store_employee *seed, size_t nseed, struct store_org *out,
                     struct err *e)
{
    return orgs_create(s, slug, tier, credits, seed, nseed, out, e);
}

/* Update tier (if >= 0) and credits (if >= 0) of 'slug'; the new row in 'out'. */
int store_org_update(struct store *s, const char *slug, int tier, int64_t credits,
                     struct store_org *out)
{
    return orgs_update(s, slug, tier, credits, out);
}

/*
 * Set the tier of employee 'id', whatever its organization: the operator's command line only
 * (the API never writes a tier). ERR_NOT_FOUND when there is no such employee.
 */
int store_employee_set_tier(struct store *s, const char *id, const char *tier)
{
    return employees_set_tier(s, id, tier);
}

/*
 * Write a consistent copy of the database (one snapshot, taken while writers go on) to the new
 * file 'to', which must not exist. ERR_STORE when it cannot.
 */
int store_backup(struct store *s, const char *to)
{
    return s->ops->backup ? s->ops->backup(s, to) : unsupported(s, "backup");
}

/* Insert the key 'k' (its hash, never its secret). */
int store_key_create(struct store *s, const struct store_key *k)
{
    return keys_create(s, k);
}

/* Find the key whose keyed hash is 'hash'; ERR_NOT_FOUND when none. */
int store_key_find(struct store *s, const unsigned char hash[32], struct store_key *out)
{
    return keys_find(s, hash, out);
}

/* The key whose keyed hash is 'hash' with its organization; ERR_NOT_FOUND when none. */
int store_key_auth(struct store *s, const unsigned char hash[32], struct store_key *key,
                   struct store_org *org)
{
    return keys_auth(s, hash, key, org);
}

/* All keys of 'org_id', oldest first, as an array in 'a'. */
int store_key_list(struct store *s, const char *org_id, struct arena *a, struct store_key **out,
                   size_t *n)
{
    return keys_list(s, org_id, a, out, n);
}

/* Mark 'key_id' revoked at 'now'; ERR_NOT_FOUND when unknown. Revoking twice is fine. */
int store_key_revoke(struct store *s, const char *key_id, int64_t now)
{
    return keys_revoke(s, key_id, now);
}

/* One page of the tenant's employees by name then id, with the total matching 'f'. */
int store_employee_list(struct store *s, const struct store_tenant *t,
                        const struct store_emp_filter *f, struct arena *a,
                        struct store_emp_page *out)
{
    return employees_list(s, t, f, a, out);
}

/* Read one employee of the tenant; ERR_NOT_FOUND when absent or another tenant's. */
int store_employee_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_employee *out)
{
    return employees_get(s, t, id, a, out);
}

/* Insert 'emp' (all fields set by the caller) for the tenant. */
int store_employee_create(struct store *s, const struct store_tenant *t,
                          const struct store_employee *emp)
{
    return employees_insert(s, t, emp);
}

/* Set the 'fields' (enum store_emp_field bits) of 'id' from 'emp'; ERR_NOT_FOUND if absent. */
int store_employee_update(struct store *s, const struct store_tenant *t, const char *id,
                          const struct store_employee *emp, unsigned fields, int64_t now)
{
    return employees_update(s, t, id, emp, fields, now);
}

/* The detail object's stats: tasks completed since 'day_start', mean reply time, ratings. */
int store_employee_summary(struct store *s, const struct store_tenant *t, const char *id,
                           int64_t day_start, struct store_emp_summary *out)
{
    return employees_summary(s, t, id, day_start, out);
}

/* Statistics of 'id' over [from, to) with 'nbuckets' buckets of 'bucket_ms' from 'from'. */
int store_employee_stats(struct store *s, const struct store_tenant *t, const char *id,
                         int64_t from, int64_t to, int64_t bucket_ms, size_t nbuckets,
                         struct arena *a, struct store_stats *out)
{
    return employees_stats(s, t, id, from, to, bucket_ms, nbuckets, a, out);
}

/* Append one statistics fact. */
int store_event_add(struct store *s, const struct store_tenant *t, const struct store_event *ev)
{
    return employees_event_add(s, t, ev);
}

/* Store the user message (and a new conversation), reserve a credit, start the work. */
int store_chat_begin(struct store *s, const struct store_tenant *t,
                     const struct store_chat_begin *in)
{
    return s->ops->chat_begin ? s->ops->chat_begin(s, t, in) : chat_begin(s, t, in);
}

/* See store.h. */
int store_conversation_busy(struct store *s, const struct store_tenant *t, const char *id,
                            int64_t since, bool *busy)
{
    return conversations_busy(s, t, id, since, busy);
}

/* See store.h. */
int store_tool_step_begin(struct store *s, const struct store_tenant *t,
                          const struct store_tool_step *in, int64_t *charged, int64_t *balance)
{
    return tool_step_begin(s, t, in, charged, balance);
}

/* See store.h. */
int store_message_events_add(struct store *s, const struct store_tenant *t, const char *message_id,
                             const struct store_events_chunk *ev)
{
    return message_events_add(s, t, message_id, ev);
}

/* See store.h. */
int store_message_events(struct store *s, const struct store_tenant *t, const char *message_id,
                         int64_t after_seq, struct arena *a, struct store_events_chunk **out,
                         size_t *n)
{
    return message_events_of(s, t, message_id, after_seq, a, out, n);
}

/* See store.h. */
int store_approval_list(struct store *s, const struct store_tenant *t,
                        const struct store_approval_filter *f, struct arena *a,
                        struct store_approval_page *out)
{
    return approvals_list(s, t, f, a, out);
}

/* See store.h. */
int store_approval_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_approval *out)
{
    return approvals_get(s, t, id, a, out);
}

/* See store.h. */
int store_approval_decide(struct store *s, const struct store_tenant *t,
                          const struct store_approval_decision *d, struct arena *a,
                          struct store_approval *out)
{
    return approvals_decide(s, t, d, a, out);
}

/* See store.h. */
int store_approvals_due(struct store *s, int64_t now, size_t max, struct arena *a,
                        struct store_approval **out, struct store_tenant **tenants, size_t *n)
{
    return approvals_due(s, now, max, a, out, tenants, n);
}

/* See store.h. */
int store_turn_pause(struct store *s, const struct store_tenant *t,
                     const struct store_turn_pause *in, bool *paused)
{
    return turns_pause(s, t, in, paused);
}

/* See store.h. */
int store_turns_ready(struct store *s, size_t max, struct arena *a, struct store_turn_ref **out,
                      size_t *n)
{
    return turns_ready(s, max, a, out, n);
}

/* See store.h. */
int store_turn_take(struct store *s, const struct store_tenant *t, const char *id, int64_t now,
                    bool *taken)
{
    return turns_take(s, t, id, now, taken);
}

/* See store.h. */
int store_turn_load(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                    struct store_turn_saved *out)
{
    return turns_load(s, t, id, a, out);
}

/* See store.h. */
int store_tool_call_get(struct store *s, const struct store_tenant *t, const char *id,
                        struct arena *a, struct store_tool_call *out)
{
    return tool_call_get(s, t, id, a, out);
}

/* See store.h. */
int store_turn_answer(struct store *s, const struct store_tenant *t, const char *message_id,
                      const struct store_tool_call *ends, size_t n, const char *turn_state,
                      bool reserve, bool *taken)
{
    return turns_answer(s, t, message_id, ends, n, turn_state, reserve, taken);
}

/* See store.h. */
int store_run_turn_load(struct store *s, const struct store_tenant *t, const char *task_run_id,
                        const char *workflow_run_id, int64_t step_index, struct arena *a,
                        struct store_run_saved *out)
{
    return runs_turn_load(s, t, task_run_id, workflow_run_id, step_index, a, out);
}

/* See store.h. */
int store_step_calls_next(struct store *s, const char *run_id, int64_t step_index, int64_t *seq)
{
    return tool_calls_next(s, run_id, step_index, seq);
}

/* See store.h. */
int store_tool_call_end(struct store *s, const struct store_tenant *t,
                        const struct store_tool_call *c)
{
    return tool_call_end(s, t, c);
}

/* See store.h. */
int store_tool_calls_of(struct store *s, const struct store_tenant *t, const char *conversation_id,
                        int64_t from_seq, int64_t to_seq, size_t max, struct arena *a,
                        struct store_tool_call **out, size_t *n)
{
    return tool_calls_of(s, t, conversation_id, from_seq, to_seq, max, a, out, n);
}

/* Store the reply, charge, count the fact, end the work; '*charged' is what was taken. */
/* See store.h. */
int store_chat_finish_in(struct store *s, const struct store_tenant *t,
                         const struct store_chat_finish *in, int64_t *charged)
{
    return chat_finish_in(s, t, in, charged);
}

struct finish_job {
    struct store_job job;
    const struct store_tenant *t;
    const struct store_chat_finish *in;
    int64_t charged;
};

static int finish_apply(struct store *s, struct store_job *job)
{
    struct finish_job *x = (struct finish_job *)job;
    return chat_finish_in(s, x->t, x->in, &x->charged);
}

/* Store a finished reply in a durable transaction of its own: the committer's path (one job
 * instead of the jobs waiting), for callers without a committer (tools, tests). */
int store_chat_finish(struct store *s, const struct store_tenant *t,
                      const struct store_chat_finish *in, int64_t *charged)
{
    struct finish_job x = {{finish_apply, NULL, false, 0, NULL, NULL}, t, in, 0};
    store_group_apply(s, &x.job);
    *charged = x.job.rc ? 0 : x.charged;
    return x.job.rc;
}

/* End the work of a failed reply; 'refund' gives the reserved credit back. */
int store_chat_abort(struct store *s, const struct store_tenant *t, const char *employee_id,
                     const char *reply_id, bool refund)
{
    return chat_abort(s, t, employee_id, reply_id, refund);
}

/* Read one conversation; ERR_NOT_FOUND when absent or another tenant's. */
int store_conversation_get(struct store *s, const struct store_tenant *t, const char *id,
                           struct arena *a, struct store_conversation *out)
{
    return conversations_get(s, t, id, a, out);
}

/* One page of conversations, newest activity first. */
int store_conversation_list(struct store *s, const struct store_tenant *t,
                            const struct store_conv_filter *f, struct arena *a,
                            struct store_conv_page *out)
{
    return conversations_list(s, t, f, a, out);
}

/* Delete a conversation with its messages and feedback; ERR_NOT_FOUND when absent. */
int store_conversation_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    return conversations_delete(s, t, id);
}

/* The last 'limit' messages of a conversation, oldest first, as an array in 'a'. */
int store_message_list(struct store *s, const struct store_tenant *t, const char *conversation_id,
                       unsigned limit, struct arena *a, struct store_message **out, size_t *n)
{
    return messages_list(s, t, conversation_id, limit, a, out, n);
}

/*
 * Up to 'limit' messages of a conversation in order of 'seq': oldest first after 'from_seq' (0:
 * from the first), or with 'newest_first' newest first before 'from_seq' (0: from the last).
 * '*out' ('*n' items, each with its 'seq') lives in 'a'.
 */
int store_message_page(struct store *s, const struct store_tenant *t, const char *conversation_id,
                       bool newest_first, int64_t from_seq, unsigned limit, struct arena *a,
                       struct store_message **out, size_t *n)
{
    return messages_page(s, t, conversation_id, newest_first, from_seq, limit, a, out, n);
}

/* Read one message of a conversation; ERR_NOT_FOUND when absent. */
int store_message_get(struct store *s, const struct store_tenant *t, const char *conversation_id,
                      const char *id, struct arena *a, struct store_message *out)
{
    return messages_get(s, t, conversation_id, id, a, out);
}

/* Set or replace the rating of 'msg'. */
int store_feedback_set(struct store *s, const struct store_tenant *t,
                       const struct store_message *msg, int rating, const char *comment,
                       int64_t now)
{
    return feedback_set(s, t, msg, rating, comment, now);
}

/* Claim an idempotency key; ERR_CONFLICT with the record when it exists. */
int store_idem_claim(struct store *s, const struct store_tenant *t, const char *key,
                     const unsigned char fingerprint[32], int64_t now, int64_t max_age_ms,
                     struct arena *a, struct store_idem *out)
{
    return idem_claim(s, t, key, fingerprint, now, max_age_ms, a, out);
}

/* Record the response of a claimed key. */
int store_idem_complete(struct store *s, const struct store_tenant *t, const char *key, int status,
                        const char *content_type, const char *body, size_t len)
{
    return idem_complete(s, t, key, status, content_type, body, len);
}

/* Forget a claimed key (the request failed in a way that may be retried). */
int store_idem_release(struct store *s, const struct store_tenant *t, const char *key)
{
    return idem_release(s, t, key);
}

/* Insert a new document record (status processing). */
int store_document_create(struct store *s, const struct store_tenant *t,
                          const struct store_document *d)
{
    return documents_create(s, t, d);
}

/* Read one document; ERR_NOT_FOUND when absent or another tenant's. */
int store_document_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_document *out)
{
    return documents_get(s, t, id, a, out);
}

/* One page of documents, newest first. */
int store_document_list(struct store *s, const struct store_tenant *t,
                        const struct store_doc_filter *f, struct arena *a,
                        struct store_doc_page *out)
{
    return documents_list(s, t, f, a, out);
}

/* Delete a document with its chunks and index entries; ERR_NOT_FOUND when absent. */
int store_document_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    return documents_delete(s, t, id);
}

/* See store.h. */
int store_document_claim(struct store *s, const char *id)
{
    return documents_claim(s, id);
}

/* The oldest processing document after 'after_id' (NULL: from the start). */
int store_document_next(struct store *s, const char *after_id, struct arena *a,
                        struct store_document *out)
{
    return documents_next(s, after_id, a, out);
}

/* Chunks and status of a processed document, in one transaction. */
int store_document_progress(struct store *s, const char *id, int64_t chunks, int64_t embedded)
{
    return documents_progress(s, id, chunks, embedded);
}

int store_document_finish(struct store *s, const char *id, const struct store_chunk *chunks,
                          size_t n, const char *error)
{
    return documents_finish(s, id, chunks, n, error);
}

/* BM25 search over the tenant's ready chunks. */
int store_search_text(struct store *s, const struct store_tenant *t, const char *fts_query,
                      const struct store_search_filter *f, unsigned limit, struct arena *a,
                      struct store_hit **out, size_t *n)
{
    return chunks_search_text(s, t, fts_query, f, limit, a, out, n);
}

/* Nearest chunks by cosine similarity of their embeddings. */
int store_search_vectors(struct store *s, const struct store_tenant *t, const float *q, size_t dim,
                         const struct store_search_filter *f, unsigned limit, struct arena *a,
                         struct store_hit **out, size_t *n)
{
    return chunks_search_vectors(s, t, q, dim, f, limit, a, out, n);
}

/* See store.h. */
int store_knowledge_version(struct store *s, const struct store_tenant *t, int64_t *out)
{
    return knowledge_version(s, t, out);
}

/* Stream the tenant's chunk vectors with their documents' access data. */
int store_vectors_each(struct store *s, const struct store_tenant *t,
                       int (*fn)(void *ud, const struct store_vector_row *row), void *ud)
{
    return chunks_vectors_each(s, t, fn, ud);
}

/* Chunks whose vector is missing or of another model, for the background re-embedding. */
int store_chunks_stale(struct store *s, const char *model, int64_t after, unsigned limit,
                       struct arena *a, struct store_stale_chunk **out, size_t *n)
{
    return chunks_stale(s, model, after, limit, a, out, n);
}

/* Replace the vectors of the given chunks. */
int store_chunks_set_vectors(struct store *s, const int64_t *rowids, size_t n, const float *vecs,
                             size_t dim, const char *model)
{
    return chunks_set_vectors(s, rowids, n, vecs, dim, model);
}

/* ---- Tasks ---- */

int store_task_create(struct store *s, const struct store_tenant *t, const struct store_task *k)
{
    return tasks_create(s, t, k);
}

int store_task_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                   struct store_task *out)
{
    return tasks_get(s, t, id, a, out);
}

int store_task_list(struct store *s, const struct store_tenant *t,
                    const struct store_task_filter *f, struct arena *a, struct store_task_page *out)
{
    return tasks_list(s, t, f, a, out);
}

/* Compare-and-set update of a task (see store.h). */
int store_task_update(struct store *s, const struct store_tenant *t, const struct store_task *k,
                      const char *old_status, const char *old_run_id, bool cancel_run, int64_t now)
{
    return tasks_update(s, t, k, old_status, old_run_id, cancel_run, now);
}

int store_task_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    return tasks_delete(s, t, id);
}

int store_task_runs(struct store *s, const struct store_tenant *t, const char *task_id,
                    unsigned limit, int64_t before_started, const char *before_id, struct arena *a,
                    struct store_run_page *out)
{
    return tasks_runs(s, t, task_id, limit, before_started, before_id, a, out);
}

/* The worker's queue: take the next runnable task (see store.h). */
int store_claim(struct store *s, int64_t now, const struct store_queue_rules *rules,
                struct arena *a, struct store_claim *out, int64_t *wake_at)
{
    return tasks_claim(s, now, rules, false, a, out, wake_at);
}

/* See store.h. */
int store_claim_idle(struct store *s, int64_t now, const struct store_queue_rules *rules,
                     struct arena *a, struct store_claim *out, int64_t *wake_at)
{
    return tasks_claim(s, now, rules, true, a, out, wake_at);
}

int store_task_finish(struct store *s, const struct store_task_finish *in, int64_t *charged,
                      bool *discarded)
{
    return tasks_finish(s, in, charged, discarded);
}

/* See store.h. */
int store_task_recover(struct store *s, int64_t now, size_t *n, size_t *steps)
{
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = tasks_take_back(s, "", now, INT64_MAX, n, steps);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* Read the hits of the given chunk rowids, keeping their order and scores. */
int store_hits_by_rowid(struct store *s, const int64_t *rowids, const double *scores, size_t n,
                        struct arena *a, struct store_hit **out, size_t *nout)
{
    return chunks_hits_by_rowid(s, rowids, scores, n, a, out, nout);
}

/* ---- Pool ----
 *
 * A pool holds up to 'max' connections and opens them when they are first needed: each SQLite
 * connection keeps its own copy of the schema and its own page cache (about 170 KB at rest), so
 * an idle server holds the few it has used rather than every one it may need. The first is
 * opened by store_pool_new(), which so checks the URL. An open that fails later is not retried
 * for OPEN_RETRY_MS; meanwhile store_pool_get() waits for a handle to come back.
 */
#define OPEN_RETRY_MS 1000

struct store_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *url;
    struct store **free_;
    size_t nfree;
    struct store **all;
    size_t n;       /* opened: all[0 .. n) */
    size_t opening; /* being opened, outside the lock */
    size_t max;
    int64_t failed_ms; /* when an open last failed (monotonic), or 0 */
};

/* A pool of up to 'n' connections to 'url', the first one open. '*out' is owned by the caller
 * (store_pool_free()). */
int store_pool_new(const char *url, unsigned n, struct store_pool **out, struct err *e)
{
    struct store_pool *p = xcalloc(1, sizeof(*p));
    int rc;

    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->url = xstrdup(url);
    p->max = n ? n : 1;
    p->all = xcalloc(p->max, sizeof(*p->all));
    p->free_ = xcalloc(p->max, sizeof(*p->free_));
    rc = store_open(url, &p->all[0], e);
    if (rc) {
        store_pool_free(p);
        p = NULL;
    } else {
        p->n = 1;
        p->free_[p->nfree++] = p->all[0];
    }
    *out = p;
    return rc;
}

/* Close every connection and free 'p'; NULL is a no-op. No handle may be out. */
void store_pool_free(struct store_pool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++)
        store_close(p->all[i]);
    free(p->all);
    free(p->free_);
    free(p->url);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Borrow a handle; give it back with store_pool_put(). Opens one when none is free and the
 * pool is not full; else waits while none is free. */
struct store *store_pool_get(struct store_pool *p)
{
    struct store *s = NULL;
    pthread_mutex_lock(&p->mu);
    while (!s) {
        int64_t now = clock_mono_us() / 1000;
        struct err e;
        if (p->nfree > 0) {
            s = p->free_[--p->nfree];
            break;
        }
        if (p->n + p->opening >= p->max || (p->failed_ms && now - p->failed_ms < OPEN_RETRY_MS)) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        p->opening++;
        pthread_mutex_unlock(&p->mu);
        if (store_open(p->url, &s, &e)) {
            log_warn("store: cannot open one more connection (%s); waiting for one in use", e.msg);
            s = NULL;
        }
        pthread_mutex_lock(&p->mu);
        p->opening--;
        if (s)
            p->all[p->n++] = s;
        else
            p->failed_ms = now;
    }
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* Return a handle borrowed with store_pool_get(). */
void store_pool_put(struct store_pool *p, struct store *s)
{
    pthread_mutex_lock(&p->mu);
    p->free_[p->nfree++] = s;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* ---- Workflows ---- */

int store_workflow_create(struct store *s, const struct store_tenant *t,
                          const struct store_workflow *w)
{
    return workflows_create(s, t, w);
}

int store_workflow_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_workflow *out)
{
    return workflows_get(s, t, id, a, out);
}

int store_workflow_by_token(struct store *s, const char *token, struct arena *a,
                            struct store_workflow *out)
{
    return workflows_by_token(s, token, a, out);
}

int store_workflow_list(struct store *s, const struct store_tenant *t, unsigned limit,
                        int64_t before_created, const char *before_id, struct arena *a,
                        struct store_workflow_page *out)
{
    return workflows_list(s, t, limit, before_created, before_id, a, out);
}

int store_workflow_update(struct store *s, const struct store_tenant *t,
                          const struct store_workflow *w)
{
    return workflows_update(s, t, w);
}

int store_workflow_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    return workflows_delete(s, t, id);
}

int store_wf_run_create(struct store *s, const struct store_tenant *t, const struct store_wf_run *r,
                        struct arena *a, struct store_wf_run *out)
{
    return workflow_runs_create(s, t, r, a, out);
}

int store_wf_run_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                     const char *run_id, struct arena *a, struct store_wf_run *out)
{
    return workflow_runs_get(s, t, workflow_id, run_id, a, out);
}

int store_wf_run_list(struct store *s, const struct store_tenant *t, const char *workflow_id,
                      unsigned limit, int64_t before_created, const char *before_id,
                      struct arena *a, struct store_wf_run_page *out)
{
    return workflow_runs_list(s, t, workflow_id, limit, before_created, before_id, a, out);
}

int store_wf_run_cancel(struct store *s, const struct store_tenant *t, const char *workflow_id,
                        const char *run_id, int64_t now)
{
    return workflow_runs_cancel(s, t, workflow_id, run_id, now);
}

int store_step_finish(struct store *s, const struct store_step_finish *in, int64_t *charged,
                      bool *discarded)
{
    return workflow_steps_finish(s, in, charged, discarded);
}

int store_integration_get(struct store *s, const struct store_tenant *t, const char *provider,
                          struct arena *a, struct store_integration *out)
{
    return integrations_get(s, t, provider, a, out);
}

int store_integration_put(struct store *s, const struct store_tenant *t,
                          const struct store_integration *in)
{
    return integrations_put(s, t, in);
}

int store_integration_delete(struct store *s, const struct store_tenant *t, const char *provider)
{
    return integrations_delete(s, t, provider);
}

int store_oauth_state_create(struct store *s, const struct store_oauth_state *in)
{
    return oauth_states_create(s, in);
}

int store_oauth_state_take(struct store *s, const char *state_hash, const char *provider,
                           int64_t now, struct arena *a, struct store_oauth_state *out)
{
    return oauth_states_take(s, state_hash, provider, now, a, out);
}

int store_oauth_state_peek(struct store *s, const char *state_hash, const char *provider,
                           int64_t now, struct arena *a, struct store_oauth_state *out)
{
    return oauth_states_peek(s, state_hash, provider, now, a, out);
}

int store_oauth_state_start(struct store *s, const char *state_hash, const char *provider,
                            int64_t now, const char *binding_hash)
{
    return oauth_states_start(s, state_hash, provider, now, binding_hash);
}

int store_oauth_state_open(struct store *s, const struct store_tenant *t, const char *provider,
                           int64_t now, bool *open)
{
    return oauth_states_open(s, t, provider, now, open);
}

int store_integration_tenants(struct store *s, const char *provider, const char *account_key,
                              struct store_tenant *out, size_t max, size_t *n)
{
    return integrations_tenants(s, provider, account_key, out, max, n);
}

int store_inbound_get(struct store *s, const struct store_tenant *t, const char *provider,
                      const char *fresh, struct arena *a, struct store_inbound *out)
{
    return inbound_get(s, t, provider, fresh, a, out);
}

int store_inbound_rotate(struct store *s, const struct store_tenant *t, const char *provider,
                         const char *fresh)
{
    return inbound_rotate(s, t, provider, fresh);
}

int store_inbound_secret(struct store *s, const struct store_tenant *t, const char *provider,
                         const char *fresh, const unsigned char *secret, size_t len)
{
    return inbound_secret(s, t, provider, fresh, secret, len);
}

int store_delivery_note(struct store *s, const struct store_tenant *t, const char *provider,
                        const char *id, int64_t now, int64_t window_ms, bool *first)
{
    return deliveries_note(s, t, provider, id, now, window_ms, first);
}

int store_events_tenant(struct store *s, const char *provider, const char *token,
                        struct store_tenant *out)
{
    return events_tenant(s, provider, token, out);
}

int store_workflows_for_event(struct store *s, const struct store_tenant *t, const char *event,
                              struct arena *a, struct store_workflow **out, size_t *n)
{
    return workflows_for_event(s, t, event, a, out, n);
}

/*
 * One transaction for the jobs of 'batch', each in a savepoint (a job that fails is undone
 * alone); sets each job's rc. The backend's own (SQLite: committed without a flush, see
 * group_sync) or this one, for a database that makes each commit durable itself.
 */
static void group_apply(struct store *s, struct store_job *batch)
{
    int rc;
    if (s->ops->group_apply) {
        s->ops->group_apply(s, batch);
        return;
    }
    rc = db_begin(s, DB_TX_WRITE);
    for (struct store_job *j = batch; j; j = j->next) {
        if (rc) {
            j->rc = rc;
            continue;
        }
        j->rc = db_run(s, "SAVEPOINT job", NULL, 0, NULL, 0);
        if (!j->rc)
            j->rc = j->apply(s, j);
        /* (a test build with STORE_TEST_BROKEN_ROLLBACK keeps a failed job's writes) */
        if (j->rc && !STORE_BROKEN_ROLLBACK &&
            db_run(s, "ROLLBACK TO SAVEPOINT job", NULL, 0, NULL, 0))
            rc = ERR_STORE; /* the transaction is lost: every job fails */
        if (!rc && db_run(s, "RELEASE SAVEPOINT job", NULL, 0, NULL, 0) && !j->rc)
            j->rc = ERR_STORE;
    }
    if (!rc)
        rc = db_commit(s);
    if (rc) {
        db_rollback(s);
        for (struct store_job *j = batch; j; j = j->next)
            j->rc = rc;
    }
}

/* ---- Committer ----
 *
 * DESIGN: the writes that end a request (a chat reply) used to be committed by the thread that
 * saw the request end: the HTTP client's one event loop for every upstream call, so replies that
 * ended together were committed one after another, one fsync each, and every other upstream
 * transfer waited meanwhile. The committer is one thread with its own connection: the loop hands
 * it the job and goes on; the committer takes every job waiting (at most COMMIT_MAX), applies
 * them in one transaction (store_group_apply), commits once, and then tells each job. Jobs that
 * arrive during a commit make the next group, so the more requests end at once, the fewer fsyncs
 * each costs.
 */
#define COMMIT_MAX 64

struct store_committer {
    struct store *s;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct store_job *head, **tail;
    bool stopping;
    bool stopped;     /* the thread is gone: submit applies the job itself */
    bool maintaining; /* the thread is checkpointing */
};

/*
 * Apply 'batch' in one transaction; tell the lazy jobs once it is committed, flush the log if
 * any job needs it durable, then tell those. 'done' may free its job: each next is read first.
 */
static void apply_and_tell(struct store *s, struct store_job *batch)
{
    struct store_job *durable = NULL, **tail = &durable;
    group_apply(s, batch);
    while (batch) {
        struct store_job *next = batch->next;
        if (batch->lazy) {
            batch->done(batch, batch->rc);
        } else {
            batch->next = NULL;
            *tail = batch;
            tail = &batch->next;
        }
        batch = next;
    }
    if (durable && s->ops->group_sync)
        s->ops->group_sync(s);
    while (durable) {
        struct store_job *next = durable->next;
        durable->done(durable, durable->rc);
        durable = next;
    }
}

/* See store_int.h. */
struct store_job *store_jobs_take(struct store_job **head, struct store_job ***tail, size_t max)
{
    struct store_job *batch = *head, *last = *head;
    for (size_t n = 1; last->next && n < max; n++)
        last = last->next;
    *head = last->next;
    if (!*head)
        *tail = head;
    last->next = NULL;
    return batch;
}

static void *commit_loop(void *arg)
{
    struct store_committer *c = arg;

    pthread_mutex_lock(&c->mu);
    for (;;) {
        struct store_job *batch;
        while (!c->head && !c->stopping)
            pthread_cond_wait(&c->cv, &c->mu);
        if (!c->head) {
            c->stopped = true; /* under the lock: a later submit applies its job itself */
            break;
        }
        batch = store_jobs_take(&c->head, &c->tail, COMMIT_MAX);
        pthread_mutex_unlock(&c->mu);
        apply_and_tell(c->s, batch);
        pthread_mutex_lock(&c->mu);
        if (c->s->ops->maintain) {
            /* After the answers, and while it runs (a checkpoint: 2 to 4 ms) a chat's first
             * writes are made by its own thread instead (store_chat_begin_committed). */
            bool idle = !c->head;
            c->maintaining = true;
            pthread_mutex_unlock(&c->mu);
            c->s->ops->maintain(c->s, idle);
            pthread_mutex_lock(&c->mu);
            c->maintaining = false;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* See store.h. */
int store_committer_new(const char *url, struct store_committer **out, struct err *e)
{
    struct store_committer *c = xcalloc(1, sizeof(*c));
    int rc = store_open(url, &c->s, e);

    if (!rc) {
        if (c->s->ops->own_checkpoints)
            c->s->ops->own_checkpoints(c->s);
        pthread_mutex_init(&c->mu, NULL);
        pthread_cond_init(&c->cv, NULL);
        c->tail = &c->head;
        if (pthread_create(&c->thread, NULL, commit_loop, c) != 0) {
            pthread_cond_destroy(&c->cv);
            pthread_mutex_destroy(&c->mu);
            store_close(c->s);
            rc = err_set(e, ERR_INTERNAL, "internal_error", NULL, "cannot start the committer");
        }
    }
    if (rc) {
        free(c);
        c = NULL;
    }
    *out = c;
    return rc;
}

/* See store.h. */
void store_committer_submit(struct store_committer *c, struct store_job *job)
{
    job->next = NULL;
    job->rc = 0;
    pthread_mutex_lock(&c->mu);
    if (c->stopped) {
        /* late (shutdown): alone, on this thread; the lock keeps the connection to one user */
        apply_and_tell(c->s, job);
        pthread_mutex_unlock(&c->mu);
        return;
    }
    *c->tail = job;
    c->tail = &job->next;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* See store.h. */
void store_committer_stop(struct store_committer *c)
{
    bool join;
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    join = !c->stopping;
    c->stopping = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (!join)
        return;
    pthread_join(c->thread, NULL);
}

/* See store.h. */
void store_committer_free(struct store_committer *c)
{
    if (!c)
        return;
    store_committer_stop(c);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    store_close(c->s);
    free(c);
}

/* See store.h. */
void store_group_apply(struct store *s, struct store_job *batch)
{
    group_apply(s, batch);
    if (s->ops->group_sync)
        s->ops->group_sync(s);
}

/* What a submitter waiting for its job (store_committer_run) waits on. */
struct waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static void waited_done(struct store_job *job, int rc)
{
    struct waiter *w = job->waiter;
    (void)rc;
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* See store.h. */
int store_committer_run(struct store_committer *c, struct store_job *job)
{
    struct waiter w;
    memset(&w, 0, sizeof(w));
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    job->done = waited_done;
    job->waiter = &w;
    store_committer_submit(c, job);
    pthread_mutex_lock(&w.mu);
    while (!w.done)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    return job->rc;
}

static int begin_apply(struct store *s, struct store_job *job)
{
    struct store_chat_begin_job *b = (struct store_chat_begin_job *)job;
    return chat_begin_in(s, b->t, b->in);
}

/* The committer is checkpointing (a chat's first writes would wait 2 to 4 ms for it) or gone. */
static bool committer_busy(struct store_committer *c)
{
    bool busy;
    pthread_mutex_lock(&c->mu);
    busy = c->maintaining || c->stopped;
    pthread_mutex_unlock(&c->mu);
    return busy;
}

/* See store.h. */
int store_chat_begin_committed(struct store_committer *c, struct store *s,
                               const struct store_tenant *t, const struct store_chat_begin *in)
{
    struct store_chat_begin_job b;
    if (committer_busy(c))
        return store_chat_begin(s, t, in);
    memset(&b, 0, sizeof(b));
    b.job.apply = begin_apply;
    b.job.lazy = true;
    b.t = t;
    b.in = in;
    return store_committer_run(c, &b.job);
}

/* See store.h. */
bool store_chat_begin_submit(struct store_committer *c, const struct store_tenant *t,
                             const struct store_chat_begin *in, struct store_chat_begin_job *b,
                             void (*done)(struct store_job *job, int rc))
{
    if (committer_busy(c))
        return false;
    memset(b, 0, sizeof(*b));
    b->job.apply = begin_apply;
    b->job.done = done;
    b->job.lazy = true;
    b->t = t;
    b->in = in;
    store_committer_submit(c, &b->job);
    return true;
}

/* ---- MCP servers ---- */

/* See store.h. */
int store_mcp_server_create(struct store *s, const struct store_tenant *t,
                            const struct store_mcp_server *in)
{
    return mcp_server_create(s, t, in);
}

/* See store.h. */
int store_mcp_server_get(struct store *s, const struct store_tenant *t, const char *id,
                         struct arena *a, struct store_mcp_server *out)
{
    return mcp_server_get(s, t, id, a, out);
}

/* See store.h. */
int store_mcp_server_find(struct store *s, const struct store_tenant *t, const char *name,
                          struct arena *a, struct store_mcp_server *out)
{
    return mcp_server_find(s, t, name, a, out);
}

/* See store.h. */
int store_mcp_servers_list(struct store *s, const struct store_tenant *t, unsigned limit,
                           int64_t before_created, const char *before_id, struct arena *a,
                           struct store_mcp_server_page *out)
{
    return mcp_servers_list(s, t, limit, before_created, before_id, a, out);
}

/* See store.h. */
int store_mcp_servers_enabled(struct store *s, const struct store_tenant *t, struct arena *a,
                              struct store_mcp_server **out, size_t *n)
{
    return mcp_servers_enabled(s, t, a, out, n);
}

/* See store.h. */
int store_mcp_server_update(struct store *s, const struct store_tenant *t,
                            const struct store_mcp_server *in, unsigned fields)
{
    return mcp_server_update(s, t, in, fields);
}

/* See store.h. */
int store_mcp_server_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    return mcp_server_delete(s, t, id);
}

/* ---- Events and outbound webhooks ---- */

/* See store.h. */
int store_hook_events_list(struct store *s, const struct store_tenant *t, const char *type,
                           unsigned limit, int64_t before_created, const char *before_id,
                           struct arena *a, struct store_hook_event_page *out)
{
    return hook_events_list(s, t, type, limit, before_created, before_id, a, out);
}

/* See store.h. */
int store_hook_event_get(struct store *s, const struct store_tenant *t, const char *id,
                         struct arena *a, struct store_hook_event *out)
{
    return hook_event_get(s, t, id, a, out);
}

/* See store.h. */
int store_hook_endpoint_create(struct store *s, const struct store_tenant *t,
                               const struct store_hook_endpoint *in, size_t max)
{
    return hook_endpoint_create(s, t, in, max);
}

/* See store.h. */
int store_hook_endpoint_get(struct store *s, const struct store_tenant *t, const char *id,
                            struct arena *a, struct store_hook_endpoint *out)
{
    return hook_endpoint_get(s, t, id, a, out);
}

/* See store.h. */
int store_hook_endpoints_list(struct store *s, const struct store_tenant *t, unsigned limit,
                              int64_t before_created, const char *before_id, struct arena *a,
                              struct store_hook_endpoint_page *out)
{
    return hook_endpoints_list(s, t, limit, before_created, before_id, a, out);
}

/* See store.h. */
int store_hook_endpoint_update(struct store *s, const struct store_tenant *t,
                               const struct store_hook_endpoint *in)
{
    return hook_endpoint_update(s, t, in);
}

/* See store.h. */
int store_hook_endpoint_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    return hook_endpoint_delete(s, t, id);
}

/* See store.h. */
int store_hook_deliveries_list(struct store *s, const struct store_tenant *t,
                               const char *endpoint_id, const char *event_id, unsigned limit,
                               int64_t before_created, const char *before_id, struct arena *a,
                               struct store_hook_delivery_page *out)
{
    return hook_deliveries_list(s, t, endpoint_id, event_id, limit, before_created, before_id, a,
                                out);
}

/* See store.h. */
int store_hook_redeliver(struct store *s, const struct store_tenant *t, const char *event_id,
                         const char *endpoint_id, int64_t now, size_t *n)
{
    return hook_redeliver(s, t, event_id, endpoint_id, now, n);
}

/* See store.h. */
int store_hook_recent_attempts(struct store *s, const struct store_tenant *t, const char *event_id,
                               const char *endpoint_id, int64_t since, int64_t now, int64_t *most,
                               int64_t *oldest)
{
    return hook_recent_attempts(s, t, event_id, endpoint_id, since, now, most, oldest);
}

/* See store.h. */
int store_hook_claim(struct store *s, int64_t now, int64_t lease_ms, struct arena *a,
                     struct store_hook_claim *out, int64_t *wake_at)
{
    return hook_claim(s, now, lease_ms, false, a, out, wake_at);
}

/* See store.h. */
int store_hook_claim_idle(struct store *s, int64_t now, int64_t lease_ms, struct arena *a,
                          struct store_hook_claim *out, int64_t *wake_at)
{
    return hook_claim(s, now, lease_ms, true, a, out, wake_at);
}

/* See store.h. */
int store_hook_attempted(struct store *s, const struct store_hook_attempt *in)
{
    return hook_attempted(s, in);
}

/* See store.h. */
int store_hook_purge(struct store *s, int64_t before)
{
    return hook_purge(s, before);
}

/* ---- People, sessions and the audit log: see store.h ---- */
int store_key_get(struct store *s, const char *org_id, const char *id, struct store_key *out)
{
    return keys_get(s, org_id, id, out);
}
int store_key_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
                   unsigned limit, struct arena *a, struct store_key **out, size_t *n, bool *more)
{
    return keys_page(s, org_id, before_t, before_id, limit, a, out, n, more);
}
int store_key_touch(struct store *s, const char *id, int64_t now)
{
    return keys_touch(s, id, now);
}
int store_user_create(struct store *s, const struct store_user *u, struct err *e)
{
    return users_create(s, u, e);
}
int store_user_get(struct store *s, const char *org_id, const char *id, struct store_user *out)
{
    return users_get(s, org_id, id, out);
}
int store_user_by_email(struct store *s, const char *email, struct store_user *out)
{
    return users_by_email(s, email, out);
}
int store_user_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
                    unsigned limit, struct arena *a, struct store_user **out, size_t *n, bool *more)
{
    return users_page(s, org_id, before_t, before_id, limit, a, out, n, more);
}
int store_user_update(struct store *s, const char *org_id, const char *id, const char *name,
                      int role, int status, int64_t now, struct store_user *out, struct err *e)
{
    return users_update(s, org_id, id, name, role, status, now, out, e);
}
int store_user_delete(struct store *s, const char *org_id, const char *id, struct err *e)
{
    return users_delete(s, org_id, id, e);
}
int store_user_password(struct store *s, const char *user_id, struct arena *a, const char **out)
{
    return users_password(s, user_id, a, out);
}
int store_user_password_set(struct store *s, const char *user_id, const char *encoded, int64_t now)
{
    return users_password_set(s, user_id, encoded, now);
}
int store_user_token_create(struct store *s, const char *user_id, const unsigned char hash[32],
                            int64_t expires_at)
{
    return users_token_create(s, user_id, hash, expires_at);
}
int store_user_token_use(struct store *s, const unsigned char hash[32], const char *encoded,
                         int64_t now, struct store_user *out)
{
    return users_token_use(s, hash, encoded, now, out);
}
int store_session_create(struct store *s, const unsigned char hash[32],
                         const struct store_session *ses, const char *user_id)
{
    return sessions_create(s, hash, ses, user_id);
}
int store_session_auth(struct store *s, const unsigned char hash[32], struct store_session *ses,
                       struct store_user *user, struct store_org *org)
{
    return sessions_auth(s, hash, ses, user, org);
}
int store_session_touch(struct store *s, const char *id, int64_t now)
{
    return sessions_touch(s, id, now);
}
int store_session_revoke(struct store *s, const char *id, int64_t now)
{
    return sessions_revoke(s, id, now);
}
int store_signin_failures(struct store *s, const char *email, const char *ip, int64_t since,
                          int64_t *n)
{
    return signin_failures(s, email, ip, since, n);
}
int store_signin_fail(struct store *s, const char *email, const char *ip, int64_t now,
                      int64_t forget_before)
{
    return signin_fail(s, email, ip, now, forget_before);
}
int store_signin_clear(struct store *s, const char *email, const char *ip)
{
    return signin_clear(s, email, ip);
}
void store_audit_arm(struct store *s, struct store_audit *a)
{
    s->audit = a;
}
int store_audit_add(struct store *s, const struct store_audit *a)
{
    return audit_insert(s, a);
}
int store_audit_list(struct store *s, const char *org_id, const struct store_audit_filter *f,
                     struct arena *a, struct store_audit **out, size_t *n, bool *more)
{
    return audit_list(s, org_id, f, a, out, n, more);
}
int store_audit_prune(struct store *s, int64_t before, int64_t *deleted)
{
    return audit_prune(s, before, deleted);
}
