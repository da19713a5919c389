/* SPDX-License-Identifier: MIT */
/*
 * out.c: small builders over jansson for response objects. jansson aborts nothing on OOM; it
 * returns NULL or -1, and our x*alloc policy is to die on exhaustion, so these helpers do too.
 */
#include "json.h"

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/utf8.h"

#include <stdlib.h>
#include <string.h>

static void must(int rc, const char *k)
{
    if (rc != 0) {
        log_error("json: cannot set %s (out of memory)", k);
        abort();
    }
}

/* A new empty object; the caller owns the reference. */
json_t *jo_object(void)
{
    json_t *o = json_object();
    if (!o)
        abort();
    return o;
}

/* A new string value of 'v' (null when NULL), invalid UTF-8 as U+FFFD. Never NULL. */
json_t *jo_string(const char *v)
{
    json_t *js;
    if (!v)
        return json_null();
    js = json_string(v);
    if (!js) {
        char *clean = utf8_scrub_dup(v, strlen(v));
        js = json_string(clean);
        free(clean);
    }
    if (!js)
        abort();
    return js;
}

/* A new JSON number of 'v': an integer when it is one (so that 2 is written 2, not 2.0). */
json_t *jo_number(double v)
{
    json_t *n = v == (double)(json_int_t)v ? json_integer((json_int_t)v) : json_real(v);
    if (!n)
        abort();
    return n;
}

/*
 * Set 'k' to the string 'v', or null when 'v' is NULL. Invalid UTF-8 in 'v' becomes U+FFFD
 * (jansson refuses to build a string of it, and an answer must never lose or break a field).
 */
void jo_str(json_t *o, const char *k, const char *v)
{
    must(json_object_set_new(o, k, jo_string(v)), k);
}

/* Set 'k' to the integer 'v'. */
void jo_int(json_t *o, const char *k, int64_t v)
{
    must(json_object_set_new(o, k, json_integer(v)), k);
}

/* Set 'k' to the boolean 'v'. */
void jo_bool(json_t *o, const char *k, bool v)
{
    must(json_object_set_new(o, k, json_boolean(v)), k);
}

/* Set 'k' to the number 'v'. */
void jo_real(json_t *o, const char *k, double v)
{
    must(json_object_set_new(o, k, json_real(v)), k);
}

/* Set 'k' to null. */
void jo_null(json_t *o, const char *k)
{
    must(json_object_set_new(o, k, json_null()), k);
}

/* Set 'k' to the ISO 8601 form of 'ms', or null when 'ms' is 0. */
void jo_time(json_t *o, const char *k, int64_t ms)
{
    char ts[32];
    if (!ms) {
        jo_null(o, k);
        return;
    }
    jo_str(o, k, clock_fmt_iso(ms, ts, sizeof(ts)));
}

/* Set 'k' to 'v', taking the caller's reference. */
void jo_set(json_t *o, const char *k, json_t *v)
{
    must(json_object_set_new(o, k, v ? v : json_null()), k);
}

/* Parse JSON text the store wrote; a new reference, or null if the text is damaged. */
json_t *jo_parse_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, 0, NULL) : NULL;
    return v ? v : json_null();
}

/* Serialize 'v' compactly; the caller frees the result with free(). */
char *jo_dump(const json_t *v, size_t *len)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!s)
        abort();
    if (len) {
        size_t n = 0;
        while (s[n])
            n++;
        *len = n;
    }
    return s;
}
