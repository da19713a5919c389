/* SPDX-License-Identifier: MIT */
/*
 * toolrun: what each tool of the catalog does when a turn calls it (contract §19): the
 * built-in tools over the organization's own data (knowledge.search, tasks.create, tasks.get,
 * workflows.run), each with the same rules as its route, for the tenant of the turn. It runs on
 * a thread of the tool pool (act/), and may block there.
 */
#ifndef WORKFORCE_TOOLRUN_H
#define WORKFORCE_TOOLRUN_H

#include "../act/act.h"
#include "../agent/agent.h"
#include "../core/buf.h"
#include "../core/err.h"
#include "../store/store.h"

#include <stdbool.h>

struct task_runner;

struct toolrun_env {
    const struct agent_env *agent; /* the knowledge search (its pool and encoder) */
    struct store_pool *pool;
    struct task_runner *tasks; /* woken once a task or a workflow run is queued */
};

/* An act_run_fn: run 'job' with 'ud' a struct toolrun_env. */
int toolrun_run(void *ud, const struct act_job *job, struct buf *result, struct err *e);

/* Whether a turn can call 'd' now: the built-in tools; an integration's only once their
 * operations run from a turn (not yet). An act_available_fn over a struct toolrun_env. */
bool toolrun_available(void *ud, const struct tools_def *d);

#endif
