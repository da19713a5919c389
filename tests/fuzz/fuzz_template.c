/* SPDX-License-Identifier: MIT */
/*
 * fuzz_template: workflows/template.c's parsers, the input read as a template and as a
 * condition, for the step index in its first byte. A failure is ERR_INVALID with code
 * invalid_request, the caller's param exactly, and a non-empty message that is valid UTF-8
 * (api/errors.c puts it in a JSON body); the out-parameter stays NULL. A template that parses
 * renders against fixed run data with and without placeholders, and its output is valid UTF-8
 * (the input and the data are); a step reference only parses below the step index.
 * Pure: no I/O; everything parsed is freed.
 */
#define FUZZ_NAME "fuzz_template"
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/workflows/template.h"
#include "fuzz_text.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static json_t *run_data(void)
{
    static json_t *d;
    if (!d)
        d = json_loads("{\"trigger\": {\"a\": \"x\", \"n\": 5, \"l\": [1, {\"b\": null}], \"o\":"
                       " {\"k\": true}}, \"steps\": [{\"output\": \"s0\"}, {\"output\":"
                       " {\"label\": \"b\", \"score\": 0.5}}, {\"output\": [\"\xc3\xa9\"]}],"
                       " \"workflow\": {\"id\": \"wf_1\"}, \"run\": {\"id\": \"run_1\"}}",
                       0, NULL);
    return d;
}

static void check_error(int rc, const struct tmpl *t, const struct err *e, const char *param)
{
    CHECK(rc == ERR_INVALID && e->kind == ERR_INVALID && t == NULL);
    CHECK(e->code && strcmp(e->code, "invalid_request") == 0);
    CHECK(strcmp(e->param, param) == 0);
    CHECK(e->msg[0] != '\0');
    CHECK(utf8_valid((const unsigned char *)e->msg, strlen(e->msg)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s;
    struct tmpl *t = NULL;
    struct err e;
    int step, rc;

    if (size < 1)
        return 0;
    step = data[0] % 24;
    s = (const char *)data + 1;
    size--;

    err_clear(&e);
    rc = tmpl_parse(s, size, step, "steps[5].input", &t, &e);
    if (rc) {
        check_error(rc, t, &e, "steps[5].input");
    } else {
        struct buf b;
        CHECK(t != NULL && utf8_valid((const unsigned char *)s, size));
        for (int ph = 0; ph < 2; ph++) {
            buf_init(&b, 1u << 20);
            CHECK(tmpl_render(t, run_data(), ph != 0, &b) == 0);
            CHECK(utf8_valid((const unsigned char *)buf_ptr(&b), buf_len(&b)));
            buf_cleanup(&b);
        }
        /* A step reference parses only below the index: at step 0 none can. */
        if (step == 0)
            CHECK(!tmpl_uses_steps(t));
        tmpl_free(t);
    }

    t = NULL;
    err_clear(&e);
    rc = tmpl_cond_parse(s, size, step, "steps[5].condition", &t, &e);
    if (rc) {
        check_error(rc, t, &e, "steps[5].condition");
    } else {
        enum tmpl_value v = tmpl_eval(t, run_data(), false);
        CHECK(v == TMPL_TRUE || v == TMPL_FALSE);
        v = tmpl_eval(t, run_data(), true);
        CHECK(v == TMPL_TRUE || v == TMPL_FALSE || v == TMPL_UNKNOWN);
        CHECK(v != TMPL_UNKNOWN || tmpl_uses_steps(t));
        if (step == 0)
            CHECK(!tmpl_uses_steps(t));
        tmpl_free(t);
    }
    return 0;
}
