/* SPDX-License-Identifier: MIT */
/*
 * clock: wall time in milliseconds since the Unix epoch (injectable for tests), a monotonic
 * clock for durations, and ISO 8601 formatting/parsing with milliseconds and Z.
 */
#ifndef WORKFORCE_CLOCK_H
#define WORKFORCE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

int64_t clock_now_ms(void);        /* wall clock, or the injected time */
int64_t clock_mono_us(void);       /* monotonic microseconds, for durations */
void clock_set_fake_ms(int64_t t); /* tests: freeze wall time at t (0 = real clock again) */
/* "2026-11-21T09:30:00.123Z" into out (>= 25 bytes); returns out. */
char *clock_fmt_iso(int64_t ms, char *out, size_t n);
/* Parse ISO 8601 date-time with Z or +HH:MM offset, optional fraction; 0 or ERR_INVALID. */
int clock_parse_iso(const char *s, size_t len, int64_t *out_ms);
int64_t clock_days_from_civil(int64_t y, unsigned m, unsigned d); /* days since 1970-01-01 */

#endif
