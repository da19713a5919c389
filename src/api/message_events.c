/* SPDX-License-Identifier: MIT */
/*
 * message_events.c: GET /v1/conversations/{id}/messages/{message_id}/events (contract §19), an
 * event stream of one assistant message: its events after Last-Event-ID (or all), then, while
 * its turn runs, the ones that follow, until the next message.completed (or the turn's error).
 *
 * DESIGN: a turn that may call tools keeps its events as its stream sent them (the SSE text,
 * numbered, in chunks written with its journal: turn.c unkept()), so a replay is the same bytes
 * and ids a live client got; a resumed turn goes on with the same numbering. A message whose
 * turn kept none (a reply that called no tool) is replayed as a stream of it would have been
 * sent, from the message itself, by the chat format: message.created, one message.delta,
 * message.completed (ids 1 to 3). A paused message (requires_approval) replays and ends.
 *
 * Following: the request is answered at once as a stream; while the message is in_progress a
 * follower thread (at most FOLLOWERS_MAX at once; beyond, the replay ends without following)
 * reads the chunks kept after the last one sent every FOLLOW_MS, until a message.completed or
 * an error event is sent, the message is no longer in progress and nothing new came, the
 * client leaves, or the turn's longest life passes. Kept chunks arrive with the journal's
 * writes (a step's start, a step's end, the reply's end), so a follower sees a step's events
 * when the step's journal is written.
 */
#include "api.h"

#include "../core/buf.h"
#include "../core/clock.h"
#include "../core/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FOLLOW_MS 200
#define FOLLOWERS_MAX 64
#define REPLAY_CAP (64u << 20)

static atomic_int followers;
static atomic_bool stopping;

/* The id of the SSE event that starts at 'p' ("id: N\n..."), or -1. */
static int64_t event_id(const char *p, const char *end)
{
    int64_t v = 0;
    if (end - p < 5 || memcmp(p, "id: ", 4) != 0)
        return -1;
    p += 4;
    if (p >= end || *p < '0' || *p > '9')
        return -1;
    while (p < end && *p >= '0' && *p <= '9' && v < (INT64_MAX - 9) / 10)
        v = v * 10 + (*p++ - '0');
    return v;
}

/*
 * Append the events of chunk 'c' numbered after '*last' to 'out', and raise '*last'; '*ended'
 * is set when one of them is message.completed or error (the turn's end, or its pause).
 */
static void take_chunk(const struct store_events_chunk *c, int64_t *last, struct buf *out,
                       bool *ended)
{
    const char *p = c->text, *end = c->text + c->len;
    while (p < end) {
        const char *q = strstr(p, "\n\n");
        const char *next = q ? q + 2 : end;
        int64_t id = event_id(p, next);
        if (id > *last) {
            buf_append(out, p, (size_t)(next - p));
            *last = id;
            const char *nl = memchr(p, '\n', (size_t)(next - p));
            if (nl && (strncmp(nl + 1, "event: message.completed\n", 25) == 0 ||
                       strncmp(nl + 1, "event: error\n", 13) == 0))
                *ended = true;
        }
        p = next;
    }
}

/* The kept events of message 'id' after '*last' into 'out' (see take_chunk). */
static int read_kept(struct store *s, const struct store_tenant *t, const char *id, int64_t *last,
                     struct buf *out, bool *ended, size_t *nchunks)
{
    struct store_events_chunk *v = NULL;
    struct arena a;
    size_t n = 0;
    int rc;

    arena_init(&a);
    rc = store_message_events(s, t, id, *last, &a, &v, &n);
    for (size_t i = 0; !rc && i < n; i++)
        take_chunk(&v[i], last, out, ended);
    if (nchunks)
        *nchunks = n;
    arena_cleanup(&a);
    return rc;
}

/* A message that kept no events, as a stream of it would have been sent (ids 1 to 3). */
static void synthesize(const struct store_message *m, const struct store_tool_call *calls,
                       size_t ncalls, int64_t after, struct buf *out)
{
    const struct turn_format *f = api_chat_format();
    struct turn_view v;
    struct buf all;
    json_t *recs = json_array();
    char *text;
    struct store_events_chunk c;
    int64_t last = after;
    bool ended = false;

    for (size_t i = 0; i < ncalls; i++)
        json_array_append_new(recs, act_call_json(&calls[i]));
    text = json_dumps(recs, JSON_COMPACT);
    json_decref(recs);
    memset(&v, 0, sizeof(v));
    v.reply_id = m->id;
    v.conversation_id = m->conversation_id;
    v.employee_id = m->employee_id;
    v.created_at = m->created_at;
    v.content = m->content ? m->content : "";
    v.credits = m->credits_used;
    v.usage.input_tokens = m->input_tokens;
    v.usage.output_tokens = m->output_tokens;
    v.sources = m->sources;
    v.tool_calls = text ? text : "[]";
    v.stop_reason = m->stop_reason;
    v.status = m->status;
    v.error = m->error;
    buf_init(&all, REPLAY_CAP);
    f->opened(&v, &all);
    if (*v.content) {
        f->delta(&v, v.content, strlen(v.content), &all);
        v.sent_delta = true;
    }
    f->completed(&v, &all);
    c.text = buf_ptr(&all);
    c.len = buf_len(&all);
    c.first_seq = 1;
    c.last_seq = v.seq;
    take_chunk(&c, &last, out, &ended);
    buf_cleanup(&all);
    free(text);
}

/* A follower of one message (a thread of its own). */
struct follow {
    struct store_pool *pool;
    struct store_tenant tenant;
    char id[ID_MAX];
    char conv_id[ID_MAX];
    int64_t last;
    struct http_stream *stream;
};

static void *follow_run(void *arg)
{
    struct follow *f = arg;
    int64_t deadline = clock_mono_us() + (int64_t)(ACT_TURN_MS + 60000) * 1000;
    bool ended = false;

    while (!ended && !atomic_load(&stopping) && !http_stream_gone(f->stream) &&
           clock_mono_us() < deadline) {
        struct timespec ts = {0, FOLLOW_MS * 1000000L};
        struct store *s;
        struct store_message m;
        struct arena a;
        struct buf out;
        size_t n = 0;
        int rc;

        nanosleep(&ts, NULL);
        buf_init(&out, REPLAY_CAP);
        arena_init(&a);
        s = store_pool_get(f->pool);
        rc = read_kept(s, &f->tenant, f->id, &f->last, &out, &ended, &n);
        if (!rc && !ended && n == 0 &&
            (store_message_get(s, &f->tenant, f->conv_id, f->id, &a, &m) ||
             strcmp(m.status ? m.status : "", "in_progress") != 0))
            ended = true; /* gone, or no longer running and nothing new */
        store_pool_put(f->pool, s);
        if (buf_len(&out))
            http_stream_write(f->stream, buf_ptr(&out), buf_len(&out));
        if (rc)
            ended = true;
        buf_cleanup(&out);
        arena_cleanup(&a);
    }
    http_stream_close(f->stream);
    atomic_fetch_sub(&followers, 1);
    free(f);
    return NULL;
}

/* The Last-Event-ID of 'r' (absent: 0); 400 when it is not a number. */
static int last_event_id(struct router_req *r, int64_t *out, struct err *e)
{
    const char *h = http_req_header(r->http, "Last-Event-ID");
    char *end = NULL;
    long long v;
    *out = 0;
    if (!h || !*h)
        return 0;
    v = strtoll(h, &end, 10);
    if (*end || v < 0)
        return err_set(e, ERR_INVALID, "invalid_request", "Last-Event-ID",
                       "Invalid Last-Event-ID: the id of an event of this stream (a number).");
    *out = v;
    return 0;
}

/* GET /v1/conversations/{id}/messages/{message_id}/events */
int api_message_events(struct router_req *r, struct err *e)
{
    struct store_conversation c;
    struct store_message m;
    struct store_tool_call *calls = NULL;
    size_t ncalls = 0, nchunks = 0;
    int64_t last = 0;
    bool ended = false;
    struct http_stream *stream;
    struct buf out;
    int rc = last_event_id(r, &last, e);

    if (rc)
        return rc;
    rc = store_conversation_get(r->store, &r->tenant, r->params[0], r->arena, &c);
    if (rc == ERR_NOT_FOUND)
        return err_set(e, rc, "conversation_not_found", "id", "No conversation %.60s.",
                       r->params[0]);
    if (!rc)
        rc = store_message_get(r->store, &r->tenant, c.id, r->params[1], r->arena, &m);
    if (rc == ERR_NOT_FOUND || (!rc && strcmp(m.role, "assistant") != 0))
        return err_set(e, ERR_NOT_FOUND, "message_not_found", "message_id",
                       "No assistant message %.60s in this conversation.", r->params[1]);
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "message read failed");
    buf_init(&out, REPLAY_CAP);
    rc = read_kept(r->store, &r->tenant, m.id, &last, &out, &ended, &nchunks);
    if (!rc && nchunks == 0 && last > 0) {
        /* nothing after Last-Event-ID: is anything kept at all? */
        struct buf scratch;
        int64_t from = 0;
        bool end2 = false;
        buf_init(&scratch, REPLAY_CAP);
        rc = read_kept(r->store, &r->tenant, m.id, &from, &scratch, &end2, &nchunks);
        buf_cleanup(&scratch);
    }
    if (!rc && nchunks == 0 && strcmp(m.status, "in_progress") != 0) {
        /* nothing kept: a reply that called no tool (or made before events were kept) */
        rc = store_tool_calls_of(r->store, &r->tenant, c.id, m.seq, m.seq, STORE_RUN_CALLS_MAX,
                                 r->arena, &calls, &ncalls);
        if (!rc)
            synthesize(&m, calls, ncalls, last, &out);
        ended = true;
    }
    if (rc) {
        buf_cleanup(&out);
        return err_set(e, rc, "internal_error", NULL, "message events read failed");
    }
    if (strcmp(m.status, "in_progress") != 0)
        ended = true; /* paused, completed or failed: what is kept is all there is */
    r->async = true;
    http_resp_header(r->http, "Cache-Control", "no-cache");
    http_resp_header(r->http, "X-Accel-Buffering", "no");
    stream = http_stream_open(r->http, 200, "text/event-stream");
    r->status = 200;
    if (buf_len(&out))
        http_stream_write(stream, buf_ptr(&out), buf_len(&out));
    buf_cleanup(&out);
    if (!ended && atomic_fetch_add(&followers, 1) < FOLLOWERS_MAX) {
        struct follow *f = xcalloc(1, sizeof(*f));
        pthread_attr_t attr;
        pthread_t th;
        f->pool = api_svc(r)->router.pool;
        f->tenant = r->tenant;
        snprintf(f->id, sizeof(f->id), "%s", m.id);
        snprintf(f->conv_id, sizeof(f->conv_id), "%s", c.id);
        f->last = last;
        f->stream = stream;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        rc = pthread_create(&th, &attr, follow_run, f);
        pthread_attr_destroy(&attr);
        if (rc == 0)
            return 0;
        free(f);
    }
    if (!ended)
        atomic_fetch_sub(&followers, 1);
    http_stream_close(stream);
    return 0;
}

/* See api.h. */
void api_message_events_stop(void)
{
    struct timespec ts = {0, 10 * 1000000L};
    atomic_store(&stopping, true);
    for (int i = 0; i < 500 && atomic_load(&followers) > 0; i++)
        nanosleep(&ts, NULL); /* each ends within FOLLOW_MS and one store read */
}
