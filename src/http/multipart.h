/* SPDX-License-Identifier: MIT */
/*
 * multipart: an incremental multipart/form-data parser (RFC 7578). Pure: it is fed the body in
 * pieces of any size, keeps only a capped header buffer and a little match state, and calls
 * back for each part's start, bytes and end. Part bodies are never buffered, so a 50 MB file
 * streams straight to disk. Fuzzed (tests/fuzz/fuzz_multipart.c).
 */
#ifndef WORKFORCE_MULTIPART_H
#define WORKFORCE_MULTIPART_H

#include "../core/buf.h"

#include <stdbool.h>
#include <stddef.h>

/* The most bytes of a part's file name kept (longer ones are cut, maybe inside a character). */
#define MULTIPART_FILENAME_MAX 511

struct multipart_part {
    const char *name;         /* form field name ("" when absent) */
    const char *filename;     /* NULL when the part is not a file */
    const char *content_type; /* NULL when not given */
};

struct multipart_cb {
    int (*part)(void *ud, const struct multipart_part *p); /* non-zero stops */
    int (*data)(void *ud, const char *p, size_t n);
    int (*end)(void *ud);
    void *ud;
};

/* Members are private: use the functions. */
struct multipart {
    char delim_[80]; /* "\r\n--" + boundary */
    size_t dlen_;
    size_t match_; /* bytes of delim_ matched so far */
    int state_;
    struct buf head_; /* the headers of the current part (capped) */
    char name_[256];
    char filename_[MULTIPART_FILENAME_MAX + 1];
    char ctype_[256];
    bool has_filename_;
    bool has_ctype_;
    int rc_;
};

/* Take the boundary from a Content-Type header; ERR_INVALID when it is not multipart/form-data. */
int multipart_init(struct multipart *m, const char *content_type);
void multipart_cleanup(struct multipart *m);
/* Feed 'n' bytes; 0, ERR_INVALID (malformed), ERR_LIMIT (headers too long) or a callback's rc. */
int multipart_feed(struct multipart *m, const char *p, size_t n, const struct multipart_cb *cb);
/* End of body: 0 when the closing boundary was seen, else ERR_INVALID. */
int multipart_finish(struct multipart *m);

#endif
