/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tasks/schedule.c: the `recurring` parser (every error with its exact param),
 * the JSON and stored text forms and their round trips, sched_next() at month ends, in leap
 * and non-leap years, across weekends, around midnight and New Year, the missed-slot rule of
 * sched_due(), the due_at parser, and a brute-force comparison of sched_next() with a slow
 * reference that walks day by day and asks gmtime_r() about each day (gmtime_r is used here
 * only, as an independent calendar).
 */
#include "../../src/core/clock.h"
#include "../../src/core/err.h"
#include "../../src/tasks/schedule.h"
#include "t.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_MS INT64_C(60000)
#define DAY_MS INT64_C(86400000)

/* ---- Helpers ---- */

/* The instant of an ISO 8601 test literal; a typo in a test aborts rather than passes. */
static int64_t at(const char *iso)
{
    int64_t ms = 0;
    if (clock_parse_iso(iso, strlen(iso), &ms)) {
        printf("# bad test time literal %s\n", iso);
        abort();
    }
    return ms;
}

static struct sched_recurring rule(enum sched_freq f, int day, int hh, int mm)
{
    struct sched_recurring r = {f, day, hh * 60 + mm};
    return r;
}

static bool same(const struct sched_recurring *a, const struct sched_recurring *b)
{
    return a->freq == b->freq && a->day == b->day && a->minute_of_day == b->minute_of_day;
}

/* sched_next(r, after) is the instant 'want' ("YYYY-MM-DDTHH:MM:SS.mmmZ"). */
static void next_is(const struct sched_recurring *r, const char *after, const char *want,
                    const char *what)
{
    char got[32];
    clock_fmt_iso(sched_next(r, at(after)), got, sizeof(got));
    is_str(got, want, what);
}

static json_t *load(const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    if (!v) {
        printf("# bad test JSON %s\n", text);
        abort();
    }
    return v;
}

/* Parsing 'text' fails with invalid_request at 'param', a message holding 'needle', and
 * leaves the output alone. */
static void parse_fails(const char *text, const char *param, const char *needle)
{
    static const struct sched_recurring canary = {SCHED_WEEKLY, 3, 77};
    struct sched_recurring r = canary;
    json_t *v = load(text);
    struct err e;
    int rc;

    err_clear(&e);
    rc = sched_recurring_parse(v, &r, &e);
    if (!ok(rc == ERR_INVALID && e.kind == ERR_INVALID && e.code &&
                strcmp(e.code, "invalid_request") == 0 && strcmp(e.param, param) == 0 &&
                strstr(e.msg, needle) != NULL && same(&r, &canary),
            text))
        printf("#   got rc %d code %s param '%s' msg '%s'; want param '%s', msg with '%s'\n", rc,
               e.code ? e.code : "(null)", e.param, e.msg, param, needle);
    json_decref(v);
}

/* Parsing 'text' gives the rule (f, day, minute). */
static void parse_gives(const char *text, enum sched_freq f, int day, int minute)
{
    struct sched_recurring r = {SCHED_DAILY, -9, -9}, want = {f, day, minute};
    json_t *v = load(text);
    struct err e;
    int rc;

    err_clear(&e);
    rc = sched_recurring_parse(v, &r, &e);
    if (!ok(rc == 0 && same(&r, &want), text))
        printf("#   got rc %d (%s: %s) rule {%d, %d, %d}\n", rc, e.param, e.msg, (int)r.freq, r.day,
               r.minute_of_day);
    json_decref(v);
}

/* ---- Parsing ---- */

static void test_parse_ok(void)
{
    subtest("parse: accepted rules")
    {
        parse_gives("{\"frequency\":\"daily\",\"time\":\"09:30\"}", SCHED_DAILY, -1, 570);
        parse_gives("{\"frequency\":\"weekdays\",\"time\":\"00:00\"}", SCHED_WEEKDAYS, -1, 0);
        parse_gives("{\"frequency\":\"weekly\",\"day\":\"monday\",\"time\":\"23:59\"}",
                    SCHED_WEEKLY, 0, 1439);
        parse_gives("{\"frequency\":\"weekly\",\"day\":\"wednesday\",\"time\":\"12:00\"}",
                    SCHED_WEEKLY, 2, 720);
        parse_gives("{\"frequency\":\"weekly\",\"day\":\"sunday\",\"time\":\"07:05\"}",
                    SCHED_WEEKLY, 6, 425);
        parse_gives("{\"frequency\":\"monthly\",\"day\":\"1\",\"time\":\"09:00\"}", SCHED_MONTHLY,
                    1, 540);
        parse_gives("{\"frequency\":\"monthly\",\"day\":\"9\",\"time\":\"09:00\"}", SCHED_MONTHLY,
                    9, 540);
        parse_gives("{\"frequency\":\"monthly\",\"day\":\"10\",\"time\":\"09:00\"}", SCHED_MONTHLY,
                    10, 540);
        parse_gives("{\"frequency\":\"monthly\",\"day\":\"31\",\"time\":\"19:59\"}", SCHED_MONTHLY,
                    31, 1199);
        /* Member order does not matter. */
        parse_gives("{\"time\":\"23:59\",\"day\":\"30\",\"frequency\":\"monthly\"}", SCHED_MONTHLY,
                    30, 1439);
        /* Every weekday name maps to its index. */
        static const char *const names[] = {"monday", "tuesday",  "wednesday", "thursday",
                                            "friday", "saturday", "sunday"};
        for (int i = 0; i < 7; i++) {
            char text[100];
            snprintf(text, sizeof(text),
                     "{\"frequency\":\"weekly\",\"day\":\"%s\",\"time\":\"01:02\"}", names[i]);
            parse_gives(text, SCHED_WEEKLY, i, 62);
        }
    }
}

static void test_parse_errors(void)
{
    subtest("parse: the object")
    {
        json_t *n = json_null(), *o = json_object();
        ok(sched_recurring_is_stop(n), "null stops recurrence");
        ok(!sched_recurring_is_stop(o), "an object does not");
        ok(!sched_recurring_is_stop(NULL), "an absent member does not");
        json_decref(n);
        json_decref(o);
        parse_fails("null", "recurring", "object");
        parse_fails("[]", "recurring", "object");
        parse_fails("\"daily\"", "recurring", "object");
        parse_fails("1", "recurring", "object");
        parse_fails("true", "recurring", "object");
    }
    subtest("parse: unknown members")
    {
        parse_fails("{\"frequency\":\"daily\",\"time\":\"09:00\",\"foo\":1}", "recurring.foo",
                    "Unknown parameter: recurring.foo");
        /* An unknown member is reported before anything else is looked at. */
        parse_fails("{\"foo\":null}", "recurring.foo", "Unknown");
        parse_fails("{\"frequency\":\"hourly\",\"Time\":\"09:00\"}", "recurring.Time", "Unknown");
        parse_fails("{\"frequency\":\"daily\",\"time\":\"09:00\",\"days\":[\"monday\"]}",
                    "recurring.days", "Unknown");
        parse_fails("{\"frequency\":\"daily\",\"time\":\"09:00\",\"\":1}", "recurring.", "Unknown");
        /* A long name is cut at 60 bytes, never inside a UTF-8 sequence: 40 x "é" (80 bytes)
         * becomes 30 x "é". */
        char text[200], param[100];
        size_t n = 0, m = 0;
        n += (size_t)snprintf(text, sizeof(text), "{\"");
        m += (size_t)snprintf(param, sizeof(param), "recurring.");
        for (int i = 0; i < 40; i++) {
            n += (size_t)snprintf(text + n, sizeof(text) - n, "\xc3\xa9");
            if (i < 30)
                m += (size_t)snprintf(param + m, sizeof(param) - m, "\xc3\xa9");
        }
        snprintf(text + n, sizeof(text) - n, "\":1}");
        parse_fails(text, param, "Unknown");
        /* An odd cut point: "x" + 40 x "é" is cut to "x" + 29 x "é" (59 bytes). */
        n = (size_t)snprintf(text, sizeof(text), "{\"x");
        m = (size_t)snprintf(param, sizeof(param), "recurring.x");
        for (int i = 0; i < 40; i++) {
            n += (size_t)snprintf(text + n, sizeof(text) - n, "\xc3\xa9");
            if (i < 29)
                m += (size_t)snprintf(param + m, sizeof(param) - m, "\xc3\xa9");
        }
        snprintf(text + n, sizeof(text) - n, "\":1}");
        parse_fails(text, param, "Unknown");
    }
    subtest("parse: frequency")
    {
        const char *allowed = "one of daily, weekdays, weekly, monthly";
        parse_fails("{}", "recurring.frequency", "Missing required parameter");
        parse_fails("{\"time\":\"09:00\"}", "recurring.frequency", allowed);
        parse_fails("{\"frequency\":null,\"time\":\"09:00\"}", "recurring.frequency", allowed);
        parse_fails("{\"frequency\":\"Daily\",\"time\":\"09:00\"}", "recurring.frequency", allowed);
        parse_fails("{\"frequency\":\"DAILY\",\"time\":\"09:00\"}", "recurring.frequency", allowed);
        parse_fails("{\"frequency\":\"hourly\",\"time\":\"09:00\"}", "recurring.frequency",
                    allowed);
        parse_fails("{\"frequency\":\"daily \",\"time\":\"09:00\"}", "recurring.frequency",
                    allowed);
        parse_fails("{\"frequency\":\"\",\"time\":\"09:00\"}", "recurring.frequency", allowed);
        parse_fails("{\"frequency\":1,\"time\":\"09:00\"}", "recurring.frequency", allowed);
        parse_fails("{\"frequency\":[\"daily\"],\"time\":\"09:00\"}", "recurring.frequency",
                    allowed);
        parse_fails("{\"frequency\":{},\"time\":\"09:00\"}", "recurring.frequency", allowed);
        /* A bad frequency is reported before a bad day or time. */
        parse_fails("{\"frequency\":\"yearly\",\"day\":\"x\",\"time\":\"x\"}",
                    "recurring.frequency", allowed);
    }
    subtest("parse: day")
    {
        const char *weekdays = "monday, tuesday, wednesday, thursday, friday, saturday, sunday";
        const char *mdays = "\"1\"..\"31\"";
        /* Absent for daily and weekdays, even as null. */
        parse_fails("{\"frequency\":\"daily\",\"day\":\"monday\",\"time\":\"09:00\"}",
                    "recurring.day", "must be absent when frequency is daily");
        parse_fails("{\"frequency\":\"weekdays\",\"day\":\"1\",\"time\":\"09:00\"}",
                    "recurring.day", "must be absent when frequency is weekdays");
        parse_fails("{\"frequency\":\"daily\",\"day\":null,\"time\":\"09:00\"}", "recurring.day",
                    "absent");
        /* Weekly: lower-case English names only. */
        parse_fails("{\"frequency\":\"weekly\",\"time\":\"09:00\"}", "recurring.day", weekdays);
        parse_fails("{\"frequency\":\"weekly\",\"time\":\"09:00\"}", "recurring.day",
                    "Missing required parameter");
        const char *bad_week[] = {"\"Monday\"",  "\"MONDAY\"", "\"mon\"",     "\"\"",
                                  "\"monday \"", "\"1\"",      "0",           "null",
                                  "[]",          "\"lundi\"",  "\"mondays\"", "\"sunday\\u0000\"",
                                  "true"};
        for (size_t i = 0; i < sizeof(bad_week) / sizeof(bad_week[0]); i++) {
            char text[120];
            snprintf(text, sizeof(text), "{\"frequency\":\"weekly\",\"day\":%s,\"time\":\"09:00\"}",
                     bad_week[i]);
            if (strstr(bad_week[i], "\\u0000")) {
                /* jansson refuses NUL in strings unless asked; build the value by hand. */
                json_t *v = json_pack("{s:s, s:s%, s:s}", "frequency", "weekly", "day", "sunday\0",
                                      (size_t)7, "time", "09:00");
                struct sched_recurring r;
                struct err e;
                err_clear(&e);
                ok(v && sched_recurring_parse(v, &r, &e) == ERR_INVALID &&
                       strcmp(e.param, "recurring.day") == 0,
                   "weekly day with an embedded NUL");
                json_decref(v);
                continue;
            }
            parse_fails(text, "recurring.day", weekdays);
        }
        /* Monthly: a JSON string "1".."31", plain decimal. */
        parse_fails("{\"frequency\":\"monthly\",\"time\":\"09:00\"}", "recurring.day", mdays);
        const char *bad_month[] = {"15",      "\"01\"",  "\"0\"",       "\"00\"",  "\"32\"",
                                   "\"+1\"",  "\" 1\"",  "\"1 \"",      "\"-1\"",  "\"1.0\"",
                                   "\"31x\"", "\"100\"", "\"\"",        "null",    "\"monday\"",
                                   "15.0",    "[\"1\"]", "\"\\uff11\"", "\"0x1\"", "\"1e1\""};
        for (size_t i = 0; i < sizeof(bad_month) / sizeof(bad_month[0]); i++) {
            char text[120];
            snprintf(text, sizeof(text),
                     "{\"frequency\":\"monthly\",\"day\":%s,\"time\":\"09:00\"}", bad_month[i]);
            parse_fails(text, "recurring.day", mdays);
        }
        /* A bad day is reported before a bad time. */
        parse_fails("{\"frequency\":\"weekly\",\"day\":\"x\",\"time\":\"x\"}", "recurring.day",
                    weekdays);
    }
    subtest("parse: time")
    {
        const char *hhmm = "HH:MM, 24-hour UTC";
        parse_fails("{\"frequency\":\"daily\"}", "recurring.time", "Missing required parameter");
        parse_fails("{\"frequency\":\"monthly\",\"day\":\"5\"}", "recurring.time", hhmm);
        const char *bad_time[] = {"\"9:30\"",     "\"09:3\"",  "\"24:00\"", "\"23:60\"",
                                  "\"09:30:00\"", "\"0930\"",  "\"09-30\"", "\" 09:30\"",
                                  "\"09:30 \"",   "\"\"",      "\"-1:30\"", "\"+9:30\"",
                                  "930",          "null",      "\"99:99\"", "\"09:30Z\"",
                                  "\"9:300\"",    "\"0a:30\"", "\"09:3a\"", "\"\\u0660\\u0669:30\"",
                                  "\"09h30\"",    "\"12:5\"",  "[]",        "\"25:00\""};
        for (size_t i = 0; i < sizeof(bad_time) / sizeof(bad_time[0]); i++) {
            char text[120];
            snprintf(text, sizeof(text), "{\"frequency\":\"daily\",\"time\":%s}", bad_time[i]);
            parse_fails(text, "recurring.time", hhmm);
        }
    }
}

/* ---- Formatting ---- */

static void test_format(void)
{
    subtest("format: JSON and stored text")
    {
        struct {
            struct sched_recurring r;
            const char *text;
        } cases[] = {
            {{SCHED_DAILY, -1, 570}, "{\"frequency\":\"daily\",\"time\":\"09:30\"}"},
            {{SCHED_WEEKDAYS, -1, 0}, "{\"frequency\":\"weekdays\",\"time\":\"00:00\"}"},
            {{SCHED_WEEKLY, 2, 1439},
             "{\"frequency\":\"weekly\",\"day\":\"wednesday\",\"time\":\"23:59\"}"},
            {{SCHED_WEEKLY, 6, 65},
             "{\"frequency\":\"weekly\",\"day\":\"sunday\",\"time\":\"01:05\"}"},
            {{SCHED_MONTHLY, 15, 540},
             "{\"frequency\":\"monthly\",\"day\":\"15\",\"time\":\"09:00\"}"},
            {{SCHED_MONTHLY, 1, 1}, "{\"frequency\":\"monthly\",\"day\":\"1\",\"time\":\"00:01\"}"},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
            char text[SCHED_TEXT_MAX];
            json_t *o = sched_recurring_json(&cases[i].r);
            char *dump = json_dumps(o, JSON_COMPACT);
            is_str(sched_recurring_text(&cases[i].r, text, sizeof(text)), cases[i].text,
                   "stored text");
            is_str(dump, cases[i].text, "JSON object, members in contract order");
            free(dump);
            json_decref(o);
        }
        /* The longest text fits SCHED_TEXT_MAX with room to spare. */
        struct sched_recurring wed = {SCHED_WEEKLY, 2, 1439};
        char text[SCHED_TEXT_MAX];
        ok(strlen(sched_recurring_text(&wed, text, sizeof(text))) < SCHED_TEXT_MAX - 1,
           "longest text fits");
    }
    subtest("format: round trips")
    {
        static const int minutes[] = {0, 1, 59, 60, 61, 599, 600, 719, 720, 1380, 1438, 1439};
        int bad = 0, n = 0;
        for (int f = SCHED_DAILY; f <= SCHED_MONTHLY; f++) {
            int lo = f == SCHED_WEEKLY ? 0 : f == SCHED_MONTHLY ? 1 : -1;
            int hi = f == SCHED_WEEKLY ? 6 : f == SCHED_MONTHLY ? 31 : -1;
            for (int d = lo; d <= hi; d++) {
                for (size_t k = 0; k < sizeof(minutes) / sizeof(minutes[0]); k++) {
                    struct sched_recurring r = {(enum sched_freq)f, d, minutes[k]}, back, again;
                    char t1[SCHED_TEXT_MAX], t2[SCHED_TEXT_MAX];
                    json_t *o = sched_recurring_json(&r);
                    n++;
                    sched_recurring_text(&r, t1, sizeof(t1));
                    if (sched_recurring_from_text(t1, strlen(t1), &back) || !same(&r, &back) ||
                        strcmp(sched_recurring_text(&back, t2, sizeof(t2)), t1) != 0) {
                        bad++;
                        printf("#   text round trip failed: %s\n", t1);
                    }
                    /* The JSON object parses back to the same rule. */
                    if (sched_recurring_parse(o, &again, NULL) || !same(&r, &again)) {
                        bad++;
                        printf("#   JSON round trip failed: %s\n", t1);
                    }
                    json_decref(o);
                }
            }
        }
        is_int(n, 12 * (1 + 1 + 7 + 31), "every rule shape tried");
        is_int(bad, 0, "text -> rule -> text and JSON -> rule are exact");
        /* A non-canonical but valid stored text reads, and writes back canonical. */
        const char *loose = "{ \"time\" : \"07:00\", \"frequency\" : \"weekdays\" }";
        struct sched_recurring r;
        char t[SCHED_TEXT_MAX];
        ok(sched_recurring_from_text(loose, strlen(loose), &r) == 0, "loose text reads");
        is_str(sched_recurring_text(&r, t, sizeof(t)),
               "{\"frequency\":\"weekdays\",\"time\":\"07:00\"}", "and writes back canonical");
    }
    subtest("format: damaged stored text")
    {
        const char *bad[] = {"",
                             "null",
                             "{}",
                             "{\"frequency\":\"daily\"",
                             "{\"frequency\":\"daily\",\"time\":\"09:00\"} x",
                             "{\"frequency\":\"daily\",\"frequency\":\"daily\",\"time\":\"09:00\"}",
                             "{\"frequency\":\"monthly\",\"day\":15,\"time\":\"09:00\"}",
                             "daily 09:00",
                             "[\"daily\",\"09:00\"]"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            struct sched_recurring r = {SCHED_WEEKLY, 4, 44};
            ok(sched_recurring_from_text(bad[i], strlen(bad[i]), &r) == ERR_INVALID &&
                   r.freq == SCHED_WEEKLY && r.day == 4 && r.minute_of_day == 44,
               bad[i][0] ? bad[i] : "(empty)");
        }
        /* Bytes after a NUL count: the length is what is parsed. */
        const char nul[] = "{\"frequency\":\"daily\",\"time\":\"09:00\"}\0";
        struct sched_recurring r;
        ok(sched_recurring_from_text(nul, sizeof(nul) - 1, &r) == ERR_INVALID,
           "text with a trailing NUL byte");
        ok(sched_recurring_from_text(nul, sizeof(nul) - 2, &r) == 0, "the same text without it");
    }
    subtest("valid")
    {
        struct sched_recurring good[] = {{SCHED_DAILY, -1, 0},  {SCHED_WEEKDAYS, -1, 1439},
                                         {SCHED_WEEKLY, 0, 0},  {SCHED_WEEKLY, 6, 0},
                                         {SCHED_MONTHLY, 1, 0}, {SCHED_MONTHLY, 31, 0}};
        struct sched_recurring bad[] = {
            {SCHED_DAILY, 0, 0},           {SCHED_WEEKDAYS, 1, 0},  {SCHED_WEEKLY, -1, 0},
            {SCHED_WEEKLY, 7, 0},          {SCHED_MONTHLY, 0, 0},   {SCHED_MONTHLY, 32, 0},
            {SCHED_DAILY, -1, -1},         {SCHED_DAILY, -1, 1440}, {(enum sched_freq)4, -1, 0},
            {(enum sched_freq) - 1, -1, 0}};
        int n_good = 0, n_bad = 0;
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
            n_good += sched_recurring_valid(&good[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
            n_bad += !sched_recurring_valid(&bad[i]);
        is_int(n_good, 6, "valid rules are valid");
        is_int(n_bad, 10, "each broken rule is refused");
    }
}

/* ---- Occurrences ---- */

static void test_next(void)
{
    subtest("next: month ends")
    {
        struct sched_recurring m31 = rule(SCHED_MONTHLY, 31, 9, 0);
        struct sched_recurring m30 = rule(SCHED_MONTHLY, 30, 9, 0);
        next_is(&m31, "2027-01-31T08:59:59.999Z", "2027-01-31T09:00:00.000Z", "Jan 31 before time");
        next_is(&m31, "2027-01-31T10:00:00Z", "2027-02-28T09:00:00.000Z",
                "Jan 31 -> Feb 28 (2027)");
        next_is(&m31, "2028-01-31T10:00:00Z", "2028-02-29T09:00:00.000Z",
                "Jan 31 -> Feb 29 (2028)");
        next_is(&m31, "2027-02-28T09:00:00Z", "2027-03-31T09:00:00.000Z", "Feb 28 slot -> Mar 31");
        next_is(&m31, "2026-04-01T00:00:00Z", "2026-04-30T09:00:00.000Z", "day 31 in April");
        next_is(&m31, "2026-04-30T09:00:00Z", "2026-05-31T09:00:00.000Z", "Apr 30 slot -> May 31");
        next_is(&m31, "2026-06-15T00:00:00Z", "2026-06-30T09:00:00.000Z", "day 31 in June");
        next_is(&m31, "2026-09-30T09:00:01Z", "2026-10-31T09:00:00.000Z", "day 31 in October");
        next_is(&m30, "2027-02-01T00:00:00Z", "2027-02-28T09:00:00.000Z", "day 30 in Feb 2027");
        next_is(&m30, "2028-02-01T00:00:00Z", "2028-02-29T09:00:00.000Z", "day 30 in Feb 2028");
        next_is(&m30, "2027-02-28T09:00:00Z", "2027-03-30T09:00:00.000Z", "Feb 28 slot -> Mar 30");
        next_is(&m30, "2027-01-30T09:30:00Z", "2027-02-28T09:00:00.000Z", "Jan 30 passed -> Feb");
        /* Day 29 in February lands on the 28th in a common year, on the 29th in a leap year. */
        struct sched_recurring m29 = rule(SCHED_MONTHLY, 29, 9, 0);
        next_is(&m29, "2027-02-28T09:00:00Z", "2027-03-29T09:00:00.000Z",
                "Feb 28 2027 slot -> Mar 29");
        next_is(&m29, "2027-02-01T00:00:00Z", "2027-02-28T09:00:00.000Z", "day 29 in Feb 2027");
    }
    subtest("next: leap years")
    {
        struct sched_recurring m29 = rule(SCHED_MONTHLY, 29, 9, 0);
        struct sched_recurring daily = rule(SCHED_DAILY, -1, 9, 0);
        next_is(&m29, "2100-02-01T00:00:00Z", "2100-02-28T09:00:00.000Z", "2100 is not leap");
        next_is(&m29, "2000-02-01T00:00:00Z", "2000-02-29T09:00:00.000Z", "2000 is leap");
        next_is(&m29, "2400-02-01T00:00:00Z", "2400-02-29T09:00:00.000Z", "2400 is leap");
        next_is(&m29, "2024-02-01T00:00:00Z", "2024-02-29T09:00:00.000Z", "2024 is leap");
        next_is(&m29, "1900-02-01T00:00:00Z", "1900-02-28T09:00:00.000Z", "1900 (before 1970)");
        next_is(&daily, "2100-02-28T10:00:00Z", "2100-03-01T09:00:00.000Z", "2100-02-28 -> Mar 1");
        next_is(&daily, "2000-02-28T10:00:00Z", "2000-02-29T09:00:00.000Z", "2000-02-28 -> Feb 29");
        next_is(&daily, "2028-12-31T10:00:00Z", "2029-01-01T09:00:00.000Z", "leap year day 366");
    }
    subtest("next: weekdays")
    {
        struct sched_recurring wd = rule(SCHED_WEEKDAYS, -1, 9, 0);
        next_is(&wd, "2026-11-19T10:00:00Z", "2026-11-20T09:00:00.000Z", "Thu -> Fri");
        next_is(&wd, "2026-11-20T08:00:00Z", "2026-11-20T09:00:00.000Z", "Fri before time");
        next_is(&wd, "2026-11-20T09:00:00Z", "2026-11-23T09:00:00.000Z", "Fri at slot -> Mon");
        next_is(&wd, "2026-11-20T09:30:00Z", "2026-11-23T09:00:00.000Z", "Fri after -> Mon");
        next_is(&wd, "2026-11-21T08:00:00Z", "2026-11-23T09:00:00.000Z", "Sat -> Mon");
        next_is(&wd, "2026-11-22T23:59:59.999Z", "2026-11-23T09:00:00.000Z", "Sun night -> Mon");
        next_is(&wd, "2026-11-23T09:00:00Z", "2026-11-24T09:00:00.000Z", "Mon slot -> Tue");
        next_is(&wd, "2027-12-31T10:00:00Z", "2028-01-03T09:00:00.000Z", "Fri Dec 31 -> Mon Jan 3");
    }
    subtest("next: weekly")
    {
        struct sched_recurring fri = rule(SCHED_WEEKLY, 4, 9, 0);
        struct sched_recurring mon = rule(SCHED_WEEKLY, 0, 9, 0);
        struct sched_recurring sun = rule(SCHED_WEEKLY, 6, 23, 59);
        struct sched_recurring thu0 = rule(SCHED_WEEKLY, 3, 0, 0);
        next_is(&fri, "2026-11-20T08:59:00Z", "2026-11-20T09:00:00.000Z", "same weekday, before");
        next_is(&fri, "2026-11-20T09:00:00Z", "2026-11-27T09:00:00.000Z", "same weekday, at slot");
        next_is(&fri, "2026-11-20T09:01:00Z", "2026-11-27T09:00:00.000Z", "same weekday, after");
        next_is(&mon, "2026-11-20T09:00:00Z", "2026-11-23T09:00:00.000Z", "Fri -> next Mon");
        next_is(&sun, "2026-11-21T23:59:00Z", "2026-11-22T23:59:00.000Z", "Sat -> Sun");
        next_is(&sun, "2026-11-22T23:59:00Z", "2026-11-29T23:59:00.000Z", "Sun at slot -> +7");
        next_is(&thu0, "1970-01-01T00:00:00Z", "1970-01-08T00:00:00.000Z", "epoch is a Thursday");
        next_is(&fri, "2026-12-31T12:00:00Z", "2027-01-01T09:00:00.000Z",
                "Thu Dec 31 -> Fri Jan 1");
    }
    subtest("next: around midnight")
    {
        struct sched_recurring late = rule(SCHED_DAILY, -1, 23, 59);
        struct sched_recurring zero = rule(SCHED_DAILY, -1, 0, 0);
        next_is(&late, "2026-11-21T23:58:59.999Z", "2026-11-21T23:59:00.000Z", "23:59 just before");
        next_is(&late, "2026-11-21T23:59:00.000Z", "2026-11-22T23:59:00.000Z", "23:59 exactly");
        next_is(&late, "2026-11-21T23:59:00.001Z", "2026-11-22T23:59:00.000Z", "23:59 + 1 ms");
        next_is(&zero, "2026-11-21T23:59:59.999Z", "2026-11-22T00:00:00.000Z", "00:00 just before");
        next_is(&zero, "2026-11-22T00:00:00.000Z", "2026-11-23T00:00:00.000Z", "00:00 exactly");
        next_is(&zero, "2026-11-22T00:00:00.001Z", "2026-11-23T00:00:00.000Z", "00:00 + 1 ms");
        next_is(&zero, "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z", "before the epoch");
        next_is(&late, "1969-12-31T12:00:00Z", "1969-12-31T23:59:00.000Z", "negative instants");
    }
    subtest("next: year rollover and day 1")
    {
        struct sched_recurring daily = rule(SCHED_DAILY, -1, 10, 0);
        struct sched_recurring m31 = rule(SCHED_MONTHLY, 31, 9, 0);
        struct sched_recurring m1 = rule(SCHED_MONTHLY, 1, 9, 0);
        next_is(&daily, "2026-12-31T11:00:00Z", "2027-01-01T10:00:00.000Z",
                "daily Dec 31 -> Jan 1");
        next_is(&m31, "2026-12-31T09:00:00Z", "2027-01-31T09:00:00.000Z", "monthly 31 Dec -> Jan");
        next_is(&m1, "2026-12-01T09:00:00Z", "2027-01-01T09:00:00.000Z", "monthly 1 Dec -> Jan");
        next_is(&m1, "2026-12-31T23:59:59.999Z", "2027-01-01T09:00:00.000Z", "monthly 1 New Year");
        next_is(&m1, "2026-11-01T08:00:00Z", "2026-11-01T09:00:00.000Z", "monthly 1 same day");
        next_is(&m1, "2026-11-01T09:00:00Z", "2026-12-01T09:00:00.000Z", "monthly 1 at slot");
        next_is(&m1, "2026-11-15T00:00:00Z", "2026-12-01T09:00:00.000Z", "monthly 1 mid-month");
        next_is(&m1, "1969-12-15T00:00:00Z", "1970-01-01T09:00:00.000Z", "monthly 1 into 1970");
        next_is(&m31, "9999-12-31T09:00:00Z", "10000-01-31T09:00:00.000Z", "past year 9999");
    }
}

/* ---- Missed slots ---- */

static void test_due(void)
{
    subtest("due: one run for missed slots")
    {
        struct sched_recurring daily = rule(SCHED_DAILY, -1, 9, 0);
        int64_t slot = at("2026-11-21T09:00:00Z"), next = -1;
        bool run;

        run = sched_due(&daily, slot, slot - 1, &next);
        ok(!run, "1 ms early: not due");
        is_int(next, slot, "and next_run_at unchanged");
        run = sched_due(&daily, slot, slot, &next);
        ok(run, "at the slot: due");
        is_int(next, at("2026-11-22T09:00:00Z"), "next is tomorrow");
        /* Down from Nov 1 to Nov 21 12:00: twenty slots missed, one run. */
        run = sched_due(&daily, at("2026-11-01T09:00:00Z"), at("2026-11-21T12:00:00Z"), &next);
        ok(run, "after downtime: due");
        is_int(next, at("2026-11-22T09:00:00Z"), "next is the first slot after now");
        run = sched_due(&daily, next, at("2026-11-21T12:00:01Z"), &next);
        ok(!run, "and no second catch-up run");
        /* Back before today's slot: the catch-up runs now and today's slot stays. */
        run = sched_due(&daily, at("2026-11-01T09:00:00Z"), at("2026-11-21T08:00:00Z"), &next);
        ok(run, "downtime ending before today's slot: due");
        is_int(next, slot, "next is today's slot");
        /* Never scheduled (0): scheduled, not run. */
        run = sched_due(&daily, 0, at("2026-11-21T12:00:00Z"), &next);
        ok(!run, "next_run_at 0: not run");
        is_int(next, at("2026-11-22T09:00:00Z"), "but scheduled");
    }
}

/* ---- due_at ---- */

static void due_at_ok(const char *s, int64_t want)
{
    int64_t ms = -1;
    struct err e;
    err_clear(&e);
    if (!ok(sched_due_at_parse(s, strlen(s), &ms, &e) == 0 && ms == want &&
                sched_due_at_check(s, strlen(s)),
            s))
        printf("#   got %lld (%s), want %lld\n", (long long)ms, e.msg, (long long)want);
}

static void due_at_fails(const char *s, const char *needle)
{
    int64_t ms = 42;
    struct err e;
    int rc;
    err_clear(&e);
    rc = sched_due_at_parse(s, strlen(s), &ms, &e);
    if (!ok(rc == ERR_INVALID && ms == 42 && e.code && strcmp(e.code, "invalid_request") == 0 &&
                strcmp(e.param, "due_at") == 0 && strstr(e.msg, needle) &&
                !sched_due_at_check(s, strlen(s)),
            s[0] ? s : "(empty)"))
        printf("#   got rc %d ms %lld param '%s' msg '%s'\n", rc, (long long)ms, e.param, e.msg);
}

static void test_due_at(void)
{
    subtest("due_at: accepted")
    {
        int64_t base = clock_days_from_civil(2026, 11, 21) * DAY_MS + 570 * MIN_MS;
        due_at_ok("2026-11-21T09:30:00.123Z", base + 123);
        due_at_ok("2026-11-21T09:30:00Z", base);
        due_at_ok("2026-11-21T09:30Z", base);
        due_at_ok("2026-11-21T10:30:00+01:00", base);
        due_at_ok("2026-11-21T04:00:00-05:30", base);
        due_at_ok("2026-11-21T09:30:00.1234567Z", base + 123);
        /* RFC 3339 allows lower-case t/z and a space for T (clock_parse_iso). */
        due_at_ok("2026-11-21t09:30:00z", base);
        due_at_ok("2026-11-21 09:30:00Z", base);
        due_at_ok("2028-02-29T00:00:00Z", clock_days_from_civil(2028, 2, 29) * DAY_MS);
        due_at_ok("2000-02-29T00:00:00Z", clock_days_from_civil(2000, 2, 29) * DAY_MS);
        due_at_ok("1970-01-01T00:00:00.001Z", 1);
        due_at_ok("9999-12-31T23:59:59.999Z", SCHED_DUE_MAX_MS);
        /* The UTC instant counts, not the written year. */
        due_at_ok("1969-12-31T23:30:00-01:00", 30 * MIN_MS);
    }
    subtest("due_at: refused")
    {
        const char *form = "ISO 8601 date-time";
        const char *range = "later than 1970-01-01T00:00:00Z";
        due_at_fails("", form);
        due_at_fails("2026-11-21", form);
        due_at_fails("2026-11-21T09:30:00", form);
        due_at_fails("2026-11-21T09:30", form);
        due_at_fails("2027-02-29T00:00:00Z", form);
        due_at_fails("2100-02-29T00:00:00Z", form);
        due_at_fails("2026-02-30T00:00:00Z", form);
        due_at_fails("2026-04-31T00:00:00Z", form);
        due_at_fails("2026-13-01T00:00:00Z", form);
        due_at_fails("2026-00-01T00:00:00Z", form);
        due_at_fails("2026-01-00T00:00:00Z", form);
        due_at_fails("2026-11-21T24:00:00Z", form);
        due_at_fails("2026-11-21T23:60:00Z", form);
        due_at_fails("2026-11-21T23:59:60Z", form);
        due_at_fails("2026-11-21T09:30:00+24:00", form);
        due_at_fails("2026-11-21T09:30:00+01", form);
        due_at_fails("2026-11-21T09:30:00+0100", form);
        due_at_fails("2026-11-21T09:30:00.Z", form);
        due_at_fails("2026-11-21T09:30:00.1234567890Z", form);
        due_at_fails("2026-11-21T09:30:00Zjunk", form);
        due_at_fails(" 2026-11-21T09:30:00Z", form);
        due_at_fails("20261121T093000Z", form);
        due_at_fails("+2026-11-21T09:30:00Z", form);
        due_at_fails("2026-11-21T9:30:00Z", form);
        due_at_fails("1763717400000", form);
        due_at_fails("1970-01-01T00:00:00Z", range); /* 0 is "no due_at" */
        due_at_fails("1970-01-01T00:30:00+01:00", range);
        due_at_fails("1969-12-31T23:59:59.999Z", range);
        due_at_fails("0000-01-01T00:00:00Z", range);
        due_at_fails("9999-12-31T23:30:00-01:00", range);
        /* A NUL inside the slice is a bad byte, not an end. */
        int64_t ms = 42;
        ok(sched_due_at_parse("2026-11-21T09:30:00Z\0", 21, &ms, NULL) == ERR_INVALID && ms == 42,
           "trailing NUL byte");
    }
}

/* ---- Brute force against gmtime_r ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void utc(int64_t ms, struct tm *tm)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    gmtime_r(&t, tm);
}

/* Does the rule allow the day of 'slot' (by gmtime_r's calendar)? */
static bool ref_allows(const struct sched_recurring *r, int64_t slot)
{
    struct tm tm, tomorrow;
    int wd;

    utc(slot, &tm);
    wd = (tm.tm_wday + 6) % 7; /* 0 = monday */
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
        /* The last day of a month shorter than the rule's day. */
        utc(slot + DAY_MS, &tomorrow);
        return tm.tm_mday < r->day && tomorrow.tm_mday == 1;
    }
    return false;
}

/* The slow reference: walk days from the day of 'after' until one is allowed and its slot is
 * after 'after'. Returns -1 when none within 64 days (which would be a bug in the rule). */
static int64_t ref_next(const struct sched_recurring *r, int64_t after)
{
    struct tm tm;
    int64_t day_start;

    utc(after, &tm);
    day_start = after - (((int64_t)tm.tm_hour * 60 + tm.tm_min) * 60 + tm.tm_sec) * 1000 -
                ((after % 1000) + 1000) % 1000;
    for (int k = 0; k < 64; k++) {
        int64_t slot = day_start + k * DAY_MS + r->minute_of_day * MIN_MS;
        struct tm st;
        utc(slot, &st);
        if (st.tm_hour * 60 + st.tm_min != r->minute_of_day || st.tm_sec != 0)
            return -1;
        if (slot > after && ref_allows(r, slot))
            return slot;
    }
    return -1;
}

static struct sched_recurring random_rule(void)
{
    struct sched_recurring r;
    r.freq = (enum sched_freq)(rnd() % 4);
    r.day = r.freq == SCHED_WEEKLY    ? (int)(rnd() % 7)
            : r.freq == SCHED_MONTHLY ? (int)(rnd() % 31) + 1
                                      : -1;
    /* Bias toward the ends of the day. */
    switch (rnd() % 4) {
    case 0:
        r.minute_of_day = 0;
        break;
    case 1:
        r.minute_of_day = 1439;
        break;
    default:
        r.minute_of_day = (int)(rnd() % 1440);
    }
    /* Bias monthly rules toward the days that clamp. */
    if (r.freq == SCHED_MONTHLY && rnd() % 2)
        r.day = 28 + (int)(rnd() % 4);
    return r;
}

static void test_brute_force(void)
{
    subtest("brute force against gmtime_r, 1970..2400")
    {
        const int64_t span = clock_days_from_civil(2401, 1, 1) * DAY_MS;
        int mismatches = 0, n = 0, exact = 0;
        for (int i = 0; i < 40000; i++) {
            struct sched_recurring r = random_rule();
            int64_t after = (int64_t)(rnd() % (uint64_t)span), got, want;
            /* A third of the time exactly at a slot or 1 ms around one. */
            if (i % 3 == 0) {
                after =
                    after - after % DAY_MS + r.minute_of_day * MIN_MS + (int64_t)(rnd() % 3) - 1;
                exact += after % MIN_MS == 0;
            }
            /* Now and then near a month end. */
            if (i % 7 == 0) {
                struct tm tm;
                utc(after, &tm);
                after -= (int64_t)(tm.tm_mday - 1) * DAY_MS; /* the 1st */
                after -= (int64_t)(rnd() % 3) * DAY_MS + 1;  /* end of the previous month */
                if (after < 0)
                    after = 0;
            }
            got = sched_next(&r, after);
            want = ref_next(&r, after);
            n++;
            if (got != want || got % MIN_MS != 0) {
                if (mismatches++ < 5) {
                    char a[32], g[32], w[32], text[SCHED_TEXT_MAX];
                    printf("#   %s after %s: got %s, want %s\n",
                           sched_recurring_text(&r, text, sizeof(text)),
                           clock_fmt_iso(after, a, sizeof(a)), clock_fmt_iso(got, g, sizeof(g)),
                           clock_fmt_iso(want, w, sizeof(w)));
                }
            }
        }
        is_int(n, 40000, "pairs compared");
        ok(exact > 1000, "many instants exactly at a slot");
        is_int(mismatches, 0, "sched_next equals the day-walking reference");
    }
    subtest("400 years of chains")
    {
        /* From 2000-01-01, follow next(next(...)) for 400 years: monthly rules hit every month
         * once, on min(day, month length); daily ones every day; weekly ones every 7 days. */
        int bad = 0;
        for (int day = 1; day <= 31; day++) {
            struct sched_recurring r = rule(SCHED_MONTHLY, day, 12, 34);
            int64_t t = at("1999-12-31T23:59:59.999Z");
            int months = 0;
            for (int y = 2000; y < 2400; y++) {
                for (int m = 1; m <= 12; m++) {
                    static const int len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
                    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
                    int ml = m == 2 ? 28 + leap : len[m - 1];
                    int64_t want =
                        clock_days_from_civil(y, (unsigned)m, (unsigned)(day < ml ? day : ml)) *
                            DAY_MS +
                        (12 * 60 + 34) * MIN_MS;
                    int64_t got = sched_next(&r, t);
                    if (got != want && bad++ < 5)
                        printf("#   monthly %d: %d-%02d got %lld want %lld\n", day, y, m,
                               (long long)got, (long long)want);
                    t = got;
                    months++;
                }
            }
            if (months != 4800)
                bad++;
        }
        is_int(bad, 0, "monthly rules: one occurrence per month for 400 years");
        int bad_daily = 0, bad_weekly = 0;
        struct sched_recurring d = rule(SCHED_DAILY, -1, 0, 0), w = rule(SCHED_WEEKLY, 2, 23, 59);
        int64_t td = sched_next(&d, at("2000-01-01T00:00:00Z"));
        int64_t tw = sched_next(&w, at("2000-01-01T00:00:00Z"));
        for (int i = 0; i < 146097; i++) {
            int64_t nd = sched_next(&d, td);
            bad_daily += nd - td != DAY_MS;
            td = nd;
        }
        for (int i = 0; i < 20871; i++) {
            int64_t nw = sched_next(&w, tw);
            bad_weekly += nw - tw != 7 * DAY_MS;
            tw = nw;
        }
        is_int(bad_daily, 0, "daily: exactly one day apart");
        is_int(td, at("2400-01-02T00:00:00Z"), "daily: 146097 days is 400 years");
        is_int(bad_weekly, 0, "weekly: exactly seven days apart");
        struct tm tm;
        utc(tw, &tm);
        is_int(tm.tm_wday, 3, "weekly wednesday stays on Wednesday");
    }
}

int main(void)
{
    test_parse_ok();
    test_parse_errors();
    test_format();
    test_next();
    test_due();
    test_due_at();
    test_brute_force();
    return done_testing();
}
