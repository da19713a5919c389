/* SPDX-License-Identifier: MIT */
/*
 * log: formats a whole line in a local buffer and writes it with one write(2), so lines from
 * different threads never interleave.
 */
#include "log.h"

#include "clock.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int min_level = LOG_INFO;

/* Drop messages below 'lvl'. */
void log_set_level(enum log_level lvl)
{
    atomic_store(&min_level, (int)lvl);
}

/* Write one line at level 'lvl'; long lines are cut at 2 KiB. */
void log_msg(enum log_level lvl, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char line[2048];
    char ts[32];
    va_list ap;
    int n;
    size_t len;

    if ((int)lvl < atomic_load(&min_level))
        return;
    clock_fmt_iso(clock_now_ms(), ts, sizeof(ts));
    n = snprintf(line, sizeof(line), "%s %s ", ts, names[lvl]);
    if (n < 0)
        return;
    len = (size_t)n;
    va_start(ap, fmt);
    n = vsnprintf(line + len, sizeof(line) - len - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    len += (size_t)n;
    if (len > sizeof(line) - 2)
        len = sizeof(line) - 2;
    line[len++] = '\n';
    if (write(STDERR_FILENO, line, len) < 0)
        return;
}
