/* SPDX-License-Identifier: MIT */
/*
 * fuzz_extract_json: the JSON extractor (knowledge/extract_text.c, extract_json()) on any
 * bytes. Checks:
 *   - the result is 0 exactly when jansson, called here directly, parses the input (after a
 *     UTF-8 BOM) as any JSON value; otherwise ERR_INVALID;
 *   - the text is clean: valid UTF-8, no CR, no control character but TAB and LF;
 *   - every string value of a top-level array of strings appears in the text, on its own line
 *     when it has no control characters;
 *   - the cap of 'out' is exact (its own length fits, one byte less is ERR_LIMIT).
 * Pure: no I/O; all memory is released.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/knowledge/extract.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_extract_json"
#include "fuzz_text.h"

/* Whether the line 's' (no LF in it) is a whole line of the 'n' bytes at 'text'. */
static bool has_line(const char *text, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i + len < n + 1; i++) {
        if ((i == 0 || text[i - 1] == '\n') && memcmp(text + i, s, len) == 0 &&
            (i + len == n || text[i + len] == '\n'))
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    size_t skip = size >= 3 && memcmp(data, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    json_error_t jerr;
    json_t *ref = json_loadb(in + skip, size - skip, JSON_DECODE_ANY, &jerr);
    struct buf out, tight;
    int rc;

    buf_init(&out, (size_t)1 << 22);
    rc = extract_json(in, size, &out);
    CHECK(rc == (ref ? 0 : ERR_INVALID));
    if (rc == 0) {
        CHECK(clean((const unsigned char *)buf_ptr(&out), buf_len(&out)));
        if (json_is_array(ref)) {
            size_t i;
            json_t *v;
            json_array_foreach(ref, i, v)
            {
                const char *s = json_string_value(v);
                size_t len = json_string_length(v);
                if (s && clean((const unsigned char *)s, len) && !memchr(s, '\n', len))
                    CHECK(has_line(buf_ptr(&out), buf_len(&out), s, len));
            }
        }
        buf_init(&tight, buf_len(&out));
        CHECK(extract_json(in, size, &tight) == 0);
        buf_cleanup(&tight);
        if (buf_len(&out) > 0) {
            buf_init(&tight, buf_len(&out) - 1);
            CHECK(extract_json(in, size, &tight) == ERR_LIMIT);
            buf_cleanup(&tight);
        }
    }
    json_decref(ref);
    buf_cleanup(&out);
    return 0;
}
