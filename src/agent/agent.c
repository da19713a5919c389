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
 *
 * Approvals (contract §19). A run's turn is offered its approve tools too (a colleague's is
 * not: it cannot pause). A call to one is journaled as pending_approval with its approval in
 * the step's transaction; the step's other calls run; then the answer pauses (paused, with a
 * state: what the rows do not hold) and the caller stores the run as waiting, which frees this
 * thread. Once none of the run's approvals is pending, the queue gives it to a worker again,
 * which asks with 'resume': the steps are rebuilt from the journal (the calls of this turn
 * from seq 'base' on: a workflow step's earlier attempts, cut by a crash, numbered theirs
 * before), the last step's calls decided as their approvals say (act_call_decided), the
 * approved ones journaled as running and run, and the loop goes on with the next model call.
 * Calls found running were started by a segment a crash cut: they end "interrupted", never run
 * again.
 */
#include "agent.h"

#include "../core/clock.h"
#include "../core/id.h"
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
    int64_t seq_base; /* the seq of the turn's first call (a step's earlier attempts' first) */
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

/* The tools the employee's rules offer this answer: for the turn of a run, with an engine that
 * calls tools, its auto tools, and its approve ones unless no person can be asked (a
 * colleague's answer to employees.ask cannot pause). */
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
    {
        struct tools_def *mcp = NULL;
        size_t nmcp = 0;
        struct store *s = store_pool_get(x->a->knowledge.pool);
        act_mcp_tools(s, q->tenant, &rules, x->ar, &mcp, &nmcp); /* borrowed for the answer */
        store_pool_put(x->a->knowledge.pool, s);
        act_offer_build(&rules, !q->asked, x->a->tool_available, x->a->tool_ud, q->tenant, mcp,
                        nmcp, x->ar, &x->offer);
    }
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
    row.status = c->pending    ? "pending_approval"
                 : !c->ended   ? "running"
                 : c->rejected ? "rejected"
                 : c->failed   ? "failed"
                               : "completed";
    row.result = c->result;
    row.error = c->error;
    row.seq = x->seq_base + seq;
    row.step = x->nmodel - 1;
    row.started_at = clock_now_ms();
    row.completed_at = c->ended ? c->completed_at : 0;
    row.task_run_id = x->q->task_run_id;
    row.workflow_run_id = x->q->workflow_run_id;
    row.step_index = x->q->step_index;
    return row;
}

/* The approval that call 'row' (pending_approval) asks for, into '*p' (strings borrowed): on
 * behalf of the key that created the task or started the run (the system when none is
 * recorded). */
static void approval_of(const struct answer *x, const struct store_tool_call *row, int64_t now,
                        struct store_approval *p)
{
    const struct agent_ask *q = x->q;
    memset(p, 0, sizeof(*p));
    p->id = row->approval_id;
    p->employee_id = q->emp->id;
    p->tool_call_id = row->id;
    p->tool = row->tool;
    p->arguments = row->arguments;
    p->status = "pending";
    p->requested_by_type = act_requester_type(q->requested_by); /* who created the task or
                                                                    started the run */
    p->requested_by_id = q->requested_by;
    p->task_id = q->task_run_id ? q->task_id : NULL;
    p->task_run_id = q->task_run_id;
    p->workflow_run_id = q->workflow_run_id;
    p->step_index = q->workflow_run_id ? q->step_index : -1;
    p->requested_at = now;
    p->expires_at = now + (int64_t)x->a->cfg->approval_ttl_hours * 3600000;
}

/* Write the 'n' calls 'rows' and the 'napprovals' approvals they ask for in one transaction
 * that charges a model call of the answer ('price'): 0, or the store's error (nothing
 * written). */
static int step_write(struct answer *x, const struct store_tool_call *rows, size_t n,
                      const struct store_approval *approvals, size_t napprovals, int64_t price)
{
    const struct store_tenant *t = x->q->tenant;
    struct store_tool_step in;
    int64_t charged = 0, balance = 0;
    struct store *s;
    int rc;

    memset(&in, 0, sizeof(in));
    in.calls = rows;
    in.n = n;
    in.approvals = approvals;
    in.napprovals = napprovals;
    in.charge = t->mode == STORE_LIVE;
    in.price = price;
    in.employee_id = x->q->emp->id;
    s = store_pool_get(x->a->knowledge.pool);
    rc = store_tool_step_begin(s, t, &in, &charged, &balance);
    store_pool_put(x->a->knowledge.pool, s);
    if (!rc) {
        x->out->charged += charged;
        x->no_credits = t->mode == STORE_LIVE && balance <= 0;
    }
    return rc;
}

/* Journal the calls of 'st' before any starts, with an approval for each that waits for one (a
 * colleague's answer has no run to journal them under: none), in one transaction that charges
 * the model call that asked for them ('price'): 0, or the store's error (nothing written). */
static int journal_step(struct answer *x, const struct act_step *st, int64_t price)
{
    size_t n = x->q->asked ? 0 : st->n, napprovals = 0;
    struct store_tool_call *rows = xcalloc(n ? n : 1, sizeof(*rows));
    struct store_approval *approvals = xcalloc(n ? n : 1, sizeof(*approvals));
    char(*ids)[ID_MAX] = xcalloc(n ? n : 1, sizeof(*ids));
    int64_t now = clock_now_ms();
    int rc = 0;

    for (size_t i = 0; i < n; i++) {
        rows[i] = call_row(x, &st->calls[i], (int64_t)(x->out->ncalls + i));
        if (!st->calls[i].pending)
            continue;
        if (id_new("apr", ids[napprovals], ID_MAX))
            rc = ERR_INTERNAL;
        rows[i].approval_id = ids[napprovals];
        approval_of(x, &rows[i], now, &approvals[napprovals++]);
    }
    if (!rc)
        rc = step_write(x, rows, n, approvals, napprovals, price);
    if (!rc)
        x->out->ncalls += st->n;
    free(ids);
    free(approvals);
    free(rows);
    return rc;
}

/* Journal the ends of the calls of 'st' that ended in this answer (not those it found ended
 * in its journal, nor those that wait). */
static void journal_ends(struct answer *x, struct act_step *st)
{
    struct store *s;

    if (x->q->asked)
        return;
    s = store_pool_get(x->a->knowledge.pool);
    for (size_t i = 0; i < st->n; i++) {
        struct act_call *c = &st->calls[i];
        struct store_tool_call row;
        if (!c->ended || c->shown)
            continue;
        c->shown = true;
        row = call_row(x, c, 0);
        row.started_at = 0; /* as journaled */
        if (store_tool_call_end(s, x->q->tenant, &row))
            log_error("agent: cannot journal the end of %s", row.id);
    }
    store_pool_put(x->a->knowledge.pool, s);
}

/* Whether a call of 'st' waits for a person's decision. */
static bool step_waits(const struct act_step *st)
{
    for (size_t i = 0; i < st->n; i++)
        if (st->calls[i].pending)
            return true;
    return false;
}

/* What the turn goes on from after a pause that its rows do not hold (JSON text, malloc): see
 * sql/022_run_approvals.sql. */
static char *state_text(const struct answer *x)
{
    json_t *ks = json_array(), *o;
    char *text;

    for (size_t i = 0; i < x->lreq.nknowledge; i++) {
        const struct llm_passage *p = &x->lreq.knowledge[i];
        json_array_append_new(ks,
                              json_pack("{s:s,s:s,s:i}", "source", p->source ? p->source : "",
                                        "content", p->content ? p->content : "", "page", p->page));
    }
    o = json_pack("{s:s,s:b,s:o,s:I,s:I,s:s,s:I}", "message",
                  x->lreq.message ? x->lreq.message : "", "searched", x->lreq.knowledge_searched,
                  "knowledge", ks, "nmodel", (json_int_t)x->nmodel, "running_ms",
                  (json_int_t)((clock_mono_us() - x->t0_us) / 1000), "text", buf_ptr(&x->out->text),
                  "base", (json_int_t)x->seq_base);
    text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    return text;
}

/* The answer pauses: calls of its last step wait for a person. */
static void pause_answer(struct answer *x)
{
    x->out->paused = true;
    x->out->price = 0;
    x->out->stop_reason = NULL;
    x->out->state = state_text(x);
    if (!x->out->state)
        fail(x, "The run could not wait for its approvals.");
}

/* Run the calls of 'st' that can run now, here, and journal their ends; the model is then shown
 * the model's calls and one result each. When some wait for a person the answer pauses
 * instead. 'st' is cleaned up; false when the answer ends (paused). */
static bool run_step(struct answer *x, struct act_step *st)
{
    const struct agent_ask *q = x->q;
    struct act_job job;

    memset(&job, 0, sizeof(job));
    job.tenant = q->tenant;
    job.scopes = q->scopes;
    job.requested_by = q->requested_by;
    job.org_tier = q->org_tier;
    job.employee_id = q->emp->id;
    job.depth = q->depth;
    act_step_run_here(x->a->tool_run, x->a->tool_ud, st, &job);
    journal_ends(x, st);
    if (step_waits(st)) {
        pause_answer(x);
        act_step_cleanup(st);
        return false;
    }
    act_steps_add(&x->steps, x->ar, x->got, x->ngot, st);
    act_step_cleanup(st);
    return true;
}

/* The model asked for the 'x->ngot' calls of its last call (usage 'u'): prepared, journaled
 * (charging that model call), run here and shown to the model. False when the answer ends
 * (a repeated call stops it; a journal that cannot be written fails it; calls that wait for a
 * person pause it). */
static bool tool_step(struct answer *x, const struct llm_usage *u)
{
    int64_t price = ledger_price(u, x->q->tenant->mode);
    struct act_step st;
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
    return run_step(x, &st);
}

/* After a step's calls ran: whether the answer may make another model call (a limit stops it;
 * a run cancelled meanwhile fails it). */
static bool may_go_on(struct answer *x)
{
    const struct agent_ask *q = x->q;
    char why[160];
    const char *reason =
        act_limit(x->no_credits, x->nmodel, x->a->cfg->agent_max_steps, x->t0_us, why, sizeof(why));

    if (reason) {
        stop(x, reason, why);
        return false;
    }
    if (q->still_wanted && !q->still_wanted(q->ud)) {
        fail(x, "The run was cancelled while its tools ran.");
        return false;
    }
    return true;
}

/* Model calls, and the tools they ask for, until the model answers without calls, the engine
 * fails, a limit stops the answer, or calls wait for a person. */
static void run_steps(struct answer *x)
{
    const struct agent_ask *q = x->q;
    for (;;) {
        struct llm_usage u = {0, 0};

        if (!model_call(x, &u))
            return;
        x->nmodel++;
        if (x->ngot == 0 || x->offer.n == 0) {
            x->out->price = ledger_price(&u, q->tenant->mode);
            x->out->stop_reason = "completed";
            return;
        }
        if (!tool_step(x, &u) || !may_go_on(x))
            return;
    }
}

/* ---- Going on after the approvals ---- */

/* The approval of call 'id' in 'sv', or NULL. */
static const struct store_approval *approval_for(const struct store_run_saved *sv, const char *id)
{
    for (size_t i = 0; i < sv->napprovals; i++)
        if (sv->approvals[i].tool_call_id && strcmp(sv->approvals[i].tool_call_id, id) == 0)
            return &sv->approvals[i];
    return NULL;
}

/* Call 'c' as journal row 'row' has it: a waiting one decided as its approval says (none
 * found: expired), one a crash left running failed as "interrupted" (never run again), an
 * ended one as it ended (shown: its end is journaled). */
static void restore_call(struct answer *x, const struct store_run_saved *sv,
                         const struct store_tool_call *row, struct act_call *c)
{
    if (strcmp(row->status, "pending_approval") == 0) {
        const struct store_approval *p = approval_for(sv, row->id);
        act_call_decided(c, &x->offer, row, p ? p->status : "expired", p ? p->arguments : NULL,
                         p ? p->reason : NULL, x->ar);
    } else if (strcmp(row->status, "running") == 0) {
        struct store_tool_call cut = *row;
        cut.status = "failed";
        cut.error = "interrupted";
        cut.result = "{\"error\":\"interrupted\"}";
        act_call_restore(c, &x->offer, &cut, x->ar);
        c->completed_at = clock_now_ms();
    } else {
        act_call_restore(c, &x->offer, row, x->ar);
        c->shown = true;
    }
}

/* The turn's steps from its journal (its calls from seq x->seq_base on, by seq): each but the
 * last for the model (x->steps), the last into '*last' (and x->got). Returns how many calls. */
static size_t restore_steps(struct answer *x, const struct store_run_saved *sv,
                            struct act_step *last)
{
    size_t first = 0;

    memset(last, 0, sizeof(*last));
    while (first < sv->ncalls && sv->calls[first].seq < x->seq_base)
        first++;
    for (size_t i = first; i < sv->ncalls;) {
        size_t k = i;
        struct llm_tool_call *got;
        struct act_step st;
        while (k < sv->ncalls && sv->calls[k].step == sv->calls[i].step)
            k++;
        got = arena_calloc(x->ar, (k - i) * sizeof(*got));
        st.n = k - i;
        st.a = x->ar;
        st.calls = arena_calloc(x->ar, (k - i) * sizeof(*st.calls));
        for (size_t c = i; c < k; c++) {
            struct act_call *call = &st.calls[c - i];
            restore_call(x, sv, &sv->calls[c], call);
            got[c - i].id = call->model_id;
            got[c - i].name = call->model_name;
            got[c - i].arguments = arena_strdup(x->ar, sv->calls[c].arguments);
        }
        if (sv->calls[i].step + 1 > x->nmodel) /* a crash may have cut the turn after more */
            x->nmodel = (int)sv->calls[i].step + 1;
        if (k == sv->ncalls) {
            *last = st;
            x->got = got;
            x->ngot = k - i;
        } else {
            act_steps_add(&x->steps, x->ar, got, k - i, &st);
            act_step_cleanup(&st);
        }
        i = k;
    }
    return sv->ncalls - first;
}

/* The passages of the state's 'ks' into the request (strings from the answer's arena). */
static void restore_knowledge(struct answer *x, const json_t *ks)
{
    size_t n = json_array_size(ks), i;
    struct llm_passage *ps = arena_calloc(x->ar, (n + 1) * sizeof(*ps));
    json_t *k;

    json_array_foreach(ks, i, k)
    {
        const char *src = json_string_value(json_object_get(k, "source"));
        const char *content = json_string_value(json_object_get(k, "content"));
        ps[i].source = arena_strdup(x->ar, src ? src : "");
        ps[i].content = arena_strdup(x->ar, content ? content : "");
        ps[i].page = (int)json_integer_value(json_object_get(k, "page"));
    }
    x->lreq.knowledge = ps;
    x->lreq.nknowledge = n;
}

/* The state the run stored when it paused ('text') into the answer: its input, knowledge,
 * model calls, running time, what the model wrote, its first call. False: unreadable. */
static bool restore_state(struct answer *x, const char *text)
{
    json_t *st = text ? json_loads(text, 0, NULL) : NULL;
    const char *message = json_string_value(json_object_get(st, "message"));

    if (!message) {
        json_decref(st);
        return false;
    }
    x->lreq.message = arena_strdup(x->ar, message);
    x->lreq.knowledge_searched = json_is_true(json_object_get(st, "searched"));
    restore_knowledge(x, json_object_get(st, "knowledge"));
    x->nmodel = (int)json_integer_value(json_object_get(st, "nmodel"));
    x->t0_us -= json_integer_value(json_object_get(st, "running_ms")) * 1000;
    x->seq_base = json_integer_value(json_object_get(st, "base"));
    buf_appends(&x->out->text, json_string_value(json_object_get(st, "text"))
                                   ? json_string_value(json_object_get(st, "text"))
                                   : "");
    json_decref(st);
    return true;
}

/* Journal the calls of 'st' that will run now as running: approved ones, with the arguments
 * as approved, started now. */
static void journal_starts(struct answer *x, const struct act_step *st)
{
    struct store *s = store_pool_get(x->a->knowledge.pool);
    for (size_t i = 0; i < st->n; i++) {
        const struct act_call *c = &st->calls[i];
        struct store_tool_call row;
        if (c->ended || c->pending || c->shown)
            continue;
        row = call_row(x, c, 0); /* running, started now */
        if (store_tool_call_end(s, x->q->tenant, &row))
            log_error("agent: cannot journal the start of %s", c->id);
    }
    store_pool_put(x->a->knowledge.pool, s);
}

/*
 * The run's turn goes on after its approvals (q->resume): rebuilt from its journal and state,
 * the last step's decided calls run (or end rejected) and the model is shown them all; true
 * when the answer may then call the model again. A live organization left without credits
 * stops before that call.
 */
static bool resume(struct answer *x)
{
    const struct agent_ask *q = x->q;
    struct store_run_saved sv;
    struct store_org org;
    struct act_step last;
    struct store *s = store_pool_get(x->a->knowledge.pool);
    int rc = store_run_turn_load(s, q->tenant, q->task_run_id, q->workflow_run_id, q->step_index,
                                 x->ar, &sv);

    if (!rc && q->tenant->mode == STORE_LIVE && !store_org_get(s, q->tenant->org_id, &org))
        x->no_credits = org.credits <= 0;
    store_pool_put(x->a->knowledge.pool, s);
    if (rc || !restore_state(x, sv.turn_state)) {
        fail(x, "The run's journal could not be read.");
        return false;
    }
    x->out->ncalls = restore_steps(x, &sv, &last);
    if (!x->out->ncalls) {
        fail(x, "The run's journal holds no tool call to go on from.");
        return false;
    }
    journal_starts(x, &last);
    return run_step(x, &last) && may_go_on(x);
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

    /* The knowledge this employee may read that matches the input (a run that goes on after
     * its approvals has the passages it was given). */
    memset(&kn, 0, sizeof(kn));
    kn.a = &ar;
    if (!q->no_knowledge && !q->resume) {
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
    if (q->resume) {
        if (resume(&x))
            run_steps(&x);
    } else {
        /* a step's calls are numbered after those of its earlier attempts (cut by a crash) */
        if (x.offer.n && q->workflow_run_id) {
            s = store_pool_get(a->knowledge.pool);
            if (store_step_calls_next(s, q->workflow_run_id, q->step_index, &x.seq_base))
                fail(&x, "The run's tool calls could not be read.");
            store_pool_put(a->knowledge.pool, s);
        }
        if (!out->failed)
            run_steps(&x);
    }
    if (q->asked && !out->failed && out->price > 0) {
        /* a colleague's answer: its last model call is charged now, as a chat reply's */
        if (step_write(&x, NULL, 0, NULL, 0, out->price))
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
    free(ans->state);
    ans->state = NULL;
}
