/* SPDX-License-Identifier: MIT */
/*
 * store_int.h: what a backend implements. Each backend embeds struct store first and fills a
 * static struct store_ops; store.c's wrappers are the only callers of these pointers.
 */
#ifndef WORKFORCE_STORE_INT_H
#define WORKFORCE_STORE_INT_H

#include "driver.h"
#include "store.h"

struct store_ops {
    int version;
    const char *name;
    void (*close)(struct store *s);
    int (*migrate)(struct store *s, struct err *e);
    int (*ping)(struct store *s);
    /* A number that changes when another connection (of any process) commits. */
    int (*data_version)(struct store *s, int64_t *out);
    /* data_version is the same on every connection (PostgreSQL's WAL position), not one per
     * connection (SQLite's PRAGMA data_version). */
    bool shared_version;
    int (*backup)(struct store *s, const char *to);
    int (*chat_begin)(struct store *s, const struct store_tenant *t,
                      const struct store_chat_begin *in);
    /* One transaction for the jobs of 'batch', each in a savepoint; sets each job's rc. */
    void (*group_apply)(struct store *s, struct store_job *batch);
    /* Make what group_apply() committed durable (it commits without a flush). */
    void (*group_sync)(struct store *s);
    /* 's' is a committer's: it does the database's upkeep (maintain), the others less of it. */
    void (*own_checkpoints)(struct store *s);
    /* Upkeep off the request path (SQLite: checkpoint a long log); 'idle': no job is waiting
     * (else only what cannot wait is done). May be NULL. */
    void (*maintain)(struct store *s, bool idle);
    /* store_lock_try/_wait/_release() across nodes; NULL: one node, always held. */
    int (*lock)(struct store *s, int key, uint32_t sub, bool wait);
    void (*lock_release)(struct store *s, int key, uint32_t sub);
};

struct store {
    const struct store_ops *ops;
    const struct db_driver *drv; /* the operations written once (orgs.c, ...) run on it */
    int64_t seen_version;        /* data_version when store_generation() last looked */
    /* The audit context armed on this handle (store_audit_arm), or NULL; and the transaction
     * db_begin() opened (db.c writes the armed entry at its commit). */
    struct store_audit *audit;
    bool in_tx;
    bool tx_write;
};

/* The first 'max' (at least 1) jobs of the non-empty queue 'head'/'tail', as a list of their own;
 * the queue keeps the rest. */
struct store_job *store_jobs_take(struct store_job **head, struct store_job ***tail, size_t max);

/* Tests (store.c, fault injection): a driver asks this before each statement that does work
 * (prepare, step, begin, commit, savepoint); true: fail it with ERR_STORE without running it. */
bool store_fault(void);

/*
 * Tests: a build with -DSTORE_TEST_BROKEN_ROLLBACK has rollbacks that keep what they should
 * undo (a rollback commits, a rollback to a savepoint does nothing), so that the half-write test
 * (tests/unit/test_store_faults.c) can be seen to fail. 0 in every other build.
 */
#ifdef STORE_TEST_BROKEN_ROLLBACK
#define STORE_BROKEN_ROLLBACK 1
#else
#define STORE_BROKEN_ROLLBACK 0
#endif

/* A backend calls this after each commit of this process (store.c, store_generation()). */
void store_note_commit(void);
/* The backend reached the database ('ok'), or found it out of reach (store_unreachable()). */
void store_note_reachable(bool ok);

/* ---- The operations written once, over the driver (orgs.c, ...); each backend's ops table
 * points at them. Their contracts are those of the store.h wrappers of the same name. ---- */
int orgs_get_by_slug(struct store *s, const char *slug, struct store_org *out);
int orgs_get(struct store *s, const char *id, struct store_org *out);
/* The organization when there is exactly one; ERR_NOT_FOUND when none or several. */
int orgs_only(struct store *s, struct store_org *out);
int orgs_create(struct store *s, const char *slug, int tier, int64_t credits,
                const struct store_employee *seed, size_t nseed, struct store_org *out,
                struct err *e);
int orgs_update(struct store *s, const char *slug, int tier, int64_t credits,
                struct store_org *out);
/* Insert employee 'emp' of tenant 't' (its id and created_at set by the caller). */
int employees_insert(struct store *s, const struct store_tenant *t,
                     const struct store_employee *emp);
int employees_set_tier(struct store *s, const char *id, const char *tier);
int employees_list(struct store *s, const struct store_tenant *t, const struct store_emp_filter *f,
                   struct arena *a, struct store_emp_page *out);
int employees_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_employee *out);
int employees_update(struct store *s, const struct store_tenant *t, const char *id,
                     const struct store_employee *emp, unsigned fields, int64_t now);
int employees_summary(struct store *s, const struct store_tenant *t, const char *id,
                      int64_t day_start, struct store_emp_summary *out);
int employees_stats(struct store *s, const struct store_tenant *t, const char *id, int64_t from,
                    int64_t to, int64_t bucket_ms, size_t nbuckets, struct arena *a,
                    struct store_stats *out);
int employees_event_add(struct store *s, const struct store_tenant *t,
                        const struct store_event *ev);
int keys_create(struct store *s, const struct store_key *k);
int keys_find(struct store *s, const unsigned char hash[32], struct store_key *out);
int keys_auth(struct store *s, const unsigned char hash[32], struct store_key *key,
              struct store_org *org);
int keys_list(struct store *s, const char *org_id, struct arena *a, struct store_key **out,
              size_t *n);
int keys_revoke(struct store *s, const char *key_id, int64_t now);
int keys_get(struct store *s, const char *org_id, const char *id, struct store_key *out);
int keys_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
              unsigned limit, struct arena *a, struct store_key **out, size_t *n, bool *more);
int keys_touch(struct store *s, const char *id, int64_t now);

/* users.c: people, sessions and the audit log (see store.h for each). */
int users_create(struct store *s, const struct store_user *u, struct err *e);
int users_get(struct store *s, const char *org_id, const char *id, struct store_user *out);
int users_by_email(struct store *s, const char *email, struct store_user *out);
int users_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
               unsigned limit, struct arena *a, struct store_user **out, size_t *n, bool *more);
int users_update(struct store *s, const char *org_id, const char *id, const char *name, int role,
                 int status, int64_t now, struct store_user *out, struct err *e);
int users_delete(struct store *s, const char *org_id, const char *id, struct err *e);
int users_password(struct store *s, const char *user_id, struct arena *a, const char **out);
int users_password_set(struct store *s, const char *user_id, const char *encoded, int64_t now);
int users_token_create(struct store *s, const char *user_id, const unsigned char hash[32],
                       int64_t expires_at);
int users_token_use(struct store *s, const unsigned char hash[32], const char *encoded, int64_t now,
                    struct store_user *out);
int sessions_create(struct store *s, const unsigned char hash[32], const struct store_session *ses,
                    const char *user_id);
int sessions_auth(struct store *s, const unsigned char hash[32], struct store_session *ses,
                  struct store_user *user, struct store_org *org);
int sessions_touch(struct store *s, const char *id, int64_t now);
int sessions_revoke(struct store *s, const char *id, int64_t now);
int signin_failures(struct store *s, const char *email, const char *ip, int64_t since, int64_t *n);
int signin_fail(struct store *s, const char *email, const char *ip, int64_t now,
                int64_t forget_before);
int signin_clear(struct store *s, const char *email, const char *ip);
/* The organization columns (ORGS_COLS, prefixed by its alias) from column 'col' of a row. */
#define ORGS_COLS(o) o "id, " o "slug, " o "tier, " o "credits, " o "created_at, " o "test_credits"
void orgs_cols(struct db_stmt *st, int col, struct store_org *out);
/* The one writer of the audit log: entry 'a' in the current transaction (or alone). */
int audit_insert(struct store *s, const struct store_audit *a);
int audit_list(struct store *s, const char *org_id, const struct store_audit_filter *f,
               struct arena *a, struct store_audit **out, size_t *n, bool *more);
int audit_prune(struct store *s, int64_t before, int64_t *deleted);

/* Move employee 'employee_id''s count of work in hand by 'delta' (never below 0). */
int employees_busy(struct store *s, const struct store_tenant *t, const char *employee_id,
                   int delta);
/* ---- Balances (ledger.c): every change of an organization's credits, inside the caller's
 * write transaction, with its ledger entry. ---- */
enum credits_change {
    CREDITS_HOLD,   /* take 'amount' if the balance has it all, else ERR_LIMIT (nothing taken) */
    CREDITS_CHARGE, /* take 'amount', no more than the balance: it never goes below 0 (the rest
                       is the entry's shortfall) */
    CREDITS_ADD,    /* add 'amount': what was held given back, a purchase, a grant */
    CREDITS_SET,    /* the balance becomes 'amount' (the operator): a rise is the cause's
                       reason, a fall an adjustment */
};
/* What a change is for: its entry's reason, reference and employee. */
struct credits_cause {
    enum store_credit_reason reason;
    const char *ref_type, *ref_id; /* NULL: none */
    const char *employee_id;       /* work: whose (usage by employee); else NULL */
};
/* The one function that changes a balance, the one of mode t->mode: '*applied' is by how much
 * (0 when nothing). Writes the entry (and for work, its hour's usage sums) and the events
 * account.credits_added / account.credits_low it makes. */
int credits_apply(struct store *s, const struct store_tenant *t, enum credits_change change,
                  int64_t amount, const struct credits_cause *why, int64_t *applied);
/* A piece of work starts: hold 'n' credits, all or none ('*held'; not an error). */
int credits_hold(struct store *s, const struct store_tenant *t, int64_t n,
                 const struct credits_cause *why, bool *held);
/* A piece of work ends, priced 'price', with 'held' credits held at its start: the rest of the
 * price is taken up to the balance, or what was held beyond the price given back. '*charged'
 * is what the work cost in the end. */
int credits_settle(struct store *s, const struct store_tenant *t, int64_t held, int64_t price,
                   const struct credits_cause *why, int64_t *charged);
int conversations_busy(struct store *s, const struct store_tenant *t, const char *id, int64_t since,
                       bool *busy);
/* The balance of tenant 't' (its mode's) as it stands in the caller's transaction. */
int credits_balance(struct store *s, const struct store_tenant *t, int64_t *out);
/* Insert message 'm' as the next of its conversation (chat.c), in the caller's transaction. */
int chat_reply_store(struct store *s, const struct store_tenant *t, const struct store_message *m);
/* toolcalls.c: see store.h (store_tool_step_begin, store_tool_call_end, store_tool_calls_of). */
int tool_step_begin(struct store *s, const struct store_tenant *t, const struct store_tool_step *in,
                    int64_t *charged, int64_t *balance);
int tool_call_end(struct store *s, const struct store_tenant *t, const struct store_tool_call *c);
int tool_calls_of_message(struct store *s, const struct store_tenant *t, const char *message_id,
                          struct arena *a, struct store_tool_call **out, size_t *n);
int tool_call_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_tool_call *out);
int turns_answer(struct store *s, const struct store_tenant *t, const char *message_id,
                 const struct store_tool_call *ends, size_t n, const char *turn_state, bool reserve,
                 bool *taken);
/* approvals.c: see store.h (store_approval_*, store_turn_*, store_message_events*). */
int approval_insert(struct store *s, const struct store_tenant *t, const struct store_approval *p);
int approvals_list(struct store *s, const struct store_tenant *t,
                   const struct store_approval_filter *f, struct arena *a,
                   struct store_approval_page *out);
int approvals_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_approval *out);
int approvals_decide(struct store *s, const struct store_tenant *t,
                     const struct store_approval_decision *d, struct arena *a,
                     struct store_approval *out);
int approvals_due(struct store *s, int64_t now, size_t max, struct arena *a,
                  struct store_approval **out, struct store_tenant **tenants, size_t *n);
int turns_pause(struct store *s, const struct store_tenant *t, const struct store_turn_pause *in,
                bool *paused);
int turns_ready(struct store *s, size_t max, struct arena *a, struct store_turn_ref **out,
                size_t *n);
int turns_take(struct store *s, const struct store_tenant *t, const char *id, int64_t now,
               bool *taken);
int turns_load(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
               struct store_turn_saved *out);
int runs_turn_load(struct store *s, const struct store_tenant *t, const char *task_run_id,
                   const char *workflow_run_id, int64_t step_index, struct arena *a,
                   struct store_run_saved *out);
int message_events_add(struct store *s, const struct store_tenant *t, const char *message_id,
                       const struct store_events_chunk *ev);
int message_events_of(struct store *s, const struct store_tenant *t, const char *message_id,
                      int64_t after_seq, struct arena *a, struct store_events_chunk **out,
                      size_t *n);
int tool_calls_of(struct store *s, const struct store_tenant *t, const char *conversation_id,
                  int64_t from_seq, int64_t to_seq, size_t max, struct arena *a,
                  struct store_tool_call **out, size_t *n);
/* At most 'max' calls of the runs of task 'task_id' from (lo_started, lo_id) to (hi_started,
 * hi_id) in their order (a page of store_task_runs), newest run first, each run's in order. */
int tool_calls_of_task_runs(struct store *s, const struct store_tenant *t, const char *task_id,
                            int64_t lo_started, const char *lo_id, int64_t hi_started,
                            const char *hi_id, size_t max, struct arena *a,
                            struct store_tool_call **out, size_t *n);
/* At most 'max' calls of the steps of workflow run 'run_id', by step then call. */
int tool_calls_of_wf_run(struct store *s, const char *run_id, size_t max, struct arena *a,
                         struct store_tool_call **out, size_t *n);
/* The calls of task run 'task_run_id', or else of step 'step_index' of workflow run
 * 'workflow_run_id', by seq (at most STORE_RUN_CALLS_MAX). */
int tool_calls_of_run(struct store *s, const struct store_tenant *t, const char *task_run_id,
                      const char *workflow_run_id, int64_t step_index, struct arena *a,
                      struct store_tool_call **out, size_t *n);
int tool_calls_next(struct store *s, const char *run_id, int64_t step_index, int64_t *seq);
/* The writes of a chat's start / finished reply, inside the caller's transaction. */
int chat_begin_in(struct store *s, const struct store_tenant *t, const struct store_chat_begin *in);
int chat_finish_in(struct store *s, const struct store_tenant *t,
                   const struct store_chat_finish *in, int64_t *charged);
int chat_abort(struct store *s, const struct store_tenant *t, const char *employee_id,
               const char *reply_id, bool refund);
/* chat_begin_in() in a write transaction of its own. */
int chat_begin(struct store *s, const struct store_tenant *t, const struct store_chat_begin *in);
int conversations_get(struct store *s, const struct store_tenant *t, const char *id,
                      struct arena *a, struct store_conversation *out);
int conversations_list(struct store *s, const struct store_tenant *t,
                       const struct store_conv_filter *f, struct arena *a,
                       struct store_conv_page *out);
int conversations_delete(struct store *s, const struct store_tenant *t, const char *id);
int messages_list(struct store *s, const struct store_tenant *t, const char *conversation_id,
                  unsigned limit, struct arena *a, struct store_message **out, size_t *n);
int messages_page(struct store *s, const struct store_tenant *t, const char *conversation_id,
                  bool newest_first, int64_t from_seq, unsigned limit, struct arena *a,
                  struct store_message **out, size_t *n);
int messages_get(struct store *s, const struct store_tenant *t, const char *conversation_id,
                 const char *id, struct arena *a, struct store_message *out);
int feedback_set(struct store *s, const struct store_tenant *t, const struct store_message *msg,
                 int rating, const char *comment, int64_t now);
int idem_claim(struct store *s, const struct store_tenant *t, const char *key,
               const unsigned char fingerprint[32], int64_t now, int64_t max_age_ms,
               struct arena *a, struct store_idem *out);
int idem_complete(struct store *s, const struct store_tenant *t, const char *key, int status,
                  const char *content_type, const char *body, size_t len);
int idem_release(struct store *s, const struct store_tenant *t, const char *key);

/* nodes.c: 'dead_before': the oldest heartbeat of a live node. */
int nodes_start(struct store *s, int64_t now);
int nodes_beat(struct store *s, int64_t now);
int nodes_stop(struct store *s);
/* The rate limits every node shares, kept in the database (PostgreSQL only; ERR_STORE on
 * SQLite, whose one server keeps them in memory). */
int nodes_rate_enter(struct store *s, const struct store_rate_ask *ask, struct store_rate *out);
int nodes_rate_leave(struct store *s, const char *tenant, int64_t epoch);
int nodes_recover(struct store *s, int64_t now, int64_t dead_before, struct store_recovery *out);

/* ---- knowledge.c ---- */
int documents_create(struct store *s, const struct store_tenant *t, const struct store_document *d);
int documents_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_document *out);
int documents_list(struct store *s, const struct store_tenant *t, const struct store_doc_filter *f,
                   struct arena *a, struct store_doc_page *out);
int documents_delete(struct store *s, const struct store_tenant *t, const char *id);
/* The next document still processing after 'after_id', any tenant; a cursor, not a claim. */
int documents_next(struct store *s, const char *after_id, struct arena *a,
                   struct store_document *out);
int documents_progress(struct store *s, const char *id, int64_t chunks, int64_t embedded);
int documents_finish(struct store *s, const char *id, const struct store_chunk *chunks, size_t n,
                     const char *error);
/* Text search; 'fts_query' is FTS5 text (on PostgreSQL its terms, ORed: see knowledge.c). */
int chunks_search_text(struct store *s, const struct store_tenant *t, const char *fts_query,
                       const struct store_search_filter *f, unsigned limit, struct arena *a,
                       struct store_hit **out, size_t *n);
int chunks_search_vectors(struct store *s, const struct store_tenant *t, const float *q, size_t dim,
                          const struct store_search_filter *f, unsigned limit, struct arena *a,
                          struct store_hit **out, size_t *n);
int chunks_vectors_each(struct store *s, const struct store_tenant *t,
                        int (*fn)(void *ud, const struct store_vector_row *row), void *ud);
int chunks_hits_by_rowid(struct store *s, const int64_t *rowids, const double *scores, size_t n,
                         struct arena *a, struct store_hit **out, size_t *nout);
int chunks_stale(struct store *s, const char *model, int64_t after, unsigned limit, struct arena *a,
                 struct store_stale_chunk **out, size_t *n);
int chunks_set_vectors(struct store *s, const int64_t *rowids, size_t n, const float *vecs,
                       size_t dim, const char *model);

int knowledge_version(struct store *s, const struct store_tenant *t, int64_t *out);
int documents_claim(struct store *s, const char *id);

/* ---- tasks.c ---- */
int tasks_create(struct store *s, const struct store_tenant *t, const struct store_task *k);
int tasks_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
              struct store_task *out);
int tasks_list(struct store *s, const struct store_tenant *t, const struct store_task_filter *f,
               struct arena *a, struct store_task_page *out);
int tasks_update(struct store *s, const struct store_tenant *t, const struct store_task *k,
                 const char *old_status, const char *old_run_id, bool cancel_run, int64_t now);
int tasks_delete(struct store *s, const struct store_tenant *t, const char *id);
int tasks_runs(struct store *s, const struct store_tenant *t, const char *task_id, unsigned limit,
               int64_t before_started, const char *before_id, struct arena *a,
               struct store_run_page *out);
int tasks_claim(struct store *s, int64_t now, const struct store_queue_rules *rules, bool idle_only,
                struct arena *a, struct store_claim *out, int64_t *wake_at);
int tasks_finish(struct store *s, const struct store_task_finish *in, int64_t *charged,
                 bool *discarded);
/* Inside the caller's write transaction: the task runs in progress and the workflow steps in
 * flight of every node but 'self' ("": none) and those that beat since 'dead_before' end
 * (runs failed, uncharged, their tasks pending again, or, for a run that had gone on after
 * waiting for approvals, waiting again; steps ready again); '*n' runs, '*steps'. */
int tasks_take_back(struct store *s, const char *self, int64_t now, int64_t dead_before, size_t *n,
                    size_t *steps);
/* Insert run 'r' of tenant 't' (queued, its steps pending, ready at its created_at) and count it
 * in its workflow; inside the caller's write transaction. ERR_NOT_FOUND: the workflow is gone. */
int wf_runs_insert(struct store *s, const struct store_tenant *t, const struct store_wf_run *r);
/* Point run 'run_id' at its step 'idx', ready at 'ready_at' and free to claim (no lease); held
 * while that step's employee is offline. Inside the caller's write transaction. */
int wf_runs_to_step(struct store *s, const char *run_id, int64_t idx, int64_t ready_at);

/* ---- workflows.c ---- */

/* The columns of a workflow, and their reader (store_workflow, from the arena 'a'). */
#define WF_COLS                                                                                    \
    "id, name, description, trigger_type, trigger, steps, webhook_token, recurring,"               \
    " coalesce(next_run_at, 0), enabled, run_count, coalesce(last_run_at, 0), created_at,"         \
    " updated_at, org_id, mode"
void workflows_read(struct db_stmt *st, struct arena *a, void *pout);
int workflows_create(struct store *s, const struct store_tenant *t, const struct store_workflow *w);
int workflows_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_workflow *out);
int workflows_by_token(struct store *s, const char *token, struct arena *a,
                       struct store_workflow *out);
int workflows_list(struct store *s, const struct store_tenant *t, unsigned limit,
                   int64_t before_created, const char *before_id, struct arena *a,
                   struct store_workflow_page *out);
int workflows_update(struct store *s, const struct store_tenant *t, const struct store_workflow *w);
int workflows_delete(struct store *s, const struct store_tenant *t, const char *id);
int workflow_runs_create(struct store *s, const struct store_tenant *t,
                         const struct store_wf_run *r, struct arena *a, struct store_wf_run *out);
int workflow_runs_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                      const char *run_id, struct arena *a, struct store_wf_run *out);
int workflow_runs_list(struct store *s, const struct store_tenant *t, const char *workflow_id,
                       unsigned limit, int64_t before_created, const char *before_id,
                       struct arena *a, struct store_wf_run_page *out);
int workflow_runs_cancel(struct store *s, const struct store_tenant *t, const char *workflow_id,
                         const char *run_id, int64_t now);
int workflow_steps_finish(struct store *s, const struct store_step_finish *in, int64_t *charged,
                          bool *discarded);
/* Run 'run_id' of 't', just queued, is refused at its start with 'error': failed at 'now' as a
 * run whose first step failed with 'error' before any attempt (its other steps cancelled), its
 * end recorded as an event. */
int wf_runs_refuse(struct store *s, const struct store_tenant *t, const char *run_id,
                   const char *error, int64_t now);

/* ---- integrations.c ---- */
int integrations_get(struct store *s, const struct store_tenant *t, const char *provider,
                     struct arena *a, struct store_integration *out);
int integrations_put(struct store *s, const struct store_tenant *t,
                     const struct store_integration *in);
int integrations_delete(struct store *s, const struct store_tenant *t, const char *provider);
int oauth_states_create(struct store *s, const struct store_oauth_state *in);
int oauth_states_take(struct store *s, const char *state_hash, const char *provider, int64_t now,
                      struct arena *a, struct store_oauth_state *out);
int oauth_states_peek(struct store *s, const char *state_hash, const char *provider, int64_t now,
                      struct arena *a, struct store_oauth_state *out);
int oauth_states_start(struct store *s, const char *state_hash, const char *provider, int64_t now,
                       const char *binding_hash);
int oauth_states_open(struct store *s, const struct store_tenant *t, const char *provider,
                      int64_t now, bool *open);
int integrations_tenants(struct store *s, const char *provider, const char *account_key,
                         struct store_tenant *out, size_t max, size_t *n);
int inbound_get(struct store *s, const struct store_tenant *t, const char *provider,
                const char *fresh, struct arena *a, struct store_inbound *out);
int inbound_rotate(struct store *s, const struct store_tenant *t, const char *provider,
                   const char *fresh);
int inbound_secret(struct store *s, const struct store_tenant *t, const char *provider,
                   const char *fresh, const unsigned char *secret, size_t len);
int events_tenant(struct store *s, const char *provider, const char *token,
                  struct store_tenant *out);
int deliveries_note(struct store *s, const struct store_tenant *t, const char *provider,
                    const char *id, int64_t now, int64_t window_ms, bool *first);
int workflows_for_event(struct store *s, const struct store_tenant *t, const char *event,
                        struct arena *a, struct store_workflow **out, size_t *n);

/* ---- mcp_servers.c ---- */
int mcp_server_create(struct store *s, const struct store_tenant *t,
                      const struct store_mcp_server *in);
int mcp_server_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                   struct store_mcp_server *out);
int mcp_server_find(struct store *s, const struct store_tenant *t, const char *name,
                    struct arena *a, struct store_mcp_server *out);
int mcp_servers_list(struct store *s, const struct store_tenant *t, unsigned limit,
                     int64_t before_created, const char *before_id, struct arena *a,
                     struct store_mcp_server_page *out);
int mcp_servers_enabled(struct store *s, const struct store_tenant *t, struct arena *a,
                        struct store_mcp_server **out, size_t *n);
int mcp_server_update(struct store *s, const struct store_tenant *t,
                      const struct store_mcp_server *in, unsigned fields);
int mcp_server_delete(struct store *s, const struct store_tenant *t, const char *id);

/* ---- events.c ---- */
/* Record event 'type' reporting 'obj' (rendered now) of tenant 't', and its deliveries; inside
 * the caller's write transaction. */
int hook_record(struct store *s, const struct store_tenant *t, const char *type,
                enum store_hook_kind kind, const void *obj, int64_t now);
/* The events of a change, inside its write transaction (no-ops in a process that records none):
 * task 'task_id' ended ('ok': task.completed, else task.failed); run 'run_id' ended, if it has
 * (workflow_run.completed or .failed); document 'id' is ready or failed. */
int hook_task(struct store *s, const struct store_tenant *t, const char *task_id, bool ok,
              int64_t now);
int hook_run_ended(struct store *s, const struct store_tenant *t, const char *run_id, int64_t now);
int hook_document(struct store *s, const char *id, int64_t now);
/* After each commit of this process (store_note_commit()): wakes the delivery worker when this
 * thread recorded events. */
void hook_note_commit(void);
int hook_events_list(struct store *s, const struct store_tenant *t, const char *type,
                     unsigned limit, int64_t before_created, const char *before_id, struct arena *a,
                     struct store_hook_event_page *out);
int hook_event_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                   struct store_hook_event *out);
int hook_endpoint_create(struct store *s, const struct store_tenant *t,
                         const struct store_hook_endpoint *in, size_t max);
int hook_endpoint_get(struct store *s, const struct store_tenant *t, const char *id,
                      struct arena *a, struct store_hook_endpoint *out);
int hook_endpoints_list(struct store *s, const struct store_tenant *t, unsigned limit,
                        int64_t before_created, const char *before_id, struct arena *a,
                        struct store_hook_endpoint_page *out);
int hook_endpoint_update(struct store *s, const struct store_tenant *t,
                         const struct store_hook_endpoint *in);
int hook_endpoint_delete(struct store *s, const struct store_tenant *t, const char *id);
int hook_deliveries_list(struct store *s, const struct store_tenant *t, const char *endpoint_id,
                         const char *event_id, unsigned limit, int64_t before_created,
                         const char *before_id, struct arena *a,
                         struct store_hook_delivery_page *out);
int hook_redeliver(struct store *s, const struct store_tenant *t, const char *event_id,
                   const char *endpoint_id, int64_t now, size_t *n);
int hook_recent_attempts(struct store *s, const struct store_tenant *t, const char *event_id,
                         const char *endpoint_id, int64_t since, int64_t now, int64_t *most,
                         int64_t *oldest);
int hook_claim(struct store *s, int64_t now, int64_t lease_ms, bool idle_only, struct arena *a,
               struct store_hook_claim *out, int64_t *wake_at);
int hook_attempted(struct store *s, const struct store_hook_attempt *in);
int hook_purge(struct store *s, int64_t before);
/* workflows.c: run 'run_id' of the tenant with its steps, inside the caller's transaction. */
int wf_run_read(struct store *s, const struct store_tenant *t, const char *run_id, struct arena *a,
                struct store_wf_run *out);

int store_sqlite_open(const char *path, struct store **out, struct err *e);
/* A connection to the PostgreSQL database of 'url' (postgres://...); '*out' is the caller's
 * (store_close()). Until its operations are written, only close, ping and the driver work. */
int store_pg_open(const char *url, struct store **out, struct err *e);

#endif
