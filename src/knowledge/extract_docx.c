/* SPDX-License-Identifier: MIT */
/*
 * extract_docx.c: the text of a Word document (Office Open XML, .docx), read with libzip and
 * libxml2, the only users of those libraries. It runs inside the extraction child of
 * extract.c, under its rlimits and timeout, and never in the server process.
 *
 * DESIGN
 * A DOCX is a ZIP, and a ZIP is a promise about sizes that an attacker writes. So:
 *   1. libzip opens the archive with ZIP_CHECKCONS (central directory and local headers must
 *      agree) and reads only the directory;
 *   2. the entry count (EXTRACT_DOCX_MAX_ENTRIES) and the sum of the declared uncompressed
 *      sizes (max_unzipped) are checked BEFORE anything is inflated: a zip bomb is refused
 *      without inflating a byte of it;
 *   3. only word/document.xml is inflated, into a buffer of its declared size plus one byte,
 *      and the read asks for no more: an entry that inflates past what it declared is refused
 *      after at most one byte too many (libzip checks the CRC of one that stops short).
 * Headers, footers, footnotes and comments live in other parts and are not read.
 *
 * word/document.xml is parsed by libxml2 with XML_PARSE_NONET and without XML_PARSE_NOENT,
 * XML_PARSE_DTDLOAD and XML_PARSE_HUGE: no network, no external DTD or entity is ever loaded,
 * entities are not substituted, and libxml2's default limits on depth, node size and entity
 * amplification hold. The walk takes text only from text and CDATA nodes under w:t and never
 * enters an entity reference, so an entity (external or internal) contributes nothing: an XXE
 * payload reads no file, and a billion laughs expands nowhere. As a last line, extract_docx()
 * installs an entity loader that refuses everything, in the child only.
 *
 * Text: w:t runs as they are, w:tab as TAB, w:br and w:cr as LF, w:noBreakHyphen as '-', a
 * blank line after each paragraph (w:p); deleted text, field codes and properties are skipped.
 */
#include "extract.h"
#include "extract_int.h"

#include "../core/err.h"
#include "../core/mem.h"

#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zip.h>

/* ---- XML ---- */

/* Whether 'n' is the WordprocessingML element 'name' (transitional or strict namespace). */
static bool is_w(const xmlNode *n, const char *name)
{
    return n->ns && n->ns->href && strstr((const char *)n->ns->href, "wordprocessingml") &&
           strcmp((const char *)n->name, name) == 0;
}

/* Elements whose content is never text: properties, deleted runs, field instructions. */
static bool is_skipped(const xmlNode *n)
{
    static const char *const skip[] = {"pPr",     "rPr",       "sectPr",   "tblPr",
                                       "tblGrid", "trPr",      "tcPr",     "del",
                                       "delText", "instrText", "moveFrom", "fldData"};

    for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++) {
        if (is_w(n, skip[i]))
            return true;
    }
    return false;
}

/* End what was written with 'want' line ends (1 or 2), unless nothing was written yet. */
static int put_break(struct buf *out, size_t start, int want)
{
    size_t len = buf_len(out);
    const char *p = buf_ptr(out);
    int have = 0;

    if (len == start)
        return 0;
    while (have < want && len - (size_t)have > start && p[len - (size_t)have - 1] == '\n')
        have++;
    return have < want ? buf_append(out, "\n\n", (size_t)(want - have)) : 0;
}

/* The text of w:t: its text and CDATA children, never an entity reference. */
static int put_run(const xmlNode *n, struct buf *out)
{
    int rc = 0;

    for (const xmlNode *c = n->children; c && !rc; c = c->next) {
        if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content)
            rc = extract_put_clean(out, (const char *)c->content, strlen((const char *)c->content));
    }
    return rc;
}

/* Write the text of the siblings from 'n' on. Depth is bounded by libxml2 (256 levels). */
static int walk(const xmlNode *n, struct buf *out, size_t start)
{
    int rc = 0;

    for (; n && !rc; n = n->next) {
        if (n->type != XML_ELEMENT_NODE || is_skipped(n))
            continue;
        if (is_w(n, "t")) {
            rc = put_run(n, out);
        } else if (is_w(n, "tab")) {
            rc = buf_append(out, "\t", 1);
        } else if (is_w(n, "br") || is_w(n, "cr")) {
            rc = buf_append(out, "\n", 1);
        } else if (is_w(n, "noBreakHyphen")) {
            rc = buf_append(out, "-", 1);
        } else {
            rc = walk(n->children, out, start);
            if (!rc && is_w(n, "p"))
                rc = put_break(out, start, 2);
        }
    }
    return rc;
}

/*
 * The text of the word/document.xml in the 'n' bytes at 'xml', appended to 'out' (see DESIGN).
 * Returns 0; ERR_INVALID when it is not well-formed XML; ERR_LIMIT when 'out' would pass its
 * cap; ERR_NOMEM. On an error 'out' may hold part of the text: discard it.
 */
int extract_docx_xml(const char *xml, size_t n, struct buf *out)
{
    /* Never NOENT, DTDLOAD, DTDATTR, XINCLUDE or HUGE: see DESIGN. */
    const int opts = XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING;
    xmlParserCtxtPtr ctxt = NULL;
    xmlDocPtr doc = NULL;
    int rc = 0;

    if (n > INT_MAX) {
        rc = ERR_LIMIT;
        goto out;
    }
    ctxt = xmlNewParserCtxt();
    if (!ctxt) {
        rc = ERR_NOMEM;
        goto out;
    }
    doc = xmlCtxtReadMemory(ctxt, xml, (int)n, "document.xml", NULL, opts);
    if (!doc) {
        const xmlError *xe = xmlCtxtGetLastError(ctxt);
        rc = xe && xe->code == XML_ERR_NO_MEMORY ? ERR_NOMEM : ERR_INVALID;
        goto out;
    }
    rc = walk(xmlDocGetRootElement(doc), out, buf_len(out));
out:
    xmlFreeDoc(doc);
    xmlFreeParserCtxt(ctxt);
    return rc;
}

/* ---- ZIP ---- */

/* The entity loader of the child: nothing is ever loaded (see DESIGN). */
static xmlParserInputPtr no_entities(const char *url, const char *id, xmlParserCtxtPtr ctxt)
{
    (void)url;
    (void)id;
    (void)ctxt;
    return NULL;
}

/* The reason for a libzip error code. */
static int zip_reason(int zerr)
{
    switch (zerr) {
    case ZIP_ER_OPEN:
    case ZIP_ER_READ:
    case ZIP_ER_SEEK:
    case ZIP_ER_NOENT:
        return EXTRACT_R_UNREADABLE;
    case ZIP_ER_MEMORY:
        return EXTRACT_R_NOMEM;
    case ZIP_ER_NOPASSWD:
    case ZIP_ER_WRONGPASSWD:
    case ZIP_ER_ENCRNOTSUPP:
        return EXTRACT_R_ENCRYPTED;
    default:
        return EXTRACT_R_NOT_DOCX;
    }
}

/*
 * The text of the DOCX file held in the 'n' bytes at 'data' (read from memory: the extraction
 * helper opens no file), appended to 'out' (see DESIGN). Meant for the extraction helper: it
 * sets a process-wide libxml2 entity loader. 'max_unzipped' caps the
 * declared uncompressed size of all entries together. Returns 0 or an EXTRACT_R_* reason
 * (EXTRACT_R_TEXT_LIMIT when 'out' is full). On an error 'out' may hold part of the text.
 */
int extract_docx(const char *data, size_t n, size_t max_unzipped, struct buf *out)
{
    zip_source_t *src = NULL;
    zip_error_t zer;
    zip_t *z = NULL;
    zip_file_t *f = NULL;
    zip_stat_t st;
    zip_int64_t nent, idx;
    zip_uint64_t total = 0, size;
    char *xml = NULL;
    size_t got = 0;
    int zerr = 0, rc = 0;

    xmlSetExternalEntityLoader(no_entities);
    zip_error_init(&zer);
    src = zip_source_buffer_create(data, n, 0, &zer);
    if (src)
        z = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &zer);
    if (!z) {
        zerr = zip_error_code_zip(&zer);
        rc = zip_reason(zerr ? zerr : ZIP_ER_MEMORY);
        if (src)
            zip_source_free(src);
        zip_error_fini(&zer);
        goto out;
    }
    zip_error_fini(&zer);
    nent = zip_get_num_entries(z, 0);
    if (nent < 0 || nent > EXTRACT_DOCX_MAX_ENTRIES) {
        rc = EXTRACT_R_ZIP_TOO_MANY;
        goto out;
    }
    /* Every declared size, before anything is inflated. */
    for (zip_int64_t i = 0; i < nent; i++) {
        if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
            rc = EXTRACT_R_NOT_DOCX;
            goto out;
        }
        if (st.size > max_unzipped - total) {
            rc = EXTRACT_R_ZIP_TOO_BIG;
            goto out;
        }
        total += st.size;
    }
    idx = zip_name_locate(z, "word/document.xml", ZIP_FL_NOCASE);
    if (idx < 0 || zip_stat_index(z, (zip_uint64_t)idx, 0, &st) != 0) {
        rc = EXTRACT_R_NOT_DOCX;
        goto out;
    }
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE) {
        rc = EXTRACT_R_ENCRYPTED;
        goto out;
    }
    size = st.size; /* at most max_unzipped, checked above */
    f = zip_fopen_index(z, (zip_uint64_t)idx, 0);
    if (!f) {
        rc = zip_reason(zip_error_code_zip(zip_get_error(z)));
        goto out;
    }
    xml = mem_try_alloc((size_t)size + 1);
    if (!xml) {
        rc = EXTRACT_R_NOMEM;
        goto out;
    }
    /* Ask for one byte more than declared: getting it means the entry lied. */
    while (got < (size_t)size + 1) {
        zip_int64_t r = zip_fread(f, xml + got, (zip_uint64_t)size + 1 - got);
        if (r < 0) {
            rc = zip_reason(zip_error_code_zip(zip_file_get_error(f)));
            goto out;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    if (got > (size_t)size) {
        rc = EXTRACT_R_ZIP_TOO_BIG;
        goto out;
    }
    switch (extract_docx_xml(xml, got, out)) {
    case 0:
        break;
    case ERR_LIMIT:
        rc = EXTRACT_R_TEXT_LIMIT;
        break;
    case ERR_NOMEM:
        rc = EXTRACT_R_NOMEM;
        break;
    default:
        rc = EXTRACT_R_BAD_XML;
        break;
    }
out:
    free(xml);
    if (f)
        zip_fclose(f);
    if (z)
        zip_discard(z);
    return rc;
}
