/* SPDX-License-Identifier: MIT */
/*
 * tool_stream: the tool calls of one model step, assembled from an OpenAI-compatible answer.
 * A streamed answer sends each call in pieces: `choices[0].delta.tool_calls` holds entries
 * {index, id?, type?, function: {name?, arguments?}}, the id and the name usually in the first
 * entry of an index only, and the arguments split over many chunks. A whole answer has them in
 * `choices[0].message.tool_calls`, one entry per call. Feed each delta (or the message) as it
 * is decoded, then finish: the calls, in index order.
 *
 * Pure: no I/O, no globals; memory is capped (LLM_TOOL_CALLS_MAX calls, each with at most
 * LLM_TOOL_ID_MAX bytes of id, LLM_TOOL_NAME_MAX of name and LLM_TOOL_ARGS_MAX of arguments).
 * Anything over a cap or not shaped as above is an error of the step (ERR_UPSTREAM, with a
 * message that says what), never a crash; the first error sticks. Fuzzed by
 * tests/fuzz/fuzz_tool_stream.c.
 */
#ifndef WORKFORCE_LLM_TOOL_STREAM_H
#define WORKFORCE_LLM_TOOL_STREAM_H

#include "../core/buf.h"
#include "../core/err.h"
#include "llm.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define LLM_TOOL_CALLS_MAX 16         /* calls in one step */
#define LLM_TOOL_ARGS_MAX (64u << 10) /* bytes of one call's arguments */
#define LLM_TOOL_ID_MAX 64            /* bytes of a call's id */
#define LLM_TOOL_NAME_MAX 64          /* bytes of a call's name (TOOLS_MODEL_NAME_MAX) */

/* One call being assembled. Members are private: use the functions. */
struct llm_tool_slot {
    struct buf id_, name_, args_;
    bool seen_; /* an entry named this index */
};

/* An assembler (it may live inside a caller's struct). Members are private. */
struct llm_tool_stream {
    struct llm_tool_slot slot_[LLM_TOOL_CALLS_MAX];
    struct llm_tool_call out_[LLM_TOOL_CALLS_MAX];
    size_t n_;      /* slots up to the highest index seen, + 1 */
    int last_;      /* the slot of the last entry, for an entry with no index; -1: none */
    int rc_;        /* sticky: the first error */
    char why_[200]; /* what the first error was */
};

void llm_tool_stream_init(struct llm_tool_stream *s);    /* empty, no allocation */
void llm_tool_stream_cleanup(struct llm_tool_stream *s); /* frees; empty again */
void llm_tool_stream_reset(struct llm_tool_stream *s);   /* empty, for a new attempt */
/* Feed a streamed chunk's `choices[0].delta` (an object; one without tool_calls adds none). */
int llm_tool_stream_delta(struct llm_tool_stream *s, const json_t *delta, struct err *e);
/* Feed a whole answer's `choices[0].message`: its tool_calls are whole calls, in order. */
int llm_tool_stream_message(struct llm_tool_stream *s, const json_t *message, struct err *e);
/* The calls fed so far (none: '*n' 0), valid until the next call on 's'. */
int llm_tool_stream_finish(struct llm_tool_stream *s, const struct llm_tool_call **calls, size_t *n,
                           struct err *e);

#endif
