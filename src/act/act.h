/* SPDX-License-Identifier: MIT */
/*
 * act: the tools of a turn (contract §19), whoever runs the turn.
 *
 *  - The offer: which tools an employee's rules let the model see in a turn (available ones,
 *    policy auto; approve ones only where a turn can pause), each under its model name.
 *  - A step's calls, prepared: each call the model made mapped back to an offered tool, its
 *    arguments parsed and checked against the tool's table, and a call repeated too often
 *    noticed. A call that cannot run is an error result for the model, never a failed turn.
 *  - Running them: a small pool of threads (struct act_pool) runs the calls of a step side by
 *    side through the runner the process gives (act_run_fn: the tools' code lives above this
 *    module), each cut at ACT_RESULT_MAX bytes, and tells the owner when the last one ends;
 *    a turn on a thread that may block runs them there instead (act_step_run_here).
 *  - The limits of a turn (act_limit): model calls, running time, credits.
 * The owner (a chat turn, or an answer on a worker thread: agent/) journals the calls before
 * they start and their ends after, and calls the model again with the results.
 */
#ifndef WORKFORCE_ACT_H
#define WORKFORCE_ACT_H

#include "../core/buf.h"
#include "../core/err.h"
#include "../core/id.h"
#include "../core/mem.h"
#include "../llm/llm.h"
#include "../store/store.h"
#include "../tools/tools.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACT_RESULT_MAX (16u << 10) /* bytes of a result the model is given */
#define ACT_REPEAT_MAX 3           /* the same call (tool and arguments) this many times stops */
#define ACT_TURN_MS 300000         /* running time of a turn, approvals not counted */
#define ACT_CALL_MS 30000          /* a tool call that takes longer is a failed call */
#define ACT_CALLS_MAX 16           /* calls of one step that are run; more are refused */
#define ACT_DEPTH_MAX 3            /* levels of employees.ask and workflows.run under a turn */

/* ---- The offer ---- */

struct act_tool {
    const struct tools_def *def;
    enum tools_policy policy;
    char model_name[TOOLS_MODEL_NAME_MAX + 1];
};

struct act_offer {
    struct act_tool *v;
    size_t n;
    struct llm_tool *llm; /* the same 'n' tools as the engine shows them */
};

/* Whether tenant 't' can call tool 'd' now (its code exists, its integration is connected). */
typedef bool (*act_available_fn)(void *ud, const struct store_tenant *t, const struct tools_def *d);

/*
 * The tools 'rules' offer: every tool of the catalog, and of the 'nextra' tools 'extra' (the
 * tenant's MCP servers' tools, borrowed for the turn), whose policy is auto (and approve when
 * 'can_pause') and that 'available' says can be called, into 'out' (from 'a'). Two tools that
 * would show the model the same name: the second is left out (logged).
 */
void act_offer_build(const struct tools_rules *rules, bool can_pause, act_available_fn available,
                     void *ud, const struct store_tenant *tenant, const struct tools_def *extra,
                     size_t nextra, struct arena *a, struct act_offer *out);

/*
 * The tools of tenant 't''s enabled MCP servers whose last listing succeeded, as definitions
 * ("mcp.<server>.<tool>", the server's own input schema) from 'a', for act_offer_build()'s
 * 'extra' (none when no rule of 'rules' can name one: nothing is read). mcp_tools.c.
 */
void act_mcp_tools(struct store *s, const struct store_tenant *t, const struct tools_rules *rules,
                   struct arena *a, struct tools_def **out, size_t *n);

/* ---- A step's calls ---- */

/* What a runner is asked to do. */
struct act_job {
    const struct store_tenant *tenant;
    uint32_t scopes;          /* the rights of whoever started the turn (0: every scope) */
    const char *requested_by; /* the key that started it (NULL: none recorded): what it
                                 creates (a task, a workflow run) acts with its rights */
    int org_tier;             /* the organization's tier (the tier gate of tasks.create) */
    const char *employee_id;
    const struct tools_def *def;
    const struct tools_args *args; /* checked */
    json_t *arguments;             /* the same, as the object the model wrote */
    const char *call_id;           /* the journal's id of the call (call_...) */
    /* The level of the turn that made the call: 0 for a turn nothing started (a chat turn, a
     * task run, a run started by the API), one more under each employees.ask and
     * workflows.run (0 too for a job a caller cleared with memset). */
    int depth;
};

/* Run 'job' (on a pool thread; it may block up to ACT_CALL_MS): 0 with the result's JSON text
 * appended to 'result', or an error whose e->msg is what the model is told. */
typedef int (*act_run_fn)(void *ud, const struct act_job *job, struct buf *result, struct err *e);

struct act_call {
    char id[ID_MAX];             /* call_...: the journal's and the API's id */
    const char *model_id;        /* the model's id of the call */
    const char *model_name;      /* the name the model used */
    const struct act_tool *tool; /* NULL: not an offered tool */
    const char *arguments;       /* the text the model wrote */
    json_t *args;                /* parsed (owned), or NULL */
    struct tools_args bound;
    bool pending;  /* its tool's policy is approve: it waits for a decision, not run */
    bool rejected; /* a person rejected it (or the approval expired): ended, not run */
    bool shown;    /* the owner's: its end was shown (a stream's tool.completed) */
    /* Set by act_step_prepare() when the call cannot run, else by the run: */
    bool ended;
    bool failed;
    char *result; /* JSON text given to the model (malloc; freed by act_step_cleanup) */
    char *error;  /* a failed call's reason (malloc) */
    int64_t completed_at;
};

struct act_step {
    struct act_call *calls;
    size_t n;
    struct arena *a;
};

/*
 * Prepare the 'n' calls the model made ('calls', borrowed for this call) against 'offer':
 * each one gets an id, its tool and its checked arguments; one that names no offered tool, or
 * whose arguments are not an object its tool takes, is ended at once as failed with the
 * reason. 'seen' holds the calls (tool and arguments text) of the turn's earlier steps ('nseen'
 * of them): '*repeated' is set when a call has been made ACT_REPEAT_MAX times with this one.
 * Strings from 'a'.
 */
void act_step_prepare(const struct act_offer *offer, const struct llm_tool_call *calls, size_t n,
                      const char *const *seen, size_t nseen, struct arena *a, struct act_step *out,
                      bool *repeated);
void act_step_cleanup(struct act_step *st);

/*
 * Check 'args' against tool 'd' (its binding table, or an MCP tool's own schema): 0, or
 * ERR_INVALID with the reason in 'why' (of 'n' bytes). 'bound' (may be NULL) gets the bound
 * arguments of a catalog tool, from 'a'.
 */
int act_args_check(const struct tools_def *d, json_t *args, struct arena *a,
                   struct tools_args *bound, char *why, size_t n);

/*
 * A call of a step that paused, as it goes on after the decision on its approval (the journal's
 * 'row'): 'status' approved runs it with the arguments as approved ('arguments'), once checked
 * again against the tool as 'offer' has it now (a tool no longer offered fails it); rejected or
 * expired ends it as rejected, the model told {"error": "rejected", "reason": ...}; pending
 * leaves it waiting. Strings from 'a'.
 */
void act_call_decided(struct act_call *c, const struct act_offer *offer,
                      const struct store_tool_call *row, const char *status, const char *arguments,
                      const char *reason, struct arena *a);
/* A call of the journal that has ended ('row'), as the step it belongs to holds it. */
void act_call_restore(struct act_call *c, const struct act_offer *offer,
                      const struct store_tool_call *row, struct arena *a);
/* The tool of 'offer' named 'name' (the catalog's name), or NULL. */
const struct act_tool *act_offer_find(const struct act_offer *offer, const char *name);

/* ---- Running them ---- */

struct act_pool;

/* 'threads' threads that run calls with 'run' ('ud' is its); '*out' is the caller's
 * (act_pool_free). */
int act_pool_new(unsigned threads, act_run_fn run, void *ud, struct act_pool **out);
/* Stop the threads once the calls given to them have ended. NULL: nothing. */
void act_pool_free(struct act_pool *p);

/* Run 'fn'('ud') on a thread of the pool (work of a turn that may block: its journal). */
void act_pool_submit(struct act_pool *p, void (*fn)(void *ud), void *ud);

/* The step's calls have all ended (on the thread of the last one). */
typedef void (*act_step_done_fn)(void *ud, struct act_step *st);

/*
 * Run every call of 'st' not ended yet as 'job' says (its def, args and arguments are set per
 * call), side by side; 'done' runs once, when the last has ended (at once when none was left).
 * 'st' and 'job''s strings must live until then.
 */
void act_step_run(struct act_pool *p, struct act_step *st, const struct act_job *job,
                  act_step_done_fn done, void *ud);

/*
 * Run every call of 'st' not ended yet, one after the other, on this thread, with 'fn' ('ud'
 * is its), as the pool would (the starter's scopes checked, results cut): for a turn on a
 * thread that may block (a task run, a workflow step), which so never waits for the pool.
 */
void act_step_run_here(act_run_fn fn, void *ud, struct act_step *st, const struct act_job *job);

/* ---- What the model is shown of a turn's steps ---- */

/* A turn's steps so far, for its next model call (llm_request.steps), and the calls made (for
 * the repeated-call limit: act_step_prepare()'s 'seen'). Arrays from the owner's arena. */
struct act_steps {
    struct llm_message *v;
    size_t n, cap;
    const char **seen;
    size_t nseen, seen_cap;
};

/*
 * A step has ended: add the model's 'ngot' calls 'got' (an assistant message; borrowed for the
 * turn) and one 'tool' message per call of 'st' with its result (copied into 'a'), and note
 * the calls as made.
 */
void act_steps_add(struct act_steps *h, struct arena *a, const struct llm_tool_call *got,
                   size_t ngot, const struct act_step *st);

/* ---- Limits ---- */

/*
 * Whether a turn at level 'depth' (struct act_job) may start one more level (a colleague's
 * answer, a workflow run): 0 while the new level is at most ACT_DEPTH_MAX, else ERR_LIMIT with
 * max_depth in 'e' and a message the model can read.
 */
int act_depth_check(int depth, struct err *e);

/*
 * Whether a turn stops before its next model call: NULL to go on, else its stop reason
 * (insufficient_credits when 'no_credits', a live organization left at 0 by the last step's
 * charge; max_steps after 'nmodel' model calls of 'max_steps'; timeout ACT_TURN_MS after
 * 't0_us', clock_mono_us()), with 'why' (of 'n' bytes) the words the reply ends with.
 */
const char *act_limit(bool no_credits, int nmodel, int max_steps, int64_t t0_us, char *why,
                      size_t n);

/* A result as the model is given it (malloc; the caller frees it): 'text' (of 'len' bytes) as
 * it is up to ACT_RESULT_MAX bytes, else {"truncated": true, "text": <its first bytes, on a
 * UTF-8 boundary>, "note": ...}. */
char *act_result_cut(const char *text, size_t len);

/* A call's record as the API shows it: {id, tool, arguments, status, result, error,
 * approval_id, started_at, completed_at} (a new reference). */
json_t *act_call_json(const struct store_tool_call *c);

struct jw;
/* The 'n' calls 'calls' as a JSON array of their records (act_call_json) into writer 'w'. */
void act_calls_write(struct jw *w, const struct store_tool_call *calls, size_t n);

/* ---- Records (records.c) ---- */

/* Message 'm' as conversation reads show it, with those of the 'ncalls' calls 'calls' that are
 * its own (a user message: no work). */
void act_message_write(struct jw *w, const struct store_message *m,
                       const struct store_tool_call *calls, size_t ncalls);
/* Approval 'p' as the API shows it. */
/* Who asked for an approval, as its record names them: "user" for a person's id ("usr_..."),
 * "key" for a key's, "system" for none. */
const char *act_requester_type(const char *id);
void act_approval_write(struct jw *w, const struct store_approval *p);

#endif
