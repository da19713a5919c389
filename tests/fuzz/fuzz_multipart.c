/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target of http/multipart.c: the input is split into pieces whose sizes come from its
 * first byte; the parts and bytes seen must equal those of feeding it whole.
 */
#include "../../src/core/buf.h"
#include "../../src/http/multipart.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int on_part(void *ud, const struct multipart_part *p)
{
    struct buf *b = ud;
    buf_appends(b, "\x01");
    buf_appends(b, p->name);
    buf_appends(b, p->filename ? p->filename : "\x02");
    return 0;
}

static int on_data(void *ud, const char *p, size_t n)
{
    (void)buf_append(ud, p, n); /* past the cap both runs drop the same bytes */
    return 0;
}

static int on_end(void *ud)
{
    (void)buf_appends(ud, "\x03");
    return 0;
}

static int run(const uint8_t *d, size_t n, size_t step, struct buf *log)
{
    struct multipart m;
    struct multipart_cb cb = {on_part, on_data, on_end, log};
    int rc = multipart_init(&m, "multipart/form-data; boundary=b0und");
    for (size_t i = 0; !rc && i < n;) {
        size_t k = n - i < step ? n - i : step;
        rc = multipart_feed(&m, (const char *)d + i, k, &cb);
        i += k;
    }
    if (!rc)
        rc = multipart_finish(&m);
    multipart_cleanup(&m);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct buf a, b;
    int ra, rb;
    size_t step;
    if (size < 1)
        return 0;
    step = (size_t)data[0] % 13 + 1;
    buf_init(&a, 1 << 22);
    buf_init(&b, 1 << 22);
    ra = run(data + 1, size - 1, size, &a);
    rb = run(data + 1, size - 1, step, &b);
    if (ra != rb || (ra == 0 && (buf_len(&a) != buf_len(&b) ||
                                 memcmp(buf_ptr(&a), buf_ptr(&b), buf_len(&a)) != 0)))
        abort();
    buf_cleanup(&a);
    buf_cleanup(&b);
    return 0;
}
