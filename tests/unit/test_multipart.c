/* SPDX-License-Identifier: MIT */
/* Unit tests of http/multipart.c: parts, fields, files, every split point, malformed input. */
#include "../../src/core/err.h"
#include "../../src/http/multipart.h"
#include "t.h"

#include <stdlib.h>

struct seen {
    struct buf log; /* "P name|filename|ctype\n" + data + "E\n" */
};

static int on_part(void *ud, const struct multipart_part *p)
{
    struct seen *s = ud;
    return buf_appendf(&s->log, "P %s|%s|%s\n", p->name, p->filename ? p->filename : "-",
                       p->content_type ? p->content_type : "-");
}

static int on_data(void *ud, const char *p, size_t n)
{
    struct seen *s = ud;
    return buf_append(&s->log, p, n);
}

static int on_end(void *ud)
{
    struct seen *s = ud;
    return buf_appends(&s->log, "|E\n");
}

/* Parse 'body' in pieces of 'step' bytes (0: all at once); the log into 'out' (caller frees). */
static int parse(const char *ctype, const char *body, size_t len, size_t step, char **out)
{
    struct multipart m;
    struct seen s;
    struct multipart_cb cb = {on_part, on_data, on_end, &s};
    int rc;
    buf_init(&s.log, 1 << 20);
    rc = multipart_init(&m, ctype);
    for (size_t i = 0; !rc && i < len;) {
        size_t n = step ? (len - i < step ? len - i : step) : len;
        rc = multipart_feed(&m, body + i, n, &cb);
        i += n;
    }
    if (!rc)
        rc = multipart_finish(&m);
    multipart_cleanup(&m);
    *out = buf_take(&s.log, NULL);
    return rc;
}

int main(void)
{
    const char *ct = "multipart/form-data; boundary=XyZ";
    const char body[] =
        "preamble\r\n"
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"name\"\r\n\r\n"
        "Handbook\r\n"
        "--XyZ\r\n"
        "Content-Disposition: form-data; name=\"file\"; filename=\"a \\\"b\\\".txt\""
        "\r\nContent-Type: text/plain\r\n\r\n"
        "line one\r\n--XyA-not-a-delimiter\r\n\r--X\r\n--XyZ\r\n"
        "Content-Disposition: form-data; name=\"tags\"\r\n\r\n"
        "\r\n"
        "--XyZ--\r\nepilogue";
    const char *want =
        "P name|-|-\nHandbook|E\n"
        "P file|a \"b\".txt|text/plain\nline one\r\n--XyA-not-a-delimiter\r\n\r--X|E\n"
        "P tags|-|-\n|E\n";
    char *got = NULL;
    int all_same = 1;

    is_int(parse(ct, body, sizeof(body) - 1, 0, &got), 0, "whole body parses");
    is_str(got, want, "parts, file name with escapes, data with near-delimiters");
    free(got);
    for (size_t step = 1; step < sizeof(body); step++) {
        int rc = parse(ct, body, sizeof(body) - 1, step, &got);
        if (rc || strcmp(got, want) != 0)
            all_same = 0;
        free(got);
    }
    ok(all_same, "identical for every piece size");
    is_int(parse("multipart/form-data; boundary=\"XyZ\"", body, sizeof(body) - 1, 7, &got), 0,
           "quoted boundary");
    free(got);
    {
        const char starts[] = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nv\r\n"
                              "--XyZ--";
        is_int(parse(ct, starts, sizeof(starts) - 1, 0, &got), 0, "no preamble, no final CRLF");
        is_str(got, "P a|-|-\nv|E\n", "first part read");
        free(got);
    }
    {
        const char cut[] = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nvalue";
        is_int(parse(ct, cut, sizeof(cut) - 1, 0, &got), ERR_INVALID, "cut body is invalid");
        free(got);
    }
    {
        const char inside[] = "--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\n"
                              "x\r\n--XyZ-oops\r\n--XyZ--";
        is_int(parse(ct, inside, sizeof(inside) - 1, 0, &got), ERR_INVALID,
               "the boundary inside data is malformed (RFC 2046)");
        free(got);
    }
    {
        const char nodisp[] = "--XyZ\r\nContent-Type: text/plain\r\n\r\nv\r\n--XyZ--";
        is_int(parse(ct, nodisp, sizeof(nodisp) - 1, 0, &got), ERR_INVALID,
               "a part without Content-Disposition is invalid");
        free(got);
    }
    {
        const char bad[] = "--XyZ\r\nno colon here\r\n\r\nv\r\n--XyZ--";
        is_int(parse(ct, bad, sizeof(bad) - 1, 0, &got), ERR_INVALID, "malformed header line");
        free(got);
    }
    {
        struct buf big;
        buf_init(&big, 1 << 20);
        buf_appends(&big, "--XyZ\r\nX-Long: ");
        for (int i = 0; i < 20000; i++)
            buf_append(&big, "a", 1);
        buf_appends(&big, "\r\n\r\n");
        is_int(parse(ct, buf_ptr(&big), buf_len(&big), 0, &got), ERR_LIMIT, "headers are capped");
        free(got);
        buf_cleanup(&big);
    }
    {
        struct multipart m;
        ok(multipart_init(&m, "application/json") == ERR_INVALID, "not multipart");
        multipart_cleanup(&m);
        ok(multipart_init(&m, "multipart/form-data") == ERR_INVALID, "no boundary");
        multipart_cleanup(&m);
        ok(multipart_init(&m, "multipart/form-data; boundary=") == ERR_INVALID, "empty boundary");
        multipart_cleanup(&m);
    }
    return done_testing();
}
