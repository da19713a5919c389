/* SPDX-License-Identifier: MIT */
/*
 * Issue 29: usage's sums. Every work entry adds to its hour's sum (store/ledger.c); the keeper
 * folds the hours of days that ended more than a day ago into one row per day
 * (store_credit_usage_compact). Chats are held at made-up times over four days for two
 * employees; usage by day and by employee must read the same before and after the folding, the
 * folding must fold (and do nothing a second time the same day), and the balance must still
 * equal its ledger. On SQLite, and on PostgreSQL when WORKFORCE_TEST_PG_URL names one (its
 * public schema is emptied).
 */
#include "../../src/core/clock.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/store/driver.h"
#include "../../src/store/store.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DAY 86400000LL
#define T0 (1765065600000LL + 10 * 3600000LL) /* 2025-12-07 10:00 UTC */

static const struct store_employee seed[] = {
    {.name = "Ann", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
    {.name = "Bob", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
};

static struct store *fresh(const char *url, bool pg)
{
    static const char *const sql[] = {"DROP SCHEMA IF EXISTS public CASCADE",
                                      "CREATE SCHEMA public"};
    struct store *s = NULL;
    struct err e;

    err_clear(&e);
    if (pg) {
        int rc = store_open(url, &s, &e);
        for (size_t i = 0; !rc && i < 2; i++) {
            struct db_stmt *st = db_prepare(s, sql[i]);
            rc = st ? db_exec(st) : ERR_STORE;
        }
        store_close(s);
        s = NULL;
        if (rc)
            return NULL;
    } else {
        char side[160];
        unlink(url);
        snprintf(side, sizeof(side), "%s-wal", url);
        unlink(side);
        snprintf(side, sizeof(side), "%s-shm", url);
        unlink(side);
    }
    if (store_open(url, &s, &e) || store_migrate(s, &e)) {
        printf("#   %s\n", e.msg);
        store_close(s);
        return NULL;
    }
    return s;
}

/* A chat of employee 'emp' started (1 credit held: one work entry) at 'at'. */
static int chat_at(struct store *s, const struct store_tenant *t, const char *emp, int i,
                   int64_t at)
{
    struct store_chat_begin b;
    char conv[48], msg[48], reply[48];

    snprintf(conv, sizeof(conv), "conv_%024d", i);
    snprintf(msg, sizeof(msg), "msg_u%023d", i);
    snprintf(reply, sizeof(reply), "msg_r%023d", i);
    clock_set_fake_ms(at);
    memset(&b, 0, sizeof(b));
    b.new_conversation = true;
    b.conversation.id = conv;
    b.conversation.employee_id = emp;
    b.conversation.title = "Title";
    b.conversation.created_at = b.conversation.updated_at = at;
    b.user.id = msg;
    b.user.conversation_id = conv;
    b.user.employee_id = emp;
    b.user.role = "user";
    b.user.content = "hello";
    b.user.response_ms = -1;
    b.user.created_at = at;
    b.reserve_credit = true;
    b.reply_id = reply;
    return store_chat_begin(s, t, &b);
}

/* Usage of tenant 't' since 'from' as one line of text ("key:credits:count;..."). */
static const char *usage_text(struct store *s, const struct store_tenant *t, int64_t from,
                              bool by_employee, struct arena *a)
{
    struct store_usage_item *v = NULL;
    size_t n = 0, at = 0;
    char *out = arena_alloc(a, 4096);

    out[0] = '\0';
    if (store_credit_usage(s, t, from, by_employee, a, &v, &n))
        return "(failed)";
    for (size_t i = 0; i < n && at < 4000; i++)
        at += (size_t)snprintf(out + at, 4096 - at, "%s:%lld:%lld;", v[i].key,
                               (long long)v[i].credits, (long long)v[i].count);
    return out;
}

static void on(const char *url, const char *backend, bool pg)
{
    subtest(backend)
    {
        struct store *s = fresh(url, pg);
        struct store_org org;
        struct store_tenant t;
        struct store_emp_filter ef = {.status = -1, .limit = 10};
        struct store_emp_page page;
        struct arena a;
        struct err e;
        const char *emp[2];
        const char *day_before, *emp_before;
        const int64_t from = T0 - T0 % DAY - 3 * DAY, now = T0 + 3 * DAY;
        int64_t folded = -1, bad = -1, balance = -1;
        int i = 0, failed = 0;

        arena_init(&a);
        err_clear(&e);
        /* the ledger's clock never goes back: the organization (its grant) comes first */
        clock_set_fake_ms(T0 - DAY);
        if (!s || store_org_create(s, "acme", 1, 1000, seed, 2, &org, &e)) {
            ok(0, "a database and an organization");
            store_close(s);
            arena_cleanup(&a);
            continue;
        }
        snprintf(t.org_id, sizeof(t.org_id), "%s", org.id);
        t.mode = STORE_LIVE;
        memset(&page, 0, sizeof(page));
        ok(store_employee_list(s, &t, &ef, &a, &page) == 0 && page.n == 2, "two employees");
        emp[0] = page.n == 2 ? page.items[0].id : "";
        emp[1] = page.n == 2 ? page.items[1].id : "";
        /* four days: day d has d + 1 chats of Ann and 1 of Bob, at different hours */
        for (int d = 0; d < 4; d++) {
            for (int k = 0; k <= d; k++)
                failed += chat_at(s, &t, emp[0], i++, T0 + d * DAY + k * 3600000LL) != 0;
            failed += chat_at(s, &t, emp[1], i++, T0 + d * DAY + 7 * 3600000LL) != 0;
        }
        is_int(failed, 0, "14 chats held a credit each");
        clock_set_fake_ms(now);
        day_before = usage_text(s, &t, from, false, &a);
        emp_before = usage_text(s, &t, from, true, &a);
        is_str(day_before, "2025-12-07:2:2;2025-12-08:3:3;2025-12-09:4:4;2025-12-10:5:5;",
               "by day, from the hourly sums");
        ok(strncmp(emp_before, "emp_", 4) == 0 && strstr(emp_before, ":10:10;") &&
               strstr(emp_before, ":4:4;"),
           "by employee: Ann 10, Bob 4");
        is_int(store_credit_usage_compact(s, now, &folded), 0, "the keeper folds");
        /* the days before yesterday (7th, 8th): Ann's 1 + 2 hours beyond each day's first row,
         * Bob's hours; the 9th (yesterday) and the 10th (today) stay by the hour */
        ok(folded > 0, "hours of the days before yesterday were folded");
        is_str(usage_text(s, &t, from, false, &a), day_before, "by day: the same after");
        is_str(usage_text(s, &t, from, true, &a), emp_before, "by employee: the same after");
        /* yesterday from 11:00 (Ann's 11:00 and 12:00, Bob's 17:00), and today */
        is_str(usage_text(s, &t, now - DAY + 3600000LL, false, &a),
               "2025-12-09:3:3;2025-12-10:5:5;", "the last 24 h still by the hour");
        is_int(store_credit_usage_compact(s, now + 3600000LL, &folded), 0, "an hour later");
        is_int(folded, 0, "nothing more the same day");
        is_int(store_credit_usage_compact(s, now + DAY, &folded), 0, "a day later");
        ok(folded > 0, "yesterday's hours fold in turn");
        is_str(usage_text(s, &t, from, false, &a), day_before, "and the days still read the same");
        ok(store_credit_check(s, NULL, NULL, &bad) == 0 && bad == 0 &&
               store_credit_balance(s, &t, &balance) == 0 && balance == 1000 - 14,
           "the balance is its ledger's");
        clock_set_fake_ms(0);
        store_close(s);
        arena_cleanup(&a);
    }
}

int main(void)
{
    char path[] = "/tmp/wf-usage-XXXXXX";
    int fd = mkstemp(path);
    const char *pg = getenv("WORKFORCE_TEST_PG_URL");

    close(fd);
    on(path, "sqlite", false);
    unlink(path);
    if (pg && *pg)
        on(pg, "postgres", true);
    else
        skip("postgres", "WORKFORCE_TEST_PG_URL is not set (tests/pg/pg.sh start DIR)");
    return done_testing();
}
