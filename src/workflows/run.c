/* SPDX-License-Identifier: MIT */
/*
 * run.c: one step of a workflow run, on a worker thread (see run.h). A store handle is
 * borrowed only for each store call, never across an engine's or the embedding pool's wait.
 */
#include "run.h"

#include "builtin.h"
#include "fields.h"
#include "template.h"
#include "workflow.h"

#include "../act/act.h"
#include "../agent/agent.h"
#include "../ledger/ledger.h"
#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../embed/pool.h"
#include "../integrations/operations.h"
#include "../json/json.h"
#include "../knowledge/search.h"
#include "../store/store.h"
#include "../tasks/runner.h"
#include "../tasks/task.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define OUTPUT_MAX (1u << 20)
#define SEARCH_LIMIT_DEFAULT 5
#define SUMMARY_DEFAULT 3

const int64_t WF_RETRY_MS[WF_ATTEMPTS - 1] = {500, 2000};

/* What doing the action came to. */
struct outcome {
    json_t *output; /* owned */
    bool failed;
    bool retry;      /* the engine failed: worth another attempt */
    int64_t credits; /* what the engine's calls cost, each priced as a chat reply */
    char error[512];
    /* A respond step's turn that called tools: what its tool steps were charged already, and
     * why it stopped (a static string, or NULL). */
    int64_t charged_before;
    const char *stop_reason;
    /* A respond step's turn whose calls wait for approvals: the step waits, with the state its
     * turn goes on from (JSON text, owned). */
    bool paused;
    char *state;
};

/* What a step needs while it runs. */
struct step_ctx {
    struct task_runner *runner;
    const struct agent_env *env;
    const struct store_step_claim *c;
    const struct store_wf_run *run;
    const struct wf_step *st;
    const json_t *data;
    struct store_employee emp;
    int org_tier; /* the organization's, as read for the step */
    struct arena *a;
};

static void failf(struct outcome *o, bool retry, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void failf(struct outcome *o, bool retry, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->error, sizeof(o->error), fmt, ap);
    va_end(ap);
    o->failed = true;
    o->retry = retry;
}

/* See run.h. */
json_t *wf_run_data(const struct store_wf_run *run, size_t upto)
{
    json_t *data = json_object(), *steps = json_array(), *trigger, *o;

    trigger = run->trigger_data ? json_loads(run->trigger_data, 0, NULL) : NULL;
    json_object_set_new(data, "trigger", trigger ? trigger : json_object());
    for (size_t i = 0; i < upto && i < run->nsteps; i++) {
        json_t *out =
            run->steps[i].output ? json_loads(run->steps[i].output, JSON_DECODE_ANY, NULL) : NULL;
        o = json_object();
        json_object_set_new(o, "output", out ? out : json_null());
        json_array_append_new(steps, o);
    }
    json_object_set_new(data, "steps", steps);
    o = json_object();
    json_object_set_new(o, "id", json_string(run->workflow_id));
    json_object_set_new(data, "workflow", o);
    o = json_object();
    json_object_set_new(o, "id", json_string(run->id));
    json_object_set_new(data, "run", o);
    return data;
}

/* The text option 'name' of the step rendered, in 'a'; NULL when the step has none. */
static const char *option_text(const struct step_ctx *x, const char *name)
{
    for (size_t i = 0; i < x->st->nopts; i++) {
        if (strcmp(x->st->opts[i].name, name) == 0) {
            struct buf b;
            const char *v;
            buf_init(&b, 64u << 10);
            tmpl_render(x->st->opts[i].t, x->data, false, &b);
            v = arena_strdup(x->a, buf_ptr(&b));
            buf_cleanup(&b);
            return v;
        }
    }
    return NULL;
}

/* ---- Asking an engine ---- */

struct still {
    const struct agent_env *env;
    const struct store_step_claim *c;
};

/* The run still wants this step: not cancelled, not deleted. */
static bool still_wanted(void *ud)
{
    struct still *w = ud;
    struct store_wf_run run;
    struct arena a;
    struct store *s;
    bool wanted;
    int rc;

    arena_init(&a);
    s = store_pool_get(w->env->knowledge.pool);
    rc = store_wf_run_get(s, &w->c->tenant, w->c->workflow_id, w->c->run_id, &a, &run);
    store_pool_put(w->env->knowledge.pool, s);
    wanted = !(rc == ERR_NOT_FOUND || (!rc && strcmp(run.status, "cancelled") == 0));
    arena_cleanup(&a);
    return wanted;
}

/*
 * Ask the step's employee 'message'; the answer's text in '*text' (the caller frees). With
 * 'tools' (a respond step), the answer is a turn that calls the employee's tools, journaled
 * under the run's step, with the rights of whoever started the run (or, when no one did, of
 * whoever created the workflow); its calls that need a person's approval pause it (o->paused, no
 * text), and a step claimed after they were decided goes on from its journal. A failed engine is
 * worth another attempt only when no tool call had started.
 */
static int ask(struct step_ctx *x, const char *message, bool no_knowledge, bool json_output,
               bool tools, struct outcome *o, char **text)
{
    struct still still = {x->env, x->c};
    struct agent_answer ans;
    struct agent_ask q;

    *text = NULL;
    memset(&q, 0, sizeof(q));
    q.tenant = &x->c->tenant;
    q.emp = &x->emp;
    q.message = message;
    q.result_max = OUTPUT_MAX;
    q.no_knowledge = no_knowledge;
    q.json_output = json_output;
    q.still_wanted = still_wanted;
    q.ud = &still;
    if (tools) {
        q.workflow_run_id = x->c->run_id;
        q.step_index = x->c->step;
        q.scopes = x->run->scopes; /* the rights of whoever started the run */
        q.requested_by = x->run->started_by;
        q.org_tier = x->org_tier;
        q.depth = (int)x->run->depth;
        q.resume = x->c->resumed;
    }
    agent_answer(x->env, &q, &ans);
    o->charged_before += ans.charged;
    if (!ans.skipped && !ans.failed) /* a repair is a second call, priced as one */
        o->credits += ans.price;
    if (ans.skipped)
        failf(o, false, "The run was cancelled before the engine was called.");
    else if (ans.failed)
        failf(o, ans.ncalls == 0, "The engine failed: %s", ans.error);
    else if (ans.paused) {
        o->paused = true;
        o->state = ans.state; /* taken */
        ans.state = NULL;
    } else
        *text = buf_take(&ans.text, NULL);
    o->stop_reason = ans.stop_reason;
    agent_answer_cleanup(&ans);
    return o->failed ? -1 : 0;
}

/* The label of 'labels' named 'name' (exactly, else ignoring case), or NULL. */
static const char *label_named(const json_t *labels, const char *name)
{
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < json_array_size(labels); i++) {
            const json_t *l = json_array_get(labels, i);
            const char *n = json_is_string(l) ? json_string_value(l)
                                              : json_string_value(json_object_get(l, "name"));
            if (n && (pass == 0 ? strcmp(n, name) == 0 : strcasecmp(n, name) == 0))
                return n;
        }
    }
    return NULL;
}

static bool field_fits(const char *type, const json_t *v)
{
    if (json_is_null(v))
        return true;
    if (strcmp(type, "number") == 0)
        return json_is_number(v);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(v);
    return json_is_string(v);
}

/*
 * The engine's answer 'text' checked against the action's output shape: '*out' the output, or
 * false with 'why' saying what is wrong. JSON answers may come inside a Markdown code fence.
 */
static bool check_answer(const struct wf_action *act, const json_t *options, const char *text,
                         json_t **out, char *why, size_t n)
{
    const char *open, *close;
    json_t *got;
    bool ok = true;

    *out = NULL;
    if (act->kind == WF_ACT_SUMMARIZE || act->kind == WF_ACT_RESPOND) {
        while (*text && isspace((unsigned char)*text))
            text++;
        if (!*text) {
            snprintf(why, n, "the answer is empty");
            return false;
        }
        *out = jo_string(text);
        return true;
    }
    open = strchr(text, '{');
    close = strrchr(text, '}');
    got = open && close && close > open
              ? json_loadb(open, (size_t)(close - open + 1), JSON_REJECT_DUPLICATES, NULL)
              : NULL;
    if (!json_is_object(got)) {
        snprintf(why, n, "the answer is not a JSON object");
        json_decref(got);
        return false;
    }
    *out = json_object();
    switch (act->kind) {
    case WF_ACT_CLASSIFY: {
        const json_t *score = json_object_get(got, "score");
        const char *label = json_string_value(json_object_get(got, "label"));
        const char *name = label ? label_named(json_object_get(options, "labels"), label) : NULL;
        if (!name) {
            snprintf(why, n, "\"label\" is not one of the labels");
            ok = false;
        } else if (!json_is_number(score) || json_number_value(score) < 0 ||
                   json_number_value(score) > 1) {
            snprintf(why, n, "\"score\" is not a number from 0 to 1");
            ok = false;
        } else {
            json_object_set_new(*out, "label", json_string(name));
            json_object_set_new(*out, "score", json_real(json_number_value(score)));
        }
        break;
    }
    case WF_ACT_EXTRACT: {
        const char *name;
        json_t *type;
        json_object_foreach((json_t *)json_object_get(options, "fields"), name, type)
        {
            json_t *v = json_object_get(got, name);
            if (!v)
                v = json_null();
            if (!field_fits(json_string_value(type), v)) {
                snprintf(why, n, "field \"%.80s\" is not a %s or null", name,
                         json_string_value(type));
                ok = false;
                break;
            }
            json_object_set(*out, name, v);
        }
        break;
    }
    case WF_ACT_DRAFT_EMAIL: {
        json_t *subject = json_object_get(got, "subject"), *body = json_object_get(got, "body");
        if (!json_is_string(subject) || !json_is_string(body)) {
            snprintf(why, n, "\"subject\" and \"body\" must be strings");
            ok = false;
        } else {
            json_object_set(*out, "subject", subject);
            json_object_set(*out, "body", body);
        }
        break;
    }
    default:
        break;
    }
    json_decref(got);
    if (!ok) {
        json_decref(*out);
        *out = NULL;
    }
    return ok;
}

/* A language model does the action: asked for its output shape, checked, repaired once. */
static void model_action(struct step_ctx *x, const char *input, struct outcome *o)
{
    const struct wf_action *act = x->st->action;
    char why[160] = "";
    struct buf msg;
    char *text = NULL;

    buf_init(&msg, WF_INPUT_MAX + 8192);
    buf_appendf(&msg, "Workflow action: %s\n%s", act->name, act->instruction);
    if (json_object_size(x->st->options) > 0) {
        char *opts = json_dumps(x->st->options, JSON_COMPACT);
        buf_appendf(&msg, "\nOptions (JSON): %s", opts);
        free(opts);
    }
    if (act->json_output)
        buf_appends(&msg, "\nAnswer with the JSON object only.");
    buf_appendf(&msg, "\n\nInput:\n%s", input);
    for (int attempt = 0; attempt < 2; attempt++) {
        struct buf again;
        const char *m = buf_ptr(&msg);
        buf_init(&again, WF_INPUT_MAX + 8192);
        if (attempt == 1) {
            buf_appendf(&again,
                        "Your previous answer could not be used: %s. Answer again, exactly "
                        "as asked.\n\n%s",
                        why, buf_ptr(&msg));
            m = buf_ptr(&again);
        }
        free(text);
        if (ask(x, m, true, act->json_output, false, o, &text) == 0 &&
            check_answer(act, x->st->options, text, &o->output, why, sizeof(why))) {
            buf_cleanup(&again);
            break;
        }
        buf_cleanup(&again);
        if (o->failed)
            break;
    }
    if (!o->failed && !o->output)
        failf(o, false, "The engine's answer is not a valid %s output, even after a repair: %s.",
              act->name, why);
    free(text);
    buf_cleanup(&msg);
}

/* The built-in engine does the action for real (contract §12). */
static void builtin_action(struct step_ctx *x, const char *input, struct outcome *o)
{
    const struct wf_action *act = x->st->action;
    struct embed_pool *pool = x->env->knowledge.embed;
    struct err e;
    int rc = 0;

    err_clear(&e);
    if (!pool && (act->kind == WF_ACT_CLASSIFY || act->kind == WF_ACT_SUMMARIZE)) {
        failf(o, false, "No embedding model is configured: %s needs one.", act->name);
        return;
    }
    switch (act->kind) {
    case WF_ACT_CLASSIFY:
        rc = wf_builtin_classify(pool, input, json_object_get(x->st->options, "labels"), &o->output,
                                 &e);
        break;
    case WF_ACT_SUMMARIZE: {
        json_t *m = json_object_get(x->st->options, "max_sentences");
        rc = wf_builtin_summarize(pool, input, m ? (int)json_integer_value(m) : SUMMARY_DEFAULT,
                                  &o->output, &e);
        break;
    }
    case WF_ACT_EXTRACT:
        o->output =
            wf_fields_extract(input, strlen(input), json_object_get(x->st->options, "fields"));
        break;
    case WF_ACT_DRAFT_EMAIL:
        o->output =
            wf_builtin_draft(input, option_text(x, "to"), option_text(x, "tone"), x->emp.name);
        break;
    default:
        break;
    }
    if (rc) {
        failf(o, true, "The embedding model failed: %s", e.msg[0] ? e.msg : err_name(rc));
        return;
    }
    /* The built-in engine did the work: priced as its chat reply would be. */
    {
        char *dumped = json_dumps(o->output, JSON_ENCODE_ANY);
        struct llm_usage u = {llm_count_words(input), dumped ? llm_count_words(dumped) : 0};
        o->credits = ledger_price(&u, x->c->tenant.mode);
        free(dumped);
    }
}

static void search_action(struct step_ctx *x, const char *input, struct outcome *o)
{
    const struct agent_env *env = x->env;
    struct store_search_filter f = {NULL, x->c->employee_id};
    char *tags_json = NULL;
    json_t *limit = json_object_get(x->st->options, "limit");
    json_t *tags = json_object_get(x->st->options, "tags");
    struct store_hit *hits = NULL;
    float *qvec = NULL;
    size_t dim = 0, n = 0;
    struct store *s;
    struct err e;
    struct buf b;
    struct jw w;
    int rc = 0;

    err_clear(&e);
    if (tags)
        f.tags_json = tags_json = json_dumps(tags, JSON_COMPACT);
    if (env->knowledge.embed && *input) {
        size_t len = strlen(input);
        rc = embed_pool_embed_all(env->knowledge.embed, &input, &len, 1, &qvec, &dim, &e);
    }
    if (!rc) {
        s = store_pool_get(env->knowledge.pool);
        rc = knowledge_search(&env->knowledge, s, &x->c->tenant, x->a, input, qvec, dim, &f,
                              limit ? (unsigned)json_integer_value(limit) : SEARCH_LIMIT_DEFAULT,
                              -1.0, &hits, &n, &e);
        if (!rc) {
            buf_init(&b, 16u << 20);
            jw_init(&w, &b);
            jw_obj(&w);
            jw_key(&w, "results");
            knowledge_write_hits(&w, hits, n);
            jw_obj_end(&w);
            o->output = json_loadb(buf_ptr(&b), buf_len(&b), 0, NULL);
            buf_cleanup(&b);
        }
        store_pool_put(env->knowledge.pool, s);
    }
    if (rc || !o->output)
        failf(o, true, "The knowledge search failed: %s", e.msg[0] ? e.msg : err_name(rc));
    free(qvec);
    free(tags_json);
}

static void task_action(struct step_ctx *x, const char *input, struct outcome *o)
{
    const char *title = option_text(x, "title");
    json_t *prio = json_object_get(x->st->options, "priority");
    json_t *hours = json_object_get(x->st->options, "due_in_hours");
    int64_t now = clock_now_ms();
    struct store_workflow wf;
    struct store_task k;
    char *id = arena_alloc(x->a, ID_MAX);
    struct store *s;
    struct buf b;
    struct jw w;
    int rc = 0;

    s = store_pool_get(x->env->knowledge.pool);
    if (!title || !*title) {
        rc = store_workflow_get(s, &x->c->tenant, x->c->workflow_id, x->a, &wf);
        title = rc ? "Workflow task" : wf.name;
        rc = 0;
    }
    memset(&k, 0, sizeof(k));
    k.employee_id = x->c->employee_id;
    k.title = title;
    k.description = input;
    k.priority = prio ? json_string_value(prio) : "medium";
    if (hours)
        k.due_at = now + (int64_t)llround(json_number_value(hours) * 3600000.0);
    rc = task_create(s, &x->c->tenant, &k, id, now);
    store_pool_put(x->env->knowledge.pool, s);
    if (rc) {
        failf(o, true, "The task could not be created (%s).", err_name(rc));
        return;
    }
    task_runner_wake(x->runner);
    buf_init(&b, 4u << 20);
    jw_init(&w, &b);
    task_write(&w, &k);
    o->output = json_loadb(buf_ptr(&b), buf_len(&b), 0, NULL);
    buf_cleanup(&b);
}

/* An operation through one of the tenant's connections (integrations/operations.c). */
static void integration_action(struct step_ctx *x, const char *input, struct outcome *o)
{
    json_t *opts = json_object();
    struct integ_result res;

    for (size_t i = 0; i < x->st->nopts; i++)
        json_object_set_new(opts, x->st->opts[i].name,
                            json_string(option_text(x, x->st->opts[i].name)));
    integ_operation(x->env->integ, &x->c->tenant, x->st->action->name, opts, input, &res);
    json_decref(opts);
    if (res.failed)
        failf(o, res.retry, "%s", res.error);
    else
        o->output = res.output;
}

/* Do the step's action on its rendered 'input'. */
static void do_action(struct step_ctx *x, const char *input, struct outcome *o)
{
    const struct wf_action *act = x->st->action;
    struct llm *engine = agent_engine(x->env, x->c->tenant.mode);
    bool engine_action = act->kind != WF_ACT_SEARCH_KNOWLEDGE && act->kind != WF_ACT_CREATE_TASK &&
                         act->kind != WF_ACT_INTEGRATION;
    struct store *s = store_pool_get(x->env->knowledge.pool);
    struct store_org org;
    struct err e;
    int rc = store_employee_get(s, &x->c->tenant, x->c->employee_id, x->a, &x->emp);
    bool gone = rc == ERR_NOT_FOUND;

    if (!rc)
        rc = store_org_get(s, x->c->tenant.org_id, &org);
    store_pool_put(x->env->knowledge.pool, s);
    if (gone) {
        failf(o, false, "The employee %s of this step no longer exists.", x->c->employee_id);
        return;
    }
    if (rc) {
        failf(o, true, "The store could not be read (%s).", err_name(rc));
        return;
    }
    x->org_tier = org.tier;
    /* The subscription and the balance may have changed since the workflow was checked (a
     * step that goes on after its approvals runs its approved calls first: its turn stops
     * before its next model call when the balance is 0). */
    err_clear(&e);
    if (ledger_gate(&org, x->c->tenant.mode, &x->emp, "employ", NULL,
                    engine_action && !x->c->resumed, &e)) {
        char why[512];
        failf(o, false, "%s", ledger_refusal(&e, why, sizeof(why)));
        return;
    }
    if (act->kind == WF_ACT_INTEGRATION) {
        integration_action(x, input, o);
    } else if (act->kind == WF_ACT_SEARCH_KNOWLEDGE) {
        search_action(x, input, o);
    } else if (act->kind == WF_ACT_CREATE_TASK) {
        task_action(x, input, o);
    } else if (act->kind == WF_ACT_RESPOND) {
        char *text = NULL;
        if (ask(x, input, false, false, true, o, &text) == 0 && !o->paused)
            o->output = jo_string(text);
        free(text);
    } else if (strcmp(llm_name(engine), "builtin") == 0) {
        builtin_action(x, input, o);
    } else {
        model_action(x, input, o);
    }
}

/* ---- The step ---- */

static void finish(const struct agent_env *env, const struct store_step_claim *c,
                   enum store_step_outcome outcome, const char *input, const struct outcome *o,
                   int64_t t0)
{
    struct store_step_finish fin;
    int64_t charged = 0;
    bool discarded = false;
    char *output = NULL;
    struct store *s;
    int rc;

    memset(&fin, 0, sizeof(fin));
    fin.claim = c;
    fin.outcome = outcome;
    fin.input = input;
    if (o->output)
        output = json_dumps(o->output, JSON_ENCODE_ANY | JSON_COMPACT);
    fin.output = output;
    fin.error = o->failed ? o->error : NULL;
    fin.credits = o->failed ? 0 : o->credits;
    fin.stop_reason = o->failed ? NULL : o->stop_reason;
    fin.charged_before = o->charged_before;
    fin.turn_state = o->state;
    fin.now = clock_now_ms();
    fin.retry_at =
        fin.now +
        (c->attempts >= 1 && c->attempts < WF_ATTEMPTS ? WF_RETRY_MS[c->attempts - 1] : 0);
    fin.response_ms = (clock_mono_us() - t0) / 1000;
    /* The outcome must not be lost: a busy store is tried again with a growing pause. */
    for (int attempt = 0;; attempt++) {
        s = store_pool_get(env->knowledge.pool);
        rc = store_step_finish(s, &fin, &charged, &discarded);
        store_pool_put(env->knowledge.pool, s);
        if (!rc || attempt >= 12)
            break;
        log_warn("workflows: cannot store the end of step %lld of run %s yet (%s); trying again",
                 (long long)c->step, c->run_id, err_name((enum err_code)rc));
        usleep((useconds_t)(attempt < 6 ? 50000 << attempt : 2000000));
    }
    if (rc)
        log_error("workflows: the end of step %lld of run %s is not stored; it runs again at the "
                  "next start",
                  (long long)c->step, c->run_id);
    else if (discarded)
        log_info("workflows: run %s is gone; step %lld's outcome is dropped", c->run_id,
                 (long long)c->step);
    else
        log_info("workflows: run %s step %lld %s (attempt %lld, %lld credits, %lld ms)", c->run_id,
                 (long long)c->step,
                 outcome == STORE_STEP_COMPLETED ? "completed"
                 : outcome == STORE_STEP_SKIPPED ? "skipped"
                 : outcome == STORE_STEP_RETRY   ? "failed, to be retried"
                 : outcome == STORE_STEP_WAITING ? "waits for approvals"
                                                 : "failed",
                 (long long)c->attempts, (long long)charged, (long long)fin.response_ms);
    free(output);
}

/* See run.h. */
void wf_step_execute(struct task_runner *r, const struct agent_env *env,
                     const struct store_step_claim *c)
{
    int64_t t0 = clock_mono_us();
    struct store_wf_run run;
    struct wf_def def;
    struct step_ctx x;
    struct outcome o;
    json_t *steps = NULL, *trigger = NULL, *data = NULL;
    enum store_step_outcome outcome = STORE_STEP_FAILED;
    struct buf input;
    struct arena a;
    struct store *s;
    bool rendered = false;
    struct err e;
    int rc;

    memset(&o, 0, sizeof(o));
    memset(&def, 0, sizeof(def));
    err_clear(&e);
    arena_init(&a);
    buf_init(&input, WF_INPUT_MAX);
    s = store_pool_get(env->knowledge.pool);
    rc = store_wf_run_get(s, &c->tenant, c->workflow_id, c->run_id, &a, &run);
    store_pool_put(env->knowledge.pool, s);
    if (rc) {
        failf(&o, rc != ERR_NOT_FOUND, "The run could not be read (%s).", err_name(rc));
        goto done;
    }
    steps = json_loads(run.definition, 0, NULL);
    trigger = json_pack("{s:s}", "type", "manual");
    if (!steps || wf_def_parse(trigger, steps, &def, &e) != 0 || (size_t)c->step >= def.nsteps) {
        failf(&o, false, "The run's definition cannot be read: %s", e.msg);
        goto done;
    }
    memset(&x, 0, sizeof(x));
    x.runner = r;
    x.env = env;
    x.c = c;
    x.run = &run;
    x.st = &def.steps[c->step];
    x.a = &a;
    data = wf_run_data(&run, (size_t)c->step);
    x.data = data;
    if (x.st->condition && tmpl_eval(x.st->condition, data, false) != TMPL_TRUE) {
        outcome = STORE_STEP_SKIPPED;
        goto done;
    }
    if (tmpl_render(x.st->input, data, false, &input) != 0) {
        failf(&o, false, "The rendered input is longer than %u bytes.", WF_INPUT_MAX);
        goto done;
    }
    rendered = true;
    do_action(&x, buf_ptr(&input), &o);
    if (!o.failed && !o.output && !o.paused)
        failf(&o, false, "The action gave no output.");
    if (!o.failed && o.paused)
        outcome = STORE_STEP_WAITING;
    else if (!o.failed)
        outcome = STORE_STEP_COMPLETED;
    else if (o.retry && task_runner_stopping(r)) {
        /* Cut by the stop (the outbound client closed): the next start runs it again. */
        log_info("workflows: run %s step %lld left for the next start", c->run_id,
                 (long long)c->step);
        goto out;
    } else if (o.retry && c->attempts < WF_ATTEMPTS)
        outcome = STORE_STEP_RETRY;
done:
    finish(env, c, outcome, rendered ? buf_ptr(&input) : NULL, &o, t0);
out:
    free(o.state);
    json_decref(o.output);
    json_decref(data);
    json_decref(steps);
    json_decref(trigger);
    wf_def_cleanup(&def);
    buf_cleanup(&input);
    arena_cleanup(&a);
}

/* ---- The run record ---- */

/* See run.h. */
void wf_run_write(struct jw *w, const struct store_wf_run *run)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, run->id);
    jw_key(w, "workflow_id");
    jw_str(w, run->workflow_id);
    jw_key(w, "status");
    jw_str(w, run->status);
    jw_key(w, "trigger");
    jw_obj(w);
    jw_key(w, "type");
    jw_str(w, run->trigger_type);
    jw_key(w, "event");
    jw_str(w, run->trigger_event);
    jw_key(w, "data");
    jw_raw(w, run->trigger_data, "{}");
    jw_obj_end(w);
    jw_key(w, "steps");
    jw_arr(w);
    for (size_t i = 0; i < run->nsteps; i++) {
        const struct store_run_step *x = &run->steps[i];
        jw_obj(w);
        jw_key(w, "index");
        jw_int(w, (int64_t)i);
        jw_key(w, "employee_id");
        jw_str(w, x->employee_id);
        jw_key(w, "action");
        jw_str(w, x->action);
        jw_key(w, "status");
        jw_str(w, x->status);
        jw_key(w, "input");
        jw_str(w, x->input);
        jw_key(w, "output");
        jw_raw(w, x->output, "null");
        jw_key(w, "error");
        jw_str(w, x->error);
        jw_key(w, "attempts");
        jw_int(w, x->attempts);
        jw_key(w, "credits_used");
        jw_int(w, x->credits_used);
        jw_key(w, "started_at");
        jw_time(w, x->started_at);
        jw_key(w, "completed_at");
        jw_time(w, x->completed_at);
        jw_key(w, "stop_reason");
        jw_str(w, x->stop_reason);
        jw_key(w, "tool_calls");
        act_calls_write(w, x->calls, x->ncalls);
        jw_obj_end(w);
    }
    jw_arr_end(w);
    jw_key(w, "credits_used");
    jw_int(w, run->credits_used);
    jw_key(w, "error");
    jw_str(w, run->error);
    jw_key(w, "created_at");
    jw_time(w, run->created_at);
    jw_key(w, "started_at");
    jw_time(w, run->started_at);
    jw_key(w, "completed_at");
    jw_time(w, run->completed_at);
    jw_obj_end(w);
}
