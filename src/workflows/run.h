/* SPDX-License-Identifier: MIT */
/*
 * run: carrying out one step of a workflow run (contract §12), on a worker of the shared
 * queue (tasks/runner.c claims it, store_claim). The step is read from the run's snapshot of
 * the definition; its condition and input are rendered against the run's data ({trigger,
 * steps: [{output}], workflow: {id}, run: {id}}); the action is done by the engine of the
 * key's mode (a language model asked for the action's output, checked, repaired once; or the
 * built-in engine doing it for real; a `respond` step with a language model is a turn that
 * calls the employee's tools, agent_answer()); the outcome is stored with store_step_finish().
 *
 * Failures: an engine that fails (the provider's error, a timeout) is tried again twice, after
 * WF_RETRY_MS[0] and WF_RETRY_MS[1], unless a tool call of the step had started (its work is
 * not done twice); everything else (an answer still invalid after its
 * repair, an employee gone, no credits, an input too long) fails the step and its run at once.
 */
#ifndef WORKFORCE_WORKFLOWS_RUN_H
#define WORKFORCE_WORKFLOWS_RUN_H

#include "../core/buf.h"
#include "../core/err.h"
#include "../core/mem.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct agent_env;
struct jw;
struct store;
struct store_step_claim;
struct store_tenant;
struct store_wf_run;
struct store_workflow;
struct task_runner;

#define WF_ATTEMPTS 3             /* one try and two retries */
#define WF_INPUT_MAX (256u << 10) /* bytes of a rendered input */
extern const int64_t WF_RETRY_MS[WF_ATTEMPTS - 1];

/* Carry out the claimed step 'c' and store its outcome (a task_step_fn). */
void wf_step_execute(struct task_runner *r, const struct agent_env *env,
                     const struct store_step_claim *c);

/* The data templates of step 'upto' of 'run' read: {trigger: <trigger data>, steps: [{output}
 * of the steps before it], workflow: {id}, run: {id}}. A new object. */
json_t *wf_run_data(const struct store_wf_run *run, size_t upto);

/* What started a run (queue.c). */
struct wf_trigger_in {
    const char *type;  /* manual | webhook | integration */
    const char *event; /* the trigger's event name, or NULL */
    json_t *data;      /* the trigger data: an object (borrowed) */
    int depth;         /* the level of its steps' turns (struct act_job; 0 unless a turn's
                          workflows.run started it) */
    /* Who starts it, whose rights its steps' tool calls have (false: no one, the workflow
     * creator's): the key and its scopes (0: every scope). */
    bool own_rights;
    const char *started_by;
    uint32_t scopes;
};

/*
 * Queue a run of 'wf' of tenant 't' started by 'in' (queue.c): the ledger's balance gate for a
 * live tenant (402 insufficient_credits, nothing stored), then the run stored, '*queued' the run
 * as queued (strings from 'a'). 404 workflow_not_found (param "id") when the workflow is gone.
 * The caller wakes the workers.
 */
int wf_run_queue(struct store *s, const struct store_tenant *t, const struct store_workflow *wf,
                 const struct wf_trigger_in *in, struct arena *a, struct store_wf_run *queued,
                 struct err *e);

/*
 * Queue a run of every enabled workflow of tenant 't' triggered by integration event 'event'
 * (queue.c), with 'data' (the payload, an object) as its trigger data, each through
 * wf_run_queue(): the ids of the runs queued are appended to 'runs' (a JSON array). A workflow
 * whose run is refused (no credits left) is logged and skipped. The caller wakes the workers.
 */
int wf_runs_for_event(struct store *s, const struct store_tenant *t, const char *event,
                      json_t *data, struct arena *a, json_t *runs, struct err *e);

/* The run record as the API shows it (contract §12), with its steps (each with its turn's
 * stop reason and tool calls, contract §19). */
void wf_run_write(struct jw *w, const struct store_wf_run *run);

#endif
