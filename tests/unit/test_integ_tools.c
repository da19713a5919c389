/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of integ_tool_call() (integrations/tool_call.c): the ten integration tools against
 * tests/mock/provider_mock.py, started here as a child process (its first line says its port)
 * and stopped by its PID at the end. A connection is stored for a tenant as the callback
 * stores one (the tokens sealed); each tool is called and checked: the answer's shape, the
 * request the mock received (method, path, query, body), the limit, and its failures: not
 * connected, a refusal (4xx), a 5xx, no answer, a path part that is not one segment (nothing
 * sent), a token refreshed first; no token ever shows in a message.
 *
 * Run from the repository's root (as make test does): the mock is tests/mock/provider_mock.py.
 */
#include "../../src/core/clock.h"
#include "../../src/core/config.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/httpc/httpc.h"
#include "../../src/integrations/oauth.h"
#include "../../src/integrations/operations.h"
#include "../../src/integrations/operations_int.h"
#include "../../src/integrations/providers.h"
#include "../../src/store/store.h"
#include "t.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MOCK_PATH "tests/mock/provider_mock.py"
#define WAIT_MS 10000 /* the mock's start, and its end */

extern char **environ;

static struct config cfg;
static struct integ_env env;
static struct store_pool *pool;
static struct store_tenant tenant, stranger;
static char base[64]; /* http://127.0.0.1:<port> */
static pid_t mock_pid;

/* ---- The mock, a child process ---- */

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Start the mock; its port from its first line ({"port": N}), waited for WAIT_MS at most. */
static int mock_start(void)
{
    char *argv[] = {"python3", MOCK_PATH, "0", NULL}, line[256];
    int64_t end = now_ms() + WAIT_MS;
    posix_spawn_file_actions_t fa;
    size_t n = 0;
    int fds[2], port = 0;

    if (access(MOCK_PATH, R_OK) != 0 || pipe(fds) != 0)
        return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (posix_spawnp(&mock_pid, "python3", &fa, NULL, argv, environ) != 0)
        mock_pid = 0;
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    while (mock_pid && n + 1 < sizeof(line) && !memchr(line, '\n', n)) {
        struct pollfd p = {fds[0], POLLIN, 0};
        int64_t left = end - now_ms();
        ssize_t got;
        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            break;
        got = read(fds[0], line + n, sizeof(line) - 1 - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    line[n] = '\0';
    close(fds[0]); /* the mock prints nothing more */
    if (sscanf(line, "{\"port\": %d}", &port) != 1 || port <= 0)
        return -1;
    snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
    return 0;
}

/* Stop the mock by its PID: SIGTERM, then SIGKILL if it is still there after WAIT_MS. */
static void mock_stop(void)
{
    int64_t end = now_ms() + WAIT_MS;
    int status;

    if (!mock_pid)
        return;
    kill(mock_pid, SIGTERM);
    while (waitpid(mock_pid, &status, WNOHANG) == 0) {
        struct timespec tick = {0, 20 * 1000 * 1000};
        if (now_ms() > end) {
            kill(mock_pid, SIGKILL);
            waitpid(mock_pid, &status, 0);
            break;
        }
        nanosleep(&tick, NULL); /* a poll of the child's end, bounded by 'end' */
    }
    mock_pid = 0;
}

/* 'method' {base}'path' with the JSON 'body' (NULL: none): the answer's JSON, or NULL. */
static json_t *mock_ask(const char *method, const char *path, const char *body)
{
    const char *h[] = {"Content-Type: application/json"};
    char url[512];
    struct integ_call c;
    json_t *o = NULL;

    snprintf(url, sizeof(url), "%s%s", base, path);
    if (integ_call_run(&env, method, url, h, 1, body, &c) == 0)
        o = json_loadb(buf_ptr(&c.body), buf_len(&c.body), 0, NULL);
    integ_call_cleanup(&c);
    return o;
}

static void mock_control(const char *what, const char *body)
{
    char path[64];
    snprintf(path, sizeof(path), "/__control/%s", what);
    json_decref(mock_ask("POST", path, body));
}

/* The requests the mock received under 'prefix' (a new reference: an array). */
static json_t *requests(const char *prefix)
{
    char path[128];
    json_t *o;
    snprintf(path, sizeof(path), "/__requests?prefix=%s", prefix);
    o = mock_ask("GET", path, NULL);
    return json_is_array(o) ? o : (json_decref(o), json_array());
}

static size_t nrequests(const char *prefix)
{
    json_t *all = requests(prefix);
    size_t n = json_array_size(all);
    json_decref(all);
    return n;
}

/* The 'i'-th request under 'prefix' (negative: from the end), a new reference or NULL. */
static json_t *request_at(const char *prefix, int i)
{
    json_t *all = requests(prefix), *r;
    size_t n = json_array_size(all);
    r = json_array_get(all, i < 0 ? n + (size_t)i : (size_t)i);
    json_incref(r);
    json_decref(all);
    return r;
}

static const char *q(const json_t *req, const char *name)
{
    return json_string_value(json_object_get(json_object_get(req, "query"), name));
}

static const char *sfield(const json_t *o, const char *name)
{
    return json_string_value(json_object_get(o, name));
}

/* ---- Connections ---- */

/* Store 't''s connection to 'provider' with the tokens 'tokens' (JSON), sealed. */
static int connect_as(const struct store_tenant *t, const char *provider, const char *tokens)
{
    struct store_integration row;
    struct store *s;
    struct arena a;
    int rc;

    arena_init(&a);
    memset(&row, 0, sizeof(row));
    row.provider = provider;
    row.status = "connected";
    row.connected_at = row.updated_at = clock_now_ms();
    row.secrets = integ_seal(env.key, t, provider, "secrets", tokens, &a, &row.secrets_len);
    s = store_pool_get(pool);
    rc = row.secrets ? store_integration_put(s, t, &row) : ERR_INTERNAL;
    store_pool_put(pool, s);
    arena_cleanup(&a);
    return rc;
}

static void connect_all(void)
{
    for (size_t i = 0; i < INTEG_PROVIDERS; i++)
        connect_as(&tenant, integ_provider_at(i)->id, "{\"access_token\":\"test-token\"}");
}

/* The tenant's stored tokens for 'provider' (a new reference, or NULL). */
static json_t *stored_tokens(const char *provider)
{
    struct store_integration row;
    struct store *s = store_pool_get(pool);
    struct arena a;
    const char *text = NULL;
    json_t *o;

    arena_init(&a);
    if (store_integration_get(s, &tenant, provider, &a, &row) == 0 && row.secrets)
        text = integ_open(env.key, &tenant, provider, "secrets", row.secrets, row.secrets_len, &a);
    store_pool_put(pool, s);
    o = text ? json_loads(text, 0, NULL) : NULL;
    arena_cleanup(&a);
    return o;
}

/* ---- Calling a tool ---- */

/* Call 'tool' for 't' with the JSON 'args': its rc, the answer in '*out' (a new reference) when
 * 0, and the error in 'e'. No message ever carries a token. */
static int call_as(const struct store_tenant *t, const char *tool, const char *args, json_t **out,
                   struct err *e)
{
    json_t *a = json_loads(args, 0, NULL);
    struct buf result;
    int rc;

    buf_init(&result, 1 << 20);
    err_clear(e);
    rc = integ_tool_call(&env, t, tool, a, &result, e);
    *out = rc ? NULL : json_loadb(buf_ptr(&result), buf_len(&result), 0, NULL);
    if (rc && (strstr(e->msg, "test-token") || strstr(e->msg, "xoxb-") || !e->msg[0]))
        ok(0, "an error message is said and carries no token");
    if (!rc && !*out)
        ok(0, "the result is JSON");
    buf_cleanup(&result);
    json_decref(a);
    return rc;
}

static int call(const char *tool, const char *args, json_t **out, struct err *e)
{
    return call_as(&tenant, tool, args, out, e);
}

/* ---- Slack ---- */

static void slack(void)
{
    subtest("slack")
    {
        json_t *out, *r, *ch;
        struct err e;

        mock_control("reset", "{}");
        is_int(call("slack.list_channels", "{}", &out, &e), 0, "list_channels");
        ch = json_object_get(out, "channels");
        is_int(json_array_size(ch), 3, "the three channels that are not archived");
        is_str(sfield(json_array_get(ch, 0), "id"), "C0MOCKGEN", "its id");
        is_str(sfield(json_array_get(ch, 0), "name"), "general", "its name");
        is_str(sfield(json_array_get(ch, 0), "topic"), "Company-wide announcements", "its topic");
        ok(json_is_true(json_object_get(json_array_get(ch, 0), "is_member")), "the bot's in");
        is_str(sfield(json_array_get(ch, 2), "name"), "private-no-bot", "from the second page");
        ok(json_is_false(json_object_get(json_array_get(ch, 2), "is_member")), "the bot is not");
        is_int(nrequests("/slack"), 2, "two pages asked for (the mock answers two a page)");
        r = request_at("/slack", 0);
        is_str(sfield(r, "method"), "GET", "GET");
        is_str(sfield(r, "path"), "/slack/api/conversations.list", "conversations.list");
        is_str(q(r, "limit"), "20", "limit 20 by default");
        is_str(q(r, "types"), "public_channel", "public channels");
        is_str(q(r, "exclude_archived"), "true", "archived ones left out");
        ok(!q(r, "cursor"), "the first page has no cursor");
        is_str(json_string_value(json_object_get(json_object_get(r, "headers"), "authorization")),
               "Bearer test-token", "the stored token");
        json_decref(r);
        r = request_at("/slack", 1);
        ok(q(r, "cursor") && *q(r, "cursor"), "the second page by next_cursor");
        is_str(q(r, "limit"), "18", "asking for what is left");
        json_decref(r);
        json_decref(out);

        mock_control("reset", "{}");
        is_int(call("slack.list_channels", "{\"limit\":1}", &out, &e), 0, "limit 1");
        is_int(json_array_size(json_object_get(out, "channels")), 1, "one channel");
        is_int(nrequests("/slack"), 1, "one page");
        r = request_at("/slack", -1);
        is_str(q(r, "limit"), "1", "limit=1 sent");
        json_decref(r);
        json_decref(out);

        is_int(
            call("slack.post_message", "{\"channel\":\"#general\",\"text\":\"Hello\"}", &out, &e),
            0, "post_message");
        is_str(sfield(out, "id"), "1700000000.000001", "id: the ts");
        ok(json_is_null(json_object_get(out, "url")), "url null");
        r = request_at("/slack", -1);
        is_str(sfield(r, "method"), "POST", "POST");
        is_str(sfield(r, "path"), "/slack/api/chat.postMessage", "chat.postMessage");
        is_str(sfield(json_object_get(r, "body"), "channel"), "#general", "the channel");
        is_str(sfield(json_object_get(r, "body"), "text"), "Hello", "the text");
        json_decref(r);
        json_decref(out);

        is_int(call("slack.post_message", "{\"channel\":\"nope\",\"text\":\"x\"}", &out, &e),
               ERR_UPSTREAM, "a channel Slack does not know");
        is_str(e.code, "upstream_error", "upstream_error");
        ok(strstr(e.msg, "Slack refused") && strstr(e.msg, "channel_not_found"),
           "the provider's reason");

        mock_control("fail", "{\"path_prefix\":\"/slack/api/conversations.list\","
                             "\"mode\":\"503\",\"count\":1}");
        is_int(call("slack.list_channels", "{}", &out, &e), ERR_UPSTREAM, "a 503");
        ok(strstr(e.msg, "HTTP 503") != NULL, "says HTTP 503");
        mock_control("fail", "{\"path_prefix\":\"/slack/api/conversations.list\","
                             "\"mode\":\"html\",\"count\":1}");
        is_int(call("slack.list_channels", "{}", &out, &e), ERR_UPSTREAM, "an HTML page");
        ok(strstr(e.msg, "Slack refused: HTTP 200") != NULL, "is no answer");
    }
}

/* ---- GitHub ---- */

static void github(void)
{
    subtest("github")
    {
        json_t *out, *r, *is;
        struct err e;

        mock_control("reset", "{}");
        is_int(call("github.list_issues", "{\"repo\":\"acme/tracker\"}", &out, &e), 0,
               "list_issues");
        is = json_object_get(out, "issues");
        is_int(json_array_size(is), 4, "the four open ones");
        is_int(json_integer_value(json_object_get(json_array_get(is, 0), "number")), 5,
               "newest first");
        is_str(sfield(json_array_get(is, 0), "title"), "Dark mode", "a title");
        is_str(sfield(json_array_get(is, 0), "state"), "open", "a state");
        is_str(sfield(json_array_get(is, 0), "url"), "https://github.com/acme/tracker/issues/5",
               "its page");
        is_str(sfield(json_array_get(is, 0), "created_at"), "2024-01-05T10:00:00Z", "created_at");
        ok(json_is_false(json_object_get(json_array_get(is, 0), "pull_request")), "an issue");
        ok(json_is_true(json_object_get(json_array_get(is, 1), "pull_request")),
           "a pull request is said to be one");
        r = request_at("/github", -1);
        is_str(sfield(r, "method"), "GET", "GET");
        is_str(sfield(r, "path"), "/github/repos/acme/tracker/issues", "the repository's issues");
        is_str(q(r, "state"), "open", "state=open by default");
        is_str(q(r, "per_page"), "20", "per_page=20 by default");
        json_decref(r);
        json_decref(out);

        is_int(call("github.list_issues",
                    "{\"repo\":\"acme/tracker\",\"state\":\"all\",\"limit\":2}", &out, &e),
               0, "all, limit 2");
        is = json_object_get(out, "issues");
        is_int(json_array_size(is), 2, "two");
        r = request_at("/github", -1);
        is_str(q(r, "state"), "all", "state=all");
        is_str(q(r, "per_page"), "2", "per_page=2");
        json_decref(r);
        json_decref(out);
        is_int(call("github.list_issues", "{\"repo\":\"acme/tracker\",\"state\":\"closed\"}", &out,
                    &e),
               0, "closed");
        is_str(sfield(json_array_get(json_object_get(out, "issues"), 0), "title"), "Typo in README",
               "the closed one");
        json_decref(out);

        is_int(call("github.list_issues", "{\"repo\":\"acme/locked\"}", &out, &e), ERR_UPSTREAM,
               "a repository the token may not read");
        ok(strstr(e.msg, "HTTP 403") && strstr(e.msg, "Resource not accessible"),
           "GitHub's reason");
        is_int(call("github.list_issues", "{\"repo\":\"acme/no-issues\"}", &out, &e), ERR_UPSTREAM,
               "issues disabled");
        ok(strstr(e.msg, "HTTP 410") != NULL, "410");

        mock_control("reset", "{}");
        is_int(call("github.list_issues", "{\"repo\":\"../user\"}", &out, &e), ERR_INVALID,
               "repo ../user");
        is_str(e.param, "repo", "param repo");
        is_str(e.code, "invalid_request", "invalid_request");
        is_int(call("github.list_issues", "{\"repo\":\"acme/..\"}", &out, &e), ERR_INVALID,
               "repo acme/..");
        is_int(call("github.list_issues", "{\"repo\":\"acme/tracker/../../user\"}", &out, &e),
               ERR_INVALID, "a longer path");
        is_int(call("github.create_issue", "{\"repo\":\"../user\",\"title\":\"x\"}", &out, &e),
               ERR_INVALID, "create_issue in ../user");
        is_str(e.param, "repo", "param repo");
        is_int(nrequests("/github"), 0, "nothing was sent");

        is_int(call("github.create_issue",
                    "{\"repo\":\"acme/widgets\",\"title\":\"Two\\nlines\",\"body\":\"The body\\n"
                    "and more\"}",
                    &out, &e),
               0, "create_issue");
        is_str(sfield(out, "id"), "9000001", "its id");
        is_str(sfield(out, "url"), "https://github.com/acme/widgets/issues/1", "its page");
        r = request_at("/github", -1);
        is_str(sfield(r, "method"), "POST", "POST");
        is_str(sfield(r, "path"), "/github/repos/acme/widgets/issues", "the issues");
        is_str(sfield(json_object_get(r, "body"), "title"), "Two lines",
               "a line break in the title is a space");
        is_str(sfield(json_object_get(r, "body"), "body"), "The body\nand more", "the body");
        json_decref(r);
        json_decref(out);
        is_int(call("github.list_issues", "{\"repo\":\"acme/widgets\"}", &out, &e), 0,
               "listed again");
        is_str(sfield(json_array_get(json_object_get(out, "issues"), 0), "title"), "Two lines",
               "the new issue is there");
        json_decref(out);

        mock_control("fail", "{\"path_prefix\":\"/github\",\"mode\":\"500\",\"count\":1}");
        is_int(call("github.list_issues", "{\"repo\":\"acme/tracker\"}", &out, &e), ERR_UPSTREAM,
               "a 500");
        ok(strstr(e.msg, "GitHub refused: HTTP 500") != NULL, "said");
    }
}

/* ---- Google Calendar ---- */

static void calendar(void)
{
    subtest("google calendar")
    {
        json_t *out, *r, *ev;
        int64_t sent, before = clock_now_ms();
        struct err e;

        mock_control("reset", "{}");
        is_int(call("google_calendar.list_events", "{}", &out, &e), 0, "list_events");
        ev = json_object_get(out, "events");
        is_int(json_array_size(ev), 4, "the four ahead (a weekly one twice)");
        is_str(sfield(json_array_get(ev, 0), "id"), "seedfut001", "soonest first");
        is_str(sfield(json_array_get(ev, 0), "summary"), "Planning", "its summary");
        is_str(sfield(json_array_get(ev, 0), "start"), "2099-03-01T09:00:00Z", "its start");
        is_str(sfield(json_array_get(ev, 0), "end"), "2099-03-01T10:00:00Z", "its end");
        ok(sfield(json_array_get(ev, 0), "url") != NULL, "its link");
        is_str(sfield(json_array_get(ev, 1), "id"), "seedweekly_0", "a recurring one expanded");
        is_str(sfield(json_array_get(ev, 2), "start"), "2099-03-05", "an all-day one: its date");
        r = request_at("/google", -1);
        is_str(sfield(r, "method"), "GET", "GET");
        is_str(sfield(r, "path"), "/google/calendar/v3/calendars/primary/events",
               "the primary calendar's events");
        is_str(q(r, "singleEvents"), "true", "singleEvents=true");
        is_str(q(r, "orderBy"), "startTime", "orderBy=startTime");
        is_str(q(r, "maxResults"), "20", "maxResults=20");
        ok(!q(r, "timeMax"), "no timeMax");
        ok(q(r, "timeMin") &&
               clock_parse_iso(q(r, "timeMin"), strlen(q(r, "timeMin")), &sent) == 0 &&
               sent >= before - 1000 && sent <= clock_now_ms(),
           "timeMin: now");
        json_decref(r);
        json_decref(out);

        is_int(call("google_calendar.list_events",
                    "{\"time_min\":\"2024-01-01T00:00:00Z\",\"time_max\":"
                    "\"2024-02-01T00:00:00+01:00\",\"limit\":5}",
                    &out, &e),
               0, "a past month");
        ev = json_object_get(out, "events");
        is_int(json_array_size(ev), 1, "one event");
        is_str(sfield(json_array_get(ev, 0), "summary"), "Kickoff", "the kickoff");
        r = request_at("/google", -1);
        is_str(q(r, "timeMin"), "2024-01-01T00:00:00.000Z", "timeMin in UTC");
        is_str(q(r, "timeMax"), "2024-01-31T23:00:00.000Z", "timeMax in UTC");
        is_str(q(r, "maxResults"), "5", "maxResults=5");
        json_decref(r);
        json_decref(out);

        is_int(call("google_calendar.list_events", "{\"limit\":2}", &out, &e), 0, "limit 2");
        is_int(json_array_size(json_object_get(out, "events")), 2, "two events");
        json_decref(out);

        mock_control("reset", "{}");
        is_int(call("google_calendar.list_events", "{\"time_min\":\"tomorrow\"}", &out, &e),
               ERR_INVALID, "time_min not a date-time");
        is_str(e.param, "time_min", "param time_min");
        is_int(call("google_calendar.list_events", "{\"time_max\":\"2024-01-01\"}", &out, &e),
               ERR_INVALID, "time_max a date");
        is_str(e.param, "time_max", "param time_max");
        is_int(call("google_calendar.list_events", "{\"calendar_id\":\"..\"}", &out, &e),
               ERR_INVALID, "calendar_id ..");
        is_str(e.param, "calendar_id", "param calendar_id");
        is_int(call("google_calendar.create_event",
                    "{\"calendar_id\":\".\",\"summary\":\"x\",\"start\":\"2099-01-01\","
                    "\"end\":\"2099-01-02\"}",
                    &out, &e),
               ERR_INVALID, "create_event in calendar .");
        is_int(nrequests("/google"), 0, "nothing was sent");

        is_int(call("google_calendar.list_events",
                    "{\"time_min\":\"2099-02-01T00:00:00Z\",\"time_max\":\"2099-01-01T00:00:00Z\"}",
                    &out, &e),
               ERR_UPSTREAM, "an empty range");
        ok(strstr(e.msg, "HTTP 400") && strstr(e.msg, "time range is empty"), "Google's reason");
        is_int(call("google_calendar.list_events", "{\"calendar_id\":\"nobody@example.com\"}", &out,
                    &e),
               ERR_UPSTREAM, "a calendar Google does not know");
        ok(strstr(e.msg, "HTTP 404") != NULL, "404");

        is_int(call("google_calendar.create_event",
                    "{\"summary\":\"Review\",\"start\":\"2099-04-01T10:00:00Z\",\"end\":"
                    "\"2099-04-01T11:00:00Z\",\"description\":\"Bring notes\","
                    "\"calendar_id\":\"team@group.calendar.google.com\"}",
                    &out, &e),
               0, "create_event");
        is_str(sfield(out, "id"), "mockev0001", "its id");
        ok(sfield(out, "url") &&
               strncmp(sfield(out, "url"), "https://www.google.com/calendar/", 32) == 0,
           "its link");
        r = request_at("/google", -1);
        is_str(sfield(r, "method"), "POST", "POST");
        is_str(sfield(r, "path"),
               "/google/calendar/v3/calendars/team%40group.calendar.google.com/events",
               "the calendar, encoded");
        is_str(sfield(json_object_get(r, "body"), "summary"), "Review", "the summary");
        is_str(sfield(json_object_get(json_object_get(r, "body"), "start"), "dateTime"),
               "2099-04-01T10:00:00Z", "the start");
        is_str(sfield(json_object_get(r, "body"), "description"), "Bring notes", "the description");
        json_decref(r);
        json_decref(out);
        is_int(call("google_calendar.list_events",
                    "{\"calendar_id\":\"team@group.calendar.google.com\"}", &out, &e),
               0, "that calendar listed");
        is_str(sfield(json_array_get(json_object_get(out, "events"), 0), "summary"), "Review",
               "the new event is there");
        json_decref(out);
    }
}

/* ---- Outlook ---- */

static void outlook(void)
{
    subtest("outlook")
    {
        json_t *out, *r, *ms, *to;
        const char *preview;
        struct err e;

        mock_control("reset", "{}");
        is_int(call("outlook.list_messages", "{}", &out, &e), 0, "list_messages");
        ms = json_object_get(out, "messages");
        is_int(json_array_size(ms), 4, "the mailbox's four");
        is_str(sfield(json_array_get(ms, 0), "id"), "AAMkMOCK0001", "newest first");
        is_str(sfield(json_array_get(ms, 0), "from"), "jane@example.com", "from: the address");
        is_str(sfield(json_array_get(ms, 0), "from_name"), "Jane Doe", "and the name");
        is_str(sfield(json_array_get(ms, 0), "subject"), "Quarterly report", "the subject");
        is_str(sfield(json_array_get(ms, 0), "received_at"), "2024-03-04T09:15:00Z", "received_at");
        preview = sfield(json_array_get(ms, 0), "preview");
        ok(preview && strlen(preview) == 203 && strcmp(preview + 200, "\xE2\x80\xA6") == 0,
           "a long preview cut to 200 bytes and an ellipsis");
        is_str(sfield(json_array_get(ms, 1), "preview"), "Pizza or sushi?", "a short one whole");
        r = request_at("/graph", -1);
        is_str(sfield(r, "method"), "GET", "GET");
        is_str(sfield(r, "path"), "/graph/v1.0/me/messages", "/me/messages");
        is_str(q(r, "$top"), "20", "$top=20");
        is_str(q(r, "$select"), "id,subject,from,receivedDateTime,bodyPreview", "$select");
        is_str(q(r, "$orderby"), "receivedDateTime desc", "newest first");
        ok(!q(r, "$search"), "no $search");
        json_decref(r);
        json_decref(out);

        is_int(call("outlook.list_messages", "{\"query\":\"quarterly\",\"limit\":1}", &out, &e), 0,
               "a search, limit 1");
        ms = json_object_get(out, "messages");
        is_int(json_array_size(ms), 1, "one");
        is_str(sfield(json_array_get(ms, 0), "subject"), "Quarterly report", "the newest match");
        r = request_at("/graph", -1);
        is_str(q(r, "$search"), "\"quarterly\"", "$search in double quotes");
        is_str(q(r, "$top"), "1", "$top=1");
        ok(!q(r, "$orderby"), "and no $orderby with it");
        json_decref(r);
        json_decref(out);
        is_int(call("outlook.list_messages", "{\"query\":\"the \\\"final\\\"\"}", &out, &e), 0,
               "a search with double quotes");
        is_int(json_array_size(json_object_get(out, "messages")), 1, "found");
        r = request_at("/graph", -1);
        is_str(q(r, "$search"), "\"the \\\"final\\\"\"", "escaped with backslashes");
        json_decref(r);
        json_decref(out);

        is_int(call("outlook.send_mail",
                    "{\"to\":\"ann@example.com, ben@example.com\",\"subject\":\"Hi\","
                    "\"body\":\"Hello both\"}",
                    &out, &e),
               0, "send_mail to two");
        ok(sfield(out, "id") && strlen(sfield(out, "id")) == 36, "id: the client-request-id");
        r = request_at("/graph", -1);
        is_str(sfield(r, "path"), "/graph/v1.0/me/sendMail", "sendMail");
        to =
            json_object_get(json_object_get(json_object_get(r, "body"), "message"), "toRecipients");
        is_int(json_array_size(to), 2, "two recipients");
        is_str(sfield(json_object_get(json_array_get(to, 1), "emailAddress"), "address"),
               "ben@example.com", "the second, trimmed");
        is_str(
            sfield(json_object_get(json_object_get(json_object_get(r, "body"), "message"), "body"),
                   "content"),
            "Hello both", "the body");
        is_str(
            json_string_value(json_object_get(json_object_get(r, "headers"), "client-request-id")),
            sfield(out, "id"), "the id is the request id sent");
        json_decref(r);
        json_decref(out);
        is_int(call("outlook.send_mail",
                    "{\"to\":\"not-an-address\",\"subject\":\"x\",\"body\":\"\"}", &out, &e),
               ERR_UPSTREAM, "a bad address");
        ok(strstr(e.msg, "HTTP 400") && strstr(e.msg, "not-an-address"), "Graph's reason");
    }
}

/* ---- HubSpot ---- */

static void hubspot(void)
{
    subtest("hubspot")
    {
        json_t *out, *r, *cs, *props;
        struct err e;

        mock_control("reset", "{}");
        is_int(call("hubspot.search_contacts", "{\"query\":\"doe\"}", &out, &e), 0,
               "search_contacts");
        cs = json_object_get(out, "contacts");
        is_int(json_array_size(cs), 2, "two Does");
        is_str(sfield(json_array_get(cs, 0), "id"), "1001", "an id");
        is_str(sfield(json_array_get(cs, 0), "email"), "jane@example.com", "an email");
        is_str(sfield(json_array_get(cs, 0), "firstname"), "Jane", "a first name");
        is_str(sfield(json_array_get(cs, 0), "lastname"), "Doe", "a last name");
        is_str(sfield(json_array_get(cs, 0), "company"), "Acme Corp", "a company");
        ok(json_is_null(json_object_get(json_array_get(cs, 1), "company")), "or null");
        r = request_at("/hubspot", -1);
        is_str(sfield(r, "method"), "POST", "POST");
        is_str(sfield(r, "path"), "/hubspot/crm/v3/objects/contacts/search", "contacts/search");
        is_str(sfield(json_object_get(r, "body"), "query"), "doe", "the query");
        is_int(json_integer_value(json_object_get(json_object_get(r, "body"), "limit")), 20,
               "limit 20");
        props = json_object_get(json_object_get(r, "body"), "properties");
        ok(json_array_size(props) == 4 &&
               strcmp(json_string_value(json_array_get(props, 3)), "company") == 0,
           "the properties asked for");
        json_decref(r);
        json_decref(out);
        is_int(call("hubspot.search_contacts", "{\"query\":\"doe\",\"limit\":1}", &out, &e), 0,
               "limit 1");
        is_int(json_array_size(json_object_get(out, "contacts")), 1, "one");
        json_decref(out);
        is_int(call("hubspot.search_contacts", "{\"query\":\"globex\"}", &out, &e), 0,
               "by company");
        is_str(sfield(json_array_get(json_object_get(out, "contacts"), 0), "firstname"), "Bob",
               "Bob");
        json_decref(out);

        is_int(call("hubspot.create_note",
                    "{\"body\":\"Called about renewal\",\"contact_email\":\"jane@example.com\"}",
                    &out, &e),
               0, "create_note");
        is_str(sfield(out, "id"), "50001", "its id");
        r = request_at("/hubspot", -1);
        is_str(sfield(r, "path"), "/hubspot/crm/v3/objects/notes", "notes");
        is_str(sfield(json_object_get(json_object_get(r, "body"), "properties"), "hs_note_body"),
               "Called about renewal", "the note");
        is_str(sfield(json_object_get(
                          json_array_get(
                              json_object_get(json_object_get(r, "body"), "associations"), 0),
                          "to"),
                      "id"),
               "1001", "attached to Jane");
        json_decref(r);
        json_decref(out);
        is_int(call("hubspot.create_note",
                    "{\"body\":\"x\",\"contact_email\":\"nobody@example.com\"}", &out, &e),
               ERR_UPSTREAM, "an unknown contact");
        ok(strstr(e.msg, "no contact") != NULL, "said");
    }
}

/* ---- Failures shared by every tool ---- */

static const struct {
    const char *tool, *args, *prefix;
} every[] = {
    {"slack.post_message", "{\"channel\":\"#general\",\"text\":\"x\"}", "/slack"},
    {"slack.list_channels", "{}", "/slack"},
    {"github.create_issue", "{\"repo\":\"acme/widgets\",\"title\":\"x\"}", "/github"},
    {"github.list_issues", "{\"repo\":\"acme/tracker\"}", "/github"},
    {"google_calendar.create_event",
     "{\"summary\":\"x\",\"start\":\"2099-01-01T10:00:00Z\",\"end\":\"2099-01-01T11:00:00Z\"}",
     "/google"},
    {"google_calendar.list_events", "{}", "/google"},
    {"outlook.send_mail", "{\"to\":\"a@example.com\",\"subject\":\"x\",\"body\":\"y\"}", "/graph"},
    {"outlook.list_messages", "{}", "/graph"},
    {"hubspot.create_note", "{\"body\":\"x\"}", "/hubspot"},
    {"hubspot.search_contacts", "{\"query\":\"doe\"}", "/hubspot"},
};

#define NEVERY (sizeof(every) / sizeof(every[0]))

static void failures(void)
{
    subtest("not connected")
    {
        json_t *out;
        struct err e;

        mock_control("reset", "{}");
        for (size_t i = 0; i < NEVERY; i++) {
            is_int(call_as(&stranger, every[i].tool, every[i].args, &out, &e), ERR_NOT_FOUND,
                   every[i].tool);
            ok(strcmp(e.code, "integration_not_connected") == 0 &&
                   strncmp(e.msg, "integration_not_connected: ", 27) == 0,
               "integration_not_connected: ...");
        }
        is_int(nrequests("/"), 0, "nothing was sent");
    }
    subtest("refused (401)")
    {
        json_t *out;
        struct err e;

        mock_control("reset", "{}");
        mock_control("tokens", "{\"valid\":[]}"); /* the stored token no longer works */
        for (size_t i = 0; i < NEVERY; i++) {
            is_int(call(every[i].tool, every[i].args, &out, &e), ERR_UPSTREAM, every[i].tool);
            if (!ok(strstr(e.msg, " refused: HTTP ") != NULL, "the provider's refusal"))
                printf("#   %s\n", e.msg);
        }
        is_int(nrequests("/"), NEVERY, "each sent once, not again");
    }
    subtest("the provider fails (5xx)")
    {
        json_t *out;
        struct err e;

        mock_control("reset", "{}");
        for (size_t i = 0; i < NEVERY; i++) {
            char rule[128];
            snprintf(rule, sizeof(rule), "{\"path_prefix\":\"%s\",\"mode\":\"502\"}",
                     every[i].prefix);
            mock_control("fail", rule);
            is_int(call(every[i].tool, every[i].args, &out, &e), ERR_UPSTREAM, every[i].tool);
            if (!ok(strstr(e.msg, "HTTP 502") != NULL, "HTTP 502"))
                printf("#   %s\n", e.msg);
            snprintf(rule, sizeof(rule), "{\"path_prefix\":\"%s\",\"mode\":\"off\"}",
                     every[i].prefix);
            mock_control("fail", rule);
        }
    }
    subtest("no answer")
    {
        char *url = cfg.oauth[0][CONFIG_OAUTH_API_URL], saved[CONFIG_OAUTH_VALUE_MAX];
        json_t *out;
        struct err e;

        snprintf(saved, sizeof(saved), "%s", url);
        snprintf(url, CONFIG_OAUTH_VALUE_MAX, "http://127.0.0.1:1/slack/api");
        is_int(call("slack.list_channels", "{}", &out, &e), ERR_UPSTREAM, "a closed port");
        ok(strstr(e.msg, "Slack did not answer") != NULL, "did not answer");
        is_str(e.code, "upstream_error", "upstream_error");
        snprintf(url, CONFIG_OAUTH_VALUE_MAX, "%s", saved);
    }
    subtest("unknown")
    {
        json_t *out;
        struct err e;
        is_int(call("slack.delete_workspace", "{}", &out, &e), ERR_INVALID, "an unknown tool");
        is_int(call("knowledge.search", "{\"query\":\"x\"}", &out, &e), ERR_INVALID,
               "not an integration's");
    }
}

/* A token about to expire is refreshed before the call, and the new one stored. */
static void refreshing(void)
{
    subtest("refresh first")
    {
        char tokens[256];
        json_t *out, *r, *now;
        struct err e;

        mock_control("reset", "{}");
        snprintf(tokens, sizeof(tokens),
                 "{\"access_token\":\"old-token\",\"refresh_token\":\"test-refresh-token\","
                 "\"expires_at\":%lld}",
                 (long long)clock_now_ms() + 1000);
        ok(connect_as(&tenant, "slack", tokens) == 0, "a token ending in a second");
        is_int(call("slack.list_channels", "{\"limit\":1}", &out, &e), 0, "list_channels");
        json_decref(out);
        is_int(nrequests("/slack"), 2, "the refresh, then the call");
        r = request_at("/slack", 0);
        is_str(sfield(r, "path"), "/slack/api/oauth.v2.access", "the token endpoint first");
        is_str(sfield(json_object_get(r, "body"), "grant_type"), "refresh_token", "a refresh");
        json_decref(r);
        r = request_at("/slack", 1);
        is_str(json_string_value(json_object_get(json_object_get(r, "headers"), "authorization")),
               "Bearer xoxb-mock-1", "the call with the new token");
        json_decref(r);
        now = stored_tokens("slack");
        is_str(sfield(now, "access_token"), "xoxb-mock-1", "stored");
        json_decref(now);

        mock_control("tokens", "{\"refresh\":[]}");
        snprintf(tokens, sizeof(tokens),
                 "{\"access_token\":\"old-token\",\"refresh_token\":\"gone\",\"expires_at\":%lld}",
                 (long long)clock_now_ms() + 1000);
        connect_as(&tenant, "slack", tokens);
        is_int(call("slack.list_channels", "{}", &out, &e), ERR_NOT_FOUND, "a refused refresh");
        ok(strstr(e.msg, "reauthorization_required") != NULL, "reauthorization_required");
        connect_as(&tenant, "slack", "{\"access_token\":\"test-token\"}");
    }
}

int main(void)
{
    char dir[] = "/tmp/test_integ_tools.XXXXXX", path[64];
    const char *api[] = {"/slack/api", "/google", "/graph", "/github", "/hubspot"};
    const char *token[] = {"/slack/api/oauth.v2.access", "/google/token",
                           "/microsoft/common/oauth2/v2.0/token",
                           "/github/login/oauth/access_token", "/hubspot/oauth/v1/token"};
    unsigned char secret[32];
    struct httpc *h = NULL;
    struct store_org org, org2;
    struct store *s;
    struct err e;

    signal(SIGPIPE, SIG_IGN);
    err_clear(&e);
    if (!ok(mock_start() == 0, "the provider mock started (run from the repository's root)")) {
        mock_stop();
        return done_testing();
    }
    ok(mkdtemp(dir) != NULL && httpc_new(&h) == 0, "a client");
    snprintf(path, sizeof(path), "%s/db", dir);
    ok(store_pool_new(path, 2, &pool, &e) == 0, "a database");
    s = store_pool_get(pool);
    ok(store_migrate(s, &e) == 0 && store_org_create(s, "acme", 0, 1000, NULL, 0, &org, &e) == 0 &&
           store_org_create(s, "other", 0, 1000, NULL, 0, &org2, &e) == 0,
       "two organizations");
    store_pool_put(pool, s);
    snprintf(tenant.org_id, sizeof(tenant.org_id), "%s", org.id);
    tenant.mode = STORE_LIVE;
    snprintf(stranger.org_id, sizeof(stranger.org_id), "%s", org2.id);
    stranger.mode = STORE_LIVE;

    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.public_url, sizeof(cfg.public_url), "https://wf.example.com");
    for (size_t i = 0; i < INTEG_PROVIDERS; i++) {
        const struct integ_provider *p = integ_provider_at(i);
        char(*o)[CONFIG_OAUTH_VALUE_MAX] = cfg.oauth[p->config_index];
        snprintf(o[CONFIG_OAUTH_API_URL], CONFIG_OAUTH_VALUE_MAX, "%s%s", base, api[i]);
        snprintf(o[CONFIG_OAUTH_TOKEN_URL], CONFIG_OAUTH_VALUE_MAX, "%s%s", base, token[i]);
        snprintf(o[CONFIG_OAUTH_CLIENT_ID], CONFIG_OAUTH_VALUE_MAX, "test-client-id");
        snprintf(o[CONFIG_OAUTH_CLIENT_SECRET], CONFIG_OAUTH_VALUE_MAX, "test-client-secret");
    }
    memset(secret, 9, sizeof(secret));
    env.cfg = &cfg;
    env.pool = pool;
    env.httpc = h;
    integ_key(secret, sizeof(secret), env.key);
    connect_all();

    slack();
    github();
    calendar();
    outlook();
    hubspot();
    failures();
    refreshing();

    mock_stop();
    httpc_free(h);
    store_pool_free(pool);
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof(path), "%s/db%s", dir, (const char *[]){"", "-wal", "-shm"}[i]);
        unlink(path);
    }
    rmdir(dir);
    return done_testing();
}
