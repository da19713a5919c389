/* SPDX-License-Identifier: MIT */
/*
 * act.c: the tools of a turn (see act.h): the offer, a step's calls prepared, and the pool
 * that runs them.
 *
 * DESIGN. The pool is a fixed set of threads over one queue of calls (a job per call). A step
 * counts its calls not ended; the thread that ends the last one calls the owner's done(), so
 * no thread waits on another and a step of one call costs one hand-over. A call's result is
 * cut at ACT_RESULT_MAX bytes with a note the model can read.
 */
#include "act.h"

#include "../auth/auth.h"
#include "../core/clock.h"
#include "../core/log.h"
#include "../json/json.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The offer ---- */

/* See act.h. */
void act_offer_build(const struct tools_rules *rules, bool can_pause, act_available_fn available,
                     void *ud, const struct store_tenant *tenant, const struct tools_def *extra,
                     size_t nextra, struct arena *a, struct act_offer *out)
{
    size_t ndefs, all;
    const struct tools_def *defs = tools_defs(&ndefs);

    all = ndefs + nextra;
    out->v = arena_alloc(a, (all ? all : 1) * sizeof(*out->v));
    out->llm = arena_alloc(a, (all ? all : 1) * sizeof(*out->llm));
    out->n = 0;
    for (size_t i = 0; i < all; i++) {
        const struct tools_def *d = i < ndefs ? &defs[i] : &extra[i - ndefs];
        enum tools_policy p = tools_policy_of(rules, d->name);
        struct act_tool *t = &out->v[out->n];
        bool clash = false;
        json_t *schema;
        char *text;

        if (p != TOOLS_AUTO && !(p == TOOLS_APPROVE && can_pause))
            continue;
        if (available && !available(ud, tenant, d))
            continue;
        t->def = d;
        t->policy = p;
        tools_model_name(d->name, t->model_name);
        for (size_t k = 0; k < out->n; k++)
            clash = clash || strcmp(out->v[k].model_name, t->model_name) == 0;
        if (clash) {
            log_warn("tools: %s is shown as %s, as another tool is: left out", d->name,
                     t->model_name);
            continue;
        }
        schema = tools_def_schema(d);
        text = json_dumps(schema, JSON_COMPACT);
        json_decref(schema);
        out->llm[out->n].name = t->model_name;
        out->llm[out->n].description = d->description;
        out->llm[out->n].parameters = arena_strdup(a, text ? text : "{}");
        free(text);
        out->n++;
    }
}

/* ---- A step's calls ---- */

/* End call 'c' as failed with 'why' (told to the model as {"error": why}). */
static void end_failed(struct act_call *c, const char *why)
{
    json_t *o = json_pack("{s:s}", "error", why);
    c->ended = true;
    c->failed = true;
    c->error = xstrdup(why);
    c->result = json_dumps(o, JSON_COMPACT);
    c->completed_at = clock_now_ms();
    json_decref(o);
}

static const struct act_tool *offered(const struct act_offer *offer, const char *model_name)
{
    for (size_t i = 0; model_name && i < offer->n; i++) {
        if (strcmp(offer->v[i].model_name, model_name) == 0)
            return &offer->v[i];
    }
    return NULL;
}

/* How often the turn made the call "tool\narguments" 'key': in 'seen', and in this step up to
 * (not including) call 'upto'. */
static size_t times_made(const char *key, const char *const *seen, size_t nseen,
                         const char *const *keys, size_t upto)
{
    size_t n = 0;
    for (size_t i = 0; i < nseen; i++)
        n += strcmp(seen[i], key) == 0;
    for (size_t i = 0; i < upto; i++)
        n += strcmp(keys[i], key) == 0;
    return n;
}

/* Map call 'in' to its tool and check its arguments into 'c'; one that cannot run is ended. */
static void prepare_one(const struct act_offer *offer, const struct llm_tool_call *in,
                        struct arena *a, struct act_call *c)
{
    struct err e;
    json_error_t je;

    c->model_id = arena_strdup(a, in->id ? in->id : "");
    c->model_name = arena_strdup(a, in->name ? in->name : "");
    c->arguments = arena_strdup(a, in->arguments && *in->arguments ? in->arguments : "{}");
    c->tool = offered(offer, in->name);
    if (!c->tool) {
        end_failed(c, "unknown_tool: no tool of that name is offered to this employee.");
        return;
    }
    c->args = json_loads(c->arguments, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(c->args)) {
        end_failed(c, "invalid_arguments: the arguments must be one JSON object.");
        return;
    }
    err_clear(&e);
    {
        char msg[600], why[700];
        if (act_args_check(c->tool->def, c->args, a, &c->bound, msg, sizeof(msg))) {
            snprintf(why, sizeof(why), "invalid_arguments: %s", msg);
            end_failed(c, why);
            return;
        }
    }
    c->pending = c->tool->policy == TOOLS_APPROVE;
}

/* See act.h. */
int act_args_check(const struct tools_def *d, json_t *args, struct arena *a,
                   struct tools_args *bound, char *why, size_t n)
{
    struct tools_args scratch;
    struct err e;
    int rc = 0;

    if (!json_is_object(args)) {
        snprintf(why, n, "the arguments must be one JSON object.");
        return ERR_INVALID;
    }
    if (d->input_schema) {
        /* an MCP server's tool: its own schema */
        json_t *schema = tools_def_schema(d);
        if (jv_check(schema, args, why, n))
            rc = ERR_INVALID;
        json_decref(schema);
        return rc;
    }
    err_clear(&e);
    if (tools_args_bind(d, args, a, bound ? bound : &scratch, &e)) {
        snprintf(why, n, "%s", e.msg);
        return ERR_INVALID;
    }
    return 0;
}

/* See act.h. */
const struct act_tool *act_offer_find(const struct act_offer *offer, const char *name)
{
    for (size_t i = 0; name && i < offer->n; i++)
        if (strcmp(offer->v[i].def->name, name) == 0)
            return &offer->v[i];
    return NULL;
}

/* Call 'c' from its journal row 'row': ids, names and arguments. */
static void from_row(struct act_call *c, const struct act_offer *offer,
                     const struct store_tool_call *row, struct arena *a)
{
    const struct act_tool *t = act_offer_find(offer, row->tool);
    char name[TOOLS_MODEL_NAME_MAX + 1];
    memset(c, 0, sizeof(*c));
    snprintf(c->id, sizeof(c->id), "%s", row->id);
    c->model_id = arena_strdup(a, row->model_id ? row->model_id : "");
    tools_shown_name(row->tool, name);
    c->model_name = arena_strdup(a, name);
    c->tool = t;
    c->arguments = arena_strdup(a, row->arguments ? row->arguments : "{}");
}

/* See act.h. */
void act_call_restore(struct act_call *c, const struct act_offer *offer,
                      const struct store_tool_call *row, struct arena *a)
{
    from_row(c, offer, row, a);
    c->ended = true;
    c->failed = strcmp(row->status, "failed") == 0;
    c->rejected = strcmp(row->status, "rejected") == 0;
    c->result = xstrdup(row->result ? row->result : "null");
    c->error = row->error ? xstrdup(row->error) : NULL;
    c->completed_at = row->completed_at;
}

/* See act.h. */
void act_call_decided(struct act_call *c, const struct act_offer *offer,
                      const struct store_tool_call *row, const char *status, const char *arguments,
                      const char *reason, struct arena *a)
{
    json_error_t je;
    char msg[600], why[700];

    from_row(c, offer, row, a);
    if (strcmp(status, "pending") == 0) {
        c->pending = true;
        return;
    }
    if (strcmp(status, "approved") != 0) {
        json_t *o = json_pack("{s:s,s:s?}", "error", "rejected", "reason", reason);
        c->ended = true;
        c->rejected = true;
        c->error = xstrdup(reason                           ? reason
                           : strcmp(status, "expired") == 0 ? "The approval expired."
                                                            : "A person rejected the call.");
        c->result = json_dumps(o, JSON_COMPACT);
        c->completed_at = clock_now_ms();
        json_decref(o);
        return;
    }
    if (arguments)
        c->arguments = arena_strdup(a, arguments);
    if (!c->tool) {
        end_failed(c, "unknown_tool: the tool is no longer offered to this employee.");
        return;
    }
    c->args = json_loads(c->arguments, JSON_REJECT_DUPLICATES, &je);
    if (act_args_check(c->tool->def, c->args, a, &c->bound, msg, sizeof(msg))) {
        snprintf(why, sizeof(why), "invalid_arguments: %s", msg);
        end_failed(c, why);
    }
}

/* See act.h. */
void act_step_prepare(const struct act_offer *offer, const struct llm_tool_call *calls, size_t n,
                      const char *const *seen, size_t nseen, struct arena *a, struct act_step *out,
                      bool *repeated)
{
    const char **keys = arena_alloc(a, (n ? n : 1) * sizeof(*keys));

    *repeated = false;
    out->a = a;
    out->n = n;
    out->calls = arena_alloc(a, (n ? n : 1) * sizeof(*out->calls));
    memset(out->calls, 0, (n ? n : 1) * sizeof(*out->calls));
    for (size_t i = 0; i < n; i++) {
        struct act_call *c = &out->calls[i];
        if (id_new("call", c->id, sizeof(c->id)))
            snprintf(c->id, sizeof(c->id), "call_%zu", i); /* the CSPRNG failed: still unique */
        keys[i] = arena_printf(a, "%s\n%s", calls[i].name ? calls[i].name : "",
                               calls[i].arguments ? calls[i].arguments : "");
        if (i >= ACT_CALLS_MAX) {
            c->model_id = arena_strdup(a, calls[i].id ? calls[i].id : "");
            c->model_name = arena_strdup(a, calls[i].name ? calls[i].name : "");
            c->arguments = arena_strdup(a, calls[i].arguments ? calls[i].arguments : "{}");
            end_failed(c, "too_many_calls: at most 16 tool calls of one step are run.");
            continue;
        }
        prepare_one(offer, &calls[i], a, c);
        if (times_made(keys[i], seen, nseen, keys, i) + 1 >= ACT_REPEAT_MAX)
            *repeated = true;
    }
}

/* See act.h. */
void act_step_cleanup(struct act_step *st)
{
    for (size_t i = 0; st->calls && i < st->n; i++) {
        json_decref(st->calls[i].args);
        free(st->calls[i].result);
        free(st->calls[i].error);
    }
    st->calls = NULL;
    st->n = 0;
}

/* ---- Running them ---- */

struct run {
    struct act_step *st;
    struct act_job job; /* per call: def, args, arguments filled in */
    act_step_done_fn done;
    void *ud;
    atomic_size_t left;
};

struct task {
    struct task *next;
    struct run *run; /* a call of a step, or NULL: */
    struct act_call *call;
    void (*fn)(void *ud); /* any other work */
    void *ud;
};

struct act_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct task *head, *tail;
    bool stopping;
    act_run_fn fn;
    void *ud;
    pthread_t *threads;
    unsigned n;
};

/* See act.h. */
char *act_result_cut(const char *text, size_t len)
{
    size_t keep = ACT_RESULT_MAX - 200;
    json_t *o;
    char *out;

    if (len <= ACT_RESULT_MAX)
        return xstrndup(text, len);
    while (keep > 0 && ((unsigned char)text[keep] & 0xC0) == 0x80)
        keep--;
    o = json_pack("{s:b,s:s%,s:s}", "truncated", 1, "text", text, keep, "note",
                  "The result was cut at 16 KiB.");
    out = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return out ? out : xstrdup("{\"truncated\":true}");
}

/* A runner's result as the model is given it: act_result_cut(), and null for nothing. */
static char *cut_result(const struct buf *b)
{
    return buf_len(b) ? act_result_cut(buf_ptr(b), buf_len(b)) : xstrdup("null");
}

/* Run call 'c' as 'base' says (its def, args and arguments set from the call) with 'fn'. */
static void run_one(act_run_fn fn, void *ud, const struct act_job *base, struct act_call *c)
{
    struct act_job job = *base;
    struct buf out;
    struct err e;

    if (!auth_scope_allows(job.scopes, c->tool->def->scope)) {
        char why[200];
        snprintf(why, sizeof(why),
                 "permission_denied: the key that started this turn lacks "
                 "the scope %s.",
                 auth_scope_name(c->tool->def->scope));
        end_failed(c, why);
        return;
    }
    job.def = c->tool->def;
    job.args = &c->bound;
    job.arguments = c->args;
    job.call_id = c->id;
    buf_init(&out, 8u << 20);
    err_clear(&e);
    if (fn(ud, &job, &out, &e)) {
        end_failed(c, e.msg[0] ? e.msg : "the tool failed");
    } else {
        c->result = cut_result(&out);
        c->ended = true;
        c->completed_at = clock_now_ms();
    }
    buf_cleanup(&out);
}

static void *worker(void *arg)
{
    struct act_pool *p = arg;
    for (;;) {
        struct task *t;
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->cv, &p->mu);
        t = p->head;
        if (t) {
            p->head = t->next;
            if (!p->head)
                p->tail = NULL;
        }
        pthread_mutex_unlock(&p->mu);
        if (!t)
            return NULL; /* stopping, and nothing left */
        if (!t->run) {
            t->fn(t->ud);
            free(t);
            continue;
        }
        run_one(p->fn, p->ud, &t->run->job, t->call);
        if (atomic_fetch_sub(&t->run->left, 1) == 1) {
            struct run *r = t->run;
            r->done(r->ud, r->st);
            free(r);
        }
        free(t);
    }
}

/* See act.h. */
int act_pool_new(unsigned threads, act_run_fn run, void *ud, struct act_pool **out)
{
    struct act_pool *p = xcalloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->fn = run;
    p->ud = ud;
    p->threads = xcalloc(threads ? threads : 1, sizeof(*p->threads));
    for (unsigned i = 0; i < threads; i++) {
        if (pthread_create(&p->threads[i], NULL, worker, p) != 0)
            break;
        p->n++;
    }
    *out = p;
    return p->n ? 0 : ERR_INTERNAL;
}

/* See act.h. */
void act_pool_free(struct act_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (unsigned i = 0; i < p->n; i++)
        pthread_join(p->threads[i], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

/* Queue task 't' (taken). */
static void enqueue(struct act_pool *p, struct task *t)
{
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* See act.h. */
void act_pool_submit(struct act_pool *p, void (*fn)(void *ud), void *ud)
{
    struct task *t = xcalloc(1, sizeof(*t));
    t->fn = fn;
    t->ud = ud;
    enqueue(p, t);
}

/* See act.h. */
void act_step_run(struct act_pool *p, struct act_step *st, const struct act_job *job,
                  act_step_done_fn done, void *ud)
{
    struct run *r = xcalloc(1, sizeof(*r));
    struct task *first = NULL, *last = NULL;
    size_t todo = 0;

    r->st = st;
    r->job = *job;
    r->done = done;
    r->ud = ud;
    for (size_t i = 0; i < st->n; i++)
        todo += !st->calls[i].ended && !st->calls[i].pending;
    atomic_init(&r->left, todo);
    if (todo == 0) {
        free(r);
        done(ud, st);
        return;
    }
    /* every task is made before any is queued: once queued, the last call's end may free
     * 'st' (the owner's done()) */
    for (size_t i = 0; i < st->n; i++) {
        struct task *t;
        if (st->calls[i].ended || st->calls[i].pending)
            continue;
        t = xcalloc(1, sizeof(*t));
        t->run = r;
        t->call = &st->calls[i];
        if (last)
            last->next = t;
        else
            first = t;
        last = t;
    }
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = first;
    else
        p->head = first;
    p->tail = last;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* See act.h. */
void act_step_run_here(act_run_fn fn, void *ud, struct act_step *st, const struct act_job *job)
{
    for (size_t i = 0; i < st->n; i++) {
        if (!st->calls[i].ended && !st->calls[i].pending)
            run_one(fn, ud, job, &st->calls[i]);
    }
}

/* ---- Limits ---- */

/* See act.h. */
int act_depth_check(int depth, struct err *e)
{
    if (depth < ACT_DEPTH_MAX)
        return 0;
    return err_set(e, ERR_LIMIT, "max_depth", NULL,
                   "employees.ask and workflows.run may go at most %d levels deep, and this turn "
                   "is at level %d: answer with what you have instead.",
                   ACT_DEPTH_MAX, depth);
}

/* See act.h. */
const char *act_limit(bool no_credits, int nmodel, int max_steps, int64_t t0_us, char *why,
                      size_t n)
{
    if (no_credits) {
        snprintf(why, n, "the organization has no credits left");
        return "insufficient_credits";
    }
    if (nmodel >= max_steps) {
        snprintf(why, n, "this turn reached its limit of %d model calls", max_steps);
        return "max_steps";
    }
    if (clock_mono_us() - t0_us > (int64_t)ACT_TURN_MS * 1000) {
        snprintf(why, n, "this turn ran for its limit of %d seconds", ACT_TURN_MS / 1000);
        return "timeout";
    }
    return NULL;
}

/* ---- What the model is shown of a turn's steps ---- */

/* Append message 'm'. */
static void steps_push(struct act_steps *h, struct arena *a, const struct llm_message *m)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        struct llm_message *v = arena_alloc(a, cap * sizeof(*v));
        if (h->n)
            memcpy(v, h->v, h->n * sizeof(*v));
        h->v = v;
        h->cap = cap;
    }
    h->v[h->n++] = *m;
}

/* See act.h. */
void act_steps_add(struct act_steps *h, struct arena *a, const struct llm_tool_call *got,
                   size_t ngot, const struct act_step *st)
{
    struct llm_message m;

    memset(&m, 0, sizeof(m));
    m.role = "assistant";
    m.tool_calls = got;
    m.ntool_calls = ngot;
    steps_push(h, a, &m);
    for (size_t i = 0; i < st->n; i++) {
        memset(&m, 0, sizeof(m));
        m.role = "tool";
        m.tool_call_id = st->calls[i].model_id;
        m.content = arena_strdup(a, st->calls[i].result ? st->calls[i].result : "null");
        steps_push(h, a, &m);
    }
    for (size_t i = 0; i < ngot; i++) {
        if (h->nseen == h->seen_cap) {
            size_t cap = h->seen_cap ? 2 * h->seen_cap : 16;
            const char **v = arena_alloc(a, cap * sizeof(*v));
            if (h->nseen)
                memcpy(v, h->seen, h->nseen * sizeof(*v));
            h->seen = v;
            h->seen_cap = cap;
        }
        h->seen[h->nseen++] = arena_printf(a, "%s\n%s", got[i].name, got[i].arguments);
    }
}

/* ---- Records ---- */

/* 'text' as JSON when it is JSON, else as a string; NULL -> null. */
static json_t *json_or_string(const char *text)
{
    json_t *v;
    if (!text)
        return json_null();
    v = json_loads(text, JSON_DECODE_ANY, NULL);
    return v ? v : json_string(text);
}

/* See act.h. */
json_t *act_call_json(const struct store_tool_call *c)
{
    json_t *o = jo_object();
    jo_str(o, "id", c->id);
    jo_str(o, "tool", c->tool);
    jo_set(o, "arguments", json_or_string(c->arguments));
    jo_str(o, "status", c->status);
    jo_set(o, "result", json_or_string(c->result));
    jo_str(o, "error", c->error);
    jo_str(o, "approval_id", c->approval_id);
    jo_time(o, "started_at", c->started_at);
    jo_time(o, "completed_at", c->completed_at);
    return o;
}

/* See act.h. */
void act_calls_write(struct jw *w, const struct store_tool_call *calls, size_t n)
{
    jw_arr(w);
    for (size_t i = 0; i < n; i++) {
        json_t *rec = act_call_json(&calls[i]);
        char *text = json_dumps(rec, JSON_COMPACT);
        jw_raw(w, text, "null");
        free(text);
        json_decref(rec);
    }
    jw_arr_end(w);
}
