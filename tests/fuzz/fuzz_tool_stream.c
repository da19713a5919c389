/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tool_stream: the streamed tool-call assembler (llm/tool_stream.c). The input is JSON
 * documents, one a line: each is fed as a streamed `delta`, or, when the line starts with '=',
 * the rest as a whole answer's `message`. Then:
 *   - an error while feeding is the error of finishing too (it sticks), with a message and no
 *     calls;
 *   - finished calls are at most LLM_TOOL_CALLS_MAX, each with an id of 1 to LLM_TOOL_ID_MAX
 *     bytes (no two alike), a name of 1 to LLM_TOOL_NAME_MAX, arguments of 1 to
 *     LLM_TOOL_ARGS_MAX, all NUL-terminated;
 *   - finishing again, and feeding the same lines after a reset, give the same result.
 * Pure: no I/O; everything is released.
 */
#include "../../src/core/buf.h"
#include "../../src/llm/tool_stream.h"

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
            fprintf(stderr, "fuzz_tool_stream: check failed at line %d: %s\n", __LINE__, #c);      \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Feed every line of the input; the first error's code (0: none). */
static int feed(struct llm_tool_stream *s, const char *p, size_t size)
{
    int first = 0;
    size_t i = 0;

    while (i < size) {
        const char *nl = memchr(p + i, '\n', size - i);
        size_t n = nl ? (size_t)(nl - (p + i)) : size - i;
        bool message = n > 0 && p[i] == '=';
        json_t *v =
            json_loadb(p + i + message, n - message, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        struct err e;
        if (v) {
            int rc = message ? llm_tool_stream_message(s, v, &e) : llm_tool_stream_delta(s, v, &e);
            CHECK(rc == 0 || rc == ERR_UPSTREAM);
            CHECK(rc == 0 || e.msg[0] != '\0');
            if (rc && !first)
                first = rc;
            json_decref(v);
        }
        i += n + 1;
    }
    return first;
}

/* The result of finishing 's', as text: the calls or the error (for comparisons). */
static void finish(struct llm_tool_stream *s, int fed, struct buf *out)
{
    const struct llm_tool_call *calls;
    size_t n;
    struct err e;
    int rc = llm_tool_stream_finish(s, &calls, &n, &e);

    buf_reset(out);
    CHECK(rc == 0 || rc == ERR_UPSTREAM);
    if (fed)
        CHECK(rc == fed);
    if (rc) {
        CHECK(calls == NULL && n == 0 && e.msg[0] != '\0');
        buf_appendf(out, "error: %s", e.msg);
        return;
    }
    CHECK(n <= LLM_TOOL_CALLS_MAX);
    CHECK(n == 0 || calls != NULL);
    for (size_t i = 0; i < n; i++) {
        size_t il = strlen(calls[i].id), nl = strlen(calls[i].name);
        size_t al = strlen(calls[i].arguments);
        CHECK(il >= 1 && il <= LLM_TOOL_ID_MAX);
        CHECK(nl >= 1 && nl <= LLM_TOOL_NAME_MAX);
        CHECK(al >= 1 && al <= LLM_TOOL_ARGS_MAX);
        for (size_t j = 0; j < i; j++)
            CHECK(strcmp(calls[i].id, calls[j].id) != 0);
        buf_appendf(out, "%zu %s %s %zu:", i, calls[i].id, calls[i].name, al);
        buf_append(out, calls[i].arguments, al);
        buf_appends(out, "\n");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct llm_tool_stream s;
    struct buf first, again;
    int fed;

    buf_init(&first, 4u << 20);
    buf_init(&again, 4u << 20);
    llm_tool_stream_init(&s);
    fed = feed(&s, (const char *)data, size);
    finish(&s, fed, &first);
    finish(&s, fed, &again);
    CHECK(buf_len(&first) == buf_len(&again) &&
          memcmp(buf_ptr(&first), buf_ptr(&again), buf_len(&first)) == 0);
    llm_tool_stream_reset(&s);
    CHECK(feed(&s, (const char *)data, size) == fed);
    finish(&s, fed, &again);
    CHECK(buf_len(&first) == buf_len(&again) &&
          memcmp(buf_ptr(&first), buf_ptr(&again), buf_len(&first)) == 0);
    llm_tool_stream_cleanup(&s);
    buf_cleanup(&first);
    buf_cleanup(&again);
    return 0;
}
