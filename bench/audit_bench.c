/* SPDX-License-Identifier: MIT */
/*
 * audit_bench: what the audit entry adds to a write (issue 28), on a SQLite database in a file
 * (WAL, as the server has it). Two writes, each once without an audit context and once with one
 * armed (store_audit_arm(): the entry is written in the write's own transaction, as the router
 * does around a handler):
 *   - "user": PATCH /v1/users/{id}'s store_user_update() (a name), a transaction of its own
 *     either way: the entry adds one INSERT to it. This is the goal's figure.
 *   - "employee": PATCH /v1/employees/{id}'s store_employee_update(), a single statement: alone
 *     it runs in autocommit; armed, the store gives it a transaction with its entry.
 * The kinds alternate in blocks, so that the disk's and the machine's drifts fall on both
 * alike; each block's mean time per write is kept, and the medians of the blocks are compared.
 * Prints one JSON line.
 *
 *     audit_bench DIR [BLOCKS] [WRITES_PER_BLOCK]
 */
#include "../src/core/clock.h"
#include "../src/core/mem.h"
#include "../src/store/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
    static const struct store_employee seed[] = {
        {.name = "Ann", .role = "R", .category = "sales", .tier = "starter", .capabilities = "[]"},
    };
    int blocks = argc > 2 ? atoi(argv[2]) : 20, per = argc > 3 ? atoi(argv[3]) : 200;
    double *plain = xcalloc((size_t)blocks, sizeof(double));
    double *audited = xcalloc((size_t)blocks, sizeof(double));
    double *uplain = xcalloc((size_t)blocks, sizeof(double));
    double *uaudited = xcalloc((size_t)blocks, sizeof(double));
    struct store_user u, out;
    struct store_emp_filter ef = {.status = -1, .limit = 1};
    struct store_emp_page page;
    struct store_tenant t;
    struct store_org org;
    struct store *s = NULL;
    struct arena a;
    struct err e;
    char url[512];
    int rc;

    if (argc < 2 || blocks < 2 || per < 1) {
        fprintf(stderr, "usage: audit_bench DIR [BLOCKS] [WRITES_PER_BLOCK]\n");
        return 2;
    }
    snprintf(url, sizeof(url), "%s/bench.db", argv[1]);
    err_clear(&e);
    arena_init(&a);
    rc = store_open(url, &s, &e);
    if (!rc)
        rc = store_migrate(s, &e);
    if (!rc && store_org_get_by_slug(s, "bench", &org) == ERR_NOT_FOUND)
        rc = store_org_create(s, "bench", 1, 0, seed, 1, &org, &e);
    if (!rc) {
        snprintf(t.org_id, sizeof(t.org_id), "%s", org.id);
        t.mode = STORE_LIVE;
        rc = store_employee_list(s, &t, &ef, &a, &page);
    }
    if (!rc) {
        memset(&u, 0, sizeof(u));
        snprintf(u.id, sizeof(u.id), "usr_0123456789012345678901");
        snprintf(u.org_id, sizeof(u.org_id), "%s", org.id);
        snprintf(u.email, sizeof(u.email), "ann@example.com");
        u.role = STORE_ROLE_OWNER;
        u.created_at = u.updated_at = clock_now_ms();
        if (store_user_get(s, org.id, u.id, &out) == ERR_NOT_FOUND)
            rc = store_user_create(s, &u, &e);
    }
    if (rc || page.n < 1) {
        fprintf(stderr, "audit_bench: setup failed (%d): %s\n", rc, e.msg);
        return 1;
    }
    for (int b = 0; b < 4 * blocks && !rc; b++) {
        bool armed = b % 2 == 1, user = (b / 2) % 2 == 1;
        int64_t t0 = clock_mono_us();
        for (int i = 0; i < per && !rc; i++) {
            struct store_employee emp;
            struct store_audit entry;
            char name[32];
            memset(&emp, 0, sizeof(emp));
            snprintf(name, sizeof(name), "Ann %d-%d", b, i);
            emp.name = name;
            memset(&entry, 0, sizeof(entry));
            entry.tenant = t;
            entry.actor_type = STORE_ACTOR_API_KEY;
            entry.actor_id = "key_0123456789012345678901";
            entry.actor_label = "svc_live_sk_…abcd";
            entry.action = user ? "user.update" : "employee.update";
            entry.target_type = user ? "user" : "employee";
            entry.target_id = user ? u.id : page.items[0].id;
            entry.ip = "127.0.0.1";
            entry.user_agent = "audit_bench";
            entry.request_id = "req_0123456789012345678901";
            if (armed)
                store_audit_arm(s, &entry);
            if (user)
                rc = store_user_update(s, org.id, u.id, name, -1, -1, clock_now_ms(), &out, &e);
            else
                rc = store_employee_update(s, &t, page.items[0].id, &emp, STORE_EMP_NAME,
                                           clock_now_ms());
            store_audit_arm(s, NULL);
            if (!rc && armed && !entry.written)
                rc = -1;
        }
        (user ? (armed ? uaudited : uplain) : (armed ? audited : plain))[b / 4] =
            (double)(clock_mono_us() - t0) / per;
    }
    if (rc) {
        fprintf(stderr, "audit_bench: a write failed (%d)\n", rc);
        return 1;
    }
    {
        double p = median(plain, blocks), q = median(audited, blocks);
        double up = median(uplain, blocks), uq = median(uaudited, blocks);
        printf("{\"writes_per_kind\": %d, \"user_plain_us\": %.1f, \"user_audited_us\": %.1f, "
               "\"user_ratio\": %.3f, \"employee_plain_us\": %.1f, \"employee_audited_us\": "
               "%.1f, \"employee_ratio\": %.3f}\n",
               blocks * per, up, uq, uq / up, p, q, q / p);
    }
    store_close(s);
    arena_cleanup(&a);
    free(plain);
    free(audited);
    free(uplain);
    free(uaudited);
    return 0;
}
