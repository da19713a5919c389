/* SPDX-License-Identifier: MIT */
/*
 * log: one line per event on stderr, `2026-11-21T09:30:00.123Z level message`. Secrets never
 * reach it: callers log a key's id and last 4 characters only.
 */
#ifndef WORKFORCE_LOG_H
#define WORKFORCE_LOG_H

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_set_level(enum log_level lvl);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
