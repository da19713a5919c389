/* SPDX-License-Identifier: MIT */
/*
 * turn: one turn of a conversation with an employee (contract §8, §3 credits and tiers, §9
 * engines): the employee checked (404, the ledger's tier gate, 409 offline), the conversation
 * found or started, its history trimmed to the engine's budget, the user message stored with
 * a credit held for a live key (the ledger's 402 when there is none), the knowledge the
 * employee may read searched, the engine called, and the reply stored, charged and counted.
 *
 * Every door that chats goes through here: POST /v1/chat and /v1/chat/stream, the OpenAI-
 * compatible door and the MCP server's ask_employee. A door brings two things: a struct
 * turn_format that writes the answer in its wire format (the Message of /v1/chat, OpenAI's
 * chat.completion, ...), and a struct turn_out, its transport (a deferred HTTP answer or an
 * event stream). The turn knows no HTTP: it hands bytes and outcomes to turn_out.
 */
#ifndef WORKFORCE_TURN_H
#define WORKFORCE_TURN_H

#include "../act/act.h"
#include "../agent/agent.h"
#include "../core/buf.h"
#include "../core/config.h"
#include "../core/err.h"
#include "../core/mem.h"
#include "../llm/llm.h"
#include "../store/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TURN_HISTORY_MESSAGES 100 /* earlier messages of a conversation read for its history */

/* What a format sees of a reply. Strings are borrowed from the turn; 'content', 'credits',
 * 'usage' and 'sources' are set once the reply is stored (answer, completed). */
struct turn_view {
    const char *reply_id;
    const char *conversation_id;
    const char *employee_id;
    int64_t created_at; /* milliseconds */
    const char *content;
    int64_t credits;
    struct llm_usage usage;
    const char *sources; /* JSON array text, or NULL: none */
    unsigned seq;        /* stream: the format's own event counter */
    bool sent_delta;     /* stream: delta() was called */
    unsigned opts;       /* the format's options, from the turn */
    /* the work of the turn (contract §19): the tool calls as a JSON array text ("[]": none),
     * and why the turn stopped (completed, max_steps, repeated_call, timeout,
     * insufficient_credits) */
    const char *tool_calls;
    const char *stop_reason;
    const char *status; /* completed, failed (a turn whose engine failed after tools ran), or
                           requires_approval (a turn that paused) */
    const char *error;  /* a failed reply's error, else NULL */
};

/* How a reply is written on the wire. Each function appends to 'out' (a capped buffer). */
struct turn_format {
    void (*answer)(const struct turn_view *v, struct buf *out); /* blocking: the body */
    void (*opened)(struct turn_view *v, struct buf *out);       /* stream: first events */
    void (*delta)(struct turn_view *v, const char *text, size_t len, struct buf *out);
    void (*completed)(struct turn_view *v, struct buf *out); /* stream: the reply stored */
    void (*failed)(struct turn_view *v, const struct err *e, struct buf *out); /* stream */
    /* stream: a tool call started or ended ('event' tool.started or tool.completed, 'call'
     * its record as JSON text). NULL: the door shows no tool events. */
    void (*tool)(struct turn_view *v, const char *event, const char *call, struct buf *out);
    /* stream: approval.requested ('approval' its record as JSON text). NULL: none shown. */
    void (*approval)(struct turn_view *v, const char *approval, struct buf *out);
};

/*
 * Where a turn's answer goes: the door's transport. Once turn_start() has returned 0, the
 * turn answers only through these, from whichever thread ends it (the request's, the engine's,
 * the committer's), each exactly once where it says so.
 */
struct turn_out {
    /* The turn goes on without the caller: a stream sends its head, a blocking answer is
     * deferred. Called once, before any other. */
    void (*open)(void *ud);
    /* A stream's events, in order (a client that left is ignored). */
    void (*write)(void *ud, const char *p, size_t n);
    /* A stream's end; the turn's last call. */
    void (*close)(void *ud);
    /* The conversation 'id' exists from now on (the turn's first writes are stored): before
     * open() when they were stored first, else before end(). May be NULL. */
    void (*conversation)(void *ud, const char *id);
    /* A blocking turn's end; the turn's last call: rc 0 with the answer 'body' of 'len'
     * bytes (taken: free()), already recorded under the Idempotency-Key; or the error 'e'
     * (its Idempotency-Key, if any, is the door's to record). */
    void (*end)(void *ud, int rc, const struct err *e, char *body, size_t len);
    void *ud;
};

/* The services a turn uses; read-only once serving starts. */
struct turn_env {
    const struct config *cfg;
    struct store_pool *pool;
    struct store_committer *committer; /* group commit of replies, or NULL */
    const struct agent_env *agent;
    /* Tools (contract §19): the threads that run tool calls (NULL: no tool is offered), and
     * which tools of the catalog they can run. */
    struct act_pool *tools;
    act_available_fn runnable;
    void *runnable_ud;
    /* The format a message's kept events are written in (POST /v1/chat's), for turns that go
     * on without a client (NULL: their events are not kept). */
    const struct turn_format *format;
};

/* One turn, as a door asks for it. Strings must live as long as 'arena' (the request's). */
struct turn_req {
    struct store_tenant tenant;
    const struct store_org *org; /* the key's organization (tier, balance as read) */
    uint32_t concurrent;         /* requests of the tenant that may run at once */
    struct arena *arena;
    int64_t t0_us; /* when the request arrived (clock_mono_us) */
    const char *employee_id;
    const char *employee_param; /* the member errors about the employee name; NULL: employee_id */
    const char *message;
    const char *conversation_id;       /* NULL: a new conversation */
    const struct llm_message *history; /* new conversation: earlier turns, oldest first */
    size_t nhistory;
    const char *context; /* JSON text of an object, or NULL */
    bool stream;
    const struct turn_format *format;
    unsigned opts;        /* for the format */
    const char *idem_key; /* the Idempotency-Key the reply's answer is recorded under, or NULL */
    uint32_t scopes;      /* the rights of the key that started the turn (0: every scope) */
    bool can_pause;       /* the door answers a turn paused for approvals (POST /v1/chat) */
    const char *requested_by; /* the key that started the turn (approvals name it), or NULL */
};

/*
 * Start turn 't' (see above) on 's' (the caller's store handle, used during this call only).
 * Returns 0 with the turn under way (it ends through 'out', which must live until its last
 * call), or an error in 'e' with nothing stored and nothing of 'out' called.
 */
int turn_start(const struct turn_env *env, struct store *s, const struct turn_req *t,
               const struct turn_out *out, struct err *e);

/*
 * Go on with the turn of assistant message 'message_id' of tenant 't' on a thread of the tool
 * pool, if it can go on (its approvals are all decided, or the node that ran it died) and no
 * other node takes it first: from its journal, without a client; its end is stored and its
 * events kept.
 */
void turn_resume(const struct turn_env *env, const struct store_tenant *t, const char *message_id);

/* The keeper's look (every node, now and then): approvals past their time expire, and the
 * turns that can go on are resumed (turn_resume). Blocks on the store. */
void turn_keep(const struct turn_env *env);

/* The index of the first of the 'n' messages (oldest first) from which on the newest ones fit
 * a budget of 'budget' words. */
size_t turn_fit_history(const struct llm_message *m, size_t n, int64_t budget);

#endif
