/* SPDX-License-Identifier: MIT */
/*
 * openai.c: the OpenAI-compatible door (contract §16): GET /v1/openai/models, GET
 * /v1/openai/models/{id} and POST /v1/openai/chat/completions, so that an official OpenAI
 * client pointed at {public_url}/v1/openai chats with the employees unchanged.
 *
 * DESIGN. A completion is a chat turn (chat.c, api_chat_turn) in another wire format: the
 * request is checked and mapped here (model = the employee, the last user message = the
 * message, earlier user and assistant turns = the history, system and developer messages =
 * the context), and everything after that (charging, limits, storing, streaming, the group
 * commit) is chat's. Only the answer differs: the struct turn_format below writes OpenAI's
 * chat.completion object, or chat.completion.chunk events ending in `data: [DONE]`. A request
 * that is refused is refused before the turn starts, so it stores and charges nothing. Errors
 * take OpenAI's shape in api/errors.c (the routes carry ROUTE_OPENAI).
 *
 * api_openai_messages() is the pure part: OpenAI's `messages` to a chat turn's input.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/log.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OPT_USAGE 1u /* stream_options.include_usage */
#define TEXT_CAP ((1u << 20) + 1)

/* ---- messages -> a chat turn (pure) ---- */

/* Members a message may carry: role, content, the ones OpenAI's own answers hold (an assistant
 * message sent back as it came, "parsed" as the SDK's helpers give it), and the tool ones
 * (checked with the role); the others of OpenAI's only when null. */
static const char *const message_members[] = {"role",       "content",      "name",
                                              "refusal",    "annotations",  "parsed",
                                              "tool_calls", "tool_call_id", NULL};
/* Members of a tool call sent back: OpenAI's, and "index" and "parsed_arguments" as the SDK's
 * helpers give them (ignored). */
static const char *const call_members[] = {"id", "type", "function", "index", NULL};
static const char *const function_members[] = {"name", "arguments", "parsed_arguments", NULL};
static const char *const null_members[] = {"function_call", "audio", NULL};

#define CALLS_MAX 128  /* tool calls of one assistant message */
#define CALL_ID_MAX 64 /* bytes of a call's id (a model's, or ours) */

static bool listed(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++) {
        if (strcmp(list[i], s) == 0)
            return true;
    }
    return false;
}

/* One message as read (strings borrowed from the document or in the arena). */
struct oa_message {
    const char *role;
    const char *text;            /* NULL: none (an assistant message that calls tools) */
    struct llm_tool_call *calls; /* an assistant message's tool_calls */
    size_t ncalls;
    const char *call_id; /* a tool message's tool_call_id (NULL: none) */
};

/* The text of message 'i''s 'content': a string, or text parts joined by newlines. */
static int content_text(json_t *c, size_t i, struct arena *a, const char **out, struct err *e)
{
    struct buf b;
    size_t j;
    json_t *part;

    if (json_is_string(c)) {
        *out = json_string_value(c);
        return 0;
    }
    if (!json_is_array(c))
        return err_set(e, ERR_INVALID, "invalid_request",
                       arena_printf(a, "messages[%zu].content", i),
                       "Invalid messages[%zu].content: must be a string or an array of text "
                       "parts.",
                       i);
    buf_init(&b, TEXT_CAP);
    json_array_foreach(c, j, part)
    {
        const char *key;
        json_t *v;
        const json_t *type = json_object_get(part, "type");
        const json_t *text = json_object_get(part, "text");
        if (!json_is_object(part) || !json_is_string(type)) {
            buf_cleanup(&b);
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].content[%zu]", i, j),
                           "Invalid messages[%zu].content[%zu]: must be an object "
                           "{\"type\": \"text\", \"text\": ...}.",
                           i, j);
        }
        if (strcmp(json_string_value(type), "text") != 0) {
            buf_cleanup(&b);
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].content[%zu].type", i, j),
                           "Unsupported content part type %.40s: only text parts are "
                           "supported.",
                           json_string_value(type));
        }
        json_object_foreach(part, key, v)
        {
            if (strcmp(key, "type") != 0 && strcmp(key, "text") != 0) {
                buf_cleanup(&b);
                return err_set(e, ERR_INVALID, "invalid_request",
                               arena_printf(a, "messages[%zu].content[%zu].%.40s", i, j, key),
                               "Unknown member %.40s of a text part.", key);
            }
        }
        if (!json_is_string(text)) {
            buf_cleanup(&b);
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].content[%zu].text", i, j),
                           "Invalid messages[%zu].content[%zu].text: must be a string.", i, j);
        }
        if ((j > 0 && buf_append(&b, "\n", 1)) || buf_appends(&b, json_string_value(text))) {
            buf_cleanup(&b);
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].content", i), "The content is too long.");
        }
    }
    *out = arena_strndup(a, buf_ptr(&b), buf_len(&b));
    buf_cleanup(&b);
    return 0;
}

/* Whether 'v' is a string of 1..'max' bytes. */
static bool short_string(const json_t *v, size_t max)
{
    return json_is_string(v) && json_string_length(v) >= 1 && json_string_length(v) <= max;
}

/* Whether every member of object 'o' is in 'list'. */
static bool members_in(json_t *o, const char *const *list)
{
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (!listed(list, key))
            return false;
    }
    return true;
}

/* The 'tool_calls' of assistant message 'i' into 'm': 1..CALLS_MAX objects {id, type:
 * "function", function: {name, arguments}} (OpenAI's own), ids unique. Any fault names
 * messages[i].tool_calls. */
static int read_calls(json_t *calls, size_t i, struct arena *a, struct oa_message *m, struct err *e)
{
    size_t k;
    json_t *c;
    const char *param = arena_printf(a, "messages[%zu].tool_calls", i);

    if (!json_is_array(calls) || json_array_size(calls) < 1 || json_array_size(calls) > CALLS_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", param,
                       "Invalid %s: must be an array of 1 to %d tool calls.", param, CALLS_MAX);
    m->ncalls = json_array_size(calls);
    m->calls = arena_calloc(a, m->ncalls * sizeof(*m->calls));
    json_array_foreach(calls, k, c)
    {
        json_t *fn = json_object_get(c, "function");
        const json_t *type = json_object_get(c, "type");
        const json_t *id = json_object_get(c, "id");
        const json_t *name = json_object_get(fn, "name");
        const json_t *args = json_object_get(fn, "arguments");
        if (!json_is_object(c) || !members_in(c, call_members) || !short_string(id, CALL_ID_MAX) ||
            !json_is_string(type) || strcmp(json_string_value(type), "function") != 0 ||
            !json_is_object(fn) || !members_in(fn, function_members) ||
            !short_string(name, TOOLS_MODEL_NAME_MAX) || !json_is_string(args))
            return err_set(e, ERR_INVALID, "invalid_request", param,
                           "Invalid %s[%zu]: must be {\"id\": ..., \"type\": \"function\", "
                           "\"function\": {\"name\": ..., \"arguments\": \"...\"}}.",
                           param, k);
        m->calls[k].id = json_string_value(id);
        m->calls[k].name = json_string_value(name);
        m->calls[k].arguments = json_string_value(args);
        for (size_t l = 0; l < k; l++)
            if (strcmp(m->calls[l].id, m->calls[k].id) == 0)
                return err_set(e, ERR_INVALID, "invalid_request", param,
                               "Invalid %s[%zu]: the id %.64s is there twice.", param, k,
                               m->calls[k].id);
    }
    return 0;
}

/* Check message 'i' ('j') and read it into 'm'. */
static int read_message(json_t *j, size_t i, struct arena *a, struct oa_message *m, struct err *e)
{
    const char *key;
    json_t *v, *calls, *call_id;
    json_t *r;

    memset(m, 0, sizeof(*m));
    if (!json_is_object(j))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu]", i),
                       "Invalid messages[%zu]: must be an object with role and content.", i);
    json_object_foreach(j, key, v)
    {
        if (listed(message_members, key) || (listed(null_members, key) && json_is_null(v)))
            continue;
        return err_set(
            e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu].%.40s", i, key),
            listed(null_members, key) ? "Unsupported messages[%zu].%.40s: use tool_calls and tools."
                                      : "Unknown member messages[%zu].%.40s.",
            i, key);
    }
    r = json_object_get(j, "role");
    if (!json_is_string(r))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu].role", i),
                       "Invalid messages[%zu].role: must be a string.", i);
    m->role = json_string_value(r);
    if (strcmp(m->role, "system") != 0 && strcmp(m->role, "developer") != 0 &&
        strcmp(m->role, "user") != 0 && strcmp(m->role, "assistant") != 0 &&
        strcmp(m->role, "tool") != 0)
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu].role", i),
                       "Unsupported role %.40s: must be one of system, developer, user, "
                       "assistant, tool.",
                       m->role);
    v = json_object_get(j, "name");
    if (v && !json_is_string(v))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu].name", i),
                       "Invalid messages[%zu].name: must be a string.", i);
    calls = json_object_get(j, "tool_calls");
    if (calls && !json_is_null(calls)) {
        int rc;
        if (strcmp(m->role, "assistant") != 0)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].tool_calls", i),
                           "Invalid messages[%zu].tool_calls: only an assistant message calls "
                           "tools.",
                           i);
        rc = read_calls(calls, i, a, m, e);
        if (rc)
            return rc;
    }
    call_id = json_object_get(j, "tool_call_id");
    if (call_id && !json_is_null(call_id)) {
        if (strcmp(m->role, "tool") != 0 || !short_string(call_id, CALL_ID_MAX))
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].tool_call_id", i),
                           "Invalid messages[%zu].tool_call_id: only a tool message answers a "
                           "call, with its id (1 to %d bytes).",
                           i, CALL_ID_MAX);
        m->call_id = json_string_value(call_id);
    }
    v = json_object_get(j, "content");
    if (m->ncalls && (!v || json_is_null(v)))
        return 0; /* an assistant message that only calls tools */
    return content_text(v, i, a, &m->text, e);
}

/* Whether assistant message 'm' made the call 'id'. */
static bool call_of(const struct oa_message *m, const char *id)
{
    for (size_t k = 0; k < m->ncalls; k++)
        if (strcmp(m->calls[k].id, id) == 0)
            return true;
    return false;
}

/*
 * The tool messages of 'ms' (of 'n'): each right after an assistant message that called tools
 * or another tool message (else its role is at fault), naming by tool_call_id a call of that
 * assistant message once; and every call of an assistant message is answered (else its
 * tool_calls are at fault), as OpenAI requires.
 */
static int check_tool_messages(const struct oa_message *ms, size_t n, struct arena *a,
                               struct err *e)
{
    size_t open = SIZE_MAX; /* the assistant message whose calls are being answered */

    for (size_t i = 0; i <= n; i++) {
        bool tool = i < n && strcmp(ms[i].role, "tool") == 0;
        if (!tool && open != SIZE_MAX) {
            /* the answers of 'open' end here: one for each of its calls? */
            for (size_t k = 0; k < ms[open].ncalls; k++) {
                bool found = false;
                for (size_t l = open + 1; l < i && !found; l++)
                    found = strcmp(ms[l].call_id, ms[open].calls[k].id) == 0;
                if (!found)
                    return err_set(e, ERR_INVALID, "invalid_request",
                                   arena_printf(a, "messages[%zu].tool_calls", open),
                                   "Invalid messages[%zu].tool_calls: the call %.64s has no "
                                   "tool message answering it.",
                                   open, ms[open].calls[k].id);
            }
            open = SIZE_MAX;
        }
        if (i < n && strcmp(ms[i].role, "assistant") == 0 && ms[i].ncalls) {
            open = i;
            continue;
        }
        if (!tool)
            continue;
        if (open == SIZE_MAX)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].role", i),
                           "Invalid messages[%zu]: a tool message must answer the tool_calls "
                           "of the assistant message before it.",
                           i);
        if (!ms[i].call_id)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].tool_call_id", i),
                           "Invalid messages[%zu].tool_call_id: a tool message names the call "
                           "it answers.",
                           i);
        if (!call_of(&ms[open], ms[i].call_id))
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].tool_call_id", i),
                           "Invalid messages[%zu].tool_call_id: %.64s is not a call of "
                           "messages[%zu].",
                           i, ms[i].call_id, open);
        for (size_t l = open + 1; l < i; l++)
            if (strcmp(ms[l].call_id, ms[i].call_id) == 0)
                return err_set(e, ERR_INVALID, "invalid_request",
                               arena_printf(a, "messages[%zu].tool_call_id", i),
                               "Invalid messages[%zu].tool_call_id: the call %.64s is answered "
                               "twice.",
                               i, ms[i].call_id);
    }
    return 0;
}

/* After the last user message ('last'): only assistant messages that called tools and the
 * tool messages answering them (and system ones). When there are such, the answers to the
 * last of those assistant messages go into 'out' (a follow-up). */
static int read_follow_up(const struct oa_message *ms, size_t n, size_t last, struct arena *a,
                          struct api_openai_input *out, struct err *e)
{
    size_t open = SIZE_MAX, k = 0;

    for (size_t i = last + 1; i < n; i++) {
        if (strcmp(ms[i].role, "assistant") == 0 && !ms[i].ncalls)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].role", i),
                           "Invalid messages[%zu]: an assistant message after the last user "
                           "message; the conversation must end with the user's message, or "
                           "with the results of the calls of the last answer.",
                           i);
        if (strcmp(ms[i].role, "assistant") == 0)
            open = i;
    }
    if (open == SIZE_MAX)
        return 0;
    out->answers = arena_calloc(a, ms[open].ncalls * sizeof(*out->answers));
    for (size_t i = open + 1; i < n; i++) {
        if (strcmp(ms[i].role, "tool") != 0)
            continue;
        out->answers[k].call_id = ms[i].call_id;
        out->answers[k].content = ms[i].text;
        out->answers[k].param = arena_printf(a, "messages[%zu].tool_call_id", i);
        k++;
    }
    out->nanswers = k;
    out->answers_param = arena_printf(a, "messages[%zu].tool_calls", open);
    return 0;
}

/*
 * Map OpenAI's 'messages' to a chat turn's input in '*out' (strings borrowed from 'messages' or
 * copied into 'a'): the last user message is the message (1..API_CHAT_MESSAGE_MAX characters),
 * the user, assistant and tool messages before it the history (oldest first; an assistant
 * message with its tool calls, a tool message with the call it answers), and the system and
 * developer messages, wherever they are, the system text (joined by blank lines; NULL when
 * none). Content is a string or an array of text parts (joined by newlines); an assistant
 * message that calls tools may have none. After the last user message there may be only
 * assistant messages that called tools, each followed by tool messages answering every call:
 * then the answers to the last of them are the follow-up's ('answers'). Returns 0, or
 * ERR_INVALID with 'e' naming the member at fault ("messages", "messages[2].role",
 * "messages[1].content[0].type", "messages[3].tool_call_id", ...). Pure.
 */
int api_openai_messages(json_t *messages, struct arena *a, struct api_openai_input *out,
                        struct err *e)
{
    size_t n = json_array_size(messages), last = SIZE_MAX, nsys = 0;
    struct oa_message *ms;
    struct buf sys;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!json_is_array(messages) || n == 0)
        return err_set(e, ERR_INVALID, "invalid_request", "messages",
                       "Invalid messages: must be a non-empty array of messages.");
    ms = arena_calloc(a, n * sizeof(*ms));
    for (size_t i = 0; i < n; i++) {
        rc = read_message(json_array_get(messages, i), i, a, &ms[i], e);
        if (rc)
            return rc;
        if (strcmp(ms[i].role, "user") == 0)
            last = i;
    }
    if (last == SIZE_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", "messages",
                       "Invalid messages: there is no user message to answer.");
    rc = read_follow_up(ms, n, last, a, out, e);
    if (!rc)
        rc = check_tool_messages(ms, n, a, e);
    if (rc)
        return rc;
    {
        size_t chars = jb_utf8_len(ms[last].text, strlen(ms[last].text));
        if (chars < 1 || chars > API_CHAT_MESSAGE_MAX)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].content", last),
                           "Invalid messages[%zu].content: the message must be 1 to %d "
                           "characters.",
                           last, API_CHAT_MESSAGE_MAX);
    }
    out->message = ms[last].text;
    out->history = arena_calloc(a, (last + 1) * sizeof(*out->history));
    buf_init(&sys, TEXT_CAP);
    for (size_t i = 0; i < n; i++) {
        bool system = strcmp(ms[i].role, "system") == 0 || strcmp(ms[i].role, "developer") == 0;
        if (system && ms[i].text[0]) {
            if (nsys++)
                buf_appends(&sys, "\n\n");
            buf_appends(&sys, ms[i].text);
        } else if (!system && i < last) {
            struct llm_message *h = &out->history[out->nhistory++];
            h->role = strcmp(ms[i].role, "user") == 0        ? "user"
                      : strcmp(ms[i].role, "assistant") == 0 ? "assistant"
                                                             : "tool";
            h->content = ms[i].text;
            h->tool_calls = ms[i].calls;
            h->ntool_calls = ms[i].ncalls;
            h->tool_call_id = ms[i].call_id;
        }
    }
    if (nsys)
        out->system = arena_strndup(a, buf_ptr(&sys), buf_len(&sys));
    buf_cleanup(&sys);
    return 0;
}

/* ---- The request ---- */

struct oa_body {
    const char *model;
    json_t *messages;
    bool stream;
    json_t *stream_options;
    const char *user;
    int64_t n;
    json_t *temperature, *top_p, *presence_penalty, *frequency_penalty;
    int64_t max_tokens, max_completion_tokens, seed;
    json_t *stop, *metadata, *logit_bias, *response_format;
    bool store, logprobs, parallel_tool_calls;
    json_t *tools, *tool_choice, *functions, *function_call;
};

enum {
    F_MODEL,
    F_MESSAGES,
    F_STREAM,
    F_STREAM_OPTIONS,
    F_USER,
    F_N,
    F_TEMPERATURE,
    F_TOP_P,
    F_PRESENCE,
    F_FREQUENCY,
    F_MAX_TOKENS,
    F_MAX_COMPLETION,
    F_SEED,
    F_STOP,
    F_METADATA,
    F_LOGIT_BIAS,
    F_RESPONSE_FORMAT,
    F_STORE,
    F_LOGPROBS,
    F_PARALLEL,
    F_TOOLS,
    F_TOOL_CHOICE,
    F_FUNCTIONS,
    F_FUNCTION_CALL,
    F_COUNT
};

#define OPT JB_NULLABLE
#define AT(m) offsetof(struct oa_body, m)

static const struct jb_field completion_fields[F_COUNT] = {
    {"model", JB_STRING, AT(model), JB_REQUIRED, 1, 100, NULL, NULL, NULL},
    {"messages", JB_ANY, AT(messages), JB_REQUIRED, 0, 0, NULL, NULL, NULL},
    {"stream", JB_BOOL, AT(stream), OPT, 0, 0, NULL, NULL, NULL},
    {"stream_options", JB_ANY, AT(stream_options), OPT | JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"user", JB_STRING, AT(user), OPT, 0, 256, NULL, NULL, NULL},
    {"n", JB_INT, AT(n), OPT, 1, 128, NULL, NULL, NULL},
    {"temperature", JB_ANY, AT(temperature), OPT, 0, 0, NULL, NULL, NULL},
    {"top_p", JB_ANY, AT(top_p), OPT, 0, 0, NULL, NULL, NULL},
    {"presence_penalty", JB_ANY, AT(presence_penalty), OPT, 0, 0, NULL, NULL, NULL},
    {"frequency_penalty", JB_ANY, AT(frequency_penalty), OPT, 0, 0, NULL, NULL, NULL},
    {"max_tokens", JB_INT, AT(max_tokens), OPT, 1, INT32_MAX, NULL, NULL, NULL},
    {"max_completion_tokens", JB_INT, AT(max_completion_tokens), OPT, 1, INT32_MAX, NULL, NULL,
     NULL},
    {"seed", JB_INT, AT(seed), OPT, INT64_MIN, INT64_MAX, NULL, NULL, NULL},
    {"stop", JB_ANY, AT(stop), OPT, 0, 0, NULL, NULL, NULL},
    {"metadata", JB_ANY, AT(metadata), OPT | JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"logit_bias", JB_ANY, AT(logit_bias), OPT | JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"response_format", JB_ANY, AT(response_format), OPT | JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"store", JB_BOOL, AT(store), OPT, 0, 0, NULL, NULL, NULL},
    {"logprobs", JB_BOOL, AT(logprobs), OPT, 0, 0, NULL, NULL, NULL},
    {"parallel_tool_calls", JB_BOOL, AT(parallel_tool_calls), OPT, 0, 0, NULL, NULL, NULL},
    {"tools", JB_ANY, AT(tools), OPT, 0, 0, NULL, NULL, NULL},
    {"tool_choice", JB_ANY, AT(tool_choice), OPT, 0, 0, NULL, NULL, NULL},
    {"functions", JB_ANY, AT(functions), OPT, 0, 0, NULL, NULL, NULL},
    {"function_call", JB_ANY, AT(function_call), OPT, 0, 0, NULL, NULL, NULL},
};

const struct jb_binding api_openai_completion_body = {completion_fields, F_COUNT};

/* Sampling numbers that are accepted (in OpenAI's ranges) and ignored. */
static const struct {
    int field;
    double min, max;
} numbers[] = {
    {F_TEMPERATURE, 0, 2},
    {F_TOP_P, 0, 1},
    {F_PRESENCE, -2, 2},
    {F_FREQUENCY, -2, 2},
};

#define STOP_MAX 4    /* strings of `stop` */
#define TOOLS_MAX 128 /* the client's tools of a request */
/* A client's tool name: OpenAI's rule for function names (it is shown to the model as it is). */
#define TOOL_NAME_PATTERN "^[A-Za-z0-9_-]{1,64}$"

/* The shape of `tools` (each a function tool) and of `tool_choice`. */
static json_t *tools_schema(void)
{
    json_t *fn = json_pack("{s:s,s:{s:{s:s,s:s},s:{s:s},s:{s:s,s:b},s:{s:[s,s]}},s:[s],s:b}",
                           "type", "object", "properties", "name", "type", "string", "pattern",
                           TOOL_NAME_PATTERN, "description", "type", "string", "parameters", "type",
                           "object", "additionalProperties", 1, "strict", "type", "boolean", "null",
                           "required", "name", "additionalProperties", 0);
    json_t *tool =
        json_pack("{s:s,s:{s:{s:s,s:s},s:o},s:[s,s],s:b}", "type", "object", "properties", "type",
                  "type", "string", "const", "function", "function", fn, "required", "type",
                  "function", "additionalProperties", 0);
    return json_pack("{s:s,s:i,s:i,s:o}", "type", "array", "minItems", 1, "maxItems", TOOLS_MAX,
                     "items", tool);
}

static json_t *tool_choice_schema(void)
{
    json_t *named = json_pack("{s:s,s:{s:{s:s,s:s},s:{s:s,s:{s:{s:s}},s:[s],s:b}},s:[s,s],s:b}",
                              "type", "object", "properties", "type", "type", "string", "const",
                              "function", "function", "type", "object", "properties", "name",
                              "type", "string", "required", "name", "additionalProperties", 0,
                              "required", "type", "function", "additionalProperties", 0);
    return json_pack("{s:[{s:s,s:[s,s,s]},o]}", "anyOf", "type", "string", "enum", "none", "auto",
                     "required", named);
}

/* See api.h. The shapes check_body() and read_tools() check by hand. */
json_t *api_openai_member_schema(const char *name)
{
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
        if (strcmp(completion_fields[numbers[i].field].name, name) == 0) {
            json_t *o = json_pack("{s:s}", "type", "number");
            json_object_set_new(o, "minimum", jo_number(numbers[i].min));
            json_object_set_new(o, "maximum", jo_number(numbers[i].max));
            return o;
        }
    }
    if (strcmp(name, "stop") == 0)
        return json_pack("{s:[{s:s},{s:s,s:i,s:{s:s}}]}", "anyOf", "type", "string", "type",
                         "array", "maxItems", STOP_MAX, "items", "type", "string");
    if (strcmp(name, "stream_options") == 0)
        return json_pack("{s:s,s:{s:{s:s}},s:b}", "type", "object", "properties", "include_usage",
                         "type", "boolean", "additionalProperties", 0);
    if (strcmp(name, "response_format") == 0)
        return json_pack("{s:s,s:{s:{s:s,s:s}},s:[s],s:b}", "type", "object", "properties", "type",
                         "type", "string", "const", "text", "required", "type",
                         "additionalProperties", 0);
    if (strcmp(name, "tools") == 0)
        return tools_schema();
    if (strcmp(name, "tool_choice") == 0)
        return tool_choice_schema();
    return NULL;
}

/* Members that ask for what the door does not take; refused when not null. */
static const int refused[] = {F_FUNCTIONS, F_FUNCTION_CALL};

/* What the bound body asks that cannot be honoured, or a value out of OpenAI's bounds. */
static int check_body(const struct oa_body *b, const struct jb_result *res, unsigned *opts,
                      struct err *e)
{
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *name = completion_fields[refused[i]].name;
        if (JB_HAS(*res, refused[i]) && !JB_IS_NULL(*res, refused[i]))
            return err_set(e, ERR_INVALID, "invalid_request", name,
                           "Unsupported %s: give functions as tools (and tool_choice).", name);
    }
    if (JB_HAS(*res, F_N) && b->n != 1)
        return err_set(e, ERR_INVALID, "invalid_request", "n",
                       "Unsupported n: an employee gives one reply per request (n: 1).");
    if (b->logprobs)
        return err_set(e, ERR_INVALID, "invalid_request", "logprobs",
                       "Unsupported logprobs: only false is supported.");
    for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++) {
        const json_t *v =
            *(json_t *const *)(const void *)((const char *)b +
                                             completion_fields[numbers[i].field].offset);
        const char *name = completion_fields[numbers[i].field].name;
        if (v && (!json_is_number(v) || json_number_value(v) < numbers[i].min ||
                  json_number_value(v) > numbers[i].max))
            return err_set(e, ERR_INVALID, "invalid_request", name,
                           "Invalid %s: must be a number from %g to %g.", name, numbers[i].min,
                           numbers[i].max);
    }
    if (b->stop && !json_is_string(b->stop)) {
        size_t i;
        json_t *s;
        if (!json_is_array(b->stop) || json_array_size(b->stop) > STOP_MAX)
            return err_set(e, ERR_INVALID, "invalid_request", "stop",
                           "Invalid stop: must be a string or an array of up to 4 strings.");
        json_array_foreach(b->stop, i, s)
        {
            if (!json_is_string(s))
                return err_set(e, ERR_INVALID, "invalid_request", "stop",
                               "Invalid stop: must be a string or an array of up to 4 strings.");
        }
    }
    if (b->response_format) {
        const json_t *t = json_object_get(b->response_format, "type");
        if (!json_is_string(t) || strcmp(json_string_value(t), "text") != 0 ||
            json_object_size(b->response_format) != 1)
            return err_set(e, ERR_INVALID, "invalid_request", "response_format",
                           "Unsupported response_format: only {\"type\": \"text\"} is "
                           "supported.");
    }
    *opts = 0;
    if (b->stream_options) {
        const char *key;
        json_t *v;
        json_object_foreach(b->stream_options, key, v)
        {
            char param[64];
            snprintf(param, sizeof(param), "stream_options.%.40s", key);
            if (strcmp(key, "include_usage") != 0)
                return err_set(e, ERR_INVALID, "invalid_request", param,
                               "Unsupported stream_options.%.40s: only include_usage is "
                               "supported.",
                               key);
            if (!json_is_boolean(v))
                return err_set(e, ERR_INVALID, "invalid_request", "stream_options.include_usage",
                               "Invalid stream_options.include_usage: must be a boolean.");
            if (json_is_true(v))
                *opts |= OPT_USAGE;
        }
    }
    return 0;
}

/* ---- The client's tools ---- */

/* The client's tools of a request, as the turn takes them. */
struct oa_tools {
    struct llm_tool *v;
    const char **params; /* "tools[i].function.name" */
    size_t n;
    const char *choice; /* tool_choice for the model (JSON text), or NULL: auto */
    bool none;          /* tool_choice "none": the tools are not offered */
};

/* Why 'name' is not a client's tool name (TOOL_NAME_PATTERN), or NULL. */
static const char *tool_name_fault(const char *name)
{
    size_t len = strlen(name);
    if (len < 1 || len > TOOLS_MODEL_NAME_MAX)
        return "must be 1 to 64 characters";
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return "may hold only a-z, A-Z, 0-9, _ and -";
    }
    return NULL;
}

/* Check tool 'i' of `tools` ('t') and read it into 'out'. */
static int read_tool(json_t *t, size_t i, struct arena *a, struct llm_tool *out, struct err *e)
{
    const char *key, *fault;
    json_t *v, *fn, *type, *name, *desc, *params, *strict;

    if (!json_is_object(t))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "tools[%zu]", i),
                       "Invalid tools[%zu]: must be an object {\"type\": \"function\", "
                       "\"function\": {...}}.",
                       i);
    json_object_foreach(t, key, v)
    {
        if (strcmp(key, "type") != 0 && strcmp(key, "function") != 0)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "tools[%zu].%.40s", i, key),
                           "Unknown member tools[%zu].%.40s.", i, key);
    }
    type = json_object_get(t, "type");
    if (!json_is_string(type) || strcmp(json_string_value(type), "function") != 0)
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "tools[%zu].type", i),
                       "Unsupported tools[%zu].type: only \"function\" tools are supported.", i);
    fn = json_object_get(t, "function");
    if (!json_is_object(fn))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "tools[%zu].function", i),
                       "Invalid tools[%zu].function: must be an object with name, and "
                       "optionally description and parameters.",
                       i);
    json_object_foreach(fn, key, v)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "description") != 0 &&
            strcmp(key, "parameters") != 0 && strcmp(key, "strict") != 0)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "tools[%zu].function.%.40s", i, key),
                           "Unknown member tools[%zu].function.%.40s.", i, key);
    }
    name = json_object_get(fn, "name");
    fault = json_is_string(name) ? tool_name_fault(json_string_value(name)) : "must be a string";
    if (fault)
        return err_set(e, ERR_INVALID, "invalid_request",
                       arena_printf(a, "tools[%zu].function.name", i),
                       "Invalid tools[%zu].function.name: %s.", i, fault);
    desc = json_object_get(fn, "description");
    if (desc && !json_is_string(desc))
        return err_set(e, ERR_INVALID, "invalid_request",
                       arena_printf(a, "tools[%zu].function.description", i),
                       "Invalid tools[%zu].function.description: must be a string.", i);
    params = json_object_get(fn, "parameters");
    if (params && !json_is_object(params))
        return err_set(e, ERR_INVALID, "invalid_request",
                       arena_printf(a, "tools[%zu].function.parameters", i),
                       "Invalid tools[%zu].function.parameters: must be a JSON Schema object.", i);
    strict = json_object_get(fn, "strict");
    if (strict && !json_is_null(strict) && !json_is_boolean(strict))
        return err_set(e, ERR_INVALID, "invalid_request",
                       arena_printf(a, "tools[%zu].function.strict", i),
                       "Invalid tools[%zu].function.strict: must be a boolean.", i);
    out->name = json_string_value(name);
    out->description = json_is_string(desc) ? json_string_value(desc) : NULL;
    out->parameters = NULL;
    if (json_is_object(params)) {
        char *text = json_dumps(params, JSON_COMPACT);
        out->parameters = text ? arena_strdup(a, text) : NULL;
        free(text);
    }
    return 0;
}

/* What `tool_choice` ('c', not null) asks of the 'n' tools 'v', into 'out'. */
static int read_choice(json_t *c, struct arena *a, struct oa_tools *out, struct err *e)
{
    const json_t *fn = json_object_get(c, "function");
    const json_t *type = json_object_get(c, "type");
    const json_t *name = json_object_get(fn, "name");

    if (json_is_string(c) && strcmp(json_string_value(c), "none") == 0) {
        out->none = true;
        return 0;
    }
    if (json_is_string(c) && strcmp(json_string_value(c), "auto") == 0)
        return 0;
    if (json_is_string(c) && strcmp(json_string_value(c), "required") == 0) {
        out->choice = "\"required\"";
        return 0;
    }
    if (!json_is_object(c) || json_object_size(c) != 2 || !json_is_string(type) ||
        strcmp(json_string_value(type), "function") != 0 || !json_is_object(fn) ||
        json_object_size(fn) != 1 || !json_is_string(name))
        return err_set(e, ERR_INVALID, "invalid_request", "tool_choice",
                       "Invalid tool_choice: must be \"none\", \"auto\", \"required\" or "
                       "{\"type\": \"function\", \"function\": {\"name\": ...}}.");
    for (size_t i = 0; i < out->n; i++) {
        if (strcmp(out->v[i].name, json_string_value(name)) == 0) {
            json_t *o =
                json_pack("{s:s,s:{s:s}}", "type", "function", "function", "name", out->v[i].name);
            char *text = json_dumps(o, JSON_COMPACT);
            out->choice = arena_strdup(a, text);
            free(text);
            json_decref(o);
            return 0;
        }
    }
    return err_set(e, ERR_INVALID, "invalid_request", "tool_choice.function.name",
                   "Invalid tool_choice.function.name: no tool of `tools` has the name %.64s.",
                   json_string_value(name));
}

/* The client's `tools` and `tool_choice` of 'b' into 'out' (strings borrowed from the body or
 * in 'a'): 1..TOOLS_MAX function tools of distinct names, each checked (400 naming the member
 * at fault); tool_choice only with tools. */
static int read_tools(const struct oa_body *b, struct arena *a, struct oa_tools *out, struct err *e)
{
    size_t n;
    int rc;

    memset(out, 0, sizeof(*out));
    if (b->tool_choice && !b->tools)
        return err_set(e, ERR_INVALID, "invalid_request", "tool_choice",
                       "Invalid tool_choice: there are no tools to choose from.");
    if (!b->tools)
        return 0;
    n = json_array_size(b->tools);
    if (!json_is_array(b->tools) || n < 1 || n > TOOLS_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", "tools",
                       "Invalid tools: must be an array of 1 to %d function tools.", TOOLS_MAX);
    out->v = arena_calloc(a, n * sizeof(*out->v));
    out->params = arena_calloc(a, n * sizeof(*out->params));
    for (size_t i = 0; i < n; i++) {
        rc = read_tool(json_array_get(b->tools, i), i, a, &out->v[i], e);
        if (rc)
            return rc;
        out->params[i] = arena_printf(a, "tools[%zu].function.name", i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(out->v[k].name, out->v[i].name) == 0)
                return err_set(e, ERR_INVALID, "invalid_request", out->params[i],
                               "Invalid %s: tools[%zu] has the same name.", out->params[i], k);
    }
    out->n = n;
    return b->tool_choice ? read_choice(b->tool_choice, a, out, e) : 0;
}

/* ---- The answer: OpenAI's objects ---- */

/* The members every chat.completion and chunk opens with. */
static void write_head(struct jw *w, const struct turn_view *v, const char *object)
{
    char id[ID_MAX + 16];
    snprintf(id, sizeof(id), "chatcmpl-%s", v->reply_id);
    jw_key(w, "id");
    jw_str(w, id);
    jw_key(w, "object");
    jw_str(w, object);
    jw_key(w, "created");
    jw_int(w, v->created_at / 1000);
    jw_key(w, "model");
    jw_str(w, v->employee_id);
}

static void write_usage(struct jw *w, const struct turn_view *v)
{
    jw_key(w, "usage");
    jw_obj(w);
    jw_key(w, "prompt_tokens");
    jw_int(w, v->usage.input_tokens);
    jw_key(w, "completion_tokens");
    jw_int(w, v->usage.output_tokens);
    jw_key(w, "total_tokens");
    jw_int(w, v->usage.input_tokens + v->usage.output_tokens);
    jw_obj_end(w);
}

/* Call 'c' ({id, name, arguments}) of the client's tools as OpenAI's tool call; with 'index'
 * (a stream's delta) when 'index' >= 0, then its arguments only when 'args'. */
static void write_tool_call(struct jw *w, const json_t *c, long index, bool head, bool args)
{
    jw_obj(w);
    if (index >= 0) {
        jw_key(w, "index");
        jw_int(w, index);
    }
    if (head) {
        jw_key(w, "id");
        jw_str(w, json_string_value(json_object_get(c, "id")));
        jw_key(w, "type");
        jw_str(w, "function");
    }
    jw_key(w, "function");
    jw_obj(w);
    if (head) {
        jw_key(w, "name");
        jw_str(w, json_string_value(json_object_get(c, "name")));
    }
    jw_key(w, "arguments");
    jw_str(w, args ? json_string_value(json_object_get(c, "arguments")) : "");
    jw_obj_end(w);
    jw_obj_end(w);
}

/* The calls of the client's tools the turn stopped for (a new reference), or NULL. */
static json_t *client_calls(const struct turn_view *v)
{
    json_t *calls = v->client_calls ? json_loads(v->client_calls, 0, NULL) : NULL;
    if (json_array_size(calls) > 0)
        return calls;
    json_decref(calls);
    return NULL;
}

/* The chat.completion object of a blocking reply: the text, or (a turn that stopped for the
 * client's tools) the text or null and the calls, finish_reason "tool_calls". */
static void completion_answer(const struct turn_view *v, struct buf *out)
{
    struct jw w;
    json_t *calls = client_calls(v);
    size_t i;
    json_t *c;

    jw_init(&w, out);
    jw_obj(&w);
    write_head(&w, v, "chat.completion");
    jw_key(&w, "choices");
    jw_arr(&w);
    jw_obj(&w);
    jw_key(&w, "index");
    jw_int(&w, 0);
    jw_key(&w, "message");
    jw_obj(&w);
    jw_key(&w, "role");
    jw_str(&w, "assistant");
    jw_key(&w, "content");
    jw_str(&w, calls && !v->content[0] ? NULL : v->content);
    jw_key(&w, "refusal");
    jw_null(&w);
    if (calls) {
        jw_key(&w, "tool_calls");
        jw_arr(&w);
        json_array_foreach(calls, i, c)
        {
            write_tool_call(&w, c, -1, true, true);
        }
        jw_arr_end(&w);
    }
    jw_obj_end(&w);
    jw_key(&w, "logprobs");
    jw_null(&w);
    jw_key(&w, "finish_reason");
    jw_str(&w, calls ? "tool_calls" : "stop");
    jw_obj_end(&w);
    jw_arr_end(&w);
    write_usage(&w, v);
    jw_obj_end(&w);
    if (jw_finish(&w))
        buf_reset(out);
    json_decref(calls);
}

enum chunk_kind { CHUNK_ROLE, CHUNK_TEXT, CHUNK_CALL, CHUNK_ARGS, CHUNK_STOP, CHUNK_USAGE };

/* One `data:` event of a chat.completion.chunk: the role, a piece of text, a call of the
 * client's tools ('call' number 'index': its id, type and name; then its arguments), the
 * finish reason ("tool_calls" after calls), or (include_usage) the usage with no choices;
 * with include_usage the others carry "usage": null, as OpenAI's do. */
static void write_chunk(const struct turn_view *v, enum chunk_kind kind, const char *text,
                        const json_t *call, long index, struct buf *out)
{
    struct buf d;
    struct jw w;
    buf_init(&d, (4u << 20) + 4096);
    jw_init(&w, &d);
    jw_obj(&w);
    write_head(&w, v, "chat.completion.chunk");
    jw_key(&w, "choices");
    jw_arr(&w);
    if (kind != CHUNK_USAGE) {
        jw_obj(&w);
        jw_key(&w, "index");
        jw_int(&w, 0);
        jw_key(&w, "delta");
        jw_obj(&w);
        if (kind == CHUNK_ROLE) {
            jw_key(&w, "role");
            jw_str(&w, "assistant");
            jw_key(&w, "content");
            jw_str(&w, "");
        } else if (kind == CHUNK_TEXT) {
            jw_key(&w, "content");
            jw_str(&w, text);
        } else if (kind == CHUNK_CALL || kind == CHUNK_ARGS) {
            jw_key(&w, "tool_calls");
            jw_arr(&w);
            write_tool_call(&w, call, index, kind == CHUNK_CALL, kind == CHUNK_ARGS);
            jw_arr_end(&w);
        }
        jw_obj_end(&w);
        jw_key(&w, "logprobs");
        jw_null(&w);
        jw_key(&w, "finish_reason");
        if (kind == CHUNK_STOP)
            jw_str(&w, text);
        else
            jw_null(&w);
        jw_obj_end(&w);
    }
    jw_arr_end(&w);
    if (kind == CHUNK_USAGE) {
        write_usage(&w, v);
    } else if (v->opts & OPT_USAGE) {
        jw_key(&w, "usage");
        jw_null(&w);
    }
    jw_obj_end(&w);
    if (!jw_finish(&w)) {
        buf_appends(out, "data: ");
        buf_append(out, buf_ptr(&d), buf_len(&d));
        buf_appends(out, "\n\n");
    }
    buf_cleanup(&d);
}

static void completion_opened(struct turn_view *v, struct buf *out)
{
    write_chunk(v, CHUNK_ROLE, NULL, NULL, -1, out);
}

static void completion_delta(struct turn_view *v, const char *text, size_t len, struct buf *out)
{
    char *piece = xstrndup(text, len);
    write_chunk(v, CHUNK_TEXT, piece, NULL, -1, out);
    free(piece);
}

/* The end of a stream: a turn that stopped for the client's tools sends each call as OpenAI
 * does (its id, type and name, then its arguments), then finish_reason "tool_calls". */
static void completion_completed(struct turn_view *v, struct buf *out)
{
    json_t *calls = client_calls(v);
    size_t i;
    json_t *c;

    json_array_foreach(calls, i, c)
    {
        write_chunk(v, CHUNK_CALL, NULL, c, (long)i, out);
        write_chunk(v, CHUNK_ARGS, NULL, c, (long)i, out);
    }
    write_chunk(v, CHUNK_STOP, calls ? "tool_calls" : "stop", NULL, -1, out);
    if (v->opts & OPT_USAGE)
        write_chunk(v, CHUNK_USAGE, NULL, NULL, -1, out);
    buf_appends(out, "data: [DONE]\n\n");
    json_decref(calls);
}

/* An error after the stream started: one `data:` event with OpenAI's error object (its
 * clients raise it), and no [DONE]. */
static void completion_failed(struct turn_view *v, const struct err *e, struct buf *out)
{
    struct err up = *e;
    (void)v;
    if (!up.code)
        up.code = "upstream_error";
    buf_appends(out, "data: ");
    api_error_openai_write(&up, out);
    buf_appends(out, "\n\n");
}

/* The door shows no tool events: the employee's own tools run inside the turn; the calls of
 * the client's tools are the answer (completion_answer, completion_completed). */
static const struct turn_format completion_format = {
    completion_answer,
    completion_opened,
    completion_delta,
    completion_completed,
    completion_failed,
    NULL,
    NULL,
};

/* ---- Handlers ---- */

/* POST /v1/openai/chat/completions */
int api_openai_completions(struct router_req *r, struct err *e)
{
    struct oa_body b;
    struct jb_result res;
    struct api_openai_input in;
    struct oa_tools tools;
    struct turn_req t;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, completion_fields, F_COUNT, &b, r->arena, &res, e);
    if (rc)
        return rc;
    memset(&t, 0, sizeof(t));
    rc = check_body(&b, &res, &t.opts, e);
    if (!rc)
        rc = read_tools(&b, r->arena, &tools, e);
    if (!rc)
        rc = api_openai_messages(b.messages, r->arena, &in, e);
    if (rc)
        return rc;
    if (!tools.none) {
        t.client_tools = tools.v;
        t.client_params = tools.params;
        t.nclient_tools = tools.n;
        t.tool_choice = tools.choice;
    }
    t.answers = in.answers;
    t.nanswers = in.nanswers;
    t.answers_param = in.answers_param;
    t.employee_id = b.model;
    t.employee_param = "model";
    t.message = in.message;
    t.history = in.history;
    t.nhistory = in.nhistory;
    if (in.system) {
        json_t *ctx = json_pack("{ss}", "system", in.system);
        char *s = json_dumps(ctx, JSON_COMPACT);
        t.context = arena_strdup(r->arena, s);
        free(s);
        json_decref(ctx);
    }
    t.stream = b.stream;
    t.format = &completion_format;
    return api_chat_turn(r, &t, "X-Workforce-Conversation-Id", e);
}

/* One employee as an OpenAI model object. */
static void write_model(struct jw *w, const struct router_req *r, const struct store_employee *emp)
{
    jw_obj(w);
    jw_key(w, "id");
    jw_str(w, emp->id);
    jw_key(w, "object");
    jw_str(w, "model");
    jw_key(w, "created");
    jw_int(w, emp->created_at / 1000);
    jw_key(w, "owned_by");
    jw_str(w, r->org.id);
    jw_obj_end(w);
}

/* GET /v1/openai/models: the employees the key may chat with (its tier allows them), by name. */
int api_openai_models(struct router_req *r, struct err *e)
{
    struct store_emp_filter f = {.status = -1, .limit = 100};
    struct store_emp_page page;
    struct buf b;
    struct jw w;
    int rc;

    buf_init(&b, 8u << 20);
    jw_init(&w, &b);
    jw_obj(&w);
    jw_key(&w, "object");
    jw_str(&w, "list");
    jw_key(&w, "data");
    jw_arr(&w);
    do {
        rc = store_employee_list(r->store, &r->tenant, &f, r->arena, &page);
        if (rc) {
            buf_cleanup(&b);
            return err_set(e, rc, "internal_error", NULL, "employee list failed");
        }
        for (size_t i = 0; i < page.n; i++) {
            if (ledger_tier_check(r->org.tier, &page.items[i], NULL, "chat with", NULL) == 0)
                write_model(&w, r, &page.items[i]);
        }
        if (page.n) {
            f.after_name = page.items[page.n - 1].name;
            f.after_id = page.items[page.n - 1].id;
        }
    } while (page.has_more && page.n);
    jw_arr_end(&w);
    jw_obj_end(&w);
    return router_respond_jw(r, &w, &b, e);
}

/* GET /v1/openai/models/{id}: one employee as a model; 404 employee_not_found (param
 * "model") when there is none, 403 when the organization's tier may not chat with it. */
int api_openai_model(struct router_req *r, struct err *e)
{
    struct store_employee emp;
    struct buf b;
    struct jw w;
    int rc = api_employee_find(r, r->params[0], "model", &emp, e);
    if (rc)
        return rc;
    rc = ledger_tier_check(r->org.tier, &emp, "model", "chat with", e);
    if (rc)
        return rc;
    buf_init(&b, 64u << 10);
    jw_init(&w, &b);
    write_model(&w, r, &emp);
    return router_respond_jw(r, &w, &b, e);
}
