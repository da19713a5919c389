/* SPDX-License-Identifier: MIT */
/*
 * employees.c: GET /v1/employees (keyset by name then id, with total), GET /v1/employees/{id}
 * (detail with stats), GET /v1/employees/{id}/stats, and the operator extensions POST and PATCH
 * /v1/employees. List items carry exactly the reference's seven fields; the detail adds
 * description, tools (the rules of §19: which tools the employee may call, and how), stats and
 * created_at and nothing else (instructions and model are write-only: they configure the reply
 * engine and are not part of the reference's object).
 */
#include "api.h"

#include "../tasks/runner.h"
#include "../tools/tools.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/id.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_MS 86400000LL
#define HOUR_MS 3600000LL
#define RESP_CAP (4u << 20)

const char *const api_employee_categories[] = {"operations", "sales",   "engineering", "marketing",
                                               "support",    "finance", "hr",          NULL};
static const char *const emp_tiers[] = {"starter", "manager", NULL};
static const char *const settable_status[] = {"idle", "offline", NULL};
const char *const api_employee_statuses[] = {"idle", "active", "offline", NULL};
/* The periods of GET /v1/employees/{id}/stats (the route's default: 7d). */
const char *const api_stats_periods[] = {"24h", "7d", "30d", "90d", NULL};

static void write_item(struct jw *w, const struct store_employee *emp)
{
    jw_key(w, "id");
    jw_str(w, emp->id);
    jw_key(w, "name");
    jw_str(w, emp->name);
    jw_key(w, "role");
    jw_str(w, emp->role);
    jw_key(w, "category");
    jw_str(w, emp->category);
    jw_key(w, "status");
    jw_str(w, api_employee_statuses[emp->status]);
    jw_key(w, "capabilities");
    jw_raw(w, emp->capabilities, "[]"); /* validated JSON array, written by this server */
    jw_key(w, "tier");
    jw_str(w, emp->tier);
}

/*
 * Answers built from the store alone are kept in the answer cache under 'ckey' (which names the
 * tenant) for the store generation they were read at: the same request under the same
 * generation is the same bytes. cached_answer() answers from the cache (true) or returns the
 * generation to tag a new answer with; respond_cached() finishes the writer, keeps a copy and
 * answers. Without a cache (tools, tests) both do the plain thing.
 */
static bool cached_answer(struct router_req *r, const char *ckey, uint64_t *gen)
{
    size_t len;
    char *body;
    if (!api_svc(r)->answers)
        return false;
    *gen = store_generation(r->store);
    body = cache_get(api_svc(r)->answers, ckey, strlen(ckey), *gen, &len);
    if (!body)
        return false;
    router_respond_raw(r, 200, "application/json", body, len);
    return true;
}

static int respond_cached(struct router_req *r, struct jw *w, struct buf *b, const char *ckey,
                          uint64_t gen, struct err *e)
{
    return router_respond_jw_kept(r, w, b, api_svc(r)->answers, ckey, gen, e);
}

/* Answer with the detail object of employee 'id'. */
static int respond_detail(struct router_req *r, const char *id, struct err *e)
{
    struct store_employee emp;
    struct store_emp_summary sum;
    int64_t now = clock_now_ms();
    /* The id comes last: whatever it holds, the key is unambiguous. The day is in the key
     * because the statistics count today's tasks. */
    const char *ckey = arena_printf(r->arena, "employee\n%s\n%d\n%lld\n%s", r->tenant.org_id,
                                    (int)r->tenant.mode, (long long)(now - now % DAY_MS), id);
    uint64_t gen = 0;
    struct buf b;
    struct jw w;
    int rc;

    if (cached_answer(r, ckey, &gen))
        return 0;
    rc = store_employee_get(r->store, &r->tenant, id, r->arena, &emp);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "employee_not_found", "id", "No employee %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee read failed");
    rc = store_employee_summary(r->store, &r->tenant, id, now - now % DAY_MS, &sum);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee summary failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    write_item(&w, &emp);
    jw_key(&w, "description");
    jw_str(&w, emp.description);
    jw_key(&w, "tools");
    jw_raw(&w, emp.tools, "[]"); /* checked rules, written by this server */
    jw_key(&w, "stats");
    jw_obj(&w);
    jw_key(&w, "tasks_completed_today");
    jw_int(&w, sum.tasks_completed_today);
    jw_key(&w, "avg_response_time_ms");
    jw_int(&w, sum.avg_response_ms);
    jw_key(&w, "satisfaction_score");
    if (sum.has_rating) {
        char num[32];
        snprintf(num, sizeof(num), "%.4g", sum.satisfaction);
        jw_raw(&w, num, "null");
    } else {
        jw_null(&w);
    }
    jw_obj_end(&w);
    jw_key(&w, "created_at");
    jw_time(&w, emp.created_at);
    jw_obj_end(&w);
    return respond_cached(r, &w, &b, ckey, gen, e);
}

/* GET /v1/employees */
int api_employees_list(struct router_req *r, struct err *e)
{
    struct store_emp_filter f = {.status = -1};
    struct store_emp_page page;
    const char *after, *ckey;
    uint64_t gen = 0;
    int x;
    struct buf b;
    struct jw w;
    int rc;

    rc = router_query_limit(r, &f.limit, e);
    if (rc)
        return rc;
    rc = router_query_enum(r, "category", &x, e);
    if (!rc)
        rc = router_query_enum(r, "status", &f.status, e);
    if (rc)
        return rc;
    f.category = x >= 0 ? api_employee_categories[x] : NULL;
    after = router_query(r, "after");
    if (after) {
        const char *fields[2];
        if (router_cursor_decode(after, strlen(after), r->arena, fields, 2) ||
            !id_valid(fields[1], "emp"))
            return err_set(e, ERR_INVALID, "invalid_request", "after",
                           "Invalid after: not a cursor this list returned.");
        f.after_name = fields[0];
        f.after_id = fields[1];
    }
    /* Every field but the last is free of newlines (ids, numbers, names from a fixed list),
     * so the key is unambiguous whatever the cursor holds. */
    ckey = arena_printf(r->arena, "employees\n%s\n%d\n%u\n%s\n%d\n%s", r->tenant.org_id,
                        (int)r->tenant.mode, f.limit, f.category ? f.category : "", f.status,
                        after ? after : "");
    if (cached_answer(r, ckey, &gen))
        return 0;
    rc = store_employee_list(r->store, &r->tenant, &f, r->arena, &page);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee list failed");
    buf_init(&b, RESP_CAP);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "employees");
    jw_arr(&w);
    for (size_t i = 0; i < page.n; i++) {
        jw_obj(&w);
        write_item(&w, &page.items[i]);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    jw_key(&w, "total");
    jw_int(&w, page.total);
    jw_key(&w, "has_more");
    jw_bool(&w, page.has_more);
    jw_key(&w, "next_cursor");
    if (page.has_more) {
        const char *fields[2] = {page.items[page.n - 1].name, page.items[page.n - 1].id};
        jw_str(&w, router_cursor_encode(r->arena, fields, 2));
    } else {
        jw_null(&w);
    }
    jw_obj_end(&w);
    return respond_cached(r, &w, &b, ckey, gen, e);
}

/* GET /v1/employees/{id} */
int api_employees_get(struct router_req *r, struct err *e)
{
    return respond_detail(r, r->params[0], e);
}

/* GET /v1/employees/{id}/stats?period=24h|7d|30d|90d */
int api_employees_stats(struct router_req *r, struct err *e)
{
    /* the buckets of each of api_stats_periods: hourly for a day, else daily */
    static const struct {
        int64_t bucket;
        size_t n;
    } periods[] = {{HOUR_MS, 24}, {DAY_MS, 7}, {DAY_MS, 30}, {DAY_MS, 90}};
    int x;
    const char *id = r->params[0];
    struct store_employee emp;
    struct store_stats st;
    int64_t now = clock_now_ms(), from;
    size_t pi = 1;
    json_t *o, *series;
    int rc;

    rc = router_query_enum(r, "period", &x, e);
    if (rc)
        return rc;
    pi = (size_t)x; /* the row has a default */
    rc = store_employee_get(r->store, &r->tenant, id, r->arena, &emp);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "employee_not_found", "id", "No employee %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee read failed");
    /* Buckets are aligned to the UTC hour or day; the last one holds now. */
    from = now - now % periods[pi].bucket - (int64_t)(periods[pi].n - 1) * periods[pi].bucket;
    rc = store_employee_stats(r->store, &r->tenant, id, from, now + 1, periods[pi].bucket,
                              periods[pi].n, r->arena, &st);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee stats failed");
    o = jo_object();
    jo_str(o, "employee_id", id);
    jo_str(o, "period", api_stats_periods[pi]);
    jo_time(o, "from", from);
    jo_time(o, "to", now);
    jo_int(o, "messages", st.messages);
    jo_int(o, "conversations", st.conversations);
    jo_int(o, "tasks_completed", st.tasks_completed);
    jo_int(o, "tasks_failed", st.tasks_failed);
    jo_int(o, "workflow_steps", st.workflow_steps);
    jo_int(o, "avg_response_time_ms", st.avg_response_ms);
    jo_int(o, "p95_response_time_ms", st.p95_response_ms);
    jo_int(o, "credits_used", st.credits);
    if (st.ratings > 0)
        jo_real(o, "satisfaction_score", st.satisfaction);
    else
        jo_null(o, "satisfaction_score");
    jo_int(o, "ratings", st.ratings);
    series = json_array();
    for (size_t i = 0; i < st.nseries; i++) {
        json_t *b = jo_object();
        jo_time(b, "start", st.series[i].start);
        jo_int(b, "messages", st.series[i].messages);
        jo_int(b, "tasks_completed", st.series[i].tasks_completed);
        jo_int(b, "credits_used", st.series[i].credits);
        json_array_append_new(series, b);
    }
    jo_set(o, "series", series);
    router_respond(r, o);
    return 0;
}

/* ---- Create and update ---- */

static bool capability_ok(const char *s, size_t len)
{
    if (len == 0 || len > 64 || !(s[0] >= 'a' && s[0] <= 'z'))
        return false;
    for (size_t i = 1; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

struct emp_body {
    const char *name;
    const char *role;
    int category;
    struct jb_strings capabilities;
    const char *description;
    const char *instructions;
    const char *model;
    int status;
    json_t *tools; /* borrowed; checked by tools_rules_bind() */
};

/* No `tier`: refused before binding (refuse_tier()). */
enum { F_NAME, F_ROLE, F_CATEGORY, F_CAPS, F_DESC, F_INSTR, F_MODEL, F_STATUS, F_TOOLS, F_N };

#define FIELD(n, t, m, fl, lo, hi, vals, chk, msg)                                                 \
    {                                                                                              \
        n, t, offsetof(struct emp_body, m), fl, lo, hi, vals, chk, msg                             \
    }

static const struct jb_field create_fields[F_N] = {
    FIELD("name", JB_STRING, name, JB_REQUIRED, 1, 100, NULL, NULL, NULL),
    FIELD("role", JB_STRING, role, JB_REQUIRED, 1, 100, NULL, NULL, NULL),
    FIELD("category", JB_ENUM, category, JB_REQUIRED, 0, 0, api_employee_categories, NULL, NULL),
    FIELD("capabilities", JB_STRING_ARRAY, capabilities, JB_UNIQUE, 0, 32, NULL, capability_ok,
          "each capability must match ^[a-z][a-z0-9_]{0,63}$"),
    FIELD("description", JB_STRING, description, 0, 0, 2000, NULL, NULL, NULL),
    FIELD("instructions", JB_STRING, instructions, 0, 0, 20000, NULL, NULL, NULL),
    FIELD("model", JB_STRING, model, JB_NULLABLE, 1, 200, NULL, NULL, NULL),
    FIELD("status", JB_ENUM, status, 0, 0, 0, settable_status, NULL, NULL),
    FIELD("tools", JB_ANY, tools, 0, 0, 0, NULL, NULL, NULL),
};

const struct jb_binding api_employees_create_body = {create_fields, F_N};

static const struct jb_field update_fields[F_N] = {
    FIELD("name", JB_STRING, name, 0, 1, 100, NULL, NULL, NULL),
    FIELD("role", JB_STRING, role, 0, 1, 100, NULL, NULL, NULL),
    FIELD("category", JB_ENUM, category, 0, 0, 0, api_employee_categories, NULL, NULL),
    FIELD("capabilities", JB_STRING_ARRAY, capabilities, JB_UNIQUE, 0, 32, NULL, capability_ok,
          "each capability must match ^[a-z][a-z0-9_]{0,63}$"),
    FIELD("description", JB_STRING, description, 0, 0, 2000, NULL, NULL, NULL),
    FIELD("instructions", JB_STRING, instructions, 0, 0, 20000, NULL, NULL, NULL),
    FIELD("model", JB_STRING, model, JB_NULLABLE, 1, 200, NULL, NULL, NULL),
    FIELD("status", JB_ENUM, status, 0, 0, 0, settable_status, NULL, NULL),
    FIELD("tools", JB_ANY, tools, 0, 0, 0, NULL, NULL, NULL),
};

const struct jb_binding api_employees_update_body = {update_fields, F_N};

static const char *caps_json(struct router_req *r, const struct jb_strings *caps)
{
    json_t *arr = json_array();
    char *s, *copy;
    for (size_t i = 0; i < caps->n; i++)
        json_array_append_new(arr, json_string(caps->v[i]));
    s = jo_dump(arr, NULL);
    json_decref(arr);
    copy = arena_strdup(r->arena, s);
    free(s);
    return copy;
}

/* The tier is the subscription gate: set by the operator's command line, never by the API. */
static int refuse_tier(const json_t *body, struct err *e)
{
    if (json_is_object(body) && json_object_get(body, "tier"))
        return err_set(e, ERR_INVALID, "invalid_request", "tier",
                       "An employee's tier cannot be set through the API; the operator sets "
                       "it with: workforce employees update ID --tier starter|manager.");
    return 0;
}

/* The tool rules of a body, checked, as stored (NULL when the body has none). */
static int tools_text(struct router_req *r, const struct emp_body *b, const struct jb_result *res,
                      const char **out, struct err *e)
{
    struct tools_rules rules;
    json_t *arr;
    char *s;
    int rc;

    *out = NULL;
    if (!JB_HAS(*res, F_TOOLS))
        return 0;
    rc = tools_rules_bind(b->tools, r->arena, &rules, e);
    if (rc)
        return rc;
    arr = tools_rules_json(&rules);
    s = jo_dump(arr, NULL);
    json_decref(arr);
    *out = arena_strdup(r->arena, s);
    free(s);
    return 0;
}

/* Turn a bound body into a store row; 'fields' gets the STORE_EMP_* bits present. */
static void to_row(struct router_req *r, const struct emp_body *b, const struct jb_result *res,
                   struct store_employee *emp, unsigned *fields)
{
    static const unsigned bits[F_N] = {
        STORE_EMP_NAME,         STORE_EMP_ROLE,        STORE_EMP_CATEGORY,
        STORE_EMP_CAPABILITIES, STORE_EMP_DESCRIPTION, STORE_EMP_INSTRUCTIONS,
        STORE_EMP_MODEL,        STORE_EMP_STATUS,      STORE_EMP_TOOLS};
    *fields = 0;
    for (int i = 0; i < F_N; i++) {
        if (JB_HAS(*res, i))
            *fields |= bits[i];
    }
    emp->name = b->name;
    emp->role = b->role;
    emp->category = api_employee_categories[b->category];
    emp->tier = emp_tiers[0]; /* starter: only the operator's command line sets a tier */
    emp->capabilities = JB_HAS(*res, F_CAPS) ? caps_json(r, &b->capabilities) : "[]";
    emp->description = b->description ? b->description : "";
    emp->instructions = b->instructions ? b->instructions : "";
    emp->model = JB_IS_NULL(*res, F_MODEL) ? NULL : b->model;
    emp->status = b->status == 1 ? STORE_EMP_OFFLINE : STORE_EMP_IDLE;
}

/* POST /v1/employees (operators: scope employees:write) */
int api_employees_create(struct router_req *r, struct err *e)
{
    struct emp_body b;
    struct jb_result res;
    struct store_employee emp;
    unsigned fields;
    char id[ID_MAX];
    int rc;

    memset(&b, 0, sizeof(b));
    memset(&emp, 0, sizeof(emp));
    rc = refuse_tier(r->body, e);
    if (!rc)
        rc = jb_bind(r->body, create_fields, F_N, &b, r->arena, &res, e);
    if (!rc)
        rc = tools_text(r, &b, &res, &emp.tools, e);
    if (rc)
        return rc;
    to_row(r, &b, &res, &emp, &fields);
    rc = id_new("emp", id, sizeof(id));
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "no id");
    r->audit.target_id = arena_strdup(r->arena, id);
    emp.id = id;
    emp.created_at = clock_now_ms();
    rc = store_employee_create(r->store, &r->tenant, &emp);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee insert failed");
    return respond_detail(r, id, e);
}

/* PATCH /v1/employees/{id} (operators): any subset of the create fields. */
int api_employees_update(struct router_req *r, struct err *e)
{
    struct emp_body b;
    struct jb_result res;
    struct store_employee emp;
    unsigned fields;
    int rc;

    memset(&b, 0, sizeof(b));
    memset(&emp, 0, sizeof(emp));
    rc = refuse_tier(r->body, e);
    if (!rc)
        rc = jb_bind(r->body, update_fields, F_N, &b, r->arena, &res, e);
    if (!rc)
        rc = tools_text(r, &b, &res, &emp.tools, e);
    if (rc)
        return rc;
    to_row(r, &b, &res, &emp, &fields);
    rc = store_employee_update(r->store, &r->tenant, r->params[0], &emp, fields, clock_now_ms());
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "employee_not_found", "id", "No employee %.60s.", r->params[0]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee update failed");
    task_runner_wake(api_svc(r)->tasks); /* back online: its tasks may run */
    return respond_detail(r, r->params[0], e);
}

/* The tenant's employee 'id', or 404 naming 'param'. */
int api_employee_find(struct router_req *r, const char *id, const char *param,
                      struct store_employee *out, struct err *e)
{
    struct store_employee tmp;
    int rc = store_employee_get(r->store, &r->tenant, id, r->arena, out ? out : &tmp);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "employee_not_found", param, "No employee %.60s.", id);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "employee read failed");
    return 0;
}
