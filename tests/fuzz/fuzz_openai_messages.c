/* SPDX-License-Identifier: MIT */
/*
 * fuzz_openai_messages: a request body of POST /v1/openai/chat/completions through jb_parse()
 * and api_openai_messages() (api/openai.c), OpenAI's `messages` mapped to a chat turn's input.
 * The input is the raw body; its "messages" member is mapped. Checked:
 *   - success: the message is 1..API_CHAT_MESSAGE_MAX code points and is the text of the last
 *     message whose role is "user"; the history has fewer entries than the array, each with
 *     role "user" or "assistant" and a string or (an assistant's) tool calls, or role "tool"
 *     with the call it answers and a string, right after the calls or another result; the
 *     answers of a follow-up each name a call, a text and their member; the system text, when
 *     set, is not empty;
 *   - failure: ERR_INVALID with code "invalid_request", a message, and a param that names
 *     "messages" or a path under it.
 * Pure: no I/O; everything is released (json_decref, arena_cleanup).
 */
#include "../../src/api/api.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_openai_messages: check failed at line %d: %s\n", __LINE__, #c);  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Independent code point count of valid UTF-8. */
static size_t cps(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The index of the last message with role "user", or -1. */
static long last_user(json_t *messages)
{
    long last = -1;
    for (size_t i = 0; i < json_array_size(messages); i++) {
        const json_t *r = json_object_get(json_array_get(messages, i), "role");
        if (json_is_string(r) && strcmp(json_string_value(r), "user") == 0)
            last = (long)i;
    }
    return last;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = NULL, *messages;
    struct arena a;
    struct api_openai_input in;
    struct err e;
    int rc;

    err_clear(&e);
    if (jb_parse((const char *)data, size, &body, &e))
        return 0;
    messages = json_object_get(body, "messages");
    arena_init(&a);
    err_clear(&e);
    rc = api_openai_messages(messages, &a, &in, &e);
    if (rc == 0) {
        long last = last_user(messages);
        size_t chars = cps(in.message);
        CHECK(last >= 0);
        CHECK(chars >= 1 && chars <= API_CHAT_MESSAGE_MAX);
        CHECK(in.nhistory <= (size_t)last);
        {
            const json_t *c = json_object_get(json_array_get(messages, (size_t)last), "content");
            CHECK(!json_is_string(c) || strcmp(json_string_value(c), in.message) == 0);
        }
        for (size_t i = 0; i < in.nhistory; i++) {
            const struct llm_message *h = &in.history[i];
            if (strcmp(h->role, "tool") == 0) {
                /* a result, of a call of the assistant message before its run of results */
                CHECK(h->tool_call_id != NULL && h->content != NULL && i > 0);
                CHECK(strcmp(in.history[i - 1].role, "tool") == 0 ||
                      in.history[i - 1].ntool_calls > 0);
            } else {
                CHECK(strcmp(h->role, "user") == 0 || strcmp(h->role, "assistant") == 0);
                CHECK(h->content != NULL || h->ntool_calls > 0);
                CHECK(h->ntool_calls == 0 || strcmp(h->role, "assistant") == 0);
            }
        }
        for (size_t i = 0; i < in.nanswers; i++)
            CHECK(in.answers[i].call_id && in.answers[i].content &&
                  strncmp(in.answers[i].param, "messages[", 9) == 0);
        CHECK(!in.nanswers || strncmp(in.answers_param, "messages[", 9) == 0);
        CHECK(in.system == NULL || in.system[0] != '\0');
    } else {
        CHECK(rc == ERR_INVALID);
        CHECK(e.code && strcmp(e.code, "invalid_request") == 0);
        CHECK(e.msg[0] != '\0');
        CHECK(strncmp(e.param, "messages", 8) == 0);
    }
    arena_cleanup(&a);
    json_decref(body);
    return 0;
}
