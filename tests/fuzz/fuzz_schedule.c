/* SPDX-License-Identifier: MIT */
/*
 * fuzz_schedule: tasks/schedule.c, the input read three ways.
 *   1. As JSON text (any value): sched_recurring_parse(). A failure is ERR_INVALID with code
 *      invalid_request, a param that is "recurring", one of its three members, or
 *      "recurring." + a UTF-8-safe prefix of a member the object really has, and a message
 *      jansson can put in a response. A success is a valid rule whose JSON form equals the
 *      input (the parser accepts canonical members only), whose stored text reads back to the
 *      same rule and text, and whose occurrences obey the rule (below) at instants derived from
 *      the input.
 *   2. As a due_at string and as stored text: a due_at that parses lies in range and survives
 *      clock_fmt_iso() -> parse; stored text that parses writes back canonical text that reads
 *      to the same rule.
 *   3. As raw bytes: a rule and an instant built from the first bytes, so that sched_next()
 *      meets every rule and every instant up to SCHED_SPAN_MS, not only those JSON reaches.
 * Occurrence rule for o = sched_next(r, t): o > t; o is a whole minute at r's minute of day;
 * gmtime_r() (an independent calendar) says o's day is allowed; no allowed slot lies in
 * (t, o); sched_next(r, o) > o; sched_due() at o is due and gives sched_next(r, o).
 * Pure: no I/O; every JSON value is released.
 */
#define FUZZ_NAME "fuzz_schedule"
#include "../../src/core/clock.h"
#include "../../src/core/err.h"
#include "../../src/tasks/schedule.h"
#include "fuzz_text.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MIN_MS INT64_C(60000)
#define DAY_MS INT64_C(86400000)

/* ---- The occurrence rule, checked with gmtime_r ---- */

static void utc(int64_t ms, struct tm *tm)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    CHECK(gmtime_r(&t, tm) != NULL);
}

static bool allows(const struct sched_recurring *r, int64_t slot)
{
    struct tm tm, tomorrow;
    int wd;

    utc(slot, &tm);
    wd = (tm.tm_wday + 6) % 7;
    switch (r->freq) {
    case SCHED_DAILY:
        return true;
    case SCHED_WEEKDAYS:
        return wd < 5;
    case SCHED_WEEKLY:
        return wd == r->day;
    case SCHED_MONTHLY:
        if (tm.tm_mday == r->day)
            return true;
        utc(slot + DAY_MS, &tomorrow);
        return tm.tm_mday < r->day && tomorrow.tm_mday == 1;
    }
    return false;
}

static void check_next(const struct sched_recurring *r, int64_t t)
{
    int64_t o, o2, pnext;
    struct tm tm;
    int steps = 0;

    if (t < -SCHED_SPAN_MS || t > SCHED_SPAN_MS)
        return;
    o = sched_next(r, t);
    CHECK(o > t);
    CHECK(o % MIN_MS == 0);
    utc(o, &tm);
    CHECK(tm.tm_hour * 60 + tm.tm_min == r->minute_of_day && tm.tm_sec == 0);
    CHECK(allows(r, o));
    /* No allowed slot between t and o: walk the days back from o's (at most a month). */
    for (int64_t slot = o - DAY_MS; slot > t; slot -= DAY_MS) {
        CHECK(!allows(r, slot));
        CHECK(++steps <= 31);
    }
    if (o <= SCHED_SPAN_MS) {
        o2 = sched_next(r, o);
        CHECK(o2 > o && o2 - o <= 31 * DAY_MS);
        /* A stored next_run_at of 0 or less is "never scheduled": never due. */
        CHECK(sched_due(r, o, o, &pnext) == (o > 0) && pnext == o2);
        CHECK(!sched_due(r, o, o - 1, &pnext) && pnext == o);
    }
}

/* A few instants from the input: its hash, that day's slot, 1 ms before it, the epoch. */
static void check_instants(const struct sched_recurring *r, const uint8_t *data, size_t size)
{
    uint64_t h = 1469598103934665603u;
    int64_t t, slot;

    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211u;
    t = (int64_t)(h % (UINT64_C(1) << 49)) - (INT64_C(1) << 48); /* about +-8900 years */
    slot = (t >= 0 ? t / DAY_MS : (t - DAY_MS + 1) / DAY_MS) * DAY_MS + r->minute_of_day * MIN_MS;
    check_next(r, t);
    check_next(r, slot);
    check_next(r, slot - 1);
    check_next(r, 0);
    check_next(r, SCHED_DUE_MAX_MS);
}

/* ---- The stored text form ---- */

static void check_text(const struct sched_recurring *r)
{
    char t1[SCHED_TEXT_MAX], t2[SCHED_TEXT_MAX];
    struct sched_recurring back;
    json_t *j = sched_recurring_json(r), *parsed;
    size_t n;

    sched_recurring_text(r, t1, sizeof(t1));
    n = strlen(t1);
    CHECK(n > 0 && n < sizeof(t1) - 1);
    CHECK(sched_recurring_from_text(t1, n, &back) == 0);
    CHECK(back.freq == r->freq && back.day == r->day && back.minute_of_day == r->minute_of_day);
    CHECK(strcmp(sched_recurring_text(&back, t2, sizeof(t2)), t1) == 0);
    /* The text is the JSON form. */
    parsed = json_loads(t1, 0, NULL);
    CHECK(parsed != NULL && json_equal(parsed, j));
    json_decref(parsed);
    json_decref(j);
}

/* ---- 1. JSON ---- */

static bool is_member(json_t *v, const char *name, size_t len)
{
    const char *key;
    json_t *m;

    if (!json_is_object(v))
        return false;
    json_object_foreach(v, key, m)
    {
        if (strcmp(key, "frequency") == 0 || strcmp(key, "day") == 0 || strcmp(key, "time") == 0)
            continue;
        if (strlen(key) >= len && memcmp(key, name, len) == 0)
            return true;
    }
    return false;
}

static void as_json(const uint8_t *data, size_t size)
{
    json_t *v =
        json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    struct sched_recurring r = {SCHED_WEEKLY, 5, 555};
    struct err e;
    json_t *j, *s;
    int rc;

    if (!v)
        return;
    CHECK(sched_recurring_is_stop(v) == json_is_null(v));
    err_clear(&e);
    rc = sched_recurring_parse(v, &r, &e);
    if (rc) {
        size_t plen = strlen(e.param);
        CHECK(rc == ERR_INVALID && e.kind == ERR_INVALID);
        CHECK(e.code && strcmp(e.code, "invalid_request") == 0 && e.msg[0]);
        CHECK(r.freq == SCHED_WEEKLY && r.day == 5 && r.minute_of_day == 555);
        CHECK(strcmp(e.param, "recurring") == 0 || strcmp(e.param, "recurring.frequency") == 0 ||
              strcmp(e.param, "recurring.day") == 0 || strcmp(e.param, "recurring.time") == 0 ||
              (plen >= 10 && memcmp(e.param, "recurring.", 10) == 0 &&
               is_member(v, e.param + 10, plen - 10)));
        CHECK(strcmp(e.param, "recurring") != 0 || !json_is_object(v));
        /* api/errors.c builds the body with jansson: both must be valid UTF-8. */
        CHECK(utf8_valid((const unsigned char *)e.param, plen));
        CHECK(utf8_valid((const unsigned char *)e.msg, strlen(e.msg)));
        s = json_string(e.msg);
        CHECK(s != NULL);
        json_decref(s);
        json_decref(v);
        return;
    }
    CHECK(sched_recurring_valid(&r));
    j = sched_recurring_json(&r);
    CHECK(json_equal(j, v));
    json_decref(j);
    check_text(&r);
    check_instants(&r, data, size);
    json_decref(v);
}

/* ---- 2. due_at and stored text ---- */

static void as_strings(const uint8_t *data, size_t size)
{
    struct sched_recurring r;
    int64_t ms = 42, again = 0;
    struct err e;
    char iso[40];
    int rc;

    err_clear(&e);
    rc = sched_due_at_parse((const char *)data, size, &ms, &e);
    CHECK(sched_due_at_check((const char *)data, size) == (rc == 0));
    if (rc) {
        CHECK(rc == ERR_INVALID && ms == 42 && strcmp(e.param, "due_at") == 0 && e.msg[0]);
    } else {
        struct tm tm;
        CHECK(ms >= SCHED_DUE_MIN_MS && ms <= SCHED_DUE_MAX_MS);
        utc(ms, &tm);
        CHECK(tm.tm_year + 1900 >= 1970 && tm.tm_year + 1900 <= 9999);
        clock_fmt_iso(ms, iso, sizeof(iso));
        CHECK(sched_due_at_parse(iso, strlen(iso), &again, NULL) == 0 && again == ms);
    }
    if (sched_recurring_from_text((const char *)data, size, &r) == 0) {
        CHECK(sched_recurring_valid(&r));
        check_text(&r);
    }
}

/* ---- 3. Raw bytes ---- */

static void as_bytes(const uint8_t *data, size_t size)
{
    struct sched_recurring r;
    uint64_t u = 0;
    int64_t t;

    if (size < 12)
        return;
    r.freq = (enum sched_freq)(data[0] % 4);
    r.day = r.freq == SCHED_WEEKLY ? data[1] % 7 : r.freq == SCHED_MONTHLY ? data[1] % 31 + 1 : -1;
    r.minute_of_day = (data[2] << 8 | data[3]) % 1440;
    for (int i = 0; i < 8; i++)
        u = u << 8 | data[4 + i];
    /* The top bit picks the whole span or the gmtime-friendly years around 1970..9999. */
    if (u >> 63)
        t = (int64_t)(u % (2 * (uint64_t)SCHED_SPAN_MS)) - SCHED_SPAN_MS;
    else
        t = (int64_t)(u % (uint64_t)(SCHED_DUE_MAX_MS + DAY_MS));
    check_next(&r, t);
    check_next(&r, t - t % MIN_MS);
    check_next(&r, SCHED_SPAN_MS);
    check_next(&r, -SCHED_SPAN_MS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_json(data, size);
    as_strings(data, size);
    as_bytes(data, size);
    return 0;
}
