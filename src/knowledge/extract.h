/* SPDX-License-Identifier: MIT */
/*
 * knowledge/extract: the text of uploaded files (contract §11), and the chunks the index embeds.
 *
 *   extract_detect()   what a file is, by its first bytes first and by its name second;
 *   extract_file()     its text, extracted in a CHILD PROCESS under rlimits and a wall-clock
 *                      timeout: a crash, hang or bomb in a parser fails that document only;
 *   extract_text(), extract_html(), extract_json()
 *                      the pure extractors of the text types (no I/O; fuzzed);
 *   chunk_text()       ~N-word chunks along paragraphs and sentences, with overlap and pages.
 *
 * Every text handed out is valid UTF-8 with LF line ends and no control characters but TAB
 * and LF. The design (what runs where, what the limits are) is in extract.c.
 */
#ifndef WORKFORCE_KNOWLEDGE_EXTRACT_H
#define WORKFORCE_KNOWLEDGE_EXTRACT_H

#include "../core/buf.h"
#include "../core/err.h"

#include <stdatomic.h>
#include <stddef.h>

enum extract_type {
    EXTRACT_UNKNOWN, /* binary, or a kind we do not read: 415 unsupported_file_type */
    EXTRACT_TXT,
    EXTRACT_MD,
    EXTRACT_HTML,
    EXTRACT_CSV,
    EXTRACT_JSON,
    EXTRACT_PDF,
    EXTRACT_DOCX
};

/*
 * The type of a file from its first 'n' bytes 'head' (a few KiB: the larger, the surer a DOCX),
 * then its 'filename' and declared 'content_type' (both may be NULL). Content wins: a PDF
 * named .txt is a PDF, and text named .pdf is text; the name only picks among text types.
 */
enum extract_type extract_detect(const char *filename, const char *content_type,
                                 const unsigned char *head, size_t n);
/* The media type of 't' ("application/pdf"); "application/octet-stream" for EXTRACT_UNKNOWN. */
const char *extract_type_mime(enum extract_type t);
/* A short name of 't' for messages and logs ("PDF", "DOCX", "text"). */
const char *extract_type_name(enum extract_type t);

/* One page of an extracted text: the bytes [off, off + len) of extract_result.text. */
struct extract_page {
    int page; /* 1-based */
    size_t off;
    size_t len;
};

/* What extract_file() hands back. Owned by the caller: extract_result_cleanup(). */
struct extract_result {
    char *text; /* NUL-terminated UTF-8 */
    size_t len;
    struct extract_page *pages; /* PDF only; NULL and 0 for types without pages */
    size_t npages;
};

/* Limits of one extraction; every field must be positive. */
struct extract_limits {
    long timeout_ms;     /* wall clock, from fork to the end of the child */
    size_t max_memory;   /* address space the extractor may add (RLIMIT_AS) */
    size_t max_text;     /* bytes of text the child may send back */
    size_t max_unzipped; /* DOCX: entries' total uncompressed size */
    /* When not NULL and set (by another thread), the child is killed within 200 ms and
     * extract_file() answers ERR_CONFLICT ("cancelled"). */
    const atomic_bool *cancel;
    /* The binary to exec as the extraction helper; NULL: this process's own (/proc/self/exe). */
    const char *helper;
};

/* Defaults: 60 s, 512 MiB, 16 MiB of text, 256 MiB unzipped. */
#define EXTRACT_LIMITS_DEFAULT                                                                     \
    {                                                                                              \
        60000, (size_t)512 << 20, (size_t)16 << 20, (size_t)256 << 20, NULL, NULL                  \
    }

/* Extract the text of the file at 'path' as type 't' in a child process; see extract.c. */
int extract_file(const char *path, enum extract_type t, const struct extract_limits *lim,
                 struct extract_result *out, struct err *e);
/*
 * The extraction helper: `workforce extract-helper TYPE MAX_TEXT MAX_UNZIPPED MAX_INPUT`, run by
 * extract_file() in a fresh process with the file on stdin. Enters the seccomp allow-list, reads
 * stdin, writes the text to stdout; exits 0 or with an EXTRACT_R_* reason. Never returns.
 */
void extract_helper_main(int argc, char **argv) __attribute__((noreturn));
/* Free what 'r' holds; 'r' is empty again. */
void extract_result_cleanup(struct extract_result *r);

/* Pure extractors: 0, ERR_INVALID (undecodable), ERR_LIMIT ('out' is full) or ERR_NOMEM. */
int extract_text(const char *in, size_t n, struct buf *out); /* TXT, MD, CSV as text */
int extract_html(const char *in, size_t n, struct buf *out); /* tags, scripts out; entities */
int extract_json(const char *in, size_t n, struct buf *out); /* keys and values, line by line */

/* ---- Chunks ---- */

/* One chunk: the bytes [off, off + len) of the text; 'page' of its first byte, 0 if none. */
struct chunk {
    size_t off;
    size_t len;
    int page;
};

/* Split 'text' into chunks of about 'target_words' words; see chunk.c. */
int chunk_text(const char *text, size_t len, const struct extract_page *pages, size_t npages,
               unsigned target_words, unsigned overlap_words, struct chunk **out, size_t *n);

/*
 * The sentences of 'text' by chunk_text()'s rule (chunk.c DESIGN), in order: each a byte range
 * from its first word's start to its last word's end ('page' 0). Fills at most 'max' of 'out'
 * and returns how many there are in all.
 */
size_t chunk_sentences(const char *text, size_t len, struct chunk *out, size_t max);

#endif
