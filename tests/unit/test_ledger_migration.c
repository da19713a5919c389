/* SPDX-License-Identifier: MIT */
/*
 * Issue 29: migration 25 opens each existing organization's ledger with one adjustment entry
 * for the balance it had, so that from the first minute of the new version every balance
 * equals the sum of its entries. A database is made at schema 24 (the migrations before 25,
 * applied here with SQLite itself), given organizations with balances, then opened and
 * migrated by the store.
 */
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/store/store.h"
#include "t.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const char *const store_sqlite_migrations[];

/* A database at schema 24 with organizations 'acme' (42 credits) and 'zero' (none). */
static int make_v24(const char *path)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open(path, &db);
    char sql[256];

    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db,
                          "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY,"
                          " applied_at INTEGER NOT NULL)",
                          NULL, NULL, NULL);
    for (int v = 1; rc == SQLITE_OK && v <= 24; v++) {
        rc = sqlite3_exec(db, store_sqlite_migrations[v - 1], NULL, NULL, NULL);
        snprintf(sql, sizeof(sql), "INSERT INTO schema_migrations VALUES (%d, 1)", v);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db,
                          "INSERT INTO orgs (id, slug, tier, credits, created_at, updated_at)"
                          " VALUES ('org_aaaaaaaaaaaaaaaaaaaaaaaa', 'acme', 'starter', 42, 1, 1),"
                          " ('org_bbbbbbbbbbbbbbbbbbbbbbbb', 'zero', 'starter', 0, 1, 1)",
                          NULL, NULL, NULL);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

int main(void)
{
    char path[] = "/tmp/wf-ledger-migration-XXXXXX";
    int fd = mkstemp(path);

    subtest("migration 25 opens the ledgers")
    {
        struct store *s = NULL;
        struct store_tenant t = {"org_aaaaaaaaaaaaaaaaaaaaaaaa", STORE_LIVE};
        struct store_credit_filter f = {-1, 0, 0, NULL, 10};
        struct store_credit_tx *v = NULL;
        struct arena a;
        struct err e;
        size_t n = 0;
        bool more = false;
        int64_t bad = -1, balance = -1;

        close(fd);
        unlink(path);
        arena_init(&a);
        err_clear(&e);
        ok(make_v24(path) == 0, "a database at schema 24 with two organizations");
        ok(store_open(path, &s, &e) == 0 && store_migrate(s, &e) == 0, "migrated to this build");
        ok(s && store_credit_list(s, &t, &f, &a, &v, &n, &more) == 0, "its ledger read");
        is_int((int64_t)n, 1, "one entry");
        if (n == 1) {
            is_str(store_credit_reasons[v[0].reason], "adjustment", "an adjustment");
            is_int(v[0].amount, 42, "for the balance it had");
            is_int(v[0].balance_after, 42, "which it is after");
            ok(v[0].ref_type == NULL && v[0].employee_id == NULL, "of nothing in particular");
        }
        ok(s && store_credit_balance(s, &t, &balance) == 0 && balance == 42,
           "the balance is unchanged");
        ok(s && store_credit_check(s, NULL, NULL, &bad) == 0 && bad == 0,
           "every balance equals the sum of its ledger (both organizations, both modes)");
        t.mode = STORE_TEST;
        ok(s && store_credit_list(s, &t, &f, &a, &v, &n, &more) == 0 && n == 0,
           "the test ledger starts empty");
        store_close(s);
        arena_cleanup(&a);
        unlink(path);
    }
    return done_testing();
}
