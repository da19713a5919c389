/* SPDX-License-Identifier: MIT */
/*
 * sse_read.c: the Server-Sent Events decoder of httpc/ (WHATWG HTML, "Interpreting an event
 * stream"). httpc/client.c hands it the body of a `text/event-stream` response chunk by chunk,
 * and llm/openai.c turns the events into tokens. Pure: no I/O, no globals; fuzzed by
 * tests/fuzz/fuzz_sse.c, which checks that any split of the input gives the same events.
 *
 * DESIGN
 * A feed is cut into lines at CRLF, LF or CR. A complete line that lies inside one feed is
 * interpreted in place, without a copy; only the incomplete tail of a feed is copied into
 * 'line_' and completed by the next feed. A CR that ends a feed may be the first half of a
 * CRLF, so 'cr_' remembers it and the next feed drops a LF at its start.
 *
 * The cap 'max_event' bounds every buffer: a line longer than the cap, or an event whose
 * joined data would be longer, fails with ERR_LIMIT. It is checked on the line's logical
 * length, never on how it happened to be split, so the same input fails at the same line
 * whatever the chunking. The event type and the last event ID are copies of one line's value,
 * so they are bounded too: a reader holds at most about four times the cap.
 *
 * Bytes are passed through as they are: invalid UTF-8 is not replaced by U+FFFD as a browser
 * would, since the consumer (a JSON parser) checks the text anyway.
 *
 * After a non-zero result (ERR_LIMIT, ERR_NOMEM, or a callback's stop) the reader is spent:
 * every later sse_feed() returns the same code and calls nothing. That keeps a caller that
 * ignores one result from seeing events out of order.
 */
#include "sse.h"

#include "../core/err.h"

#include <string.h>

static const char bom[] = "\xEF\xBB\xBF";

/* Reset the event being built (not the last event ID, which outlives events). */
static void event_reset(struct sse_reader *r)
{
    buf_reset(&r->data_);
    buf_reset(&r->event_);
    r->has_data_ = false;
}

/* Make 'r' an empty reader whose lines and event data may be at most 'max_event' bytes. */
void sse_init(struct sse_reader *r, size_t max_event)
{
    buf_init(&r->line_, max_event);
    buf_init(&r->data_, max_event);
    buf_init(&r->event_, max_event);
    buf_init(&r->id_, max_event);
    r->max_event_ = max_event;
    r->rc_ = 0;
    r->has_data_ = false;
    r->cr_ = false;
    r->first_line_ = true;
}

/* Free the memory of 'r'. It must be sse_init()ed again before another use. */
void sse_cleanup(struct sse_reader *r)
{
    buf_cleanup(&r->line_);
    buf_cleanup(&r->data_);
    buf_cleanup(&r->event_);
    buf_cleanup(&r->id_);
}

/* ---- One line ---- */

static bool name_is(const char *p, size_t n, const char *name)
{
    return n == strlen(name) && memcmp(p, name, n) == 0;
}

/* A blank line: hand the event to 'fn' when it has data, then start a new event. */
static int dispatch(struct sse_reader *r, sse_event_fn fn, void *ud)
{
    struct sse_event ev;
    int rc;

    if (!r->has_data_) {
        event_reset(r);
        return 0;
    }
    ev.event = buf_len(&r->event_) ? buf_ptr(&r->event_) : "message";
    ev.event_len = buf_len(&r->event_) ? buf_len(&r->event_) : strlen("message");
    ev.data = buf_ptr(&r->data_);
    ev.data_len = buf_len(&r->data_);
    ev.id = buf_ptr(&r->id_);
    ev.id_len = buf_len(&r->id_);
    rc = fn(ud, &ev);
    event_reset(r);
    return rc;
}

/*
 * Interpret the complete line of 'n' bytes at 'p' (no line end). 'p' must not point into the
 * reader's data_, event_ or id_ buffers. Returns 0, ERR_LIMIT, ERR_NOMEM or what 'fn' returned.
 */
static int take_line(struct sse_reader *r, const char *p, size_t n, sse_event_fn fn, void *ud)
{
    const char *colon, *value;
    size_t name_len, value_len;
    int rc;

    if (r->first_line_) {
        r->first_line_ = false;
        if (n >= 3 && memcmp(p, bom, 3) == 0) {
            p += 3;
            n -= 3;
        }
    }
    if (n == 0)
        return dispatch(r, fn, ud);
    if (p[0] == ':')
        return 0; /* a comment, such as the ": ping" keep-alive */
    colon = memchr(p, ':', n);
    if (colon) {
        name_len = (size_t)(colon - p);
        value = colon + 1;
        value_len = n - name_len - 1;
        if (value_len && value[0] == ' ') {
            value++;
            value_len--;
        }
    } else {
        /* A line without a colon is a field name with an empty value. */
        name_len = n;
        value = "";
        value_len = 0;
    }
    if (name_is(p, name_len, "data")) {
        if (r->has_data_) {
            rc = buf_append(&r->data_, "\n", 1);
            if (rc)
                return rc;
        }
        rc = buf_append(&r->data_, value, value_len);
        if (rc)
            return rc;
        r->has_data_ = true;
    } else if (name_is(p, name_len, "event")) {
        buf_reset(&r->event_);
        return buf_append(&r->event_, value, value_len);
    } else if (name_is(p, name_len, "id")) {
        /* The spec ignores an id holding NUL: it could not travel back in Last-Event-ID. */
        if (memchr(value, '\0', value_len))
            return 0;
        buf_reset(&r->id_);
        return buf_append(&r->id_, value, value_len);
    }
    /* "retry" (we do not reconnect by ourselves) and unknown fields are ignored. */
    return 0;
}

/* ---- Feeding ---- */

/* Offset of the first CR or LF in the 'len' bytes at 'p', or 'len' when there is none. */
static size_t line_end(const char *p, size_t len)
{
    size_t i = 0;

    while (i < len && p[i] != '\r' && p[i] != '\n')
        i++;
    return i;
}

/*
 * Decode the 'len' bytes at 'buf', the next part of the stream, calling 'fn' with 'ud' for
 * each event completed by them. The bytes may end anywhere, inside a line or between the CR
 * and LF of one line end; what is incomplete is kept for the next call (copied: 'buf' may be
 * reused at once). Returns 0; ERR_LIMIT when a line or an event's data passes the cap given
 * to sse_init(); ERR_NOMEM; or the non-zero value 'fn' returned, which stopped decoding at
 * that event. After a non-zero return the reader is spent and returns that code again.
 */
int sse_feed(struct sse_reader *r, const char *buf, size_t len, sse_event_fn fn, void *ud)
{
    size_t i = 0;
    int rc = r->rc_;

    if (rc)
        return rc;
    if (r->cr_ && len > 0) {
        r->cr_ = false;
        if (buf[0] == '\n')
            i = 1;
    }
    while (i < len) {
        size_t n = line_end(buf + i, len - i);
        size_t end = i + n;

        if (end == len) {
            /* No line end in the rest of this feed: keep the tail for the next one. */
            rc = buf_append(&r->line_, buf + i, n);
            break;
        }
        if (buf_len(&r->line_)) {
            rc = buf_append(&r->line_, buf + i, n);
            if (!rc)
                rc = take_line(r, buf_ptr(&r->line_), buf_len(&r->line_), fn, ud);
            buf_reset(&r->line_);
        } else if (n > r->max_event_) {
            rc = ERR_LIMIT;
        } else {
            rc = take_line(r, buf + i, n, fn, ud);
        }
        if (rc)
            break;
        i = end + 1;
        if (buf[end] == '\r') {
            if (i == len)
                r->cr_ = true;
            else if (buf[i] == '\n')
                i++;
        }
    }
    r->rc_ = rc;
    return rc;
}

/*
 * End of the stream. As the spec says, an event not closed by a blank line is discarded, and
 * so is an incomplete last line: nothing is dispatched, so 'fn' and 'ud' are not used (they
 * keep the call shape of sse_feed()). The reader is then as after sse_init(), with its memory
 * kept, ready for a new stream. Returns 0.
 */
int sse_finish(struct sse_reader *r, sse_event_fn fn, void *ud)
{
    (void)fn;
    (void)ud;
    buf_reset(&r->line_);
    buf_reset(&r->id_);
    event_reset(r);
    r->rc_ = 0;
    r->cr_ = false;
    r->first_line_ = true;
    return 0;
}
