/* SPDX-License-Identifier: MIT */
/*
 * extract_int.h: what the files of knowledge/extract share and nobody else uses: the UTF-8
 * cleaner of extract_text.c, the DOCX reader of extract_docx.c, and the reasons a child
 * process gives, as its exit status, for refusing a file.
 */
#ifndef WORKFORCE_KNOWLEDGE_EXTRACT_INT_H
#define WORKFORCE_KNOWLEDGE_EXTRACT_INT_H

#include "../core/buf.h"

#include <stdbool.h>
#include <stddef.h>

/*
 * Exit statuses of an extraction child that ran our own code (pdftotext uses 1-99 for its
 * own; these start above that). extract.c turns each into a fixed client-safe message.
 */
enum extract_reason {
    EXTRACT_R_OK = 0,
    EXTRACT_R_UNREADABLE = 100, /* the file could not be opened or read */
    EXTRACT_R_NOT_TEXT,         /* not UTF-8 text */
    EXTRACT_R_BAD_JSON,         /* not JSON */
    EXTRACT_R_NOT_DOCX,         /* not a ZIP, or no word/document.xml in it */
    EXTRACT_R_BAD_XML,          /* word/document.xml is not well-formed */
    EXTRACT_R_ZIP_TOO_BIG,      /* the entries unzip to more than max_unzipped */
    EXTRACT_R_ZIP_TOO_MANY,     /* more entries than EXTRACT_DOCX_MAX_ENTRIES */
    EXTRACT_R_ENCRYPTED,        /* an encrypted ZIP entry */
    EXTRACT_R_TEXT_LIMIT,       /* more text than max_text */
    EXTRACT_R_NOMEM,            /* memory refused (RLIMIT_AS) */
    EXTRACT_R_NO_TOOL           /* exec of the external tool failed */
};

/* The most entries a DOCX may have (Word writes a few dozen, plus one per image). */
#define EXTRACT_DOCX_MAX_ENTRIES 10000

/* ---- extract_text.c ---- */

/* How many invalid UTF-8 sequences (maximal subparts, as U+FFFD replaces them) 'p' holds. */
size_t extract_utf8_bad(const char *p, size_t n);
/* Whether 'n' bytes with 'bad' invalid sequences still count as UTF-8 text. */
bool extract_utf8_mostly(size_t bad, size_t n);
/* Append 'p' cleaned: U+FFFD for invalid UTF-8, CRLF and CR as LF, controls but TAB/LF out. */
int extract_put_clean(struct buf *out, const char *p, size_t n);

/* ---- extract_docx.c ---- */

/* The text of a DOCX file in memory (run in the helper): 0 or an EXTRACT_R_* reason. */
int extract_docx(const char *data, size_t n, size_t max_unzipped, struct buf *out);
/* The text of a word/document.xml: 0, ERR_INVALID (not well-formed), ERR_LIMIT, ERR_NOMEM. */
int extract_docx_xml(const char *xml, size_t n, struct buf *out);

#endif
