/* SPDX-License-Identifier: MIT */
/*
 * employees.c: the employees of a tenant, their activity events and the statistics read from
 * them, written once over the driver (driver.h). A flag reads the same on both databases
 * (CASE WHEN disabled: an integer in SQLite, a boolean in PostgreSQL), and counts by kind are
 * sums of CASE expressions, as PostgreSQL does not add booleans.
 */
#include "store_int.h"

#include <string.h>

/* offline (disabled), busy (some node holds work of it: employee_work) or available */
#define EMP_STATUS                                                                                 \
    "CASE WHEN disabled THEN 2 WHEN EXISTS (SELECT 1 FROM employee_work w WHERE w.employee_id ="   \
    " employees.id AND w.n > 0) THEN 1 ELSE 0 END"
#define EMP_COLS                                                                                   \
    "id, name, role, category, tier, capabilities, description, instructions, model, " EMP_STATUS  \
    ", created_at, updated_at, tools"
#define EMP_FILTER                                                                                 \
    " WHERE org_id = $1 AND mode = $2 AND (CAST($3 AS TEXT) IS NULL OR category = $3) AND ($4 < "  \
    "0 OR"                                                                                         \
    " (" EMP_STATUS ") = $4)"

static void read_employee(struct db_stmt *st, struct arena *a, struct store_employee *out)
{
    out->id = db_arena_text(a, st, 0);
    out->name = db_arena_text(a, st, 1);
    out->role = db_arena_text(a, st, 2);
    out->category = db_arena_text(a, st, 3);
    out->tier = db_arena_text(a, st, 4);
    out->capabilities = db_arena_text(a, st, 5);
    out->description = db_arena_text(a, st, 6);
    out->instructions = db_arena_text(a, st, 7);
    out->model = db_arena_text(a, st, 8);
    out->status = (enum store_emp_status)db_int64(st, 9);
    out->created_at = db_int64(st, 10);
    out->updated_at = db_int64(st, 11);
    out->tools = db_arena_text(a, st, 12);
}

static void bind_filter(struct db_stmt *st, const struct store_tenant *t,
                        const struct store_emp_filter *f)
{
    db_bind_tenant(st, t);
    db_bind_text(st, 3, f->category);
    db_bind_int64(st, 4, f->status);
}

static int employee_page(struct store *s, const struct store_tenant *t,
                         const struct store_emp_filter *f, struct arena *a,
                         struct store_emp_page *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT " EMP_COLS " FROM employees" EMP_FILTER
                                       " AND (CAST($5 AS TEXT) IS NULL OR (name, id) > ($5, $6))"
                                       " ORDER BY name, id LIMIT $7");
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    bind_filter(st, t, f);
    db_bind_text(st, 5, f->after_name);
    db_bind_text(st, 6, f->after_id);
    db_bind_int64(st, 7, (int64_t)f->limit + 1);
    out->items = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*out->items));
    while (!(rc = db_step(st, &row)) && row) {
        if (out->n == f->limit) {
            out->has_more = true;
            break;
        }
        read_employee(st, a, &out->items[out->n++]);
    }
    db_done(st);
    if (rc)
        return rc;
    st = db_prepare(s, "SELECT count(*) FROM employees" EMP_FILTER);
    if (!st)
        return ERR_STORE;
    bind_filter(st, t, f);
    rc = db_step(st, &row);
    if (!rc && row)
        out->total = db_int64(st, 0);
    db_done(st);
    return rc;
}

/* See store_int.h. The page and its total come from one read transaction, so they agree. */
int employees_list(struct store *s, const struct store_tenant *t, const struct store_emp_filter *f,
                   struct arena *a, struct store_emp_page *out)
{
    int rc;

    memset(out, 0, sizeof(*out));
    rc = db_begin(s, DB_TX_READ);
    if (rc)
        return rc;
    rc = employee_page(s, t, f, a, out);
    if (rc)
        db_rollback(s);
    else
        rc = db_commit(s);
    return rc;
}

/* See store_int.h. */
int employees_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                  struct store_employee *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT " EMP_COLS " FROM employees WHERE org_id = $1"
                                       " AND mode = $2 AND id = $3");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    rc = db_step(st, &row);
    if (!rc && row)
        read_employee(st, a, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int employees_update(struct store *s, const struct store_tenant *t, const char *id,
                     const struct store_employee *emp, unsigned fields, int64_t now)
{
    /* Each $N is null when the field is not set; $13 true means "set model (maybe to null)". */
    struct db_stmt *st = db_prepare(
        s, "UPDATE employees SET name = coalesce($4, name), role = coalesce($5, role),"
           " category = coalesce($6, category), tier = coalesce($7, tier),"
           " capabilities = coalesce($8, capabilities), description = coalesce($9, description),"
           " instructions = coalesce($10, instructions),"
           " model = CASE WHEN $13 THEN $11 ELSE model END,"
           " disabled = coalesce($12, disabled), updated_at = $14, tools = coalesce($15, tools)"
           " WHERE org_id = $1 AND mode = $2 AND id = $3");

    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    db_bind_text(st, 4, fields & STORE_EMP_NAME ? emp->name : NULL);
    db_bind_text(st, 5, fields & STORE_EMP_ROLE ? emp->role : NULL);
    db_bind_text(st, 6, fields & STORE_EMP_CATEGORY ? emp->category : NULL);
    db_bind_text(st, 7, fields & STORE_EMP_TIER ? emp->tier : NULL);
    db_bind_text(st, 8, fields & STORE_EMP_CAPABILITIES ? emp->capabilities : NULL);
    db_bind_text(st, 9, fields & STORE_EMP_DESCRIPTION ? emp->description : NULL);
    db_bind_text(st, 10, fields & STORE_EMP_INSTRUCTIONS ? emp->instructions : NULL);
    db_bind_text(st, 11, fields & STORE_EMP_MODEL ? emp->model : NULL);
    if (fields & STORE_EMP_STATUS)
        db_bind_int64(st, 12, emp->status == STORE_EMP_OFFLINE);
    else
        db_bind_null(st, 12);
    db_bind_int64(st, 13, (fields & STORE_EMP_MODEL) != 0);
    db_bind_int64(st, 14, now);
    db_bind_text(st, 15, fields & STORE_EMP_TOOLS ? emp->tools : NULL);
    return db_exec_one(st);
}

/* See store_int.h. One statement, prepared once per connection (compiling it on every request
 * was half the detail route's time, docs/performance.md). */
int employees_summary(struct store *s, const struct store_tenant *t, const char *id,
                      int64_t day_start, struct store_emp_summary *out)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT"
           " (SELECT count(*) FROM employee_events WHERE employee_id = $3 AND org_id = $1 AND"
           "  mode = $2 AND kind = 'task_completed' AND at >= $4),"
           " (SELECT coalesce(CAST(round(avg(response_ms)) AS BIGINT), 0) FROM employee_events"
           "  WHERE employee_id = $3 AND org_id = $1 AND mode = $2 AND kind = 'message'),"
           " (SELECT count(*) FROM employee_events WHERE employee_id = $3 AND org_id = $1 AND"
           "  mode = $2 AND kind = 'rating'),"
           " (SELECT avg(value) FROM employee_events WHERE employee_id = $3 AND org_id = $1 AND"
           "  mode = $2 AND kind = 'rating')");
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    db_bind_int64(st, 4, day_start);
    rc = db_step(st, &row);
    if (!rc && row) {
        out->tasks_completed_today = db_int64(st, 0);
        out->avg_response_ms = db_int64(st, 1);
        out->has_rating = db_int64(st, 2) > 0;
        out->satisfaction = st->drv->col_double(st, 3);
    }
    db_done(st);
    return rc;
}

/* The tenant, the employee and the window [$4, $5) of a statistics statement. */
static void bind_window(struct db_stmt *st, const struct store_tenant *t, const char *id,
                        int64_t from, int64_t to)
{
    db_bind_tenant(st, t);
    db_bind_text(st, 3, id);
    db_bind_int64(st, 4, from);
    db_bind_int64(st, 5, to);
}

#define WINDOW                                                                                     \
    " FROM employee_events WHERE employee_id = $3 AND org_id = $1 AND mode = $2"                   \
    " AND at >= $4 AND at < $5"

/* The totals of the window. */
static int stats_totals(struct store *s, const struct store_tenant *t, const char *id, int64_t from,
                        int64_t to, struct store_stats *out)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT coalesce(sum(CASE WHEN kind = 'message' THEN 1 ELSE 0 END), 0),"
           " count(DISTINCT CASE WHEN kind = 'message' THEN conversation_id END),"
           " coalesce(sum(CASE WHEN kind = 'task_completed' THEN 1 ELSE 0 END), 0),"
           " coalesce(sum(CASE WHEN kind = 'task_failed' THEN 1 ELSE 0 END), 0),"
           " coalesce(sum(CASE WHEN kind = 'workflow_step' THEN 1 ELSE 0 END), 0),"
           " coalesce(CAST(round(avg(CASE WHEN kind = 'message' THEN response_ms END)) AS"
           " BIGINT), 0),"
           " coalesce(sum(credits), 0),"
           " coalesce(sum(CASE WHEN kind = 'rating' THEN 1 ELSE 0 END), 0),"
           " avg(CASE WHEN kind = 'rating' THEN value END)" WINDOW);
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    bind_window(st, t, id, from, to);
    rc = db_step(st, &row);
    if (!rc && row) {
        out->messages = db_int64(st, 0);
        out->conversations = db_int64(st, 1);
        out->tasks_completed = db_int64(st, 2);
        out->tasks_failed = db_int64(st, 3);
        out->workflow_steps = db_int64(st, 4);
        out->avg_response_ms = db_int64(st, 5);
        out->credits = db_int64(st, 6);
        out->ratings = db_int64(st, 7);
        out->satisfaction = st->drv->col_double(st, 8);
    }
    db_done(st);
    return rc;
}

/* p95 by nearest rank: the ceil(0.95 n)-th smallest response time of the window's messages. */
static int stats_p95(struct store *s, const struct store_tenant *t, const char *id, int64_t from,
                     int64_t to, struct store_stats *out)
{
    struct db_stmt *st;
    bool row = false;
    int rc;
    if (out->messages <= 0)
        return 0;
    st = db_prepare(s, "SELECT response_ms" WINDOW " AND kind = 'message' AND response_ms IS NOT"
                       " NULL ORDER BY response_ms LIMIT 1 OFFSET $6");
    if (!st)
        return ERR_STORE;
    bind_window(st, t, id, from, to);
    db_bind_int64(st, 6, (out->messages * 95 + 99) / 100 - 1);
    rc = db_step(st, &row);
    if (!rc && row)
        out->p95_response_ms = db_int64(st, 0);
    db_done(st);
    return rc;
}

/* See store_int.h. */
int employees_stats(struct store *s, const struct store_tenant *t, const char *id, int64_t from,
                    int64_t to, int64_t bucket_ms, size_t nbuckets, struct arena *a,
                    struct store_stats *out)
{
    struct db_stmt *st;
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    out->series = arena_calloc(a, nbuckets * sizeof(*out->series));
    out->nseries = nbuckets;
    for (size_t i = 0; i < nbuckets; i++)
        out->series[i].start = from + (int64_t)i * bucket_ms;
    rc = stats_totals(s, t, id, from, to, out);
    if (!rc)
        rc = stats_p95(s, t, id, from, to, out);
    if (rc)
        return rc;
    st = db_prepare(s,
                    "SELECT (at - $4) / $6, sum(CASE WHEN kind = 'message' THEN 1 ELSE 0 END),"
                    " sum(CASE WHEN kind = 'task_completed' THEN 1 ELSE 0 END), sum(credits)" WINDOW
                    " GROUP BY 1");
    if (!st)
        return ERR_STORE;
    bind_window(st, t, id, from, to);
    db_bind_int64(st, 6, bucket_ms);
    while (!(rc = db_step(st, &row)) && row) {
        int64_t b = db_int64(st, 0);
        if (b < 0 || (size_t)b >= nbuckets)
            continue;
        out->series[b].messages = db_int64(st, 1);
        out->series[b].tasks_completed = db_int64(st, 2);
        out->series[b].credits = db_int64(st, 3);
    }
    db_done(st);
    return rc;
}

/* See store_int.h. */
int employees_event_add(struct store *s, const struct store_tenant *t, const struct store_event *ev)
{
    struct db_stmt *st =
        db_prepare(s, "INSERT INTO employee_events (org_id, mode, employee_id, kind, at,"
                      " response_ms, credits, value, conversation_id) VALUES ($1, $2, $3, $4, $5,"
                      " $6, $7, $8, $9)");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, ev->employee_id);
    db_bind_text(st, 4, ev->kind);
    db_bind_int64(st, 5, ev->at);
    if (ev->response_ms >= 0)
        db_bind_int64(st, 6, ev->response_ms);
    else
        db_bind_null(st, 6);
    db_bind_int64(st, 7, ev->credits);
    if (ev->value >= 0)
        db_bind_int64(st, 8, ev->value);
    else
        db_bind_null(st, 8);
    db_bind_text(st, 9, ev->conversation_id);
    return db_exec(st);
}
