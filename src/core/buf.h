/* SPDX-License-Identifier: MIT */
/*
 * buf: a growable byte buffer with a hard cap (curl dynbuf). Appending past the cap fails with
 * ERR_LIMIT and leaves the content as it was. The data is always NUL-terminated.
 */
#ifndef WORKFORCE_BUF_H
#define WORKFORCE_BUF_H

#include <stddef.h>

/* Members are private: use the functions. */
struct buf {
    char *ptr_;
    size_t len_;
    size_t cap_;   /* allocated */
    size_t limit_; /* hard maximum of len_ */
};

void buf_init(struct buf *b, size_t limit);             /* empty, no allocation */
void buf_cleanup(struct buf *b);                        /* frees; empty again */
void buf_reset(struct buf *b);                          /* length 0, memory kept */
int buf_append(struct buf *b, const void *p, size_t n); /* 0, ERR_LIMIT or ERR_NOMEM */
int buf_appendf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_appends(struct buf *b, const char *s); /* append a C string */
/* Append 's' percent-encoded for a URL query or a form body (RFC 3986: every byte but
 * A-Z a-z 0-9 - . _ ~ becomes %XX). */
int buf_append_urlenc(struct buf *b, const char *s);
/* "k=v" of a form body, both URL-encoded, after an '&' unless it is the first. */
int buf_form_pair(struct buf *b, const char *k, const char *v);
const char *buf_ptr(const struct buf *b);     /* "" when empty */
void buf_truncate(struct buf *b, size_t len); /* keep the first 'len' bytes (if more) */
size_t buf_len(const struct buf *b);
char *buf_take(struct buf *b, size_t *plen); /* caller frees; b is empty */

#endif
