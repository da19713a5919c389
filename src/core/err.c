/* SPDX-License-Identifier: MIT */
/*
 * err: filling struct err. Messages are truncated, never overflowed; a param longer than the
 * buffer is cut, which only shortens what the client is told. Both always end up valid UTF-8
 * (a cut through a character, or invalid bytes quoted from the input, become '?'), because
 * they go into JSON strings.
 */
#include "err.h"

#include "utf8.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Replace every byte that is not part of a valid UTF-8 sequence (RFC 3629) with '?'. */
static void force_utf8(char *s)
{
    size_t n = strlen(s), i = 0;
    while (i < n) {
        size_t skip = 1, k = utf8_seq(s + i, n - i, &skip);
        if (k) {
            i += k;
            continue;
        }
        s[i++] = '?';
    }
}

/*
 * Record a failure in 'e' (ignored when NULL) and return 'kind', so that callers can write
 * `return err_set(e, ERR_INVALID, "invalid_request", "limit", "must be 1..100");`.
 */
int err_set(struct err *e, enum err_code kind, const char *code, const char *param, const char *fmt,
            ...)
{
    va_list ap;

    if (!e)
        return kind;
    e->kind = kind;
    e->code = code;
    snprintf(e->param, sizeof(e->param), "%s", param ? param : "");
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
    va_end(ap);
    force_utf8(e->param);
    force_utf8(e->msg);
    return kind;
}

/* Reset 'e' so that a later err_set() is the only thing it says. */
void err_clear(struct err *e)
{
    if (!e)
        return;
    memset(e, 0, sizeof(*e));
}

/* Name of 'kind' for log lines. */
const char *err_name(enum err_code kind)
{
    static const char *const names[] = {
        "ERR_OK",       "ERR_NOMEM", "ERR_INVALID",  "ERR_AUTH",  "ERR_FORBIDDEN", "ERR_NOT_FOUND",
        "ERR_CONFLICT", "ERR_LIMIT", "ERR_UPSTREAM", "ERR_STORE", "ERR_IO",        "ERR_INTERNAL",
    };
    if ((size_t)kind >= sizeof(names) / sizeof(names[0]))
        return "ERR_UNKNOWN";
    return names[kind];
}
