/* SPDX-License-Identifier: MIT */
/*
 * toolrun: what each tool of the catalog does when a turn calls it (contract §19): the
 * built-in tools over the organization's own data (knowledge.search, tasks.create, tasks.get,
 * workflows.run), each with the same rules as its route, employees.ask (a colleague answers,
 * agent_answer()), and the integration tools through the tenant's connection
 * (integrations/tool_call.c), for the tenant of the turn. It runs on a thread of the tool pool
 * (act/), or on the worker of a run's turn, and may block there. employees.ask and
 * workflows.run start turns one level below the calling one (struct act_job's depth); past
 * ACT_DEPTH_MAX levels they are refused with max_depth, and do nothing.
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
struct integ_env;

struct toolrun_env {
    const struct agent_env *agent; /* the knowledge search (its pool and encoder) */
    struct store_pool *pool;
    struct task_runner *tasks;     /* woken once a task or a workflow run is queued */
    const struct integ_env *integ; /* the integration tools, through the tenant's connection */
};

/* An act_run_fn: run 'job' with 'ud' a struct toolrun_env. */
int toolrun_run(void *ud, const struct act_job *job, struct buf *result, struct err *e);

/* Whether tenant 't' can call 'd' now: a built-in tool, or an integration tool while the
 * tenant's connection to its provider is connected. An act_available_fn over a struct
 * toolrun_env. */
bool toolrun_available(void *ud, const struct store_tenant *t, const struct tools_def *d);

#endif
