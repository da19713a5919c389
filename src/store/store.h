/* SPDX-License-Identifier: MIT */
/*
 * store: the one interface to persistent state. Handlers and commands call only these
 * functions; a backend (sqlite.c now, postgres.c later) implements struct store_ops behind
 * them. Every tenant-owned operation takes a struct store_tenant and scopes its query by it.
 *
 * Ownership: rows read are allocated from the struct arena passed in and die with it. A
 * struct store handle belongs to one thread at a time; take one from a store_pool.
 */
#ifndef WORKFORCE_STORE_H
#define WORKFORCE_STORE_H

#include "../core/err.h"
#include "../core/id.h"
#include "../core/mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;
struct store_pool;

enum store_mode { STORE_LIVE = 0, STORE_TEST = 1 };

struct store_tenant {
    char org_id[ID_MAX];
    enum store_mode mode;
};

struct store_org {
    char id[ID_MAX];
    char slug[64];
    int tier;             /* enum config_tier */
    int64_t credits;      /* the live balance */
    int64_t test_credits; /* the test balance: test-mode purchases only (test mode is free) */
    int64_t created_at;
};

struct store_key {
    char id[ID_MAX];
    char org_id[ID_MAX];
    enum store_mode mode;
    unsigned char hash[32];
    char last4[5];
    char scopes[256]; /* comma-separated, "" for full access */
    int64_t created_at;
    int64_t expires_at;      /* 0: never */
    int64_t revoked_at;      /* 0: active */
    char name[128];          /* "" for keys made on the command line */
    char created_by[ID_MAX]; /* the user who made it from the API; "" the command line */
    int64_t last_used_at;    /* 0: never (updated at most once a minute) */
};

enum store_emp_status { STORE_EMP_IDLE, STORE_EMP_ACTIVE, STORE_EMP_OFFLINE };

struct store_employee {
    const char *id;
    const char *name;
    const char *role;
    const char *category;
    const char *tier;
    const char *capabilities; /* JSON array text */
    const char *description;
    const char *instructions;
    const char *model; /* NULL: the default model */
    /* The tool rules, a JSON array of {name, policy} (tools/rules.c); NULL when creating:
     * STORE_EMP_TOOLS_DEFAULT */
    const char *tools;
    enum store_emp_status status;
    int64_t created_at;
    int64_t updated_at;
};

/* Which fields of a struct store_employee an update sets. */
enum store_emp_field {
    STORE_EMP_NAME = 1 << 0,
    STORE_EMP_ROLE = 1 << 1,
    STORE_EMP_CATEGORY = 1 << 2,
    STORE_EMP_TIER = 1 << 3,
    STORE_EMP_CAPABILITIES = 1 << 4,
    STORE_EMP_DESCRIPTION = 1 << 5,
    STORE_EMP_INSTRUCTIONS = 1 << 6,
    STORE_EMP_MODEL = 1 << 7,
    STORE_EMP_STATUS = 1 << 8, /* only idle or offline */
    STORE_EMP_TOOLS = 1 << 9
};

/* The tool rules of a new employee, and of every employee made before rules existed
 * (migration 16): the knowledge search, run without approval. */
#define STORE_EMP_TOOLS_DEFAULT "[{\"name\":\"knowledge.search\",\"policy\":\"auto\"}]"

struct store_emp_filter {
    const char *category; /* NULL: any */
    int status;           /* -1: any, else enum store_emp_status */
    unsigned limit;
    const char *after_name; /* keyset cursor, both NULL for the first page */
    const char *after_id;
};

struct store_emp_page {
    struct store_employee *items;
    size_t n;
    int64_t total;
    bool has_more;
};

struct store_emp_summary {
    int64_t tasks_completed_today;
    int64_t avg_response_ms;
    double satisfaction; /* valid when has_rating */
    bool has_rating;
};

struct store_stats_bucket {
    int64_t start;
    int64_t messages;
    int64_t tasks_completed;
    int64_t credits;
};

struct store_stats {
    int64_t messages, conversations, tasks_completed, tasks_failed, workflow_steps;
    int64_t avg_response_ms, p95_response_ms, credits, ratings;
    double satisfaction; /* valid when ratings > 0 */
    struct store_stats_bucket *series;
    size_t nseries;
};

/* ---- Lifecycle ---- */
int store_open(const char *url, struct store **out, struct err *e); /* one connection */
void store_close(struct store *s);                                  /* NULL is a no-op */
int store_migrate(struct store *s, struct err *e);                  /* idempotent */
int store_ping(struct store *s);                                    /* 0 when it answers */
/*
 * Group commit. A job is a write that must be durable before its owner answers anyone: 'apply'
 * makes its changes inside a transaction shared with the other jobs waiting (each in a savepoint
 * of its own, so a job that fails is undone alone), and 'done' is called once that transaction
 * is committed (rc 0) or rolled back (rc), on the committer's thread. The job is the caller's
 * until 'done' is called; 'rc', 'next' and 'waiter' are the committer's.
 */
struct store_job {
    int (*apply)(struct store *s, struct store_job *job);
    void (*done)(struct store_job *job, int rc);
    bool lazy; /* told once committed, before the flush (what SQLite's synchronous=NORMAL gives) */
    int rc;
    struct store_job *next;
    void *waiter; /* store_committer_run's */
};
struct store_committer;
/* A committer with its own connection to 'url' and its own thread; '*out' is the caller's
 * (store_committer_free()). */
int store_committer_new(const char *url, struct store_committer **out, struct err *e);
/* Queue 'job'; it is applied with the jobs waiting with it, in one transaction and one fsync. */
void store_committer_submit(struct store_committer *c, struct store_job *job);
/* Submit 'job' (its 'done' is set here) and wait for it; its rc. */
int store_committer_run(struct store_committer *c, struct store_job *job);
/* Apply and answer what is queued and stop the thread; a job submitted later is applied on the
 * submitting thread, alone. NULL or a second call is a no-op. */
void store_committer_stop(struct store_committer *c);
/* Stop (as above) and close; NULL is a no-op. No submit may come after. */
void store_committer_free(struct store_committer *c);
/* Apply the jobs of the list 'batch' in one transaction on 's' and make it durable (sets each
 * job's rc; calls no 'done'). */
void store_group_apply(struct store *s, struct store_job *batch);
struct store_chat_begin;
/* store_chat_begin() as a lazy job of the committer, waited for: the chat's first writes join
 * the writes waiting (and the committer's pages stay warm: it writes every chat's rows). While
 * the committer checkpoints, the writes are made on 's' (the caller's) instead. */
int store_chat_begin_committed(struct store_committer *c, struct store *s,
                               const struct store_tenant *t, const struct store_chat_begin *in);
/* The job of store_chat_begin_submit(); the caller's until its 'done'. */
struct store_chat_begin_job {
    struct store_job job;
    const struct store_tenant *t;
    const struct store_chat_begin *in;
};
/*
 * store_chat_begin() as a lazy job of the committer, not waited for: 'done' is called on the
 * committer's thread once the writes are committed (rc 0) or undone (ERR_LIMIT: no credit left;
 * another rc: they failed). Returns false and submits nothing while the committer checkpoints
 * or has stopped; the caller then writes with store_chat_begin(). 't' and 'in' must live until
 * 'done' is called.
 */
bool store_chat_begin_submit(struct store_committer *c, const struct store_tenant *t,
                             const struct store_chat_begin *in, struct store_chat_begin_job *b,
                             void (*done)(struct store_job *job, int rc));

/* True while the database does not answer: the last attempt to reach it (PostgreSQL) failed
 * for want of a connection, and none has succeeded since. A request that failed then is told
 * 503 service_unavailable rather than 500 (api_error_respond). */
bool store_unreachable(void);

/* A number that differs from an earlier one whenever the data may have changed since (a commit
 * of this process, or one seen through 's' from another); see store.c. */
uint64_t store_generation(struct store *s);
/* Work that one node at a time does, whichever node (held by store_lock_try/_wait). */
enum store_lock {
    STORE_LOCK_REEMBED = 1, /* embedding again the chunks of another model */
    STORE_LOCK_REFRESH = 2, /* refreshing one integration's token ('sub': which one) */
};
/* Hold 'lock' ('sub' tells apart the locks of one kind) on the connection of 's' (0), or not
 * (ERR_CONFLICT: another node holds it); store_lock_wait() waits for it instead. On SQLite, with
 * one server, always held at once. Give it back with store_lock_release(). */
int store_lock_try(struct store *s, enum store_lock lock, uint32_t sub);
int store_lock_wait(struct store *s, enum store_lock lock, uint32_t sub);
void store_lock_release(struct store *s, enum store_lock lock, uint32_t sub);

/* What store_nodes_recover() took back from dead nodes. */
struct store_recovery {
    size_t nodes;     /* dead nodes forgotten */
    size_t busy;      /* employees' work they held (chats in flight) */
    size_t requests;  /* Idempotency-Key requests they had in flight, free to be sent again */
    size_t runs;      /* task runs they had in progress: failed, uncharged, their tasks queued */
    size_t steps;     /* workflow steps they had in flight: ready again */
    size_t documents; /* documents they were processing: free for another node */
    size_t turns;     /* chat turns they ran: free for another node to go on with */
};
/* Register this process as a node (store_node_id()), alive as of 'now'. */
int store_node_start(struct store *s, int64_t now);
/* This node is alive at 'now'; ERR_NOT_FOUND when another node has already declared it dead
 * (and taken its work back). */
int store_node_beat(struct store *s, int64_t now);
/* Take back the work of every node whose heartbeat is older than 'lease_ms'; 'starting': this
 * process is starting, and on SQLite (one server at a time) every earlier node is then dead. */
int store_nodes_recover(struct store *s, int64_t now, int64_t lease_ms, bool starting,
                        struct store_recovery *out);
/* This node leaves (a clean stop, after its work): what it left unfinished is taken back by the
 * other nodes at their next look, without waiting for the lease. */
int store_node_stop(struct store *s);
/* This process's node id ("node_" and 24 random characters), made at first use; the work this
 * process holds is recorded under it. */
const char *store_node_id(void);

/* One request to admit under the rate limits every node shares (contract §4), kept in the
 * database when no Redis is configured (src/ratelimit: the caller). */
struct store_rate_ask {
    const char *tenant; /* organization and key mode */
    int64_t epoch;      /* this node's epoch: a new one after it lost the database */
    int64_t per_minute, burst, concurrent;
    int64_t now_ms;
    int64_t lease_ms; /* a node silent this long no longer holds requests in flight */
};
struct store_rate {
    int verdict; /* 0 admitted, 1 over the rate, 2 over the concurrency */
    int64_t remaining, reset_s, retry_after;
};
/* Admit one request, or refuse it taking nothing: 0 and '*out', or ERR_STORE when the
 * database cannot tell (unreachable, or SQLite, which keeps no shared limits). */
int store_rate_enter(struct store *s, const struct store_rate_ask *ask, struct store_rate *out);
/* End a request store_rate_enter() admitted under 'epoch'. */
int store_rate_leave(struct store *s, const char *tenant, int64_t epoch);

/* Up to 'n' connections, opened when first needed (the first at once). */
int store_pool_new(const char *url, unsigned n, struct store_pool **out, struct err *e);
void store_pool_free(struct store_pool *p);
struct store *store_pool_get(struct store_pool *p); /* blocks until a handle is free */
void store_pool_put(struct store_pool *p, struct store *s);

/* ---- Organizations and keys ---- */
int store_org_get_by_slug(struct store *s, const char *slug, struct store_org *out);
int store_org_get(struct store *s, const char *id, struct store_org *out);
/* The organization when there is exactly one (OIDC sign-up's default); ERR_NOT_FOUND else. */
int store_org_only(struct store *s, struct store_org *out);
/* Create an org and give both of its modes the 'seed' employees, in one transaction. */
int store_org_create(struct store *s, const char *slug, int tier, int64_t credits,
                     const struct store_employee *seed, size_t nseed, struct store_org *out,
                     struct err *e);
/* Set tier (when 'tier' >= 0) and credits (when 'credits' >= 0). */
int store_org_update(struct store *s, const char *slug, int tier, int64_t credits,
                     struct store_org *out);
/* A consistent copy of the database, made while it is in use, into the new file 'to'. */
int store_backup(struct store *s, const char *to);
/* Check a SQLite database file read-only: sound, its whole schema the one of its recorded
 * version (none more, none missing); its version and row counts. */
int store_sqlite_check_file(const char *path, int64_t *version, int64_t counts[5], struct err *e);
/* The same checks of the schema alone (no integrity check, no counts). */
int store_sqlite_check_schema(const char *path, int64_t *version, struct err *e);
int64_t store_sqlite_schema_version(void); /* the version this build migrates to */
/* The operator sets an employee's tier ("starter" or "manager"); never the API. */
int store_employee_set_tier(struct store *s, const char *id, const char *tier);
int store_key_create(struct store *s, const struct store_key *k);
int store_key_find(struct store *s, const unsigned char hash[32], struct store_key *out);
/* The key with keyed hash 'hash' and its organization, in one read. ERR_NOT_FOUND if none. */
int store_key_auth(struct store *s, const unsigned char hash[32], struct store_key *key,
                   struct store_org *org);
int store_key_list(struct store *s, const char *org_id, struct arena *a, struct store_key **out,
                   size_t *n);
int store_key_revoke(struct store *s, const char *key_id, int64_t now);
/* One key of 'org_id' (NULL: of any organization; revoked ones too); ERR_NOT_FOUND when absent
 * or another's. */
int store_key_get(struct store *s, const char *org_id, const char *id, struct store_key *out);
/* The organization's keys not revoked, newest first, 'limit' after the cursor (before_t,
 * before_id; 0/NULL: from the newest); '*more' when there are further ones. */
int store_key_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
                   unsigned limit, struct arena *a, struct store_key **out, size_t *n, bool *more);
/* Record that key 'id' was used at 'now'. */
int store_key_touch(struct store *s, const char *id, int64_t now);

/* ---- People, their sessions and the audit log (contract §20) ---- */

/* Ranked: a role may do what every role below it may. */
enum store_role {
    STORE_ROLE_VIEWER,
    STORE_ROLE_MEMBER,
    STORE_ROLE_DEVELOPER,
    STORE_ROLE_ADMIN,
    STORE_ROLE_OWNER,
    STORE_ROLE_COUNT
};
const char *store_role_name(int role);       /* "viewer" ... "owner" */
int store_role_parse(const char *name);      /* -1 when none */
extern const char *const store_role_names[]; /* NULL-terminated, in rank order */

enum store_user_status { STORE_USER_ACTIVE, STORE_USER_DISABLED };

struct store_user {
    char id[ID_MAX];
    char org_id[ID_MAX];
    char email[256]; /* lower case */
    char name[128];
    int role;   /* enum store_role */
    int status; /* enum store_user_status */
    bool has_password;
    int64_t created_at;
    int64_t updated_at;
    int64_t last_login_at; /* 0: never */
};

/* Insert 'u' (id, org, email, role, times set); 409 user_exists when its email is taken. */
int store_user_create(struct store *s, const struct store_user *u, struct err *e);
/* The user 'id' of 'org_id'; ERR_NOT_FOUND when absent or another organization's. */
int store_user_get(struct store *s, const char *org_id, const char *id, struct store_user *out);
/* The user with 'email' (lower case), in any organization; ERR_NOT_FOUND when none. */
int store_user_by_email(struct store *s, const char *email, struct store_user *out);
/* The users of 'org_id', newest first, as store_key_page(). */
int store_user_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
                    unsigned limit, struct arena *a, struct store_user **out, size_t *n,
                    bool *more);
/* Change user 'id' of 'org_id': its name (NULL: kept), role and status (-1: kept). A change that
 * would leave the organization without an active owner is 409 last_owner; disabling a user
 * revokes its sessions. '*out' is the user after. */
int store_user_update(struct store *s, const char *org_id, const char *id, const char *name,
                      int role, int status, int64_t now, struct store_user *out, struct err *e);
/* Delete user 'id' of 'org_id' with its sessions and tokens; 409 last_owner for the last active
 * owner. */
int store_user_delete(struct store *s, const char *org_id, const char *id, struct err *e);
/* The argon2id encoding of the user's password, or NULL (none set), from 'a'. */
int store_user_password(struct store *s, const char *user_id, struct arena *a, const char **out);
/* Set the user's password encoding and revoke every session of the user. */
int store_user_password_set(struct store *s, const char *user_id, const char *encoded, int64_t now);
/* Keep a set-password token (its keyed hash) for 'user_id' until 'expires_at'. */
int store_user_token_create(struct store *s, const char *user_id, const unsigned char hash[32],
                            int64_t expires_at);
/* Use up the token whose hash is 'hash' and set the password of its user (sessions revoked), in
 * one transaction; ERR_NOT_FOUND when it is unknown, used or expired. '*out': the user. */
int store_user_token_use(struct store *s, const unsigned char hash[32], const char *encoded,
                         int64_t now, struct store_user *out);

struct store_session {
    char id[ID_MAX];
    char method[16]; /* "password" | "oidc" */
    int64_t created_at;
    int64_t seen_at;
    int64_t expires_at; /* absolute */
    int64_t revoked_at; /* 0: live */
};
/* Keep a new session (its keyed hash) of user 'user_id' and record the sign-in time. */
int store_session_create(struct store *s, const unsigned char hash[32],
                         const struct store_session *ses, const char *user_id);
/* The session with 'hash', its user and the user's organization, in one read. */
int store_session_auth(struct store *s, const unsigned char hash[32], struct store_session *ses,
                       struct store_user *user, struct store_org *org);
int store_session_touch(struct store *s, const char *id, int64_t now);
int store_session_revoke(struct store *s, const char *id, int64_t now);

/* Failed sign-ins of the pair (email, ip) since 'since'. */
int store_signin_failures(struct store *s, const char *email, const char *ip, int64_t since,
                          int64_t *n);
/* Record one failed sign-in (and forget the pair's failures older than 'forget_before'). */
int store_signin_fail(struct store *s, const char *email, const char *ip, int64_t now,
                      int64_t forget_before);
/* Forget the pair's failures (a sign-in succeeded). */
int store_signin_clear(struct store *s, const char *email, const char *ip);

enum store_actor {
    STORE_ACTOR_USER,
    STORE_ACTOR_API_KEY,
    STORE_ACTOR_CLI,
    STORE_ACTOR_EMPLOYEE,
    STORE_ACTOR_STRIPE,
    STORE_ACTOR_SYSTEM
};
extern const char *const store_actor_names[]; /* NULL-terminated */

/* One entry of the audit log, or the context of one: the texts are borrowed. */
struct store_audit {
    struct store_tenant tenant;
    int actor_type; /* enum store_actor */
    const char *actor_id;
    const char *actor_label;
    const char *action; /* "workflow.update" */
    const char *target_type;
    const char *target_id; /* NULL: none (or not known before the change: see below) */
    const char *ip;
    const char *user_agent;
    const char *request_id;
    int64_t created_at; /* read back; 0 when writing: now */
    const char *id;     /* read back */
    bool written;       /* the armed context wrote its entry */
};
/*
 * Arm 'a' on handle 's' (NULL disarms): the first write transaction committed on 's' while it
 * is armed writes the entry 'a' in that transaction (a single write statement outside a
 * transaction is given one), and sets a->written. 'a' must outlive the arming.
 */
void store_audit_arm(struct store *s, struct store_audit *a);
/* Write entry 'a' now (in the caller's transaction when one is open). */
int store_audit_add(struct store *s, const struct store_audit *a);
struct store_audit_filter {
    const char *actor_id, *action, *target_id; /* NULL: any */
    int64_t since;                             /* 0: any */
    int64_t before_t;
    const char *before_id;
    unsigned limit;
};
/* The entries of 'org_id' (both modes), newest first. */
int store_audit_list(struct store *s, const char *org_id, const struct store_audit_filter *f,
                     struct arena *a, struct store_audit **out, size_t *n, bool *more);
/* Delete the entries older than 'before' (the retention; the only deletion there is). */
int store_audit_prune(struct store *s, int64_t before, int64_t *deleted);

/* ---- The ledger and payments (contract §21; ledger.c, billing.c) ---- */

/* Why a balance changed: the entry's reason. */
enum store_credit_reason {
    STORE_CREDIT_PURCHASE,
    STORE_CREDIT_REFUND,
    STORE_CREDIT_DISPUTE,
    STORE_CREDIT_CHAT,
    STORE_CREDIT_TASK_RUN,
    STORE_CREDIT_WORKFLOW_STEP,
    STORE_CREDIT_GRANT,
    STORE_CREDIT_ADJUSTMENT,
    STORE_CREDIT_REASONS
};
/* Their names as the API shows them, in the order of the enumeration (NULL-terminated). */
extern const char *const store_credit_reasons[];
/* The reason named 'name', or -1. */
int store_credit_reason_of(const char *name);

/* One entry of the ledger. Strings are the arena's when read. */
struct store_credit_tx {
    char id[ID_MAX];
    struct store_tenant tenant;
    int64_t amount;        /* what changed: negative when taken */
    int64_t balance_after; /* never below 0 */
    int64_t shortfall;     /* what could not be taken because the balance met 0 */
    enum store_credit_reason reason;
    const char *ref_type, *ref_id; /* what it is for (NULL: nothing named) */
    const char *employee_id;       /* the work's employee, or NULL */
    int64_t created_at;
};
struct store_credit_filter {
    int reason;    /* -1: any */
    int64_t since; /* ms; 0: any */
    int64_t before_t;
    const char *before_id;
    unsigned limit;
};
/* The entries of tenant 't', newest first ('*more': there are further ones). */
int store_credit_list(struct store *s, const struct store_tenant *t,
                      const struct store_credit_filter *f, struct arena *a,
                      struct store_credit_tx **out, size_t *n, bool *more);
/* The credits spent by work (chat, task runs, workflow steps) and the count of their entries
 * since 'from' (ms: the start of an hour within the last 48, else of a day), by UTC day
 * ("YYYY-MM-DD", ascending) or by employee (most credits first). */
struct store_usage_item {
    const char *key;
    int64_t credits, count;
};
int store_credit_usage(struct store *s, const struct store_tenant *t, int64_t from,
                       bool by_employee, struct arena *a, struct store_usage_item **out, size_t *n);
/* Fold the usage sums of the hours of days that ended more than a day before 'now' into one
 * row per day ('*folded': the hourly rows folded); the keeper's, once an hour (a no-op until
 * the next day). Usage of periods longer than 24 h starts at a day's start. */
int store_credit_usage_compact(struct store *s, int64_t now, int64_t *folded);
/* Every balance whose entries do not sum to it: printed by 'report' (may be NULL) with 'ud';
 * '*bad' is their count. */
int store_credit_check(struct store *s,
                       void (*report)(void *ud, const char *org_id, const char *mode,
                                      int64_t balance, int64_t sum),
                       void *ud, int64_t *bad);
/* The organization's balance of mode 't->mode' as it is now. */
int store_credit_balance(struct store *s, const struct store_tenant *t, int64_t *out);
/* Threshold below which a balance that falls records account.credits_low (default 100). */
void store_credit_low_set(int64_t low);

/* A Stripe Checkout Session this server created for an organization. */
struct store_checkout {
    const char *id; /* Stripe's cs_... */
    struct store_tenant tenant;
    const char *price_id;
    int64_t credits;
    const char *created_by;
    int64_t created_at, expires_at;
};
int store_checkout_record(struct store *s, const struct store_checkout *c);

/* A Stripe event, verified, as the store applies it. */
enum store_stripe_kind {
    STORE_STRIPE_OTHER,   /* a type that changes no credits */
    STORE_STRIPE_PAID,    /* checkout.session.completed (paid) or async_payment_succeeded */
    STORE_STRIPE_UNPAID,  /* checkout.session.completed not yet paid: its payment intent */
    STORE_STRIPE_REFUND,  /* charge.refunded */
    STORE_STRIPE_DISPUTE, /* charge.dispute.created */
};
struct store_stripe_event {
    const char *id;   /* evt_... */
    const char *type; /* as Stripe names it */
    bool livemode;
    enum store_stripe_kind kind;
    const char *object_id;           /* the session (cs_), the charge (ch_) or the dispute (dp_) */
    const char *org_id;              /* a session's client_reference_id, or NULL */
    const char *payment_intent;      /* pi_..., or NULL */
    int64_t amount, amount_refunded; /* a charge's (a dispute: its amount) */
    const char *request_id;          /* of the request that brought it (the audit entry) */
};
/* What applying an event did. */
enum store_stripe_outcome {
    STORE_STRIPE_APPLIED,  /* credits changed */
    STORE_STRIPE_REPLAYED, /* this event was received before: nothing */
    STORE_STRIPE_IGNORED,  /* not a change of credits, or already applied for its session */
    STORE_STRIPE_HELD,     /* a take-back before its purchase: kept until it arrives */
    STORE_STRIPE_REFUSED,  /* not ours, another organization or mode: nothing (the note why) */
};
/* Apply event 'ev' once, in one transaction with its ledger entries, audit entries and
 * events (and the take-backs held for its purchase). '*note' (static text) says why when
 * refused or ignored. */
int store_stripe_apply(struct store *s, const struct store_stripe_event *ev, int64_t now,
                       enum store_stripe_outcome *out, const char **note);

/* ---- Employees ---- */
int store_employee_list(struct store *s, const struct store_tenant *t,
                        const struct store_emp_filter *f, struct arena *a,
                        struct store_emp_page *out);
int store_employee_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_employee *out);
int store_employee_create(struct store *s, const struct store_tenant *t,
                          const struct store_employee *emp);
int store_employee_update(struct store *s, const struct store_tenant *t, const char *id,
                          const struct store_employee *emp, unsigned fields, int64_t now);
int store_employee_summary(struct store *s, const struct store_tenant *t, const char *id,
                           int64_t day_start, struct store_emp_summary *out);
int store_employee_stats(struct store *s, const struct store_tenant *t, const char *id,
                         int64_t from, int64_t to, int64_t bucket_ms, size_t nbuckets,
                         struct arena *a, struct store_stats *out);

/* A fact for statistics (see employee_events in sql/001_init.sql). */
struct store_event {
    const char *employee_id;
    const char
        *kind; /* message, conversation, task_completed, task_failed, workflow_step, rating */
    int64_t at;
    int64_t response_ms; /* < 0: none */
    int64_t credits;
    int64_t value; /* rating 1..5; < 0: none */
    const char *conversation_id;
};
int store_event_add(struct store *s, const struct store_tenant *t, const struct store_event *ev);

/* ---- Conversations and messages ---- */
struct store_conversation {
    const char *id;
    const char *employee_id;
    const char *title;
    int64_t message_count;
    int64_t created_at;
    int64_t updated_at;
};

struct store_message {
    const char *id;
    const char *conversation_id;
    const char *employee_id;
    const char *role; /* user | assistant */
    const char *content;
    const char *sources; /* JSON array text; NULL for user messages */
    int64_t credits_used;
    int64_t input_tokens;
    int64_t output_tokens;
    int64_t response_ms; /* < 0: none */
    int64_t created_at;
    int64_t seq; /* order within the conversation (reads of a conversation's messages) */
    /* assistant: in_progress | completed | failed (NULL when writing: completed), why its
     * turn stopped (completed, max_steps, repeated_call, timeout, insufficient_credits; NULL:
     * none recorded), and a failed one's error */
    const char *status;
    const char *stop_reason;
    const char *error;
};

struct store_conv_filter {
    const char *employee_id; /* NULL: any */
    unsigned limit;
    int64_t before_updated; /* keyset cursor: with before_id; before_id NULL for page one */
    const char *before_id;
};

struct store_conv_page {
    struct store_conversation *items;
    size_t n;
    bool has_more;
};

/* Everything a chat call writes before the engine runs, in one transaction. */
struct store_chat_begin {
    bool new_conversation;                  /* create 'conversation' first */
    struct store_conversation conversation; /* id, employee_id, title, created_at */
    struct store_message user;              /* id, content, created_at */
    bool reserve_credit;                    /* live: take 1 credit now, ERR_LIMIT when none */
    const char *reply_id;                   /* the reply the credit is held for (its entry) */
};

/* Everything a finished reply writes, in one transaction. */
/* Events of an assistant message as its stream sent them (SSE text), numbered first..last. */
struct store_events_chunk {
    const char *text; /* NULL: none */
    size_t len;
    int64_t first_seq, last_seq;
};

struct store_chat_finish {
    struct store_message reply; /* id, conversation_id, employee_id, content, sources, tokens,
                                   response_ms, created_at; credits_used = the cost */
    bool reserved;              /* a credit was reserved at begin */
    bool charge;                /* live: take the cost (minus the reserved credit) */
    bool stored;                /* the reply was stored in_progress (its turn called tools) */
    int64_t charged_before;     /* what the turn's earlier model calls cost (tool steps) */
    bool resumed;               /* a turn that paused: its end is an event (message.completed) */
    const char *turn_state;     /* kept with the reply: what a turn that stopped for the
                                   client's tools goes on from (the OpenAI door), or NULL */
};

int store_chat_begin(struct store *s, const struct store_tenant *t,
                     const struct store_chat_begin *in);

/* ---- The tool calls of a turn (contract §19; toolcalls.c) ---- */

/* Tool calls read with a page of task runs, or with a workflow run. */
#define STORE_RUN_CALLS_MAX 20000

/* One call of a tool by a turn. Strings are the caller's when writing, the arena's when read.
 * Exactly one turn owns it: a chat reply ('message_id'), a task run ('task_run_id') or a
 * workflow run's step ('workflow_run_id' and 'step_index'); the others are NULL. */
struct store_tool_call {
    const char *id;         /* call_... */
    const char *message_id; /* the assistant message of the turn */
    const char *model_id;   /* the model's own id of the call */
    const char *tool;       /* the tool's name (knowledge.search, ...) */
    const char *arguments;  /* JSON text as the model wrote it */
    const char *status;     /* running | completed | failed | pending_approval | rejected */
    const char *result;     /* JSON text, or NULL */
    const char *error;      /* a failed call's reason, or NULL */
    const char *approval_id;
    int64_t seq;                 /* order among the message's calls, from 0 */
    int64_t step;                /* the model call (from 0) that asked for it */
    int64_t started_at;          /* milliseconds */
    int64_t completed_at;        /* 0: not ended */
    const char *task_run_id;     /* the task run of the turn */
    const char *workflow_run_id; /* the workflow run of the turn, at its step 'step_index' */
    int64_t step_index;
};

struct store_approval;

/* A step of a turn that asked for tools, journaled before any of its calls starts. */
struct store_tool_step {
    const struct store_message *reply; /* a chat turn's first such step: its message,
                                          in_progress, this node's (NULL: none to write) */
    /* a chat turn's later steps: the reply's content and state so far (NULL: unchanged) */
    const char *message_id;
    const char *content;
    const char *turn_state;
    const struct store_tool_call *calls;
    size_t n;
    /* the approvals the step asks for, one per call of 'calls' whose status is
     * pending_approval (event approval.requested each) */
    const struct store_approval *approvals;
    size_t napprovals;
    struct store_events_chunk events; /* a chat turn's events up to now, kept */
    bool charge; /* live: the step's model call costs 'price', taken up to the balance */
    bool held;   /* the turn holds a credit (its start's): the price is settled against it */
    int64_t price;
    const char *employee_id; /* whose turn (the ledger entry's employee) */
};
/* Write step 'in' in one transaction; '*charged' is what its model call cost, '*balance' the
 * organization's balance after it. */
int store_tool_step_begin(struct store *s, const struct store_tenant *t,
                          const struct store_tool_step *in, int64_t *charged, int64_t *balance);
/* The end of call c->id: its status, result, error and completed_at. */
int store_tool_call_end(struct store *s, const struct store_tenant *t,
                        const struct store_tool_call *c);
/* Keep the events 'ev' of message 'message_id' (in the caller's transaction, or alone). */
int store_message_events_add(struct store *s, const struct store_tenant *t, const char *message_id,
                             const struct store_events_chunk *ev);
/* The kept events of message 'message_id' numbered after 'after_seq', in chunks, oldest first
 * (texts from 'a'; a chunk may begin before 'after_seq': the reader skips those). */
int store_message_events(struct store *s, const struct store_tenant *t, const char *message_id,
                         int64_t after_seq, struct arena *a, struct store_events_chunk **out,
                         size_t *n);

/* ---- Approvals and paused turns (contract §19; approvals.c) ---- */

struct store_approval {
    const char *id;
    const char *employee_id;
    const char *tool_call_id;
    const char *tool;
    const char *arguments; /* JSON text: as the model asked, or as approved */
    const char *status;    /* pending | approved | rejected | expired */
    const char *reason;
    const char *requested_by_type; /* key | user | system */
    const char *requested_by_id;
    const char *conversation_id; /* a chat turn's */
    const char *message_id;
    const char *task_id; /* a task run's */
    const char *task_run_id;
    const char *workflow_run_id; /* a workflow step's */
    int64_t step_index;          /* -1: none */
    int64_t requested_at;
    int64_t expires_at;
    int64_t decided_at; /* 0: not decided */
    const char *decided_by_type;
    const char *decided_by_id;
};

struct store_approval_filter {
    const char *status;      /* NULL: any */
    const char *employee_id; /* NULL: any */
    unsigned limit;
    int64_t before_at; /* keyset cursor, with before_id (NULL: page one) */
    const char *before_id;
};

struct store_approval_page {
    struct store_approval *items;
    size_t n;
    bool has_more;
};

/* Newest first. */
int store_approval_list(struct store *s, const struct store_tenant *t,
                        const struct store_approval_filter *f, struct arena *a,
                        struct store_approval_page *out);
int store_approval_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_approval *out);

struct store_approval_decision {
    const char *id;
    const char *status;    /* approved | rejected | expired */
    const char *arguments; /* approved with edited arguments (JSON text); NULL: as asked */
    const char *reason;    /* NULL: none */
    const char *by_type;   /* key | user | system */
    const char *by_id;
    int64_t now;
};
/*
 * Decide an approval, with its event approval.decided, in one transaction: '*out' is the
 * approval after it (strings from 'a'). ERR_NOT_FOUND; ERR_CONFLICT when it was no longer
 * pending ('*out' as it is).
 */
int store_approval_decide(struct store *s, const struct store_tenant *t,
                          const struct store_approval_decision *d, struct arena *a,
                          struct store_approval *out);
/* The ids and tenants of at most 'max' pending approvals due by 'now' (strings from 'a'). */
int store_approvals_due(struct store *s, int64_t now, size_t max, struct arena *a,
                        struct store_approval **out, struct store_tenant **tenants, size_t *n);

/* A paused chat turn stops (contract §19: it holds nothing while it waits). */
struct store_turn_pause {
    const char *message_id;
    const char *employee_id;
    const char *content;                /* what the model wrote so far */
    const char *turn_state;             /* JSON text the turn goes on from */
    bool reserved;                      /* the credit held at the turn's start is given back */
    const struct store_tool_call *ends; /* the step's calls that ran, ended */
    size_t nends;
    struct store_events_chunk events;
};
/*
 * In one transaction: the ends; then, unless none of the message's approvals is pending any
 * more ('*paused' false: they were decided meanwhile, and the turn goes on), the message
 * requires_approval with its content and state and no node, the held credit back, the
 * employee's work ended, and the events kept.
 */
int store_turn_pause(struct store *s, const struct store_tenant *t,
                     const struct store_turn_pause *in, bool *paused);

/* A turn that can go on (store_turns_ready): its tenant and message. */
struct store_turn_ref {
    struct store_tenant tenant;
    const char *message_id;
};
/* At most 'max' turns that can go on: paused ones whose approvals are all decided, and those
 * in progress that no node runs (their node died). Strings from 'a'. */
int store_turns_ready(struct store *s, size_t max, struct arena *a, struct store_turn_ref **out,
                      size_t *n);
/*
 * Take the turn of message 'id' for this node, if it can go on (see store_turns_ready): it is
 * in_progress again under this node, its employee busy (a paused one), and calls of it left
 * running by a dead node failed with error "interrupted". '*taken' false: it cannot go on, or
 * another node took it.
 */
int store_turn_take(struct store *s, const struct store_tenant *t, const char *id, int64_t now,
                    bool *taken);

/* What a turn goes on from (store_turn_load). Strings from the arena. */
struct store_turn_saved {
    struct store_message reply;
    const char *turn_state; /* NULL: none (a turn stored before turns could pause) */
    const char *user_content;
    int64_t user_seq;              /* the user message's order in the conversation */
    struct store_tool_call *calls; /* the reply's calls, in order */
    size_t ncalls;
    struct store_approval *approvals; /* the reply's approvals */
    size_t napprovals;
};
int store_turn_load(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                    struct store_turn_saved *out);
/* The tool call 'id' of tenant 't' into '*out' (strings from 'a'); ERR_NOT_FOUND. */
int store_tool_call_get(struct store *s, const struct store_tenant *t, const char *id,
                        struct arena *a, struct store_tool_call *out);
/*
 * A chat turn that stopped for the client's tools (the OpenAI door: its message 'message_id'
 * completed with stop reason client_tool_calls and a turn state, the last message of its
 * conversation) goes on, in one transaction: the message in_progress again under this node
 * (no stop reason; its state 'turn_state' unless NULL), a credit held when 'reserve'
 * (ERR_LIMIT: none left, nothing changed), its employee busy, and the 'n' calls 'ends' ended
 * as the client answered them (status, result, completed_at). '*taken' false: it no longer
 * waits (another request took it, or the conversation went on), and nothing changed.
 */
int store_turn_answer(struct store *s, const struct store_tenant *t, const char *message_id,
                      const struct store_tool_call *ends, size_t n, const char *turn_state,
                      bool reserve, bool *taken);

/* What the turn of a task run or of a workflow run's step that waited for approvals goes on
 * from (store_run_turn_load). Strings from the arena. */
struct store_run_saved {
    const char *turn_state;        /* JSON text (NULL: the run never waited) */
    struct store_tool_call *calls; /* its calls by seq (a step's: every attempt's) */
    size_t ncalls;
    struct store_approval *approvals; /* its approvals */
    size_t napprovals;
};
/* The turn of task run 'task_run_id', or else of step 'step_index' of workflow run
 * 'workflow_run_id', as it waited (store_task_finish / store_step_finish, waiting). */
int store_run_turn_load(struct store *s, const struct store_tenant *t, const char *task_run_id,
                        const char *workflow_run_id, int64_t step_index, struct arena *a,
                        struct store_run_saved *out);
/* The seq after the last call journaled for step 'step_index' of workflow run 'run_id' (0:
 * none): an attempt of a step numbers its calls from there, after those of earlier ones. */
int store_step_calls_next(struct store *s, const char *run_id, int64_t step_index, int64_t *seq);
/* At most 'max' calls of the messages of conversation 'conversation_id' whose order in it is
 * from 'from_seq' to 'to_seq' (both included), by message then call (strings from 'a'). */
int store_tool_calls_of(struct store *s, const struct store_tenant *t, const char *conversation_id,
                        int64_t from_seq, int64_t to_seq, size_t max, struct arena *a,
                        struct store_tool_call **out, size_t *n);
/* Store the reply, charge (never below 0: '*charged' is what was taken), count the fact. */
int store_chat_finish(struct store *s, const struct store_tenant *t,
                      const struct store_chat_finish *in, int64_t *charged);
/* The engine failed: give the reserved credit back and end the employee's work. */
/* The writes of store_chat_finish() inside the caller's transaction (a store_job's apply). */
int store_chat_finish_in(struct store *s, const struct store_tenant *t,
                         const struct store_chat_finish *in, int64_t *charged);
int store_chat_abort(struct store *s, const struct store_tenant *t, const char *employee_id,
                     const char *reply_id, bool refund);
int store_conversation_get(struct store *s, const struct store_tenant *t, const char *id,
                           struct arena *a, struct store_conversation *out);
int store_conversation_list(struct store *s, const struct store_tenant *t,
                            const struct store_conv_filter *f, struct arena *a,
                            struct store_conv_page *out);
int store_conversation_delete(struct store *s, const struct store_tenant *t, const char *id);
/* Whether conversation 'id' has a reply paused for approvals, or one in progress started after
 * 'since' ('*busy'). */
int store_conversation_busy(struct store *s, const struct store_tenant *t, const char *id,
                            int64_t since, bool *busy);
/* The last 'limit' messages of a conversation, oldest first. */
int store_message_list(struct store *s, const struct store_tenant *t, const char *conversation_id,
                       unsigned limit, struct arena *a, struct store_message **out, size_t *n);
/*
 * A page of a conversation's messages by keyset on their order ('seq'): oldest first after
 * 'after_seq' (0: from the start), or newest first before 'before_seq' (0: from the end).
 */
int store_message_page(struct store *s, const struct store_tenant *t, const char *conversation_id,
                       bool newest_first, int64_t from_seq, unsigned limit, struct arena *a,
                       struct store_message **out, size_t *n);
int store_message_get(struct store *s, const struct store_tenant *t, const char *conversation_id,
                      const char *id, struct arena *a, struct store_message *out);
/* Set (or replace) the rating of an assistant message; statistics count the latest. */
int store_feedback_set(struct store *s, const struct store_tenant *t,
                       const struct store_message *msg, int rating, const char *comment,
                       int64_t now);

/* ---- Idempotency keys ---- */
struct store_idem {
    unsigned char fingerprint[32];
    int state; /* 0: in flight, 1: done */
    int status;
    const char *content_type;
    const char *body;
    size_t body_len;
    int64_t created_at;
};
/*
 * Claim 'key' for a request with 'fingerprint'. 0: claimed, run the request. ERR_CONFLICT: the
 * key exists (younger than 'max_age_ms'); '*out' holds what was recorded.
 */
int store_idem_claim(struct store *s, const struct store_tenant *t, const char *key,
                     const unsigned char fingerprint[32], int64_t now, int64_t max_age_ms,
                     struct arena *a, struct store_idem *out);
int store_idem_complete(struct store *s, const struct store_tenant *t, const char *key, int status,
                        const char *content_type, const char *body, size_t len);
int store_idem_release(struct store *s, const struct store_tenant *t, const char *key);

/* ---- Knowledge ---- */
struct store_document {
    const char *id;
    const char *name;
    const char *filename;
    const char *content_type;
    const char *sha256;       /* hex */
    const char *tags;         /* JSON array text */
    const char *employee_ids; /* JSON array text */
    const char *status;       /* processing | ready | failed */
    const char *error;        /* NULL unless failed */
    int64_t size_bytes;
    int64_t chunk_count;
    int64_t progress_chunks;   /* while processing: the chunks cut so far (0: not cut yet) */
    int64_t progress_embedded; /* ... and how many of them are embedded */
    int64_t created_at;
    int64_t updated_at;
    struct store_tenant tenant; /* filled by store_document_next() */
};

struct store_doc_filter {
    const char *tag;         /* NULL: any */
    const char *employee_id; /* NULL: any; else documents this employee may read */
    unsigned limit;
    int64_t before_created; /* keyset cursor with before_id (NULL: first page) */
    const char *before_id;
};

struct store_doc_page {
    struct store_document *items;
    size_t n;
    bool has_more;
};

struct store_chunk {
    const char *content;
    int page;               /* 0: not paged */
    const float *embedding; /* NULL: none */
    size_t dim;
    const char *embed_model; /* the model of 'embedding' */
};

/* Which chunks a search may see: ready documents of the tenant, by tags and reader. */
struct store_search_filter {
    const char *tags_json;   /* JSON array of tags (any of), or NULL */
    const char *employee_id; /* NULL: any reader */
};

struct store_hit {
    const char *chunk_id;
    const char *document_id;
    const char *document_name;
    const char *content;
    const char *tags; /* JSON array text */
    int page;
    double score; /* BM25: -bm25() (higher is better); vectors: cosine */
};

int store_document_create(struct store *s, const struct store_tenant *t,
                          const struct store_document *d);
int store_document_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_document *out);
int store_document_list(struct store *s, const struct store_tenant *t,
                        const struct store_doc_filter *f, struct arena *a,
                        struct store_doc_page *out);
int store_document_delete(struct store *s, const struct store_tenant *t, const char *id);
/* The oldest document still processing, any tenant (the worker's queue); ERR_NOT_FOUND if none. */
/* Hold document 'id' (still processing) for this node, so that no other node processes it at
 * the same time; ERR_CONFLICT when another node holds it or it is no longer processing. */
int store_document_claim(struct store *s, const char *id);
int store_document_next(struct store *s, const char *after_id, struct arena *a,
                        struct store_document *out);
/* Note how far the processing of 'id' is: 'embedded' of its 'chunks' (while it processes). */
int store_document_progress(struct store *s, const char *id, int64_t chunks, int64_t embedded);
/* Store the chunks of 'id' (replacing any) and mark it ready; or mark it failed with 'error'. */
int store_document_finish(struct store *s, const char *id, const struct store_chunk *chunks,
                          size_t n, const char *error);
int store_search_text(struct store *s, const struct store_tenant *t, const char *fts_query,
                      const struct store_search_filter *f, unsigned limit, struct arena *a,
                      struct store_hit **out, size_t *n);
/* The 'limit' chunks whose embeddings are closest (cosine) to 'q' of 'dim' floats. */
int store_search_vectors(struct store *s, const struct store_tenant *t, const float *q, size_t dim,
                         const struct store_search_filter *f, unsigned limit, struct arena *a,
                         struct store_hit **out, size_t *n);

/* One searchable chunk's vector with what the access rules need (store_vectors_each). */
struct store_vector_row {
    int64_t rowid;
    const char *document_id;
    const char *tags;         /* JSON array text */
    const char *employee_ids; /* JSON array text */
    const float *embedding;
    size_t dim;
    const char *embed_model; /* NULL when there is no embedding */
};
/* Call 'fn' for every chunk of the tenant's ready documents, grouped by document ('embedding'
 * NULL for a chunk without one). */
/* The version of tenant 't''s knowledge: it moves whenever a document becomes ready or failed,
 * is deleted, or its chunks get new vectors (0: never). */
int store_knowledge_version(struct store *s, const struct store_tenant *t, int64_t *out);
int store_vectors_each(struct store *s, const struct store_tenant *t,
                       int (*fn)(void *ud, const struct store_vector_row *row), void *ud);
/* The hits of chunks 'rowids' (in that order), with 'scores'. */
int store_hits_by_rowid(struct store *s, const int64_t *rowids, const double *scores, size_t n,
                        struct arena *a, struct store_hit **out, size_t *nout);

/* A chunk of a ready document whose vector is missing or of another model than the current. */
struct store_stale_chunk {
    int64_t rowid;
    const char *content;
    struct store_tenant tenant;
};
/* Up to 'limit' stale chunks (see above) with rowid > 'after', in rowid order. */
int store_chunks_stale(struct store *s, const char *model, int64_t after, unsigned limit,
                       struct arena *a, struct store_stale_chunk **out, size_t *n);
/* Set the vectors of chunks 'rowids' ('n' x 'dim' floats of 'model') in one transaction. */
int store_chunks_set_vectors(struct store *s, const int64_t *rowids, size_t n, const float *vecs,
                             size_t dim, const char *model);

/* ---- Workflows (contract §12) ---- */

/* A workflow; times are Unix ms, 0 for null. Strings live in the caller's arena. */
struct store_workflow {
    const char *id;
    const char *name;
    const char *description;   /* NULL: none */
    const char *trigger_type;  /* manual | webhook | schedule | integration */
    const char *trigger;       /* JSON object text */
    const char *steps;         /* JSON array text */
    const char *webhook_token; /* NULL unless the trigger is a webhook */
    const char *recurring;     /* schedule triggers: canonical recurrence text, else NULL */
    int64_t next_run_at;       /* schedule triggers: the next occurrence */
    bool enabled;
    int64_t run_count, last_run_at, created_at, updated_at;
    struct store_tenant tenant; /* filled by reads */
    /* Who created it (written at creation only): the key and its scopes, the rights of its
     * runs that no one starts (a schedule, a webhook, an integration event). */
    const char *created_by;
    uint32_t scopes;
};

struct store_workflow_page {
    struct store_workflow *items;
    size_t n;
    bool has_more;
};

int store_workflow_create(struct store *s, const struct store_tenant *t,
                          const struct store_workflow *w);
int store_workflow_get(struct store *s, const struct store_tenant *t, const char *id,
                       struct arena *a, struct store_workflow *out);
/* The workflow whose webhook token is 'token', of any tenant (w->tenant says whose). */
int store_workflow_by_token(struct store *s, const char *token, struct arena *a,
                            struct store_workflow *out);
/* Newest first; 'before_id' (NULL: first page) with 'before_created' is the keyset cursor. */
int store_workflow_list(struct store *s, const struct store_tenant *t, unsigned limit,
                        int64_t before_created, const char *before_id, struct arena *a,
                        struct store_workflow_page *out);
/* Write the definition, token, schedule, enabled and updated_at of 'w' (found by w->id). */
int store_workflow_update(struct store *s, const struct store_tenant *t,
                          const struct store_workflow *w);
/* Delete the workflow (and, once they exist, its runs). */
int store_workflow_delete(struct store *s, const struct store_tenant *t, const char *id);

/* ---- Workflow runs (contract §12) ---- */

/* One step of a run; times are Unix ms, 0 for null. */
struct store_run_step {
    const char *employee_id;
    const char *action;
    const char *status; /* pending | running | waiting_approval | completed | skipped | failed
                           | cancelled */
    const char *input;  /* the rendered input, NULL until the step ran */
    const char *output; /* JSON text, NULL until the step completed */
    const char *error;
    int64_t attempts, credits_used, started_at, completed_at;
    /* Its turn's work (contract §19): why it stopped (NULL: running, failed, or no model
     * asked), and the tool calls it made, in order (reads). */
    const char *stop_reason;
    const struct store_tool_call *calls;
    size_t ncalls;
};

/* A run of a workflow. Strings live in the caller's arena. */
struct store_wf_run {
    const char *id;
    const char *workflow_id;
    const char *status; /* queued | running | completed | failed | cancelled */
    const char *trigger_type;
    const char *trigger_event; /* NULL: none */
    const char *trigger_data;  /* JSON object text */
    const char *definition;    /* the workflow's steps (JSON array text) when the run was made */
    const char *error;
    int64_t credits_used, created_at, started_at, completed_at;
    int64_t next_step; /* the step to run next (the step count when none is left) */
    int64_t depth;     /* the level of its steps' turns (struct act_job; 0: not started by a
                          turn's workflows.run) */
    struct store_run_step *steps;
    size_t nsteps;
    struct store_tenant tenant; /* filled by reads */
    /* Whose rights its steps' tool calls have: written with 'own_rights', those of whoever
     * started it ('started_by', 'scopes'), else the workflow creator's; read back as stored
     * (scopes 0: every scope). */
    bool own_rights;
    const char *started_by;
    uint32_t scopes;
};

struct store_wf_run_page {
    struct store_wf_run *items;
    size_t n;
    bool has_more;
};

/*
 * Queue a run of workflow 'r->workflow_id' (id, trigger and definition from 'r'; its steps'
 * employees and actions read from the definition), counting it in the workflow's run_count and
 * last_run_at, in one transaction. ERR_NOT_FOUND: the workflow is gone. '*out' (when not NULL)
 * is the run as queued, read in the same transaction (strings from 'a'): no worker can have
 * started it yet.
 */
int store_wf_run_create(struct store *s, const struct store_tenant *t, const struct store_wf_run *r,
                        struct arena *a, struct store_wf_run *out);
/* A run with its steps. */
int store_wf_run_get(struct store *s, const struct store_tenant *t, const char *workflow_id,
                     const char *run_id, struct arena *a, struct store_wf_run *out);
/* The runs of a workflow, newest first, with their steps; the keyset cursor as the lists'. */
int store_wf_run_list(struct store *s, const struct store_tenant *t, const char *workflow_id,
                      unsigned limit, int64_t before_created, const char *before_id,
                      struct arena *a, struct store_wf_run_page *out);
/*
 * Cancel a queued or running run at 'now': its pending steps end cancelled; a step in flight
 * finishes, uncharged (store_step_finish). ERR_CONFLICT: the run had already ended;
 * ERR_NOT_FOUND: no such run.
 */
int store_wf_run_cancel(struct store *s, const struct store_tenant *t, const char *workflow_id,
                        const char *run_id, int64_t now);

/* A workflow step a worker has taken (store_claim). */
struct store_step_claim {
    struct store_tenant tenant;
    char run_id[ID_MAX];
    char workflow_id[ID_MAX];
    char lease[ID_MAX]; /* names this attempt: its finish must bring it back */
    char employee_id[ID_MAX];
    int64_t step;     /* index */
    int64_t attempts; /* this attempt's number, from 1 */
    bool resumed;     /* its turn waited for approvals: it goes on from its journal */
};

enum store_step_outcome {
    STORE_STEP_COMPLETED, /* 'output' is the step's output */
    STORE_STEP_SKIPPED,   /* its condition was false */
    STORE_STEP_RETRY,     /* failed; tried again at 'retry_at' */
    STORE_STEP_FAILED,    /* failed for good: the run fails, its later steps are cancelled */
    STORE_STEP_WAITING    /* its turn waits for approvals ('turn_state'): the step is
                             waiting_approval, its run keeps running out of the queue until
                             none of the step's approvals is pending */
};

struct store_step_finish {
    const struct store_step_claim *claim;
    enum store_step_outcome outcome;
    const char *input;  /* rendered, or NULL when it could not be */
    const char *output; /* JSON text */
    const char *error;
    int64_t credits; /* the step's price (live keys), charged up to the balance */
    int64_t retry_at;
    int64_t now, response_ms;
    const char *stop_reason; /* why its turn stopped, or NULL */
    int64_t charged_before;  /* what its model calls that asked for tools cost (charged when
                                their calls were journaled: store_tool_step_begin) */
    const char *turn_state;  /* STORE_STEP_WAITING: what its turn goes on from (JSON text) */
};

/* End a step's attempt and move its run on, in one transaction. A run cancelled meanwhile
 * keeps the step's outcome uncharged; a run deleted meanwhile drops it ('*discarded'). The
 * step and its run count 'charged_before' (taken already) in their credits_used in any case.
 * The employee is no longer busy either way. '*charged' is what was taken now. */
int store_step_finish(struct store *s, const struct store_step_finish *in, int64_t *charged,
                      bool *discarded);

/* ---- Tasks (contract §10) ---- */

/* A task; times are Unix ms, 0 for null. Strings live in the caller's arena. */
struct store_task {
    const char *id;
    const char *employee_id;
    const char *title;
    const char *description;
    const char *status;    /* pending | in_progress | completed | failed */
    const char *priority;  /* low | medium | high | urgent */
    const char *recurring; /* canonical JSON text, or NULL */
    const char *run_id;    /* the run in progress, or NULL */
    const char *result;
    const char *error;
    int64_t due_at, next_run_at, last_run_at, started_at, completed_at;
    int64_t created_at, updated_at;
    int64_t run_count, credits_used;
    bool run_now;               /* queued again: runs without waiting for next_run_at */
    struct store_tenant tenant; /* filled by reads */
    /* Who created it, whose rights its runs' tool calls have (contract §19): the key (NULL:
     * none recorded) and its scopes (0: every scope). */
    const char *created_by;
    uint32_t scopes;
};

struct store_task_filter {
    const char *employee_id, *status, *priority; /* NULL: any */
    unsigned limit;
    int64_t before_created; /* keyset cursor with before_id (NULL: first page) */
    const char *before_id;
};

struct store_task_page {
    struct store_task *items;
    size_t n;
    bool has_more;
};

struct store_task_run {
    const char *id;
    const char *status; /* in_progress | waiting_approval | completed | failed | cancelled */
    const char *result;
    const char *error;
    int64_t started_at, completed_at, credits_used;
    /* Its turn's work (contract §19): why it stopped (NULL: running, failed or cancelled),
     * and the tool calls it made, in order. */
    const char *stop_reason;
    const struct store_tool_call *calls;
    size_t ncalls;
};

struct store_run_page {
    struct store_task_run *items;
    size_t n;
    bool has_more;
};

int store_task_create(struct store *s, const struct store_tenant *t, const struct store_task *k);
int store_task_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                   struct store_task *out);
int store_task_list(struct store *s, const struct store_tenant *t,
                    const struct store_task_filter *f, struct arena *a,
                    struct store_task_page *out);
/*
 * Write every field of 'k' (found by k->id), provided the row still has 'old_status' and
 * 'old_run_id' (NULL: none): else ERR_CONFLICT (read it again and retry). When 'cancel_run' is
 * set, the run in progress 'old_run_id' ends 'cancelled' with 'error' at 'now', in the same
 * transaction.
 */
int store_task_update(struct store *s, const struct store_tenant *t, const struct store_task *k,
                      const char *old_status, const char *old_run_id, bool cancel_run, int64_t now);
/* Delete the task and its runs (a run in progress is discarded by its worker). */
int store_task_delete(struct store *s, const struct store_tenant *t, const char *id);
/* A page of the task's runs, newest first, each with its tool calls (at most
 * STORE_RUN_CALLS_MAX for the page). */
int store_task_runs(struct store *s, const struct store_tenant *t, const char *task_id,
                    unsigned limit, int64_t before_started, const char *before_id, struct arena *a,
                    struct store_run_page *out);

/* The next occurrence after 'now' of the recurrence 'recurring' (JSON text); 0 when none. */
typedef int64_t (*store_next_run_fn)(const char *recurring, int64_t now);

/* The rules of others that the queue applies as it takes work (tasks/runner.c fills them from
 * the schedule's and the ledger's). */
struct store_queue_rules {
    store_next_run_fn next_run; /* a recurrence's next occurrence */
    /* Credits a live task run holds from its start; a live scheduled workflow run needs a
     * balance of as many to be queued. */
    int64_t live_hold;
    /* The `error` of a scheduled run refused for want of credits: it is recorded failed at
     * once, its first step failed with this error before any attempt, the others cancelled
     * (and workflow_run.failed emitted). */
    const char *no_credits;
};

/* A run the worker has taken: the task as it was, and the run's id. */
struct store_task_claim {
    struct store_task task;
    char run_id[ID_MAX];
    bool reserved;   /* one credit was taken (a live key) */
    bool no_credits; /* a live key without credits: the run ended failed at once (a resumed
                        one goes on, and stops before its next model call) */
    bool resumed;    /* a run that waited for approvals: it goes on from its journal */
};

struct store_claim {
    bool is_step; /* a workflow step ('step'), else a task run ('task') */
    struct store_task_claim task;
    struct store_step_claim step;
};

/*
 * Take the next unit of work of the durable queue, of any tenant, in one transaction.
 * First, what time makes runnable: recurring tasks whose occurrence has come become pending,
 * and every enabled scheduled workflow whose occurrence has come gets one queued run (missed
 * occurrences make one run, its next occurrence computed by 'next_run' from 'now'). Then the
 * organization served least recently among those with runnable work (round-robin between
 * organizations, whatever their backlogs), and the head of its queue: its first pending task
 * (priority, due, creation) whose time has come and whose employee is not offline, or its
 * first workflow run whose current step is ready (ordered as a medium-priority task without a
 * due date, by the time the step became ready), whichever runs first by that order.
 *
 * A task: set in_progress with a new run, its next occurrence computed, the employee busy, and
 * (live keys) one credit taken. A step: the run running, the step running with one more
 * attempt under a new lease, the employee busy.
 *
 * Before all of that, a task run or a workflow step that waited for approvals (contract §19)
 * and has none pending any more goes on ('resumed'): the run in progress again under this
 * node with a credit held (live keys), or the step running under a new lease (not a new
 * attempt); the employee busy. The same organization turns apply to it.
 *
 * ERR_NOT_FOUND when nothing is runnable; '*wake_at' then says when a recurring task or a
 * scheduled workflow is next due, or a retried step ready (0: none). 'now' 0: the clock, read
 * once the transaction holds the write lock.
 */
int store_claim(struct store *s, int64_t now, const struct store_queue_rules *rules,
                struct arena *a, struct store_claim *out, int64_t *wake_at);
/* As store_claim(), but only work of an organization that has none in progress (no task run,
 * no workflow step): what a node's last free worker takes (tasks/runner.c). */
int store_claim_idle(struct store *s, int64_t now, const struct store_queue_rules *rules,
                     struct arena *a, struct store_claim *out, int64_t *wake_at);

struct store_task_finish {
    const struct store_tenant *tenant;
    const char *task_id, *run_id, *employee_id;
    bool ok;
    const char *result, *error;
    int64_t credits; /* the run's price (live keys), charged up to the balance */
    bool reserved;   /* one credit was taken when it started */
    int64_t now, response_ms;
    const char *stop_reason; /* why its turn stopped, or NULL */
    int64_t charged_before;  /* what its model calls that asked for tools cost (charged when
                                their calls were journaled: store_tool_step_begin) */
    const char *turn_state;  /* not NULL: the run does not end, its turn waits for approvals
                                (the run waiting_approval with this state, out of any node, its
                                held credit back, the employee no longer busy; its task stays
                                in_progress; 'ok', 'result', 'error', 'credits' unused) */
};
/* End a run: the run and its task (unless cancelled or deleted meanwhile: then the reserved
 * credit goes back), the statistics fact, the employee no longer busy. The run and its task
 * count 'charged_before' (taken already) in their credits_used in every case, a cancelled run
 * too. '*charged' is what was taken now. */
int store_task_finish(struct store *s, const struct store_task_finish *in, int64_t *charged,
                      bool *discarded);
/* What a restart of every node does to their work (tests; a server takes back only dead nodes'
 * work: store_nodes_recover): runs in progress end failed, their tasks pending again, their
 * reserved credits back (a run that had gone on after waiting for approvals waits again, to go
 * on from its journal); workflow steps in flight become ready again (their cut attempt not
 * counted). Returns how many of each through '*n' and '*steps'. */
int store_task_recover(struct store *s, int64_t now, size_t *n, size_t *steps);

/* ---- Integrations (contract §13) ---- */

/* A connection of a tenant to a provider: connected, or its last connection failed. What the
 * provider gave (tokens, expiry, scopes, account) is sealed by integrations/oauth.c. */
struct store_integration {
    const char *provider;
    const char *status;           /* connected | error */
    const unsigned char *secrets; /* sealed; NULL when none */
    size_t secrets_len;
    const char *error;
    int64_t connected_at, updated_at;
    /* A keyed hash of the account's id at the provider (Slack's team id), by which the events
     * of an app that serves many organizations find their connections; NULL when none. */
    const char *account_key;
};
/* The tenant's row for 'provider'; ERR_NOT_FOUND when there is none (available). */
int store_integration_get(struct store *s, const struct store_tenant *t, const char *provider,
                          struct arena *a, struct store_integration *out);
/* Write (insert or replace) the tenant's row for 'in->provider'. */
int store_integration_put(struct store *s, const struct store_tenant *t,
                          const struct store_integration *in);
/* Forget the tenant's row for 'provider' (0 also when there was none). */
int store_integration_delete(struct store *s, const struct store_tenant *t, const char *provider);
/* The tenants (at most 'max', into 'out', '*n' of them, oldest connection first) whose
 * connection to 'provider' is connected and holds 'account_key'. */
int store_integration_tenants(struct store *s, const char *provider, const char *account_key,
                              struct store_tenant *out, size_t max, size_t *n);

/* An OAuth authorization under way: its state is known only by its SHA-256. */
struct store_oauth_state {
    char state_hash[65];
    struct store_tenant tenant;
    const char *provider;
    const unsigned char *verifier; /* sealed */
    size_t verifier_len;
    const char *redirect_uri; /* NULL: none */
    const char *scopes;       /* JSON array text */
    int64_t created_at, expires_at;
    char binding_hash[65]; /* hex SHA-256 of the browser's cookie; "" when not bound */
    int64_t opened_at;     /* when a browser went on to the provider; 0: not yet */
};
int store_oauth_state_create(struct store *s, const struct store_oauth_state *in);
/* Use state 'state_hash' of 'provider' once: ERR_NOT_FOUND when it is unknown, of another
 * provider, used or expired at 'now'. '*out' holds it (strings from 'a'). */
int store_oauth_state_take(struct store *s, const char *state_hash, const char *provider,
                           int64_t now, struct arena *a, struct store_oauth_state *out);
/* State 'state_hash' of 'provider' as store_oauth_state_take() would have it, without using
 * it: ERR_NOT_FOUND when it is unknown, of another provider, used or expired at 'now'. */
int store_oauth_state_peek(struct store *s, const char *state_hash, const char *provider,
                           int64_t now, struct arena *a, struct store_oauth_state *out);
/* A browser goes on to the provider with state 'state_hash' of 'provider': it is marked opened
 * and, when 'binding_hash' is not NULL, bound to it, which only a state never opened can be.
 * ERR_NOT_FOUND when the state is unknown, used, expired, or (to bind) already opened. */
int store_oauth_state_start(struct store *s, const char *state_hash, const char *provider,
                            int64_t now, const char *binding_hash);
/* Whether the tenant has an authorization to 'provider' under way (not used, not expired). */
int store_oauth_state_open(struct store *s, const struct store_tenant *t, const char *provider,
                           int64_t now, bool *open);

/* How a provider's inbound events reach a tenant: the token of its events URL, and the
 * organization's own signing secret (sealed by integrations/oauth.c; NULL: the server's). */
struct store_inbound {
    const char *token;
    const unsigned char *secret;
    size_t secret_len;
};
/* The tenant's row for 'provider', made with the token 'fresh' the first time (strings and the
 * sealed secret from 'a'); 'fresh' NULL: only read, ERR_NOT_FOUND when there is none. */
int store_inbound_get(struct store *s, const struct store_tenant *t, const char *provider,
                      const char *fresh, struct arena *a, struct store_inbound *out);
/* The tenant's events URL for 'provider' takes the token 'fresh': the old one names no one
 * from the commit on. */
int store_inbound_rotate(struct store *s, const struct store_tenant *t, const char *provider,
                         const char *fresh);
/* Keep the sealed 'secret' ('len' bytes; NULL: none) as the tenant's own signing secret for
 * 'provider' (the row made with the token 'fresh' when there is none). */
int store_inbound_secret(struct store *s, const struct store_tenant *t, const char *provider,
                         const char *fresh, const unsigned char *secret, size_t len);
/* The tenant whose events URL for 'provider' has the token 'token'; ERR_NOT_FOUND when none. */
int store_events_tenant(struct store *s, const char *provider, const char *token,
                        struct store_tenant *out);

/* How long deliveries of inbound events are remembered. */
#define STORE_DELIVERY_KEEP_MS (7LL * 86400 * 1000)
/* Note delivery 'id' of an inbound event from 'provider': '*first' is false when it was noted
 * less than 'window_ms' before 'now' (a provider's retry). Deliveries older than
 * STORE_DELIVERY_KEEP_MS are forgotten. */
int store_delivery_note(struct store *s, const struct store_tenant *t, const char *provider,
                        const char *id, int64_t now, int64_t window_ms, bool *first);
/* The tenant's enabled workflows triggered by integration event 'event', oldest first (at most
 * STORE_EVENT_WORKFLOWS_MAX), into '*out' ('*n' of them, from 'a'). */
#define STORE_EVENT_WORKFLOWS_MAX 100
int store_workflows_for_event(struct store *s, const struct store_tenant *t, const char *event,
                              struct arena *a, struct store_workflow **out, size_t *n);

/* ---- MCP servers (contract §19; mcp_servers.c) ---- */

/*
 * An MCP server of a tenant. 'headers' is the sealed JSON object {name: value} of the headers
 * sent to it: integ_seal() under the tenant, the server's id and STORE_MCP_SEAL_WHAT (open it
 * with integ_open() and mcpc_header_lines() to call the server); its values are never kept in
 * clear. 'tools' is the list last read, a JSON array of {name, description, effect,
 * input_schema} (mcpc_tools_page()).
 */
#define STORE_MCP_SEAL_WHAT "mcp_headers"
#define STORE_MCP_SERVERS_MAX 16 /* servers of one tenant */
struct store_mcp_server {
    const char *id;
    const char *name; /* [a-z0-9_]{1,32}, one per tenant */
    const char *url;
    const char *header_names;     /* JSON array text of the headers' names */
    const unsigned char *headers; /* sealed; NULL: none */
    size_t headers_len;
    bool enabled;
    const char *status; /* "ok" | "error" */
    const char *error;  /* why the last read failed; NULL when ok */
    const char *tools;  /* JSON array text */
    int64_t generation; /* changes of url and headers */
    int64_t refreshed_at, created_at, updated_at;
};
struct store_mcp_server_page {
    struct store_mcp_server *items;
    size_t n;
    bool has_more;
};
/* Which members of a struct store_mcp_server an update writes. */
enum store_mcp_field {
    STORE_MCP_NAME = 1 << 0,
    STORE_MCP_ENABLED = 1 << 1,
    STORE_MCP_TARGET = 1 << 2, /* url, header_names, headers; the generation goes up by one */
    STORE_MCP_TOOLS = 1 << 3,  /* status, error, tools, refreshed_at */
};
/* Insert server 'in' (every member set but generation, 0): ERR_CONFLICT when the tenant has a
 * server of that name, ERR_LIMIT when it has STORE_MCP_SERVERS_MAX. */
int store_mcp_server_create(struct store *s, const struct store_tenant *t,
                            const struct store_mcp_server *in);
/* Server 'id' of the tenant (ERR_NOT_FOUND), from 'a'. */
int store_mcp_server_get(struct store *s, const struct store_tenant *t, const char *id,
                         struct arena *a, struct store_mcp_server *out);
/* The tenant's server named 'name' (ERR_NOT_FOUND), from 'a'. */
int store_mcp_server_find(struct store *s, const struct store_tenant *t, const char *name,
                          struct arena *a, struct store_mcp_server *out);
/* The tenant's servers, newest first, keyset-paged by 'before_created' and 'before_id' (NULL:
 * first page). */
int store_mcp_servers_list(struct store *s, const struct store_tenant *t, unsigned limit,
                           int64_t before_created, const char *before_id, struct arena *a,
                           struct store_mcp_server_page *out);
/* The tenant's enabled servers, oldest first (at most STORE_MCP_SERVERS_MAX), from 'a'. */
int store_mcp_servers_enabled(struct store *s, const struct store_tenant *t, struct arena *a,
                              struct store_mcp_server **out, size_t *n);
/*
 * Write the members 'fields' names (enum store_mcp_field) of 'in' to server in->id, with
 * in->updated_at. STORE_MCP_TOOLS without STORE_MCP_TARGET is a refresh: written only while
 * the server's generation is still in->generation. ERR_NOT_FOUND when the server is not the
 * tenant's (or, for a refresh, was changed since), ERR_CONFLICT when the new name is taken.
 */
int store_mcp_server_update(struct store *s, const struct store_tenant *t,
                            const struct store_mcp_server *in, unsigned fields);
/* Delete server 'id': ERR_NOT_FOUND when it is not the tenant's. */
int store_mcp_server_delete(struct store *s, const struct store_tenant *t, const char *id);

/* ---- Events and outbound webhooks (contract §15; events.c) ----
 *
 * An event is recorded in the transaction of the change it reports, with a delivery for each
 * enabled endpoint of the tenant that takes its type (the durable outbox). */

/* What an event's data.object is. */
enum store_hook_kind {
    STORE_HOOK_TASK,        /* const struct store_task * */
    STORE_HOOK_RUN,         /* const struct store_wf_run * (with its steps) */
    STORE_HOOK_DOCUMENT,    /* const struct store_document * */
    STORE_HOOK_INTEGRATION, /* const struct store_integration * */
    STORE_HOOK_APPROVAL,    /* const struct store_approval * */
    STORE_HOOK_MESSAGE,     /* const struct store_message_hook * */
    STORE_HOOK_CREDIT,      /* const struct store_credit_tx * */
};

/* A message as its event shows it: the message and its calls. */
struct store_message_hook {
    const struct store_message *message;
    const struct store_tool_call *calls;
    size_t ncalls;
};
/* The JSON text of 'obj' (see enum store_hook_kind) in 'a'; NULL when it cannot be written. */
typedef const char *(*store_hook_render_fn)(enum store_hook_kind kind, const void *obj,
                                            struct arena *a);
/*
 * Once, before any thread uses a store: 'render' writes the objects of the events this process
 * records (NULL: it records none), and 'recorded' (may be NULL) is called with 'ud' by a thread
 * after its commit that recorded events or asked for a redelivery (the delivery worker's wake-up).
 */
void store_hooks_init(store_hook_render_fn render, void (*recorded)(void *ud), void *ud);

struct store_hook_event {
    const char *id;
    const char *type;
    int64_t created_at;
    const char *data; /* JSON object text {"object": ...} */
};
struct store_hook_event_page {
    struct store_hook_event *items;
    size_t n;
    bool has_more;
};
/* The tenant's events of 'type' (NULL: any), newest first, keyset-paged by 'before_created' and
 * 'before_id' (NULL: first page). */
int store_hook_events_list(struct store *s, const struct store_tenant *t, const char *type,
                           unsigned limit, int64_t before_created, const char *before_id,
                           struct arena *a, struct store_hook_event_page *out);
int store_hook_event_get(struct store *s, const struct store_tenant *t, const char *id,
                         struct arena *a, struct store_hook_event *out);

struct store_hook_endpoint {
    const char *id;
    const char *url;
    const char *events; /* JSON array text of types, or ["*"] */
    bool enabled;
    const char *description;     /* NULL: none */
    const unsigned char *secret; /* sealed */
    size_t secret_len;
    const unsigned char *previous_secret; /* sealed; NULL: none */
    size_t previous_len;
    int64_t previous_until; /* the previous secret signs too until then (0: none) */
    int64_t created_at, updated_at;
};
struct store_hook_endpoint_page {
    struct store_hook_endpoint *items;
    size_t n;
    bool has_more;
};
/* Insert endpoint 'in' (id and times set); ERR_LIMIT when the tenant has 'max' already. */
int store_hook_endpoint_create(struct store *s, const struct store_tenant *t,
                               const struct store_hook_endpoint *in, size_t max);
int store_hook_endpoint_get(struct store *s, const struct store_tenant *t, const char *id,
                            struct arena *a, struct store_hook_endpoint *out);
int store_hook_endpoints_list(struct store *s, const struct store_tenant *t, unsigned limit,
                              int64_t before_created, const char *before_id, struct arena *a,
                              struct store_hook_endpoint_page *out);
/* Write every member of 'in' but id and created_at; ERR_NOT_FOUND when it is not the tenant's. */
int store_hook_endpoint_update(struct store *s, const struct store_tenant *t,
                               const struct store_hook_endpoint *in);
/* Delete the endpoint with its deliveries; ERR_NOT_FOUND when it is not the tenant's. */
int store_hook_endpoint_delete(struct store *s, const struct store_tenant *t, const char *id);

struct store_hook_delivery {
    const char *id;
    const char *endpoint_id;
    const char *event_id;
    const char *status; /* pending | delivered | failed */
    int64_t attempts;
    int64_t last_status_code; /* 0: none */
    const char *last_error;
    int64_t next_attempt_at; /* 0: none (delivered or failed) */
    int64_t created_at, updated_at;
};
struct store_hook_delivery_page {
    struct store_hook_delivery *items;
    size_t n;
    bool has_more;
};
/* The tenant's deliveries to 'endpoint_id' and of 'event_id' (each NULL: any), newest first. */
int store_hook_deliveries_list(struct store *s, const struct store_tenant *t,
                               const char *endpoint_id, const char *event_id, unsigned limit,
                               int64_t before_created, const char *before_id, struct arena *a,
                               struct store_hook_delivery_page *out);
/*
 * Deliver event 'event_id' again, at 'now': to 'endpoint_id' if it is enabled, else (NULL) to
 * every enabled endpoint that takes its type; '*n' deliveries due. A delivery in flight is
 * attempted again when its attempt ends. ERR_NOT_FOUND: no such event of the tenant.
 */
int store_hook_redeliver(struct store *s, const struct store_tenant *t, const char *event_id,
                         const char *endpoint_id, int64_t now, size_t *n);
/*
 * The attempts of event 'event_id''s deliveries to 'endpoint_id' (NULL: every enabled endpoint)
 * made after 'since', one more for an attempt under way or due at 'now': '*most' gets the
 * highest number among those deliveries and '*oldest' that delivery's oldest such attempt
 * ('now' when none). What a redelivery is weighed against; 0s when there is no delivery.
 */
int store_hook_recent_attempts(struct store *s, const struct store_tenant *t, const char *event_id,
                               const char *endpoint_id, int64_t since, int64_t now, int64_t *most,
                               int64_t *oldest);

/* A delivery taken from the outbox by store_hook_claim(). */
struct store_hook_claim {
    char delivery_id[ID_MAX];
    char lease[24];
    struct store_tenant tenant;
    char endpoint_id[ID_MAX];
    char event_id[ID_MAX];
    int64_t attempt; /* the number of this attempt, from 1 */
    const char *url;
    const unsigned char *secret; /* sealed */
    size_t secret_len;
    const unsigned char *previous_secret; /* sealed, NULL: none */
    size_t previous_len;
    int64_t previous_until;
    struct store_hook_event event;
};
/*
 * Take a due delivery at 'now' for 'lease_ms': '*out', its strings from 'a'. Fair shares: of
 * the enabled endpoints that have a delivery due and no attempt in flight (an endpoint has at
 * most one), the one of the organization served least recently, then the endpoint of it served
 * least recently; of its deliveries, the one due first. ERR_NOT_FOUND when none can be taken;
 * '*wake_at' then says when one may be (0: none pending).
 */
int store_hook_claim(struct store *s, int64_t now, int64_t lease_ms, struct arena *a,
                     struct store_hook_claim *out, int64_t *wake_at);
/* As store_hook_claim(), but only a delivery of an organization that has no attempt in flight
 * (what a node's last free delivery thread takes: see webhooks/worker.c). */
int store_hook_claim_idle(struct store *s, int64_t now, int64_t lease_ms, struct arena *a,
                          struct store_hook_claim *out, int64_t *wake_at);
/* The end of an attempt of a claimed delivery. */
struct store_hook_attempt {
    const char *delivery_id;
    const char *lease;
    int64_t at;
    int64_t status_code; /* 0: no HTTP answer */
    const char *error;   /* NULL when delivered */
    int64_t duration_ms;
    bool delivered;
    int64_t next_attempt_at; /* when not delivered: the next attempt, 0: failed for good */
};
/* Record attempt 'in' and the delivery's new state; ERR_NOT_FOUND when the lease is no longer
 * the caller's (taken over, or the endpoint deleted): nothing is written. */
int store_hook_attempted(struct store *s, const struct store_hook_attempt *in);
/* Forget the events created before 'before', with their deliveries and attempts. */
int store_hook_purge(struct store *s, int64_t before);

/* Tests: make the 'n'th statement run from now (a prepare, step, begin, commit or savepoint of
 * any connection) fail with ERR_STORE (0 = off); returns what was left of the previous count:
 * above 0 when its failure has not happened. */
long store_fail_after(long n);

#endif
