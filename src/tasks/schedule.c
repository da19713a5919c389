/* SPDX-License-Identifier: MIT */
/*
 * schedule.c: recurring rules of Tasks. Parsing is strict, because the contract says exactly
 * what a rule looks like (§10) and a rule the parser accepts is exactly what
 * sched_recurring_json() gives back: `day` is a lower-case weekday name or a JSON string of a
 * plain decimal 1..31, `time` is exactly HH:MM, and every other member is refused by name.
 *
 * Occurrences are computed on day numbers (days since 1970-01-01, Howard Hinnant's civil
 * algorithms; days_from_civil lives in core/clock.c, its inverse is written out here): find
 * the earliest day whose slot is after the given instant, then move forward to the first day
 * the rule allows. Nothing here touches the C library's time zone state.
 */
#include "schedule.h"

#include "../core/clock.h"
#include "../core/str.h"
#include "../core/utf8.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define MIN_MS INT64_C(60000)
#define DAY_MS INT64_C(86400000)

static const char *const freq_names[] = {"daily", "weekdays", "weekly", "monthly"};
static const char *const day_names[] = {"monday", "tuesday",  "wednesday", "thursday",
                                        "friday", "saturday", "sunday"};

#define FREQ_LIST "daily, weekdays, weekly, monthly"
#define DAY_LIST "monday, tuesday, wednesday, thursday, friday, saturday, sunday"

/* ---- Parsing ---- */

/* True when the request member 'v' is JSON null: the caller stops recurrence. */
bool sched_recurring_is_stop(const json_t *v)
{
    return v != NULL && json_is_null(v);
}

/* Index of the 'len' bytes at 's' in the NULL-free table 'names' of 'n', or -1. */
static int find_name(const char *s, size_t len, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        if (str_eq((struct str){s, len}, names[i]))
            return i;
    }
    return -1;
}

/* A monthly day: "1".."31", digits only, no leading zero. -1 when it is anything else. */
static int parse_month_day(const char *s, size_t len)
{
    uint64_t v;

    if (len < 1 || len > 2 || s[0] < '1' || s[0] > '9' || str_to_u64((struct str){s, len}, &v))
        return -1;
    return v <= 31 ? (int)v : -1;
}

/* "HH:MM", exactly two digits each, 00:00..23:59, into minutes of the day; -1 otherwise. */
static int parse_hhmm(const char *s, size_t len)
{
    uint64_t h, m;

    if (len != 5 || s[2] != ':' || str_to_u64((struct str){s, 2}, &h) ||
        str_to_u64((struct str){s + 3, 2}, &m) || h > 23 || m > 59)
        return -1;
    return (int)(h * 60 + m);
}

/* The error of a member that is present but wrong. */
static int bad_day(const struct sched_recurring *r, struct err *e)
{
    if (r->freq == SCHED_WEEKLY)
        return err_set(e, ERR_INVALID, "invalid_request", "recurring.day",
                       "Invalid recurring.day: a weekly task needs one of " DAY_LIST ".");
    if (r->freq == SCHED_MONTHLY)
        return err_set(e, ERR_INVALID, "invalid_request", "recurring.day",
                       "Invalid recurring.day: a monthly task needs a string \"1\"..\"31\" (a day "
                       "past the end of a month means its last day).");
    return err_set(e, ERR_INVALID, "invalid_request", "recurring.day",
                   "Invalid recurring.day: must be absent when frequency is %s (only weekly and "
                   "monthly tasks have a day).",
                   freq_names[r->freq]);
}

/*
 * Parse the request's `recurring` object 'v' into '*out'. 'v' must be an object with the
 * members frequency (daily | weekdays | weekly | monthly), time ("HH:MM", 00:00..23:59 UTC) and,
 * for weekly and monthly rules only, day ("monday".."sunday"; "1".."31"). JSON null is not a
 * rule: the caller asks sched_recurring_is_stop() first. Checks run in a fixed order: the
 * object itself, unknown members (first in document order), frequency, day, time; the first
 * failure is reported. Returns 0, or ERR_INVALID with e->code "invalid_request" and e->param
 * "recurring", "recurring.<unknown member>", "recurring.frequency", "recurring.day" or
 * "recurring.time". '*out' is written only on success. Allocates nothing.
 */
int sched_recurring_parse(json_t *v, struct sched_recurring *out, struct err *e)
{
    struct sched_recurring r = {SCHED_DAILY, -1, 0};
    const char *key;
    json_t *m, *day;
    int x;

    if (!json_is_object(v))
        return err_set(e, ERR_INVALID, "invalid_request", "recurring",
                       "Invalid recurring: must be an object {frequency, day?, time}, or null to "
                       "stop recurrence.");
    json_object_foreach(v, key, m)
    {
        char param[80];
        int n;
        if (strcmp(key, "frequency") == 0 || strcmp(key, "day") == 0 || strcmp(key, "time") == 0)
            continue;
        n = (int)utf8_prefix(key, strnlen(key, 61), 60);
        snprintf(param, sizeof(param), "recurring.%.*s", n, key);
        return err_set(e, ERR_INVALID, "invalid_request", param,
                       "Unknown parameter: %s (recurring has frequency, day and time).", param);
    }

    m = json_object_get(v, "frequency");
    if (!m)
        return err_set(e, ERR_INVALID, "invalid_request", "recurring.frequency",
                       "Missing required parameter: recurring.frequency (one of " FREQ_LIST ").");
    x = json_is_string(m) ? find_name(json_string_value(m), json_string_length(m), freq_names, 4)
                          : -1;
    if (x < 0)
        return err_set(e, ERR_INVALID, "invalid_request", "recurring.frequency",
                       "Invalid recurring.frequency: must be one of " FREQ_LIST ".");
    r.freq = (enum sched_freq)x;

    day = json_object_get(v, "day");
    if (r.freq == SCHED_WEEKLY || r.freq == SCHED_MONTHLY) {
        if (!day)
            return err_set(e, ERR_INVALID, "invalid_request", "recurring.day",
                           "Missing required parameter: recurring.day (%s).",
                           r.freq == SCHED_WEEKLY ? "one of " DAY_LIST : "a string \"1\"..\"31\"");
        if (!json_is_string(day))
            return bad_day(&r, e);
        if (r.freq == SCHED_WEEKLY)
            x = find_name(json_string_value(day), json_string_length(day), day_names, 7);
        else
            x = parse_month_day(json_string_value(day), json_string_length(day));
        if (x < 0)
            return bad_day(&r, e);
        r.day = x;
    } else if (day) {
        return bad_day(&r, e);
    }

    m = json_object_get(v, "time");
    if (!m)
        return err_set(e, ERR_INVALID, "invalid_request", "recurring.time",
                       "Missing required parameter: recurring.time (HH:MM, 24-hour UTC).");
    x = json_is_string(m) ? parse_hhmm(json_string_value(m), json_string_length(m)) : -1;
    if (x < 0)
        return err_set(e, ERR_INVALID, "invalid_request", "recurring.time",
                       "Invalid recurring.time: must be a string HH:MM, 24-hour UTC, from 00:00 "
                       "to 23:59.");
    r.minute_of_day = x;
    *out = r;
    return 0;
}

/* See schedule.h. The pattern of `time` is parse_hhmm()'s rule; `day` is a weekday name or a
 * month day "1".."31" (which one, per frequency, is in the description: see bad_day()). */
json_t *sched_recurring_schema(void)
{
    json_t *freq = json_array(), *days = json_array();
    char d[4];

    for (size_t i = 0; i < sizeof(freq_names) / sizeof(freq_names[0]); i++)
        json_array_append_new(freq, json_string(freq_names[i]));
    for (size_t i = 0; i < sizeof(day_names) / sizeof(day_names[0]); i++)
        json_array_append_new(days, json_string(day_names[i]));
    for (int i = 1; i <= 31; i++) {
        snprintf(d, sizeof(d), "%d", i);
        json_array_append_new(days, json_string(d));
    }
    return json_pack("{s:s,s:{s:{s:s,s:o},s:{s:s,s:o},s:{s:s,s:s}},s:[s,s],s:b}", "type", "object",
                     "properties", "frequency", "type", "string", "enum", freq, "day", "type",
                     "string", "enum", days, "time", "type", "string", "pattern",
                     "^([01][0-9]|2[0-3]):[0-5][0-9]$", "required", "frequency", "time",
                     "additionalProperties", 0);
}

/* True when 'r' is a rule sched_recurring_parse() could have produced. */
bool sched_recurring_valid(const struct sched_recurring *r)
{
    if (r->minute_of_day < 0 || r->minute_of_day > 1439)
        return false;
    switch (r->freq) {
    case SCHED_DAILY:
    case SCHED_WEEKDAYS:
        return r->day == -1;
    case SCHED_WEEKLY:
        return r->day >= 0 && r->day <= 6;
    case SCHED_MONTHLY:
        return r->day >= 1 && r->day <= 31;
    }
    return false;
}

/* ---- Formatting ---- */

/*
 * The rule 'r' as the contract's object {"frequency", "day" (weekly and monthly only; monthly
 * as a string such as "15"), "time": "HH:MM"}. Returns a new reference that the caller
 * releases with json_decref() or hands over with jo_set(); never NULL (OOM aborts, as in jo_).
 */
json_t *sched_recurring_json(const struct sched_recurring *r)
{
    json_t *o = jo_object();
    char s[24]; /* room for any int, though valid rules need 6 */

    assert(sched_recurring_valid(r));
    jo_str(o, "frequency", freq_names[r->freq]);
    if (r->freq == SCHED_WEEKLY) {
        jo_str(o, "day", day_names[r->day]);
    } else if (r->freq == SCHED_MONTHLY) {
        snprintf(s, sizeof(s), "%d", r->day);
        jo_str(o, "day", s);
    }
    snprintf(s, sizeof(s), "%02d:%02d", r->minute_of_day / 60, r->minute_of_day % 60);
    jo_str(o, "time", s);
    return o;
}

/*
 * Write the stored form of 'r' into 'out' of 'n' bytes (SCHED_TEXT_MAX is always enough) and
 * return 'out'. The form is compact JSON with the members in the order frequency, day, time,
 * e.g. {"frequency":"monthly","day":"31","time":"09:30"}: the same object the API returns, so
 * the store can hand it out as is, and SQLite's json_extract() can read it.
 */
char *sched_recurring_text(const struct sched_recurring *r, char *out, size_t n)
{
    char day[32] = "";

    assert(sched_recurring_valid(r));
    if (r->freq == SCHED_WEEKLY)
        snprintf(day, sizeof(day), "\"day\":\"%s\",", day_names[r->day]);
    else if (r->freq == SCHED_MONTHLY)
        snprintf(day, sizeof(day), "\"day\":\"%d\",", r->day);
    snprintf(out, n, "{\"frequency\":\"%s\",%s\"time\":\"%02d:%02d\"}", freq_names[r->freq], day,
             r->minute_of_day / 60, r->minute_of_day % 60);
    return out;
}

/*
 * Parse the stored form (the 'len' bytes at 's') back into '*out'. Any text that
 * sched_recurring_parse() accepts as JSON is taken; sched_recurring_text() of the result
 * gives the canonical form again. Returns 0, or ERR_INVALID for damaged text ('*out' is
 * then untouched).
 */
int sched_recurring_from_text(const char *s, size_t len, struct sched_recurring *out)
{
    json_t *v = json_loadb(s, len, JSON_REJECT_DUPLICATES, NULL);
    int rc;

    if (!v)
        return ERR_INVALID;
    rc = sched_recurring_parse(v, out, NULL);
    json_decref(v);
    return rc ? ERR_INVALID : 0;
}

/* ---- Occurrences ---- */

/* a / b rounded toward minus infinity (b > 0). */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b < 0) ? q - 1 : q;
}

/* Day of the week of day number 'days': 0 = monday .. 6 = sunday (1970-01-01 was a thursday). */
static int weekday(int64_t days)
{
    int64_t w = (days + 3) % 7;
    return (int)(w < 0 ? w + 7 : w);
}

static bool is_leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned month_len(int64_t y, unsigned m)
{
    static const unsigned char len[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : len[m - 1];
}

/* Inverse of clock_days_from_civil(): day number 'z' to year, month 1..12, day 1..31. */
static void civil_from_days(int64_t z, int64_t *py, unsigned *pm, unsigned *pd)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *pd = doy - (153 * mp + 2) / 5 + 1;
    *pm = mp < 10 ? mp + 3 : mp - 9;
    *py = (int64_t)yoe + era * 400 + (*pm <= 2);
}

/* The first day on or after day number 'from' that is day 'want' of its month, clamped. */
static int64_t month_day_from(int64_t from, int want)
{
    int64_t y;
    unsigned m, d, target;

    civil_from_days(from, &y, &m, &d);
    target = month_len(y, m) < (unsigned)want ? month_len(y, m) : (unsigned)want;
    if (target < d) {
        /* This month's occurrence is behind us: next month, which may be in the next year. */
        m = m == 12 ? 1 : m + 1;
        y += m == 1;
        target = month_len(y, m) < (unsigned)want ? month_len(y, m) : (unsigned)want;
    }
    return clock_days_from_civil(y, m, target);
}

/*
 * The first occurrence of the valid rule 'r' strictly after 'after_ms' (Unix ms, UTC, with
 * |after_ms| <= SCHED_SPAN_MS): a whole minute at r->minute_of_day on a day the rule allows.
 * An 'after_ms' exactly at a slot gives the following slot. Monthly rules on a day the month
 * does not have (31 in April, 30 in February) fall on the month's last day.
 */
int64_t sched_next(const struct sched_recurring *r, int64_t after_ms)
{
    int64_t at = r->minute_of_day * MIN_MS;
    int64_t day;
    int wd;

    assert(sched_recurring_valid(r));
    assert(after_ms >= -SCHED_SPAN_MS && after_ms <= SCHED_SPAN_MS);
    /* The earliest day whose slot is still ahead: today, or tomorrow once today's has passed. */
    day = floor_div(after_ms, DAY_MS);
    if (day * DAY_MS + at <= after_ms)
        day++;
    switch (r->freq) {
    case SCHED_DAILY:
        break;
    case SCHED_WEEKDAYS:
        wd = weekday(day);
        if (wd >= 5)
            day += 7 - wd; /* saturday and sunday move to monday */
        break;
    case SCHED_WEEKLY:
        day += (r->day - weekday(day) + 7) % 7;
        break;
    case SCHED_MONTHLY:
        day = month_day_from(day, r->day);
        break;
    }
    return day * DAY_MS + at;
}

/*
 * Decide whether the task with rule 'r' and stored 'next_run_at' runs at 'now', and set
 * '*pnext' to the next_run_at to store. Due (next_run_at <= now): returns true once, however
 * many slots were missed, and '*pnext' = sched_next(r, now). Not yet due: false, '*pnext' =
 * next_run_at. A next_run_at of 0 or less means "never scheduled" (0 is null in the store and
 * in responses): false, and '*pnext' = sched_next(r, now), so a rule that lost its schedule
 * is rescheduled rather than run at once.
 */
bool sched_due(const struct sched_recurring *r, int64_t next_run_at, int64_t now, int64_t *pnext)
{
    if (next_run_at > 0 && next_run_at > now) {
        *pnext = next_run_at;
        return false;
    }
    *pnext = sched_next(r, now);
    return next_run_at > 0;
}

/* ---- due_at ---- */

/*
 * Parse the 'len' bytes at 's' as a task's due_at into '*out_ms'. The form is what
 * clock_parse_iso() reads: "YYYY-MM-DDTHH:MM[:SS[.f…]]" then "Z" or "±HH:MM" (RFC 3339; 'T' may
 * also be 't' or ' ', 'Z' may be 'z'; 1..9 fraction digits, cut to milliseconds; seconds are
 * optional). A date alone, a time without a zone, impossible calendar values (February 30,
 * hour 24, minute or second 60) and trailing bytes are refused. The instant, in UTC, must lie
 * after 1970-01-01T00:00:00Z (0 means "no due_at" in the store and in responses) and before
 * 10000-01-01T00:00:00Z. Returns 0, or ERR_INVALID with e->param "due_at".
 */
int sched_due_at_parse(const char *s, size_t len, int64_t *out_ms, struct err *e)
{
    int64_t ms;

    if (clock_parse_iso(s, len, &ms))
        return err_set(e, ERR_INVALID, "invalid_request", "due_at",
                       "Invalid due_at: must be an ISO 8601 date-time with Z or an offset, such "
                       "as 2026-11-21T09:30:00Z or 2026-11-21T10:30:00+01:00.");
    if (ms < SCHED_DUE_MIN_MS || ms > SCHED_DUE_MAX_MS)
        return err_set(e, ERR_INVALID, "invalid_request", "due_at",
                       "Invalid due_at: must be later than 1970-01-01T00:00:00Z and earlier than "
                       "10000-01-01T00:00:00Z.");
    *out_ms = ms;
    return 0;
}

/* True when sched_due_at_parse() accepts the 'len' bytes at 's' (a jb_check_fn). */
bool sched_due_at_check(const char *s, size_t len)
{
    int64_t ms;
    return sched_due_at_parse(s, len, &ms, NULL) == 0;
}
