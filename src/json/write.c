/* SPDX-License-Identifier: MIT */
/*
 * write.c: a streaming JSON writer into a capped struct buf, for hot responses where building a
 * jansson tree and dumping it costs more than the request (the employee list). It tracks only
 * whether a comma is due; the caller writes a well-formed sequence. jw_raw() splices JSON text
 * the server itself validated when it was stored (capabilities arrays). Errors (the cap) are
 * sticky: check jw_finish() once at the end.
 */
#include "json.h"

#include "../core/clock.h"
#include "../core/utf8.h"

#include <stdio.h>
#include <string.h>

/* Start writing into 'b' (owned by the caller). */
void jw_init(struct jw *w, struct buf *b)
{
    w->b = b;
    w->depth = 0;
    w->need_comma = 0;
    w->rc = 0;
}

static void put(struct jw *w, const char *s, size_t n)
{
    if (!w->rc)
        w->rc = buf_append(w->b, s, n);
}

static void sep(struct jw *w)
{
    if (w->need_comma)
        put(w, ",", 1);
    w->need_comma = 0;
}

/*
 * Write 's' as a JSON string. Whatever bytes reach it, the output is valid JSON in valid UTF-8:
 * control characters are escaped and every invalid UTF-8 sequence (each maximal subpart) is
 * written as \ufffd, so a bad byte that slipped into storage can never break an answer.
 */
static void put_string(struct jw *w, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    const char *run = s;

    put(w, "\"", 1);
    while (*s) {
        unsigned char c = (unsigned char)*s;
        char esc[6];
        if (c >= 0x80) {
            size_t skip = 1, k = utf8_seq(s, strnlen(s, 4), &skip);
            if (k) {
                s += k;
                continue;
            }
            put(w, run, (size_t)(s - run));
            put(w, "\\ufffd", 6);
            s += skip;
            run = s;
            continue;
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            s++;
            continue;
        }
        put(w, run, (size_t)(s - run));
        run = ++s;
        esc[0] = '\\';
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 15];
            put(w, esc, 6);
            continue;
        }
        put(w, esc, 2);
    }
    put(w, run, (size_t)(s - run));
    put(w, "\"", 1);
}

/* Open an object ('{'), as a value or, after jw_key(), a member. */
void jw_obj(struct jw *w)
{
    sep(w);
    put(w, "{", 1);
    w->depth++;
}

/* Close the innermost object. */
void jw_obj_end(struct jw *w)
{
    put(w, "}", 1);
    w->depth--;
    w->need_comma = 1;
}

/* Open an array. */
void jw_arr(struct jw *w)
{
    sep(w);
    put(w, "[", 1);
    w->depth++;
}

/* Close the innermost array. */
void jw_arr_end(struct jw *w)
{
    put(w, "]", 1);
    w->depth--;
    w->need_comma = 1;
}

/* Write a member name; the next call writes its value. */
void jw_key(struct jw *w, const char *k)
{
    sep(w);
    put_string(w, k);
    put(w, ":", 1);
}

/* Write a string value (NULL writes null); invalid UTF-8 in 's' is written as U+FFFD. */
void jw_str(struct jw *w, const char *s)
{
    sep(w);
    if (s)
        put_string(w, s);
    else
        put(w, "null", 4);
    w->need_comma = 1;
}

/* Write an integer value. */
void jw_int(struct jw *w, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%lld", (long long)v);
    sep(w);
    put(w, num, (size_t)n);
    w->need_comma = 1;
}

/* Write true or false. */
void jw_bool(struct jw *w, bool v)
{
    sep(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
    w->need_comma = 1;
}

/* Write null. */
void jw_null(struct jw *w)
{
    sep(w);
    put(w, "null", 4);
    w->need_comma = 1;
}

/* Write a timestamp as ISO 8601 (0 writes null). */
void jw_time(struct jw *w, int64_t ms)
{
    char ts[32];
    if (!ms) {
        jw_null(w);
        return;
    }
    jw_str(w, clock_fmt_iso(ms, ts, sizeof(ts)));
}

/*
 * Splice JSON text the server validated itself ('fallback' when 's' is NULL, empty, or not
 * valid UTF-8: damaged storage never reaches a client as invalid JSON text).
 */
void jw_raw(struct jw *w, const char *s, const char *fallback)
{
    if (!s || !*s || !utf8_valid(s, strlen(s)))
        s = fallback;
    sep(w);
    put(w, s, strlen(s));
    w->need_comma = 1;
}

/* 0 when everything fit, else the first error (ERR_LIMIT or ERR_NOMEM). */
int jw_finish(const struct jw *w)
{
    return w->rc ? w->rc : (w->depth ? ERR_INTERNAL : 0);
}
