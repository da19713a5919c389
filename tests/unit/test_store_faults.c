/* SPDX-License-Identifier: MIT */
/*
 * test_store_faults: nothing half-written. Each write of the store that moves credits or must
 * survive a failure (a chat's start, reply and abort, the claim of a task and of a workflow
 * step, their ends, a run's creation and cancel, an organization's creation, a webhook's claim
 * and attempt, a task cancelled by an update, the recovery of cut runs, a document's chunks) is
 * called with its 1st, 2nd, ... statement failing (store_fail_after(): the failure comes inside
 * the operation, after the statements before it ran) until it succeeds. Each failure must be a
 * clean ERR_STORE with every table, credits included, exactly as before the call and no
 * transaction left open; then the call succeeds and changes the database. On SQLite (a file,
 * WAL) always, and on PostgreSQL when WORKFORCE_TEST_PG_URL names one (its public schema is
 * emptied first; `sh tests/pg/pg.sh start DIR` prints one).
 *
 * That this test can fail: a build whose rollbacks keep what they should undo (store_int.h,
 * STORE_TEST_BROKEN_ROLLBACK) must make it report "not ok":
 *     make -j2 unit CFLAGS=-DSTORE_TEST_BROKEN_ROLLBACK OUT=build/broken
 *     build/broken/tests/test_store_faults
 */
#include "../../src/core/mem.h"
#include "../../src/store/store.h"
#include "../../src/store/store_int.h"
#include "../../src/tasks/runner.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define T0 INT64_C(1795000000000)
#define MAX_STATEMENTS 1000 /* an operation that runs more has lost its way */

static const struct store_employee seed[] = {
    {.name = "Ann", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
    {.name = "Bob", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
};

/* ---- A dump of every table ---- */

struct text {
    char *p;
    size_t len, cap;
};

static void text_add(struct text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->p = xrealloc(t->p, t->cap);
    }
    memcpy(t->p + t->len, s, n + 1);
    t->len += n;
}

#define MAX_TABLES 128

/* The names of the tables of 's' into 'names'; their count, or -1 on failure. */
static int table_names(struct store *s, char names[][64])
{
    struct db_stmt *st =
        db_prepare(s, db_dialect(s) == DB_POSTGRES
                          ? "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                            " ORDER BY tablename"
                          : "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
    bool row = false;
    int n = 0, rc;
    if (!st)
        return -1;
    while (!(rc = db_step(st, &row)) && row && n < MAX_TABLES)
        db_copy(st, 0, names[n++], 64);
    db_done(st);
    return rc ? -1 : n;
}

/* The query of every row of 'table' as one text, its columns quoted and joined by '|', sorted;
 * NULL on failure. The caller frees it. */
static char *rows_query(struct store *s, const char *table)
{
    bool pg = db_dialect(s) == DB_POSTGRES;
    struct db_stmt *st = db_prepare(
        s, pg ? "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public'"
                " AND table_name = $1 ORDER BY ordinal_position"
              : "SELECT name FROM pragma_table_info($1) ORDER BY cid");
    struct text q = {0};
    bool row = false;
    int rc, ncol = 0;
    if (!st)
        return NULL;
    db_bind_text(st, 1, table);
    text_add(&q, "SELECT ");
    while (!(rc = db_step(st, &row)) && row) {
        text_add(&q, ncol++ ? " || '|' || " : "");
        text_add(&q, pg ? "quote_nullable(\"" : "quote(\"");
        text_add(&q, db_text(st, 0));
        text_add(&q, "\")");
    }
    db_done(st);
    text_add(&q, " FROM \"");
    text_add(&q, table);
    text_add(&q, "\" ORDER BY 1");
    if (rc || ncol == 0) {
        free(q.p);
        return NULL;
    }
    return q.p;
}

/*
 * Every row of every table of 's', one line "table: v1|v2|..." each, tables by name and rows
 * sorted, read in one read transaction; NULL when it cannot be read, and so when the last
 * operation left a transaction open (its begin fails). The caller frees it.
 */
static char *dump(struct store *s)
{
    static char names[MAX_TABLES][64];
    struct text out = {0};
    int n, rc = 0;

    if (db_begin(s, DB_TX_READ))
        return NULL;
    n = table_names(s, names);
    text_add(&out, "");
    for (int i = 0; n > 0 && i < n && !rc; i++) {
        char *sql = rows_query(s, names[i]);
        struct db_stmt *st = sql ? db_prepare(s, sql) : NULL;
        bool row = false;
        rc = st ? 0 : ERR_STORE;
        while (!rc && !(rc = db_step(st, &row)) && row) {
            const char *v = db_text(st, 0);
            text_add(&out, names[i]);
            text_add(&out, ": ");
            text_add(&out, v ? v : "(null)");
            text_add(&out, "\n");
        }
        if (st)
            db_done(st);
        free(sql);
    }
    db_rollback(s);
    if (n <= 0 || rc) {
        free(out.p);
        return NULL;
    }
    return out.p;
}

/* The first line where 'a' and 'b' differ, as TAP comments. */
static void show_diff(const char *a, const char *b)
{
    size_t i = 0, line = 0;
    while (a[i] && a[i] == b[i]) {
        if (a[i] == '\n')
            line = i + 1;
        i++;
    }
    printf("#   before: %.*s\n", (int)strcspn(a + line, "\n"), a + line);
    printf("#   after:  %.*s\n", (int)strcspn(b + line, "\n"), b + line);
}

/* ---- The operations ---- */

/* What the operations share and hand on. */
struct fx {
    struct store *s;
    struct store_tenant t; /* live */
    struct store_org org;
    char emp[2][ID_MAX];
    char steps[512];
    struct arena a;
    struct store_claim claim; /* the last one */
    struct store_hook_claim hook;
    int64_t charged;
    bool discarded;
};

typedef int (*op_fn)(struct fx *f);

static const char *render(enum store_hook_kind kind, const void *obj, struct arena *a)
{
    (void)kind;
    (void)obj;
    (void)a;
    return "{}";
}

static int op_org_create(struct fx *f)
{
    struct err e;
    err_clear(&e);
    return store_org_create(f->s, "acme", 1, 20, seed, 2, &f->org, &e);
}

/* The start of a chat of 'emp' 0 with message 'msg_id' (a new conversation: 'fresh'). */
static int chat_start(struct fx *f, const char *msg_id, bool fresh)
{
    struct store_chat_begin b;
    memset(&b, 0, sizeof(b));
    b.new_conversation = fresh;
    b.conversation.id = "conv_aaaaaaaaaaaaaaaaaaaaaaaa";
    b.conversation.employee_id = f->emp[0];
    b.conversation.title = "Title";
    b.conversation.created_at = b.conversation.updated_at = T0;
    b.user.id = msg_id;
    b.user.conversation_id = b.conversation.id;
    b.user.employee_id = f->emp[0];
    b.user.role = "user";
    b.user.content = "hello";
    b.user.response_ms = -1;
    b.user.created_at = T0;
    b.reserve_credit = true;
    return store_chat_begin(f->s, &f->t, &b);
}

static int op_chat_begin(struct fx *f)
{
    return chat_start(f, "msg_user1aaaaaaaaaaaaaaaaaaa", true);
}

static int op_chat_finish(struct fx *f)
{
    struct store_chat_finish fin;
    memset(&fin, 0, sizeof(fin));
    fin.reply.id = "msg_reply1aaaaaaaaaaaaaaaaaa";
    fin.reply.conversation_id = "conv_aaaaaaaaaaaaaaaaaaaaaaaa";
    fin.reply.employee_id = f->emp[0];
    fin.reply.role = "assistant";
    fin.reply.content = "hi!";
    fin.reply.sources = "[]";
    fin.reply.credits_used = 3;
    fin.reply.input_tokens = 10;
    fin.reply.output_tokens = 20;
    fin.reply.response_ms = 42;
    fin.reply.created_at = T0 + 100;
    fin.reserved = true;
    fin.charge = true;
    return store_chat_finish(f->s, &f->t, &fin, &f->charged);
}

static int op_chat_abort(struct fx *f)
{
    return store_chat_abort(f->s, &f->t, f->emp[0], NULL, true);
}

static int op_claim(struct fx *f)
{
    int64_t wake = 0;
    return store_claim(f->s, T0 + 200000, &task_queue_rules, &f->a, &f->claim, &wake);
}

static int op_task_finish(struct fx *f)
{
    const struct store_task_claim *c = &f->claim.task;
    struct store_task_finish in;
    memset(&in, 0, sizeof(in));
    in.tenant = &c->task.tenant;
    in.task_id = c->task.id;
    in.run_id = c->run_id;
    in.employee_id = c->task.employee_id;
    in.ok = true;
    in.result = "done";
    in.credits = 3;
    in.reserved = c->reserved;
    in.now = T0 + 61000;
    in.response_ms = 5;
    return store_task_finish(f->s, &in, &f->charged, &f->discarded);
}

static int op_hook_claim(struct fx *f)
{
    int64_t wake = 0;
    return store_hook_claim(f->s, T0 + 62000, 60000, &f->a, &f->hook, &wake);
}

static int op_hook_attempted(struct fx *f)
{
    struct store_hook_attempt at;
    memset(&at, 0, sizeof(at));
    at.delivery_id = f->hook.delivery_id;
    at.lease = f->hook.lease;
    at.at = T0 + 62100;
    at.status_code = 500;
    at.error = "the endpoint answered 500";
    at.duration_ms = 3;
    at.next_attempt_at = T0 + 70000;
    return store_hook_attempted(f->s, &at);
}

static int op_task_cancel(struct fx *f)
{
    struct store_task k;
    int rc = store_task_get(f->s, &f->t, f->claim.task.task.id, &f->a, &k);
    if (rc)
        return rc;
    k.status = "failed";
    k.run_id = NULL;
    k.error = "Cancelled while in progress by an update.";
    k.completed_at = k.updated_at = T0 + 63000;
    return store_task_update(f->s, &f->t, &k, "in_progress", f->claim.task.run_id, true,
                             T0 + 63000);
}

static int op_task_recover(struct fx *f)
{
    size_t n = 0, steps = 0;
    return store_task_recover(f->s, T0 + 64000, &n, &steps);
}

static int op_run_create(struct fx *f)
{
    struct store_wf_run r;
    memset(&r, 0, sizeof(r));
    r.id = "run_aaaaaaaaaaaaaaaaaaaaaaa1";
    r.workflow_id = "wf_aaaaaaaaaaaaaaaaaaaaaaaa";
    r.trigger_type = "manual";
    r.trigger_data = "{}";
    r.definition = f->steps;
    r.created_at = T0 + 6000;
    return store_wf_run_create(f->s, &f->t, &r, NULL, NULL);
}

/* The end of the claimed step with 'o'. */
static int step_end(struct fx *f, enum store_step_outcome o)
{
    struct store_step_finish in;
    memset(&in, 0, sizeof(in));
    in.claim = &f->claim.step;
    in.outcome = o;
    in.input = "in";
    in.output = o == STORE_STEP_COMPLETED ? "\"out\"" : NULL;
    in.error = o == STORE_STEP_FAILED ? "boom" : NULL;
    in.credits = 2;
    in.now = T0 + 65000;
    return store_step_finish(f->s, &in, &f->charged, &f->discarded);
}

static int op_step_complete(struct fx *f)
{
    return step_end(f, STORE_STEP_COMPLETED);
}

static int op_step_fail(struct fx *f)
{
    return step_end(f, STORE_STEP_FAILED);
}

static int op_run_cancel(struct fx *f)
{
    return store_wf_run_cancel(f->s, &f->t, "wf_aaaaaaaaaaaaaaaaaaaaaaaa",
                               "run_aaaaaaaaaaaaaaaaaaaaaaa2", T0 + 66000);
}

static int op_document_finish(struct fx *f)
{
    struct store_chunk ch[2] = {{"first chunk", 1, NULL, 0, "m"}, {"second", 2, NULL, 0, "m"}};
    return store_document_finish(f->s, "doc_aaaaaaaaaaaaaaaaaaaaaaa1", ch, 2, NULL);
}

/* ---- The loop ---- */

/*
 * Call 'op' with its 1st, 2nd, ... statement failing until it succeeds: each failure a clean
 * ERR_STORE with every table as before, then one success that changes the database.
 */
static void faults(struct fx *f, const char *name, op_fn op)
{
    char *before = dump(f->s), what[160];
    bool clean = before != NULL, done = false;
    long n;

    if (!before)
        printf("#   %s: the database cannot be read before the call\n", name);
    for (n = 1; clean && n <= MAX_STATEMENTS; n++) {
        char *after;
        long left;
        int rc;

        store_fail_after(n);
        rc = op(f);
        left = store_fail_after(0);
        if (left > 0) { /* it ran fewer than n statements: nothing failed */
            done = rc == 0;
            if (!done)
                printf("#   %s: fails with %d when no statement fails\n", name, rc);
            break;
        }
        after = dump(f->s);
        if (rc == 0) {
            printf("#   %s: statement %ld failed and the call still succeeded\n", name, n);
            clean = false;
        } else if (rc != ERR_STORE) {
            printf("#   %s: statement %ld failed: %d, not ERR_STORE\n", name, n, rc);
            clean = false;
        } else if (!after) {
            printf("#   %s: statement %ld failed and left a transaction open\n", name, n);
            clean = false;
        } else if (strcmp(before, after) != 0) {
            printf("#   %s: statement %ld failed and the database changed\n", name, n);
            show_diff(before, after);
            clean = false;
        }
        free(after);
    }
    snprintf(what, sizeof(what),
             "%s: each of its first %ld statements failing is a clean error,"
             " every table as before",
             name, n - 1);
    ok(clean && n > 2, what);
    if (clean && done) {
        char *after = dump(f->s);
        snprintf(what, sizeof(what), "%s: then it succeeds and changes the database", name);
        ok(after && strcmp(before, after) != 0, what);
        free(after);
    } else {
        snprintf(what, sizeof(what), "%s: then it succeeds", name);
        ok(0, what);
    }
    free(before);
}

/* ---- People and the audit log: each change commits with its entry or not at all ---- */

#define USER_ID "usr_aaaaaaaaaaaaaaaaaaaaaaa1"

/* An entry of the command line about 'target', as the API arms one around a change. */
static void audit_of(struct fx *f, struct store_audit *a, const char *action, const char *target)
{
    memset(a, 0, sizeof(*a));
    a->tenant = f->t;
    a->actor_type = STORE_ACTOR_CLI;
    a->actor_id = "cli";
    a->actor_label = "test";
    a->action = action;
    a->target_type = "user";
    a->target_id = target;
}

/* A user made with its entry (a single statement: given a transaction of its own). */
static int op_user_create(struct fx *f)
{
    struct store_user u;
    struct store_audit a;
    struct err e;
    int rc;

    err_clear(&e);
    memset(&u, 0, sizeof(u));
    snprintf(u.id, sizeof(u.id), USER_ID);
    snprintf(u.org_id, sizeof(u.org_id), "%s", f->org.id);
    snprintf(u.email, sizeof(u.email), "ann@example.com");
    u.role = STORE_ROLE_OWNER;
    u.created_at = u.updated_at = T0;
    audit_of(f, &a, "user.create", USER_ID);
    store_audit_arm(f->s, &a);
    rc = store_user_create(f->s, &u, &e);
    store_audit_arm(f->s, NULL);
    return rc;
}

/* A session of the user, signed in with its entry. */
static int op_session_create(struct fx *f)
{
    static const unsigned char hash[32] = {1, 2, 3};
    struct store_session ses;
    struct store_audit a;
    int rc;

    memset(&ses, 0, sizeof(ses));
    snprintf(ses.id, sizeof(ses.id), "ses_aaaaaaaaaaaaaaaaaaaaaaa1");
    snprintf(ses.method, sizeof(ses.method), "password");
    ses.created_at = ses.seen_at = T0;
    ses.expires_at = T0 + 1000000;
    audit_of(f, &a, "session.create", ses.id);
    store_audit_arm(f->s, &a);
    rc = store_session_create(f->s, hash, &ses, USER_ID);
    store_audit_arm(f->s, NULL);
    return rc;
}

/* A second owner, so that the first may be disabled. */
static int second_owner(struct fx *f)
{
    struct store_user u;
    struct err e;
    err_clear(&e);
    memset(&u, 0, sizeof(u));
    snprintf(u.id, sizeof(u.id), "usr_aaaaaaaaaaaaaaaaaaaaaaa2");
    snprintf(u.org_id, sizeof(u.org_id), "%s", f->org.id);
    snprintf(u.email, sizeof(u.email), "bob@example.com");
    u.role = STORE_ROLE_OWNER;
    u.created_at = u.updated_at = T0;
    return store_user_create(f->s, &u, &e);
}

/* The first user disabled (its session revoked) with its entry. */
static int op_user_disable(struct fx *f)
{
    struct store_user out;
    struct store_audit a;
    struct err e;
    int rc;

    err_clear(&e);
    audit_of(f, &a, "user.update", USER_ID);
    store_audit_arm(f->s, &a);
    rc = store_user_update(f->s, f->org.id, USER_ID, NULL, -1, STORE_USER_DISABLED, T0 + 1, &out,
                           &e);
    store_audit_arm(f->s, NULL);
    return rc;
}

/* ---- Payments (issue 29) ---- */

/* A Checkout Session of 500 credits recorded for the organization (live). */
static int op_checkout(struct fx *f)
{
    struct store_checkout c;
    memset(&c, 0, sizeof(c));
    c.id = "cs_live_faults";
    c.tenant.mode = STORE_LIVE;
    snprintf(c.tenant.org_id, sizeof(c.tenant.org_id), "%s", f->org.id);
    c.price_id = "price_A";
    c.credits = 500;
    c.created_at = T0;
    c.expires_at = T0 + 86400000;
    return store_checkout_record(f->s, &c);
}

/* Stripe event 'id' of 'kind' for that session (its payment pi_faults). */
static int stripe_event(struct fx *f, const char *id, enum store_stripe_kind kind)
{
    struct store_stripe_event ev;
    enum store_stripe_outcome out;
    const char *note;
    memset(&ev, 0, sizeof(ev));
    ev.id = id;
    ev.type = kind == STORE_STRIPE_PAID ? "checkout.session.completed" : "charge.refunded";
    ev.livemode = true;
    ev.kind = kind;
    ev.object_id = kind == STORE_STRIPE_PAID ? "cs_live_faults" : "ch_faults";
    ev.org_id = f->org.id;
    ev.payment_intent = "pi_faults";
    ev.amount = 1000;
    ev.amount_refunded = 300;
    return store_stripe_apply(f->s, &ev, T0 + 2, &out, &note);
}

/* A refund that comes before its purchase: held. */
static int op_refund_first(struct fx *f)
{
    return stripe_event(f, "evt_faults_refund", STORE_STRIPE_REFUND);
}

/* The purchase: its credits, its ledger and audit entries, and the held refund applied. */
static int op_purchase(struct fx *f)
{
    return stripe_event(f, "evt_faults_paid", STORE_STRIPE_PAID);
}

/* ---- The script ---- */

/* The tenant and its employees, once the organization exists; a webhook endpoint that takes
 * every event (the ends of tasks and runs then write events and deliveries too). */
static int tenant(struct fx *f)
{
    struct store_emp_filter ef = {.status = -1, .limit = 10};
    struct store_emp_page ep;
    struct store_hook_endpoint we;
    int rc;

    snprintf(f->t.org_id, sizeof(f->t.org_id), "%s", f->org.id);
    f->t.mode = STORE_LIVE;
    rc = store_employee_list(f->s, &f->t, &ef, &f->a, &ep);
    if (rc || ep.n < 2)
        return rc ? rc : ERR_NOT_FOUND;
    snprintf(f->emp[0], sizeof(f->emp[0]), "%s", ep.items[0].id);
    snprintf(f->emp[1], sizeof(f->emp[1]), "%s", ep.items[1].id);
    snprintf(f->steps, sizeof(f->steps),
             "[{\"employee_id\":\"%s\",\"action\":\"respond\",\"input\":\"a\"},"
             "{\"employee_id\":\"%s\",\"action\":\"summarize\",\"input\":\"b\"}]",
             f->emp[0], f->emp[1]);
    memset(&we, 0, sizeof(we));
    we.id = "we_aaaaaaaaaaaaaaaaaaaaaaa1";
    we.url = "https://example.com/hook";
    we.events = "[\"*\"]";
    we.enabled = true;
    we.secret = (const unsigned char *)"sealed";
    we.secret_len = 6;
    we.created_at = we.updated_at = T0;
    return store_hook_endpoint_create(f->s, &f->t, &we, 10);
}

static int second_turn(struct fx *f)
{
    return chat_start(f, "msg_user2aaaaaaaaaaaaaaaaaaa", false);
}

/* A pending task 'id' of employee 0. */
static int add_task(struct fx *f, const char *id, int64_t created)
{
    struct store_task k;
    memset(&k, 0, sizeof(k));
    k.id = id;
    k.employee_id = f->emp[0];
    k.title = id;
    k.description = "";
    k.status = "pending";
    k.priority = "medium";
    k.created_at = k.updated_at = created;
    return store_task_create(f->s, &f->t, &k);
}

static int task1(struct fx *f)
{
    return add_task(f, "task_aaaaaaaaaaaaaaaaaaaaaaa1", T0);
}

static int task2(struct fx *f)
{
    return add_task(f, "task_aaaaaaaaaaaaaaaaaaaaaaa2", T0 + 1);
}

static int task3(struct fx *f)
{
    return add_task(f, "task_aaaaaaaaaaaaaaaaaaaaaaa3", T0 + 2);
}

/* The claim of a task's run, its credit reserved (ERR_INTERNAL: something else was taken). */
static int op_claim_task(struct fx *f)
{
    int rc = op_claim(f);
    return rc || (!f->claim.is_step && f->claim.task.reserved) ? rc : ERR_INTERNAL;
}

/* The claim of step 'idx' of a run. */
static int claim_step(struct fx *f, int64_t idx)
{
    int rc = op_claim(f);
    return rc || (f->claim.is_step && f->claim.step.step == idx) ? rc : ERR_INTERNAL;
}

static int op_claim_step(struct fx *f)
{
    return claim_step(f, 0);
}

static int claim_second_step(struct fx *f)
{
    return claim_step(f, 1);
}

static int task3_gone(struct fx *f)
{
    return store_task_delete(f->s, &f->t, "task_aaaaaaaaaaaaaaaaaaaaaaa3");
}

static int add_workflow(struct fx *f)
{
    struct store_workflow w;
    memset(&w, 0, sizeof(w));
    w.id = "wf_aaaaaaaaaaaaaaaaaaaaaaaa";
    w.name = "wf";
    w.trigger_type = "manual";
    w.trigger = "{\"type\":\"manual\"}";
    w.steps = f->steps;
    w.enabled = true;
    w.created_at = w.updated_at = T0;
    return store_workflow_create(f->s, &f->t, &w);
}

static int second_run(struct fx *f)
{
    struct store_wf_run r;
    memset(&r, 0, sizeof(r));
    r.id = "run_aaaaaaaaaaaaaaaaaaaaaaa2";
    r.workflow_id = "wf_aaaaaaaaaaaaaaaaaaaaaaaa";
    r.trigger_type = "manual";
    r.trigger_data = "{}";
    r.definition = f->steps;
    r.created_at = T0 + 7500;
    return store_wf_run_create(f->s, &f->t, &r, NULL, NULL);
}

static int add_document(struct fx *f)
{
    struct store_document d;
    memset(&d, 0, sizeof(d));
    d.id = "doc_aaaaaaaaaaaaaaaaaaaaaaa1";
    d.name = d.filename = "d.txt";
    d.content_type = "text/plain";
    d.sha256 = "00";
    d.tags = d.employee_ids = "[]";
    d.created_at = T0;
    return store_document_create(f->s, &f->t, &d);
}

/* A step of the script: an operation whose statements are failed in turn ('faults' true), or
 * one that puts in place what a later one works on. */
struct step {
    const char *name;
    op_fn op;
    bool faults;
};

/* In an order where each step finds what it works on. */
static const struct step script[] = {
    {"store_org_create", op_org_create, true},
    {"the tenant and a webhook endpoint", tenant, false},
    {"store_user_create (audited)", op_user_create, true},
    {"store_session_create (audited)", op_session_create, true},
    {"a second owner", second_owner, false},
    {"store_user_update (audited: disabled, sessions revoked)", op_user_disable, true},
    {"store_chat_begin", op_chat_begin, true},
    {"store_chat_finish", op_chat_finish, true},
    {"a second chat turn", second_turn, false},
    {"store_chat_abort", op_chat_abort, true},
    {"a task", task1, false},
    {"store_claim (a task)", op_claim_task, true},
    {"store_task_finish", op_task_finish, true},
    {"store_hook_claim", op_hook_claim, true},
    {"store_hook_attempted", op_hook_attempted, true},
    {"a second task", task2, false},
    {"its run", op_claim_task, false},
    {"store_task_update (cancel_run)", op_task_cancel, true},
    {"store_task_finish (discarded)", op_task_finish, true},
    {"a third task", task3, false},
    {"its run", op_claim_task, false},
    {"store_task_recover", op_task_recover, true},
    {"the third task deleted", task3_gone, false},
    {"a workflow", add_workflow, false},
    {"store_wf_run_create", op_run_create, true},
    {"store_claim (a workflow step)", op_claim_step, true},
    {"store_step_finish (completed)", op_step_complete, true},
    {"the second step", claim_second_step, false},
    {"store_step_finish (failed: the run fails)", op_step_fail, true},
    {"a second run", second_run, false},
    {"store_wf_run_cancel", op_run_cancel, true},
    {"a document", add_document, false},
    {"store_document_finish", op_document_finish, true},
    {"store_checkout_record", op_checkout, true},
    {"store_stripe_apply (a refund before its purchase: held)", op_refund_first, true},
    {"store_stripe_apply (the purchase, and the held refund with it)", op_purchase, true},
};
#define NSCRIPT (sizeof(script) / sizeof(script[0]))

/* Run the first 'n' steps of the script on 'f' with nothing failing; false (and a failed
 * check) when one fails. */
static bool run_script(struct fx *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int rc = script[i].op(f);
        if (rc) {
            printf("#   %s: %d\n", script[i].name, rc);
            ok(0, script[i].name);
            return false;
        }
    }
    return true;
}

/* ---- The backends ---- */

/* Empty the public schema of the PostgreSQL at 'url' (a test server's). */
static int pg_reset(const char *url)
{
    static const char *const sql[] = {"DROP SCHEMA IF EXISTS public CASCADE",
                                      "CREATE SCHEMA public"};
    struct store *s = NULL;
    struct err e;
    int rc;
    err_clear(&e);
    rc = store_open(url, &s, &e);
    for (size_t i = 0; !rc && i < 2; i++) {
        struct db_stmt *st = db_prepare(s, sql[i]);
        rc = st ? db_exec(st) : ERR_STORE;
    }
    store_close(s);
    return rc;
}

/* Remove the SQLite database 'path' with its log and shared memory. */
static void remove_db(const char *path)
{
    char side[128];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}

/* A new, migrated database at 'url' (SQLite: a file; PostgreSQL: its public schema emptied
 * first); NULL on failure. */
static struct store *fresh(const char *url, bool pg)
{
    struct store *s = NULL;
    struct err e;
    err_clear(&e);
    if (pg ? pg_reset(url) != 0 : (remove_db(url), false))
        return NULL;
    if (store_open(url, &s, &e) || store_migrate(s, &e)) {
        printf("#   %s\n", e.msg);
        store_close(s);
        return NULL;
    }
    return s;
}

/* Each step of the script that has its faults, on a new database after the steps before it
 * (so that one that fails does not leave the next its mess); then the whole script in a row. */
static void on(const char *url, const char *backend, bool pg)
{
    subtest(backend)
    {
        struct fx f;
        struct store_org o;

        for (size_t i = 0; i < NSCRIPT; i++) {
            if (!script[i].faults)
                continue;
            memset(&f, 0, sizeof(f));
            arena_init(&f.a);
            f.s = fresh(url, pg);
            if (!f.s)
                ok(0, "a new database");
            else if (run_script(&f, i))
                faults(&f, script[i].name, script[i].op);
            store_close(f.s);
            arena_cleanup(&f.a);
        }

        /* What the money did, nothing failing: 20, a chat reply of 3, an aborted turn
         * refunded, a task of 3, a cancelled and a recovered run refunded, a step of 2, a
         * purchase of 500 and its refund of 300/1000 (150); and the ledger says the same. */
        memset(&f, 0, sizeof(f));
        arena_init(&f.a);
        f.s = fresh(url, pg);
        if (f.s && run_script(&f, NSCRIPT) && store_org_get(f.s, f.org.id, &o) == 0) {
            int64_t bad = -1;
            is_int(o.credits, 20 - 3 - 3 - 2 + 500 - 150,
                   "the whole script charges what it should");
            ok(store_credit_check(f.s, NULL, NULL, &bad) == 0 && bad == 0,
               "every balance is the sum of its ledger");
        } else {
            ok(0, "the whole script");
        }
        store_close(f.s);
        arena_cleanup(&f.a);
    }
}

int main(void)
{
    const char *url = getenv("WORKFORCE_TEST_PG_URL");
    char path[] = "/tmp/workforce-test-faults-XXXXXX";
    char db[64];
    int fd = mkstemp(path);

    /* A line at a time: the store logs the failures it sees on stderr, often into the same file. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (fd >= 0)
        close(fd);
    snprintf(db, sizeof(db), "%s.db", path);
    store_hooks_init(render, NULL, NULL);
    on(db, "sqlite", false);
    remove_db(db);
    unlink(path);
    if (!url || !*url) {
        skip("postgres", "WORKFORCE_TEST_PG_URL is not set (tests/pg/pg.sh start DIR)");
    } else {
        on(url, "postgres", true);
    }
    store_hooks_init(NULL, NULL, NULL);
    return done_testing();
}
