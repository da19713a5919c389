/* SPDX-License-Identifier: MIT */
/*
 * agent.c: an employee answering an input (see agent.h): the engine choice, the knowledge
 * search of an input, and the synchronous answer that task runs and workflow steps wait for.
 *
 * DESIGN. agent_answer() runs on a worker thread that may block: the knowledge search may end
 * on the embedding pool's thread and the openai engine answers on the outbound client's
 * thread, so each hands its result back through a small condition (struct wait) that the
 * worker waits on. A store handle is borrowed only for each store call, never across a wait.
 *
 * A run's turn that calls tools (contract §19) is a loop on that thread: a model call; its
 * calls prepared against the offer (act_step_prepare), journaled under the run before any
 * starts, in the transaction that charges that model call (store_tool_step_begin, priced by
 * the ledger), run one after the other right here (act_step_run_here: this thread may block,
 * and so never waits for the chat turns' tool pool, whose few threads could all be waiting
 * for it), their ends journaled; then the next model call with the results, until the model
 * answers without calls or a limit (act_limit, a call repeated a third time) stops it. The
 * last model call is charged by the caller with the run's outcome, as before.
 *
 * A colleague's answer to employees.ask (agent_ask.asked) is the same loop on the thread of
 * the asking call, with no run to journal its calls under: each step's transaction charges
 * its model call and writes no call, and the last model call is charged here when the answer
 * ends, as a chat reply's would be (a failed one costs nothing more).
 */
#include "agent.h"

#include "../core/clock.h"
#include "../core/log.h"
#include "../ledger/ledger.h"
#include "../tools/tools.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- The pieces chat uses too ---- */

/* See agent.h. */
void agent_request_employee(struct llm_request *req, const struct store_employee *emp)
{
    req->model = emp->model;
    req->employee_name = emp->name;
    req->employee_role = emp->role;
    req->persona = emp->instructions;
    req->capabilities = emp->capabilities;
}

/* See agent.h. */
struct llm *agent_engine(const struct agent_env *a, enum store_mode mode)
{
    if (mode == STORE_TEST && strcmp(a->cfg->test_llm, "builtin") == 0)
        return a->llm_builtin;
    return a->llm;
}

/* See agent.h. */
void agent_knowledge_start(const struct agent_env *a, const struct store_tenant *t,
                           const char *employee_id, const char *text, struct store *s,
                           knowledge_search_fn done, void *ud)
{
    struct knowledge_query q;
    char cut[AGENT_SEARCH_MAX + 1];
    size_t len = strlen(text);

    /* The input as a search: at most AGENT_SEARCH_MAX bytes, cut between characters. */
    if (len > AGENT_SEARCH_MAX) {
        len = AGENT_SEARCH_MAX;
        while (len > 0 && ((unsigned char)text[len] & 0xC0) == 0x80)
            len--;
        memcpy(cut, text, len);
        cut[len] = '\0';
        text = cut;
    }
    memset(&q, 0, sizeof(q));
    q.ks = &a->knowledge;
    q.tenant = *t;
    q.query = text;
    q.filter.employee_id = employee_id;
    q.limit = AGENT_KNOWLEDGE_PASSAGES;
    q.min_cosine = AGENT_KNOWLEDGE_MIN_COSINE;
    knowledge_search_start(&q, s, done, ud); /* copies what it keeps */
}

/* See agent.h. */
struct llm_passage *agent_passages(struct arena *a, const struct store_hit *hits, size_t n)
{
    struct llm_passage *ps = arena_calloc(a, (n + 1) * sizeof(*ps));
    for (size_t i = 0; i < n; i++) {
        ps[i].source = arena_strdup(a, hits[i].document_name);
        ps[i].content = arena_strdup(a, hits[i].content);
        ps[i].page = hits[i].page;
    }
    return ps;
}

/* ---- Waiting for a callback on another thread ---- */

struct wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
};

static void wait_init(struct wait *w)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->done = false;
}

static void wait_signal(struct wait *w)
{
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

static void wait_for(struct wait *w)
{
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        pthread_cond_wait(&w->cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* ---- The synchronous answer ---- */

struct knowledge {
    struct wait w;
    struct arena *a;
    struct llm_passage *ps;
    size_t n;
    bool ok;
};

static void knowledge_done(void *ud, int rc, struct store *s, const struct store_hit *hits,
                           size_t n, const struct err *e)
{
    struct knowledge *k = ud;
    (void)s;
    if (rc) {
        log_warn("agent: knowledge search failed: %s", e ? e->msg : "?");
    } else {
        k->ps = agent_passages(k->a, hits, n);
        k->n = n;
        k->ok = true;
    }
    wait_signal(&k->w);
}

/* One answer on a worker thread: its request, the tools offered, and the steps so far. */
struct answer {
    const struct agent_env *a;
    const struct agent_ask *q;
    struct agent_answer *out;
    struct llm *engine;
    struct arena *ar;
    struct llm_request lreq;
    struct act_offer offer;    /* n 0: no tool offered */
    struct llm_tool_call *got; /* the calls of the last model call (ar) */
    size_t ngot;
    struct act_steps steps; /* the messages after the input, the calls made (ar) */
    int nmodel;             /* model calls made */
    int64_t t0_us;
    bool no_credits; /* live, and the last step's charge left the balance at 0 */
};

struct reply {
    struct wait w;
    struct answer *x;
    struct llm_usage u;
};

static void on_delta(void *ud, const char *text, size_t len)
{
    struct reply *r = ud;
    buf_append(&r->x->out->text, text, len); /* past result_max the answer is cut */
}

/* The calls of the model call that ends, copied (on the engine's thread, while the worker
 * waits). */
static void on_tool_calls(void *ud, const struct llm_tool_call *calls, size_t n)
{
    struct answer *x = ((struct reply *)ud)->x;
    x->got = arena_alloc(x->ar, (n ? n : 1) * sizeof(*x->got));
    for (size_t i = 0; i < n; i++) {
        x->got[i].id = arena_strdup(x->ar, calls[i].id ? calls[i].id : "");
        x->got[i].name = arena_strdup(x->ar, calls[i].name ? calls[i].name : "");
        x->got[i].arguments = arena_strdup(x->ar, calls[i].arguments ? calls[i].arguments : "{}");
    }
    x->ngot = n;
}

static void on_done(void *ud, const struct llm_usage *u, const struct err *e)
{
    struct reply *r = ud;
    if (e) {
        r->x->out->failed = true;
        snprintf(r->x->out->error, sizeof(r->x->out->error), "%s",
                 e->msg[0] ? e->msg : "the engine failed");
    } else {
        r->u = *u;
    }
    wait_signal(&r->w);
}

/* One model call with the steps so far, waited for: its usage in '*u'; false when the engine
 * failed (out->failed says why). */
static bool model_call(struct answer *x, struct llm_usage *u)
{
    struct llm_request lreq = x->lreq;
    struct llm_sink sink = {0};
    struct reply rep;

    lreq.steps = x->steps.v;
    lreq.nsteps = x->steps.n;
    x->ngot = 0;
    memset(&rep, 0, sizeof(rep));
    wait_init(&rep.w);
    rep.x = x;
    sink.delta = on_delta;
    sink.tool_calls = x->offer.n ? on_tool_calls : NULL;
    sink.done = on_done;
    sink.ud = &rep;
    llm_call(x->engine, &lreq, &sink);
    wait_for(&rep.w);
    *u = rep.u;
    x->out->usage.input_tokens += rep.u.input_tokens;
    x->out->usage.output_tokens += rep.u.output_tokens;
    return !x->out->failed;
}

/* The tools the employee's rules offer this answer: its auto tools, for the turn of a run,
 * with an engine that calls tools (approve: not offered until a run can pause). */
static void offer_tools(struct answer *x)
{
    const struct agent_ask *q = x->q;
    struct tools_rules rules;

    if (!x->a->tool_run || !(q->task_run_id || q->workflow_run_id || q->asked) || !q->emp->tools ||
        strcmp(llm_name(x->engine), "builtin") == 0)
        return;
    if (tools_rules_parse(q->emp->tools, strlen(q->emp->tools), x->ar, &rules)) {
        log_warn("agent: the tool rules of %s cannot be read: no tool offered", q->emp->id);
        return;
    }
    /* the MCP servers' tools are offered in chat turns only, for now */
    act_offer_build(&rules, false, x->a->tool_available, x->a->tool_ud, q->tenant, NULL, 0, x->ar,
                    &x->offer);
    x->lreq.tools = x->offer.llm;
    x->lreq.ntools = x->offer.n;
}

/* ---- The steps that call tools ---- */

/* The answer ends for 'reason' before another model call: it says so after what the model
 * wrote. */
static void stop(struct answer *x, const char *reason, const char *why)
{
    buf_appendf(&x->out->text, "%s(I stopped here: %s.)", buf_len(&x->out->text) ? "\n\n" : "",
                why);
    x->out->stop_reason = reason;
}

/* The answer fails with 'why' (the work its tools did is kept). */
static void fail(struct answer *x, const char *why)
{
    x->out->failed = true;
    snprintf(x->out->error, sizeof(x->out->error), "%s", why);
}

/* The journal's row of call 'c' of the answer, the 'seq'th call of its turn. */
static struct store_tool_call call_row(const struct answer *x, const struct act_call *c,
                                       int64_t seq)
{
    struct store_tool_call row;
    memset(&row, 0, sizeof(row));
    row.id = c->id;
    row.model_id = c->model_id;
    row.tool = c->tool ? c->tool->def->name : c->model_name;
    row.arguments = c->arguments;
    row.status = c->ended ? (c->failed ? "failed" : "completed") : "running";
    row.result = c->result;
    row.error = c->error;
    row.seq = seq;
    row.step = x->nmodel - 1;
    row.started_at = clock_now_ms();
    row.completed_at = c->ended ? c->completed_at : 0;
    row.task_run_id = x->q->task_run_id;
    row.workflow_run_id = x->q->workflow_run_id;
    row.step_index = x->q->step_index;
    return row;
}

/* Write the 'n' calls 'rows' in one transaction that charges a model call of the answer
 * ('price'): 0, or the store's error (nothing written). */
static int step_write(struct answer *x, const struct store_tool_call *rows, size_t n, int64_t price)
{
    const struct store_tenant *t = x->q->tenant;
    struct store_tool_step in;
    int64_t charged = 0, balance = 0;
    struct store *s;
    int rc;

    memset(&in, 0, sizeof(in));
    in.calls = rows;
    in.n = n;
    in.charge = t->mode == STORE_LIVE;
    in.price = price;
    s = store_pool_get(x->a->knowledge.pool);
    rc = store_tool_step_begin(s, t, &in, &charged, &balance);
    store_pool_put(x->a->knowledge.pool, s);
    if (!rc) {
        x->out->charged += charged;
        x->no_credits = t->mode == STORE_LIVE && balance <= 0;
    }
    return rc;
}

/* Journal the calls of 'st' before any starts (a colleague's answer has no run to journal them
 * under: none), in one transaction that charges the model call that asked for them ('price'):
 * 0, or the store's error (nothing written). */
static int journal_step(struct answer *x, const struct act_step *st, int64_t price)
{
    size_t n = x->q->asked ? 0 : st->n;
    struct store_tool_call *rows = xcalloc(n ? n : 1, sizeof(*rows));
    int rc;

    for (size_t i = 0; i < n; i++)
        rows[i] = call_row(x, &st->calls[i], (int64_t)(x->out->ncalls + i));
    rc = step_write(x, rows, n, price);
    if (!rc)
        x->out->ncalls += st->n;
    free(rows);
    return rc;
}

/* The calls of 'st' have ended: their ends journaled, and the model shown its calls, then one
 * result each. */
static void step_ended(struct answer *x, const struct act_step *st)
{
    struct store *s = store_pool_get(x->a->knowledge.pool);

    for (size_t i = 0; !x->q->asked && i < st->n; i++) {
        struct store_tool_call row = call_row(x, &st->calls[i], 0);
        if (store_tool_call_end(s, x->q->tenant, &row))
            log_error("agent: cannot journal the end of %s", row.id);
    }
    store_pool_put(x->a->knowledge.pool, s);
    act_steps_add(&x->steps, x->ar, x->got, x->ngot, st);
}

/* The model asked for the 'x->ngot' calls of its last call (usage 'u'): prepared, journaled
 * (charging that model call), run here and shown to the model. False when the answer ends
 * (a repeated call stops it; a journal that cannot be written fails it). */
static bool tool_step(struct answer *x, const struct llm_usage *u)
{
    const struct agent_ask *q = x->q;
    int64_t price = ledger_price(u, q->tenant->mode);
    struct act_step st;
    struct act_job job;
    bool repeated = false;

    act_step_prepare(&x->offer, x->got, x->ngot, x->steps.seen, x->steps.nseen, x->ar, &st,
                     &repeated);
    if (repeated) {
        act_step_cleanup(&st);
        x->out->price = price; /* not journaled: charged with the outcome */
        stop(x, "repeated_call", "the same tool call was made three times");
        return false;
    }
    if (journal_step(x, &st, price)) {
        act_step_cleanup(&st);
        fail(x, "The run's tool calls could not be recorded.");
        return false;
    }
    memset(&job, 0, sizeof(job));
    job.tenant = q->tenant;
    job.scopes = q->scopes;
    job.org_tier = q->org_tier;
    job.employee_id = q->emp->id;
    job.depth = q->depth;
    act_step_run_here(x->a->tool_run, x->a->tool_ud, &st, &job);
    step_ended(x, &st);
    act_step_cleanup(&st);
    return true;
}

/* Model calls, and the tools they ask for, until the model answers without calls, the engine
 * fails, or a limit stops the answer. */
static void run_steps(struct answer *x)
{
    const struct agent_ask *q = x->q;
    for (;;) {
        struct llm_usage u = {0, 0};
        const char *reason;
        char why[160];

        if (!model_call(x, &u))
            return;
        x->nmodel++;
        if (x->ngot == 0 || x->offer.n == 0) {
            x->out->price = ledger_price(&u, q->tenant->mode);
            x->out->stop_reason = "completed";
            return;
        }
        if (!tool_step(x, &u))
            return;
        reason = act_limit(x->no_credits, x->nmodel, x->a->cfg->agent_max_steps, x->t0_us, why,
                           sizeof(why));
        if (reason) {
            stop(x, reason, why);
            return;
        }
        if (q->still_wanted && !q->still_wanted(q->ud)) {
            fail(x, "The run was cancelled while its tools ran.");
            return;
        }
    }
}

/* See agent.h. */
int agent_answer(const struct agent_env *a, const struct agent_ask *q, struct agent_answer *out)
{
    const struct store_employee *emp = q->emp;
    struct knowledge kn;
    struct answer x;
    struct arena ar;
    struct store *s;

    memset(out, 0, sizeof(*out));
    buf_init(&out->text, q->result_max);
    arena_init(&ar);
    memset(&x, 0, sizeof(x));
    x.t0_us = clock_mono_us();

    /* The knowledge this employee may read that matches the input. */
    memset(&kn, 0, sizeof(kn));
    kn.a = &ar;
    if (!q->no_knowledge) {
        wait_init(&kn.w);
        s = store_pool_get(a->knowledge.pool);
        agent_knowledge_start(a, q->tenant, emp->id, q->message, s, knowledge_done, &kn);
        store_pool_put(a->knowledge.pool, s);
        wait_for(&kn.w);
    }

    if (q->still_wanted && !q->still_wanted(q->ud)) {
        out->skipped = true;
        arena_cleanup(&ar);
        return 0;
    }
    x.a = a;
    x.q = q;
    x.out = out;
    x.ar = &ar;
    x.engine = agent_engine(a, q->tenant->mode);
    agent_request_employee(&x.lreq, emp);
    x.lreq.message = q->message;
    x.lreq.knowledge = kn.ps;
    x.lreq.nknowledge = kn.n;
    x.lreq.knowledge_searched = kn.ok;
    x.lreq.json_output = q->json_output;
    offer_tools(&x);
    run_steps(&x);
    if (q->asked && !out->failed && out->price > 0) {
        /* a colleague's answer: its last model call is charged now, as a chat reply's */
        if (step_write(&x, NULL, 0, out->price))
            fail(&x, "The answer could not be charged.");
        out->price = 0;
    }
    arena_cleanup(&ar);
    return 0;
}

/* See agent.h. */
void agent_answer_cleanup(struct agent_answer *ans)
{
    buf_cleanup(&ans->text);
}
