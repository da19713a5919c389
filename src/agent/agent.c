/* SPDX-License-Identifier: MIT */
/*
 * agent.c: an employee answering an input (see agent.h): the engine choice, the knowledge
 * search of an input, and the synchronous answer that task runs and workflow steps wait for.
 *
 * DESIGN. agent_answer() runs on a worker thread that may block: the knowledge search may end
 * on the embedding pool's thread and the openai engine answers on the outbound client's
 * thread, so each hands its result back through a small condition (struct wait) that the
 * worker waits on. A store handle is borrowed only for each store call, never across a wait.
 */
#include "agent.h"

#include "../core/log.h"

#include <pthread.h>
#include <stdio.h>
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

struct reply {
    struct wait w;
    struct agent_answer *ans;
};

static void on_delta(void *ud, const char *text, size_t len)
{
    struct reply *r = ud;
    buf_append(&r->ans->text, text, len); /* past result_max the answer is cut */
}

static void on_done(void *ud, const struct llm_usage *u, const struct err *e)
{
    struct reply *r = ud;
    if (e) {
        r->ans->failed = true;
        snprintf(r->ans->error, sizeof(r->ans->error), "%s",
                 e->msg[0] ? e->msg : "the engine failed");
    } else {
        r->ans->usage = *u;
    }
    wait_signal(&r->w);
}

/* See agent.h. */
int agent_answer(const struct agent_env *a, const struct agent_ask *q, struct agent_answer *out)
{
    const struct store_employee *emp = q->emp;
    struct llm_request lreq;
    struct llm_sink sink = {0};
    struct knowledge kn;
    struct reply rep;
    struct arena ar;
    struct store *s;

    memset(out, 0, sizeof(*out));
    buf_init(&out->text, q->result_max);
    arena_init(&ar);

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
    memset(&lreq, 0, sizeof(lreq));
    agent_request_employee(&lreq, emp);
    lreq.message = q->message;
    lreq.knowledge = kn.ps;
    lreq.nknowledge = kn.n;
    lreq.knowledge_searched = kn.ok;
    lreq.json_output = q->json_output;
    wait_init(&rep.w);
    rep.ans = out;
    sink.delta = on_delta;
    sink.done = on_done;
    sink.ud = &rep;
    llm_call(agent_engine(a, q->tenant->mode), &lreq, &sink);
    wait_for(&rep.w);
    arena_cleanup(&ar);
    return 0;
}

/* See agent.h. */
void agent_answer_cleanup(struct agent_answer *ans)
{
    buf_cleanup(&ans->text);
}
