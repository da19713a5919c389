/* SPDX-License-Identifier: MIT */
/*
 * fuzz_extract_docx_xml: the DOCX text walker (knowledge/extract_docx.c, extract_docx_xml())
 * on any bytes taken as a word/document.xml: libxml2's parse with our options, then our walk
 * of the tree. Checks:
 *   - the result is 0 or ERR_INVALID (the 4 MiB cap is never reached by libFuzzer inputs);
 *   - the text is clean (valid UTF-8, no NUL, no CR, no control character but TAB and LF);
 *   - it grows by at most 3 bytes per input byte: an entity is never expanded (billion
 *     laughs), and a character reference, a tab, a break or a paragraph's blank line is never
 *     longer than the markup that asks for it;
 *   - it is appended: with text already in 'out', the same run gives that text followed by
 *     exactly the same bytes (the paragraph breaks look only at what this call wrote), which
 *     also checks that the run is deterministic;
 *   - the cap of 'out' is exact (its own length fits, one byte less is ERR_LIMIT);
 *   - the input, when it is clean text that XML takes as character data, wrapped into a
 *     document as two runs of a paragraph separated by w:tab, followed by a paragraph that
 *     holds it once more as deleted text, comes out as "input TAB input" ended by one blank
 *     line (line ends added only up to two), and nothing of the deleted copy.
 * Pure: no I/O (no DTD or entity is ever loaded; only glibc's iconv may open its gconv modules
 * for a declared encoding); all memory is released, on errors too.
 */
#include "../../src/core/buf.h"
#include "../../src/core/err.h"
#include "../../src/knowledge/extract_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_NAME "fuzz_extract_docx_xml"
#include "fuzz_text.h"

#define CAP ((size_t)1 << 22)
#define PREFIX "earlier text\n\n"

/*
 * Whether the clean 'data' can stand as the character data of an element as it is: no '<'
 * and no '&' (markup), no "]]>" (not allowed in content), and no U+FFFE or U+FFFF (not XML
 * characters; clean() already refuses the controls XML refuses).
 */
static bool char_data(const uint8_t *data, size_t size)
{
    if (!clean(data, size))
        return false;
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '<' || data[i] == '&')
            return false;
        if (i + 2 < size && data[i] == ']' && data[i + 1] == ']' && data[i + 2] == '>')
            return false;
        if (i + 2 < size && data[i] == 0xEF && data[i + 1] == 0xBF &&
            (data[i + 2] == 0xBE || data[i + 2] == 0xBF))
            return false;
    }
    return true;
}

/* A document whose text must be 'data' TAB 'data' and a blank line (see the header). */
static void wrap(const uint8_t *data, size_t size, struct buf *doc)
{
    CHECK(buf_appends(doc, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                           "<w:document xmlns:w=\"http://schemas.openxmlformats.org/"
                           "wordprocessingml/2006/main\"><w:body><w:p><w:pPr><w:tabs>"
                           "<w:tab w:val=\"left\" w:pos=\"720\"/></w:tabs></w:pPr><w:r>"
                           "<w:t xml:space=\"preserve\">") == 0);
    CHECK(buf_append(doc, data, size) == 0);
    CHECK(buf_appends(doc, "</w:t><w:tab/><w:t>") == 0);
    CHECK(buf_append(doc, data, size) == 0);
    CHECK(buf_appends(doc, "</w:t></w:r></w:p><w:p><w:del w:id=\"1\" w:author=\"x\"><w:r>"
                           "<w:delText>") == 0);
    CHECK(buf_append(doc, data, size) == 0);
    CHECK(buf_appends(doc, "</w:delText></w:r></w:del></w:p><w:sectPr/></w:body>"
                           "</w:document>") == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    const size_t plen = sizeof(PREFIX) - 1;
    struct buf out, again, tight;
    int rc;

    buf_init(&out, CAP);
    rc = extract_docx_xml(in, size, &out);
    CHECK(rc == 0 || rc == ERR_INVALID);
    if (rc == 0) {
        CHECK(clean((const unsigned char *)buf_ptr(&out), buf_len(&out)));
        CHECK(buf_len(&out) <= 3 * size);

        buf_init(&again, CAP);
        CHECK(buf_appends(&again, PREFIX) == 0);
        CHECK(extract_docx_xml(in, size, &again) == 0);
        CHECK(buf_len(&again) == plen + buf_len(&out));
        CHECK(memcmp(buf_ptr(&again), PREFIX, plen) == 0);
        CHECK(memcmp(buf_ptr(&again) + plen, buf_ptr(&out), buf_len(&out)) == 0);
        buf_cleanup(&again);

        buf_init(&tight, buf_len(&out));
        CHECK(extract_docx_xml(in, size, &tight) == 0);
        buf_cleanup(&tight);
        if (buf_len(&out) > 0) {
            buf_init(&tight, buf_len(&out) - 1);
            CHECK(extract_docx_xml(in, size, &tight) == ERR_LIMIT);
            buf_cleanup(&tight);
        }
    }
    buf_cleanup(&out);

    if (char_data(data, size)) {
        struct buf doc, want;
        size_t lfs = 0;

        buf_init(&doc, CAP);
        buf_init(&want, CAP);
        buf_init(&out, CAP);
        wrap(data, size, &doc);
        CHECK(buf_append(&want, data, size) == 0);
        CHECK(buf_appends(&want, "\t") == 0);
        CHECK(buf_append(&want, data, size) == 0);
        /* The paragraph's end tops the line ends up to two; the TAB stops the count. */
        while (lfs < 2 && lfs < size && data[size - 1 - lfs] == '\n')
            lfs++;
        CHECK(buf_append(&want, "\n\n", 2 - lfs) == 0);
        CHECK(extract_docx_xml(buf_ptr(&doc), buf_len(&doc), &out) == 0);
        CHECK(buf_len(&out) == buf_len(&want));
        CHECK(memcmp(buf_ptr(&out), buf_ptr(&want), buf_len(&want)) == 0);
        buf_cleanup(&out);
        buf_cleanup(&want);
        buf_cleanup(&doc);
    }
    return 0;
}
