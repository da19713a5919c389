/* SPDX-License-Identifier: MIT */
/*
 * runner: the employees carrying out their work (contract §10, §12). A pool of worker threads
 * takes the next unit of work from the store's durable queue (store_claim: a task run, by
 * priority, then due time, then creation, or a workflow run's next step, as a medium-priority
 * task; one claim per transaction, so nothing executes twice at once). A task run is carried
 * out here, through the reply engine with the knowledge the employee may read, and its
 * outcome stored (store_task_finish); a workflow step is handed to the step executor given at
 * start (workflows/run.c), which stores its own outcome (store_step_finish). Nothing is kept
 * only in memory: a task run in progress when the process dies is failed and queued again at
 * the next start, a step in flight runs again (store_nodes_recover, on any node once this one
 * is gone).
 *
 * A run (or a `respond` step) whose turn calls a tool that needs a person's approval waits
 * without a worker (contract §19: waiting_approval); once its approvals are decided the queue
 * gives it to a worker again ('resumed' claims) and its turn goes on from its journal. One
 * that had gone on when its process died waits again and goes on the same way.
 */
#ifndef WORKFORCE_TASKS_RUNNER_H
#define WORKFORCE_TASKS_RUNNER_H

#include <stdint.h>

#include <stdbool.h>

struct agent_env;
struct store_step_claim;
struct task_runner;

/* Carries out the claimed workflow step 'c' and ends it (store_step_finish), on the worker's
 * thread. */
typedef void (*task_step_fn)(struct task_runner *r, const struct agent_env *env,
                             const struct store_step_claim *c);

/* Start 'workers' threads over 'env' (read-only, outliving the runner); 'step' carries out
 * workflow steps (required: the queue is one). '*out' is set before the first thread starts
 * (NULL again when the start fails). */
int task_runner_start(const struct agent_env *env, unsigned workers, task_step_fn step,
                      struct task_runner **out);
/* True once the runner is stopping: an engine call that fails now may have been cut by it. */
bool task_runner_stopping(struct task_runner *r);
/* Work may be waiting (a task created or queued again, an employee back online); NULL ok. */
void task_runner_wake(struct task_runner *r);
/* Call 'fn'('ud') on the keeper's thread at each of its looks (every third of the lease), after
 * this node's heartbeat and the taking back of dead nodes' work: what else the node keeps (the
 * chat turns that can go on, approvals that expire). Set once, after start. */
void task_runner_on_keep(struct task_runner *r, void (*fn)(void *ud), void *ud);
/* Take no new runs (the ones under way go on); NULL is a no-op. */
void task_runner_quiesce(struct task_runner *r);
/* Wait for the runs under way, stop the threads, free 'r'; NULL is a no-op. A run whose engine
 * call fails while stopping (the outbound client was closed) is left in progress: the next
 * start queues it again. */
void task_runner_stop(struct task_runner *r);

/* The next occurrence after 'now' of the stored recurrence text (store_next_run_fn); 0: none. */
int64_t task_next_run(const char *recurring, int64_t now);
/* The rules the queue applies as the workers take work: task_next_run() and the ledger's hold
 * and balance gate (store_claim()). */
extern const struct store_queue_rules task_queue_rules;

#endif
