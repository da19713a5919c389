/* SPDX-License-Identifier: MIT */
/*
 * events.c: events and outbound webhooks (contract §15), written once over the driver
 * (driver.h): the events a change records, the endpoints, and the outbox of deliveries.
 *
 * DESIGN: an event is written by hook_record() inside the transaction of the change it reports
 * (tasks_finish, a workflow step's end, documents_finish, an integration's row), together with
 * one delivery per enabled endpoint of the tenant that takes its type: the event and its
 * deliveries commit or vanish with the change. The event's object is rendered there, from the
 * rows as the transaction sees them, by the function the process gave store_hooks_init() (the
 * API's own writers): the store knows rows, not the API's JSON. After the commit, the thread
 * that recorded events calls the process's 'recorded' function (the delivery worker's wake-up;
 * see store_note_commit()).
 *
 * The outbox is the deliveries table. A worker takes a due delivery under a lease (a random
 * token and an end time) in a write transaction; PostgreSQL skips rows another node is taking
 * (FOR UPDATE SKIP LOCKED). The end of an attempt is written only while the lease is still the
 * taker's, so an attempt that outlived its lease (a node stopped mid-way) cannot overwrite the
 * attempt of the node that took the delivery over.
 *
 * Fair shares (sql/014_fair_queues.sql). A claim picks an endpoint first, then that endpoint's
 * delivery due first. Each endpoint row carries its part of the outbox: 'due_at', the time its
 * first pending delivery is due while it is enabled (null when it is disabled or has nothing
 * pending), and the one attempt it may have in flight ('busy_lease', 'busy_until', the lease of
 * that delivery). The claim reads only endpoints with a due time (an index of them), never a
 * delivery of another endpoint: a disabled endpoint's deliveries stay pending, as the API
 * shows them, but are in no due set, so 200,000 of them cost the claim and the wake-up query
 * nothing; a failed or delivered one leaves the endpoint's pending index. 'due_at' is kept by
 * every write that changes what is pending: a delivery recorded (hook_fan_out), an attempt's
 * end (hook_attempted), the endpoint enabled or disabled (hook_endpoint_update: enabled again,
 * its pending deliveries are due at their times, as before the pause), a purge. Among the
 * endpoints that can be served, the claim takes the one of the organization served least
 * recently (the largest 'turn' of its endpoints: a counter every claim advances), then the
 * endpoint of it served least recently: round-robin between organizations, then between one
 * organization's endpoints, whatever their backlogs. On PostgreSQL the endpoint row is locked
 * (SKIP LOCKED) and its lease written in the claim, so two nodes never attempt one endpoint at
 * once.
 */
#include "store_int.h"

#include "../core/clock.h"
#include "../core/log.h"

#include <jansson.h>
#include <stdatomic.h>
#include <string.h>

static store_hook_render_fn render_fn;
static void (*recorded_fn)(void *ud);
static void *recorded_ud;
static _Thread_local bool unannounced; /* this thread recorded events since its last commit */

/* See store.h. */
void store_hooks_init(store_hook_render_fn render, void (*recorded)(void *ud), void *ud)
{
    render_fn = render;
    recorded_fn = recorded;
    recorded_ud = ud;
}

/* See store_int.h: called by store_note_commit() on the committing thread. */
void hook_note_commit(void)
{
    if (!unannounced)
        return;
    unannounced = false;
    if (recorded_fn)
        recorded_fn(recorded_ud);
}

/* Whether the JSON array text 'events' (["*"] or types) takes 'type'. */
static bool takes(const char *events, const char *type)
{
    json_t *a = json_loads(events ? events : "[]", 0, NULL);
    size_t i;
    json_t *v;
    bool yes = false;

    json_array_foreach(a, i, v)
    {
        const char *t = json_string_value(v);
        if (t && (strcmp(t, "*") == 0 || strcmp(t, type) == 0)) {
            yes = true;
            break;
        }
    }
    json_decref(a);
    return yes;
}

/*
 * The deliveries of event 'event_id' of type 'type', due at 'now': to 'only' if it is an enabled
 * endpoint of 't', or (NULL) to every enabled endpoint of 't' that takes the type; '*n' of them.
 * A delivery already there is due again (a redelivery): one in flight keeps its lease, and the
 * taker's end of the attempt leaves it pending and due, so it is attempted again right after,
 * never twice at once. Inside the caller's transaction.
 */
static int hook_fan_out(struct store *s, const struct store_tenant *t, const char *event_id,
                        const char *type, const char *only, int64_t now, size_t *n)
{
    struct db_stmt *st = db_prepare(s, "SELECT id, events FROM webhook_endpoints WHERE org_id = $1"
                                       " AND mode = $2 AND enabled = 1 AND (CAST($3 AS TEXT) IS"
                                       " NULL OR id = $3)");
    char(*ids)[ID_MAX] = NULL;
    size_t cap = 0;
    bool row = false;
    int rc;

    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, only);
    while (!(rc = db_step(st, &row)) && row) {
        if (!only && !takes(db_text(st, 1), type))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            ids = xrealloc(ids, cap * sizeof(*ids));
        }
        db_copy(st, 0, ids[(*n)++], ID_MAX);
    }
    db_done(st);
    for (size_t i = 0; !rc && i < *n; i++) {
        char id[ID_MAX];
        const char *texts[] = {id, t->org_id, db_mode_name(t->mode), ids[i], event_id};
        const int64_t ints[] = {now};
        rc = id_new("wdl", id, sizeof(id));
        if (!rc)
            rc = db_run(s,
                        "INSERT INTO webhook_deliveries (id, org_id, mode, endpoint_id, event_id,"
                        " status, attempts, next_attempt_at, created_at, updated_at) VALUES ($1,"
                        " $2, $3, $4, $5, 'pending', 0, $6, $6, $6) ON CONFLICT (endpoint_id,"
                        " event_id) DO UPDATE SET status = 'pending', next_attempt_at = $6,"
                        " redeliver = 1, updated_at = $6",
                        texts, 5, ints, 1);
        if (!rc) /* the endpoint is due by then (if still enabled: a PATCH racing is seen) */
            rc = db_run(s,
                        "UPDATE webhook_endpoints SET due_at = CASE WHEN due_at IS NULL OR due_at"
                        " > $2 THEN $2 ELSE due_at END WHERE id = $1 AND enabled = 1",
                        &texts[3], 1, ints, 1);
    }
    free(ids);
    return rc;
}

/* See store_int.h. */
int hook_record(struct store *s, const struct store_tenant *t, const char *type,
                enum store_hook_kind kind, const void *obj, int64_t now)
{
    struct arena a;
    const char *object;
    char id[ID_MAX];
    size_t n = 0;
    int rc;

    if (!render_fn)
        return 0; /* a process that records no events (the CLI's tools, unit tests) */
    arena_init(&a);
    object = render_fn(kind, obj, &a);
    rc = object ? id_new("evt", id, sizeof(id)) : ERR_INTERNAL;
    if (!rc) {
        const char *data = arena_printf(&a, "{\"object\":%s}", object);
        const char *texts[] = {id, t->org_id, db_mode_name(t->mode), type, data};
        const int64_t ints[] = {now};
        rc = db_run(s,
                    "INSERT INTO events (id, org_id, mode, type, created_at, data) VALUES ($1, $2,"
                    " $3, $4, $6, $5)",
                    texts, 5, ints, 1);
    }
    if (!rc)
        rc = hook_fan_out(s, t, id, type, NULL, now, &n);
    if (!rc)
        unannounced = true;
    arena_cleanup(&a);
    return rc;
}

/* See store_int.h. */
int hook_task(struct store *s, const struct store_tenant *t, const char *task_id, bool ok,
              int64_t now)
{
    struct store_task k;
    struct arena a;
    int rc;

    if (!render_fn)
        return 0;
    arena_init(&a);
    rc = tasks_get(s, t, task_id, &a, &k);
    if (!rc)
        rc = hook_record(s, t, ok ? "task.completed" : "task.failed", STORE_HOOK_TASK, &k, now);
    arena_cleanup(&a);
    return rc;
}

/* See store_int.h. */
int hook_run_ended(struct store *s, const struct store_tenant *t, const char *run_id, int64_t now)
{
    struct store_wf_run run;
    struct arena a;
    int rc;

    if (!render_fn)
        return 0;
    arena_init(&a);
    rc = wf_run_read(s, t, run_id, &a, &run);
    if (!rc && (strcmp(run.status, "completed") == 0 || strcmp(run.status, "failed") == 0))
        rc = hook_record(s, t,
                         run.status[0] == 'c' ? "workflow_run.completed" : "workflow_run.failed",
                         STORE_HOOK_RUN, &run, now);
    arena_cleanup(&a);
    return rc;
}

/* See store_int.h. */
int hook_document(struct store *s, const char *id, int64_t now)
{
    struct store_tenant t;
    struct store_document d;
    struct arena a;
    struct db_stmt *st;
    bool row = false;
    int rc;

    if (!render_fn)
        return 0;
    st = db_prepare(s, "SELECT org_id, mode FROM documents WHERE id = $1");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, id);
    rc = db_step(st, &row);
    if (!rc && row) {
        db_copy(st, 0, t.org_id, sizeof(t.org_id));
        t.mode = db_mode(db_text(st, 1));
    }
    db_done(st);
    if (rc || !row)
        return rc;
    arena_init(&a);
    rc = documents_get(s, &t, id, &a, &d);
    if (!rc)
        rc = hook_record(s, &t,
                         strcmp(d.status, "ready") == 0 ? "document.ready" : "document.failed",
                         STORE_HOOK_DOCUMENT, &d, now);
    arena_cleanup(&a);
    return rc;
}

/* ---- Events ---- */

#define EVENT_COLS "id, type, created_at, data"

static void read_event(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_hook_event *ev = pout;
    ev->id = db_arena_text(a, st, 0);
    ev->type = db_arena_text(a, st, 1);
    ev->created_at = db_int64(st, 2);
    ev->data = db_arena_text(a, st, 3);
}

/*
 * The rows of the prepared statement 'st' (asked for one more than 'limit') read by 'read' into
 * items of 'size' bytes from 'a': '*items', '*n' and whether there are more. Ends 'st'.
 */
static int page_rows(struct db_stmt *st, unsigned limit, db_read_fn read, size_t size,
                     struct arena *a, void **items, size_t *n, bool *has_more)
{
    char *base = arena_alloc(a, ((size_t)limit + 1) * size);
    bool row = false;
    int rc;

    *n = 0;
    *has_more = false;
    while (!(rc = db_step(st, &row)) && row) {
        if (*n == limit) {
            *has_more = true;
            break;
        }
        read(st, a, base + (*n)++ * size);
    }
    db_done(st);
    *items = base;
    return rc;
}

/* See store_int.h. */
int hook_events_list(struct store *s, const struct store_tenant *t, const char *type,
                     unsigned limit, int64_t before_created, const char *before_id, struct arena *a,
                     struct store_hook_event_page *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " EVENT_COLS " FROM events WHERE org_id = $1 AND mode = $2 AND"
                      " (CAST($3 AS TEXT) IS NULL OR type = $3) AND (CAST($5 AS TEXT) IS NULL OR"
                      " (created_at, id) < ($4, $5)) ORDER BY created_at DESC, id DESC LIMIT $6");
    void *items = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, type);
    db_bind_int64(st, 4, before_created);
    db_bind_text(st, 5, before_id);
    db_bind_int64(st, 6, (int64_t)limit + 1);
    rc = page_rows(st, limit, read_event, sizeof(*out->items), a, &items, &out->n, &out->has_more);
    out->items = items;
    return rc;
}

/* See store_int.h. */
int hook_event_get(struct store *s, const struct store_tenant *t, const char *id, struct arena *a,
                   struct store_hook_event *out)
{
    const char *texts[] = {id};
    return db_one(s,
                  "SELECT " EVENT_COLS " FROM events WHERE org_id = $1 AND mode = $2 AND id = $3",
                  t, texts, 1, read_event, a, out);
}

/* ---- Endpoints ---- */

#define ENDPOINT_COLS                                                                              \
    "id, url, events, enabled, description, secret, previous_secret,"                              \
    " coalesce(previous_until, 0), created_at, updated_at"

static void read_endpoint(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_hook_endpoint *ep = pout;
    const void *p;
    size_t len = 0;

    memset(ep, 0, sizeof(*ep));
    ep->id = db_arena_text(a, st, 0);
    ep->url = db_arena_text(a, st, 1);
    ep->events = db_arena_text(a, st, 2);
    ep->enabled = db_int64(st, 3) != 0;
    ep->description = db_arena_text(a, st, 4);
    p = db_blob(st, 5, &len);
    if (p && len) {
        unsigned char *c = arena_alloc(a, len);
        memcpy(c, p, len);
        ep->secret = c;
        ep->secret_len = len;
    }
    len = 0;
    p = db_blob(st, 6, &len);
    if (p && len) {
        unsigned char *c = arena_alloc(a, len);
        memcpy(c, p, len);
        ep->previous_secret = c;
        ep->previous_len = len;
    }
    ep->previous_until = db_int64(st, 7);
    ep->created_at = db_int64(st, 8);
    ep->updated_at = db_int64(st, 9);
}

/* See store_int.h. */
int hook_endpoint_create(struct store *s, const struct store_tenant *t,
                         const struct store_hook_endpoint *in, size_t max)
{
    struct db_stmt *st;
    int64_t count = 0;
    bool row = false;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    st = db_prepare(s, "SELECT count(*) FROM webhook_endpoints WHERE org_id = $1 AND mode = $2");
    if (st)
        db_bind_tenant(st, t);
    rc = st ? db_step(st, &row) : ERR_STORE;
    if (st) {
        count = row ? db_int64(st, 0) : 0;
        db_done(st);
    }
    if (!rc && (size_t)count >= max)
        rc = ERR_LIMIT;
    if (!rc) {
        st = db_prepare(s, "INSERT INTO webhook_endpoints (id, org_id, mode, url, events, enabled,"
                           " description, secret, created_at, updated_at) VALUES ($3, $1, $2, $4,"
                           " $5, $6, $7, $8, $9, $9)");
        if (!st)
            rc = ERR_STORE;
    }
    if (!rc) {
        db_bind_tenant(st, t);
        db_bind_text(st, 3, in->id);
        db_bind_text(st, 4, in->url);
        db_bind_text(st, 5, in->events);
        db_bind_int64(st, 6, in->enabled ? 1 : 0);
        db_bind_text(st, 7, in->description);
        db_bind_blob(st, 8, in->secret, in->secret_len);
        db_bind_int64(st, 9, in->created_at);
        rc = db_exec(st);
    }
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int hook_endpoint_get(struct store *s, const struct store_tenant *t, const char *id,
                      struct arena *a, struct store_hook_endpoint *out)
{
    const char *texts[] = {id};
    return db_one(s,
                  "SELECT " ENDPOINT_COLS " FROM webhook_endpoints WHERE org_id = $1 AND"
                  " mode = $2 AND id = $3",
                  t, texts, 1, read_endpoint, a, out);
}

/* See store_int.h. */
int hook_endpoints_list(struct store *s, const struct store_tenant *t, unsigned limit,
                        int64_t before_created, const char *before_id, struct arena *a,
                        struct store_hook_endpoint_page *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " ENDPOINT_COLS " FROM webhook_endpoints WHERE org_id = $1 AND"
                      " mode = $2 AND (CAST($4 AS TEXT) IS NULL OR (created_at, id) < ($3, $4))"
                      " ORDER BY created_at DESC, id DESC LIMIT $5");
    void *items = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, before_created);
    db_bind_text(st, 4, before_id);
    db_bind_int64(st, 5, (int64_t)limit + 1);
    rc = page_rows(st, limit, read_endpoint, sizeof(*out->items), a, &items, &out->n,
                   &out->has_more);
    out->items = items;
    return rc;
}

/* See store_int.h. */
int hook_endpoint_update(struct store *s, const struct store_tenant *t,
                         const struct store_hook_endpoint *in)
{
    struct db_stmt *st = db_prepare(
        s, "UPDATE webhook_endpoints SET url = $4, events = $5, enabled = $6, description = $7,"
           " secret = $8, previous_secret = $9, previous_until = nullif(CAST($10 AS BIGINT), 0),"
           " updated_at = $11, due_at = CASE WHEN CAST($6 AS BIGINT) = 1 THEN (SELECT"
           " min(d.next_attempt_at) FROM webhook_deliveries d WHERE d.endpoint_id ="
           " webhook_endpoints.id AND d.status = 'pending') END WHERE org_id = $1 AND mode = $2"
           " AND id = $3");
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, in->id);
    db_bind_text(st, 4, in->url);
    db_bind_text(st, 5, in->events);
    db_bind_int64(st, 6, in->enabled ? 1 : 0);
    db_bind_text(st, 7, in->description);
    db_bind_blob(st, 8, in->secret, in->secret_len);
    db_bind_blob(st, 9, in->previous_secret, in->previous_len);
    db_bind_int64(st, 10, in->previous_until);
    db_bind_int64(st, 11, in->updated_at);
    return db_exec_one(st);
}

/* See store_int.h. Its deliveries and their attempts go with it. */
int hook_endpoint_delete(struct store *s, const struct store_tenant *t, const char *id)
{
    const char *texts[] = {t->org_id, db_mode_name(t->mode), id};
    struct db_stmt *st;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    rc = db_run(s,
                "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM"
                " webhook_deliveries WHERE org_id = $1 AND mode = $2 AND endpoint_id = $3)",
                texts, 3, NULL, 0);
    if (!rc)
        rc = db_run(s,
                    "DELETE FROM webhook_deliveries WHERE org_id = $1 AND mode = $2 AND"
                    " endpoint_id = $3",
                    texts, 3, NULL, 0);
    if (!rc) {
        st = db_prepare(s, "DELETE FROM webhook_endpoints WHERE org_id = $1 AND mode = $2 AND"
                           " id = $3");
        if (!st) {
            rc = ERR_STORE;
        } else {
            db_bind_tenant(st, t);
            db_bind_text(st, 3, id);
            rc = db_exec_one(st);
        }
    }
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* ---- Deliveries ---- */

#define DELIVERY_COLS                                                                              \
    "id, endpoint_id, event_id, status, attempts, coalesce(last_status_code, 0), last_error,"      \
    " coalesce(next_attempt_at, 0), created_at, updated_at"

static void read_delivery(struct db_stmt *st, struct arena *a, void *pout)
{
    struct store_hook_delivery *d = pout;
    d->id = db_arena_text(a, st, 0);
    d->endpoint_id = db_arena_text(a, st, 1);
    d->event_id = db_arena_text(a, st, 2);
    d->status = db_arena_text(a, st, 3);
    d->attempts = db_int64(st, 4);
    d->last_status_code = db_int64(st, 5);
    d->last_error = db_arena_text(a, st, 6);
    d->next_attempt_at = db_int64(st, 7);
    d->created_at = db_int64(st, 8);
    d->updated_at = db_int64(st, 9);
}

/* See store_int.h. */
int hook_deliveries_list(struct store *s, const struct store_tenant *t, const char *endpoint_id,
                         const char *event_id, unsigned limit, int64_t before_created,
                         const char *before_id, struct arena *a,
                         struct store_hook_delivery_page *out)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT " DELIVERY_COLS " FROM webhook_deliveries WHERE org_id = $1 AND mode = $2 AND"
           " (CAST($3 AS TEXT) IS NULL OR endpoint_id = $3) AND (CAST($4 AS TEXT) IS NULL OR"
           " event_id = $4) AND (CAST($6 AS TEXT) IS NULL OR (created_at, id) < ($5, $6))"
           " ORDER BY created_at DESC, id DESC LIMIT $7");
    void *items = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_text(st, 3, endpoint_id);
    db_bind_text(st, 4, event_id);
    db_bind_int64(st, 5, before_created);
    db_bind_text(st, 6, before_id);
    db_bind_int64(st, 7, (int64_t)limit + 1);
    rc = page_rows(st, limit, read_delivery, sizeof(*out->items), a, &items, &out->n,
                   &out->has_more);
    out->items = items;
    return rc;
}

/* See store_int.h. */
int hook_redeliver(struct store *s, const struct store_tenant *t, const char *event_id,
                   const char *endpoint_id, int64_t now, size_t *n)
{
    struct store_hook_event ev;
    struct arena a;
    int rc;

    *n = 0;
    arena_init(&a);
    rc = db_begin(s, DB_TX_WRITE);
    if (!rc) {
        rc = hook_event_get(s, t, event_id, &a, &ev);
        if (!rc)
            rc = hook_fan_out(s, t, ev.id, ev.type, endpoint_id, now, n);
        if (!rc)
            rc = db_commit(s);
        if (rc) {
            db_rollback(s);
            *n = 0;
        }
    }
    if (!rc) {
        unannounced = true;
        hook_note_commit();
    }
    arena_cleanup(&a);
    return rc;
}

/* See store_int.h. */
int hook_recent_attempts(struct store *s, const struct store_tenant *t, const char *event_id,
                         const char *endpoint_id, int64_t since, int64_t now, int64_t *most,
                         int64_t *oldest)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT (SELECT count(*) FROM webhook_attempts a WHERE a.delivery_id = d.id AND a.at >"
           " CAST($3 AS BIGINT)) + CASE WHEN d.lease_until > CAST($4 AS BIGINT) OR (d.status ="
           " 'pending' AND d.next_attempt_at <= CAST($4 AS BIGINT)) THEN 1 ELSE 0 END AS n,"
           " coalesce((SELECT min(a.at) FROM webhook_attempts a WHERE a.delivery_id = d.id AND"
           " a.at > CAST($3 AS BIGINT)), CAST($4 AS BIGINT)) FROM webhook_deliveries d JOIN"
           " webhook_endpoints e ON e.id = d.endpoint_id WHERE d.org_id = $1 AND d.mode = $2 AND"
           " d.event_id = $5 AND e.enabled = 1 AND (CAST($6 AS TEXT) IS NULL OR d.endpoint_id ="
           " $6) ORDER BY n DESC LIMIT 1");
    bool row = false;
    int rc;

    *most = 0;
    *oldest = now;
    if (!st)
        return ERR_STORE;
    db_bind_tenant(st, t);
    db_bind_int64(st, 3, since);
    db_bind_int64(st, 4, now);
    db_bind_text(st, 5, event_id);
    db_bind_text(st, 6, endpoint_id);
    rc = db_step(st, &row);
    if (!rc && row) {
        *most = db_int64(st, 0);
        *oldest = db_int64(st, 1);
    }
    db_done(st);
    return rc;
}

/* ---- The outbox ---- */

/* The time the first pending delivery of the endpoint in the statement is due, or null (for
 * ENDPOINT_DUE_SET: the endpoint row being written is "webhook_endpoints"). One seek of
 * webhook_deliveries_pending, whatever the endpoint's history holds. */
#define ENDPOINT_DUE_SET                                                                           \
    "due_at = CASE WHEN enabled = 1 THEN (SELECT min(d.next_attempt_at) FROM webhook_deliveries"   \
    " d WHERE d.endpoint_id = webhook_endpoints.id AND d.status = 'pending') END"

/* Endpoint 'id' due again as its deliveries say (none pending, or disabled: in no due set). */
static int endpoint_due(struct store *s, const char *id)
{
    const char *texts[] = {id};
    return db_run(s, "UPDATE webhook_endpoints SET " ENDPOINT_DUE_SET " WHERE id = $1", texts, 1,
                  NULL, 0);
}

/*
 * The endpoint to serve at $1: enabled, due, and with no attempt in flight (a lease that ended
 * counts as none: its taker may be gone); of the organization served least recently (the
 * largest turn of its endpoints), then the endpoint served least recently. With $2 = 1 only
 * an organization that has no attempt in flight at all (the last free thread of a node keeps
 * itself for those: store_hook_claim_idle). It reads endpoints with pending work only
 * (webhook_endpoints_due), never a delivery; PostgreSQL passes over an endpoint another node
 * is taking, and the lease written on the row keeps a second claim off it once committed.
 */
#define PICK_WHERE                                                                                 \
    " WHERE e.due_at <= $1 AND e.enabled = 1 AND (e.busy_until IS NULL OR e.busy_until <= $1) AND" \
    " (CAST($2 AS BIGINT) = 0 OR NOT EXISTS (SELECT 1 FROM webhook_endpoints b WHERE b.org_id ="   \
    " e.org_id AND b.busy_until > $1)) ORDER BY (SELECT max(o.turn) FROM webhook_endpoints o"      \
    " WHERE o.org_id = e.org_id), e.turn, e.due_at, e.id LIMIT 1"
#define PICK_SQLITE                                                                                \
    "SELECT e.id FROM webhook_endpoints e INDEXED BY webhook_endpoints_due" PICK_WHERE
#define PICK_PG "SELECT e.id FROM webhook_endpoints e" PICK_WHERE " FOR UPDATE OF e SKIP LOCKED"
#define PICK_PG_PEEK "SELECT e.id FROM webhook_endpoints e" PICK_WHERE

/* The delivery of endpoint $2 due first at $1, with what its attempt needs. */
#define DUE_COLS                                                                                   \
    "d.id, d.org_id, d.mode, d.endpoint_id, d.event_id, d.attempts, e.url, e.secret,"              \
    " e.previous_secret, coalesce(e.previous_until, 0), v.type, v.created_at, v.data"
#define DUE_WHERE                                                                                  \
    " FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN events v ON" \
    " v.id = d.event_id WHERE d.endpoint_id = $2 AND d.status = 'pending' AND d.next_attempt_at"   \
    " <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1) ORDER BY d.next_attempt_at, d.id"   \
    " LIMIT 1"

/* When the next claim can find something, for the claims of PICK_WHERE ($2 likewise): the
 * first due time of an endpoint, or the end of its attempt in flight if that is later. */
#define WAKE_SQL                                                                                   \
    "SELECT min(CASE WHEN e.busy_until > e.due_at THEN e.busy_until ELSE e.due_at END) FROM"       \
    " webhook_endpoints e WHERE e.due_at IS NOT NULL AND e.enabled = 1 AND (CAST($2 AS BIGINT) ="  \
    " 0 OR NOT EXISTS (SELECT 1 FROM webhook_endpoints b WHERE b.org_id = e.org_id AND"            \
    " b.busy_until > $1))"

/* The endpoint to serve at 'now' into 'id' ('*row': there is one); on PostgreSQL locked when
 * 'lock' (inside the claim's transaction). */
static int pick_endpoint(struct store *s, int64_t now, bool idle_only, bool lock, char id[ID_MAX],
                         bool *row)
{
    struct db_stmt *st = db_prepare(s, db_dialect(s) != DB_POSTGRES ? PICK_SQLITE
                                       : lock                       ? PICK_PG
                                                                    : PICK_PG_PEEK);
    int rc;

    *row = false;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    db_bind_int64(st, 2, idle_only ? 1 : 0);
    rc = db_step(st, row);
    if (!rc && *row)
        db_copy(st, 0, id, ID_MAX);
    db_done(st);
    return rc;
}

/* The delivery of endpoint 'endpoint_id' due first at 'now' into 'out' ('*row': found). */
static int pick_delivery(struct store *s, int64_t now, const char *endpoint_id, struct arena *a,
                         struct store_hook_claim *out, bool *row)
{
    struct db_stmt *st = db_prepare(s, db_dialect(s) == DB_POSTGRES ? "SELECT " DUE_COLS DUE_WHERE
                                                                      " FOR UPDATE OF d SKIP LOCKED"
                                                                    : "SELECT " DUE_COLS DUE_WHERE);
    const void *p;
    size_t len = 0;
    int rc;

    *row = false;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    db_bind_text(st, 2, endpoint_id);
    rc = db_step(st, row);
    if (rc || !*row) {
        db_done(st);
        return rc;
    }
    db_copy(st, 0, out->delivery_id, sizeof(out->delivery_id));
    db_copy(st, 1, out->tenant.org_id, sizeof(out->tenant.org_id));
    out->tenant.mode = db_mode(db_text(st, 2));
    db_copy(st, 3, out->endpoint_id, sizeof(out->endpoint_id));
    db_copy(st, 4, out->event_id, sizeof(out->event_id));
    out->attempt = db_int64(st, 5) + 1;
    out->url = db_arena_text(a, st, 6);
    p = db_blob(st, 7, &len);
    out->secret = p ? memcpy(arena_alloc(a, len + 1), p, len) : NULL;
    out->secret_len = p ? len : 0;
    len = 0;
    p = db_blob(st, 8, &len);
    out->previous_secret = p && len ? memcpy(arena_alloc(a, len), p, len) : NULL;
    out->previous_len = p ? len : 0;
    out->previous_until = db_int64(st, 9);
    out->event.id = out->event_id;
    out->event.type = db_arena_text(a, st, 10);
    out->event.created_at = db_int64(st, 11);
    out->event.data = db_arena_text(a, st, 12);
    db_done(st);
    return 0;
}

/* Delivery 'c' and its endpoint taken under a new lease until 'now' + 'lease_ms'; the endpoint
 * takes the next turn (it and its organization are now the ones served most recently). */
static int take(struct store *s, int64_t now, int64_t lease_ms, struct store_hook_claim *c)
{
    int rc = id_base62(c->lease, 16);
    if (!rc) {
        const char *texts[] = {c->delivery_id, c->lease};
        const int64_t ints[] = {now + lease_ms, now};
        rc = db_run(s,
                    "UPDATE webhook_deliveries SET lease = $2, lease_until = $3, attempts ="
                    " attempts + 1, redeliver = 0, updated_at = $4 WHERE id = $1",
                    texts, 2, ints, 2);
    }
    if (!rc) {
        const char *texts[] = {c->endpoint_id, c->lease};
        const int64_t ints[] = {now + lease_ms};
        rc = db_run(s,
                    "UPDATE webhook_endpoints SET busy_lease = $2, busy_until = $3, turn ="
                    " (SELECT coalesce(max(o.turn), 0) + 1 FROM webhook_endpoints o) WHERE id = $1",
                    texts, 2, ints, 1);
    }
    return rc;
}

/* When the claims of 'idle_only' can next find something (0: nothing pending for them). */
static int wake_time(struct store *s, int64_t now, bool idle_only, int64_t *wake_at)
{
    struct db_stmt *st = db_prepare(s, WAKE_SQL);
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, now);
    db_bind_int64(st, 2, idle_only ? 1 : 0);
    rc = db_step(st, &row);
    if (!rc && row)
        *wake_at = db_int64(st, 0);
    db_done(st);
    return rc;
}

/* See store_int.h. */
int hook_claim(struct store *s, int64_t now, int64_t lease_ms, bool idle_only, struct arena *a,
               struct store_hook_claim *out, int64_t *wake_at)
{
    char endpoint[ID_MAX];
    bool row = false;
    int rc;

    memset(out, 0, sizeof(*out));
    *wake_at = 0;
    /* Nothing to take is the usual answer (every delivery thread looks after every event):
     * it is read without the write lock, so that looking costs the writers nothing. */
    rc = pick_endpoint(s, now, idle_only, false, endpoint, &row);
    if (!rc && !row) {
        rc = wake_time(s, now, idle_only, wake_at);
        return rc ? rc : ERR_NOT_FOUND;
    }
    if (rc)
        return rc;
    rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = pick_endpoint(s, now, idle_only, true, endpoint, &row);
    if (!rc && row) {
        rc = pick_delivery(s, now, endpoint, a, out, &row);
        if (!rc && !row) {
            /* The endpoint's due time was behind (its delivery went with its event), or on
             * PostgreSQL its delivery is being written by another transaction: set it right
             * and look again shortly. */
            rc = endpoint_due(s, endpoint);
            if (!rc) {
                *wake_at = now + 100;
                rc = ERR_NOT_FOUND;
            }
            goto out;
        }
        if (!rc)
            rc = take(s, now, lease_ms, out);
    } else if (!rc) {
        rc = wake_time(s, now, idle_only, wake_at);
        if (!rc)
            rc = ERR_NOT_FOUND;
    }
out:
    if (!rc || rc == ERR_NOT_FOUND) {
        int c = db_commit(s);
        if (c) {
            rc = c;
            db_rollback(s);
        }
    } else {
        db_rollback(s);
    }
    return rc;
}

/* See store_int.h. */
int hook_attempted(struct store *s, const struct store_hook_attempt *in)
{
    const char *lease[] = {in->delivery_id, in->lease};
    int64_t live = 0, attempts = 0, again = 0;
    char endpoint[ID_MAX] = "";
    struct db_stmt *st;
    bool row = false;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    st = db_prepare(s, db_dialect(s) == DB_POSTGRES
                           ? "SELECT attempts, redeliver, endpoint_id FROM webhook_deliveries"
                             " WHERE id = $1 AND lease = $2 FOR UPDATE"
                           : "SELECT attempts, redeliver, endpoint_id FROM webhook_deliveries"
                             " WHERE id = $1 AND lease = $2");
    if (!st) {
        rc = ERR_STORE;
        goto out;
    }
    db_bind_text(st, 1, lease[0]);
    db_bind_text(st, 2, lease[1]);
    rc = db_step(st, &row);
    if (!rc && row) {
        live = 1;
        attempts = db_int64(st, 0);
        again = db_int64(st, 1);
        db_copy(st, 2, endpoint, sizeof(endpoint));
    }
    db_done(st);
    if (!rc && !live) {
        rc = ERR_NOT_FOUND; /* taken over, or gone with its endpoint: the outcome is dropped */
        goto out;
    }
    if (!rc) {
        const char *texts[] = {in->delivery_id, in->error};
        const int64_t ints[] = {attempts, in->at, in->status_code, in->duration_ms};
        rc = db_run(s,
                    "INSERT INTO webhook_attempts (delivery_id, n, at, status_code, error,"
                    " duration_ms) VALUES ($1, $3, $4, nullif(CAST($5 AS BIGINT), 0), $2, $6)"
                    " ON CONFLICT (delivery_id, n) DO NOTHING",
                    texts, 2, ints, 4);
    }
    if (!rc) {
        /* A redelivery asked for while this attempt ran: due again now, whatever the outcome. */
        bool pending = again || (!in->delivered && in->next_attempt_at > 0);
        const char *texts[] = {in->delivery_id,
                               pending         ? "pending"
                               : in->delivered ? "delivered"
                                               : "failed",
                               in->delivered ? NULL : in->error};
        const int64_t ints[] = {in->status_code,
                                again     ? in->at
                                : pending ? in->next_attempt_at
                                          : 0,
                                in->at};
        rc = db_run(s,
                    "UPDATE webhook_deliveries SET status = $2, last_error = $3,"
                    " last_status_code = nullif(CAST($4 AS BIGINT), 0), next_attempt_at ="
                    " nullif(CAST($5 AS BIGINT), 0), lease = NULL, lease_until = NULL,"
                    " updated_at = $6 WHERE id = $1",
                    texts, 3, ints, 3);
    }
    if (!rc) {
        /* The endpoint is free for its next attempt (if this one still held it), due as its
         * pending deliveries now say. */
        const char *texts[] = {endpoint, in->lease};
        rc = db_run(s,
                    "UPDATE webhook_endpoints SET busy_lease = CASE WHEN busy_lease = $2 THEN NULL"
                    " ELSE busy_lease END, busy_until = CASE WHEN busy_lease = $2 THEN NULL ELSE"
                    " busy_until END, " ENDPOINT_DUE_SET " WHERE id = $1",
                    texts, 2, NULL, 0);
    }
out:
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int hook_purge(struct store *s, int64_t before)
{
    const int64_t ints[] = {before};
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = db_run(s,
                "DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT d.id FROM"
                " webhook_deliveries d JOIN events v ON v.id = d.event_id WHERE v.created_at < $1)",
                NULL, 0, ints, 1);
    if (!rc)
        rc = db_run(s,
                    "DELETE FROM webhook_deliveries WHERE event_id IN (SELECT id FROM events WHERE"
                    " created_at < $1)",
                    NULL, 0, ints, 1);
    if (!rc)
        rc = db_run(s, "DELETE FROM events WHERE created_at < $1", NULL, 0, ints, 1);
    if (!rc) /* pending deliveries may have gone with their events */
        rc = db_run(s, "UPDATE webhook_endpoints SET " ENDPOINT_DUE_SET " WHERE due_at IS NOT NULL",
                    NULL, 0, NULL, 0);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}
