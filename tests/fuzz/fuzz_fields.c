/* SPDX-License-Identifier: MIT */
/*
 * fuzz_fields: the built-in `extract` action (workflows/fields.c, wf_fields_extract()). The
 * input's first line, when it is a JSON object of 1 to 50 fields {name: type} of the known
 * types, names the fields and the rest is the text; otherwise fixed fields (one of each type)
 * are read from the whole input. Checks:
 *   - the result is an object with exactly the fields' keys, each null or of its type's JSON
 *     type (string, number, boolean; strings for date, email, url and phone);
 *   - every string is valid UTF-8 (checked by an independent validator) and json_dumps
 *     writes the result;
 *   - nothing is invented: an email, url or phone value occurs verbatim in the text, and so
 *     does a string value when the text is valid UTF-8 (otherwise only repairs differ);
 *   - an email is ASCII with one '@'; a phone number is ASCII with 7 to 15 digits; a url
 *     starts with http:// or https://; a date is YYYY-MM-DD and a real calendar day; a
 *     number is finite;
 *   - the same input gives the same result twice.
 * Pure: no I/O; all memory is released.
 */
#include "../../src/workflows/fields.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_fields"
#include "fuzz_text.h"

static const char *const types[] = {"string", "number", "boolean", "date",
                                    "email",  "url",    "phone",   NULL};

/* The fields of the first line, or NULL when it is not a valid {name: type} object. */
static json_t *parse_fields(const char *s, size_t n)
{
    json_t *f = json_loadb(s, n, 0, NULL), *t;
    const char *k;
    size_t klen;

    if (!json_is_object(f) || json_object_size(f) < 1 || json_object_size(f) > 50)
        goto bad;
    json_object_keylen_foreach(f, k, klen, t)
    {
        bool known = false;
        if (klen < 1 || klen > 64 || !json_is_string(t))
            goto bad;
        for (size_t i = 0; types[i]; i++)
            known = known || strcmp(json_string_value(t), types[i]) == 0;
        if (!known)
            goto bad;
    }
    return f;
bad:
    json_decref(f);
    return NULL;
}

static bool ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] >= 0x80 || s[i] == '\0')
            return false;
    }
    return true;
}

static bool occurs(const char *text, size_t len, const char *s, size_t n)
{
    return n == 0 || (n <= len && memmem(text, len, s, n) != NULL);
}

static bool calendar_date(const char *s, size_t n)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int y, m, d;
    if (n != 10 || s[4] != '-' || s[7] != '-')
        return false;
    for (size_t i = 0; i < n; i++) {
        if (i != 4 && i != 7 && (s[i] < '0' || s[i] > '9'))
            return false;
    }
    y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
    m = (s[5] - '0') * 10 + (s[6] - '0');
    d = (s[8] - '0') * 10 + (s[9] - '0');
    if (m < 1 || m > 12 || d < 1)
        return false;
    return d <= mdays[m - 1] + (m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0));
}

/* One field's value 'v' of type 'type' read from text[0..len). */
static void check_value(const json_t *v, const char *type, const char *text, size_t len)
{
    const char *s;
    size_t n, digits = 0;

    CHECK(v != NULL);
    if (json_is_null(v))
        return;
    if (strcmp(type, "number") == 0) {
        CHECK(json_is_integer(v) || (json_is_real(v) && isfinite(json_real_value(v))));
        return;
    }
    if (strcmp(type, "boolean") == 0) {
        CHECK(json_is_boolean(v));
        return;
    }
    CHECK(json_is_string(v));
    s = json_string_value(v);
    n = json_string_length(v);
    CHECK(n > 0 && utf8_valid((const unsigned char *)s, n));
    if (strcmp(type, "string") == 0) {
        CHECK(n <= 3 * (size_t)WF_FIELDS_STRING_MAX);
        if (utf8_valid((const unsigned char *)text, len))
            CHECK(occurs(text, len, s, n));
    } else if (strcmp(type, "date") == 0) {
        CHECK(calendar_date(s, n));
    } else if (strcmp(type, "email") == 0) {
        CHECK(ascii(s, n) && occurs(text, len, s, n));
        CHECK(memchr(s, '@', n) && memchr(s, '@', n) == memrchr(s, '@', n));
    } else if (strcmp(type, "url") == 0) {
        CHECK(occurs(text, len, s, n) && n <= WF_FIELDS_URL_MAX);
        CHECK(strncasecmp(s, "http://", 7) == 0 || strncasecmp(s, "https://", 8) == 0);
    } else {
        CHECK(strcmp(type, "phone") == 0);
        CHECK(ascii(s, n) && occurs(text, len, s, n));
        for (size_t i = 0; i < n; i++)
            digits += s[i] >= '0' && s[i] <= '9';
        CHECK(digits >= 7 && digits <= 15);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *nl = memchr(in, '\n', size), *text = in, *k;
    size_t len = size, klen;
    json_t *fields = nl ? parse_fields(in, (size_t)(nl - in)) : NULL, *res, *again, *t;
    char *dump;

    if (fields) {
        text = nl + 1;
        len = size - (size_t)(nl + 1 - in);
    } else {
        fields = json_pack("{ss ss ss ss ss ss ss}", "name", "string", "amount", "number", "urgent",
                           "boolean", "due_date", "date", "email", "email", "website", "url",
                           "phone", "phone");
    }
    res = wf_fields_extract(text, len, fields);
    CHECK(json_is_object(res) && json_object_size(res) == json_object_size(fields));
    json_object_keylen_foreach(fields, k, klen, t)
    {
        check_value(json_object_getn(res, k, klen), json_string_value(t), text, len);
    }
    dump = json_dumps(res, JSON_COMPACT);
    CHECK(dump != NULL && utf8_valid((const unsigned char *)dump, strlen(dump)));
    free(dump);
    again = wf_fields_extract(text, len, fields);
    CHECK(json_equal(res, again));
    json_decref(again);
    json_decref(res);
    json_decref(fields);
    return 0;
}
