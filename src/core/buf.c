/* SPDX-License-Identifier: MIT */
/*
 * buf: capped growable buffer. Growth doubles; the cap is checked before any allocation, so a
 * client can never make us allocate more than the cap it is held to. Pointers from buf_ptr()
 * are invalid after any append (the memory may move).
 */
#include "buf.h"

#include "err.h"
#include "mem.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Make 'b' empty with a hard cap of 'limit' bytes of content. */
void buf_init(struct buf *b, size_t limit)
{
    b->ptr_ = NULL;
    b->len_ = 0;
    b->cap_ = 0;
    b->limit_ = limit;
}

/* Free the memory of 'b'; it is empty and usable again. */
void buf_cleanup(struct buf *b)
{
    free(b->ptr_);
    b->ptr_ = NULL;
    b->len_ = 0;
    b->cap_ = 0;
}

/* Drop the content of 'b', keeping its memory. */
void buf_reset(struct buf *b)
{
    b->len_ = 0;
    if (b->ptr_)
        b->ptr_[0] = '\0';
}

/* See buf.h. */
void buf_truncate(struct buf *b, size_t len)
{
    if (len >= b->len_)
        return;
    b->len_ = len;
    b->ptr_[len] = '\0';
}

/*
 * Append 'n' bytes at 'p'. Returns 0, ERR_LIMIT when the content would pass the cap (nothing
 * is appended), or ERR_NOMEM when the memory is refused.
 */
int buf_append(struct buf *b, const void *p, size_t n)
{
    size_t want;

    if (n > b->limit_ || b->len_ > b->limit_ - n)
        return ERR_LIMIT;
    want = b->len_ + n + 1;
    if (want > b->cap_) {
        size_t cap = b->cap_ ? b->cap_ : 256;
        char *np;
        while (cap < want)
            cap *= 2;
        if (cap > b->limit_ + 1)
            cap = b->limit_ + 1;
        np = mem_try_alloc(cap);
        if (!np)
            return ERR_NOMEM;
        if (b->len_)
            memcpy(np, b->ptr_, b->len_);
        free(b->ptr_);
        b->ptr_ = np;
        b->cap_ = cap;
    }
    if (n)
        memcpy(b->ptr_ + b->len_, p, n);
    b->len_ += n;
    b->ptr_[b->len_] = '\0';
    return 0;
}

/* Append a C string. */
int buf_appends(struct buf *b, const char *s)
{
    return buf_append(b, s, strlen(s));
}

/* Append formatted text; same results as buf_append(). */
int buf_appendf(struct buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    int n;
    int rc;
    char *big;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return ERR_INTERNAL;
    if ((size_t)n < sizeof(small))
        return buf_append(b, small, (size_t)n);
    big = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    rc = buf_append(b, big, (size_t)n);
    free(big);
    return rc;
}

/* The content, NUL-terminated; "" when nothing was appended. Borrowed. */
const char *buf_ptr(const struct buf *b)
{
    return b->ptr_ ? b->ptr_ : "";
}

/* Length of the content in bytes. */
size_t buf_len(const struct buf *b)
{
    return b->len_;
}

/*
 * Move the content out: the caller owns the returned NUL-terminated string and frees it with
 * free(); 'b' is left empty. '*plen' (optional) receives the length.
 */
char *buf_take(struct buf *b, size_t *plen)
{
    char *p = b->ptr_ ? b->ptr_ : xstrdup("");
    if (plen)
        *plen = b->len_;
    b->ptr_ = NULL;
    b->len_ = 0;
    b->cap_ = 0;
    return p;
}

/* See buf.h. */
int buf_append_urlenc(struct buf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        unsigned char c = *p;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~') {
            rc = buf_append(b, p, 1);
        } else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            rc = buf_append(b, esc, 3);
        }
    }
    return rc;
}

/* See buf.h. */
int buf_form_pair(struct buf *b, const char *k, const char *v)
{
    int rc = buf_len(b) ? buf_append(b, "&", 1) : 0;
    if (!rc)
        rc = buf_append_urlenc(b, k);
    if (!rc)
        rc = buf_append(b, "=", 1);
    if (!rc)
        rc = buf_append_urlenc(b, v);
    return rc;
}
