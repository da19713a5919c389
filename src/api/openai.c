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

/* Members a message may carry: role, content and the ones OpenAI's own answers hold (an
 * assistant message sent back as it came); the tool ones only when null. */
static const char *const message_members[] = {"role",    "content",     "name",
                                              "refusal", "annotations", NULL};
static const char *const null_members[] = {"tool_calls", "function_call", "audio", "tool_call_id",
                                           NULL};

static bool listed(const char *const *list, const char *s)
{
    for (size_t i = 0; list[i]; i++) {
        if (strcmp(list[i], s) == 0)
            return true;
    }
    return false;
}

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

/* Check message 'i' ('m') and read its role and text. */
static int read_message(json_t *m, size_t i, struct arena *a, const char **role, const char **text,
                        struct err *e)
{
    const char *key;
    json_t *v;
    json_t *r;

    if (!json_is_object(m))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu]", i),
                       "Invalid messages[%zu]: must be an object with role and content.", i);
    json_object_foreach(m, key, v)
    {
        if (listed(message_members, key) || (listed(null_members, key) && json_is_null(v)))
            continue;
        return err_set(e, ERR_INVALID, "invalid_request",
                       arena_printf(a, "messages[%zu].%.40s", i, key),
                       listed(null_members, key)
                           ? "Unsupported messages[%zu].%.40s: employees do not call tools."
                           : "Unknown member messages[%zu].%.40s.",
                       i, key);
    }
    r = json_object_get(m, "role");
    if (!json_is_string(r))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu].role", i),
                       "Invalid messages[%zu].role: must be a string.", i);
    *role = json_string_value(r);
    if (strcmp(*role, "system") != 0 && strcmp(*role, "developer") != 0 &&
        strcmp(*role, "user") != 0 && strcmp(*role, "assistant") != 0)
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu].role", i),
                       "Unsupported role %.40s: must be one of system, developer, user, "
                       "assistant.",
                       *role);
    v = json_object_get(m, "name");
    if (v && !json_is_string(v))
        return err_set(e, ERR_INVALID, "invalid_request", arena_printf(a, "messages[%zu].name", i),
                       "Invalid messages[%zu].name: must be a string.", i);
    return content_text(json_object_get(m, "content"), i, a, text, e);
}

/*
 * Map OpenAI's 'messages' to a chat turn's input in '*out' (strings borrowed from 'messages' or
 * copied into 'a'): the last user message is the message (1..API_CHAT_MESSAGE_MAX characters),
 * the user and assistant messages before it the history (oldest first), and the system and
 * developer messages, wherever they are, the system text (joined by blank lines; NULL when
 * none). Content is a string or an array of text parts (joined by newlines). Returns 0, or
 * ERR_INVALID with 'e' naming the member at fault ("messages", "messages[2].role",
 * "messages[1].content[0].type", ...): no user message, a role other than those four, a tool
 * call, another content type, or an assistant message after the last user message. Pure.
 */
int api_openai_messages(json_t *messages, struct arena *a, struct api_openai_input *out,
                        struct err *e)
{
    size_t n = json_array_size(messages), last = SIZE_MAX, nsys = 0;
    const char **roles, **texts;
    struct buf sys;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!json_is_array(messages) || n == 0)
        return err_set(e, ERR_INVALID, "invalid_request", "messages",
                       "Invalid messages: must be a non-empty array of messages.");
    roles = arena_alloc(a, n * sizeof(*roles));
    texts = arena_alloc(a, n * sizeof(*texts));
    for (size_t i = 0; i < n; i++) {
        rc = read_message(json_array_get(messages, i), i, a, &roles[i], &texts[i], e);
        if (rc)
            return rc;
        if (strcmp(roles[i], "user") == 0)
            last = i;
    }
    if (last == SIZE_MAX)
        return err_set(e, ERR_INVALID, "invalid_request", "messages",
                       "Invalid messages: there is no user message to answer.");
    for (size_t i = last + 1; i < n; i++) {
        if (strcmp(roles[i], "assistant") == 0)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].role", i),
                           "Invalid messages[%zu]: an assistant message after the last user "
                           "message; the conversation must end with the user's message.",
                           i);
    }
    {
        size_t chars = jb_utf8_len(texts[last], strlen(texts[last]));
        if (chars < 1 || chars > API_CHAT_MESSAGE_MAX)
            return err_set(e, ERR_INVALID, "invalid_request",
                           arena_printf(a, "messages[%zu].content", last),
                           "Invalid messages[%zu].content: the message must be 1 to %d "
                           "characters.",
                           last, API_CHAT_MESSAGE_MAX);
    }
    out->message = texts[last];
    out->history = arena_alloc(a, (last + 1) * sizeof(*out->history));
    memset(out->history, 0, (last + 1) * sizeof(*out->history));
    buf_init(&sys, TEXT_CAP);
    for (size_t i = 0; i < n; i++) {
        bool system = strcmp(roles[i], "system") == 0 || strcmp(roles[i], "developer") == 0;
        if (system && texts[i][0]) {
            if (nsys++)
                buf_appends(&sys, "\n\n");
            buf_appends(&sys, texts[i]);
        } else if (!system && i < last) {
            out->history[out->nhistory].role = strcmp(roles[i], "user") == 0 ? "user" : "assistant";
            out->history[out->nhistory++].content = texts[i];
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

#define STOP_MAX 4 /* strings of `stop` */

/* See api.h. The shapes check_body() checks by hand. */
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
    return NULL;
}

/* Members that ask for what an employee cannot do; refused when not null. */
static const int refused[] = {F_TOOLS, F_TOOL_CHOICE, F_FUNCTIONS, F_FUNCTION_CALL};

/* What the bound body asks that cannot be honoured, or a value out of OpenAI's bounds. */
static int check_body(const struct oa_body *b, const struct jb_result *res, unsigned *opts,
                      struct err *e)
{
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        const char *name = completion_fields[refused[i]].name;
        if (JB_HAS(*res, refused[i]) && !JB_IS_NULL(*res, refused[i]))
            return err_set(e, ERR_INVALID, "invalid_request", name,
                           "Unsupported %s: employees do not call tools or functions.", name);
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

/* The chat.completion object of a blocking reply. */
static void completion_answer(const struct turn_view *v, struct buf *out)
{
    struct jw w;
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
    jw_str(&w, v->content);
    jw_key(&w, "refusal");
    jw_null(&w);
    jw_obj_end(&w);
    jw_key(&w, "logprobs");
    jw_null(&w);
    jw_key(&w, "finish_reason");
    jw_str(&w, "stop");
    jw_obj_end(&w);
    jw_arr_end(&w);
    write_usage(&w, v);
    jw_obj_end(&w);
    if (jw_finish(&w))
        buf_reset(out);
}

enum chunk_kind { CHUNK_ROLE, CHUNK_TEXT, CHUNK_STOP, CHUNK_USAGE };

/* One `data:` event of a chat.completion.chunk: the role, a piece of text, the finish reason,
 * or (include_usage) the usage with no choices; with include_usage the others carry
 * "usage": null, as OpenAI's do. */
static void write_chunk(const struct turn_view *v, enum chunk_kind kind, const char *text,
                        struct buf *out)
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
        }
        jw_obj_end(&w);
        jw_key(&w, "logprobs");
        jw_null(&w);
        jw_key(&w, "finish_reason");
        if (kind == CHUNK_STOP)
            jw_str(&w, "stop");
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
    write_chunk(v, CHUNK_ROLE, NULL, out);
}

static void completion_delta(struct turn_view *v, const char *text, size_t len, struct buf *out)
{
    char *piece = xstrndup(text, len);
    write_chunk(v, CHUNK_TEXT, piece, out);
    free(piece);
}

static void completion_completed(struct turn_view *v, struct buf *out)
{
    write_chunk(v, CHUNK_STOP, NULL, out);
    if (v->opts & OPT_USAGE)
        write_chunk(v, CHUNK_USAGE, NULL, out);
    buf_appends(out, "data: [DONE]\n\n");
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

/* The door shows no tool events: the employee's own tools run inside the turn. */
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
    struct turn_req t;
    int rc;

    memset(&b, 0, sizeof(b));
    rc = jb_bind(r->body, completion_fields, F_COUNT, &b, r->arena, &res, e);
    if (rc)
        return rc;
    memset(&t, 0, sizeof(t));
    rc = check_body(&b, &res, &t.opts, e);
    if (rc)
        return rc;
    rc = api_openai_messages(b.messages, r->arena, &in, e);
    if (rc)
        return rc;
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
