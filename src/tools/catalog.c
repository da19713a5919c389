/* SPDX-License-Identifier: MIT */
/*
 * catalog.c: the tools every organization has: the built-in ones and one per integration
 * operation (contract §19). Each is a row: name, source, effect, the provider whose connection
 * it needs, what the model is told it does, and the binding table of its arguments. The same
 * table checks a call's arguments (jb_bind: a bad call is an error result, nothing runs) and
 * writes the `input_schema` shown by GET /v1/tools and to the model (jb_binding_schema), so
 * the two cannot disagree. The MCP servers' tools are added beside these by the caller.
 */
#include "tools.h"

#include "../auth/auth.h"
#include "../json/json.h"

#include <stddef.h>
#include <string.h>

static const char *const priorities[] = {"low", "medium", "high", "urgent", NULL};
static const char *const issue_states[] = {"open", "closed", "all", NULL};

#define DUE_MSG "an ISO 8601 date-time with Z or an offset"

#define ARG(n, t, m, fl, lo, hi, vals, chk, msg)                                                   \
    {                                                                                              \
        n, t, offsetof(struct tools_args, m), fl, lo, hi, vals, chk, msg                           \
    }
#define TEXT(n, m, fl, lo, hi) ARG(n, JB_STRING, m, fl, lo, hi, NULL, NULL, NULL)
#define ID(n, m) ARG(n, JB_STRING, m, JB_REQUIRED, 1, 100, NULL, NULL, NULL)
#define LIMIT(hi) ARG("limit", JB_INT, limit, 0, 1, hi, NULL, NULL, NULL)
#define BINDING(f)                                                                                 \
    {                                                                                              \
        f, sizeof(f) / sizeof(f[0])                                                                \
    }

/* ---- Built-in ---- */

static const struct jb_field search_args[] = {
    TEXT("query", query, JB_REQUIRED, 1, 2000),
    LIMIT(50),
    ARG("tags", JB_STRING_ARRAY, tags, 0, 0, 50, NULL, NULL, NULL),
};
static const struct jb_field task_create_args[] = {
    ARG("title", JB_STRING, title, JB_REQUIRED, 1, 200, NULL, jb_not_blank, "not blank"),
    TEXT("description", description, 0, 0, 10000),
    ARG("priority", JB_ENUM, priority, 0, 0, 0, priorities, NULL, NULL),
    TEXT("due_at", due_at, 0, 1, 64),
    TEXT("employee_id", employee_id, 0, 1, 100),
};
static const struct jb_field task_get_args[] = {ID("task_id", task_id)};
static const struct jb_field workflow_run_args[] = {
    ID("workflow_id", workflow_id),
    ARG("input", JB_ANY, input, JB_OBJECT, 0, 0, NULL, NULL, NULL),
};
static const struct jb_field ask_args[] = {
    ID("employee_id", employee_id),
    TEXT("message", message, JB_REQUIRED, 1, 32000),
};

/* ---- Integrations: the five operations of §13 and a reading one per provider ---- */

static const struct jb_field slack_post_args[] = {
    TEXT("channel", channel, JB_REQUIRED, 1, 200),
    TEXT("text", text, JB_REQUIRED, 1, 40000),
};
static const struct jb_field slack_list_args[] = {LIMIT(200)};
static const struct jb_field github_issue_args[] = {
    TEXT("repo", repo, JB_REQUIRED, 3, 200),
    TEXT("title", title, JB_REQUIRED, 1, 256),
    TEXT("body", body, 0, 0, 65536),
};
static const struct jb_field github_list_args[] = {
    TEXT("repo", repo, JB_REQUIRED, 3, 200),
    ARG("state", JB_ENUM, state, 0, 0, 0, issue_states, NULL, NULL),
    LIMIT(100),
};
static const struct jb_field event_create_args[] = {
    TEXT("summary", summary, JB_REQUIRED, 1, 1000), TEXT("start", start, JB_REQUIRED, 1, 64),
    TEXT("end", end, JB_REQUIRED, 1, 64),           TEXT("description", description, 0, 0, 8000),
    TEXT("calendar_id", calendar_id, 0, 1, 500),
};
static const struct jb_field event_list_args[] = {
    TEXT("calendar_id", calendar_id, 0, 1, 500),
    TEXT("time_min", time_min, 0, 1, 64),
    TEXT("time_max", time_max, 0, 1, 64),
    LIMIT(250),
};
static const struct jb_field mail_send_args[] = {
    TEXT("to", to, JB_REQUIRED, 3, 1000),
    TEXT("subject", subject, JB_REQUIRED, 1, 500),
    TEXT("body", body, JB_REQUIRED, 0, 100000),
};
static const struct jb_field mail_list_args[] = {TEXT("query", query, 0, 1, 500), LIMIT(100)};
static const struct jb_field note_args[] = {
    TEXT("body", body, JB_REQUIRED, 1, 65536),
    TEXT("contact_email", contact_email, 0, 3, 320),
};
static const struct jb_field contact_search_args[] = {
    TEXT("query", query, JB_REQUIRED, 1, 500),
    LIMIT(100),
};

#define BUILTIN(n, eff, args, sc, d)                                                               \
    {                                                                                              \
        n, TOOLS_BUILTIN, eff, NULL, d, BINDING(args), sc, NULL                                    \
    }
#define INTEG(n, prov, eff, args, d)                                                               \
    {                                                                                              \
        n, TOOLS_INTEGRATION, eff, prov, d, BINDING(args), AUTH_SCOPE_INTEGRATIONS, NULL           \
    }

static const struct tools_def defs[] = {
    BUILTIN("knowledge.search", TOOLS_READ, search_args, AUTH_SCOPE_KNOWLEDGE,
            "Search the organization's knowledge base (the documents this employee may read) "
            "and return the best-matching passages with their document names and scores."),
    BUILTIN("tasks.create", TOOLS_WRITE, task_create_args, AUTH_SCOPE_TASKS,
            "Create a task for an employee (this employee unless employee_id names another) to "
            "carry out; due_at is " DUE_MSG ". Returns the task."),
    BUILTIN("tasks.get", TOOLS_READ, task_get_args, AUTH_SCOPE_TASKS,
            "Read a task of the organization by id: its status, result and runs."),
    BUILTIN("workflows.run", TOOLS_WRITE, workflow_run_args, AUTH_SCOPE_WORKFLOWS,
            "Start a run of one of the organization's workflows with the given input object. "
            "Returns the queued run."),
    BUILTIN("employees.ask", TOOLS_READ, ask_args, AUTH_SCOPE_CHAT,
            "Ask a colleague (another employee of the organization) a question; returns the "
            "colleague's answer, as a chat reply."),
    INTEG("slack.post_message", "slack", TOOLS_WRITE, slack_post_args,
          "Post a message to a Slack channel (its id, or #name) of the connected workspace."),
    INTEG("slack.list_channels", "slack", TOOLS_READ, slack_list_args,
          "List the channels of the connected Slack workspace (id, name, topic)."),
    INTEG("github.create_issue", "github", TOOLS_WRITE, github_issue_args,
          "Open an issue in a GitHub repository (repo is owner/name)."),
    INTEG("github.list_issues", "github", TOOLS_READ, github_list_args,
          "List the issues of a GitHub repository (repo is owner/name), newest first."),
    INTEG("google_calendar.create_event", "google_calendar", TOOLS_WRITE, event_create_args,
          "Create an event in Google Calendar (the primary calendar unless calendar_id is "
          "given); start and end are " DUE_MSG "."),
    INTEG("google_calendar.list_events", "google_calendar", TOOLS_READ, event_list_args,
          "List the events of a Google Calendar between time_min and time_max (" DUE_MSG ")."),
    INTEG("outlook.send_mail", "outlook", TOOLS_WRITE, mail_send_args,
          "Send an email from the connected Outlook account (to: one or more addresses "
          "separated by commas)."),
    INTEG("outlook.list_messages", "outlook", TOOLS_READ, mail_list_args,
          "List the newest messages of the connected Outlook mailbox, optionally matching a "
          "search query."),
    INTEG("hubspot.create_note", "hubspot", TOOLS_WRITE, note_args,
          "Add a note to HubSpot, attached to the contact with contact_email when given."),
    INTEG("hubspot.search_contacts", "hubspot", TOOLS_READ, contact_search_args,
          "Search HubSpot contacts by name, email or company."),
};

#define NDEFS (sizeof(defs) / sizeof(defs[0]))

const char *const tools_sources[] = {"builtin", "integration", "mcp", NULL};
const char *const tools_effects[] = {"read", "write", NULL};

/* See tools.h. */
const struct tools_def *tools_defs(size_t *n)
{
    *n = NDEFS;
    return defs;
}

/* See tools.h. */
const struct tools_def *tools_def_find(const char *name)
{
    for (size_t i = 0; i < NDEFS; i++) {
        if (strcmp(defs[i].name, name) == 0)
            return &defs[i];
    }
    return NULL;
}

/* See tools.h. */
json_t *tools_def_schema(const struct tools_def *d)
{
    if (d->input_schema) {
        json_t *v = json_loads(d->input_schema, 0, NULL);
        if (json_is_object(v))
            return v;
        json_decref(v);
        return json_pack("{s:s}", "type", "object");
    }
    return jb_binding_schema(&d->args, NULL, NULL);
}

/* See tools.h. */
int tools_args_bind(const struct tools_def *d, json_t *args, struct arena *a,
                    struct tools_args *out, struct err *e)
{
    struct jb_result res;
    memset(out, 0, sizeof(*out));
    out->priority = -1;
    out->state = -1;
    if (!json_is_object(args))
        return err_set(e, ERR_INVALID, "invalid_request", NULL,
                       "The arguments of %s must be a JSON object.", d->name);
    return jb_bind(args, d->args.fields, d->args.n, out, a, &res, e);
}
