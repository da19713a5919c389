/* SPDX-License-Identifier: MIT */
/*
 * runner: the employees carrying out their tasks (contract §10). A pool of worker threads
 * takes runnable tasks from the store's durable queue (store_task_claim: priority, then due
 * time, then creation; one claim per transaction, so no run executes twice at once), carries
 * each out through the reply engine with the knowledge the employee may read, and stores the
 * outcome (store_task_finish). Nothing is kept only in memory: a run in progress when the
 * process dies is failed and queued again at the next start (store_task_recover).
 */
#ifndef WORKFORCE_TASKS_RUNNER_H
#define WORKFORCE_TASKS_RUNNER_H

#include <stdint.h>

struct agent_env;
struct task_runner;

/* Start 'workers' threads over 'env' (read-only, outliving the runner). */
int task_runner_start(const struct agent_env *env, unsigned workers, struct task_runner **out);
/* Work may be waiting (a task created or queued again, an employee back online); NULL ok. */
void task_runner_wake(struct task_runner *r);
/* Take no new runs (the ones under way go on); NULL is a no-op. */
void task_runner_quiesce(struct task_runner *r);
/* Wait for the runs under way, stop the threads, free 'r'; NULL is a no-op. A run whose engine
 * call fails while stopping (the outbound client was closed) is left in progress: the next
 * start queues it again. */
void task_runner_stop(struct task_runner *r);

/* The next occurrence after 'now' of the stored recurrence text (store_next_run_fn); 0: none. */
int64_t task_next_run(const char *recurring, int64_t now);

#endif
