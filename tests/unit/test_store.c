/* SPDX-License-Identifier: MIT */
/*
 * The store contract test: every operation of store.h against SQLite (":memory:" and a file,
 * the file also reopened to check durability of what was committed), and the same operations
 * against PostgreSQL when WORKFORCE_TEST_PG_URL names one (tools/test.sh starts it; its public
 * schema is emptied first). The tasks' queue and workflow runs have their own tests
 * (test_tasks.c, test_wf_runs.c).
 */
#include "../../src/api/api.h"
#include "../../src/core/clock.h"
#include "../../src/store/store.h"
#include "../../src/store/store_int.h"
#include "t.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const struct store_employee seed[] = {
    {.name = "Bea", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
    {.name = "Al", .role = "R", .category = "sales", .tier = "manager", .capabilities = "[\"x\"]"},
    {.name = "Cy", .role = "R", .category = "hr", .tier = "starter", .capabilities = "[]"},
    {.name = "Al", .role = "R2", .category = "hr", .tier = "starter", .capabilities = "[]"},
};

static void test_migrate(struct store *s)
{
    subtest("migrate")
    {
        struct err e;
        err_clear(&e);
        is_int(store_migrate(s, &e), 0, "migrate from empty");
        is_int(store_migrate(s, &e), 0, "migrate again is a no-op");
        is_int(store_ping(s), 0, "ping");
    }
}

static void test_orgs_keys(struct store *s, struct store_org *org)
{
    subtest("orgs and keys")
    {
        struct store_org o2;
        struct store_key k, got;
        struct store_key *list = NULL;
        struct arena a;
        size_t n = 0;
        struct err e;

        err_clear(&e);
        is_int(store_org_create(s, "acme", 1, 50, seed, 4, org, &e), 0, "create org");
        ok(id_valid(org->id, "org"), "org id form");
        is_int(store_org_create(s, "acme", 0, 0, seed, 4, &o2, &e), ERR_CONFLICT,
               "second create of the slug conflicts");
        is_int(store_org_get_by_slug(s, "nope", &o2), ERR_NOT_FOUND, "unknown slug");
        is_int(store_org_get_by_slug(s, "acme", &o2), 0, "read by slug");
        is_int(o2.credits, 50, "credits stored");
        is_int(o2.tier, 1, "tier stored");
        is_int(store_org_update(s, "acme", 2, -1, &o2), 0, "update tier only");
        ok(o2.tier == 2 && o2.credits == 50, "tier changed, credits kept");
        is_int(store_org_update(s, "acme", -1, 7, &o2), 0, "update credits only");
        ok(o2.tier == 2 && o2.credits == 7, "credits changed, tier kept");
        is_int(store_org_update(s, "ghost", 1, 1, &o2), ERR_NOT_FOUND, "update unknown org");

        memset(&k, 0, sizeof(k));
        id_new("key", k.id, sizeof(k.id));
        snprintf(k.org_id, sizeof(k.org_id), "%s", org->id);
        k.mode = STORE_TEST;
        memset(k.hash, 0xAB, sizeof(k.hash));
        snprintf(k.last4, sizeof(k.last4), "wxyz");
        snprintf(k.scopes, sizeof(k.scopes), "chat");
        k.created_at = 1000;
        is_int(store_key_create(s, &k), 0, "create key");
        is_int(store_key_find(s, k.hash, &got), 0, "find key by hash");
        ok(strcmp(got.id, k.id) == 0 && got.mode == STORE_TEST && strcmp(got.scopes, "chat") == 0 &&
               got.revoked_at == 0 && got.expires_at == 0,
           "key fields round-trip");
        {
            struct store_org ao;
            ok(store_key_auth(s, k.hash, &got, &ao) == 0 && strcmp(got.id, k.id) == 0 &&
                   strcmp(ao.id, org->id) == 0 && ao.tier == 2 && ao.credits == 7,
               "key with its organization in one read");
        }
        memset(got.hash, 0xCD, sizeof(got.hash));
        is_int(store_key_find(s, got.hash, &got), ERR_NOT_FOUND, "unknown hash");
        is_int(store_key_revoke(s, k.id, 5000), 0, "revoke");
        is_int(store_key_revoke(s, k.id, 9000), 0, "revoke twice is fine");
        store_key_find(s, k.hash, &got);
        is_int(got.revoked_at, 5000, "first revocation time kept");
        is_int(store_key_revoke(s, "key_nope", 1), ERR_NOT_FOUND, "revoke unknown key");
        arena_init(&a);
        is_int(store_key_list(s, org->id, &a, &list, &n), 0, "list keys");
        is_int(n, 1, "one key listed");
        arena_cleanup(&a);
    }
}

static void test_employees(struct store *s, const struct store_org *org)
{
    subtest("employees")
    {
        struct store_tenant live = {.mode = STORE_LIVE}, test = {.mode = STORE_TEST},
                            other = {.mode = STORE_LIVE};
        struct store_emp_filter f = {.status = -1, .limit = 2};
        struct store_emp_page p;
        struct store_employee emp, got, before;
        struct arena a;
        const char *seen[8];
        size_t nseen = 0;

        snprintf(live.org_id, sizeof(live.org_id), "%s", org->id);
        snprintf(test.org_id, sizeof(test.org_id), "%s", org->id);
        snprintf(other.org_id, sizeof(other.org_id), "org_someoneelse00000000000");
        arena_init(&a);

        /* Keyset walk: name then id, every employee once. */
        for (;;) {
            is_int(store_employee_list(s, &live, &f, &a, &p), 0, "list page");
            is_int(p.total, 4, "total ignores the cursor");
            for (size_t i = 0; i < p.n && nseen < 8; i++)
                seen[nseen++] = p.items[i].id;
            if (!p.has_more)
                break;
            f.after_name = p.items[p.n - 1].name;
            f.after_id = p.items[p.n - 1].id;
        }
        is_int(nseen, 4, "walk saw every employee once");
        f.after_name = f.after_id = NULL;
        f.limit = 10;
        store_employee_list(s, &live, &f, &a, &p);
        ok(p.n == 4 && strcmp(p.items[0].name, "Al") == 0 && strcmp(p.items[1].name, "Al") == 0 &&
               strcmp(p.items[0].id, p.items[1].id) < 0 && strcmp(p.items[3].name, "Cy") == 0,
           "order is name then id");
        f.category = "hr";
        store_employee_list(s, &live, &f, &a, &p);
        ok(p.n == 2 && p.total == 2, "category filter");
        f.category = NULL;
        store_employee_list(s, &test, &f, &a, &p);
        ok(p.n == 4, "test mode has its own copy of the catalog");
        ok(strcmp(p.items[0].id, seen[0]) != 0 && strcmp(p.items[0].id, seen[1]) != 0,
           "test-mode ids differ from live ones");
        store_employee_list(s, &other, &f, &a, &p);
        is_int(p.n, 0, "another org sees nothing");

        is_int(store_employee_get(s, &live, seen[0], &a, &got), 0, "get");
        is_int(store_employee_get(s, &test, seen[0], &a, &got), ERR_NOT_FOUND,
               "a live employee is absent in test mode");
        is_int(store_employee_get(s, &other, seen[0], &a, &got), ERR_NOT_FOUND,
               "another org's employee is absent");

        memset(&emp, 0, sizeof(emp));
        emp.status = STORE_EMP_OFFLINE;
        emp.model = NULL;
        is_int(store_employee_update(s, &live, seen[0], &emp, STORE_EMP_STATUS, 77), 0,
               "set offline");
        f.status = STORE_EMP_OFFLINE;
        store_employee_list(s, &live, &f, &a, &p);
        ok(p.n == 1 && strcmp(p.items[0].id, seen[0]) == 0, "status filter offline");
        f.status = STORE_EMP_IDLE;
        store_employee_list(s, &live, &f, &a, &p);
        is_int(p.n, 3, "status filter idle");
        store_employee_get(s, &live, seen[0], &a, &before);
        emp.name = "Zoe";
        emp.model = "gpt-x";
        is_int(store_employee_update(s, &live, seen[0], &emp, STORE_EMP_NAME | STORE_EMP_MODEL, 78),
               0, "rename and set model");
        store_employee_get(s, &live, seen[0], &a, &got);
        ok(strcmp(got.name, "Zoe") == 0 && got.model && strcmp(got.model, "gpt-x") == 0 &&
               got.status == STORE_EMP_OFFLINE && strcmp(got.role, before.role) == 0 &&
               got.updated_at == 78,
           "only the named fields changed");
        emp.model = NULL;
        store_employee_update(s, &live, seen[0], &emp, STORE_EMP_MODEL, 79);
        store_employee_get(s, &live, seen[0], &a, &got);
        ok(got.model == NULL, "model set back to null");
        is_int(store_employee_update(s, &other, seen[0], &emp, STORE_EMP_NAME, 80), ERR_NOT_FOUND,
               "another org cannot update");
        arena_cleanup(&a);
    }
}

static void test_stats(struct store *s, const struct store_org *org)
{
    subtest("stats")
    {
        struct store_tenant live = {.mode = STORE_LIVE};
        struct store_emp_filter f = {.status = -1, .limit = 1};
        struct store_emp_page p;
        struct store_emp_summary sum;
        struct store_stats st;
        struct arena a;
        const int64_t day = 86400000, t0 = 1795219200000LL; /* 2026-11-21T00:00Z */
        const char *id;

        snprintf(live.org_id, sizeof(live.org_id), "%s", org->id);
        arena_init(&a);
        store_employee_list(s, &live, &f, &a, &p);
        id = p.items[0].id;
        is_int(store_employee_stats(s, &live, id, t0 - 6 * day, t0 + day, day, 7, &a, &st), 0,
               "stats of a fresh employee");
        ok(st.messages == 0 && st.ratings == 0 && st.p95_response_ms == 0 && st.nseries == 7,
           "all zero, 7 buckets");
        for (int i = 1; i <= 20; i++) {
            struct store_event ev = {id, "message", t0 + i * 1000, i * 10, 2, -1, "conv_a"};
            if (i > 10)
                ev.conversation_id = "conv_b";
            store_event_add(s, &live, &ev);
        }
        {
            struct store_event old = {id, "message", t0 - 3 * day, 5000, 1, -1, "conv_c"};
            struct store_event done = {id, "task_completed", t0 + 5, -1, 3, -1, NULL};
            struct store_event failed = {id, "task_failed", t0 - day, -1, 0, -1, NULL};
            struct store_event r4 = {id, "rating", t0 + 7, -1, 0, 4, NULL};
            struct store_event r5 = {id, "rating", t0 + 8, -1, 0, 5, NULL};
            struct store_event outside = {id, "message", t0 - 30 * day, 1, 100, -1, "conv_z"};
            store_event_add(s, &live, &old);
            store_event_add(s, &live, &done);
            store_event_add(s, &live, &failed);
            store_event_add(s, &live, &r4);
            store_event_add(s, &live, &r5);
            store_event_add(s, &live, &outside);
        }
        store_employee_stats(s, &live, id, t0 - 6 * day, t0 + day, day, 7, &a, &st);
        is_int(st.messages, 21, "messages in the period");
        is_int(st.conversations, 3, "distinct conversations");
        is_int(st.tasks_completed, 1, "tasks completed");
        is_int(st.tasks_failed, 1, "tasks failed");
        is_int(st.credits, 20 * 2 + 1 + 3, "credits summed");
        is_int(st.ratings, 2, "ratings counted");
        ok(st.satisfaction > 4.49 && st.satisfaction < 4.51, "satisfaction is the mean rating");
        is_int(st.avg_response_ms, (210 * 10 + 5000 + 10) / 21, "mean response time");
        is_int(st.p95_response_ms, 200, "p95 by nearest rank");
        is_int(st.series[6].messages, 20, "today's bucket");
        is_int(st.series[3].messages, 1, "three days ago bucket");
        is_int(st.series[6].tasks_completed, 1, "task in today's bucket");
        is_int(store_employee_summary(s, &live, id, t0, &sum), 0, "summary");
        is_int(sum.tasks_completed_today, 1, "tasks completed today");
        ok(sum.has_rating && sum.satisfaction > 4.49 && sum.satisfaction < 4.51,
           "summary satisfaction");
        arena_cleanup(&a);
    }
}

static void test_chat(struct store *s, const struct store_org *org)
{
    subtest("chat")
    {
        struct store_tenant t = {.mode = STORE_LIVE};
        struct store_emp_filter f = {.status = -1, .limit = 1};
        struct store_emp_page p;
        struct store_chat_begin b;
        struct store_chat_finish fin;
        struct store_conversation c;
        struct store_conv_filter cf;
        struct store_conv_page cp;
        struct store_message *msgs = NULL, m;
        struct store_org o;
        struct store_employee emp;
        struct arena a;
        size_t n = 0;
        int64_t charged = -1;
        const char *emp_id;

        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        arena_init(&a);
        store_employee_list(s, &t, &f, &a, &p);
        emp_id = p.items[0].id;
        store_org_update(s, "acme", -1, 2, &o);

        memset(&b, 0, sizeof(b));
        b.new_conversation = true;
        b.conversation = (struct store_conversation){
            "conv_aaaaaaaaaaaaaaaaaaaaaaaa", emp_id, "Title", 0, 100, 100};
        b.user = (struct store_message){"msg_user1aaaaaaaaaaaaaaaaaaa",
                                        "conv_aaaaaaaaaaaaaaaaaaaaaaaa",
                                        emp_id,
                                        "user",
                                        "hello there",
                                        NULL,
                                        0,
                                        0,
                                        0,
                                        -1,
                                        100,
                                        0,
                                        NULL,
                                        NULL,
                                        NULL};
        b.reserve_credit = true;
        is_int(store_chat_begin(s, &t, &b), 0, "begin: conversation, user message, credit");
        store_org_get(s, org->id, &o);
        is_int(o.credits, 1, "one credit reserved");
        store_employee_get(s, &t, emp_id, &a, &emp);
        is_int(emp.status, STORE_EMP_ACTIVE, "employee active while replying");

        memset(&fin, 0, sizeof(fin));
        fin.reply = (struct store_message){"msg_reply1aaaaaaaaaaaaaaaaaa",
                                           "conv_aaaaaaaaaaaaaaaaaaaaaaaa",
                                           emp_id,
                                           "assistant",
                                           "hi!",
                                           "[]",
                                           5,
                                           10,
                                           20,
                                           42,
                                           200,
                                           0,
                                           NULL,
                                           NULL,
                                           NULL};
        fin.reserved = true;
        fin.charge = true;
        is_int(store_chat_finish(s, &t, &fin, &charged), 0, "finish");
        is_int(charged, 2, "a cost of 5 with 2 credits takes 2: never below zero");
        store_org_get(s, org->id, &o);
        is_int(o.credits, 0, "balance is zero, not negative");
        store_employee_get(s, &t, emp_id, &a, &emp);
        is_int(emp.status, STORE_EMP_IDLE, "idle again");

        b.new_conversation = false;
        b.user.id = "msg_user2aaaaaaaaaaaaaaaaaaa";
        is_int(store_chat_begin(s, &t, &b), ERR_LIMIT, "no credit left: refused");
        is_int(store_message_list(s, &t, "conv_aaaaaaaaaaaaaaaaaaaaaaaa", 10, &a, &msgs, &n), 0,
               "list messages");
        ok(n == 2 && strcmp(msgs[0].role, "user") == 0 && strcmp(msgs[1].role, "assistant") == 0 &&
               msgs[1].credits_used == 2 && msgs[1].response_ms == 42,
           "the refused message was not stored; reply carries what was charged");
        store_org_update(s, "acme", -1, 5, &o);
        is_int(store_chat_begin(s, &t, &b), 0, "begin again with credits");
        is_int(store_chat_abort(s, &t, emp_id, NULL, true), 0, "abort refunds");
        store_org_get(s, org->id, &o);
        is_int(o.credits, 5, "refunded");
        store_conversation_get(s, &t, "conv_aaaaaaaaaaaaaaaaaaaaaaaa", &a, &c);
        is_int(c.message_count, 3, "the failed reply's user message stays");

        is_int(store_message_get(s, &t, c.id, "msg_reply1aaaaaaaaaaaaaaaaaa", &a, &m), 0, "get");
        is_int(store_feedback_set(s, &t, &m, 2, "meh", 300), 0, "rate");
        is_int(store_feedback_set(s, &t, &m, 5, NULL, 301), 0, "rate again");
        {
            struct store_stats st;
            store_employee_stats(s, &t, emp_id, 0, 1000, 1000, 1, &a, &st);
            ok(st.ratings == 1 && st.satisfaction > 4.99, "the second rating replaced the first");
            is_int(st.messages, 1, "one reply counted");
            is_int(st.credits, 2, "credits counted as charged");
        }

        memset(&cf, 0, sizeof(cf));
        cf.limit = 10;
        is_int(store_conversation_list(s, &t, &cf, &a, &cp), 0, "list conversations");
        is_int(cp.n, 1, "one conversation");
        t.mode = STORE_TEST;
        store_conversation_list(s, &t, &cf, &a, &cp);
        is_int(cp.n, 0, "test mode sees none");
        is_int(store_conversation_delete(s, &t, c.id), ERR_NOT_FOUND, "test mode cannot delete");
        t.mode = STORE_LIVE;
        is_int(store_conversation_delete(s, &t, c.id), 0, "delete");
        is_int(store_message_get(s, &t, c.id, "msg_reply1aaaaaaaaaaaaaaaaaa", &a, &m),
               ERR_NOT_FOUND, "messages went with it");
        arena_cleanup(&a);
    }
    subtest("idempotency")
    {
        struct store_tenant t = {.mode = STORE_LIVE};
        struct store_idem rec;
        unsigned char fp[32], other[32];
        struct arena a;
        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        memset(fp, 1, sizeof(fp));
        memset(other, 2, sizeof(other));
        arena_init(&a);
        is_int(store_idem_claim(s, &t, "k1", fp, 1000, 86400000, &a, &rec), 0, "first claim");
        ok(store_idem_claim(s, &t, "k1", fp, 1001, 86400000, &a, &rec) == ERR_CONFLICT &&
               rec.state == 0,
           "second claim sees it in flight");
        is_int(store_idem_complete(s, &t, "k1", 201, "application/json", "{\"a\":1}", 7), 0,
               "complete");
        ok(store_idem_claim(s, &t, "k1", other, 1002, 86400000, &a, &rec) == ERR_CONFLICT &&
               rec.state == 1 && rec.status == 201 && rec.body_len == 7 &&
               memcmp(rec.fingerprint, fp, 32) == 0 && strcmp(rec.body, "{\"a\":1}") == 0,
           "the record comes back with its fingerprint and response");
        is_int(store_idem_claim(s, &t, "k1", other, 1000 + 86400001, 86400000, &a, &rec), 0,
               "after 24 h the key is free again");
        is_int(store_idem_release(s, &t, "k1"), 0, "release");
        is_int(store_idem_claim(s, &t, "k1", fp, 1000 + 86400002, 86400000, &a, &rec), 0,
               "a released key can be claimed");
        t.mode = STORE_TEST;
        is_int(store_idem_claim(s, &t, "k1", fp, 1000 + 86400002, 86400000, &a, &rec), 0,
               "keys are per mode");
        arena_cleanup(&a);
    }
}

/* A message of conversation 'conv' by employee 'emp' (the others zero: completed). */
static struct store_message message(const char *id, const char *conv, const char *emp,
                                    const char *role, int64_t at)
{
    struct store_message m;
    memset(&m, 0, sizeof(m));
    m.id = id;
    m.conversation_id = conv;
    m.employee_id = emp;
    m.role = role;
    m.content = "";
    m.sources = strcmp(role, "assistant") == 0 ? "[]" : NULL;
    m.response_ms = -1;
    m.created_at = at;
    return m;
}

/* A chat turn whose step called the employee's tool and the client's, stopped for the
 * client's call (stop reason client_tool_calls, its state kept), in conversation 'conv' (new
 * when 'fresh'): its reply 'reply' and the client's call 'client'. */
static void client_stop(struct store *s, const struct store_tenant *t, const char *emp,
                        const char *conv, bool fresh, const char *user, const char *reply,
                        const char *own, const char *client)
{
    struct store_chat_begin b;
    struct store_chat_finish fin;
    struct store_message r = message(reply, conv, emp, "assistant", 300);
    struct store_tool_call rows[2];
    struct store_tool_step in;
    int64_t charged = 0, balance = 0;

    memset(&b, 0, sizeof(b));
    b.new_conversation = fresh;
    b.conversation = (struct store_conversation){conv, emp, "Client tools", 0, 200, 200};
    b.user = message(user, conv, emp, "user", 200);
    b.user.content = "Weather?";
    b.reserve_credit = true;
    is_int(store_chat_begin(s, t, &b), 0, "begin");
    memset(rows, 0, sizeof(rows));
    for (size_t i = 0; i < 2; i++) {
        rows[i].id = i ? own : client;
        rows[i].message_id = reply;
        rows[i].model_id = i ? "m1" : "m0";
        rows[i].tool = i ? "knowledge.search" : "get_weather";
        rows[i].arguments = "{}";
        rows[i].seq = (int64_t)i;
        rows[i].started_at = 300;
    }
    r.status = "in_progress";
    memset(&in, 0, sizeof(in));
    in.reply = &r;
    in.calls = rows;
    in.n = 2;
    in.charge = true;
    in.price = 1;
    is_int(store_tool_step_begin(s, t, &in, &charged, &balance), 0, "the step journaled");
    rows[1].status = "completed";
    rows[1].result = "[]";
    rows[1].completed_at = 310;
    is_int(store_tool_call_end(s, t, &rows[1]), 0, "the employee's call ended");
    memset(&fin, 0, sizeof(fin));
    fin.reply = message(reply, conv, emp, "assistant", 300);
    fin.reply.status = "completed";
    fin.reply.stop_reason = "client_tool_calls";
    fin.reserved = true;
    fin.charge = true;
    fin.stored = true;
    fin.charged_before = charged;
    fin.turn_state = "{\"nmodel\":1}";
    is_int(store_chat_finish(s, t, &fin, &charged), 0, "stopped for the client's call");
}

/* A chat turn that stopped for the client's tools (the OpenAI door) and goes on when they are
 * answered: the reply kept with its state, its calls read by id (this tenant's only), taken
 * back once (a credit held: none, nothing changes), and not once its conversation went on. */
static void test_client_turn(struct store *s, const struct store_org *org)
{
    subtest("a turn that waits for the client's tools")
    {
        struct store_tenant t = {.mode = STORE_LIVE}, test = {.mode = STORE_TEST};
        struct store_emp_filter f = {.status = -1, .limit = 1};
        struct store_emp_page p;
        struct store_turn_saved sv;
        struct store_tool_call c, end;
        struct store_chat_begin b;
        struct store_chat_finish fin;
        struct store_org o;
        struct arena a;
        bool taken = true;
        int64_t charged = 0;
        const char *emp;

        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        snprintf(test.org_id, sizeof(test.org_id), "%s", org->id);
        arena_init(&a);
        store_employee_list(s, &t, &f, &a, &p);
        emp = p.items[0].id;
        store_org_update(s, "acme", -1, 10, &o);
        client_stop(s, &t, emp, "conv_cliaaaaaaaaaaaaaaaaaaa", true, "msg_cuser1aaaaaaaaaaaaaaaa",
                    "msg_creply1aaaaaaaaaaaaaaa", "call_ownaaaaaaaaaaaaaaaaaaa",
                    "call_cliaaaaaaaaaaaaaaaaaaa");
        is_int(store_turn_load(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &a, &sv), 0, "read");
        is_str(sv.reply.status, "completed", "the reply is completed");
        is_str(sv.turn_state, "{\"nmodel\":1}", "with the state it goes on from");
        is_int(store_tool_call_get(s, &t, "call_cliaaaaaaaaaaaaaaaaaaa", &a, &c), 0, "a call");
        ok(strcmp(c.message_id, "msg_creply1aaaaaaaaaaaaaaa") == 0 &&
               strcmp(c.status, "running") == 0 && strcmp(c.tool, "get_weather") == 0 &&
               strcmp(c.model_id, "m0") == 0,
           "by its id: its message, running");
        is_int(store_tool_call_get(s, &t, "call_noneaaaaaaaaaaaaaaaaaa", &a, &c), ERR_NOT_FOUND,
               "an unknown id");
        is_int(store_tool_call_get(s, &test, "call_cliaaaaaaaaaaaaaaaaaaa", &a, &c), ERR_NOT_FOUND,
               "another tenant's");

        memset(&end, 0, sizeof(end));
        end.id = "call_cliaaaaaaaaaaaaaaaaaaa";
        end.status = "completed";
        end.result = "\"sunny\"";
        end.completed_at = 400;
        store_org_update(s, "acme", -1, 0, &o);
        is_int(store_turn_answer(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &end, 1, NULL, true, &taken),
               ERR_LIMIT, "no credit to hold: refused");
        store_turn_load(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &a, &sv);
        ok(strcmp(sv.reply.status, "completed") == 0 && strcmp(sv.calls[0].status, "running") == 0,
           "and nothing changed");
        store_org_update(s, "acme", -1, 5, &o);
        is_int(store_turn_answer(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &end, 1,
                                 "{\"nmodel\":1,\"reserved\":true}", true, &taken),
               0, "answered");
        ok(taken, "the turn is taken");
        store_org_get(s, org->id, &o);
        is_int(o.credits, 4, "a credit held");
        store_turn_load(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &a, &sv);
        ok(strcmp(sv.reply.status, "in_progress") == 0 && sv.ncalls == 2 &&
               strcmp(sv.calls[0].status, "completed") == 0 &&
               strcmp(sv.calls[0].result, "\"sunny\"") == 0 && sv.calls[0].completed_at == 400 &&
               strcmp(sv.calls[1].status, "completed") == 0,
           "in progress again, the client's call ended with its result");
        is_str(sv.turn_state, "{\"nmodel\":1,\"reserved\":true}",
               "its state as it goes on (it holds a credit)");
        is_int(store_turn_answer(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &end, 1, NULL, true, &taken),
               0, "answered again");
        ok(!taken, "not taken twice");
        store_org_get(s, org->id, &o);
        is_int(o.credits, 4, "nothing held the second time");

        /* a second such turn, then a user message in its conversation: it no longer waits */
        client_stop(s, &t, emp, "conv_cliaaaaaaaaaaaaaaaaaaa", false, "msg_cuser2aaaaaaaaaaaaaaaa",
                    "msg_creply2aaaaaaaaaaaaaaa", "call_own2aaaaaaaaaaaaaaaaaa",
                    "call_cli2aaaaaaaaaaaaaaaaaa");
        memset(&b, 0, sizeof(b));
        b.user =
            message("msg_cuser3aaaaaaaaaaaaaaaa", "conv_cliaaaaaaaaaaaaaaaaaaa", emp, "user", 500);
        b.user.content = "Never mind.";
        is_int(store_chat_begin(s, &t, &b), 0, "the conversation goes on");
        store_chat_abort(s, &t, emp, NULL, false); /* that turn's engine fails: its work ends */
        end.id = "call_cli2aaaaaaaaaaaaaaaaaa";
        is_int(store_turn_answer(s, &t, "msg_creply2aaaaaaaaaaaaaaa", &end, 1, NULL, false, &taken),
               0, "answered after that");
        ok(!taken, "not taken: it no longer waits");
        is_int(store_tool_call_get(s, &t, "call_cli2aaaaaaaaaaaaaaaaaa", &a, &c), 0, "read");
        is_str(c.status, "running", "its call unchanged");

        /* the turn that went on ends: no state kept, the employee's work ended */
        memset(&fin, 0, sizeof(fin));
        fin.reply = message("msg_creply1aaaaaaaaaaaaaaa", "conv_cliaaaaaaaaaaaaaaaaaaa", emp,
                            "assistant", 300);
        fin.reply.content = "Sunny.";
        fin.reply.status = "completed";
        fin.reply.stop_reason = "completed";
        fin.reserved = true;
        fin.stored = true;
        is_int(store_chat_finish(s, &t, &fin, &charged), 0, "the turn ends");
        store_turn_load(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &a, &sv);
        ok(strcmp(sv.reply.status, "completed") == 0 && !sv.turn_state,
           "completed, its state no longer kept");
        is_int(store_turn_answer(s, &t, "msg_creply1aaaaaaaaaaaaaaa", &end, 1, NULL, false, &taken),
               0, "answered once more");
        ok(!taken, "not taken: it does not wait");
        arena_cleanup(&a);
    }
}

/* Run 'sql' with text parameters, for the rows the tests put in place of another node's. */
static int put(struct store *s, const char *sql, const char *const *texts, size_t nt,
               const int64_t *ints, size_t ni)
{
    return db_run(s, sql, texts, nt, ints, ni);
}

static enum store_emp_status status_of(struct store *s, const struct store_tenant *t,
                                       const char *id)
{
    struct store_employee e;
    struct arena a;
    enum store_emp_status st = STORE_EMP_OFFLINE;
    arena_init(&a);
    if (store_employee_get(s, t, id, &a, &e) == 0)
        st = e.status;
    arena_cleanup(&a);
    return st;
}

/*
 * Nodes: the work of a dead node (its heartbeat older than the lease) is taken back, the work of
 * this node and of a live one is not. On SQLite every other node counts as dead (one server holds
 * a SQLite database at a time).
 */
static void test_nodes(struct store *s, const struct store_org *org)
{
    subtest("nodes")
    {
        bool shared = db_dialect(s) == DB_POSTGRES;
        struct store_tenant t = {.mode = STORE_LIVE};
        struct store_emp_filter f = {.status = -1, .limit = 3};
        struct store_emp_page p;
        struct store_recovery rec;
        struct store_idem idem;
        unsigned char fp[32] = {1};
        struct arena a;
        int64_t now = clock_now_ms();

        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        arena_init(&a);
        store_employee_list(s, &t, &f, &a, &p);
        ok(p.n == 3, "three employees");
        is_int(store_node_start(s, now), 0, "this node starts");
        is_int(store_node_beat(s, now), 0, "and beats");
        {
            const char *dead[] = {"node_dead", "node_live"};
            const int64_t beats[] = {now - 120000, now - 1000};
            for (int i = 0; i < 2; i++) {
                const char *texts[] = {dead[i]};
                const int64_t ints[] = {beats[i]};
                put(s, "INSERT INTO nodes (id, started_at, heartbeat_at) VALUES ($1, $2, $2)",
                    texts, 1, ints, 1);
            }
            for (int i = 0; i < 2; i++) {
                const char *texts[] = {p.items[i].id, dead[i]};
                put(s, "INSERT INTO employee_work (employee_id, node_id, n) VALUES ($1, $2, 2)",
                    texts, 2, NULL, 0);
            }
            for (int i = 0; i < 2; i++) {
                struct db_stmt *st = db_prepare(
                    s, "INSERT INTO idempotency_keys (org_id, mode, key, fingerprint, state,"
                       " created_at, node_id) VALUES ($1, 'live', $2, $3, 0, $4, $5)");
                if (!st)
                    break;
                db_bind_text(st, 1, org->id);
                db_bind_text(st, 2, i ? "key-live" : "key-dead");
                db_bind_blob(st, 3, fp, sizeof(fp));
                db_bind_int64(st, 4, now);
                db_bind_text(st, 5, dead[i]);
                db_exec(st);
            }
        }
        is_int(employees_busy(s, &t, p.items[2].id, 1), 0, "this node's own chat begins");
        is_int(status_of(s, &t, p.items[0].id), STORE_EMP_ACTIVE, "dead node's employee busy");
        is_int(status_of(s, &t, p.items[1].id), STORE_EMP_ACTIVE, "live node's employee busy");
        is_int(status_of(s, &t, p.items[2].id), STORE_EMP_ACTIVE, "this node's employee busy");

        is_int(store_nodes_recover(s, now, 60000, true, &rec), 0, "recover");
        is_int((long)rec.nodes, shared ? 1 : 2, "dead nodes forgotten");
        is_int((long)rec.busy, shared ? 1 : 2, "their chats taken back");
        is_int((long)rec.requests, shared ? 1 : 2, "their requests in flight taken back");
        is_int(status_of(s, &t, p.items[0].id), STORE_EMP_IDLE, "dead node's employee free");
        is_int(status_of(s, &t, p.items[1].id), shared ? STORE_EMP_ACTIVE : STORE_EMP_IDLE,
               "live node's employee as its node is");
        is_int(status_of(s, &t, p.items[2].id), STORE_EMP_ACTIVE, "this node's employee busy");
        is_int(store_idem_claim(s, &t, "key-dead", fp, now, 86400000, &a, &idem), 0,
               "a dead node's key can be sent again");
        is_int(store_idem_claim(s, &t, "key-live", fp, now, 86400000, &a, &idem),
               shared ? ERR_CONFLICT : 0, "a live node's key as its node is");
        is_int(store_nodes_recover(s, now, 60000, true, &rec), 0, "recover again");
        ok(rec.nodes == 0 && rec.busy == 0 && rec.requests == 0, "finds nothing more");
        is_int(store_node_beat(s, now), 0, "this node still beats");
        is_int(store_node_stop(s), 0, "this node leaves");
        is_int(store_node_beat(s, now), ERR_NOT_FOUND,
               "a node gone (left, or declared dead) is told so");
        is_int(employees_busy(s, &t, p.items[2].id, -1), 0, "this node's chat ends");
        is_int(status_of(s, &t, p.items[2].id), STORE_EMP_IDLE, "and its employee is free");
        arena_cleanup(&a);
    }
}

/* The data version every node's caches compare (PostgreSQL's data_changes sequence). */
static int64_t data_changes(struct store *s)
{
    struct db_stmt *st = db_prepare(s, "SELECT last_value FROM data_changes");
    bool row = false;
    int64_t v = -1;
    if (st && db_step(st, &row) == 0 && row)
        v = db_int64(st, 0);
    if (st)
        db_done(st);
    return v;
}

/* One admission of 'tenant' at 'now' under 'epoch': the verdict (-1 when the call failed). */
static int rate(struct store *s, const char *tenant, int64_t epoch, int64_t pm, int64_t burst,
                int64_t conc, int64_t now, struct store_rate *out)
{
    struct store_rate_ask ask = {tenant, epoch, pm, burst, conc, now, 60000};
    return store_rate_enter(s, &ask, out) ? -1 : out->verdict;
}

/*
 * The rate limits every node shares, kept in PostgreSQL (rate_enter, rate_leave): the checks
 * of the in-memory limiter, another node's requests counted while it beats, this node's earlier
 * epochs not at all, and no move of the data version. SQLite keeps none (one server).
 */
/* The message 'id''s status, "" when unreadable. */
static const char *message_status(struct store *s, const struct store_tenant *t, const char *conv,
                                  const char *id, struct arena *a)
{
    struct store_message m;
    if (store_message_get(s, t, conv, id, a, &m))
        return "";
    return m.status ? m.status : "";
}

/* Whether message 'id' is among the turns that can go on. */
static bool ready(struct store *s, const char *id)
{
    struct store_turn_ref *v = NULL;
    struct arena a;
    size_t n = 0;
    bool found = false;
    arena_init(&a);
    if (!store_turns_ready(s, 64, &a, &v, &n))
        for (size_t i = 0; i < n; i++)
            found = found || strcmp(v[i].message_id, id) == 0;
    arena_cleanup(&a);
    return found;
}

/* Approvals and turns that pause (contract §19): a step's journal asks, a pause holds nothing,
 * a decision is taken once, a turn is taken by one node, a dead node's turn is taken over with
 * its running calls failed as interrupted. */
static void test_approvals(struct store *s, const struct store_org *org)
{
    subtest("approvals and paused turns")
    {
        struct store_tenant t = {.mode = STORE_LIVE};
        struct store_emp_filter f = {.status = -1, .limit = 1};
        struct store_emp_page p;
        struct store_chat_begin b;
        struct store_message reply;
        struct store_tool_call calls[2];
        struct store_approval apr, got;
        struct store_tool_step step;
        struct store_turn_pause pause;
        struct store_approval_decision d;
        struct store_turn_saved sv;
        struct store_approval_page page;
        struct store_approval_filter af;
        struct store_recovery rec;
        struct arena a;
        int64_t charged = 0, balance = 0, now = clock_now_ms();
        bool paused = false, taken = false;
        const char *conv = "conv_apraaaaaaaaaaaaaaaaaaa";
        const char *emp_id;

        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        arena_init(&a);
        store_employee_list(s, &t, &f, &a, &p);
        emp_id = p.items[0].id;
        memset(&b, 0, sizeof(b));
        b.new_conversation = true;
        b.conversation = (struct store_conversation){conv, emp_id, "Approvals", 0, now, now};
        memset(&b.user, 0, sizeof(b.user));
        b.user.id = "msg_apruseraaaaaaaaaaaaaaaa";
        b.user.conversation_id = conv;
        b.user.employee_id = emp_id;
        b.user.role = "user";
        b.user.content = "post it";
        b.user.response_ms = -1;
        b.user.created_at = now;
        is_int(store_chat_begin(s, &t, &b), 0, "the user message");

        /* the step: one call waits for an approval, one runs */
        memset(&reply, 0, sizeof(reply));
        reply.id = "msg_aprreplyaaaaaaaaaaaaaaa";
        reply.conversation_id = conv;
        reply.employee_id = emp_id;
        reply.role = "assistant";
        reply.content = "";
        reply.sources = "[]";
        reply.response_ms = -1;
        reply.created_at = now;
        reply.status = "in_progress";
        memset(calls, 0, sizeof(calls));
        calls[0] = (struct store_tool_call){.id = "call_apr0aaaaaaaaaaaaaaaaaaa",
                                            .message_id = reply.id,
                                            .model_id = "m0",
                                            .tool = "slack.post_message",
                                            .arguments = "{\"text\":\"hi\"}",
                                            .status = "pending_approval",
                                            .approval_id = "apr_aprAaaaaaaaaaaaaaaaaaaaa",
                                            .step_index = -1,
                                            .started_at = now};
        calls[1] = (struct store_tool_call){.id = "call_apr1aaaaaaaaaaaaaaaaaaa",
                                            .message_id = reply.id,
                                            .model_id = "m1",
                                            .tool = "tasks.get",
                                            .arguments = "{}",
                                            .status = "running",
                                            .seq = 1,
                                            .step_index = -1,
                                            .started_at = now};
        memset(&apr, 0, sizeof(apr));
        apr.id = "apr_aprAaaaaaaaaaaaaaaaaaaaa";
        apr.employee_id = emp_id;
        apr.tool_call_id = calls[0].id;
        apr.tool = calls[0].tool;
        apr.arguments = calls[0].arguments;
        apr.requested_by_type = "key";
        apr.requested_by_id = "key_x";
        apr.conversation_id = conv;
        apr.message_id = reply.id;
        apr.step_index = -1;
        apr.requested_at = now;
        apr.expires_at = now + 3600000;
        memset(&step, 0, sizeof(step));
        step.reply = &reply;
        step.content = "Let me post it.";
        step.turn_state = "{\"nmodel\":1}";
        step.calls = calls;
        step.n = 2;
        step.approvals = &apr;
        step.napprovals = 1;
        step.events =
            (struct store_events_chunk){"id: 1\nevent: message.created\ndata: {}\n\n", 38, 1, 1};
        is_int(store_tool_step_begin(s, &t, &step, &charged, &balance), 0, "the step journaled");
        is_str(message_status(s, &t, conv, reply.id, &a), "in_progress", "in progress");
        ok(!ready(s, reply.id), "a running turn of a live node is no one else's");

        /* the pause: the running call ended with it */
        calls[1].status = "completed";
        calls[1].result = "{}";
        calls[1].completed_at = now + 1;
        calls[1].started_at = 0;
        memset(&pause, 0, sizeof(pause));
        pause.message_id = reply.id;
        pause.employee_id = emp_id;
        pause.content = "Let me post it.";
        pause.turn_state = "{\"nmodel\":1}";
        pause.ends = &calls[1];
        pause.nends = 1;
        is_int(store_turn_pause(s, &t, &pause, &paused), 0, "pause");
        ok(paused, "paused: an approval is pending");
        is_str(message_status(s, &t, conv, reply.id, &a), "requires_approval", "shown paused");
        ok(!ready(s, reply.id), "not ready while its approval is pending");
        is_int(store_turn_take(s, &t, reply.id, now, &taken), 0, "take");
        ok(!taken, "nobody takes it while its approval is pending");

        memset(&af, 0, sizeof(af));
        af.status = "pending";
        af.limit = 10;
        is_int(store_approval_list(s, &t, &af, &a, &page), 0, "list pending");
        ok(page.n == 1 && strcmp(page.items[0].id, apr.id) == 0, "the one pending");

        memset(&d, 0, sizeof(d));
        d.id = apr.id;
        d.status = "approved";
        d.arguments = "{\"text\":\"hello\"}";
        d.by_type = "key";
        d.by_id = "key_decider";
        d.now = now + 2;
        is_int(store_approval_decide(s, &t, &d, &a, &got), 0, "approve");
        is_str(got.arguments, "{\"text\":\"hello\"}", "the edited arguments kept");
        is_str(got.decided_by_id, "key_decider", "who decided");
        d.status = "rejected";
        is_int(store_approval_decide(s, &t, &d, &a, &got), ERR_CONFLICT, "decided once");
        is_str(got.status, "approved", "as it was");
        ok(ready(s, reply.id), "ready once decided");

        is_int(store_turn_take(s, &t, reply.id, now, &taken), 0, "take");
        ok(taken, "taken");
        is_int(store_turn_take(s, &t, reply.id, now, &taken), 0, "take again");
        ok(!taken, "by one only");
        is_str(message_status(s, &t, conv, reply.id, &a), "in_progress", "in progress again");
        is_int(store_turn_load(s, &t, reply.id, &a, &sv), 0, "load");
        is_str(sv.user_content, "post it", "its user message");
        is_str(sv.turn_state, "{\"nmodel\":1}", "its state");
        is_str(sv.reply.content, "Let me post it.", "what the model wrote");
        ok(sv.ncalls == 2 && sv.napprovals == 1, "its calls and approval");
        is_str(sv.calls[1].status, "completed", "the ended call as ended");

        /* its node dies: the turn is taken over, its running call failed as interrupted */
        {
            const char *texts[] = {"call_apr0aaaaaaaaaaaaaaaaaaa", reply.id};
            put(s, "UPDATE tool_calls SET status = 'running' WHERE id = $1", texts, 1, NULL, 0);
            put(s, "UPDATE messages SET lease_node = 'node_gone' WHERE id = $2", texts, 2, NULL, 0);
        }
        ok(!ready(s, reply.id), "not while its node may be alive");
        is_int(store_nodes_recover(s, now, 60000, false, &rec), 0, "recover");
        ok(rec.turns == 1, "a dead node's turn taken back");
        ok(ready(s, reply.id), "then ready");
        is_int(store_turn_take(s, &t, reply.id, now + 3, &taken), 0, "take over");
        ok(taken, "taken over");
        is_int(store_turn_load(s, &t, reply.id, &a, &sv), 0, "load");
        ok(strcmp(sv.calls[0].status, "failed") == 0 && sv.calls[0].error &&
               strcmp(sv.calls[0].error, "interrupted") == 0,
           "the call that was running is failed as interrupted");

        /* decided before the pause: no pause */
        {
            struct store_approval apr2 = apr;
            struct store_tool_call c2 = calls[0];
            c2.id = "call_apr2aaaaaaaaaaaaaaaaaaa";
            c2.approval_id = "apr_aprBaaaaaaaaaaaaaaaaaaaa";
            c2.status = "pending_approval";
            c2.seq = 2;
            c2.step = 1;
            apr2.id = c2.approval_id;
            apr2.tool_call_id = c2.id;
            memset(&step, 0, sizeof(step));
            step.message_id = reply.id;
            step.calls = &c2;
            step.n = 1;
            step.approvals = &apr2;
            step.napprovals = 1;
            is_int(store_tool_step_begin(s, &t, &step, &charged, &balance), 0, "a second step");
            d.id = apr2.id;
            d.status = "rejected";
            d.arguments = NULL;
            d.reason = "no";
            is_int(store_approval_decide(s, &t, &d, &a, &got), 0, "rejected at once");
            memset(&pause, 0, sizeof(pause));
            pause.message_id = reply.id;
            pause.employee_id = emp_id;
            pause.content = "";
            pause.turn_state = "{}";
            is_int(store_turn_pause(s, &t, &pause, &paused), 0, "pause");
            ok(!paused, "not paused: nothing is pending");
            is_str(message_status(s, &t, conv, reply.id, &a), "in_progress", "still running");
        }

        /* an approval past its time is due */
        {
            struct store_approval *due = NULL;
            struct store_tenant *tenants = NULL;
            size_t n = 0;
            const char *texts[] = {apr.id};
            put(s, "UPDATE approvals SET status = 'pending', expires_at = 5 WHERE id = $1", texts,
                1, NULL, 0);
            is_int(store_approvals_due(s, now, 10, &a, &due, &tenants, &n), 0, "due");
            ok(n == 1 && strcmp(due[0].id, apr.id) == 0 && strcmp(tenants[0].org_id, org->id) == 0,
               "the approval past its time, with its tenant");
        }
        arena_cleanup(&a);
    }
}

static void test_shared_limits(struct store *s)
{
    subtest("shared limits")
    {
        const int64_t t0 = 1795219200000LL; /* a minute boundary */
        struct store_rate r;
        int64_t before = 0;

        if (db_dialect(s) != DB_POSTGRES) {
            is_int(rate(s, "tA", 0, 5, 3, 2, t0, &r), -1, "SQLite keeps no shared limits");
            continue; /* the subtest's only round */
        }
        for (int i = 0; i < 3; i++) {
            is_int(rate(s, "tA", 0, 5, 3, 100, t0, &r), 0, "within the burst");
            is_int(r.remaining, 4 - i, "the window counts it");
            is_int(store_rate_leave(s, "tA", 0), 0, "it leaves");
        }
        is_int(r.reset_s, t0 / 1000 + 60, "reset at the next minute");
        is_int(rate(s, "tA", 0, 5, 3, 100, t0, &r), 1, "the bucket is empty");
        ok(r.retry_after >= 1 && r.retry_after <= 12, "retry when a token is back");
        is_int(r.remaining, 2, "a refusal takes nothing");
        is_int(rate(s, "tA", 0, 5, 3, 100, t0 + 12000, &r), 0, "a token back after 12 s");
        store_rate_leave(s, "tA", 0);
        is_int(rate(s, "tA", 0, 5, 3, 100, t0 + 50000, &r), 0, "the 5th of the window");
        store_rate_leave(s, "tA", 0);
        is_int(rate(s, "tA", 0, 5, 3, 100, t0 + 59000, &r), 1, "the window is full");
        is_int(r.retry_after, 1, "until the minute ends");
        is_int(rate(s, "tA", 0, 5, 3, 100, t0 + 60000, &r), 0, "a new window");
        store_rate_leave(s, "tA", 0);

        is_int(rate(s, "tB", 0, 100, 100, 2, t0, &r), 0, "one in flight");
        is_int(rate(s, "tB", 0, 100, 100, 2, t0, &r), 0, "two in flight");
        is_int(rate(s, "tB", 0, 100, 100, 2, t0, &r), 2, "the third is over the concurrency");
        is_int(r.retry_after, 1, "retry after 1 s");
        is_int(rate(s, "tB", 1, 100, 100, 2, t0, &r), 0,
               "under a new epoch the earlier one's count no longer holds");
        store_rate_leave(s, "tB", 0); /* a request of the old epoch ends: nothing to give back */
        {
            const char *texts[] = {"node_other"};
            const int64_t ints[] = {t0};
            put(s, "INSERT INTO nodes (id, started_at, heartbeat_at) VALUES ($1, $2, $2)", texts, 1,
                ints, 1);
            put(s, "INSERT INTO rate_inflight VALUES ('tB', $1, 0, 1)", texts, 1, NULL, 0);
        }
        before = data_changes(s); /* (the two rows above were changes of the test's) */
        is_int(rate(s, "tB", 1, 100, 100, 2, t0 + 1000, &r), 2,
               "another node's request counts while it beats");
        is_int(store_rate_leave(s, "tB", 1), 0, "this node's request ends");
        is_int(rate(s, "tB", 1, 100, 100, 2, t0 + 1000, &r), 0, "room for one again");
        is_int(rate(s, "tB", 1, 100, 100, 2, t0 + 1000, &r), 2, "and only one");
        is_int(rate(s, "tB", 1, 100, 100, 2, t0 + 61000, &r), 0,
               "a node silent for the lease holds nothing");
        is_int(data_changes(s), before, "limits do not move the data version");
        {
            const char *texts[] = {"node_other"};
            put(s, "DELETE FROM nodes WHERE id = $1", texts, 1, NULL, 0);
        }
        ok(data_changes(s) > before, "a change of data does");
    }
}

static void test_knowledge(struct store *s, const struct store_org *org)
{
    subtest("knowledge")
    {
        struct store_tenant t = {.mode = STORE_LIVE}, other = {.mode = STORE_TEST};
        struct store_document d, got;
        struct store_doc_filter f;
        struct store_doc_page page;
        struct store_search_filter sf = {NULL, NULL};
        struct store_hit *hits = NULL;
        size_t n = 0;
        struct arena a;
        float e1[4] = {1, 0, 0, 0}, e2[4] = {0, 1, 0, 0}, q[4] = {0.6f, 0.8f, 0, 0};
        struct store_chunk ch[2] = {{"refunds are possible within thirty days", 1, e1, 4, "m"},
                                    {"shipping takes two business days", 2, e2, 4, "m"}};

        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        snprintf(other.org_id, sizeof(other.org_id), "%s", org->id);
        arena_init(&a);
        memset(&d, 0, sizeof(d));
        d.id = "doc_aaaaaaaaaaaaaaaaaaaaaaa1";
        d.name = "Policy";
        d.filename = "policy.pdf";
        d.content_type = "application/pdf";
        d.sha256 = "00";
        d.tags = "[\"policies\"]";
        d.employee_ids = "[\"emp_reader\"]";
        d.size_bytes = 10;
        d.created_at = 1000;
        is_int(store_document_create(s, &t, &d), 0, "create document");
        ok(store_document_get(s, &t, d.id, &a, &got) == 0 && strcmp(got.status, "processing") == 0,
           "processing after upload");
        ok(store_document_next(s, NULL, &a, &got) == 0 && strcmp(got.id, d.id) == 0 &&
               strcmp(got.tenant.org_id, org->id) == 0 && got.tenant.mode == STORE_LIVE,
           "the worker finds it with its tenant");
        is_int(store_search_text(s, &t, "\"refunds\"", &sf, 5, &a, &hits, &n), 0, "search");
        is_int(n, 0, "nothing is searchable before it is ready");
        is_int(store_document_finish(s, d.id, ch, 2, NULL), 0, "finish with chunks");
        ok(store_document_next(s, NULL, &a, &got) == ERR_NOT_FOUND, "nothing left to process");
        store_document_get(s, &t, d.id, &a, &got);
        ok(strcmp(got.status, "ready") == 0 && got.chunk_count == 2, "ready with 2 chunks");
        store_search_text(s, &t, "\"refunds\" OR \"days\"", &sf, 5, &a, &hits, &n);
        ok(n == 2 && strcmp(hits[0].content, ch[0].content) == 0 && hits[0].page == 1 &&
               hits[0].score > 0,
           "BM25 ranks the refund chunk first, with its page");
        sf.employee_id = "emp_other";
        store_search_text(s, &t, "\"refunds\"", &sf, 5, &a, &hits, &n);
        is_int(n, 0, "a reader not in employee_ids sees nothing");
        sf.employee_id = "emp_reader";
        store_search_text(s, &t, "\"refunds\"", &sf, 5, &a, &hits, &n);
        is_int(n, 1, "the named reader sees it");
        sf.employee_id = NULL;
        sf.tags_json = "[\"hr\",\"policies\"]";
        store_search_text(s, &t, "\"refunds\"", &sf, 5, &a, &hits, &n);
        is_int(n, 1, "tags match any of");
        sf.tags_json = "[\"hr\"]";
        store_search_text(s, &t, "\"refunds\"", &sf, 5, &a, &hits, &n);
        is_int(n, 0, "other tags do not match");
        sf.tags_json = NULL;
        is_int(store_search_vectors(s, &t, q, 4, &sf, 1, &a, &hits, &n), 0, "vector search");
        ok(n == 1 && strcmp(hits[0].content, ch[1].content) == 0 && hits[0].score > 0.79 &&
               hits[0].score < 0.81,
           "nearest by cosine, top-k respected");
        store_search_vectors(s, &t, q, 4, &sf, 5, &a, &hits, &n);
        ok(n == 2 && hits[0].score >= hits[1].score, "best first");
        store_search_text(s, &other, "\"refunds\"", &sf, 5, &a, &hits, &n);
        is_int(n, 0, "test mode sees no live knowledge");
        memset(&f, 0, sizeof(f));
        f.limit = 10;
        f.tag = "policies";
        store_document_list(s, &t, &f, &a, &page);
        is_int(page.n, 1, "list by tag");
        f.tag = "hr";
        store_document_list(s, &t, &f, &a, &page);
        is_int(page.n, 0, "list by another tag");
        is_int(store_document_delete(s, &t, d.id), 0, "delete");
        store_search_text(s, &t, "\"refunds\" OR \"days\"", &sf, 5, &a, &hits, &n);
        is_int(n, 0, "deleted documents are never returned");
        store_search_vectors(s, &t, q, 4, &sf, 5, &a, &hits, &n);
        is_int(n, 0, "nor their vectors");
        is_int(store_document_delete(s, &t, d.id), ERR_NOT_FOUND, "delete twice");
        arena_cleanup(&a);
    }
}

/* ---- Events and the outbox ---- */

static int hook_wakes;
static bool hook_refuse; /* the renderer fails: the change it reports must not commit */

static const char *fake_render(enum store_hook_kind kind, const void *obj, struct arena *a)
{
    const struct store_document *d = obj;
    if (hook_refuse)
        return NULL;
    return kind == STORE_HOOK_DOCUMENT
               ? arena_printf(a, "{\"id\":\"%s\",\"status\":\"%s\"}", d->id, d->status)
               : "{}";
}

/* MCP servers: names unique per tenant, the bound, sealed headers kept as given, pages, the
 * generation guarding a refresh, another tenant seeing nothing. */
static void test_mcp_servers(struct store *s, const struct store_org *org)
{
    subtest("mcp servers")
    {
        struct store_tenant t = {.mode = STORE_LIVE}, other = {.mode = STORE_TEST};
        struct store_mcp_server m, got, *en = NULL;
        struct store_mcp_server_page page;
        char id[STORE_MCP_SERVERS_MAX + 1][32], name[16];
        size_t n = 0;
        struct arena a;

        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        snprintf(other.org_id, sizeof(other.org_id), "%s", org->id);
        arena_init(&a);
        memset(&m, 0, sizeof(m));
        m.url = "https://mcp.example.com/mcp";
        m.header_names = "[\"Authorization\"]";
        m.headers = (const unsigned char *)"sealed\0bytes";
        m.headers_len = 12;
        m.enabled = true;
        m.status = "ok";
        m.tools = "[{\"name\":\"echo\"}]";
        m.refreshed_at = 5000;
        for (int i = 0; i < STORE_MCP_SERVERS_MAX; i++) {
            snprintf(id[i], sizeof(id[i]), "mcp_aaaaaaaaaaaaaaaaaaaa%02d", i);
            snprintf(name, sizeof(name), "srv%d", i);
            m.id = id[i];
            m.name = name;
            m.enabled = i % 2 == 0;
            m.created_at = m.updated_at = 1000 + i;
            if (store_mcp_server_create(s, &t, &m) != 0)
                break;
        }
        ok(store_mcp_servers_list(s, &t, 100, 0, NULL, &a, &page) == 0 &&
               page.n == STORE_MCP_SERVERS_MAX,
           "16 servers");
        snprintf(id[16], sizeof(id[16]), "mcp_aaaaaaaaaaaaaaaaaaaa16");
        m.id = id[16];
        m.name = "one_more";
        is_int(store_mcp_server_create(s, &t, &m), ERR_LIMIT, "a 17th is over the bound");
        is_int(store_mcp_server_create(s, &other, &m), 0, "the other mode has its own");
        m.name = "srv3";
        m.id = "mcp_aaaaaaaaaaaaaaaaaaaaxx";
        is_int(store_mcp_server_create(s, &other, &m), 0, "names are per tenant");
        m.id = "mcp_aaaaaaaaaaaaaaaaaaaaxy";
        is_int(store_mcp_server_create(s, &other, &m), ERR_CONFLICT, "a name taken: conflict");
        ok(store_mcp_server_get(s, &t, id[3], &a, &got) == 0 && strcmp(got.name, "srv3") == 0 &&
               got.headers_len == 12 && memcmp(got.headers, "sealed\0bytes", 12) == 0 &&
               strcmp(got.header_names, "[\"Authorization\"]") == 0 && !got.enabled &&
               strcmp(got.status, "ok") == 0 && !got.error && got.refreshed_at == 5000 &&
               got.generation == 0 && strcmp(got.tools, "[{\"name\":\"echo\"}]") == 0,
           "read back as written");
        ok(store_mcp_server_find(s, &t, "srv3", &a, &got) == 0 && strcmp(got.id, id[3]) == 0,
           "found by name");
        is_int(store_mcp_server_find(s, &t, "nope", &a, &got), ERR_NOT_FOUND, "an unknown name");
        is_int(store_mcp_server_get(s, &other, id[3], &a, &got), ERR_NOT_FOUND,
               "another tenant's is not found");
        ok(store_mcp_servers_list(s, &t, 5, 0, NULL, &a, &page) == 0 && page.n == 5 &&
               page.has_more && strcmp(page.items[0].id, id[15]) == 0,
           "newest first, a page of 5");
        ok(store_mcp_servers_list(s, &t, 5, page.items[4].created_at, page.items[4].id, &a,
                                  &page) == 0 &&
               page.n == 5 && strcmp(page.items[0].id, id[10]) == 0,
           "the next page after the cursor");
        ok(store_mcp_servers_enabled(s, &t, &a, &en, &n) == 0 && n == 8 &&
               strcmp(en[0].id, id[0]) == 0 && strcmp(en[7].id, id[14]) == 0,
           "the enabled ones, oldest first");
        /* updates */
        got.name = "renamed";
        got.enabled = true;
        got.updated_at = 9000;
        is_int(store_mcp_server_update(s, &t, &got, STORE_MCP_NAME | STORE_MCP_ENABLED), 0,
               "rename and enable");
        ok(store_mcp_server_get(s, &t, id[3], &a, &got) == 0 && strcmp(got.name, "renamed") == 0 &&
               got.enabled && got.updated_at == 9000 &&
               strcmp(got.url, "https://mcp.example.com/mcp") == 0 && got.headers_len == 12,
           "only those changed");
        got.name = "srv4";
        is_int(store_mcp_server_update(s, &t, &got, STORE_MCP_NAME), ERR_CONFLICT,
               "a name taken by another server");
        got.url = "https://other.example.com/";
        got.header_names = "[]";
        got.headers = NULL;
        got.headers_len = 0;
        got.status = "error";
        got.error = "connection refused";
        got.tools = "[]";
        got.refreshed_at = 9100;
        is_int(store_mcp_server_update(s, &t, &got, STORE_MCP_TARGET | STORE_MCP_TOOLS), 0,
               "a new target with its tools");
        ok(store_mcp_server_get(s, &t, id[3], &a, &got) == 0 && got.generation == 1 &&
               !got.headers && strcmp(got.header_names, "[]") == 0 &&
               strcmp(got.status, "error") == 0 && strcmp(got.error, "connection refused") == 0 &&
               strcmp(got.name, "renamed") == 0,
           "written, the generation up by one");
        got.generation = 0;
        got.status = "ok";
        got.error = NULL;
        is_int(store_mcp_server_update(s, &t, &got, STORE_MCP_TOOLS), ERR_NOT_FOUND,
               "a refresh begun before the change is not written");
        got.generation = 1;
        got.tools = "[{\"name\":\"new\"}]";
        is_int(store_mcp_server_update(s, &t, &got, STORE_MCP_TOOLS), 0,
               "one of the current generation is");
        ok(store_mcp_server_get(s, &t, id[3], &a, &got) == 0 && strcmp(got.status, "ok") == 0 &&
               !got.error && strcmp(got.tools, "[{\"name\":\"new\"}]") == 0 && got.generation == 1,
           "refreshed");
        is_int(store_mcp_server_update(s, &other, &got, STORE_MCP_NAME), ERR_NOT_FOUND,
               "another tenant cannot update it");
        is_int(store_mcp_server_delete(s, &other, id[3]), ERR_NOT_FOUND, "nor delete it");
        for (int i = 0; i < STORE_MCP_SERVERS_MAX; i++)
            store_mcp_server_delete(s, &t, id[i]);
        is_int(store_mcp_server_delete(s, &t, id[3]), ERR_NOT_FOUND, "deleted");
        ok(store_mcp_servers_list(s, &t, 100, 0, NULL, &a, &page) == 0 && page.n == 0, "none left");
        store_mcp_server_delete(s, &other, id[16]);
        store_mcp_server_delete(s, &other, "mcp_aaaaaaaaaaaaaaaaaaaaxx");
        arena_cleanup(&a);
    }
}

static void fake_wake(void *ud)
{
    (void)ud;
    hook_wakes++;
}

static void test_hooks(struct store *s, const struct store_org *org)
{
    subtest("events and outbound webhooks")
    {
        struct store_tenant t = {.mode = STORE_LIVE};
        struct store_document d;
        struct store_hook_endpoint all, failed_only, off, got;
        struct store_hook_event_page evs;
        struct store_hook_delivery_page dl;
        struct store_hook_claim c;
        struct store_hook_attempt at;
        struct store_chunk ch = {"webhooks text", 1, NULL, 0, "m"};
        int64_t now = clock_now_ms(), wake = 0;
        size_t n = 0;
        struct arena a;
        char lease[sizeof(c.lease)];

        snprintf(t.org_id, sizeof(t.org_id), "%s", org->id);
        arena_init(&a);
        store_hooks_init(fake_render, fake_wake, NULL);
        memset(&all, 0, sizeof(all));
        all.id = "we_aaaaaaaaaaaaaaaaaaaaaaa1";
        all.url = "https://example.com/all";
        all.events = "[\"*\"]";
        all.enabled = true;
        all.secret = (const unsigned char *)"sealed";
        all.secret_len = 6;
        all.created_at = all.updated_at = 1000;
        failed_only = all;
        failed_only.id = "we_aaaaaaaaaaaaaaaaaaaaaaa2";
        failed_only.events = "[\"document.failed\"]";
        failed_only.created_at = 1001;
        off = all;
        off.id = "we_aaaaaaaaaaaaaaaaaaaaaaa3";
        off.enabled = false;
        off.created_at = 1002;
        is_int(store_hook_endpoint_create(s, &t, &all, 3), 0, "endpoint: every type");
        is_int(store_hook_endpoint_create(s, &t, &failed_only, 3), 0, "endpoint: one type");
        is_int(store_hook_endpoint_create(s, &t, &off, 3), 0, "endpoint: disabled");
        is_int(store_hook_endpoint_create(s, &t, &off, 3), ERR_LIMIT, "a fourth is over the max");
        ok(store_hook_endpoint_get(s, &t, all.id, &a, &got) == 0 && got.secret_len == 6 &&
               memcmp(got.secret, "sealed", 6) == 0 && got.enabled,
           "read back with its sealed secret");

        memset(&d, 0, sizeof(d));
        d.id = "doc_hhhhhhhhhhhhhhhhhhhhhhh1";
        d.name = d.filename = "h.txt";
        d.content_type = "text/plain";
        d.sha256 = "00";
        d.tags = d.employee_ids = "[]";
        d.created_at = now;
        is_int(store_document_create(s, &t, &d), 0, "a document");
        hook_refuse = true;
        ok(store_document_finish(s, d.id, &ch, 1, NULL) != 0,
           "an event that cannot be written fails its change");
        hook_refuse = false;
        store_document_get(s, &t, d.id, &a, &d);
        is_str(d.status, "processing", "... and the change is not made");
        hook_wakes = 0;
        is_int(store_document_finish(s, d.id, &ch, 1, NULL), 0, "the document is ready");
        /* the delivery is due at the finish's own clock: the times below count from it (a slow
         * build, ASan's, once took more than 10 ms between the start and the finish) */
        now = clock_now_ms();
        is_int(hook_wakes, 1, "the worker is woken once, after the commit");
        is_int(store_hook_events_list(s, &t, NULL, 10, 0, NULL, &a, &evs), 0, "events");
        ok(evs.n == 1 && strcmp(evs.items[0].type, "document.ready") == 0 &&
               strstr(evs.items[0].data, "\"status\":\"ready\"") != NULL &&
               strncmp(evs.items[0].data, "{\"object\":", 10) == 0,
           "one document.ready with the object as it is after the change");
        is_int(store_document_finish(s, d.id, &ch, 1, NULL), 0, "a second finish");
        store_hook_events_list(s, &t, NULL, 10, 0, NULL, &a, &evs);
        is_int(evs.n, 1, "announces nothing again");
        store_hook_events_list(s, &t, "document.failed", 10, 0, NULL, &a, &evs);
        is_int(evs.n, 0, "type filter");
        store_hook_events_list(s, &t, NULL, 10, 0, NULL, &a, &evs);
        store_hook_deliveries_list(s, &t, NULL, NULL, 10, 0, NULL, &a, &dl);
        ok(dl.n == 1 && strcmp(dl.items[0].endpoint_id, all.id) == 0 &&
               strcmp(dl.items[0].status, "pending") == 0 && dl.items[0].attempts == 0,
           "one delivery: to the enabled endpoint that takes the type");

        is_int(store_hook_claim(s, now + 10, 60000, &a, &c, &wake), 0, "claim it");
        ok(strcmp(c.event_id, evs.items[0].id) == 0 && c.attempt == 1 &&
               strcmp(c.url, all.url) == 0 && c.secret_len == 6 &&
               strcmp(c.tenant.org_id, org->id) == 0,
           "with its event, endpoint and tenant");
        snprintf(lease, sizeof(lease), "%s", c.lease);
        is_int(store_hook_claim(s, now + 20, 60000, &a, &c, &wake), ERR_NOT_FOUND,
               "not twice while leased");
        ok(wake == now + 10 + 60000, "due again when the lease ends");
        memset(&at, 0, sizeof(at));
        at.delivery_id = dl.items[0].id;
        at.lease = "not-the-lease";
        at.at = now + 30;
        at.status_code = 500;
        at.error = "the endpoint answered 500";
        at.next_attempt_at = now + 5030;
        is_int(store_hook_attempted(s, &at), ERR_NOT_FOUND, "another lease writes nothing");
        at.lease = lease;
        is_int(store_hook_attempted(s, &at), 0, "attempt 1 failed");
        store_hook_deliveries_list(s, &t, all.id, NULL, 10, 0, NULL, &a, &dl);
        ok(dl.n == 1 && strcmp(dl.items[0].status, "pending") == 0 && dl.items[0].attempts == 1 &&
               dl.items[0].last_status_code == 500 && dl.items[0].next_attempt_at == now + 5030,
           "pending, retried at its time");
        ok(store_hook_claim(s, now + 40, 60000, &a, &c, &wake) == ERR_NOT_FOUND &&
               wake == now + 5030,
           "not before");
        is_int(store_hook_claim(s, now + 5030, 60000, &a, &c, &wake), 0, "claimed at its time");
        is_int(c.attempt, 2, "attempt 2");
        is_int(store_hook_redeliver(s, &t, evs.items[0].id, NULL, now + 5040, &n), 0,
               "a redelivery asked while in flight");
        memset(&at, 0, sizeof(at));
        at.delivery_id = c.delivery_id;
        at.lease = c.lease;
        at.at = now + 5050;
        at.status_code = 200;
        at.delivered = true;
        is_int(store_hook_attempted(s, &at), 0, "attempt 2 delivered");
        store_hook_deliveries_list(s, &t, NULL, evs.items[0].id, 10, 0, NULL, &a, &dl);
        ok(dl.n == 1 && strcmp(dl.items[0].status, "pending") == 0 && dl.items[0].attempts == 2,
           "the redelivery asked meanwhile keeps it due");
        is_int(store_hook_claim(s, now + 5060, 60000, &a, &c, &wake), 0, "claimed again");
        memset(&at, 0, sizeof(at));
        at.delivery_id = c.delivery_id;
        at.lease = c.lease;
        at.at = now + 5070;
        at.status_code = 404;
        at.error = "the endpoint answered 404";
        is_int(store_hook_attempted(s, &at), 0, "no attempt left");
        store_hook_deliveries_list(s, &t, NULL, NULL, 10, 0, NULL, &a, &dl);
        ok(dl.n == 1 && strcmp(dl.items[0].status, "failed") == 0 && dl.items[0].attempts == 3 &&
               dl.items[0].next_attempt_at == 0,
           "failed for good");
        is_int(store_hook_redeliver(s, &t, "evt_nonenonenonenonenonenon", NULL, now, &n),
               ERR_NOT_FOUND, "redeliver an unknown event");
        is_int(store_hook_redeliver(s, &t, evs.items[0].id, NULL, now + 6000, &n), 0, "redeliver");
        is_int((long)n, 1, "to the one endpoint that takes it");
        store_hook_deliveries_list(s, &t, NULL, NULL, 10, 0, NULL, &a, &dl);
        ok(dl.n == 1 && strcmp(dl.items[0].status, "pending") == 0, "pending again, one row");
        is_int(store_hook_endpoint_delete(s, &t, all.id), 0, "delete the endpoint");
        store_hook_deliveries_list(s, &t, NULL, NULL, 10, 0, NULL, &a, &dl);
        is_int(dl.n, 0, "its deliveries go with it");
        ok(store_hook_claim(s, now + 7000, 60000, &a, &c, &wake) == ERR_NOT_FOUND && wake == 0,
           "nothing left to deliver");
        is_int(store_hook_purge(s, now + 100000), 0, "purge");
        store_hook_events_list(s, &t, NULL, 10, 0, NULL, &a, &evs);
        is_int(evs.n, 0, "old events are gone");
        store_hook_endpoint_delete(s, &t, failed_only.id);
        store_hook_endpoint_delete(s, &t, off.id);
        store_document_delete(s, &t, d.id);
        store_hooks_init(NULL, NULL, NULL);
        arena_cleanup(&a);
    }
}

static void test_faults(const char *path)
{
    subtest("fault injection")
    {
        /* Fail the Nth statement upward through a whole migration, org creation and read,
         * until none fails (tests/unit/test_store_faults.c does it for every write). */
        int clean = 1, done = 0;
        long n;
        for (n = 1; n < 1000 && !done; n++) {
            struct store *s = NULL;
            struct store_org org;
            struct err e;
            int rc;
            err_clear(&e);
            unlink(path);
            if (store_open(path, &s, &e) != 0)
                break;
            store_fail_after(n);
            rc = store_migrate(s, &e);
            if (!rc)
                rc = store_org_create(s, "f", 0, 0, seed, 4, &org, &e);
            if (!rc)
                rc = store_org_get_by_slug(s, "f", &org);
            if (store_fail_after(0) > 0) { /* no statement failed: it must have worked */
                done = 1;
                if (rc)
                    clean = 0;
            } else if (rc != ERR_STORE) {
                clean = 0;
            }
            if (rc) {
                /* Nothing half-written: either the org is complete or absent. */
                struct store_org o2;
                if (store_migrate(s, &e) == 0 && store_org_get_by_slug(s, "f", &o2) == 0) {
                    struct store_tenant t = {.mode = STORE_TEST};
                    struct store_emp_filter f = {.status = -1, .limit = 10};
                    struct store_emp_page p;
                    struct arena a;
                    arena_init(&a);
                    snprintf(t.org_id, sizeof(t.org_id), "%s", o2.id);
                    if (store_employee_list(s, &t, &f, &a, &p) || p.n != 4)
                        clean = 0;
                    arena_cleanup(&a);
                }
            }
            store_close(s);
        }
        ok(clean, "every injected failure is a clean ERR_STORE, nothing half-written");
        ok(done, "then it succeeds");
        unlink(path);
    }
}

static void test_durable(const char *path)
{
    subtest("file database")
    {
        struct store *s = NULL;
        struct store_org org;
        struct err e;
        err_clear(&e);
        unlink(path);
        ok(store_open(path, &s, &e) == 0 && store_migrate(s, &e) == 0, "open a file database");
        ok(store_org_create(s, "d", 0, 3, api_catalog, api_catalog_count, &org, &e) == 0,
           "create org with the shipped catalog");
        store_close(s);
        ok(store_open(path, &s, &e) == 0 && store_migrate(s, &e) == 0, "reopen");
        ok(store_org_get_by_slug(s, "d", &org) == 0 && org.credits == 3, "committed org survives");
        store_close(s);
        unlink(path);
    }
}

/* The generation moves on every commit: this handle's at once, another's when this handle
 * next looks (the caches of the request path depend on both). */
static void test_generation(const char *path)
{
    subtest("generation")
    {
        struct store *a = NULL, *b = NULL;
        struct store_org org;
        struct err e;
        uint64_t g0, g1, g2;
        err_clear(&e);
        unlink(path);
        ok(store_open(path, &a, &e) == 0 && store_migrate(a, &e) == 0 &&
               store_open(path, &b, &e) == 0,
           "two connections to one file");
        g0 = store_generation(a);
        ok(store_generation(a) == g0, "nothing committed: the same generation");
        ok(store_org_create(b, "gen", 0, 3, NULL, 0, &org, &e) == 0, "a commit on the other");
        g1 = store_generation(a);
        ok(g1 != g0, "seen through the first handle");
        ok(store_generation(a) == g1, "and only once");
        ok(store_org_update(a, "gen", 1, 5, &org) == 0, "a commit on this handle");
        g2 = store_generation(a);
        ok(g2 != g1, "this handle's own commit moves it");
        {
            /* Another process's commit (the CLI's): seen within 100 ms, not 1 s. */
            pid_t pid = fork();
            int64_t t0, waited = -1;
            if (pid == 0) {
                struct store *c = NULL;
                struct store_org o;
                struct err ce;
                err_clear(&ce);
                _exit(store_open(path, &c, &ce) || store_org_update(c, "gen", 2, 9, &o) ? 1 : 0);
            }
            int st = -1;
            waitpid(pid, &st, 0);
            ok(pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0, "another process committed");
            t0 = clock_mono_us();
            while (clock_mono_us() - t0 < 1000000) {
                if (store_generation(a) != g2) {
                    waited = clock_mono_us() - t0;
                    break;
                }
                usleep(2000);
            }
            ok(waited >= 0 && waited <= 200000, "another process's commit is seen within 0.2 s");
            if (waited < 0 || waited > 200000)
                printf("#   waited %lld us\n", (long long)waited);
        }
        store_close(a);
        store_close(b);
        unlink(path);
    }
}

/* Replies finished from many threads at once through one committer (group commit), as the
 * server does: every one that is acknowledged is there, each charged once, and a reply that
 * fails is undone alone, whatever group it shared. Odd threads finish through the committer,
 * even ones in a transaction of their own (store_chat_finish), both at once. */
#define GC_THREADS 8
#define GC_EACH 25

struct gc_worker {
    const char *path;
    const char *org_id;
    const char *emp_id;
    struct store_committer *committer;
    int n;
    int ok;     /* finishes acknowledged */
    int failed; /* the deliberate failure was refused */
};

/* A finish handed to the committer, waited for. */
struct gc_job {
    struct store_job job;
    const struct store_tenant *t;
    const struct store_chat_finish *fin;
    int64_t charged;
};

static int gc_apply(struct store *s, struct store_job *job)
{
    struct gc_job *x = (struct gc_job *)job;
    return store_chat_finish_in(s, x->t, x->fin, &x->charged);
}

static int gc_finish(struct store_committer *c, const struct store_tenant *t,
                     const struct store_chat_finish *fin, int64_t *charged)
{
    struct gc_job x;
    int rc;
    memset(&x, 0, sizeof(x));
    x.job.apply = gc_apply;
    x.t = t;
    x.fin = fin;
    rc = store_committer_run(c, &x.job);
    *charged = rc ? 0 : x.charged;
    return rc;
}

static void *gc_run(void *arg)
{
    struct gc_worker *w = arg;
    struct store *s = NULL;
    struct store_tenant t = {.mode = STORE_LIVE};
    struct err e;
    err_clear(&e);
    snprintf(t.org_id, sizeof(t.org_id), "%s", w->org_id);
    if (store_open(w->path, &s, &e))
        return NULL;
    for (int i = 0; i <= GC_EACH; i++) {
        char conv[ID_MAX], user[ID_MAX], reply[ID_MAX];
        struct store_chat_begin b;
        struct store_chat_finish fin;
        int64_t charged = 0;
        int rc;
        bool dup = i == GC_EACH; /* the last one reuses its user message's id: it must fail */
        snprintf(conv, sizeof(conv), "conv_gc%02d%03dxxxxxxxxxxxxxxxxx", w->n, i);
        snprintf(user, sizeof(user), "msg_gcu%02d%03dxxxxxxxxxxxxxxxxx", w->n, i);
        snprintf(reply, sizeof(reply), "msg_gcr%02d%03dxxxxxxxxxxxxxxxxx", w->n, i);
        memset(&b, 0, sizeof(b));
        b.new_conversation = true;
        b.conversation = (struct store_conversation){conv, w->emp_id, "T", 0, 100, 100};
        b.user = (struct store_message){user, conv, w->emp_id, "user", "hi", NULL, 0,   0,
                                        0,    -1,   100,       0,      NULL, NULL, NULL};
        if (store_chat_begin(s, &t, &b))
            continue;
        memset(&fin, 0, sizeof(fin));
        fin.reply = (struct store_message){dup ? user : reply,
                                           conv,
                                           w->emp_id,
                                           "assistant",
                                           "hello",
                                           "[]",
                                           2,
                                           1,
                                           1,
                                           5,
                                           200,
                                           0,
                                           NULL,
                                           NULL,
                                           NULL};
        fin.charge = true;
        rc = w->n % 2 ? gc_finish(w->committer, &t, &fin, &charged)
                      : store_chat_finish(s, &t, &fin, &charged);
        if (rc == 0) {
            if (!dup && charged == 2)
                w->ok++;
        } else if (dup) {
            w->failed = 1;
            store_chat_abort(s, &t, w->emp_id, NULL, false);
        }
    }
    store_close(s);
    return NULL;
}

static void test_group_commit(const char *path)
{
    subtest("group commit")
    {
        struct store *s = NULL;
        struct store_org org, after;
        struct store_tenant t = {.mode = STORE_LIVE};
        struct store_emp_filter f = {.status = -1, .limit = 1};
        struct store_emp_page p;
        struct store_employee emp;
        struct gc_worker w[GC_THREADS];
        pthread_t th[GC_THREADS];
        struct store_committer *committer = NULL;
        struct arena a;
        struct err e;
        int ok_total = 0, failed_total = 0;
        int64_t messages = 0;
        err_clear(&e);
        arena_init(&a);
        unlink(path);
        ok(store_open(path, &s, &e) == 0 && store_migrate(s, &e) == 0 &&
               store_org_create(s, "gc", 0, 1000, api_catalog, api_catalog_count, &org, &e) == 0,
           "a file database with an organization of 1000 credits");
        snprintf(t.org_id, sizeof(t.org_id), "%s", org.id);
        store_employee_list(s, &t, &f, &a, &p);
        ok(store_committer_new(path, &committer, &e) == 0, "a committer on the same file");
        for (int i = 0; i < GC_THREADS; i++) {
            w[i] = (struct gc_worker){path, org.id, p.items[0].id, committer, i, 0, 0};
            pthread_create(&th[i], NULL, gc_run, &w[i]);
        }
        for (int i = 0; i < GC_THREADS; i++) {
            pthread_join(th[i], NULL);
            ok_total += w[i].ok;
            failed_total += w[i].failed;
        }
        store_committer_free(committer);
        is_int(ok_total, GC_THREADS * GC_EACH, "every good reply acknowledged");
        is_int(failed_total, GC_THREADS, "every bad reply refused");
        store_org_get(s, org.id, &after);
        is_int(after.credits, 1000 - 2 * GC_THREADS * GC_EACH,
               "charged once per acknowledged reply, nothing for the refused ones");
        for (int i = 0; i < GC_THREADS; i++) {
            for (int j = 0; j <= GC_EACH; j++) {
                char conv[ID_MAX];
                struct store_conversation c;
                snprintf(conv, sizeof(conv), "conv_gc%02d%03dxxxxxxxxxxxxxxxxx", i, j);
                if (store_conversation_get(s, &t, conv, &a, &c) == 0)
                    messages += c.message_count;
            }
        }
        is_int(messages, GC_THREADS * (2 * GC_EACH + 1),
               "each conversation holds its messages; a refused reply left none");
        store_employee_get(s, &t, p.items[0].id, &a, &emp);
        is_int(emp.status, STORE_EMP_IDLE, "the employee is idle again");
        store_close(s);
        arena_cleanup(&a);
        unlink(path);
    }
}

static void test_catalog(void)
{
    subtest("catalog")
    {
        const char *cats[16];
        size_t ncat = 0;
        int starter = 0, manager = 0;
        ok(api_catalog_count >= 8, "at least 8 employees");
        for (size_t i = 0; i < api_catalog_count; i++) {
            size_t j;
            for (j = 0; j < ncat; j++) {
                if (strcmp(cats[j], api_catalog[i].category) == 0)
                    break;
            }
            if (j == ncat && ncat < 16)
                cats[ncat++] = api_catalog[i].category;
            starter += strcmp(api_catalog[i].tier, "starter") == 0;
            manager += strcmp(api_catalog[i].tier, "manager") == 0;
            if (strlen(api_catalog[i].instructions) < 40 || strlen(api_catalog[i].capabilities) < 5)
                ok(0, "every employee has a persona and capabilities");
        }
        ok(ncat >= 5, "at least 5 categories");
        ok(starter > 0 && manager > 0, "both tiers");
    }
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

extern const size_t store_sqlite_migrations_count, store_pg_migrations_count;

static void test_postgres(void)
{
    const char *url = getenv("WORKFORCE_TEST_PG_URL");
    struct store *s = NULL;
    struct store_org org;
    struct err e;

    is_int((long)store_pg_migrations_count, (long)store_sqlite_migrations_count,
           "postgres: the same migration versions as SQLite");
    if (!url || !*url) {
        skip("postgres", "WORKFORCE_TEST_PG_URL is not set (tests/pg/pg.sh start DIR)");
        return;
    }
    err_clear(&e);
    ok(pg_reset(url) == 0, "postgres: an empty schema");
    ok(store_open(url, &s, &e) == 0, "postgres: open");
    if (!s)
        return;
    test_migrate(s);
    test_orgs_keys(s, &org);
    test_employees(s, &org);
    test_stats(s, &org);
    test_chat(s, &org);
    test_client_turn(s, &org);
    test_nodes(s, &org);
    test_approvals(s, &org);
    test_shared_limits(s);
    test_knowledge(s, &org);
    test_mcp_servers(s, &org);
    test_hooks(s, &org);
    store_close(s);
}

struct pool_waiter {
    struct store_pool *p;
    struct store *got;
};

static void *pool_wait_main(void *arg)
{
    struct pool_waiter *w = arg;
    w->got = store_pool_get(w->p);
    return NULL;
}

/* The pool opens connections when first needed, never more than its size. */
static void test_pool(const char *path)
{
    subtest("pool")
    {
        struct store_pool *p = NULL;
        struct store *a, *b, *c;
        struct pool_waiter w;
        pthread_t th;
        struct err e;

        err_clear(&e);
        ok(store_pool_new("/nonexistent-dir/x.db", 3, &p, &e) != 0 && !p,
           "a database that cannot be opened fails at once");
        is_int(store_pool_new(path, 3, &p, &e), 0, "a pool of 3");
        a = store_pool_get(p);
        b = store_pool_get(p);
        c = store_pool_get(p);
        ok(a && b && c && a != b && b != c && a != c, "three distinct handles");
        ok(store_ping(a) == 0 && store_ping(b) == 0 && store_ping(c) == 0, "each one works");
        w.p = p;
        w.got = NULL;
        ok(pthread_create(&th, NULL, pool_wait_main, &w) == 0, "a fourth borrower");
        store_pool_put(p, b);
        pthread_join(th, NULL);
        ok(w.got == b, "the fourth waits for a handle to come back, none more is opened");
        store_pool_put(p, a);
        store_pool_put(p, c);
        store_pool_put(p, w.got);
        store_pool_free(p);
    }
}

int main(void)
{
    struct store *s = NULL;
    struct store_org org;
    struct err e;
    char path[] = "/tmp/workforce-test-store-XXXXXX";
    char dbpath[64];
    int fd = mkstemp(path);

    if (fd >= 0)
        close(fd);
    snprintf(dbpath, sizeof(dbpath), "%s.db", path);
    err_clear(&e);
    ok(store_open(":memory:", &s, &e) == 0, "open :memory:");
    test_migrate(s);
    test_orgs_keys(s, &org);
    test_employees(s, &org);
    test_stats(s, &org);
    test_chat(s, &org);
    test_client_turn(s, &org);
    test_nodes(s, &org);
    test_approvals(s, &org);
    test_shared_limits(s);
    test_knowledge(s, &org);
    test_mcp_servers(s, &org);
    test_hooks(s, &org);
    store_close(s);
    test_faults(dbpath);
    test_durable(dbpath);
    test_generation(dbpath);
    test_group_commit(dbpath);
    test_pool(dbpath);
    test_catalog();
    test_postgres();
    unlink(path);
    {
        char wal[80];
        snprintf(wal, sizeof(wal), "%s-wal", dbpath);
        unlink(wal);
        snprintf(wal, sizeof(wal), "%s-shm", dbpath);
        unlink(wal);
    }
    return done_testing();
}
