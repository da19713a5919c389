/* SPDX-License-Identifier: MIT */
/*
 * fuzz_sse: the Server-Sent Events decoder (httpc/sse_read.c). The input is a small header
 * and then the stream:
 *
 *     byte 0   bits 0-2: how many chunk-size bytes follow (0-7; 0 = one byte at a time)
 *              bits 3-5: the cap, from caps[] below (tiny caps reach ERR_LIMIT)
 *              bits 6-7: stop at the Nth event (0 = never) by returning STOP_RC
 *     bytes 1… the chunk sizes (each 0-255, used in a cycle; 0 is an empty feed)
 *     the rest the stream
 *
 * The stream is decoded three ways, and all three must agree exactly (the events, their
 * order, and the result code):
 *   1. ref_decode(): an independent, whole-input transcription of the WHATWG algorithm
 *      (data buffer with trailing LFs, as the spec words it) plus our cap rules;
 *   2. sse_feed() once with everything, then sse_finish();
 *   3. sse_feed() chunk by chunk, stopping at the first non-zero result.
 * After a non-zero result one more feed must return the same code and dispatch nothing, and
 * sse_finish() must return 0 and leave a reader that decodes a fresh stream.
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/httpc/sse.h"

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
            fprintf(stderr, "fuzz_sse: check failed at line %d: %s\n", __LINE__, #c);              \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#define STOP_RC 77

static const size_t caps[8] = {1 << 20, 0, 1, 4, 9, 16, 64, 300};

/* The events one decoding produced, serialised, and when its callback stops. */
struct rec {
    struct buf log;
    int events;
    int stop_at;
};

static void rec_init(struct rec *r, int stop_at)
{
    buf_init(&r->log, (size_t)1 << 28);
    r->events = 0;
    r->stop_at = stop_at;
}

static void put_field(struct buf *b, const char *p, size_t n)
{
    CHECK(buf_append(b, &n, sizeof(n)) == 0);
    CHECK(buf_append(b, p, n) == 0);
}

static int on_event(void *ud, const struct sse_event *ev)
{
    struct rec *r = ud;

    /* What the decoder promises about every event. */
    CHECK(ev->event && ev->data && ev->id);
    CHECK(ev->event_len > 0);
    CHECK(ev->event[ev->event_len] == '\0' && ev->data[ev->data_len] == '\0' &&
          ev->id[ev->id_len] == '\0');
    CHECK(memchr(ev->id, '\0', ev->id_len) == NULL);
    CHECK(memchr(ev->event, '\r', ev->event_len) == NULL &&
          memchr(ev->event, '\n', ev->event_len) == NULL);
    CHECK(memchr(ev->data, '\r', ev->data_len) == NULL);
    r->events++;
    put_field(&r->log, ev->event, ev->event_len);
    put_field(&r->log, ev->data, ev->data_len);
    put_field(&r->log, ev->id, ev->id_len);
    return r->stop_at && r->events >= r->stop_at ? STOP_RC : 0;
}

static bool same_log(const struct rec *a, const struct rec *b)
{
    return a->events == b->events && buf_len(&a->log) == buf_len(&b->log) &&
           memcmp(buf_ptr(&a->log), buf_ptr(&b->log), buf_len(&a->log)) == 0;
}

/* ---- The reference: the spec's steps over the whole input ---- */

static bool field_is(const char *p, size_t n, const char *name)
{
    return n == strlen(name) && memcmp(p, name, n) == 0;
}

/*
 * Decode all of 's' as one stream with the cap 'cap'; events go to on_event(rec). Returns 0,
 * ERR_LIMIT (a line, terminated or not, longer than 'cap', or joined data longer than 'cap')
 * or STOP_RC. Buffers hold at most the input, so they are sized by it.
 */
static int ref_decode(const char *s, size_t len, size_t cap, struct rec *rec)
{
    char *data = malloc(len + 1), *type = malloc(len + 1), *id = malloc(len + 1);
    size_t data_n = 0, type_n = 0, id_n = 0, pos = 0;
    int rc = 0;

    CHECK(data && type && id);
    while (pos < len) {
        size_t end = pos, next;
        const char *line;
        size_t n;

        while (end < len && s[end] != '\r' && s[end] != '\n')
            end++;
        if (end - pos > cap) {
            rc = ERR_LIMIT;
            break;
        }
        if (end == len)
            break; /* an unterminated last line is discarded */
        next = end + 1;
        if (s[end] == '\r' && next < len && s[next] == '\n')
            next++;
        line = s + pos;
        n = end - pos;
        if (pos == 0 && n >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0) {
            line += 3;
            n -= 3;
        }
        pos = next;

        if (n == 0) {
            /* Dispatch: an empty data buffer means no event. */
            if (data_n > 0) {
                struct sse_event ev;
                ev.event = type_n ? type : "message";
                ev.event_len = type_n ? type_n : 7;
                data[data_n - 1] = '\0'; /* drop the last LF */
                ev.data = data;
                ev.data_len = data_n - 1;
                id[id_n] = '\0';
                ev.id = id;
                ev.id_len = id_n;
                rc = on_event(rec, &ev);
            }
            data_n = 0;
            type_n = 0;
            if (rc)
                break;
            continue;
        }
        if (line[0] == ':')
            continue;
        {
            size_t c = 0, vn;
            const char *v;
            while (c < n && line[c] != ':')
                c++;
            v = c < n ? line + c + 1 : line + n;
            vn = c < n ? n - c - 1 : 0;
            if (vn > 0 && v[0] == ' ') {
                v++;
                vn--;
            }
            if (field_is(line, c, "event")) {
                memcpy(type, v, vn);
                type_n = vn;
                type[type_n] = '\0';
            } else if (field_is(line, c, "data")) {
                /* Joined, the data would be data_n (its last LF becomes the joint) + vn. */
                if (data_n + vn > cap) {
                    rc = ERR_LIMIT;
                    break;
                }
                memcpy(data + data_n, v, vn);
                data_n += vn;
                data[data_n++] = '\n';
            } else if (field_is(line, c, "id")) {
                if (!memchr(v, '\0', vn)) {
                    memcpy(id, v, vn);
                    id_n = vn;
                }
            }
        }
    }
    free(data);
    free(type);
    free(id);
    return rc;
}

/* ---- The decoder, two ways ---- */

/* After a result 'rc', check the spent state, then that finish makes a fresh reader. */
static void check_after(struct sse_reader *r, size_t cap, int rc, struct rec *rec)
{
    int events = rec->events;
    struct rec fresh;

    if (rc) {
        CHECK(sse_feed(r, "data: x\n\n", 9, on_event, rec) == rc);
        CHECK(rec->events == events);
    }
    CHECK(sse_finish(r, on_event, rec) == 0);
    CHECK(rec->events == events);
    rec_init(&fresh, 0);
    if (cap >= 7) { /* the longest line below */
        CHECK(sse_feed(r, "\xEF\xBB\xBF\ndata: x\n\n", 13, on_event, &fresh) == 0);
        CHECK(fresh.events == 1);
    }
    buf_cleanup(&fresh.log);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t nsizes, cap, len, pos = 0, k = 0, sum = 0;
    uint8_t sizes[8];
    int stop_at, rc_ref, rc_one, rc_chunks = 0;
    const char *s;
    struct rec ref, one, chunks;
    struct sse_reader r;

    if (size < 1)
        return 0;
    nsizes = data[0] & 7;
    cap = caps[data[0] >> 3 & 7];
    stop_at = data[0] >> 6;
    if (size < 1 + nsizes)
        return 0;
    for (size_t i = 0; i < nsizes; i++) {
        sizes[i] = data[1 + i];
        sum += sizes[i];
    }
    if (nsizes == 0 || sum == 0) {
        /* Byte by byte (after any empty feeds the sizes asked for). */
        sizes[nsizes] = 1;
        nsizes++;
    }
    s = (const char *)data + 1 + (data[0] & 7);
    len = size - 1 - (data[0] & 7);

    rec_init(&ref, stop_at);
    rc_ref = ref_decode(s, len, cap, &ref);
    CHECK(rc_ref == 0 || rc_ref == ERR_LIMIT || rc_ref == STOP_RC);

    rec_init(&one, stop_at);
    sse_init(&r, cap);
    rc_one = sse_feed(&r, s, len, on_event, &one);
    CHECK(rc_one == rc_ref);
    CHECK(same_log(&one, &ref));
    check_after(&r, cap, rc_one, &one);
    sse_cleanup(&r);

    rec_init(&chunks, stop_at);
    sse_init(&r, cap);
    while (pos < len && !rc_chunks) {
        size_t n = sizes[k++ % nsizes];
        if (n > len - pos)
            n = len - pos;
        rc_chunks = sse_feed(&r, s + pos, n, on_event, &chunks);
        pos += n;
    }
    CHECK(rc_chunks == rc_ref);
    CHECK(same_log(&chunks, &ref));
    check_after(&r, cap, rc_chunks, &chunks);
    sse_cleanup(&r);

    buf_cleanup(&ref.log);
    buf_cleanup(&one.log);
    buf_cleanup(&chunks.log);
    return 0;
}
