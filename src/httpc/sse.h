/* SPDX-License-Identifier: MIT */
/*
 * sse: a pure, incremental decoder of Server-Sent Events (the WHATWG "event stream
 * interpretation"), for reading an upstream's `text/event-stream`, such as an OpenAI-compatible
 * `/chat/completions` stream. The caller feeds the bytes as they arrive, split anywhere, and
 * gets one callback per dispatched event. No I/O, no globals; memory is capped per reader.
 */
#ifndef WORKFORCE_HTTPC_SSE_H
#define WORKFORCE_HTTPC_SSE_H

#include "../core/buf.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * One dispatched event. The pointers are borrowed from the reader and valid only during the
 * callback; each string is also NUL-terminated (data may hold NUL bytes of its own, so trust
 * the lengths). 'event' is "message" when the stream named no type; 'id' is the last event ID
 * of the stream ("" when none was set).
 */
struct sse_event {
    const char *event;
    size_t event_len;
    const char *data; /* the event's data lines joined with "\n" */
    size_t data_len;
    const char *id;
    size_t id_len;
};

/* Called per event; a non-zero return stops decoding and is returned by sse_feed(). */
typedef int (*sse_event_fn)(void *ud, const struct sse_event *ev);

/* A decoder. Members are private (it may live on the stack): use the functions. */
struct sse_reader {
    struct buf line_;  /* the incomplete line carried over from the previous feed */
    struct buf data_;  /* data of the event being built */
    struct buf event_; /* event type of the event being built */
    struct buf id_;    /* the last event ID: kept across events, as the spec says */
    size_t max_event_; /* cap on one line and on one event's data */
    int rc_;           /* sticky: once non-zero, every later feed returns it */
    bool has_data_;    /* a data field was seen since the last dispatch */
    bool cr_;          /* the last feed ended with CR: a LF opening the next one belongs to it */
    bool first_line_;  /* no line completed yet: a BOM may still open the stream */
};

void sse_init(struct sse_reader *r, size_t max_event); /* 'max_event': cap on buffered bytes */
void sse_cleanup(struct sse_reader *r);                /* frees; usable again after sse_init */
int sse_feed(struct sse_reader *r, const char *buf, size_t len, sse_event_fn fn,
             void *ud); /* 0, ERR_LIMIT, ERR_NOMEM, or what 'fn' returned */
int sse_finish(struct sse_reader *r, sse_event_fn fn,
               void *ud); /* end of stream: drops an incomplete event; 0 */

#endif
