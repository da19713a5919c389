/* SPDX-License-Identifier: MIT */
/*
 * test_fairness: fair shares between organizations in the store's two queues (issue 26), with
 * an explicit clock, on SQLite (a file, reached through two connections as two nodes would)
 * and on PostgreSQL when WORKFORCE_TEST_PG_URL names one.
 *
 *   tasks and steps: the claim serves organizations round-robin (least recently served first),
 *     and within one organization keeps the contract's order (priority, due, creation; a step
 *     as a medium task), whichever connection claims;
 *   the outbox: an endpoint has at most one attempt in flight, so another endpoint and another
 *     organization are served beside a dead receiver's backlog; organizations take turns;
 *   the last free worker or delivery thread of a node (store_claim_idle,
 *     store_hook_claim_idle) takes only an organization with nothing in progress;
 *   paused deliveries: a disabled endpoint's deliveries are not claimed, do not move the wake
 *     time, come back due when it is enabled again, and (SQLite) 100,000 of them cost the claim
 *     nothing measurable.
 */
#include "../../src/core/clock.h"
#include "../../src/core/mem.h"
#include "../../src/store/store.h"
#include "../../src/store/store_int.h"
#include "../../src/tasks/runner.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T0 INT64_C(1795000000000)
#define LEASE 60000

static const struct store_employee seed[] = {
    {.name = "Ann", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
};

/* One organization of the test: its live tenant and its one employee. */
struct org {
    struct store_tenant t;
    char emp[ID_MAX];
};

static struct arena A;

static int org_new(struct store *s, const char *slug, struct org *o)
{
    struct store_emp_filter ef = {.status = -1, .limit = 10};
    struct store_emp_page ep;
    struct store_org org;
    struct err e;
    int rc;

    err_clear(&e);
    memset(o, 0, sizeof(*o));
    rc = store_org_create(s, slug, 0, 100000, seed, 1, &org, &e);
    if (rc)
        return rc;
    snprintf(o->t.org_id, sizeof(o->t.org_id), "%s", org.id);
    o->t.mode = STORE_LIVE;
    rc = store_employee_list(s, &o->t, &ef, &A, &ep);
    if (!rc && ep.n)
        snprintf(o->emp, sizeof(o->emp), "%s", ep.items[0].id);
    return rc ? rc : ep.n ? 0 : ERR_NOT_FOUND;
}

/* ---- Tasks and workflow steps ---- */

static void add_task(struct store *s, const struct org *o, const char *id, const char *prio,
                     int64_t created)
{
    struct store_task k;
    memset(&k, 0, sizeof(k));
    k.id = id;
    k.employee_id = o->emp;
    k.title = id;
    k.description = "";
    k.status = "pending";
    k.priority = prio;
    k.created_at = k.updated_at = created;
    if (store_task_create(s, &o->t, &k) != 0)
        printf("# cannot create task %s\n", id);
}

/* Claim at 'now' on 's': a task's id, "run_id/step", or "" when nothing is runnable. */
static const char *claim(struct store *s, int64_t now)
{
    static char what[128];
    struct store_claim c;
    int64_t wake = 0;
    int rc = store_claim(s, now, &task_queue_rules, &A, &c, &wake);
    if (rc)
        return "";
    if (!c.is_step)
        snprintf(what, sizeof(what), "%s", c.task.task.id);
    else
        snprintf(what, sizeof(what), "%s/%lld", c.step.run_id, (long long)c.step.step);
    return what;
}

static void add_run(struct store *s, const struct org *o, const char *wf, const char *id,
                    const char *steps, int64_t at)
{
    struct store_wf_run r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.workflow_id = wf;
    r.trigger_type = "manual";
    r.trigger_data = "{}";
    r.definition = steps;
    r.created_at = at;
    if (store_wf_run_create(s, &o->t, &r, NULL, NULL) != 0)
        printf("# cannot create run %s\n", id);
}

/* The claims alternate between 's1' and 's2', as two nodes' would. */
static void test_tasks(struct store *s1, struct store *s2, const struct org *a, const struct org *b)
{
    subtest("tasks: round-robin between organizations")
    {
        /* B queued four tasks; one of them runs; then A queues two low-priority ones. */
        add_task(s1, b, "task_b_urgent", "urgent", T0 + 2);
        add_task(s1, b, "task_b_med1", "medium", T0 + 1);
        add_task(s1, b, "task_b_med2", "medium", T0 + 3);
        add_task(s1, b, "task_b_med3", "medium", T0 + 4);
        is_str(claim(s1, T0 + 10), "task_b_urgent", "B's urgent task first (B alone)");
        add_task(s1, a, "task_a_low1", "low", T0 + 20);
        add_task(s1, a, "task_a_low2", "low", T0 + 21);
        static const char *const want[] = {"task_a_low1", "task_b_med1", "task_a_low2",
                                           "task_b_med2", "task_b_med3", ""};
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            char what[96];
            snprintf(what, sizeof(what), "claim %zu (connection %d) is '%s'", i + 2,
                     (int)(i % 2) + 1, want[i]);
            is_str(claim(i % 2 ? s2 : s1, T0 + 30 + (int64_t)i), want[i], what);
        }
    }
    subtest("steps and tasks: round-robin between organizations")
    {
        char steps[512];
        struct store_workflow w;
        snprintf(steps, sizeof(steps),
                 "[{\"employee_id\":\"%s\",\"action\":\"respond\",\"input\":\"one\"},"
                 "{\"employee_id\":\"%s\",\"action\":\"respond\",\"input\":\"two\"}]",
                 b->emp, b->emp);
        memset(&w, 0, sizeof(w));
        w.id = "wf_fairbbbbbbbbbbbbbbbbbbbb";
        w.name = "b";
        w.trigger_type = "manual";
        w.trigger = "{\"type\":\"manual\"}";
        w.steps = steps;
        w.enabled = true;
        w.created_at = w.updated_at = T0;
        is_int(store_workflow_create(s1, &b->t, &w), 0, "B's two-step workflow");
        /* B's three runs are ready before A's tasks are created: by time alone they would all
         * go first. */
        add_run(s1, b, w.id, "run_fairb1", steps, T0 + 100);
        add_run(s1, b, w.id, "run_fairb2", steps, T0 + 101);
        add_run(s1, b, w.id, "run_fairb3", steps, T0 + 102);
        add_task(s1, a, "task_a_med1", "medium", T0 + 110);
        add_task(s1, a, "task_a_med2", "medium", T0 + 111);
        /* B was served last above: A first. */
        static const char *const want[] = {"task_a_med1",  "run_fairb1/0", "task_a_med2",
                                           "run_fairb2/0", "run_fairb3/0", ""};
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            char what[96];
            snprintf(what, sizeof(what), "claim %zu (connection %d) is '%s'", i + 1,
                     (int)(i % 2) + 1, want[i]);
            is_str(claim(i % 2 ? s2 : s1, T0 + 120 + (int64_t)i), want[i], what);
        }
    }
}

/* Claim at 'now' on 's' (the last free worker's claim when 'idle'), then end the run at once
 * when 'end': the claimed task's id, or "". */
static const char *claim_end(struct store *s, int64_t now, bool idle, bool end)
{
    static char what[ID_MAX];
    struct store_claim c;
    int64_t wake = 0, charged = 0;
    bool discarded = false;
    int rc = idle ? store_claim_idle(s, now, &task_queue_rules, &A, &c, &wake)
                  : store_claim(s, now, &task_queue_rules, &A, &c, &wake);
    if (rc || c.is_step)
        return "";
    snprintf(what, sizeof(what), "%s", c.task.task.id);
    if (end) {
        struct store_task_finish f;
        memset(&f, 0, sizeof(f));
        f.tenant = &c.task.task.tenant;
        f.task_id = c.task.task.id;
        f.run_id = c.task.run_id;
        f.employee_id = c.task.task.employee_id;
        f.ok = true;
        f.result = "done";
        f.reserved = c.task.reserved;
        f.now = now + 1;
        if (store_task_finish(s, &f, &charged, &discarded) != 0)
            printf("# cannot finish %s\n", what);
    }
    return what;
}

/* A node's last free worker claims with store_claim_idle(): only an organization with nothing
 * in progress. */
static void test_tasks_idle(struct store *s1, struct store *s2, const struct org *e,
                            const struct org *f)
{
    subtest("tasks: the last free worker is kept for an idle organization")
    {
        add_task(s1, f, "task_f1", "medium", T0 + 300);
        is_str(claim_end(s1, T0 + 301, false, true), "task_f1", "F served (and done)");
        add_task(s1, e, "task_e1", "medium", T0 + 310);
        is_str(claim_end(s2, T0 + 311, false, false), "task_e1", "E served (still running)");
        add_task(s1, f, "task_f2", "medium", T0 + 320);
        is_str(claim_end(s1, T0 + 321, false, true), "task_f2", "F served again (and done)");
        add_task(s1, e, "task_e2", "urgent", T0 + 330);
        add_task(s1, f, "task_f3", "low", T0 + 331);
        is_str(claim_end(s2, T0 + 340, true, false), "task_f3",
               "the last worker passes over E (served least recently, but running) for F");
        is_str(claim_end(s1, T0 + 341, true, false), "",
               "and takes nothing while both have work in progress");
        is_str(claim_end(s2, T0 + 342, false, false), "task_e2", "any other worker takes E's");
    }
}

/* ---- The outbox ---- */

static const char *fake_render(enum store_hook_kind kind, const void *obj, struct arena *a)
{
    (void)kind;
    (void)obj;
    (void)a;
    return "{}";
}

static void endpoint(struct store *s, const struct org *o, const char *id, bool enabled)
{
    struct store_hook_endpoint ep;
    memset(&ep, 0, sizeof(ep));
    ep.id = id;
    ep.url = "https://example.com/hook";
    ep.events = "[\"*\"]";
    ep.enabled = enabled;
    ep.secret = (const unsigned char *)"sealed";
    ep.secret_len = 6;
    ep.created_at = ep.updated_at = T0;
    if (store_hook_endpoint_create(s, &o->t, &ep, 16) != 0)
        printf("# cannot create endpoint %s\n", id);
}

static int endpoint_enable(struct store *s, const struct org *o, const char *id, bool on)
{
    struct store_hook_endpoint ep;
    int rc = store_hook_endpoint_get(s, &o->t, id, &A, &ep);
    if (rc)
        return rc;
    ep.enabled = on;
    return store_hook_endpoint_update(s, &o->t, &ep);
}

/* One event of organization 'o' (a document becomes ready): a delivery to each of its enabled
 * endpoints, due at the clock of the commit. */
static void event(struct store *s, const struct org *o, const char *doc)
{
    struct store_chunk ch = {"fair shares", 1, NULL, 0, "m"};
    struct store_document d;
    memset(&d, 0, sizeof(d));
    d.id = doc;
    d.name = d.filename = "f.txt";
    d.content_type = "text/plain";
    d.sha256 = "00";
    d.tags = d.employee_ids = "[]";
    d.created_at = clock_now_ms();
    if (store_document_create(s, &o->t, &d) != 0 || store_document_finish(s, doc, &ch, 1, NULL))
        printf("# cannot record the event of %s\n", doc);
    /* the next event is due strictly later: the order "due first" the tests expect is then the
     * order they were made in, not a tie broken by endpoint id (waits for the clock's next
     * millisecond, at most 100 ms should the clock stand still) */
    for (int64_t t = clock_now_ms(), end = t + 100; clock_now_ms() <= t && clock_now_ms() < end;)
        ;
}

static int hook_claim_at(struct store *s, int64_t now, struct store_hook_claim *c, int64_t *wake)
{
    int64_t w = 0;
    return store_hook_claim(s, now, LEASE, &A, c, wake ? wake : &w);
}

static int attempted(struct store *s, const struct store_hook_claim *c, int64_t at, int64_t retry)
{
    struct store_hook_attempt at_;
    memset(&at_, 0, sizeof(at_));
    at_.delivery_id = c->delivery_id;
    at_.lease = c->lease;
    at_.at = at;
    at_.error = "timed out";
    at_.duration_ms = 3000;
    at_.next_attempt_at = retry;
    return store_hook_attempted(s, &at_);
}

#define EB1 "we_fairb1aaaaaaaaaaaaaaaaaa"
#define EB2 "we_fairb2aaaaaaaaaaaaaaaaaa"
#define EA "we_fairaaaaaaaaaaaaaaaaaaaa"
#define EC_ON "we_faircon_aaaaaaaaaaaaaaa"
#define EC_OFF "we_faircoffaaaaaaaaaaaaaaa"

static void test_outbox(struct store *s1, struct store *s2, const struct org *a,
                        const struct org *b)
{
    subtest("outbox: a dead receiver's backlog does not hold anyone else's")
    {
        struct store_hook_claim c, first;
        int64_t now, wake = 0;

        /* B has two endpoints; the first one never answers. Three events: three deliveries
         * due at each. */
        endpoint(s1, b, EB1, true);
        endpoint(s1, b, EB2, true);
        endpoint(s1, a, EA, true);
        event(s1, b, "doc_fairb1");
        event(s1, b, "doc_fairb2");
        event(s1, b, "doc_fairb3");
        now = clock_now_ms();
        is_int(hook_claim_at(s1, now + 10, &first, NULL), 0, "a delivery of B");
        is_str(first.endpoint_id, EB1, "... to its first endpoint (both unserved: by id)");
        is_int(hook_claim_at(s2, now + 20, &c, NULL), 0, "another one");
        is_str(c.endpoint_id, EB2,
               "... to its other endpoint: one attempt in flight per endpoint at most");
        is_int(hook_claim_at(s1, now + 30, &c, &wake), ERR_NOT_FOUND,
               "B's third and later deliveries wait for their endpoint");
        is_int(wake, now + 10 + LEASE, "until the first lease ends");
        /* A's event comes after B's whole backlog. */
        event(s1, a, "doc_faira1");
        now = clock_now_ms() > now + 40 ? clock_now_ms() : now + 40;
        is_int(hook_claim_at(s2, now, &c, NULL), 0, "A's delivery");
        is_str(c.endpoint_id, EA, "... is taken at once, before B's older ones");
        is_int(attempted(s1, &c, now + 1, 0), 0, "A's attempt ends");
        /* B's dead endpoint times out: its next delivery is due, the timed-out one later. */
        is_int(attempted(s2, &first, now + 3000, now + 8000), 0, "B's first attempt times out");
        is_int(hook_claim_at(s1, now + 3001, &c, NULL), 0, "the endpoint is free again");
        ok(strcmp(c.endpoint_id, EB1) == 0 && strcmp(c.delivery_id, first.delivery_id) != 0,
           "its delivery due first is next, the retried one after");
        store_hook_endpoint_delete(s1, &b->t, EB1);
        store_hook_endpoint_delete(s1, &b->t, EB2);
        store_hook_endpoint_delete(s1, &a->t, EA);
    }
    subtest("outbox: organizations take turns")
    {
        struct store_hook_claim c;
        int64_t now;
        char orgs[4][ID_MAX];

        /* new endpoints: neither organization has been served by them yet */
        endpoint(s1, b, EB1, true);
        endpoint(s1, b, EB2, true);
        endpoint(s1, a, EA, true);
        event(s1, b, "doc_fairb4");
        event(s1, b, "doc_fairb5");
        event(s1, a, "doc_faira2");
        event(s1, a, "doc_faira3");
        now = clock_now_ms();
        /* each claimed delivery is attempted at once (delivered): the endpoint is free again */
        for (int i = 0; i < 4; i++) {
            struct store_hook_attempt ok_;
            struct store *s = i % 2 ? s2 : s1;
            orgs[i][0] = 0;
            if (hook_claim_at(s, now + 10 * (i + 1), &c, NULL) != 0)
                continue;
            snprintf(orgs[i], sizeof(orgs[i]), "%s", c.tenant.org_id);
            memset(&ok_, 0, sizeof(ok_));
            ok_.delivery_id = c.delivery_id;
            ok_.lease = c.lease;
            ok_.at = now + 10 * (i + 1) + 1;
            ok_.status_code = 200;
            ok_.delivered = true;
            store_hook_attempted(s, &ok_);
        }
        ok(strcmp(orgs[0], b->t.org_id) == 0 && strcmp(orgs[1], a->t.org_id) == 0 &&
               strcmp(orgs[2], b->t.org_id) == 0 && strcmp(orgs[3], a->t.org_id) == 0,
           "B (its deliveries due first), A, B, A: turns, not B's four deliveries first");
        store_hook_endpoint_delete(s1, &b->t, EB1);
        store_hook_endpoint_delete(s1, &b->t, EB2);
        store_hook_endpoint_delete(s1, &a->t, EA);
    }
}

static void test_outbox_idle(struct store *s1, struct store *s2, const struct org *a,
                             const struct org *b)
{
    subtest("outbox: the last free thread is kept for an idle organization")
    {
        struct store_hook_claim c;
        int64_t now, w = 0;

        endpoint(s1, b, EB1, true);
        endpoint(s1, b, EB2, true);
        endpoint(s1, a, EA, true);
        event(s1, b, "doc_fairb6");
        event(s1, a, "doc_faira4");
        now = clock_now_ms();
        is_int(hook_claim_at(s1, now + 10, &c, NULL), 0, "a claim");
        is_str(c.tenant.org_id, b->t.org_id, "B's delivery, due first");
        is_int(store_hook_claim_idle(s2, now + 20, LEASE, &A, &c, &w), 0, "the last thread's");
        is_str(c.endpoint_id, EA, "passes over B's other endpoint (B has one in flight) for A");
        is_int(store_hook_claim_idle(s1, now + 30, LEASE, &A, &c, &w), ERR_NOT_FOUND,
               "and takes nothing while both have one in flight");
        is_int(hook_claim_at(s2, now + 40, &c, NULL), 0, "any other thread");
        is_str(c.endpoint_id, EB2, "takes B's");
        store_hook_endpoint_delete(s1, &b->t, EB1);
        store_hook_endpoint_delete(s1, &b->t, EB2);
        store_hook_endpoint_delete(s1, &a->t, EA);
    }
}

static void test_paused(struct store *s, const struct org *c_org)
{
    subtest("paused deliveries")
    {
        struct store_hook_delivery_page dl;
        struct store_hook_claim c;
        int64_t now, wake = 0;

        endpoint(s, c_org, EC_ON, true);
        endpoint(s, c_org, EC_OFF, true);
        event(s, c_org, "doc_fairc1");
        is_int(endpoint_enable(s, c_org, EC_OFF, false), 0, "one endpoint paused");
        now = clock_now_ms();
        is_int(hook_claim_at(s, now + 10, &c, NULL), 0, "a claim");
        is_str(c.endpoint_id, EC_ON, "takes the enabled endpoint's delivery");
        is_int(attempted(s, &c, now + 20, now + 5020), 0, "which fails, retried in 5 s");
        is_int(hook_claim_at(s, now + 30, &c, &wake), ERR_NOT_FOUND,
               "the paused endpoint's delivery is not claimed");
        is_int(wake, now + 5020, "nor does it move the wake time");
        store_hook_deliveries_list(s, &c_org->t, EC_OFF, NULL, 10, 0, NULL, &A, &dl);
        ok(dl.n == 1 && strcmp(dl.items[0].status, "pending") == 0, "it is still pending");
        is_int(endpoint_enable(s, c_org, EC_OFF, true), 0, "enabled again");
        is_int(hook_claim_at(s, now + 40, &c, NULL), 0, "a claim");
        is_str(c.endpoint_id, EC_OFF, "takes its delivery, due since before the pause");
        is_int(attempted(s, &c, now + 50, 0), 0, "it fails for good");
        is_int(hook_claim_at(s, now + 60, &c, &wake), ERR_NOT_FOUND, "nothing else is due");
        is_int(wake, now + 5020, "the retry is next");
        store_hook_endpoint_delete(s, &c_org->t, EC_ON);
        store_hook_endpoint_delete(s, &c_org->t, EC_OFF);
    }
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) * 1e3 + (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static int dbl_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

/* The median time (ms) of 21 claims at 'now' that find nothing. */
static double claim_ms(struct store *s, int64_t now)
{
    double t[21];
    for (int i = 0; i < 21; i++) {
        struct store_hook_claim c;
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        hook_claim_at(s, now, &c, NULL);
        t[i] = ms_since(&t0);
    }
    qsort(t, 21, sizeof(t[0]), dbl_cmp);
    return t[10];
}

/* SQLite: 16 disabled endpoints with 6,250 pending deliveries each, written directly as a bulk
 * of history would be. A claim that read them would take tens of milliseconds. */
static void test_paused_cost(struct store *s, const struct org *d_org)
{
    subtest("100,000 paused deliveries cost the claim nothing")
    {
        char ids[16][ID_MAX];
        int64_t now = clock_now_ms();
        double before, after;
        int rc;

        for (int i = 0; i < 16; i++) {
            snprintf(ids[i], sizeof(ids[i]), "we_fairpaused%02daaaaaaaaaaa", i);
            endpoint(s, d_org, ids[i], true);
        }
        before = claim_ms(s, now);
        rc = db_begin(s, DB_TX_WRITE);
        if (!rc) {
            const char *texts[] = {d_org->t.org_id};
            const int64_t ints[] = {now - 3600000};
            rc = db_run(s,
                        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x <"
                        " 6250) INSERT INTO events (id, org_id, mode, type, created_at, data)"
                        " SELECT 'evt_fairpaused' || x, $1, 'live', 'task.completed', $2 + x,"
                        " '{}' FROM n",
                        texts, 1, ints, 1);
            if (!rc)
                rc = db_run(s,
                            "INSERT INTO webhook_deliveries (id, org_id, mode, endpoint_id,"
                            " event_id, status, attempts, next_attempt_at, created_at,"
                            " updated_at) SELECT 'wdl_' || e.id || v.id, v.org_id, 'live', e.id,"
                            " v.id, 'pending', 0, v.created_at, v.created_at, v.created_at FROM"
                            " events v JOIN webhook_endpoints e ON e.org_id = v.org_id WHERE"
                            " v.org_id = $1",
                            texts, 1, NULL, 0);
            rc = rc ? rc : db_commit(s);
            if (rc)
                db_rollback(s);
        }
        is_int(rc, 0, "100,000 deliveries written");
        for (int i = 0; !rc && i < 16; i++)
            rc = endpoint_enable(s, d_org, ids[i], false);
        is_int(rc, 0, "their 16 endpoints paused");
        after = claim_ms(s, now);
        printf("# a claim that finds nothing: %.3f ms with none stored, %.3f ms with 100,000 "
               "paused deliveries (medians of 21)\n",
               before, after);
        ok(after < 3 * before + 1.0, "the claim does not read them");
        for (int i = 0; i < 16; i++)
            store_hook_endpoint_delete(s, &d_org->t, ids[i]);
    }
}

/* ---- The two databases ---- */

static void run_all(struct store *s1, struct store *s2, bool sqlite)
{
    struct org a, b, c, d, e, f;
    ok(org_new(s1, "fair-a", &a) == 0 && org_new(s1, "fair-b", &b) == 0 &&
           org_new(s1, "fair-c", &c) == 0 && org_new(s1, "fair-d", &d) == 0 &&
           org_new(s1, "fair-e", &e) == 0 && org_new(s1, "fair-f", &f) == 0,
       "six organizations");
    store_hooks_init(fake_render, NULL, NULL);
    test_tasks(s1, s2, &a, &b);
    test_tasks_idle(s1, s2, &e, &f);
    test_outbox(s1, s2, &a, &b);
    test_outbox_idle(s1, s2, &a, &b);
    test_paused(s1, &c);
    if (sqlite)
        test_paused_cost(s1, &d);
    store_hooks_init(NULL, NULL, NULL);
}

/* Empty the public schema of the PostgreSQL at 'url' (a test server's), through the driver. */
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
        struct db_stmt *st = s->drv->prepare(s, sql[i]);
        rc = st ? db_exec(st) : ERR_STORE;
    }
    store_close(s);
    return rc;
}

static void run_on(const char *url, bool sqlite)
{
    struct store *s1 = NULL, *s2 = NULL;
    struct err e;

    err_clear(&e);
    ok(store_open(url, &s1, &e) == 0 && store_migrate(s1, &e) == 0 && store_open(url, &s2, &e) == 0,
       sqlite ? "sqlite: two connections" : "postgres: two connections");
    if (s1 && s2)
        run_all(s1, s2, sqlite);
    store_close(s2);
    store_close(s1);
}

int main(void)
{
    char path[] = "/tmp/workforce-test-fairness-XXXXXX";
    const char *pg = getenv("WORKFORCE_TEST_PG_URL");
    char db[64];
    int fd = mkstemp(path);

    arena_init(&A);
    if (fd >= 0)
        close(fd);
    snprintf(db, sizeof(db), "%s.db", path);
    run_on(db, true);
    if (pg && *pg) {
        ok(pg_reset(pg) == 0, "postgres: an empty schema");
        run_on(pg, false);
    } else {
        skip("postgres", "WORKFORCE_TEST_PG_URL is not set (tests/pg/pg.sh start DIR)");
    }
    unlink(path);
    {
        static const char *const ext[] = {"", "-wal", "-shm"};
        for (size_t i = 0; i < 3; i++) {
            char f[80];
            snprintf(f, sizeof(f), "%s%s", db, ext[i]);
            unlink(f);
        }
    }
    arena_cleanup(&A);
    return done_testing();
}
