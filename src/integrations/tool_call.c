/* SPDX-License-Identifier: MIT */
/*
 * tool_call.c: the integration operations as an employee's tools (see operations.h). The five
 * write tools map their arguments onto integ_operation()'s options and input and answer what
 * the workflow action outputs, {id, url}. The five reading tools are operations of their own,
 * each the provider's documented request, answering a small JSON the model can use, each list
 * cut at the call's 'limit' (default 20):
 *  - slack.list_channels: GET {api}/conversations.list?types=public_channel&exclude_archived=
 *    true&limit=N, following response_metadata.next_cursor (Slack may answer fewer than asked
 *    before the end) for at most SLACK_PAGES pages; Slack refuses with HTTP 200 {ok: false,
 *    error}. -> {channels: [{id, name, topic, is_member}]}
 *  - github.list_issues: GET {api}/repos/{owner}/{repo}/issues?state=S&per_page=N, newest
 *    first (GitHub's default order). GitHub counts pull requests as issues: they are marked.
 *    -> {issues: [{number, title, state, url, created_at, pull_request}]}
 *  - google_calendar.list_events: GET {api}/calendar/v3/calendars/{id}/events?timeMin&timeMax&
 *    maxResults=N&singleEvents=true&orderBy=startTime (recurring events expanded, soonest
 *    first); time_min defaults to now, and both are sent as UTC RFC 3339 (Google wants an
 *    offset). -> {events: [{id, summary, start, end, url}]} (start and end: a date-time, or a
 *    date for an all-day event)
 *  - outlook.list_messages: GET {api}/v1.0/me/messages?$top=N&$select=... with $search="query"
 *    (Graph sorts a search by date itself and takes no $orderby with it), else
 *    $orderby=receivedDateTime desc. -> {messages: [{id, from, from_name, subject, received_at,
 *    preview}]}
 *  - hubspot.search_contacts: POST {api}/crm/v3/objects/contacts/search {query, limit,
 *    properties} (HubSpot's search of the default searchable properties: names, email, phone,
 *    company). -> {contacts: [{id, email, firstname, lastname, company}]}
 * Long free text (a topic, a message's preview) is cut to TEXT_MAX bytes.
 *
 * A part of a URL path from the arguments (a repository, a calendar id) is checked before the
 * URL is built, as operations.c does; a refused argument sends nothing and names the argument.
 */
#include "operations.h"
#include "operations_int.h"

#include "../core/clock.h"
#include "../core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT_DEFAULT 20
#define SLACK_PAGES 5 /* conversations.list pages followed at most for one call */
#define TEXT_MAX 200  /* bytes kept of a topic or a message's preview */
#define INPUT_MAX (256 * 1024)

/* ---- Arguments ---- */

/* The string argument 'name', or NULL when absent or empty. */
static const char *arg(const json_t *args, const char *name)
{
    const char *v = json_string_value(json_object_get(args, name));
    return v && *v ? v : NULL;
}

/* The call's 'limit' within 1..'max'; LIMIT_DEFAULT when not given. */
static int limit_of(const json_t *args, int max)
{
    const json_t *v = json_object_get(args, "limit");
    json_int_t n = json_is_integer(v) ? json_integer_value(v) : LIMIT_DEFAULT;
    return n < 1 ? 1 : n > max ? max : (int)n;
}

/* Refuse argument 'param' before anything is sent: 'out' fails naming it. */
#define REFUSE(out, name, ...)                                                                     \
    do {                                                                                           \
        integ_failf(out, false, __VA_ARGS__);                                                      \
        (out)->param = (name);                                                                     \
    } while (0)

/* 's' cut to TEXT_MAX bytes, not inside a UTF-8 sequence, with an ellipsis ('a'); NULL stays. */
static const char *cut(struct arena *a, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    char *c;

    if (n <= TEXT_MAX)
        return s;
    n = TEXT_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    c = arena_alloc(a, n + 4);
    memcpy(c, s, n);
    memcpy(c + n, "\xE2\x80\xA6", 4); /* U+2026, and the NUL */
    return c;
}

/* ---- Reading ---- */

/* What a reading operation works with. */
struct reading {
    const struct integ_env *env;
    const struct integ_provider *p;
    const char *token;
    const json_t *args;
    int limit;
    struct arena *a;
};

/* 'method' {api}'path' (with its query) with 'headers' and 'body' (NULL: none): 0 with the
 * answer in 'c', else 'out' failed. The caller cleans 'c' up either way. */
static int ask(const struct reading *r, const char *method, const char *path,
               const char *const *headers, size_t nh, const char *body, struct integ_call *c,
               struct integ_result *out)
{
    const char *url =
        arena_printf(r->a, "%s%s", integ_setting(r->env->cfg, r->p, CONFIG_OAUTH_API_URL), path);
    int rc = integ_call_run(r->env, method, url, headers, nh, body, c);
    if (rc)
        integ_failf(out, true, "%s did not answer: %s", r->p->name,
                    c->why[0] ? c->why : "no answer");
    return rc;
}

/* The answer in 'c' as JSON (a new reference, NULL when it is none). */
static json_t *answer(const struct integ_call *c)
{
    return json_loadb(buf_ptr(&c->body), buf_len(&c->body), 0, NULL);
}

/* Slack's refusal in 'o' (HTTP 200 {ok: false, error}); a missing scope names the one needed. */
static void slack_refused(const struct reading *r, const struct integ_call *c, const json_t *o,
                          struct integ_result *out)
{
    const char *error = json_string_value(json_object_get(o, "error"));
    const char *needed = json_string_value(json_object_get(o, "needed"));

    if (error && needed && strcmp(error, "missing_scope") == 0)
        integ_failf(out, false,
                    "Slack refused: HTTP %ld: missing_scope: the connection lacks the scope "
                    "%.100s; connect Slack again with it.",
                    c->status, needed);
    else
        integ_refused(out, r->p, c);
}

static void slack_channels(const struct reading *r, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(r->a, r->token), "Accept: application/json"};
    json_t *list = json_array();
    const char *cursor = NULL;

    for (int page = 0; page < SLACK_PAGES && (int)json_array_size(list) < r->limit; page++) {
        const char *path = arena_printf(
            r->a, "/conversations.list?types=public_channel&exclude_archived=true&limit=%d",
            r->limit - (int)json_array_size(list));
        struct integ_call c;
        const json_t *chans, *ch;
        json_t *o = NULL;
        size_t i;

        if (cursor) {
            struct buf enc;
            buf_init(&enc, 4096);
            buf_append_urlenc(&enc, cursor);
            path = arena_printf(r->a, "%s&cursor=%s", path, buf_ptr(&enc));
            buf_cleanup(&enc);
        }
        if (!ask(r, "GET", path, h, 2, NULL, &c, out))
            o = answer(&c);
        chans = json_object_get(o, "channels");
        if (!out->failed &&
            (c.status != 200 || !json_is_true(json_object_get(o, "ok")) || !json_is_array(chans)))
            slack_refused(r, &c, o, out);
        json_array_foreach(out->failed ? NULL : chans, i, ch)
        {
            const char *topic =
                json_string_value(json_object_get(json_object_get(ch, "topic"), "value"));
            if ((int)json_array_size(list) >= r->limit)
                break;
            json_array_append_new(list,
                                  json_pack("{s:s?, s:s?, s:s?, s:b}", "id",
                                            json_string_value(json_object_get(ch, "id")), "name",
                                            json_string_value(json_object_get(ch, "name")), "topic",
                                            cut(r->a, topic), "is_member",
                                            json_is_true(json_object_get(ch, "is_member"))));
        }
        cursor = json_string_value(
            json_object_get(json_object_get(o, "response_metadata"), "next_cursor"));
        cursor = cursor && *cursor ? arena_strdup(r->a, cursor) : NULL;
        json_decref(o);
        integ_call_cleanup(&c);
        if (out->failed || !cursor)
            break;
    }
    if (out->failed)
        json_decref(list);
    else
        out->output = json_pack("{s:o}", "channels", list);
}

static void github_issues(const struct reading *r, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(r->a, r->token), "Accept: application/vnd.github+json",
                       "X-GitHub-Api-Version: 2022-11-28"};
    const char *repo = arg(r->args, "repo"), *state = arg(r->args, "state");
    const json_t *items, *it;
    struct integ_call c;
    json_t *o, *list;
    size_t i;

    if (!integ_repo_ok(repo)) {
        REFUSE(out, "repo",
               "repo must be owner/name (letters, digits, '-', '_' and, in the name, '.'; "
               "neither part . or ..), not %.100s.",
               repo ? repo : "nothing");
        return;
    }
    if (state && strcmp(state, "open") != 0 && strcmp(state, "closed") != 0 &&
        strcmp(state, "all") != 0) {
        REFUSE(out, "state", "state must be open, closed or all, not %.20s.", state);
        return;
    }
    if (ask(r, "GET",
            arena_printf(r->a, "/repos/%s/issues?state=%s&per_page=%d", repo,
                         state ? state : "open", r->limit),
            h, 3, NULL, &c, out)) {
        integ_call_cleanup(&c);
        return;
    }
    o = answer(&c);
    items = c.status == 200 && json_is_array(o) ? o : NULL;
    if (!items) {
        integ_refused(out, r->p, &c);
    } else {
        list = json_array();
        json_array_foreach(items, i, it)
        {
            if ((int)i >= r->limit)
                break;
            json_array_append_new(
                list, json_pack("{s:I, s:s?, s:s?, s:s?, s:s?, s:b}", "number",
                                json_integer_value(json_object_get(it, "number")), "title",
                                json_string_value(json_object_get(it, "title")), "state",
                                json_string_value(json_object_get(it, "state")), "url",
                                json_string_value(json_object_get(it, "html_url")), "created_at",
                                json_string_value(json_object_get(it, "created_at")),
                                "pull_request", json_object_get(it, "pull_request") != NULL));
        }
        out->output = json_pack("{s:o}", "issues", list);
    }
    json_decref(o);
    integ_call_cleanup(&c);
}

/* An event's start or end: its date-time, or its date (all-day). */
static const char *event_time(const json_t *t)
{
    const char *v = json_string_value(json_object_get(t, "dateTime"));
    return v ? v : json_string_value(json_object_get(t, "date"));
}

/* Append "&'name'=<the instant 'v' in UTC>" to 'q'; false when 'v' is no ISO 8601 date-time. */
static bool add_time(struct buf *q, const char *name, const char *v)
{
    char iso[40];
    int64_t ms;

    if (clock_parse_iso(v, strlen(v), &ms))
        return false;
    buf_appendf(q, "&%s=", name);
    buf_append_urlenc(q, clock_fmt_iso(ms, iso, sizeof(iso)));
    return true;
}

static void calendar_events(const struct reading *r, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(r->a, r->token), "Accept: application/json"};
    const char *cal = arg(r->args, "calendar_id"), *min = arg(r->args, "time_min"),
               *max = arg(r->args, "time_max");
    const char *bad = NULL, *bad_value = NULL;
    const json_t *items, *it;
    char now[40];
    struct integ_call c;
    struct buf path;
    json_t *o, *list;
    size_t i;

    if (cal && !integ_segment_ok(cal, INTEG_CALENDAR_ID_MAX, NULL)) {
        REFUSE(out, "calendar_id", "calendar_id must be a calendar's id, not %.100s.", cal);
        return;
    }
    buf_init(&path, 8192);
    buf_appends(&path, "/calendar/v3/calendars/");
    buf_append_urlenc(&path, cal ? cal : "primary");
    buf_appends(&path, "/events?singleEvents=true&orderBy=startTime");
    buf_appendf(&path, "&maxResults=%d", r->limit);
    if (!add_time(&path, "timeMin", min ? min : clock_fmt_iso(clock_now_ms(), now, sizeof(now)))) {
        bad = "time_min";
        bad_value = min;
    } else if (max && !add_time(&path, "timeMax", max)) {
        bad = "time_max";
        bad_value = max;
    }
    if (bad) {
        buf_cleanup(&path);
        REFUSE(out, bad,
               "The times must be ISO 8601 date-times with Z or an offset "
               "(2025-01-02T09:00:00Z), not %.64s.",
               bad_value);
        return;
    }
    if (ask(r, "GET", buf_ptr(&path), h, 2, NULL, &c, out)) {
        buf_cleanup(&path);
        integ_call_cleanup(&c);
        return;
    }
    buf_cleanup(&path);
    o = answer(&c);
    items = json_object_get(o, "items");
    if (c.status != 200 || !json_is_array(items)) {
        integ_refused(out, r->p, &c);
    } else {
        list = json_array();
        json_array_foreach(items, i, it)
        {
            if ((int)i >= r->limit)
                break;
            json_array_append_new(list,
                                  json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?}", "id",
                                            json_string_value(json_object_get(it, "id")), "summary",
                                            json_string_value(json_object_get(it, "summary")),
                                            "start", event_time(json_object_get(it, "start")),
                                            "end", event_time(json_object_get(it, "end")), "url",
                                            json_string_value(json_object_get(it, "htmlLink"))));
        }
        out->output = json_pack("{s:o}", "events", list);
    }
    json_decref(o);
    integ_call_cleanup(&c);
}

static void outlook_messages(const struct reading *r, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(r->a, r->token), "Accept: application/json"};
    const char *query = arg(r->args, "query");
    const json_t *items, *it;
    struct integ_call c;
    struct buf path;
    json_t *o, *list;
    size_t i;

    buf_init(&path, 8192);
    buf_appendf(&path,
                "/v1.0/me/messages?$top=%d&$select=id,subject,from,receivedDateTime,bodyPreview",
                r->limit);
    if (query) {
        /* A search is a phrase in double quotes: '"' and '\' in it are escaped with '\'. */
        struct buf phrase;
        buf_init(&phrase, 4096);
        buf_appends(&phrase, "\"");
        for (const char *s = query; *s; s++) {
            if (*s == '"' || *s == '\\')
                buf_appends(&phrase, "\\");
            if ((unsigned char)*s >= 0x20)
                buf_append(&phrase, s, 1);
        }
        buf_appends(&phrase, "\"");
        buf_appends(&path, "&$search=");
        buf_append_urlenc(&path, buf_ptr(&phrase));
        buf_cleanup(&phrase);
    } else {
        buf_appends(&path, "&$orderby=receivedDateTime%20desc");
    }
    if (ask(r, "GET", buf_ptr(&path), h, 2, NULL, &c, out)) {
        buf_cleanup(&path);
        integ_call_cleanup(&c);
        return;
    }
    buf_cleanup(&path);
    o = answer(&c);
    items = json_object_get(o, "value");
    if (c.status != 200 || !json_is_array(items)) {
        integ_refused(out, r->p, &c);
    } else {
        list = json_array();
        json_array_foreach(items, i, it)
        {
            const json_t *from = json_object_get(json_object_get(it, "from"), "emailAddress");
            if ((int)i >= r->limit)
                break;
            json_array_append_new(
                list,
                json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?, s:s?}", "id",
                          json_string_value(json_object_get(it, "id")), "from",
                          json_string_value(json_object_get(from, "address")), "from_name",
                          json_string_value(json_object_get(from, "name")), "subject",
                          json_string_value(json_object_get(it, "subject")), "received_at",
                          json_string_value(json_object_get(it, "receivedDateTime")), "preview",
                          cut(r->a, json_string_value(json_object_get(it, "bodyPreview")))));
        }
        out->output = json_pack("{s:o}", "messages", list);
    }
    json_decref(o);
    integ_call_cleanup(&c);
}

static void hubspot_contacts(const struct reading *r, struct integ_result *out)
{
    const char *h[] = {integ_auth_header(r->a, r->token), "Content-Type: application/json",
                       "Accept: application/json"};
    const char *query = arg(r->args, "query");
    const json_t *items, *it;
    struct integ_call c;
    json_t *o, *list;
    char *body;
    size_t i;
    int rc;

    if (!query) {
        REFUSE(out, "query", "query must be a name, an email or a company.");
        return;
    }
    o = json_pack("{s:s, s:i, s:[s, s, s, s]}", "query", query, "limit", r->limit, "properties",
                  "email", "firstname", "lastname", "company");
    body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    rc = ask(r, "POST", "/crm/v3/objects/contacts/search", h, 3, body, &c, out);
    free(body);
    if (rc) {
        integ_call_cleanup(&c);
        return;
    }
    o = answer(&c);
    items = json_object_get(o, "results");
    if (c.status != 200 || !json_is_array(items)) {
        integ_refused(out, r->p, &c);
    } else {
        list = json_array();
        json_array_foreach(items, i, it)
        {
            const json_t *pr = json_object_get(it, "properties");
            if ((int)i >= r->limit)
                break;
            json_array_append_new(
                list, json_pack("{s:s?, s:s?, s:s?, s:s?, s:s?}", "id",
                                json_string_value(json_object_get(it, "id")), "email",
                                json_string_value(json_object_get(pr, "email")), "firstname",
                                json_string_value(json_object_get(pr, "firstname")), "lastname",
                                json_string_value(json_object_get(pr, "lastname")), "company",
                                json_string_value(json_object_get(pr, "company"))));
        }
        out->output = json_pack("{s:o}", "contacts", list);
    }
    json_decref(o);
    integ_call_cleanup(&c);
}

/* ---- Writing: the arguments as an operation's options and input ---- */

static int put_opt(json_t *options, const json_t *args, const char *name)
{
    const char *v = arg(args, name);
    return v ? json_object_set_new(options, name, json_string(v)) : 0;
}

static int slack_post(const json_t *args, json_t *options, struct buf *input, struct err *e)
{
    (void)e;
    put_opt(options, args, "channel");
    return buf_appends(input, arg(args, "text") ? arg(args, "text") : "");
}

/* The title is the input's first line, so a line break in it becomes a space. */
static int github_issue(const json_t *args, json_t *options, struct buf *input, struct err *e)
{
    const char *repo = arg(args, "repo"), *title = arg(args, "title"), *body = arg(args, "body");
    int rc = 0;

    if (!integ_repo_ok(repo))
        return err_set(e, ERR_INVALID, "invalid_request", "repo",
                       "repo must be owner/name (letters, digits, '-', '_' and, in the name, "
                       "'.'; neither part . or ..), not %.100s.",
                       repo ? repo : "nothing");
    put_opt(options, args, "repo");
    for (const char *s = title ? title : ""; *s && !rc; s++)
        rc = buf_append(input, *s == '\n' || *s == '\r' ? " " : s, 1);
    if (!rc && body) {
        buf_appends(input, "\n");
        rc = buf_appends(input, body);
    }
    return rc;
}

static int calendar_event(const json_t *args, json_t *options, struct buf *input, struct err *e)
{
    const char *cal = arg(args, "calendar_id");
    json_t *ev;
    char *text;
    int rc;

    if (cal && !integ_segment_ok(cal, INTEG_CALENDAR_ID_MAX, NULL))
        return err_set(e, ERR_INVALID, "invalid_request", "calendar_id",
                       "calendar_id must be a calendar's id, not %.100s.", cal);
    put_opt(options, args, "calendar_id");
    ev = json_pack("{s:s?, s:s?, s:s?}", "summary", arg(args, "summary"), "start",
                   arg(args, "start"), "end", arg(args, "end"));
    if (arg(args, "description"))
        json_object_set_new(ev, "description", json_string(arg(args, "description")));
    text = json_dumps(ev, JSON_COMPACT);
    json_decref(ev);
    rc = text ? buf_appends(input, text) : ERR_NOMEM;
    free(text);
    return rc;
}

static int outlook_mail(const json_t *args, json_t *options, struct buf *input, struct err *e)
{
    const char *body = json_string_value(json_object_get(args, "body"));
    (void)e;
    put_opt(options, args, "to");
    put_opt(options, args, "subject");
    return buf_appends(input, body ? body : "");
}

static int hubspot_note(const json_t *args, json_t *options, struct buf *input, struct err *e)
{
    (void)e;
    put_opt(options, args, "contact_email");
    return buf_appends(input, arg(args, "body") ? arg(args, "body") : "");
}

/* ---- The tools ---- */

static const struct tool {
    const char *name;
    const char *provider;
    /* a write tool: its arguments as the operation's options and input */
    int (*map)(const json_t *args, json_t *options, struct buf *input, struct err *e);
    /* a reading tool, and the largest 'limit' it takes */
    void (*read)(const struct reading *r, struct integ_result *out);
    int limit_max;
} tools[] = {
    {"slack.post_message", "slack", slack_post, NULL, 0},
    {"slack.list_channels", "slack", NULL, slack_channels, 200},
    {"github.create_issue", "github", github_issue, NULL, 0},
    {"github.list_issues", "github", NULL, github_issues, 100},
    {"google_calendar.create_event", "google_calendar", calendar_event, NULL, 0},
    {"google_calendar.list_events", "google_calendar", NULL, calendar_events, 250},
    {"outlook.send_mail", "outlook", outlook_mail, NULL, 0},
    {"outlook.list_messages", "outlook", NULL, outlook_messages, 100},
    {"hubspot.create_note", "hubspot", hubspot_note, NULL, 0},
    {"hubspot.search_contacts", "hubspot", NULL, hubspot_contacts, 100},
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))

static int write_tool(const struct integ_env *env, const struct store_tenant *t,
                      const struct tool *d, const json_t *args, struct integ_result *out,
                      struct err *e)
{
    json_t *options = json_object();
    struct buf input;
    int rc;

    buf_init(&input, INPUT_MAX);
    rc = d->map(args, options, &input, e);
    if (rc && !e->code)
        err_set(e, rc, "invalid_request", NULL, "The arguments are too large.");
    if (!rc)
        integ_operation(env, t, d->name, options, buf_ptr(&input), out);
    buf_cleanup(&input);
    json_decref(options);
    return rc;
}

static void read_tool(const struct integ_env *env, const struct store_tenant *t,
                      const struct tool *d, const json_t *args, struct integ_result *out)
{
    struct arena a;
    struct reading r = {env,  integ_provider_find(d->provider), NULL,
                        args, limit_of(args, d->limit_max),     &a};

    arena_init(&a);
    r.token = integ_token_now(env, t, r.p, &a, out);
    if (r.token)
        d->read(&r, out);
    arena_cleanup(&a);
}

/* See operations.h. */
int integ_tool_call(const struct integ_env *env, const struct store_tenant *t, const char *tool,
                    const json_t *args, struct buf *result, struct err *e)
{
    const struct tool *d = NULL;
    struct integ_result res;
    char *text;
    int rc;

    err_clear(e);
    memset(&res, 0, sizeof(res));
    for (size_t i = 0; tool && i < NTOOLS; i++) {
        if (strcmp(tools[i].name, tool) == 0)
            d = &tools[i];
    }
    if (!d)
        return err_set(e, ERR_INVALID, "invalid_request", NULL, "No integration tool %.100s.",
                       tool ? tool : "named");
    if (!json_is_object(args))
        return err_set(e, ERR_INVALID, "invalid_request", NULL, "The arguments must be an object.");
    if (d->map) {
        rc = write_tool(env, t, d, args, &res, e);
        if (rc)
            return rc;
    } else {
        read_tool(env, t, d, args, &res);
    }
    if (res.failed) {
        json_decref(res.output);
        if (res.param)
            return err_set(e, ERR_INVALID, "invalid_request", res.param, "%s", res.error);
        if (strncmp(res.error, "integration_not_connected:", 26) == 0)
            return err_set(e, ERR_NOT_FOUND, "integration_not_connected", NULL, "%s", res.error);
        log_info("integrations: %s of %s failed: %s", tool, t->org_id, res.error);
        return err_set(e, ERR_UPSTREAM, "upstream_error", NULL, "%s", res.error);
    }
    text = json_dumps(res.output, JSON_COMPACT);
    json_decref(res.output);
    rc = text ? buf_appends(result, text) : ERR_NOMEM;
    free(text);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "The result could not be written.");
    return 0;
}
