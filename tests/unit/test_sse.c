/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of httpc/sse_read.c, the Server-Sent Events decoder: an OpenAI-style stream, every
 * split of a sample stream (one, two and three parts, and byte by byte), line ends, fields,
 * the BOM, the cap, a callback that stops, the end of the stream, and allocation failures.
 * Events are logged as "type|data|id\n" with CR, LF and NUL in the data escaped, so a whole
 * stream compares as one string.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/core/mem.h"
#include "../../src/httpc/sse.h"
#include "t.h"

#define CAP (64 * 1024)

/* What the callback saw: every event in order, and when to stop. */
struct log {
    struct buf text;
    int events;
    int stop_at; /* return 'stop_rc' from this event on (1-based); 0 = never */
    int stop_rc;
};

static void log_init(struct log *lg)
{
    buf_init(&lg->text, 1 << 20);
    lg->events = 0;
    lg->stop_at = 0;
    lg->stop_rc = 0;
}

static void put_escaped(struct buf *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n')
            buf_appends(b, "\\n");
        else if (p[i] == '\r')
            buf_appends(b, "\\r");
        else if (p[i] == '\0')
            buf_appends(b, "\\0");
        else
            buf_append(b, p + i, 1);
    }
}

static int on_event(void *ud, const struct sse_event *ev)
{
    struct log *lg = ud;

    lg->events++;
    /* Every string is NUL-terminated at its length. */
    if (ev->event[ev->event_len] || ev->data[ev->data_len] || ev->id[ev->id_len])
        buf_appends(&lg->text, "UNTERMINATED");
    put_escaped(&lg->text, ev->event, ev->event_len);
    buf_appends(&lg->text, "|");
    put_escaped(&lg->text, ev->data, ev->data_len);
    buf_appends(&lg->text, "|");
    put_escaped(&lg->text, ev->id, ev->id_len);
    buf_appends(&lg->text, "\n");
    if (lg->stop_at && lg->events >= lg->stop_at)
        return lg->stop_rc;
    return 0;
}

/*
 * Decode the 'len' bytes at 's' cut at the 'ncuts' ascending offsets 'cuts' (so ncuts + 1
 * feeds, some maybe empty), with the cap 'cap', then finish. Returns the first non-zero
 * result of sse_feed(), else that of sse_finish(); the events are in 'lg'.
 */
static int run_cuts(const char *s, size_t len, const size_t *cuts, size_t ncuts, size_t cap,
                    struct log *lg)
{
    struct sse_reader r;
    size_t from = 0;
    int rc = 0;

    sse_init(&r, cap);
    for (size_t i = 0; i <= ncuts && !rc; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        rc = sse_feed(&r, s + from, to - from, on_event, lg);
        from = to;
    }
    if (!rc)
        rc = sse_finish(&r, on_event, lg);
    sse_cleanup(&r);
    return rc;
}

/* Decode the C string 's' in one feed; the event log, owned by 'lg'. */
static const char *run1(const char *s, struct log *lg)
{
    log_init(lg);
    run_cuts(s, strlen(s), NULL, 0, CAP, lg);
    return buf_ptr(&lg->text);
}

/* Decode 's' split at the C strings 'parts' (NULL-terminated) fed one by one. */
static const char *run_parts(const char *const *parts, struct log *lg)
{
    struct sse_reader r;

    log_init(lg);
    sse_init(&r, CAP);
    for (size_t i = 0; parts[i]; i++)
        sse_feed(&r, parts[i], strlen(parts[i]), on_event, lg);
    sse_finish(&r, on_event, lg);
    sse_cleanup(&r);
    return buf_ptr(&lg->text);
}

/* ---- Streams ---- */

static void test_openai(void)
{
    subtest("openai stream")
    {
        static const char s[] =
            "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":"
            "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
            "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
            "\"Hel\"}}]}\n\n"
            ": keep-alive\n\n"
            "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
            "\"lo\\n\"}}]}\n\n"
            "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},"
            "\"finish_reason\":\"stop\"}]}\n\n"
            "data: [DONE]\n\n";
        struct log lg;

        is_str(run1(s, &lg),
               "message|{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":"
               "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}|\n"
               "message|{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
               "\"Hel\"}}]}|\n"
               "message|{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":"
               "\"lo\\n\"}}]}|\n"
               "message|{\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{},"
               "\"finish_reason\":\"stop\"}]}|\n"
               "message|[DONE]|\n",
               "four chunks and [DONE]");
        is_int(lg.events, 5, "five events");
        buf_cleanup(&lg.text);

        /* The same as OpenAI sends it over a CRLF proxy, one TCP segment per ~7 bytes. */
        {
            struct buf crlf;
            size_t cuts[256], n = 0;
            struct log lg2;

            buf_init(&crlf, 4096);
            for (const char *p = s; *p; p++) {
                if (*p == '\n')
                    buf_appends(&crlf, "\r\n");
                else
                    buf_append(&crlf, p, 1);
            }
            for (size_t at = 7; at < buf_len(&crlf) && n < 256; at += 7)
                cuts[n++] = at;
            log_init(&lg);
            log_init(&lg2);
            run1(s, &lg);
            is_int(run_cuts(buf_ptr(&crlf), buf_len(&crlf), cuts, n, CAP, &lg2), 0,
                   "CRLF stream in 7-byte feeds");
            is_str(buf_ptr(&lg2.text), buf_ptr(&lg.text), "CRLF stream gives the same events");
            buf_cleanup(&lg.text);
            buf_cleanup(&lg2.text);
            buf_cleanup(&crlf);
        }
    }
}

/* Every construct at once: BOM, all three line ends, comments, fields of every kind. */
static const char sample[] = "\xEF\xBB\xBF"
                             ": hello\r\n"
                             "event: add\r"
                             "data: 1\r\n"
                             "data:2\n"
                             "id: 7\n"
                             "retry: 10\r\n"
                             "\r\n"
                             "data\r"
                             "\r"
                             "data:  spaced\n"
                             "bogus: x\n"
                             ":\n"
                             "\n"
                             "event: only-type\n"
                             "\r\n"
                             "id\n"
                             "data: after id reset\r"
                             "\n"
                             "\n"
                             "data: no blank line\n"
                             "data: at the end";

static const char sample_events[] = "add|1\\n2|7\n"
                                    "message||7\n"
                                    "message| spaced|7\n"
                                    "message|after id reset|\n";

static void test_splits(void)
{
    subtest("every split")
    {
        size_t len = sizeof(sample) - 1;
        size_t bad2 = 0, bad3 = 0, bad_empty = 0;
        size_t cuts[sizeof(sample)];
        struct log lg;

        log_init(&lg);
        is_int(run_cuts(sample, len, NULL, 0, CAP, &lg), 0, "one feed");
        is_str(buf_ptr(&lg.text), sample_events, "one feed: the events");
        buf_cleanup(&lg.text);

        for (size_t i = 0; i < len; i++)
            cuts[i] = i + 1;
        log_init(&lg);
        is_int(run_cuts(sample, len, cuts, len - 1, CAP, &lg), 0, "byte by byte");
        is_str(buf_ptr(&lg.text), sample_events, "byte by byte: the same events");
        buf_cleanup(&lg.text);

        for (size_t i = 0; i <= len; i++) {
            log_init(&lg);
            if (run_cuts(sample, len, &i, 1, CAP, &lg) != 0 ||
                strcmp(buf_ptr(&lg.text), sample_events) != 0)
                bad2++;
            buf_cleanup(&lg.text);
        }
        is_int(bad2, 0, "all two-part splits give the same events");

        for (size_t i = 0; i <= len; i++) {
            for (size_t j = i; j <= len; j++) {
                size_t c[2] = {i, j};
                log_init(&lg);
                if (run_cuts(sample, len, c, 2, CAP, &lg) != 0 ||
                    strcmp(buf_ptr(&lg.text), sample_events) != 0)
                    bad3++;
                buf_cleanup(&lg.text);
            }
        }
        is_int(bad3, 0, "all three-part splits (with empty middles) give the same events");

        /* Byte by byte with an empty feed after each byte. */
        {
            size_t many[2 * sizeof(sample)];
            for (size_t i = 0; i < len; i++) {
                many[2 * i] = i + 1;
                many[2 * i + 1] = i + 1;
            }
            log_init(&lg);
            if (run_cuts(sample, len, many, 2 * len, CAP, &lg) != 0 ||
                strcmp(buf_ptr(&lg.text), sample_events) != 0)
                bad_empty++;
            buf_cleanup(&lg.text);
        }
        is_int(bad_empty, 0, "empty feeds between bytes change nothing");
    }
}

static void test_line_ends(void)
{
    subtest("line ends")
    {
        struct log lg;

        is_str(run1("data: a\n\n", &lg), "message|a|\n", "LF LF");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\r\n\r\n", &lg), "message|a|\n", "CRLF CRLF");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\r\r", &lg), "message|a|\n", "CR CR");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\rdata: b\n\r\n", &lg), "message|a\\nb|\n", "CR, LF, CRLF mixed");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\n\rdata: b\r\n\n", &lg), "message|a|\nmessage|b|\n",
               "LF CR is two line ends");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\r\n\ndata: b\r\r\n", &lg), "message|a|\nmessage|b|\n",
               "CR CRLF is two line ends");
        buf_cleanup(&lg.text);
        is_str(run1("\n\r\n\r\n\ndata: a\n\n\n\n", &lg), "message|a|\n",
               "extra blank lines dispatch nothing");
        buf_cleanup(&lg.text);
    }
}

static void test_cr_boundary(void)
{
    subtest("CR at a feed boundary")
    {
        struct log lg;
        const char *a[] = {"data: a\r", "\ndata: b\r\n\r\n", NULL};
        const char *b[] = {"data: a\r", "\r", NULL};
        const char *c[] = {"data: a\r", "", "\ndata: b\n\n", NULL};
        const char *d[] = {"data: a\r", "\n", "\n", NULL};
        const char *e[] = {"data: a\r\n", "\ndata: b\n\n", NULL};
        const char *f[] = {"data: a\r", "\r", "\n", "data: b\n\n", NULL};

        is_str(run_parts(a, &lg), "message|a\\nb|\n", "CR | LF is one line end");
        buf_cleanup(&lg.text);
        is_str(run_parts(b, &lg), "message|a|\n", "CR | CR is two line ends");
        buf_cleanup(&lg.text);
        is_str(run_parts(c, &lg), "message|a\\nb|\n", "an empty feed keeps the pending CR");
        buf_cleanup(&lg.text);
        is_str(run_parts(d, &lg), "message|a|\n", "CR | LF | LF");
        buf_cleanup(&lg.text);
        is_str(run_parts(e, &lg), "message|a|\nmessage|b|\n", "CRLF | LF: the LF is a blank line");
        buf_cleanup(&lg.text);
        is_str(run_parts(f, &lg), "message|a|\nmessage|b|\n",
               "CR | CR | LF: blank line ended by CRLF");
        buf_cleanup(&lg.text);
    }
}

static void test_fields(void)
{
    subtest("fields")
    {
        struct log lg;

        is_str(run1(": ping\n\n", &lg), "", "a comment alone dispatches nothing");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\n: ping\ndata: b\n\n", &lg), "message|a\\nb|\n",
               "a comment inside an event is skipped");
        buf_cleanup(&lg.text);
        is_str(run1(":data: x\n\n", &lg), "", "a commented-out field");
        buf_cleanup(&lg.text);
        is_str(run1("data: one\ndata: two\ndata: three\n\n", &lg), "message|one\\ntwo\\nthree|\n",
               "data lines joined with LF");
        buf_cleanup(&lg.text);
        is_str(run1("data\n\n", &lg), "message||\n", "a field without colon: empty data");
        buf_cleanup(&lg.text);
        is_str(run1("data\ndata\n\n", &lg), "message|\\n|\n", "two empty data lines");
        buf_cleanup(&lg.text);
        is_str(run1("data:\n\n", &lg), "message||\n", "an empty value still dispatches");
        buf_cleanup(&lg.text);
        is_str(run1("data:x\n\n", &lg), "message|x|\n", "no space after the colon");
        buf_cleanup(&lg.text);
        is_str(run1("data:  x \n\n", &lg), "message| x |\n", "only one space is removed");
        buf_cleanup(&lg.text);
        is_str(run1("data: a:b: c\n\n", &lg), "message|a:b: c|\n", "the first colon splits");
        buf_cleanup(&lg.text);
        is_str(run1("event: delta\ndata: x\n\ndata: y\n\n", &lg), "delta|x|\nmessage|y|\n",
               "the event type lasts one event");
        buf_cleanup(&lg.text);
        is_str(run1("event: a\nevent: b\ndata: x\n\n", &lg), "b|x|\n", "the last event type wins");
        buf_cleanup(&lg.text);
        is_str(run1("event:\ndata: x\n\n", &lg), "message|x|\n", "an empty type is message");
        buf_cleanup(&lg.text);
        is_str(run1("event: x\n\ndata: y\n\n", &lg), "message|y|\n",
               "an event without data is dropped, with its type");
        buf_cleanup(&lg.text);
        is_str(run1("id: 1\ndata: a\n\ndata: b\n\nid: 2\n\ndata: c\n\nid\ndata: d\n\n", &lg),
               "message|a|1\nmessage|b|1\nmessage|c|2\nmessage|d|\n",
               "the last event ID outlives events; 'id' alone clears it");
        buf_cleanup(&lg.text);
        {
            static const char s[] = "id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n";
            log_init(&lg);
            is_int(run_cuts(s, sizeof(s) - 1, NULL, 0, CAP, &lg), 0, "id with NUL: decodes");
            is_str(buf_ptr(&lg.text), "message|a|1\nmessage|b|1\n", "an id with NUL is ignored");
            buf_cleanup(&lg.text);
        }
        {
            static const char s[] = "data: a\0b\n\n";
            log_init(&lg);
            run_cuts(s, sizeof(s) - 1, NULL, 0, CAP, &lg);
            is_str(buf_ptr(&lg.text), "message|a\\0b|\n", "NUL in data passes through");
            buf_cleanup(&lg.text);
        }
        is_str(run1("retry: 1000\ndata: x\n\n", &lg), "message|x|\n", "retry is ignored");
        buf_cleanup(&lg.text);
        is_str(run1("retry: 1000\n\n", &lg), "", "retry alone dispatches nothing");
        buf_cleanup(&lg.text);
        is_str(run1("foo: bar\nDATA: no\nData: no\n data: no\ndata : no\ndata: yes\n\n", &lg),
               "message|yes|\n", "unknown, miscased and space-padded names are ignored");
        buf_cleanup(&lg.text);
        is_str(run1("datax: 1\ndat: 2\ndata: 3\n\n", &lg), "message|3|\n",
               "names match whole, not by prefix");
        buf_cleanup(&lg.text);
    }
}

static void test_bom(void)
{
    subtest("BOM")
    {
        struct log lg;
        const char *split[] = {"\xEF", "\xBB", "\xBF", "da", "ta: a\n\n", NULL};

        is_str(run1("\xEF\xBB\xBF"
                    "data: a\n\n",
                    &lg),
               "message|a|\n", "a leading BOM is skipped");
        buf_cleanup(&lg.text);
        is_str(run_parts(split, &lg), "message|a|\n", "a BOM split over feeds");
        buf_cleanup(&lg.text);
        is_str(run1("\xEF\xBB\xBF\n"
                    "data: a\n\n",
                    &lg),
               "message|a|\n", "a BOM alone on the first line is a blank line");
        buf_cleanup(&lg.text);
        is_str(run1("\xEF\xBB\xBF\xEF\xBB\xBF"
                    "data: a\n\ndata: b\n\n",
                    &lg),
               "message|b|\n", "only one BOM is skipped");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\n\xEF\xBB\xBF"
                    "data: b\n\n",
                    &lg),
               "message|a|\n", "a BOM on a later line is part of the name");
        buf_cleanup(&lg.text);
        is_str(run1("\xEF\xBB"
                    "data: a\n\ndata: b\n\n",
                    &lg),
               "message|b|\n", "half a BOM is not skipped");
        buf_cleanup(&lg.text);
        is_str(run1("data: \xEF\xBB\xBFx\n\n", &lg), "message|\xEF\xBB\xBFx|\n",
               "a BOM inside a value is kept");
        buf_cleanup(&lg.text);
    }
}

/* ---- Limits and errors ---- */

static void test_cap(void)
{
    subtest("cap")
    {
        struct sse_reader r;
        struct log lg;
        size_t cut;
        int bad = 0;

        /* "data: " + 10 bytes is a line of 16. */
        log_init(&lg);
        is_int(run_cuts("data: 0123456789\n\n", 18, NULL, 0, 16, &lg), 0, "a line at the cap");
        is_str(buf_ptr(&lg.text), "message|0123456789|\n", "a line at the cap: the event");
        buf_cleanup(&lg.text);

        log_init(&lg);
        is_int(run_cuts("data: a\n\ndata: 0123456789A\n\n", 28, NULL, 0, 16, &lg), ERR_LIMIT,
               "a line over the cap");
        is_str(buf_ptr(&lg.text), "message|a|\n", "events before the long line were dispatched");
        buf_cleanup(&lg.text);

        for (cut = 0; cut <= 28; cut++) {
            log_init(&lg);
            if (run_cuts("data: a\n\ndata: 0123456789A\n\n", 28, &cut, 1, 16, &lg) != ERR_LIMIT ||
                strcmp(buf_ptr(&lg.text), "message|a|\n") != 0)
                bad++;
            buf_cleanup(&lg.text);
        }
        is_int(bad, 0, "a line over the cap fails the same at every split");

        log_init(&lg);
        is_int(run_cuts("data: 0123456789A", 17, NULL, 0, 16, &lg), ERR_LIMIT,
               "an unterminated line over the cap");
        buf_cleanup(&lg.text);

        log_init(&lg);
        is_int(run_cuts(": 0123456789ABCDEF\n", 19, NULL, 0, 16, &lg), ERR_LIMIT,
               "a comment line over the cap");
        buf_cleanup(&lg.text);

        /* Joined data: 5 + 1 + 5 + 1 + 5 = 17 > 16; the lines are short. */
        log_init(&lg);
        is_int(run_cuts("data:01234\ndata:56789\ndata:ABCDE\n\n", 35, NULL, 0, 16, &lg), ERR_LIMIT,
               "joined data over the cap");
        is_int(lg.events, 0, "joined data over the cap: no event");
        buf_cleanup(&lg.text);

        log_init(&lg);
        is_int(run_cuts("data:01234\ndata:56789\ndata:ABCD\n\n", 34, NULL, 0, 16, &lg), 0,
               "joined data at the cap");
        is_str(buf_ptr(&lg.text), "message|01234\\n56789\\nABCD|\n", "joined data at the cap");
        buf_cleanup(&lg.text);

        log_init(&lg);
        is_int(run_cuts("data:01234567\n\ndata:01234567\n\n", 30, NULL, 0, 16, &lg), 0,
               "the cap is per event");
        is_int(lg.events, 2, "the cap is per event: two events");
        buf_cleanup(&lg.text);

        /* Spent after an error. */
        log_init(&lg);
        sse_init(&r, 16);
        is_int(sse_feed(&r, "data: 0123456789ABCDEF", 22, on_event, &lg), ERR_LIMIT,
               "limit inside one feed");
        is_int(sse_feed(&r, "\n\ndata: a\n\n", 11, on_event, &lg), ERR_LIMIT,
               "the error is sticky");
        is_int(lg.events, 0, "nothing dispatched after the error");
        is_int(sse_finish(&r, on_event, &lg), 0, "finish after an error");
        is_int(sse_feed(&r, "data: a\n\n", 9, on_event, &lg), 0, "finish starts a new stream");
        is_int(lg.events, 1, "the new stream dispatches");
        sse_cleanup(&r);
        buf_cleanup(&lg.text);
    }
}

static void test_stop(void)
{
    subtest("callback stops")
    {
        static const char s[] = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
        struct sse_reader r;
        struct log lg;

        log_init(&lg);
        lg.stop_at = 2;
        lg.stop_rc = 42;
        sse_init(&r, CAP);
        is_int(sse_feed(&r, s, strlen(s), on_event, &lg), 42, "the callback's code is returned");
        is_int(lg.events, 2, "decoding stopped at the second event");
        is_int(sse_feed(&r, "data: 4\n\n", 9, on_event, &lg), 42, "later feeds return it again");
        is_int(lg.events, 2, "and dispatch nothing");
        sse_cleanup(&r);
        buf_cleanup(&lg.text);

        log_init(&lg);
        lg.stop_at = 1;
        lg.stop_rc = -1;
        is_int(run_cuts(s, strlen(s), NULL, 0, CAP, &lg), -1, "a negative code too");
        is_int(lg.events, 1, "one event");
        buf_cleanup(&lg.text);
    }
}

static void test_finish(void)
{
    subtest("end of stream")
    {
        struct sse_reader r;
        struct log lg;

        is_str(run1("data: a\n\ndata: b\n", &lg), "message|a|\n",
               "an event without its blank line is discarded");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\n\ndata: b", &lg), "message|a|\n", "an incomplete line is discarded");
        buf_cleanup(&lg.text);
        is_str(run1("data: a\n\ndata: b\r", &lg), "message|a|\n",
               "a last line ended by CR is still no event");
        buf_cleanup(&lg.text);
        is_str(run1("", &lg), "", "an empty stream");
        buf_cleanup(&lg.text);

        log_init(&lg);
        sse_init(&r, CAP);
        is_int(sse_finish(&r, on_event, &lg), 0, "finish on a fresh reader");
        is_int(sse_feed(&r, "id: 9\ndata: a\n\ndata: b\r", 23, on_event, &lg), 0, "first stream");
        is_int(sse_finish(&r, on_event, &lg), 0, "finish returns 0");
        /* Had the CR of "b\r" survived, it would swallow this LF and let the BOM open the
         * stream; as it is, the LF is the first line and the BOM makes an unknown field. */
        is_int(sse_feed(&r,
                        "\n\xEF\xBB\xBF"
                        "data: c\n\n",
                        13, on_event, &lg),
               0, "second stream");
        is_int(sse_finish(&r, on_event, &lg), 0, "second finish");
        is_int(sse_feed(&r,
                        "\xEF\xBB\xBF"
                        "data: d\n\n",
                        12, on_event, &lg),
               0, "third stream");
        is_str(buf_ptr(&lg.text), "message|a|9\nmessage|d|\n",
               "a new stream: no pending CR, no data, no id, a BOM allowed again");
        sse_cleanup(&r);
        buf_cleanup(&lg.text);
    }
}

static void test_nomem(void)
{
    subtest("allocation failures")
    {
        long n;
        int bad = 0;

        for (n = 1; n < 100; n++) {
            struct log lg;
            size_t cut = 40;
            int rc;

            char warm[1024];

            /* The log allocates too: give it its memory before the hook is armed. */
            log_init(&lg);
            memset(warm, 'x', sizeof(warm));
            buf_append(&lg.text, warm, sizeof(warm));
            buf_reset(&lg.text);
            mem_fail_after(n);
            rc = run_cuts(sample, sizeof(sample) - 1, &cut, 1, CAP, &lg);
            mem_fail_after(0);
            if (rc == 0) {
                is_str(buf_ptr(&lg.text), sample_events, "the events once memory suffices");
                buf_cleanup(&lg.text);
                break;
            }
            if (rc != ERR_NOMEM)
                bad++;
            buf_cleanup(&lg.text);
        }
        is_int(bad, 0, "every failed allocation gives ERR_NOMEM");
        ok(n > 1 && n < 100, "some allocations were failed, then it succeeded");
    }
}

int main(void)
{
    test_openai();
    test_splits();
    test_line_ends();
    test_cr_boundary();
    test_fields();
    test_bom();
    test_cap();
    test_stop();
    test_finish();
    test_nomem();
    return done_testing();
}
