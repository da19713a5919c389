/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of workflows/fields.c, the built-in `extract` action: every type labelled and
 * in free text, labels matched ignoring case, blanks, '_' and '-', the fall-through to the
 * search when a labelled value does not convert, null for what the text does not hold, every
 * field present as a key, dates (leap years, impossible days, written forms, one output
 * form), phone numbers against dates and long numbers, numbers with commas and signs, links
 * and their trailing punctuation, invalid UTF-8, and linear time on pathological inputs.
 * Data-driven: each case is one line of a table.
 */
#include "../../src/core/utf8.h"
#include "../../src/workflows/fields.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The field 'name' of type 'type' read from 'text' ('len' bytes), as compact JSON (static). */
static const char *extract_n(const char *text, size_t len, const char *name, const char *type)
{
    static char out[4096];
    json_t *fields = json_pack("{ss}", name, type), *res = wf_fields_extract(text, len, fields);
    char *s = json_dumps(json_object_get(res, name),
                         JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(15));

    snprintf(out, sizeof(out), "%s",
             json_object_size(res) != 1 ? "<not one key>" : (s ? s : "<missing>"));
    free(s);
    json_decref(res);
    json_decref(fields);
    return out;
}

static const char *extract(const char *text, const char *name, const char *type)
{
    return extract_n(text, strlen(text), name, type);
}

struct tcase {
    const char *text, *name, *type, *want;
};

/* 's' on one TAP line: control characters as '|' (static). */
static const char *one_line(const char *s)
{
    static char out[256];
    size_t i;
    for (i = 0; s[i] && i + 1 < sizeof(out); i++)
        out[i] = (unsigned char)s[i] < 0x20 ? '|' : s[i];
    out[i] = '\0';
    return out;
}

static void run_cases(const struct tcase *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        is_str(extract(c[i].text, c[i].name, c[i].type), c[i].want, one_line(c[i].text));
}

#define RUN(cases) run_cases(cases, sizeof(cases) / sizeof(cases[0]))

static void test_labels(void)
{
    static const struct tcase cases[] = {
        {"Name: Ada Lovelace\n", "name", "string", "\"Ada Lovelace\""},
        {"  Customer Name :  Ada  \r\nnext", "customer_name", "string", "\"Ada\""},
        {"customer-name = Bob", "customer_name", "string", "\"Bob\""},
        {"CUSTOMER_NAME:Carol", "customer_name", "string", "\"Carol\""},
        {"x\nCustomer\tname: Dan\n", "customer_name", "string", "\"Dan\""},
        {"due_date: Friday", "Due Date", "string", "\"Friday\""},
        {"Subject: Re: invoice", "subject", "string", "\"Re: invoice\""},
        {"Key = a:b", "key", "string", "\"a:b\""},
        {"Key: a=b", "key", "string", "\"a=b\""},
        {"Name:\nName:   \nName: Eve", "name", "string", "\"Eve\""},
        {"Name: first\nName: second", "name", "string", "\"first\""},
        {"Named: x\nName x\nmy name: y", "name", "string", "null"},
        {"Ada Lovelace wrote the first program", "name", "string", "null"},
        {"", "name", "string", "null"},
        {": value", "_", "string", "null"},
        {"-: value", "-", "string", "null"},
        {"\xc3\x89tat: ok", "\xc3\x89tat", "string", "\"ok\""},
        {"Urgent: yes", "urgent", "boolean", "true"},
        {"Urgent: NO", "urgent", "boolean", "false"},
        {"urgent=True", "urgent", "boolean", "true"},
        {"Urgent: off", "urgent", "boolean", "false"},
        {"Urgent: On", "urgent", "boolean", "true"},
        {"Urgent: y", "urgent", "boolean", "true"},
        {"Urgent: N.", "urgent", "boolean", "false"},
        {"Urgent: FALSE!", "urgent", "boolean", "false"},
        {"Urgent: maybe", "urgent", "boolean", "null"},
        {"Urgent: yes please", "urgent", "boolean", "null"},
        {"Urgent: maybe\nurgent: no", "urgent", "boolean", "false"},
        {"this is urgent, yes", "urgent", "boolean", "null"},
        {"yes", "urgent", "boolean", "null"},
    };
    RUN(cases);
}

/* A labelled value of the wrong type falls through to the search of the whole text. */
static void test_fall_through(void)
{
    static const struct tcase cases[] = {
        {"Email: none\ncontact ada@x.org", "email", "email", "\"ada@x.org\""},
        {"Email: ask Ada at ada@x.org please", "email", "email", "\"ada@x.org\""},
        {"Contact ops@x.org\nEmail: ada@x.org", "email", "email", "\"ada@x.org\""},
        {"Due date: 2026-02-30\nSent 2026-01-05", "due_date", "date", "\"2026-01-05\""},
        {"Due date: 25/11/2026\nno other date", "due_date", "date", "null"},
        {"Phone: unknown\nring 555 123 4567", "phone", "phone", "\"555 123 4567\""},
        {"Amount: about twelve\ntotal 15 EUR", "amount", "number", "15"},
        {"Website: none\nhttps://x.org/", "website", "url", "\"https://x.org/\""},
        {"Website: www.x.org", "website", "url", "null"},
        {"Urgent: soon\nurgent yes", "urgent", "boolean", "null"},
    };
    RUN(cases);
}

static void test_email(void)
{
    static const struct tcase cases[] = {
        {"Email: Ada@Example.COM", "email", "email", "\"Ada@Example.COM\""},
        {"write to ada.lovelace+work@mail.example.co.uk.", "e", "email",
         "\"ada.lovelace+work@mail.example.co.uk\""},
        {"<mailto:ops_team-1@x-y.io>", "e", "email", "\"ops_team-1@x-y.io\""},
        {"first a@b then c@d.com", "e", "email", "\"c@d.com\""},
        {"a@b", "e", "email", "null"},
        {"a@b.c", "e", "email", "null"},
        {"a..b@x.com", "e", "email", "null"},
        {"first.@x.com", "e", "email", "null"},
        {"@x.com", "e", "email", "null"},
        {"x@-bad.com", "e", "email", "null"},
        {"x@bad-.com", "e", "email", "null"},
        {"x@a..com", "e", "email", "null"},
        {"user@host.c0m", "e", "email", "null"},
        {"...ada@x.org", "e", "email", "\"ada@x.org\""},
        {"caf\xc3\xa9@x.org", "e", "email", "null"},
        {"no address here", "e", "email", "null"},
    };
    RUN(cases);
}

static void test_url(void)
{
    static const struct tcase cases[] = {
        {"see https://example.com/a?b=1.", "u", "url", "\"https://example.com/a?b=1\""},
        {"(https://en.wikipedia.org/wiki/C_(language))", "u", "url",
         "\"https://en.wikipedia.org/wiki/C_(language)\""},
        {"at https://x.org/path), then", "u", "url", "\"https://x.org/path\""},
        {"'https://a.b/c'!", "u", "url", "\"https://a.b/c\""},
        {"<https://a.b/c>", "u", "url", "\"https://a.b/c\""},
        {"[link](http://a.b/c)", "u", "url", "\"http://a.b/c\""},
        {"is it http://a.b/c?", "u", "url", "\"http://a.b/c\""},
        {"go: http://a.b/c;:,.!*", "u", "url", "\"http://a.b/c\""},
        {"HTTP://X.ORG", "u", "url", "\"HTTP://X.ORG\""},
        {"https://[::1]:8080/x", "u", "url", "\"https://[::1]:8080/x\""},
        {"https://a.b/caf\xc3\xa9 ok", "u", "url", "\"https://a.b/caf\xc3\xa9\""},
        {"https://a.b/x\xff\xfey", "u", "url", "\"https://a.b/x\""},
        {"ftp://x.org", "u", "url", "null"},
        {"https:// x.org", "u", "url", "null"},
        {"https://", "u", "url", "null"},
        {"xhttps://a.b", "u", "url", "null"},
        {"www.example.com", "u", "url", "null"},
        {"Website: https://a.b/\nother http://c.d", "website", "url", "\"https://a.b/\""},
    };
    RUN(cases);
}

static void test_phone(void)
{
    static const struct tcase cases[] = {
        {"+1 (555) 123-4567", "p", "phone", "\"+1 (555) 123-4567\""},
        {"call 555-123-4567.", "p", "phone", "\"555-123-4567\""},
        {"Tel: +44 20 7946 0958\n", "tel", "phone", "\"+44 20 7946 0958\""},
        {"phone 555.123.4567 now", "p", "phone", "\"555.123.4567\""},
        {"+33 1 23 45 67 89", "p", "phone", "\"+33 1 23 45 67 89\""},
        {"(555) 123-4567", "p", "phone", "\"(555) 123-4567\""},
        {"(call 555-123-4567)", "p", "phone", "\"555-123-4567\""},
        {"1-800-555-0199", "p", "phone", "\"1-800-555-0199\""},
        {"number:5551234567,", "p", "phone", "\"5551234567\""},
        {"1234567", "p", "phone", "\"1234567\""},
        {"123456", "p", "phone", "null"},
        {"123456789012345", "p", "phone", "\"123456789012345\""},
        {"1234567890123456", "p", "phone", "null"},
        {"12345678901234567890", "p", "phone", "null"},
        {"scores 10 20 30 40 50 60 70 80 90 11 12 13", "p", "phone", "null"},
        {"on 2026-11-25 at noon", "p", "phone", "null"},
        {"on 25.11.2026 at noon", "p", "phone", "null"},
        {"on 2026.11.25", "p", "phone", "null"},
        {"2026-11-25T10:30", "p", "phone", "null"},
        {"ID12345678", "p", "phone", "null"},
        {"5551234567x", "p", "phone", "null"},
        {"x/5551234567", "p", "phone", "null"},
        {"12345678@x.com", "p", "phone", "null"},
        {"pi 3.14159265", "p", "phone", "null"},
        {"ip 192.168.100.200", "p", "phone", "null"},
        {"total 1,234,567,890", "p", "phone", "null"},
        {"555--123--4567", "p", "phone", "null"},
        {"555 - 123 - 4567", "p", "phone", "\"555 - 123 - 4567\""},
        {"555    1234567", "p", "phone", "\"1234567\""},
        {"(555 123-4567", "p", "phone", "\"555 123-4567\""},
        {"555) 123-4567", "p", "phone", "null"},
        {"date 2026-11-25, call 555-123-4567", "p", "phone", "\"555-123-4567\""},
        {"on 2026-11-25 +1 555 123 4567", "p", "phone", "\"+1 555 123 4567\""},
        {"Phone: +1 (555) 123-4567 ext. 9", "phone", "phone", "\"+1 (555) 123-4567\""},
    };
    RUN(cases);
}

static void test_date(void)
{
    static const struct tcase cases[] = {
        {"2026-11-25", "d", "date", "\"2026-11-25\""},
        {"due (2026-11-25).", "d", "date", "\"2026-11-25\""},
        {"2024-02-29", "d", "date", "\"2024-02-29\""},
        {"2000-02-29", "d", "date", "\"2000-02-29\""},
        {"2023-02-29", "d", "date", "null"},
        {"1900-02-29", "d", "date", "null"},
        {"2026-02-30", "d", "date", "null"},
        {"2026-04-31", "d", "date", "null"},
        {"2026-13-01", "d", "date", "null"},
        {"2026-00-10", "d", "date", "null"},
        {"2026-01-00", "d", "date", "null"},
        {"2026-12-31", "d", "date", "\"2026-12-31\""},
        {"2026-11-25T10:30:00Z", "d", "date", "\"2026-11-25\""},
        {"2026-11-25T10:30+01:00", "d", "date", "\"2026-11-25\""},
        {"2026-11-25T23:59:60.123-05:00", "d", "date", "\"2026-11-25\""},
        {"2026-11-25T25:00", "d", "date", "null"},
        {"2026-11-25T10", "d", "date", "null"},
        {"2026-11-25 10:30", "d", "date", "\"2026-11-25\""},
        {"12026-11-25", "d", "date", "null"},
        {"2026-11-255", "d", "date", "null"},
        {"2026-11-25-01", "d", "date", "null"},
        {"v2026-11-25", "d", "date", "null"},
        {"2026-1-5", "d", "date", "null"},
        {"25 November 2026", "d", "date", "\"2026-11-25\""},
        {"November 25, 2026", "d", "date", "\"2026-11-25\""},
        {"Nov 25 2026", "d", "date", "\"2026-11-25\""},
        {"25 Nov 2026", "d", "date", "\"2026-11-25\""},
        {"25 nov, 2026", "d", "date", "\"2026-11-25\""},
        {"Tuesday, 3 MARCH 2026.", "d", "date", "\"2026-03-03\""},
        {"Sept. 3rd, 2026", "d", "date", "\"2026-09-03\""},
        {"1st of March 2024", "d", "date", "\"2024-03-01\""},
        {"on the 2nd of feb. 2028", "d", "date", "\"2028-02-02\""},
        {"29 Feb 2024", "d", "date", "\"2024-02-29\""},
        {"29 Feb 2023", "d", "date", "null"},
        {"31 November 2026", "d", "date", "null"},
        {"November 2026", "d", "date", "null"},
        {"25 Novembre 2026", "d", "date", "null"},
        {"Mayor 5 2026", "d", "date", "null"},
        {"25 Nov 20261", "d", "date", "null"},
        {"125 Nov 2026", "d", "date", "null"},
        {"25\nNov\n2026", "d", "date", "null"},
        {"25/11/2026", "d", "date", "null"},
        {"11/25/2026", "d", "date", "null"},
        {"Invoice 2026-02-30 due 2026-03-01", "d", "date", "\"2026-03-01\""},
        {"sent Nov 2 2026, due 2026-12-01", "d", "date", "\"2026-11-02\""},
        {"Due date: 5 January 2027\nsent 2026-11-25", "due_date", "date", "\"2027-01-05\""},
        {"no date", "d", "date", "null"},
    };
    RUN(cases);
}

static void test_number(void)
{
    static const struct tcase cases[] = {
        {"Total: 1,250.50", "total", "number", "1250.5"},
        {"Qty: 3", "qty", "number", "3"},
        {"Amount: -42", "amount", "number", "-42"},
        {"Amount: +7", "amount", "number", "7"},
        {"Amount: $1,250", "amount", "number", "1250"},
        {"Amount: 12,345,678", "amount", "number", "12345678"},
        {"Amount: USD 99.95.", "amount", "number", "99.95"},
        {"Amount: 2026-11-25", "amount", "number", "null"},
        {"We need 12 chairs", "n", "number", "12"},
        {"order ABC123 of 5 items", "n", "number", "5"},
        {"price -0.5 today", "n", "number", "-0.5"},
        {"ratio 3.14159265", "n", "number", "3.14159265"},
        {"99999999999999999999", "n", "number", "1e20"},
        {"9223372036854775807", "n", "number", "9223372036854775807"},
        {"-9223372036854775808", "n", "number", "-9223372036854775808"},
        {"(42)", "n", "number", "42"},
        {"25%", "n", "number", "25"},
        {"12,50", "n", "number", "null"},
        {"1,2,3", "n", "number", "null"},
        {"1,2345", "n", "number", "null"},
        {"5-10 people", "n", "number", "null"},
        {"at 10:30", "n", "number", "null"},
        {"v1.2 or 1.2.3", "n", "number", "null"},
        {"1e5", "n", "number", "null"},
        {"user12@x.com 12@y.org", "n", "number", "null"},
        {"on 2026-11-25 send 3", "n", "number", "3"},
        {"call +1 (555) 123-4567 about 2 items", "n", "number", "2"},
        {"25 November 2026: 7 boxes", "n", "number", "7"},
        {"https://x.org/42?p=1 and 8", "n", "number", "8"},
        {"Total 1, then 2", "n", "number", "1"},
        {"no numbers", "n", "number", "null"},
    };
    RUN(cases);
    {
        json_t *f = json_pack("{ss}", "n", "number");
        json_t *r = wf_fields_extract("n: 7\nm: 7.0", 11, f);
        ok(json_is_integer(json_object_get(r, "n")), "no fraction: an integer");
        json_decref(r);
        r = wf_fields_extract("n: 7.0", 6, f);
        ok(json_is_real(json_object_get(r, "n")), "a fraction: a real");
        json_decref(r);
        r = wf_fields_extract("n: 99999999999999999999", 23, f);
        ok(json_is_real(json_object_get(r, "n")), "past int64: a real");
        json_decref(r);
        json_decref(f);
    }
}

/* Every field is a key; nothing is invented from an empty or unrelated text. */
static void test_every_key(void)
{
    static const char *const texts[] = {"", "nothing to see", "Name:\n: \n=\n"};
    json_t *f =
        json_pack("{ss ss ss ss ss ss ss ss}", "name", "string", "n", "number", "ok", "boolean",
                  "d", "date", "e", "email", "u", "url", "p", "phone", "odd", "colour");
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        json_t *r = wf_fields_extract(texts[i], strlen(texts[i]), f), *v;
        const char *k;
        size_t nulls = 0;
        json_object_foreach(r, k, v)
        {
            nulls += json_is_null(v) && json_object_get(f, k);
        }
        is_int(json_object_size(r), 8, "eight keys");
        is_int(nulls, 8, one_line(texts[i]));
        json_decref(r);
    }
    {
        json_t *r = wf_fields_extract(NULL, 0, f);
        is_int(json_object_size(r), 8, "NULL text: eight keys");
        json_decref(r);
    }
    {
        const char *t = "Name: Ada\nn: 4\nok: yes\nd: 2026-11-25\ne: a@x.org\nu: http://x.org\n"
                        "p: 555-123-4567\nodd: red";
        json_t *r = wf_fields_extract(t, strlen(t), f);
        char *s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
        is_str(s,
               "{\"d\":\"2026-11-25\",\"e\":\"a@x.org\",\"n\":4,\"name\":\"Ada\",\"odd\":null,"
               "\"ok\":true,\"p\":\"555-123-4567\",\"u\":\"http://x.org\"}",
               "every type labelled; an unknown type is null");
        free(s);
        json_decref(r);
    }
    json_decref(f);
}

/* Several fields of one type: each label is its own, the search is shared. */
static void test_several(void)
{
    json_t *f = json_pack("{ss ss ss}", "from", "email", "to", "email", "cc", "email");
    const char *t = "To: b@y.org\nhello a@x.org and c@z.org\nfrom: nobody";
    json_t *r = wf_fields_extract(t, strlen(t), f);
    char *s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    is_str(s, "{\"cc\":\"b@y.org\",\"from\":\"b@y.org\",\"to\":\"b@y.org\"}",
           "the first address for the unlabelled ones");
    free(s);
    json_decref(r);
    json_decref(f);

    f = json_pack("{ss ss}", "due_date", "date", "Due Date", "string");
    t = "due date: 2026-11-25";
    r = wf_fields_extract(t, strlen(t), f);
    s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
    is_str(s, "{\"Due Date\":\"2026-11-25\",\"due_date\":\"2026-11-25\"}",
           "one line, two fields of one normalised name");
    free(s);
    json_decref(r);
    json_decref(f);
}

/* A string literal and its length, NUL bytes included. */
#define LIT(s) s, sizeof(s) - 1

/* Invalid UTF-8 in, valid UTF-8 out. */
static void test_utf8(void)
{
    static const struct {
        const char *text;
        size_t len;
        const char *name, *type, *want;
    } cases[] = {
        {LIT("Name: Ad\xff\xfe"
             "a\n"),
         "name", "string",
         "\"Ad\xef\xbf\xbd\xef\xbf\xbd"
         "a\""},
        {LIT("Name: \xe2\x82 end"), "name", "string", "\"\xef\xbf\xbd end\""},
        {LIT("Name: \xed\xa0\x80"), "name", "string", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""},
        {LIT("Name: \xf4\x90\x80\x80!"), "name", "string",
         "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd!\""},
        {LIT("Name: caf\xc3\xa9"), "name", "string", "\"caf\xc3\xa9\""},
        {LIT("Name: a\0b"), "name", "string", "\"a\\u0000b\""},
        {LIT("\xff\xfe ada@x.org \xc0"), "e", "email", "\"ada@x.org\""},
        {LIT("\xc0\x80 555-123-4567 \xff"), "p", "phone", "\"555-123-4567\""},
        {LIT("\xff"
             "25 Nov 2026"),
         "d", "date", "\"2026-11-25\""},
        {LIT("\xe2\x82\xac"
             "12"),
         "n", "number", "12"},
        {LIT("N\xc3\xa4me: x\nName: y"), "name", "string", "\"y\""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got = extract_n(cases[i].text, cases[i].len, cases[i].name, cases[i].type);
        is_str(got, cases[i].want, one_line(cases[i].want));
        ok(utf8_valid(got, strlen(got)), "valid UTF-8 out");
    }
}

/* The length of the string value of field 'name' ('type') read from t[0..n), or -1. */
static long value_len(const char *t, size_t n, const char *name, const char *type)
{
    json_t *f = json_pack("{ss}", name, type), *r = wf_fields_extract(t, n, f);
    json_t *v = json_object_get(r, name);
    long len = json_is_string(v) ? (long)json_string_length(v) : -1;
    json_decref(r);
    json_decref(f);
    return len;
}

/* A string longer than WF_FIELDS_STRING_MAX is no value; a link longer than the cap is none. */
static void test_limits(void)
{
    size_t n = WF_FIELDS_STRING_MAX + 7;
    char *t = malloc(n);
    memcpy(t, "Name: ", 6);
    memset(t + 6, 'x', n - 6);
    is_int(value_len(t, n - 1, "name", "string"), WF_FIELDS_STRING_MAX,
           "a value of the longest length");
    is_int(value_len(t, n, "name", "string"), -1, "a value one byte too long");
    memcpy(t, "https://", 8);
    is_int(value_len(t, WF_FIELDS_URL_MAX, "u", "url"), WF_FIELDS_URL_MAX,
           "a link of the longest length");
    is_int(value_len(t, WF_FIELDS_URL_MAX + 1, "u", "url"), -1, "a link one byte too long");
    free(t);
}

/* 1 MiB of repeated pathological input for every type: linear, so well under a second each. */
static void test_linear(void)
{
    static const char *const units[] = {
        "1 ",      "1-",     "a@",         "@a.",  "((((",  "1,",       "1.",
        "http://", "Nov 1 ", "12 ",        "a:\n", "x",     "2026-11-", "+1 (",
        "a.b.c",   "25 of ", "1111111111", "\xff", "n:a\n", "s:\n",
    };
    json_t *f = json_pack("{ss ss ss ss ss ss ss}", "s", "string", "n", "number", "b", "boolean",
                          "d", "date", "e", "email", "u", "url", "p", "phone");
    size_t n = 1u << 20;
    char *t = malloc(n);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        size_t k = strlen(units[u]);
        clock_t c0;
        double secs;
        json_t *r;
        for (size_t i = 0; i < n; i++)
            t[i] = units[u][i % k];
        c0 = clock();
        r = wf_fields_extract(t, n, f);
        secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
        ok(json_object_size(r) == 7 && secs < 2.0, one_line(units[u]));
        if (secs >= 2.0)
            printf("#   %.2f s\n", secs);
        json_decref(r);
    }
    free(t);
    json_decref(f);
}

int main(void)
{
    subtest("labels") test_labels();
    subtest("fall through") test_fall_through();
    subtest("email") test_email();
    subtest("url") test_url();
    subtest("phone") test_phone();
    subtest("date") test_date();
    subtest("number") test_number();
    subtest("every key") test_every_key();
    subtest("several") test_several();
    subtest("utf8") test_utf8();
    subtest("limits") test_limits();
    subtest("linear") test_linear();
    return done_testing();
}
