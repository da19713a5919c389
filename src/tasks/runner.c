/* SPDX-License-Identifier: MIT */
/*
 * runner.c: the worker threads of tasks. Each loops: claim a run, carry it out, finish it.
 * With nothing runnable a worker sleeps until woken (an API call), the next recurring
 * occurrence, or at most POLL_MS. Carrying out a run: read the employee, search the knowledge
 * it may read (the embedding happens on the embedding pool; this thread waits), call the
 * engine and wait for its answer (with the openai engine, a turn that calls the employee's
 * tools on this thread: agent_answer), then price it and store the outcome. A store handle is
 * borrowed only for each store call, never across the engine's wait.
 *
 * Fair shares: the store serves organizations round-robin (store_claim). With two workers or
 * more, the last free one of this node claims only work of an organization that has none in
 * progress (store_claim_idle), as the document workers do: one organization's backlog holds
 * every worker but one, and another organization's task starts at once instead of after the
 * step in flight. The price is one worker fewer for an organization alone with a backlog.
 */
#include "runner.h"

#include "schedule.h"

#include "../agent/agent.h"
#include "../ledger/ledger.h"
#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_MS 2000
#define RESULT_MAX (1u << 20)

struct task_runner {
    const struct agent_env *env;
    task_step_fn step;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned seq;  /* bumped by every wake-up */
    unsigned busy; /* workers claiming or carrying out a unit (under mu) */
    unsigned size; /* the workers asked for (set before the first starts) */
    bool stop;
    unsigned n;
    pthread_t *threads;
    pthread_t keeper;   /* this node's heartbeat and the taking back of dead nodes' work */
    pthread_cond_t kcv; /* the keeper's: told only of the stop */
    bool has_keeper;
    void (*keep)(void *ud); /* task_runner_on_keep(), under 'mu' */
    void *keep_ud;
};

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The next occurrence of the stored rule after 'now'. */
int64_t task_next_run(const char *recurring, int64_t now)
{
    struct sched_recurring r;
    if (!recurring || sched_recurring_from_text(recurring, strlen(recurring), &r) != 0)
        return 0;
    return sched_next(&r, now);
}

/* See runner.h. */
const struct store_queue_rules task_queue_rules = {task_next_run, LEDGER_HOLD,
                                                   ledger_no_credits_error};

/* ---- One run ---- */

/* End run 'c' as 'ok' with 'result' or 'error', priced 'credits'; 'ans' is the engine's answer
 * when there was one (what its tool steps cost, why it stopped), else NULL. */
static void finish(struct task_runner *tr, const struct store_task_claim *c, bool ok,
                   const char *result, const char *error, int64_t credits,
                   const struct agent_answer *ans, int64_t t0_us)
{
    struct store *s = store_pool_get(tr->env->knowledge.pool);
    struct store_task_finish fin;
    int64_t charged = 0;
    bool discarded = false;
    int rc;

    memset(&fin, 0, sizeof(fin));
    fin.tenant = &c->task.tenant;
    fin.task_id = c->task.id;
    fin.run_id = c->run_id;
    fin.employee_id = c->task.employee_id;
    fin.ok = ok;
    fin.result = result;
    fin.error = error;
    fin.credits = credits;
    fin.reserved = c->reserved;
    fin.now = clock_now_ms();
    fin.response_ms = (clock_mono_us() - t0_us) / 1000;
    fin.stop_reason = ans && ok ? ans->stop_reason : NULL;
    fin.charged_before = ans ? ans->charged : 0;
    fin.turn_state = ans && ans->paused ? ans->state : NULL; /* it waits, it does not end */
    /* The outcome must not be lost: a store that fails (a lock held too long) is tried again,
     * with a growing pause, until it works or the server stops (then the next start queues
     * the task again). */
    for (int attempt = 0;; attempt++) {
        rc = store_task_finish(s, &fin, &charged, &discarded);
        if (!rc || task_runner_stopping(tr))
            break;
        log_warn("tasks: cannot store the end of run %s of task %s yet (%s); trying again",
                 c->run_id, c->task.id, err_name((enum err_code)rc));
        store_pool_put(tr->env->knowledge.pool, s);
        sleep_ms(attempt < 6 ? 50 << attempt : 2000);
        s = store_pool_get(tr->env->knowledge.pool);
    }
    if (rc)
        log_error("tasks: the end of run %s of task %s is not stored; it runs again at the next "
                  "start",
                  c->run_id, c->task.id);
    else if (discarded)
        log_info("tasks: run %s of task %s was cancelled; its outcome is discarded", c->run_id,
                 c->task.id);
    else if (fin.turn_state)
        log_info("tasks: run %s of task %s waits for approvals", c->run_id, c->task.id);
    else
        log_info("tasks: run %s of task %s %s (%lld credits, %lld ms)", c->run_id, c->task.id,
                 ok ? "completed" : "failed", (long long)(charged + fin.charged_before),
                 (long long)fin.response_ms);
    store_pool_put(tr->env->knowledge.pool, s);
}

struct still {
    struct task_runner *tr;
    const struct store_task_claim *c;
};

/* Cancelled or deleted meanwhile? Then the engine is not called at all. */
static bool still_wanted(void *ud)
{
    struct still *w = ud;
    const struct store_task *k = &w->c->task;
    struct store_task now_k;
    struct arena a;
    struct store *s;
    bool wanted;
    int rc;

    arena_init(&a);
    s = store_pool_get(w->tr->env->knowledge.pool);
    rc = store_task_get(s, &k->tenant, k->id, &a, &now_k);
    store_pool_put(w->tr->env->knowledge.pool, s);
    wanted = !(rc == ERR_NOT_FOUND ||
               (!rc && (!now_k.run_id || strcmp(now_k.run_id, w->c->run_id) != 0)));
    arena_cleanup(&a);
    return wanted;
}

/* What the employee is asked: the task's title, description and due time, into 'msg'. */
static void task_message(const struct store_task *k, struct buf *msg)
{
    buf_appendf(msg, "Task: %s", k->title);
    if (k->description && *k->description)
        buf_appendf(msg, "\n\n%s", k->description);
    if (k->due_at > 0) {
        char iso[32];
        buf_appendf(msg, "\n\nDue: %s", clock_fmt_iso(k->due_at, iso, sizeof(iso)));
    }
}

/* The employee answers run 'c' (its turn calls tools with the openai engine: journaled under
 * the run, with the rights of whoever created the task), and the outcome is stored. A turn whose
 * calls wait for approvals leaves the run waiting (this worker is free); once they are decided the
 * run is claimed again ('resumed') and its turn goes on from its journal. */
static void answer(struct task_runner *tr, const struct store_task_claim *c,
                   const struct store_employee *emp, const struct store_org *org, int64_t t0)
{
    const struct store_task *k = &c->task;
    struct agent_answer ans;
    struct agent_ask ask;
    struct still still = {tr, c};
    struct buf msg;

    buf_init(&msg, 64u << 10);
    task_message(k, &msg);
    memset(&ask, 0, sizeof(ask));
    ask.tenant = &k->tenant;
    ask.emp = emp;
    ask.message = buf_ptr(&msg);
    ask.result_max = RESULT_MAX;
    ask.still_wanted = still_wanted;
    ask.ud = &still;
    ask.task_id = k->id;
    ask.task_run_id = c->run_id;
    ask.scopes = k->scopes; /* the rights of whoever created the task */
    ask.requested_by = k->created_by;
    ask.org_tier = org->tier;
    ask.resume = c->resumed;
    agent_answer(tr->env, &ask, &ans);
    if (ans.skipped) {
        finish(tr, c, false, NULL, "Cancelled before the engine was called.", 0, NULL, t0);
    } else if (ans.failed && ans.ncalls == 0 && task_runner_stopping(tr)) {
        /* The engine call ended because the server is stopping: the run stays in progress
         * and is taken back once this node is gone (store_nodes_recover). A run whose tools
         * started ends failed instead: its calls are not made twice. */
        log_info("tasks: run %s of task %s left for the next start", c->run_id, k->id);
    } else if (ans.paused && !ans.failed) {
        finish(tr, c, false, NULL, NULL, 0, &ans, t0);
    } else {
        finish(tr, c, !ans.failed, ans.failed ? NULL : buf_ptr(&ans.text),
               ans.failed ? ans.error : NULL, ans.failed ? 0 : ans.price, &ans, t0);
    }
    agent_answer_cleanup(&ans);
    buf_cleanup(&msg);
}

static void carry_out(struct task_runner *tr, const struct store_task_claim *c)
{
    const struct agent_env *env = tr->env;
    const struct store_task *k = &c->task;
    struct store_employee emp;
    struct store_org org;
    struct err e;
    char why[512];
    struct arena a;
    struct store *s;
    int64_t t0 = clock_mono_us();
    int rc;

    if (c->no_credits && !c->resumed) { /* a resumed run runs its approved calls first */
        finish(tr, c, false, NULL, ledger_no_credits_error, 0, NULL, t0);
        return;
    }
    arena_init(&a);
    s = store_pool_get(env->knowledge.pool);
    rc = store_employee_get(s, &k->tenant, k->employee_id, &a, &emp);
    if (!rc)
        rc = store_org_get(s, k->tenant.org_id, &org);
    store_pool_put(env->knowledge.pool, s);
    if (rc) {
        finish(tr, c, false, NULL, "The employee of this task no longer exists.", 0, NULL, t0);
        arena_cleanup(&a);
        return;
    }
    /* The subscription may have changed since the task was given (the credit held at the
     * claim is the balance gate). */
    err_clear(&e);
    if (ledger_gate(&org, k->tenant.mode, &emp, "give tasks to", NULL, false, &e))
        finish(tr, c, false, NULL, ledger_refusal(&e, why, sizeof(why)), 0, NULL, t0);
    else
        answer(tr, c, &emp, &org, t0);
    arena_cleanup(&a);
}

/* ---- The workers ---- */

static void *worker(void *arg)
{
    struct task_runner *tr = arg;
    for (;;) {
        struct store_claim c;
        struct arena a;
        struct store *s;
        int64_t wake_at = 0, now = clock_now_ms();
        unsigned seen;
        bool last;
        int rc;

        pthread_mutex_lock(&tr->mu);
        seen = tr->seq;
        if (tr->stop) {
            pthread_mutex_unlock(&tr->mu);
            break;
        }
        /* counted busy from the claim on: two workers never both think the other is the last
         * free one */
        last = ++tr->busy == tr->size && tr->size > 1;
        pthread_mutex_unlock(&tr->mu);

        arena_init(&a);
        s = store_pool_get(tr->env->knowledge.pool);
        rc = last ? store_claim_idle(s, 0, &task_queue_rules, &a, &c, &wake_at)
                  : store_claim(s, 0, &task_queue_rules, &a, &c, &wake_at);
        store_pool_put(tr->env->knowledge.pool, s);
        if (rc == 0) {
            task_runner_wake(tr); /* there may be more: one more worker looks */
            if (c.is_step)
                tr->step(tr, tr->env, &c.step);
            else
                carry_out(tr, &c.task);
            arena_cleanup(&a);
            pthread_mutex_lock(&tr->mu);
            tr->busy--;
            pthread_mutex_unlock(&tr->mu);
            continue;
        }
        arena_cleanup(&a);
        pthread_mutex_lock(&tr->mu);
        tr->busy--;
        pthread_mutex_unlock(&tr->mu);
        if (rc != ERR_NOT_FOUND)
            log_error("tasks: the queue cannot be read (%s)", err_name((enum err_code)rc));
        {
            /* Sleep until woken, the next occurrence, or POLL_MS. */
            int64_t until = now + POLL_MS;
            struct timespec ts;
            if (wake_at > 0 && wake_at < until)
                until = wake_at;
            clock_gettime(CLOCK_REALTIME, &ts);
            {
                int64_t ms = until - now;
                ts.tv_sec += ms / 1000;
                ts.tv_nsec += (ms % 1000) * 1000000;
                if (ts.tv_nsec >= 1000000000) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000;
                }
            }
            pthread_mutex_lock(&tr->mu);
            while (!tr->stop && tr->seq == seen)
                if (pthread_cond_timedwait(&tr->cv, &tr->mu, &ts) != 0)
                    break;
            pthread_mutex_unlock(&tr->mu);
        }
    }
    return NULL;
}

/*
 * The keeper: every third of the lease, this node beats (store_node_beat) and takes back the
 * work of nodes whose heartbeat is older than the lease (store_nodes_recover); work taken back
 * may be runnable at once, so a worker looks. A node found declared dead (it stalled longer
 * than its lease, and its work was taken back) registers again: what it still finishes of the
 * work taken from it is discarded by the store (a run no longer its own).
 */
static void *keeper(void *arg)
{
    struct task_runner *tr = arg;
    int64_t lease_ms = (int64_t)tr->env->cfg->lease_seconds * 1000;
    for (;;) {
        struct store_recovery rec;
        void (*keep)(void *ud);
        void *keep_ud;
        struct timespec ts;
        int64_t now;
        struct store *s;
        int rc;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)(lease_ms / 3000);
        pthread_mutex_lock(&tr->mu);
        while (!tr->stop)
            if (pthread_cond_timedwait(&tr->kcv, &tr->mu, &ts) != 0)
                break;
        if (tr->stop) {
            pthread_mutex_unlock(&tr->mu);
            break;
        }
        pthread_mutex_unlock(&tr->mu);
        now = clock_now_ms();
        s = store_pool_get(tr->env->knowledge.pool);
        rc = store_node_beat(s, now);
        if (rc == ERR_NOT_FOUND) {
            log_error("nodes: node %s was declared dead by another node (silent for more than"
                      " %u s); it registers again",
                      store_node_id(), tr->env->cfg->lease_seconds);
            rc = store_node_start(s, now);
        }
        if (rc)
            log_error("nodes: cannot beat (%s)", err_name((enum err_code)rc));
        rc = store_nodes_recover(s, now, lease_ms, false, &rec);
        store_pool_put(tr->env->knowledge.pool, s);
        if (rc)
            log_error("nodes: cannot take back dead nodes' work (%s)", err_name((enum err_code)rc));
        else if (rec.nodes || rec.runs || rec.steps || rec.turns)
            log_warn("nodes: %zu dead nodes: %zu chats, %zu requests, %zu task runs, %zu"
                     " workflow steps and %zu turns taken back",
                     rec.nodes, rec.busy, rec.requests, rec.runs, rec.steps, rec.turns);
        if (!rc && (rec.runs || rec.steps))
            task_runner_wake(tr);
        pthread_mutex_lock(&tr->mu);
        keep = tr->keep;
        keep_ud = tr->keep_ud;
        pthread_mutex_unlock(&tr->mu);
        if (keep)
            keep(keep_ud);
    }
    return NULL;
}

/* See runner.h. */
void task_runner_on_keep(struct task_runner *r, void (*fn)(void *ud), void *ud)
{
    pthread_mutex_lock(&r->mu);
    r->keep = fn;
    r->keep_ud = ud;
    pthread_mutex_unlock(&r->mu);
}

/* Start the workers and the keeper (what an earlier process left in progress was taken back
 * at start: store_nodes_recover). '*out' is written before the first thread starts, so that
 * what those threads read through it (a tool's wake-up) is there. */
int task_runner_start(const struct agent_env *env, unsigned workers, task_step_fn step,
                      struct task_runner **out)
{
    struct task_runner *tr = xcalloc(1, sizeof(*tr));

    *out = tr;
    tr->env = env;
    tr->step = step;
    pthread_mutex_init(&tr->mu, NULL);
    pthread_cond_init(&tr->cv, NULL);
    pthread_cond_init(&tr->kcv, NULL);
    tr->threads = xcalloc(workers ? workers : 1, sizeof(*tr->threads));
    tr->size = workers ? workers : 1;
    for (unsigned i = 0; i < (workers ? workers : 1); i++) {
        if (pthread_create(&tr->threads[i], NULL, worker, tr) != 0)
            break;
        tr->n++;
    }
    tr->has_keeper = tr->n > 0 && pthread_create(&tr->keeper, NULL, keeper, tr) == 0;
    if (tr->n == 0 || !tr->has_keeper) {
        task_runner_stop(tr);
        *out = NULL;
        return ERR_INTERNAL;
    }
    *out = tr;
    return 0;
}

/* Wake one idle worker; one that finds a task wakes the next (worker()). */
void task_runner_wake(struct task_runner *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->seq++;
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* No new runs from now on; the ones under way go on (see task_runner_stop). */
void task_runner_quiesce(struct task_runner *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = true;
    pthread_cond_broadcast(&r->cv);
    pthread_cond_broadcast(&r->kcv);
    pthread_mutex_unlock(&r->mu);
}

bool task_runner_stopping(struct task_runner *r)
{
    bool stop;
    pthread_mutex_lock(&r->mu);
    stop = r->stop;
    pthread_mutex_unlock(&r->mu);
    return stop;
}

void task_runner_stop(struct task_runner *r)
{
    if (!r)
        return;
    task_runner_quiesce(r);
    for (unsigned i = 0; i < r->n; i++)
        pthread_join(r->threads[i], NULL);
    if (r->has_keeper)
        pthread_join(r->keeper, NULL);
    free(r->threads);
    pthread_cond_destroy(&r->kcv);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
