/* SPDX-License-Identifier: MIT */
/*
 * fuzz_extract_text: the plain-text extractor (knowledge/extract_text.c, extract_text()) on
 * any bytes. Checks:
 *   - the result is 0 or ERR_INVALID (the 1 MiB cap is never reached by libFuzzer inputs);
 *   - ERR_INVALID only for input that is not UTF-8 (checked by an independent validator):
 *     valid UTF-8 is always accepted;
 *   - the text is clean: valid UTF-8, no CR, no control character but TAB and LF;
 *   - valid UTF-8 without BOM, CR or control characters comes out unchanged;
 *   - the text grows by at most U+FFFD (3 bytes) per input byte;
 *   - cleaning the text again changes nothing (extract_put_clean is idempotent);
 *   - the cap of 'out' is exact: the text's own length fits, one byte less is ERR_LIMIT.
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/knowledge/extract.h"
#include "../../src/knowledge/extract_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_extract_text"
#include "fuzz_text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    bool bom = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0;
    struct buf out, again, tight;
    int rc;

    buf_init(&out, (size_t)1 << 20);
    rc = extract_text(in, size, &out);
    CHECK(rc == 0 || rc == ERR_INVALID);
    if (utf8_valid(data, size))
        CHECK(rc == 0);
    if (rc == 0) {
        CHECK(clean((const unsigned char *)buf_ptr(&out), buf_len(&out)));
        CHECK(buf_len(&out) <= 3 * size);
        if (!bom && clean(data, size))
            CHECK(buf_len(&out) == size && memcmp(buf_ptr(&out), data, size) == 0);

        buf_init(&again, (size_t)1 << 22);
        CHECK(extract_put_clean(&again, buf_ptr(&out), buf_len(&out)) == 0);
        CHECK(buf_len(&again) == buf_len(&out));
        CHECK(memcmp(buf_ptr(&again), buf_ptr(&out), buf_len(&out)) == 0);
        buf_cleanup(&again);

        buf_init(&tight, buf_len(&out));
        CHECK(extract_text(in, size, &tight) == 0);
        CHECK(buf_len(&tight) == buf_len(&out));
        buf_cleanup(&tight);
        if (buf_len(&out) > 0) {
            buf_init(&tight, buf_len(&out) - 1);
            CHECK(extract_text(in, size, &tight) == ERR_LIMIT);
            buf_cleanup(&tight);
        }
    }
    buf_cleanup(&out);
    return 0;
}
