/* SPDX-License-Identifier: MIT */
/*
 * agent: "an employee answers this input", the one path shared by chat, task runs and
 * workflow steps (contract §7 status, §9 engines, §11 knowledge). It decides which engine
 * answers (the configured one for live keys, the built-in one for test keys unless told
 * otherwise) and which knowledge the employee may read for the input. Who may be employed and
 * what an answer costs are the ledger's rules (src/ledger).
 *
 * Chat is asynchronous (its response is deferred or streamed) and uses the pieces; worker
 * threads (tasks, workflow steps) call agent_answer(), which waits for the search and the
 * engine on the calling thread. With the openai engine, a task run's answer and a workflow
 * `respond` step's are turns that call tools (contract §19): the employee's auto and approve
 * tools are offered, the model's calls are journaled under the run and run on the calling
 * thread, and the model is called again until it answers without calls or a limit stops it
 * (act/). A call that needs a person's approval pauses the turn (agent_answer.paused): the
 * caller stores the run as waiting, and once the approvals are decided the run's turn goes on
 * from its journal (agent_ask.resume), on any node. A colleague answering employees.ask is
 * such a turn too, owned by no run (agent_ask.asked), that cannot pause.
 */
#ifndef WORKFORCE_AGENT_H
#define WORKFORCE_AGENT_H

#include "../act/act.h"
#include "../core/buf.h"
#include "../core/config.h"
#include "../core/err.h"
#include "../core/mem.h"
#include "../knowledge/search.h"
#include "../llm/llm.h"
#include "../store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_KNOWLEDGE_PASSAGES 3      /* passages of knowledge an answer draws on */
#define AGENT_KNOWLEDGE_MIN_COSINE 0.35 /* vector matches weaker than this are not used */
#define AGENT_SEARCH_MAX 2000           /* bytes of an input searched in the knowledge */

/* The services an answer needs; filled once at start, read-only afterwards. */
struct integ_env;

struct agent_env {
    const struct config *cfg;
    struct knowledge_services knowledge;
    struct llm *llm;               /* the configured engine (live keys) */
    struct llm *llm_builtin;       /* test keys, unless WORKFORCE_TEST_LLM=provider */
    const struct integ_env *integ; /* workflow steps acting through a connection */
    /* The tools of answers on worker threads: what runs a call (on the calling thread; its
     * code lives above this module: toolrun/), and which tools of the catalog it can run,
     * both with 'tool_ud'. NULL: no tool is offered. */
    act_run_fn tool_run;
    act_available_fn tool_available;
    void *tool_ud;
};

/* The engine that answers for a key of 'mode'. */
struct llm *agent_engine(const struct agent_env *a, enum store_mode mode);

/* Start the search of the knowledge 'employee_id' may read for 'text' (cut to
 * AGENT_SEARCH_MAX bytes); 'done' is called exactly once, as knowledge_search_start(). */
void agent_knowledge_start(const struct agent_env *a, const struct store_tenant *t,
                           const char *employee_id, const char *text, struct store *s,
                           knowledge_search_fn done, void *ud);

/* The employee's part of an engine request: its model, name, role, persona and capabilities
 * (borrowed from 'emp'); the rest of 'req' is left as it is. */
void agent_request_employee(struct llm_request *req, const struct store_employee *emp);

/* The hits as the engine's passages, copied into 'a' ('*out' holds 'n' + 1 entries). */
struct llm_passage *agent_passages(struct arena *a, const struct store_hit *hits, size_t n);

/* ---- Answering on a worker thread ---- */

struct agent_ask {
    const struct store_tenant *tenant;
    const struct store_employee *emp;
    const char *message; /* the input */
    size_t result_max;   /* bytes of the answer kept; the rest is cut */
    bool no_knowledge;   /* the input alone is the matter (a workflow action other than respond) */
    bool json_output;    /* the answer must be one JSON object */
    /* Asked after the knowledge search, before the engine, and again before each model call
     * after a step of tools: false skips the engine (a run cancelled meanwhile), or ends the
     * answer as failed once tools ran. NULL: always go on. */
    bool (*still_wanted)(void *ud);
    void *ud;
    /* The turn whose tool calls these are (contract §19): a task run ('task_run_id') or a
     * workflow run's step ('workflow_run_id' at 'step_index'). Neither: no tool is offered
     * (nor with the builtin engine, which calls none). */
    const char *task_id; /* the task of 'task_run_id' (its approvals name it) */
    const char *task_run_id;
    const char *workflow_run_id;
    int64_t step_index;
    /* The run's turn waited for approvals and goes on (store_run_turn_load): its input, the
     * knowledge it was given and its steps come from its journal, its decided calls run (or
     * the model is told they were rejected), then the model is called again. 'message' is
     * unused then. */
    bool resume;
    uint32_t scopes;          /* the rights of whoever started the run (0: every scope) */
    const char *requested_by; /* that key (NULL: none recorded), named by its approvals */
    int org_tier;             /* the organization's tier (the tier gate of tasks.create) */
    int depth; /* the turn's level (struct act_job): its tools' calls are made at it */
    /* A colleague's answer to employees.ask (toolrun/): a turn that no run owns, whose auto
     * tools are offered all the same. Its calls are not journaled (the asking call is, and is
     * never run twice); every model call of it is charged here, the last one too ('price'
     * is then 0 and 'charged' the whole cost). */
    bool asked;
};

struct agent_answer {
    struct buf text;        /* the answer; agent_answer_cleanup() frees it */
    struct llm_usage usage; /* every model call's, added up */
    bool failed;            /* the engine failed: 'error' says why */
    bool skipped;           /* still_wanted() said no: the engine was not called */
    char error[256];
    /* What it costs a live key (0 for test keys; the ledger's price of each model call):
     * 'price' is the last model call's, not charged yet (the caller charges it with its
     * outcome; 0 when failed), 'charged' what the model calls that asked for tools were
     * charged when their calls were journaled. */
    int64_t price;
    int64_t charged;
    size_t ncalls;           /* tool calls journaled: work that must not be done twice */
    const char *stop_reason; /* completed, max_steps, repeated_call, timeout,
                                insufficient_credits; NULL when failed, skipped or paused */
    /* Calls wait for a person's decision (their tool's policy is approve): each was journaled
     * as pending_approval with its approval, the step's other calls ran, and the answer
     * stopped there ('price' 0: its model calls are charged). The caller stores the run as
     * waiting with 'state', the JSON text the turn goes on from (agent_answer_cleanup() frees
     * it); 'text' is not an answer yet. */
    bool paused;
    char *state;
};

/* Search, then ask the engine and wait for its whole answer on this thread. Returns 0 with
 * the outcome in '*out' (failed or not); 'out' must be cleaned up in every case. */
int agent_answer(const struct agent_env *a, const struct agent_ask *q, struct agent_answer *out);

/* Free what agent_answer() left in 'ans' (its text and state). */
void agent_answer_cleanup(struct agent_answer *ans);

#endif
