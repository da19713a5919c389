/* SPDX-License-Identifier: MIT */
/* Unit tests of json/: strict parsing and table binding with param paths. */
#include "../../src/json/json.h"
#include "t.h"
#include "../../src/core/utf8.h"

#include <stddef.h>

static const char *const colors[] = {"red", "green", NULL};

static bool lower_only(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] < 'a' || s[i] > 'z')
            return false;
    }
    return true;
}

struct body {
    const char *name;
    int64_t n;
    bool flag;
    int color;
    struct jb_strings tags;
    json_t *ctx;
    const char *opt;
};

static const struct jb_field fields[] = {
    {"name", JB_STRING, offsetof(struct body, name), JB_REQUIRED, 1, 5, NULL, NULL, NULL},
    {"n", JB_INT, offsetof(struct body, n), 0, 1, 100, NULL, NULL, NULL},
    {"flag", JB_BOOL, offsetof(struct body, flag), 0, 0, 0, NULL, NULL, NULL},
    {"color", JB_ENUM, offsetof(struct body, color), 0, 0, 0, colors, NULL, NULL},
    {"tags", JB_STRING_ARRAY, offsetof(struct body, tags), JB_UNIQUE, 0, 3, NULL, lower_only,
     "lower-case letters only"},
    {"context", JB_ANY, offsetof(struct body, ctx), JB_OBJECT, 0, 0, NULL, NULL, NULL},
    {"opt", JB_STRING, offsetof(struct body, opt), JB_NULLABLE, 0, 10, NULL, NULL, NULL},
};
#define NF (sizeof(fields) / sizeof(fields[0]))

/* Bind 'text'; returns the rc and leaves the param in 'param'. */
static int bind(const char *text, struct body *b, struct jb_result *res, char *param)
{
    struct arena a;
    struct err e;
    json_t *obj = NULL;
    int rc;
    arena_init(&a);
    err_clear(&e);
    memset(b, 0, sizeof(*b));
    rc = jb_parse(text, strlen(text), &obj, &e);
    if (!rc)
        rc = jb_bind(obj, fields, NF, b, &a, res, &e);
    snprintf(param, 128, "%s", e.param);
    json_decref(obj);
    arena_cleanup(&a);
    return rc;
}

int main(void)
{
    struct body b;
    struct jb_result res;
    char param[128];
    static const struct {
        const char *json;
        const char *param;
    } bad[] = {
        {"{}", "name"},
        {"{\"name\":\"\"}", "name"},
        {"{\"name\":\"toolong\"}", "name"},
        {"{\"name\":1}", "name"},
        {"{\"name\":null}", "name"},
        {"{\"name\":\"a\",\"n\":0}", "n"},
        {"{\"name\":\"a\",\"n\":101}", "n"},
        {"{\"name\":\"a\",\"n\":1.5}", "n"},
        {"{\"name\":\"a\",\"n\":\"1\"}", "n"},
        {"{\"name\":\"a\",\"flag\":1}", "flag"},
        {"{\"name\":\"a\",\"color\":\"blue\"}", "color"},
        {"{\"name\":\"a\",\"tags\":\"x\"}", "tags"},
        {"{\"name\":\"a\",\"tags\":[\"a\",\"B\"]}", "tags[1]"},
        {"{\"name\":\"a\",\"tags\":[\"a\",\"a\"]}", "tags[1]"},
        {"{\"name\":\"a\",\"tags\":[\"a\",2]}", "tags[1]"},
        {"{\"name\":\"a\",\"tags\":[\"a\",\"b\",\"c\",\"d\"]}", "tags"},
        {"{\"name\":\"a\",\"context\":[]}", "context"},
        {"{\"name\":\"a\",\"extra\":1}", "extra"},
    };
    static const char *const malformed[] = {
        "{",
        "[]",
        "\"x\"",
        "{\"name\":\"a\"} x",
        "{\"name\":\"a\",\"name\":\"b\"}",
        "{\"name\":\"\\u0000\"}",
        "{\"name\":\"\xff\"}",
        "nul",
    };

    subtest("valid")
    {
        is_int(bind("{\"name\":\"héllo\",\"n\":100,\"flag\":true,\"color\":\"green\","
                    "\"tags\":[\"a\",\"b\"],\"context\":{\"k\":[1]},\"opt\":null}",
                    &b, &res, param),
               0, "a full body binds");
        ok(JB_HAS(res, 6) && JB_IS_NULL(res, 6), "null recorded for a nullable field");
        ok(!JB_IS_NULL(res, 0), "non-null field not marked null");
        is_int(bind("", &b, &res, param), ERR_INVALID, "empty body is {} (then name is missing)");
        is_str(param, "name", "missing required field named");
        is_int(bind("{\"name\":\"abcde\"}", &b, &res, param), 0, "5 characters is the limit");
        is_int(bind("{\"name\":\"ééééé\"}", &b, &res, param), 0, "length counts characters");
    }
    subtest("bad fields")
    {
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            int rc = bind(bad[i].json, &b, &res, param);
            ok(rc == ERR_INVALID && strcmp(param, bad[i].param) == 0, bad[i].json);
            if (strcmp(param, bad[i].param) != 0)
                printf("#   param '%s', want '%s'\n", param, bad[i].param);
        }
    }
    subtest("malformed")
    {
        for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
            int rc = bind(malformed[i], &b, &res, param);
            ok(rc == ERR_INVALID && param[0] == '\0', malformed[i]);
        }
    }
    subtest("utf8 length")
    {
        is_int(jb_utf8_len("aé€😀", strlen("aé€😀")), 4, "code points counted");
    }
    subtest("writer")
    {
        struct buf out;
        struct jw w;
        json_t *back;
        buf_init(&out, 1 << 16);
        jw_init(&w, &out);
        jw_obj(&w);
        jw_key(&w, "s");
        jw_str(&w, "q\"b\\n\n\x01é");
        jw_key(&w, "n");
        jw_int(&w, -42);
        jw_key(&w, "a");
        jw_arr(&w);
        jw_bool(&w, true);
        jw_null(&w);
        jw_raw(&w, "[\"x\"]", "[]");
        jw_raw(&w, NULL, "[]");
        jw_arr_end(&w);
        jw_key(&w, "t");
        jw_time(&w, 1);
        jw_obj_end(&w);
        is_int(jw_finish(&w), 0, "writer finished cleanly");
        back = json_loads(buf_ptr(&out), 0, NULL);
        ok(back != NULL, "writer output parses");
        is_str(json_string_value(json_object_get(back, "s")), "q\"b\\n\n\x01é",
               "escapes round-trip");
        is_int(json_integer_value(json_object_get(back, "n")), -42, "integer");
        is_int(json_array_size(json_object_get(back, "a")), 4, "array items");
        is_str(json_string_value(json_object_get(back, "t")), "1970-01-01T00:00:00.001Z", "time");
        json_decref(back);
        buf_cleanup(&out);
        buf_init(&out, 8);
        jw_init(&w, &out);
        jw_obj(&w);
        jw_key(&w, "long key");
        jw_str(&w, "a value past the cap");
        jw_obj_end(&w);
        is_int(jw_finish(&w), ERR_LIMIT, "cap is reported once, at the end");
        buf_cleanup(&out);
    }
    subtest("writer never emits invalid UTF-8")
    {
        /* Random byte strings (biased to the bytes UTF-8 cares about) through jw_str, jw_key
         * and jo_str: the output is always valid UTF-8 that jansson parses back, and valid
         * input comes back unchanged. */
        static const unsigned char pick[] = {'a',  '"',  '\\', 0x01, 0x7f, 0x80, 0xbf, 0xc0,
                                             0xc2, 0xdf, 0xe0, 0xed, 0xa0, 0x9f, 0xef, 0xf0,
                                             0xf4, 0x8f, 0x90, 0xf5, 0xff, 0xfe, 0xe2, 0x82};
        unsigned seed = 12345, bad_out = 0, bad_parse = 0, changed_valid = 0;
        for (int i = 0; i < 20000; i++) {
            char in[24];
            size_t n;
            struct buf o;
            struct jw w2;
            json_t *back, *obj;
            char *dumped;
            seed = seed * 1103515245u + 12345u;
            n = 1 + (seed >> 16) % (sizeof(in) - 1);
            for (size_t k = 0; k < n; k++) {
                seed = seed * 1103515245u + 12345u;
                in[k] = (char)pick[(seed >> 16) % sizeof(pick)];
            }
            in[n] = '\0';
            buf_init(&o, 1 << 16);
            jw_init(&w2, &o);
            jw_obj(&w2);
            jw_key(&w2, in);
            jw_str(&w2, in);
            jw_obj_end(&w2);
            if (jw_finish(&w2) != 0 || !utf8_valid(buf_ptr(&o), buf_len(&o)))
                bad_out++;
            back = json_loadb(buf_ptr(&o), buf_len(&o), 0, NULL);
            if (!back)
                bad_parse++;
            else if (utf8_valid(in, n) && json_object_size(back) == 1 &&
                     strcmp(json_string_value(json_object_get(back, in)), in) != 0)
                changed_valid++;
            json_decref(back);
            buf_cleanup(&o);
            obj = jo_object();
            jo_str(obj, "s", in);
            dumped = jo_dump(obj, NULL);
            if (!utf8_valid(dumped, strlen(dumped)))
                bad_out++;
            free(dumped);
            json_decref(obj);
        }
        is_int(bad_out, 0, "every output is valid UTF-8");
        is_int(bad_parse, 0, "every output parses");
        is_int(changed_valid, 0, "valid strings are written unchanged");
    }
    subtest("writer replaces each invalid sequence with U+FFFD")
    {
        struct buf o;
        struct jw w2;
        buf_init(&o, 1024);
        jw_init(&w2, &o);
        jw_str(&w2, "a\xff\xfe"
                    "b\xe2\x82"
                    "c\xed\xa0\x80"
                    "d\xf0\x9f\x98\x80");
        is_int(jw_finish(&w2), 0, "written");
        is_str(buf_ptr(&o), "\"a\\ufffd\\ufffdb\\ufffdc\\ufffd\\ufffd\\ufffdd\xf0\x9f\x98\x80\"",
               "maximal subparts: FF, FE, E2 82, ED, A0, 80; a valid emoji kept");
        buf_cleanup(&o);
        buf_init(&o, 1024);
        jw_init(&w2, &o);
        jw_raw(&w2, "[\"x\xff\"]", "[]");
        is_str(buf_ptr(&o), "[]", "jw_raw falls back on invalid stored JSON text");
        buf_cleanup(&o);
    }
    subtest("utf8 helpers")
    {
        is_int(utf8_valid("caf\xc3\xa9", 5), 1, "valid");
        is_int(utf8_valid("caf\xc3", 4), 0, "cut character");
        is_int(utf8_valid("\xc0\xaf", 2), 0, "overlong");
        is_int(utf8_valid("\xed\xa0\x80", 3), 0, "surrogate");
        is_int(utf8_valid("\xf4\x90\x80\x80", 4), 0, "past U+10FFFF");
        is_int(utf8_prefix("ab\xc3\xa9", 4, 3), 2, "a cut never splits a character");
        is_int(utf8_prefix("ab\xc3\xa9", 4, 4), 4, "whole");
        is_int(utf8_prefix("\xe2\x82\xac\xe2\x82\xac", 6, 5), 3, "three-byte characters");
    }
    return done_testing();
}
