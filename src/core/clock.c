/* SPDX-License-Identifier: MIT */
/*
 * clock: time without the C library's time zone state (gmtime_r is fine but timegm is not
 * standard); days_from_civil is Howard Hinnant's algorithm, written out here.
 */
#include "clock.h"

#include "err.h"

#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static atomic_llong fake_ms;

/* Milliseconds since the epoch, or the time frozen by clock_set_fake_ms(). */
int64_t clock_now_ms(void)
{
    struct timespec ts;
    long long f = atomic_load(&fake_ms);
    if (f)
        return f;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Monotonic microseconds, only for measuring durations. */
int64_t clock_mono_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Tests: freeze the wall clock at 't' ms; 0 returns to the real clock. */
void clock_set_fake_ms(int64_t t)
{
    atomic_store(&fake_ms, t);
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar. */
int64_t clock_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* Format 'ms' as "YYYY-MM-DDTHH:MM:SS.mmmZ" into 'out' of 'n' bytes; returns 'out'. */
char *clock_fmt_iso(int64_t ms, char *out, size_t n)
{
    int64_t secs = ms >= 0 ? ms / 1000 : (ms - 999) / 1000;
    int milli = (int)(ms - secs * 1000);
    time_t t = (time_t)secs;
    struct tm tm;

    gmtime_r(&t, &tm);
    snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, milli);
    return out;
}

static int digits(const char *s, size_t len, size_t at, size_t n, int *out)
{
    int v = 0;
    if (at + n > len)
        return -1;
    for (size_t i = at; i < at + n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int month_days(int y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 ? 28 + leap : days[m - 1];
}

/*
 * Parse "YYYY-MM-DDTHH:MM[:SS[.fff…]](Z|±HH:MM)" (also 't'/'z', and ' ' for 'T'). The whole
 * 'len' bytes must be consumed. Returns 0 and the instant in '*out_ms', or ERR_INVALID.
 */
int clock_parse_iso(const char *s, size_t len, int64_t *out_ms)
{
    int y, mo, d, h, mi, sec = 0, ms = 0, oh = 0, om = 0, sign = 0;
    size_t i = 16;

    if (digits(s, len, 0, 4, &y) || len < 17 || s[4] != '-' || digits(s, len, 5, 2, &mo) ||
        s[7] != '-' || digits(s, len, 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
        digits(s, len, 11, 2, &h) || s[13] != ':' || digits(s, len, 14, 2, &mi))
        return ERR_INVALID;
    if (i < len && s[i] == ':') {
        if (digits(s, len, i + 1, 2, &sec))
            return ERR_INVALID;
        i += 3;
        if (i < len && s[i] == '.') {
            size_t nd = 0;
            i++;
            while (i < len && s[i] >= '0' && s[i] <= '9') {
                if (nd < 3)
                    ms = ms * 10 + (s[i] - '0');
                nd++;
                i++;
            }
            if (nd == 0 || nd > 9)
                return ERR_INVALID;
            for (size_t k = nd; k < 3; k++)
                ms *= 10;
        }
    }
    if (i >= len)
        return ERR_INVALID;
    if (s[i] == 'Z' || s[i] == 'z') {
        i++;
    } else if (s[i] == '+' || s[i] == '-') {
        sign = s[i] == '-' ? -1 : 1;
        if (digits(s, len, i + 1, 2, &oh) || i + 3 >= len || s[i + 3] != ':' ||
            digits(s, len, i + 4, 2, &om) || oh > 23 || om > 59)
            return ERR_INVALID;
        i += 6;
    } else {
        return ERR_INVALID;
    }
    if (i != len || mo < 1 || mo > 12 || d < 1 || d > month_days(y, mo) || h > 23 || mi > 59 ||
        sec > 59)
        return ERR_INVALID;
    *out_ms = (clock_days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 +
               sec - sign * (oh * 3600 + om * 60)) *
                  1000 +
              ms;
    return 0;
}
