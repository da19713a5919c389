/* SPDX-License-Identifier: MIT */
/*
 * api: the handlers of the route table, one file per resource, and errors.c, the only place
 * where a struct err becomes a status and an error body.
 */
#ifndef WORKFORCE_API_H
#define WORKFORCE_API_H

#include "../agent/agent.h"
#include "../ledger/ledger.h"
#include "../toolrun/toolrun.h"
#include "../turn/turn.h"
#include "../router/router.h"

struct httpc;
struct oidc;
struct knowledge_worker;
struct task_runner;
struct ratelimit_redis;

/*
 * The process's services, built by main and read-only once serving starts. The router carries
 * a pointer to them (router_app.services) without reading it; handlers reach them with
 * api_svc(). 'router' is what the request pipeline itself uses (router_app.env).
 */
struct api_services {
    struct router_env router;
    struct store_committer *committer; /* group commit of chat replies, or NULL */
    struct cache *answers; /* answers of GET /v1/employees and /v1/employees/{id}, or NULL */
    int64_t started_ms;
    struct httpc *httpc;
    struct agent_env agent;           /* engines and knowledge search; agent.cfg is cfg */
    struct turn_env turn;             /* what chat turns use (router.cfg, pool, committer, agent) */
    struct knowledge_worker *kworker; /* processes uploaded documents */
    struct task_runner *tasks;        /* the workers that carry out tasks */
    struct toolrun_env toolrun;       /* what the tools of a turn do */
    struct act_pool *tools;           /* the threads that run turns' tool calls */
    int64_t audit_pruned_at;          /* the keeper's last deletion of old audit entries */
    struct oidc *oidc;             /* OpenID Connect sign-in's provider, or NULL (not configured) */
    struct ratelimit_redis *redis; /* the shared limits' Redis (readiness), or NULL */
};

/* The services of the request's application. */
static inline const struct api_services *api_svc(const struct router_req *r)
{
    return (const struct api_services *)r->app->services;
}

/* The vocabularies of the query parameters and bodies the handlers read (each the one list). */
extern const char *const api_employee_categories[]; /* employees.c */
extern const char *const api_employee_statuses[];   /* in the order of enum store_emp_status */
extern const char *const api_stats_periods[];

/* routes.c: THE route table. */
extern const struct route api_routes[];
extern const size_t api_nroutes;
/* The application of the route table, the error writer, 'svc' and its pipeline's services;
 * 'svc' must outlive the server. */
struct router_app api_app(const struct api_services *svc);

/* openai.c: the JSON Schema of a member of the completion request that its code checks by
 * hand (the sampling numbers, stop, stream_options, response_format; a new object), or NULL. */
json_t *api_openai_member_schema(const char *name);

/* knowledge.c: the JSON Schema of the query's `filters` (a new object). */
json_t *api_knowledge_filters_schema(void);

/* describe.c: every fact of the API the C holds (routes with their query parameters and body
 * schemas, errors with their descriptions, vocabularies, limits, the actions' options) as a
 * new JSON object; the caller owns it (json_decref). */
json_t *api_describe(void);
/* The JSON Schema of the request body bound by 'body' (NULL: none), shapes of its free-form
 * members included (a new object). */
json_t *api_body_schema(const struct jb_binding *body);
/* The JSON Schema of the value of query parameter 'q' (a new object). */
json_t *api_query_schema(const struct router_qparam *q);
/* The JSON Schema of member 'f' of 'body' (a new object). */
json_t *api_member_schema(const struct jb_binding *body, const struct jb_field *f);

/* errors.c */
void api_error_respond(struct router_req *r, const struct err *e);
unsigned api_error_status(const char *code); /* 500 for unknown codes */
/* The i-th code of the error table, its status in '*status' and its one description in '*doc'
 * (when not NULL; Markdown: `x` is code); NULL past the end. */
const char *api_error_code(size_t i, unsigned *status, const char **doc);
/* Append OpenAI's shape of 'e' ({"error":{message,type,param,code}}) to 'out' (stream events
 * of the OpenAI door; api_error_respond() shapes the door's responses itself). */
void api_error_openai_write(const struct err *e, struct buf *out);

/* The JSON bodies the handlers bind (the route table names them; see routes.c). */
extern const struct jb_binding api_chat_body, api_feedback_body, api_employees_create_body,
    api_employees_update_body, api_knowledge_query_body, api_tasks_create_body,
    api_tasks_update_body, api_workflows_create_body, api_workflows_update_body,
    api_workflows_run_body, api_integrations_connect_body, api_integrations_secret_body;
extern const struct jb_binding api_events_redeliver_body, api_webhook_endpoints_create_body,
    api_webhook_endpoints_update_body;
extern const struct jb_binding api_mcp_servers_create_body, api_mcp_servers_update_body;
extern const struct jb_binding api_no_body; /* {} or no body: the route takes no members */

/* workflows.c: queue a run of 'wf' for the request's tenant, started by 'type' ('event': the
 * trigger's event, or NULL) with 'data' (an object) as its trigger data, and wake the workers:
 * wf_run_queue() (the ledger's 402 for a live tenant without credits). '*queued' is the run as
 * queued (from r->arena). */
int api_workflow_queue(struct router_req *r, const struct store_workflow *wf, const char *type,
                       const char *event, json_t *data, struct store_wf_run *queued, struct err *e);

/* webhooks.c */
int api_events_list(struct router_req *r, struct err *e);
int api_events_get(struct router_req *r, struct err *e);
int api_events_redeliver(struct router_req *r, struct err *e);
int api_webhook_endpoints_create(struct router_req *r, struct err *e);
int api_webhook_endpoints_list(struct router_req *r, struct err *e);
int api_webhook_endpoints_get(struct router_req *r, struct err *e);
int api_webhook_endpoints_update(struct router_req *r, struct err *e);
int api_webhook_endpoints_delete(struct router_req *r, struct err *e);
int api_webhook_endpoints_rotate(struct router_req *r, struct err *e);
int api_webhook_endpoints_deliveries(struct router_req *r, struct err *e);

/* integrations.c */
int api_integrations_list(struct router_req *r, struct err *e);
int api_integrations_connect(struct router_req *r, struct err *e);
int api_integrations_authorize(struct router_req *r, struct err *e);
int api_integrations_callback(struct router_req *r, struct err *e);
int api_integrations_disconnect(struct router_req *r, struct err *e);
int api_integrations_events(struct router_req *r, struct err *e);
int api_integrations_slack_events(struct router_req *r, struct err *e);
int api_integrations_verify(struct router_req *r, struct err *e); /* router_app.verify */
int api_integrations_events_get(struct router_req *r, struct err *e);
int api_integrations_events_rotate(struct router_req *r, struct err *e);
int api_integrations_events_secret(struct router_req *r, struct err *e);

/* employees.c */
int api_employees_list(struct router_req *r, struct err *e);
int api_employees_get(struct router_req *r, struct err *e);
int api_employees_stats(struct router_req *r, struct err *e);
int api_employees_create(struct router_req *r, struct err *e);
int api_employees_update(struct router_req *r, struct err *e);
/* Read employee 'id' of the tenant into '*out' (NULL: just check): 404 employee_not_found
 * naming 'param' when there is none. */
int api_employee_find(struct router_req *r, const char *id, const char *param,
                      struct store_employee *out, struct err *e);

/* tools.c */
int api_tools_list(struct router_req *r, struct err *e);

/* mcp_servers.c: the organization's MCP servers (contract §19) */
int api_mcp_servers_create(struct router_req *r, struct err *e);
int api_mcp_servers_list(struct router_req *r, struct err *e);
int api_mcp_servers_get(struct router_req *r, struct err *e);
int api_mcp_servers_update(struct router_req *r, struct err *e);
int api_mcp_servers_delete(struct router_req *r, struct err *e);
int api_mcp_servers_refresh(struct router_req *r, struct err *e);
/* approvals.c */
extern const struct jb_binding api_approval_approve_body, api_approval_reject_body;
extern const char *const api_approval_statuses[];
int api_approvals_list(struct router_req *r, struct err *e);
int api_approvals_get(struct router_req *r, struct err *e);
int api_approvals_approve(struct router_req *r, struct err *e);
int api_approvals_reject(struct router_req *r, struct err *e);

/* ---- People, sessions, keys and the audit log (contract §20) ---- */
extern const struct jb_binding api_sessions_create_body, api_users_create_body,
    api_users_update_body, api_users_set_password_body, api_users_password_body,
    api_keys_create_body;
int api_sessions_create(struct router_req *r, struct err *e);
int api_sessions_current(struct router_req *r, struct err *e);
int api_sessions_delete(struct router_req *r, struct err *e);
int api_sessions_options(struct router_req *r, struct err *e);
int api_users_create(struct router_req *r, struct err *e);
int api_users_list(struct router_req *r, struct err *e);
int api_users_get(struct router_req *r, struct err *e);
int api_users_update(struct router_req *r, struct err *e);
int api_users_delete(struct router_req *r, struct err *e);
int api_users_set_password(struct router_req *r, struct err *e);
int api_users_me_password(struct router_req *r, struct err *e);
int api_keys_create(struct router_req *r, struct err *e);
int api_keys_list(struct router_req *r, struct err *e);
int api_keys_delete(struct router_req *r, struct err *e);
int api_audit_list(struct router_req *r, struct err *e);
/* billing.c (contract §21) */
extern const struct jb_binding api_billing_checkout_body;
int api_billing_packs(struct router_req *r, struct err *e);
int api_billing_checkout(struct router_req *r, struct err *e);
int api_billing_stripe_events(struct router_req *r, struct err *e);
/* The ROUTE_VERIFY step of POST /v1/billing/stripe/events: its Stripe-Signature. */
int api_billing_verify(struct router_req *r, struct err *e);
int api_credit_transactions(struct router_req *r, struct err *e);
int api_account_usage(struct router_req *r, struct err *e);
/* oidc.c: OpenID Connect sign-in (GET /v1/sessions/oidc/start and /callback). */
int api_oidc_start(struct router_req *r, struct err *e);
int api_oidc_callback(struct router_req *r, struct err *e);
/*
 * Sign user 'u' in on request 'r' by 'how' ("password", "oidc"): a new session (the entry
 * session.create written with it), the cookie set on the answer; '*out' the session and
 * 'csrf' its CSRF token. The caller answers.
 */
int api_session_open(struct router_req *r, const struct store_user *u, const char *how,
                     char csrf[ROUTER_CSRF_LEN], struct store_session *out, struct err *e);
/* 'email' in lower case (the request's arena). */
char *api_email_lower(struct arena *a, const char *email);
/* A user's object; an API key's (with its secret when 'secret' is not NULL); an audit entry's. */
void api_user_write(struct jw *w, const struct store_user *u);
void api_key_write(struct jw *w, const struct store_key *k, const char *secret);
void api_audit_write(struct jw *w, const struct store_audit *a);
/* A set-password link of 24 h for 'user_id' ({public_url}/console/#/set-password?token=...). */
int api_user_invite_link(struct store *s, const struct router_env *env, const char *user_id,
                         struct arena *a, const char **out);
int api_message_events(struct router_req *r, struct err *e);
/* The followers of message events end (at a stop, before the store closes): waits for them. */
void api_message_events_stop(void);

/* chat.c */
int api_chat(struct router_req *r, struct err *e);
int api_chat_stream(struct router_req *r, struct err *e);

#define API_CHAT_MESSAGE_MAX 32000      /* characters of a user message */
#define API_UPLOAD_FILE_MAX 52428800ull /* bytes of an uploaded knowledge file (413 beyond) */

/* Start chat turn 't' of request 'r' (chat.c: a turn of src/turn over the request); the
 * caller fills what the request says (employee, message, conversation, history, context,
 * stream, format: NULL for the Message of POST /v1/chat), this the tenant, organization and
 * request (tenant, org, concurrent, arena, t0_us, idem_key). 'conversation_header' (NULL:
 * none) is a response header naming the conversation. 0 with the answer pending, or an
 * error with nothing stored. */
/* The format of POST /v1/chat's Message and events (the one a message's kept events use). */
const struct turn_format *api_chat_format(void);
int api_chat_turn(struct router_req *r, struct turn_req *t, const char *conversation_header,
                  struct err *e);

/* openai.c: the OpenAI-compatible door (contract §16) */
int api_openai_models(struct router_req *r, struct err *e);
int api_openai_model(struct router_req *r, struct err *e);
int api_openai_completions(struct router_req *r, struct err *e);
extern const struct jb_binding api_openai_completion_body;

/* A chat turn's input read from OpenAI's `messages` (see api_openai_messages()). */
struct api_openai_input {
    const char *message;         /* the last user message */
    struct llm_message *history; /* the user, assistant and tool messages before it, oldest
                                    first */
    size_t nhistory;
    const char *system; /* system and developer messages joined by blank lines, or NULL */
    /* a follow-up (the messages end with tool results): the results of the calls of the last
     * assistant message, in order, and the member naming that message's calls; none: 0 */
    struct turn_answer *answers;
    size_t nanswers;
    const char *answers_param;
};
/* Map OpenAI's 'messages' into '*out' (pure; strings borrowed from 'messages' or in 'a'):
 * ERR_INVALID with 'e' naming the member at fault. */
int api_openai_messages(json_t *messages, struct arena *a, struct api_openai_input *out,
                        struct err *e);

/* mcp.c: the MCP server (contract §16) */
int api_mcp(struct router_req *r, struct err *e);

#define API_MCP_PARSE_ERROR (-32700)
#define API_MCP_INVALID_REQUEST (-32600)
#define API_MCP_METHOD_NOT_FOUND (-32601)
#define API_MCP_INVALID_PARAMS (-32602)

extern const char *const api_mcp_versions[]; /* the protocol versions we speak, newest first */
/* 'v' as one of api_mcp_versions, or NULL when we do not speak it. */
const char *api_mcp_version_find(const char *v);

enum api_mcp_kind { API_MCP_REQUEST, API_MCP_NOTIFICATION, API_MCP_RESPONSE, API_MCP_BATCH };

/* One POST body of the MCP transport, as api_mcp_parse() read it. */
struct api_mcp_msg {
    enum api_mcp_kind kind;
    json_t *root;       /* the parsed document: the caller releases it (json_decref) */
    const json_t *id;   /* request, response: a string or an integer (borrowed); else NULL */
    const char *method; /* request, notification (borrowed) */
    json_t *params;     /* request, notification: an object or NULL (borrowed) */
    int code;           /* on failure: API_MCP_PARSE_ERROR or API_MCP_INVALID_REQUEST */
};
/* Parse and check a JSON-RPC 2.0 message (pure): 0, or ERR_INVALID with out->code and e->msg. */
int api_mcp_parse(const char *buf, size_t len, struct api_mcp_msg *out, struct err *e);

struct api_mcp_tool;                                            /* a row of the tool table */
const struct api_mcp_tool *api_mcp_tool_find(const char *name); /* NULL: no such tool */
const struct api_mcp_tool *api_mcp_tool_at(size_t i);           /* NULL past the end */
const char *api_mcp_tool_name(const struct api_mcp_tool *t);
const struct route *api_mcp_tool_route(const struct api_mcp_tool *t); /* the REST route */

/* A tool call's arguments as the REST call it mirrors. */
struct api_mcp_rest {
    json_t *body; /* POST routes: a new object the caller owns; else NULL */
    const char *params[ROUTER_MAX_PARAMS];
    const char *qname[ROUTER_MAX_QUERY];
    const char *qvalue[ROUTER_MAX_QUERY];
    size_t nquery;
};
/* Bind tool arguments 'args' (an object or NULL) into '*out' (pure; strings in 'a'):
 * ERR_INVALID naming the unknown, missing or mistyped argument. */
int api_mcp_args_bind(const struct api_mcp_tool *t, json_t *args, struct arena *a,
                      struct api_mcp_rest *out, struct err *e);

/* conversations.c */
int api_conversations_list(struct router_req *r, struct err *e);
int api_conversations_get(struct router_req *r, struct err *e);
int api_conversations_messages(struct router_req *r, struct err *e);
int api_conversations_delete(struct router_req *r, struct err *e);
int api_conversations_message(struct router_req *r, struct err *e);
int api_feedback_create(struct router_req *r, struct err *e);

/* knowledge.c */
int api_knowledge_sweep_uploads(const char *dir); /* at start: unfinished uploads removed */
int api_knowledge_upload_begin(struct router_req *r, struct err *e);
int api_knowledge_upload(struct router_req *r, struct err *e);
int api_knowledge_list(struct router_req *r, struct err *e);
int api_knowledge_get(struct router_req *r, struct err *e);
int api_knowledge_delete(struct router_req *r, struct err *e);
int api_knowledge_query(struct router_req *r, struct err *e);

/* tasks.c */
int api_tasks_create(struct router_req *r, struct err *e);
int api_tasks_list(struct router_req *r, struct err *e);
int api_tasks_get(struct router_req *r, struct err *e);
int api_tasks_update(struct router_req *r, struct err *e);
int api_tasks_delete(struct router_req *r, struct err *e);
int api_tasks_runs(struct router_req *r, struct err *e);

/* workflows.c */
int api_workflows_create(struct router_req *r, struct err *e);
int api_workflows_list(struct router_req *r, struct err *e);
int api_workflows_get(struct router_req *r, struct err *e);
int api_workflows_update(struct router_req *r, struct err *e);
int api_workflows_delete(struct router_req *r, struct err *e);
int api_workflows_rotate_webhook(struct router_req *r, struct err *e);
int api_workflows_run(struct router_req *r, struct err *e);
int api_workflows_runs(struct router_req *r, struct err *e);
int api_workflows_run_get(struct router_req *r, struct err *e);
int api_workflows_run_cancel(struct router_req *r, struct err *e);
int api_hooks_receive(struct router_req *r, struct err *e);
/* account.c */
int api_account_get(struct router_req *r, struct err *e);

/* ops.c */
int api_healthz(struct router_req *r, struct err *e);
int api_readyz(struct router_req *r, struct err *e);
int api_metrics(struct router_req *r, struct err *e);
int api_openapi(struct router_req *r, struct err *e);
int api_docs_error(struct router_req *r, struct err *e);

/* console.c */
/* The security headers of every page (Content-Security-Policy, nosniff, no referrer). */
void api_page_headers(struct router_req *r);
int api_console_redirect(struct router_req *r, struct err *e);
int api_console_index(struct router_req *r, struct err *e);
int api_console_file(struct router_req *r, struct err *e);
int api_docs(struct router_req *r, struct err *e);

/* catalog.c: the employees every new organization starts with. */
extern const struct store_employee api_catalog[];
extern const size_t api_catalog_count;

#endif
