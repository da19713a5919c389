/* SPDX-License-Identifier: MIT */
/*
 * routes.c: THE route table (Redis commands.def style). Method, pattern, handler, scope,
 * flags, the query parameters the route accepts and, for uploads, the hook that sets up the
 * streamed body. Anything not listed here is 404, and a known path with another method is 405.
 * Routes of the contract that are not built yet are absent (404 route_not_found) and marked
 * planned in docs/openapi.json. `workforce routes` prints this table with each route's bound
 * JSON members (describe.c), and the OpenAPI check fails when the document disagrees.
 *
 * The router (src/router) serves this table without knowing it: api_app() hands it over with
 * the error writer and the services at start.
 */
#include "api.h"

#include "../tasks/task.h"
#include "../webhooks/webhooks.h"

/* ---- Query parameters (contract §6: page sizes and cursors; each list's filters) ---- */

#define LIMIT(def)                                                                                 \
    {                                                                                              \
        "limit", ROUTER_Q_LIMIT, 1, 100, def, NULL                                                 \
    }
#define TEXT(name)                                                                                 \
    {                                                                                              \
        name, ROUTER_Q_TEXT, 0, 0, 0, NULL                                                         \
    }
#define ENUM(name, values)                                                                         \
    {                                                                                              \
        name, ROUTER_Q_ENUM, 0, 0, -1, values                                                      \
    }
#define ENUM_DEFAULT(name, values, i)                                                              \
    {                                                                                              \
        name, ROUTER_Q_ENUM, 0, 0, i, values                                                       \
    }
#define CURSOR(name)                                                                               \
    {                                                                                              \
        name, ROUTER_Q_CURSOR, 0, 0, 0, NULL                                                       \
    }
#define QEND                                                                                       \
    {                                                                                              \
        NULL, ROUTER_Q_TEXT, 0, 0, 0, NULL                                                         \
    }

static const struct router_qparam q_employees[] = {ENUM("category", api_employee_categories),
                                                   ENUM("status", api_employee_statuses), LIMIT(50),
                                                   CURSOR("after"), QEND};
static const struct router_qparam q_stats[] = {ENUM_DEFAULT("period", api_stats_periods, 1), QEND};
static const struct router_qparam q_conversations[] = {TEXT("employee_id"), LIMIT(20),
                                                       CURSOR("before"), QEND};
static const struct router_qparam q_list[] = {LIMIT(50), CURSOR("before"), QEND};
static const struct router_qparam q_wf_runs[] = {LIMIT(20), CURSOR("before"), QEND};
static const struct router_qparam q_documents[] = {TEXT("tag"), TEXT("employee_id"), LIMIT(50),
                                                   CURSOR("before"), QEND};
static const struct router_qparam q_tasks[] = {TEXT("employee_id"),
                                               ENUM("status", task_statuses),
                                               ENUM("priority", task_priorities),
                                               LIMIT(50),
                                               CURSOR("before"),
                                               QEND};
static const struct router_qparam q_events[] = {ENUM("type", WEBHOOKS_EVENT_TYPES), LIMIT(50),
                                                CURSOR("before"), QEND};
static const struct router_qparam q_deliveries[] = {TEXT("event_id"), LIMIT(50), CURSOR("before"),
                                                    QEND};
static const struct router_qparam q_approvals[] = {
    ENUM("status", api_approval_statuses), TEXT("employee_id"), LIMIT(50), CURSOR("before"), QEND};
static const struct router_qparam q_audit[] = {TEXT("actor_id"),
                                               TEXT("action"),
                                               TEXT("target_id"),
                                               TEXT("since"),
                                               LIMIT(50),
                                               CURSOR("before"),
                                               QEND};
static const struct router_qparam q_credit_tx[] = {TEXT("reason"), TEXT("since"), LIMIT(50),
                                                   CURSOR("before"), QEND};
static const struct router_qparam q_usage[] = {TEXT("period"), TEXT("group_by"), QEND};
static const struct router_qparam q_authorize[] = {TEXT("state"), TEXT("confirm"), QEND};
static const struct router_qparam q_callback[] = {TEXT("code"), TEXT("state"), TEXT("error"),
                                                  TEXT("error_description"), QEND};
/* OpenID Connect's callback: RFC 9207's iss besides OAuth's */
static const struct router_qparam q_oidc_callback[] = {
    TEXT("code"), TEXT("state"), TEXT("iss"), TEXT("error"), TEXT("error_description"), QEND};

#define CONV AUTH_SCOPE_CONVERSATIONS
#define KNOW AUTH_SCOPE_KNOWLEDGE
#define TASK AUTH_SCOPE_TASKS
#define FLOW AUTH_SCOPE_WORKFLOWS
#define INTG AUTH_SCOPE_INTEGRATIONS
#define HOOK AUTH_SCOPE_WEBHOOKS
#define TOOL AUTH_SCOPE_TOOLS
#define APRV AUTH_SCOPE_APPROVALS
#define VIEWER STORE_ROLE_VIEWER
#define ADMIN STORE_ROLE_ADMIN
#define SESSION ROUTE_SESSION_ONLY

const struct route api_routes[] = {
    {"GET", "/healthz", api_healthz, 0, ROUTE_PUBLIC, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/readyz", api_readyz, 0, ROUTE_PUBLIC, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/metrics", api_metrics, 0, ROUTE_PUBLIC, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/openapi.json", api_openapi, 0, ROUTE_PUBLIC, NULL, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"GET", "/docs/errors/{code}", api_docs_error, 0, ROUTE_PUBLIC, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/docs", api_docs, 0, ROUTE_PUBLIC | ROUTE_LOOSE_QUERY, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/", api_console_redirect, 0, ROUTE_PUBLIC | ROUTE_LOOSE_QUERY, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/console", api_console_redirect, 0, ROUTE_PUBLIC | ROUTE_LOOSE_QUERY, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/console/", api_console_index, 0, ROUTE_PUBLIC | ROUTE_LOOSE_QUERY, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/console/{file}", api_console_file, 0, ROUTE_PUBLIC | ROUTE_LOOSE_QUERY, NULL, NULL,
     NULL, STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/sessions", api_sessions_create, 0, ROUTE_PUBLIC, NULL, &api_sessions_create_body,
     NULL, VIEWER, NULL},
    {"GET", "/v1/sessions/options", api_sessions_options, 0, ROUTE_PUBLIC, NULL, NULL, NULL, VIEWER,
     NULL},
    {"GET", "/v1/sessions/current", api_sessions_current, 0, SESSION, NULL, NULL, NULL, VIEWER,
     NULL},
    {"DELETE", "/v1/sessions/current", api_sessions_delete, 0, SESSION, NULL, NULL, NULL, VIEWER,
     "session.delete"},
    {"GET", "/v1/sessions/oidc/start", api_oidc_start, 0, ROUTE_PUBLIC, NULL, NULL, NULL, VIEWER,
     NULL},
    {"GET", "/v1/sessions/oidc/callback", api_oidc_callback, 0, ROUTE_PUBLIC | ROUTE_LOOSE_QUERY,
     q_oidc_callback, NULL, NULL, VIEWER, NULL},
    {"POST", "/v1/users", api_users_create, 0, SESSION | ROUTE_SECRET_ANSWER, NULL,
     &api_users_create_body, NULL, ADMIN, "user.create"},
    {"GET", "/v1/users", api_users_list, 0, SESSION, q_list, NULL, NULL, ADMIN, NULL},
    {"POST", "/v1/users/set_password", api_users_set_password, 0, ROUTE_PUBLIC, NULL,
     &api_users_set_password_body, NULL, VIEWER, NULL},
    {"POST", "/v1/users/me/password", api_users_me_password, 0, SESSION, NULL,
     &api_users_password_body, NULL, VIEWER, "user.change_password"},
    {"GET", "/v1/users/{id}", api_users_get, 0, SESSION, NULL, NULL, NULL, ADMIN, NULL},
    {"PATCH", "/v1/users/{id}", api_users_update, 0, SESSION, NULL, &api_users_update_body, NULL,
     ADMIN, "user.update"},
    {"DELETE", "/v1/users/{id}", api_users_delete, 0, SESSION, NULL, NULL, NULL, ADMIN,
     "user.delete"},
    {"POST", "/v1/api_keys", api_keys_create, 0, SESSION | ROUTE_SECRET_ANSWER, NULL,
     &api_keys_create_body, NULL, STORE_ROLE_DEVELOPER, "api_key.create"},
    {"GET", "/v1/api_keys", api_keys_list, 0, SESSION, q_list, NULL, NULL, STORE_ROLE_DEVELOPER,
     NULL},
    {"DELETE", "/v1/api_keys/{id}", api_keys_delete, 0, SESSION, NULL, NULL, NULL,
     STORE_ROLE_DEVELOPER, "api_key.delete"},
    {"GET", "/v1/audit_events", api_audit_list, AUTH_SCOPE_AUDIT, 0, q_audit, NULL, NULL, ADMIN,
     NULL},
    {"GET", "/v1/account", api_account_get, 0, 0, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/account/credit_transactions", api_credit_transactions, AUTH_SCOPE_BILLING, 0,
     q_credit_tx, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/account/usage", api_account_usage, AUTH_SCOPE_BILLING, 0, q_usage, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/billing/packs", api_billing_packs, AUTH_SCOPE_BILLING, 0, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/billing/checkout", api_billing_checkout, AUTH_SCOPE_BILLING, 0, NULL,
     &api_billing_checkout_body, NULL, STORE_ROLE_OWNER, "credits.checkout"},
    {"POST", "/v1/billing/stripe/events", api_billing_stripe_events, 0,
     ROUTE_PUBLIC | ROUTE_VERIFY | ROUTE_RAW_BODY, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/employees", api_employees_list, AUTH_SCOPE_EMPLOYEES_READ, 0, q_employees, NULL,
     NULL, STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/employees", api_employees_create, AUTH_SCOPE_EMPLOYEES_WRITE, 0, NULL,
     &api_employees_create_body, NULL, STORE_ROLE_ADMIN, "employee.create"},
    {"GET", "/v1/employees/{id}", api_employees_get, AUTH_SCOPE_EMPLOYEES_READ, 0, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"PATCH", "/v1/employees/{id}", api_employees_update, AUTH_SCOPE_EMPLOYEES_WRITE, 0, NULL,
     &api_employees_update_body, NULL, STORE_ROLE_ADMIN, "employee.update"},
    {"GET", "/v1/employees/{id}/stats", api_employees_stats, AUTH_SCOPE_EMPLOYEES_READ, 0, q_stats,
     NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/tools", api_tools_list, AUTH_SCOPE_TOOLS | AUTH_SCOPE_EMPLOYEES_READ,
     ROUTE_SCOPE_ANY, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/approvals", api_approvals_list, APRV, 0, q_approvals, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/approvals/{id}", api_approvals_get, APRV, 0, NULL, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"POST", "/v1/approvals/{id}/approve", api_approvals_approve, APRV, 0, NULL,
     &api_approval_approve_body, NULL, STORE_ROLE_MEMBER, "approval.approve"},
    {"POST", "/v1/approvals/{id}/reject", api_approvals_reject, APRV, 0, NULL,
     &api_approval_reject_body, NULL, STORE_ROLE_MEMBER, "approval.reject"},
    {"POST", "/v1/mcp_servers", api_mcp_servers_create, TOOL, 0, NULL, &api_mcp_servers_create_body,
     NULL, STORE_ROLE_DEVELOPER, "mcp_server.create"},
    {"GET", "/v1/mcp_servers", api_mcp_servers_list, TOOL, 0, q_list, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"GET", "/v1/mcp_servers/{id}", api_mcp_servers_get, TOOL, 0, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"PATCH", "/v1/mcp_servers/{id}", api_mcp_servers_update, TOOL, 0, NULL,
     &api_mcp_servers_update_body, NULL, STORE_ROLE_DEVELOPER, "mcp_server.update"},
    {"DELETE", "/v1/mcp_servers/{id}", api_mcp_servers_delete, TOOL, 0, NULL, NULL, NULL,
     STORE_ROLE_DEVELOPER, "mcp_server.delete"},
    {"POST", "/v1/mcp_servers/{id}/refresh", api_mcp_servers_refresh, TOOL, 0, NULL, &api_no_body,
     NULL, STORE_ROLE_DEVELOPER, "mcp_server.refresh"},
    {"POST", "/v1/chat", api_chat, AUTH_SCOPE_CHAT, 0, NULL, &api_chat_body, NULL,
     STORE_ROLE_MEMBER, NULL},
    {"POST", "/v1/chat/stream", api_chat_stream, AUTH_SCOPE_CHAT, 0, NULL, &api_chat_body, NULL,
     STORE_ROLE_MEMBER, NULL},
    {"GET", "/v1/openai/models", api_openai_models, AUTH_SCOPE_CHAT, ROUTE_OPENAI, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/openai/models/{id}", api_openai_model, AUTH_SCOPE_CHAT, ROUTE_OPENAI, NULL, NULL,
     NULL, STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/openai/chat/completions", api_openai_completions, AUTH_SCOPE_CHAT, ROUTE_OPENAI,
     NULL, &api_openai_completion_body, NULL, STORE_ROLE_MEMBER, NULL},
    {"POST", "/v1/mcp", api_mcp, 0, ROUTE_RAW_BODY | ROUTE_LIMIT_SOFT, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/conversations", api_conversations_list, CONV, 0, q_conversations, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/conversations/{id}", api_conversations_get, CONV, 0, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/conversations/{id}/messages", api_conversations_messages, CONV, 0, q_list, NULL,
     NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/conversations/{id}/messages/{message_id}", api_conversations_message, CONV, 0,
     NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"DELETE", "/v1/conversations/{id}", api_conversations_delete, CONV, 0, NULL, NULL, NULL,
     STORE_ROLE_MEMBER, "conversation.delete"},
    {"GET", "/v1/conversations/{id}/messages/{message_id}/events", api_message_events, CONV, 0,
     NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/conversations/{id}/messages/{message_id}/feedback", api_feedback_create, CONV, 0,
     NULL, &api_feedback_body, NULL, STORE_ROLE_MEMBER, NULL},
    {"POST", "/v1/tasks", api_tasks_create, TASK, 0, NULL, &api_tasks_create_body, NULL,
     STORE_ROLE_MEMBER, "task.create"},
    {"GET", "/v1/tasks", api_tasks_list, TASK, 0, q_tasks, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/tasks/{id}", api_tasks_get, TASK, 0, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"PATCH", "/v1/tasks/{id}", api_tasks_update, TASK, 0, NULL, &api_tasks_update_body, NULL,
     STORE_ROLE_MEMBER, "task.update"},
    {"DELETE", "/v1/tasks/{id}", api_tasks_delete, TASK, 0, NULL, NULL, NULL, STORE_ROLE_MEMBER,
     "task.delete"},
    {"GET", "/v1/tasks/{id}/runs", api_tasks_runs, TASK, 0, q_list, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"POST", "/v1/knowledge/documents", api_knowledge_upload, KNOW, ROUTE_UPLOAD, NULL, NULL,
     api_knowledge_upload_begin, STORE_ROLE_MEMBER, "document.create"},
    {"GET", "/v1/knowledge/documents", api_knowledge_list, KNOW, 0, q_documents, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/knowledge/documents/{id}", api_knowledge_get, KNOW, 0, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"DELETE", "/v1/knowledge/documents/{id}", api_knowledge_delete, KNOW, 0, NULL, NULL, NULL,
     STORE_ROLE_MEMBER, "document.delete"},
    {"POST", "/v1/knowledge/query", api_knowledge_query, KNOW, 0, NULL, &api_knowledge_query_body,
     NULL, STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/workflows", api_workflows_create, FLOW, 0, NULL, &api_workflows_create_body, NULL,
     STORE_ROLE_DEVELOPER, "workflow.create"},
    {"GET", "/v1/workflows", api_workflows_list, FLOW, 0, q_list, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"GET", "/v1/workflows/{id}", api_workflows_get, FLOW, 0, NULL, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"PATCH", "/v1/workflows/{id}", api_workflows_update, FLOW, 0, NULL, &api_workflows_update_body,
     NULL, STORE_ROLE_DEVELOPER, "workflow.update"},
    {"DELETE", "/v1/workflows/{id}", api_workflows_delete, FLOW, 0, NULL, NULL, NULL,
     STORE_ROLE_DEVELOPER, "workflow.delete"},
    {"POST", "/v1/workflows/{id}/rotate_webhook", api_workflows_rotate_webhook, FLOW,
     ROUTE_SECRET_ANSWER, NULL, &api_no_body, NULL, STORE_ROLE_DEVELOPER,
     "workflow.rotate_webhook"},
    {"POST", "/v1/workflows/{id}/run", api_workflows_run, FLOW, 0, NULL, &api_workflows_run_body,
     NULL, STORE_ROLE_MEMBER, NULL},
    {"GET", "/v1/workflows/{id}/runs", api_workflows_runs, FLOW, 0, q_wf_runs, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/workflows/{id}/runs/{run_id}", api_workflows_run_get, FLOW, 0, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/workflows/{id}/runs/{run_id}/cancel", api_workflows_run_cancel, FLOW, 0, NULL,
     &api_no_body, NULL, STORE_ROLE_MEMBER, NULL},
    {"POST", "/v1/hooks/{token}", api_hooks_receive, 0, ROUTE_PUBLIC | ROUTE_HOOK, NULL, NULL, NULL,
     STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/integrations", api_integrations_list, INTG, 0, NULL, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"POST", "/v1/integrations/{provider}/connect", api_integrations_connect, INTG, 0, NULL,
     &api_integrations_connect_body, NULL, STORE_ROLE_DEVELOPER, "integration.connect"},
    {"GET", "/v1/integrations/{provider}/authorize", api_integrations_authorize, 0, ROUTE_PUBLIC,
     q_authorize, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"GET", "/v1/integrations/{provider}/callback", api_integrations_callback, 0,
     ROUTE_PUBLIC | ROUTE_LOOSE_QUERY, q_callback, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"DELETE", "/v1/integrations/{provider}", api_integrations_disconnect, INTG, 0, NULL, NULL,
     NULL, STORE_ROLE_DEVELOPER, "integration.disconnect"},
    {"GET", "/v1/integrations/{provider}/events", api_integrations_events_get, INTG, 0, NULL, NULL,
     NULL, STORE_ROLE_DEVELOPER, NULL},
    {"POST", "/v1/integrations/{provider}/events", api_integrations_slack_events, 0,
     ROUTE_PUBLIC | ROUTE_VERIFY, NULL, NULL, NULL, STORE_ROLE_VIEWER, NULL},
    {"POST", "/v1/integrations/{provider}/events/rotate", api_integrations_events_rotate, INTG,
     ROUTE_SECRET_ANSWER, NULL, &api_no_body, NULL, STORE_ROLE_DEVELOPER,
     "integration.rotate_events"},
    {"POST", "/v1/integrations/{provider}/events/secret", api_integrations_events_secret, INTG, 0,
     NULL, &api_integrations_secret_body, NULL, STORE_ROLE_DEVELOPER,
     "integration.set_events_secret"},
    {"POST", "/v1/integrations/{provider}/events/{token}", api_integrations_events, 0,
     ROUTE_PUBLIC | ROUTE_HOOK | ROUTE_EVENTS | ROUTE_VERIFY, NULL, NULL, NULL, STORE_ROLE_VIEWER,
     NULL},
    {"GET", "/v1/events", api_events_list, HOOK, 0, q_events, NULL, NULL, STORE_ROLE_DEVELOPER,
     NULL},
    {"GET", "/v1/events/{id}", api_events_get, HOOK, 0, NULL, NULL, NULL, STORE_ROLE_DEVELOPER,
     NULL},
    {"POST", "/v1/events/{id}/redeliver", api_events_redeliver, HOOK, 0, NULL,
     &api_events_redeliver_body, NULL, STORE_ROLE_DEVELOPER, "event.redeliver"},
    {"POST", "/v1/webhook_endpoints", api_webhook_endpoints_create, HOOK, ROUTE_SECRET_ANSWER, NULL,
     &api_webhook_endpoints_create_body, NULL, STORE_ROLE_DEVELOPER, "webhook_endpoint.create"},
    {"GET", "/v1/webhook_endpoints", api_webhook_endpoints_list, HOOK, 0, q_list, NULL, NULL,
     STORE_ROLE_DEVELOPER, NULL},
    {"GET", "/v1/webhook_endpoints/{id}", api_webhook_endpoints_get, HOOK, 0, NULL, NULL, NULL,
     STORE_ROLE_DEVELOPER, NULL},
    {"PATCH", "/v1/webhook_endpoints/{id}", api_webhook_endpoints_update, HOOK, 0, NULL,
     &api_webhook_endpoints_update_body, NULL, STORE_ROLE_DEVELOPER, "webhook_endpoint.update"},
    {"DELETE", "/v1/webhook_endpoints/{id}", api_webhook_endpoints_delete, HOOK, 0, NULL, NULL,
     NULL, STORE_ROLE_DEVELOPER, "webhook_endpoint.delete"},
    {"POST", "/v1/webhook_endpoints/{id}/rotate_secret", api_webhook_endpoints_rotate, HOOK,
     ROUTE_SECRET_ANSWER, NULL, &api_no_body, NULL, STORE_ROLE_DEVELOPER,
     "webhook_endpoint.rotate_secret"},
    {"GET", "/v1/webhook_endpoints/{id}/deliveries", api_webhook_endpoints_deliveries, HOOK, 0,
     q_deliveries, NULL, NULL, STORE_ROLE_DEVELOPER, NULL},
};

const size_t api_nroutes = sizeof(api_routes) / sizeof(api_routes[0]);

/* The ROUTE_VERIFY step of the route 'r' matched: Stripe's events, or a provider's. */
static int verify(struct router_req *r, struct err *e)
{
    const struct route *rt = router_req_route(r);
    if (rt && rt->handler == api_billing_stripe_events)
        return api_billing_verify(r, e);
    return api_integrations_verify(r, e);
}

/* See api.h. */
struct router_app api_app(const struct api_services *svc)
{
    struct router_app app = {api_routes, api_nroutes, api_error_respond, &svc->router, svc, verify};
    return app;
}
