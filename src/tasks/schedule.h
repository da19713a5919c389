/* SPDX-License-Identifier: MIT */
/*
 * schedule: the pure calendar of Tasks (contract §10). A recurring rule is a frequency (daily,
 * weekdays, weekly, monthly), a day for weekly and monthly rules, and a minute of the day, all
 * in UTC (no DST). This module parses the request's `recurring` object and the `due_at` string
 * with contract errors, writes the rule back as JSON and as the text the store keeps, and
 * computes occurrences with integer civil-date arithmetic. No I/O, no clock reads, no globals.
 *
 * DESIGN: missed occurrences
 *   A task stores next_run_at, the next occurrence. On create (or when `recurring` changes)
 *   the caller sets next_run_at = sched_next(r, now). The scheduler polls with
 *   sched_due(r, next_run_at, now, &next): when next_run_at <= now the task runs ONCE and
 *   next_run_at becomes sched_next(r, now), the first slot after now. After downtime that
 *   spanned several slots the missed ones therefore produce one catch-up run, not one run per
 *   slot, and the schedule continues from the present. A next_run_at of 0 (null) means "never
 *   scheduled": sched_due() schedules it from now and does not run it.
 */
#ifndef WORKFORCE_SCHEDULE_H
#define WORKFORCE_SCHEDULE_H

#include "../core/err.h"
#include "../json/json.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sched_freq {
    SCHED_DAILY,    /* every day */
    SCHED_WEEKDAYS, /* Monday to Friday */
    SCHED_WEEKLY,   /* one weekday */
    SCHED_MONTHLY   /* one day of the month, clamped to the month's last day */
};

/* A recurring rule. Build it with sched_recurring_parse() or check it with _valid(). */
struct sched_recurring {
    enum sched_freq freq;
    int day;           /* weekly: 0 = monday .. 6 = sunday; monthly: 1..31; otherwise -1 */
    int minute_of_day; /* 0..1439, UTC */
};

/* Largest text sched_recurring_text() writes, with its NUL. */
#define SCHED_TEXT_MAX 64

/* Instants sched_next() accepts: |after_ms| <= SCHED_SPAN_MS (about 146 million years). */
#define SCHED_SPAN_MS (INT64_C(1) << 62)

/* Bounds of a due_at: later than 1970-01-01T00:00:00Z, before 10000-01-01T00:00:00Z. */
#define SCHED_DUE_MIN_MS INT64_C(1)
#define SCHED_DUE_MAX_MS INT64_C(253402300799999) /* 9999-12-31T23:59:59.999Z */

/* ---- Parsing and formatting ---- */

/* True when the request member 'v' is JSON null, which stops recurrence. */
bool sched_recurring_is_stop(const json_t *v);
/* The `recurring` object 'v' into '*out'; 0 or ERR_INVALID with the member path in 'e'. */
int sched_recurring_parse(json_t *v, struct sched_recurring *out, struct err *e);
/* The JSON Schema of what sched_recurring_parse() accepts (a new object). */
json_t *sched_recurring_schema(void);
/* True when 'r' holds a rule sched_recurring_parse() could have produced. */
bool sched_recurring_valid(const struct sched_recurring *r);
/* {"frequency","day"?,"time"}: a new reference the caller releases (or hands to jo_set). */
json_t *sched_recurring_json(const struct sched_recurring *r);
/* The stored text form (compact JSON, fixed member order) into 'out' of 'n' bytes; 'out'. */
char *sched_recurring_text(const struct sched_recurring *r, char *out, size_t n);
/* The stored text form back; 0 or ERR_INVALID (damaged text). */
int sched_recurring_from_text(const char *s, size_t len, struct sched_recurring *out);

/* ---- Occurrences ---- */

/* The first occurrence of 'r' strictly after 'after_ms' (Unix ms, UTC); a whole minute. */
int64_t sched_next(const struct sched_recurring *r, int64_t after_ms);
/* True when a run is due at 'now'; '*pnext' gets the next_run_at to store afterwards. */
bool sched_due(const struct sched_recurring *r, int64_t next_run_at, int64_t now, int64_t *pnext);

/* ---- due_at ---- */

/*
 * An ISO 8601 / RFC 3339 date-time with Z or an offset ("2026-11-21T09:30:00.123Z",
 * "2026-11-21T10:30+01:00") into Unix ms; no date-only, no zone-less, no impossible dates;
 * the UTC instant must be in 1970-01-01T00:00:00.001Z..9999-12-31T23:59:59.999Z.
 * 0 or ERR_INVALID (param "due_at").
 */
int sched_due_at_parse(const char *s, size_t len, int64_t *out_ms, struct err *e);
/* sched_due_at_parse() as a jb_check_fn for a JB_STRING field. */
bool sched_due_at_check(const char *s, size_t len);

#endif
