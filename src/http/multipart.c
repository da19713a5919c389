/* SPDX-License-Identifier: MIT */
/*
 * multipart.c: the incremental multipart/form-data parser. The body is treated as if it began
 * with "\r\n", so every delimiter is "\r\n--<boundary>". Boundaries cannot contain CR (RFC
 * 2046 bchars), so a partial match can only restart at a CR: when a match fails, the bytes
 * held back are the delimiter's own prefix and are handed on as data, and matching restarts
 * only if the failing byte is CR. That makes the match exact across piece boundaries with no
 * buffering of body bytes.
 */
#include "multipart.h"

#include "../core/err.h"

#include <stdint.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum {
    S_PREAMBLE, /* before the first delimiter: ignored */
    S_AFTER,    /* just after a delimiter: "--" (end) or transport padding then CRLF */
    S_DASH2,    /* after the first '-' of "--" */
    S_LF,       /* after the CR of the CRLF that opens a part */
    S_HEAD,     /* part headers, up to the blank line */
    S_BODY,     /* part body, up to the next delimiter */
    S_END       /* after the closing delimiter: the epilogue is ignored */
};

#define HEAD_CAP (16u * 1024)

/* Copy the value of parameter 'key' of a header value ("form-data; name=\"x\"") into 'out'. */
static bool param(const char *v, const char *key, char *out, size_t outn)
{
    size_t kl = strlen(key);
    const char *p = v;
    while ((p = strcasestr(p, key)) != NULL) {
        const char *q = p + kl;
        bool at_start = p == v || p[-1] == ';' || p[-1] == ' ' || p[-1] == '\t';
        p = q;
        while (*q == ' ' || *q == '\t')
            q++;
        if (!at_start || *q != '=')
            continue;
        q++;
        while (*q == ' ' || *q == '\t')
            q++;
        size_t o = 0;
        if (*q == '"') {
            q++;
            while (*q && *q != '"') {
                if (*q == '\\' && q[1])
                    q++;
                if (o + 1 < outn)
                    out[o++] = *q;
                q++;
            }
            if (*q != '"')
                return false;
        } else {
            while (*q && *q != ';' && *q != ' ' && *q != '\t') {
                if (o + 1 < outn)
                    out[o++] = *q;
                q++;
            }
        }
        out[o] = '\0';
        return true;
    }
    return false;
}

/* Parse the header block in m->head_ (NUL-terminated, lines ending in CRLF). */
static int parse_headers(struct multipart *m)
{
    char *line = (char *)(uintptr_t)buf_ptr(&m->head_);
    bool disposition = false;

    m->name_[0] = m->filename_[0] = m->ctype_[0] = '\0';
    m->has_filename_ = m->has_ctype_ = false;
    while (*line) {
        char *eol = strstr(line, "\r\n");
        char *colon;
        if (!eol)
            return ERR_INVALID;
        *eol = '\0';
        if (*line == '\0')
            break;
        colon = strchr(line, ':');
        if (!colon)
            return ERR_INVALID;
        *colon = '\0';
        colon++;
        while (*colon == ' ' || *colon == '\t')
            colon++;
        if (strcasecmp(line, "Content-Disposition") == 0) {
            if (strncasecmp(colon, "form-data", 9) != 0)
                return ERR_INVALID;
            disposition = true;
            param(colon, "name", m->name_, sizeof(m->name_));
            m->has_filename_ = param(colon, "filename", m->filename_, sizeof(m->filename_));
        } else if (strcasecmp(line, "Content-Type") == 0) {
            snprintf(m->ctype_, sizeof(m->ctype_), "%s", colon);
            m->has_ctype_ = true;
        }
        line = eol + 2;
    }
    return disposition ? 0 : ERR_INVALID;
}

/* Take the boundary parameter of a multipart/form-data Content-Type. */
int multipart_init(struct multipart *m, const char *content_type)
{
    char boundary[72];
    memset(m, 0, sizeof(*m));
    buf_init(&m->head_, HEAD_CAP);
    if (!content_type || strncasecmp(content_type, "multipart/form-data", 19) != 0 ||
        !param(content_type, "boundary", boundary, sizeof(boundary)) || !boundary[0] ||
        strlen(boundary) > 70)
        return ERR_INVALID;
    for (const char *b = boundary; *b; b++) {
        if (*b == '\r' || *b == '\n')
            return ERR_INVALID;
    }
    m->dlen_ = (size_t)snprintf(m->delim_, sizeof(m->delim_), "\r\n--%s", boundary);
    m->match_ = 2; /* the body is read as if it began with CRLF */
    m->state_ = S_PREAMBLE;
    return 0;
}

/* Free the header buffer. */
void multipart_cleanup(struct multipart *m)
{
    buf_cleanup(&m->head_);
}

static int emit(struct multipart *m, const struct multipart_cb *cb, const char *p, size_t n)
{
    if (n == 0 || m->state_ != S_BODY)
        return 0;
    return cb->data(cb->ud, p, n);
}

/*
 * Feed 'n' bytes. Errors are sticky: after a non-zero return every later call returns it.
 */
int multipart_feed(struct multipart *m, const char *p, size_t n, const struct multipart_cb *cb)
{
    size_t i = 0, run = 0;
    int rc = m->rc_;

    while (!rc && i < n) {
        char c = p[i];
        switch (m->state_) {
        case S_PREAMBLE:
        case S_BODY:
            if (c == m->delim_[m->match_]) {
                if (m->match_ == 0 && m->state_ == S_BODY)
                    rc = emit(m, cb, p + run, i - run);
                m->match_++;
                i++;
                if (m->match_ == m->dlen_) {
                    m->match_ = 0;
                    if (m->state_ == S_BODY && !rc)
                        rc = cb->end(cb->ud);
                    m->state_ = S_AFTER;
                }
                run = i;
                continue;
            }
            if (m->match_ > 0) {
                /* The held-back bytes were data after all: they equal the delimiter's prefix. */
                if (m->state_ == S_BODY)
                    rc = emit(m, cb, m->delim_, m->match_);
                m->match_ = 0;
                if (c == m->delim_[0]) {
                    m->match_ = 1;
                    i++;
                    run = i;
                    continue;
                }
                run = i;
            }
            i++;
            break;
        case S_AFTER:
            i++;
            if (c == '-')
                m->state_ = S_DASH2;
            else if (c == '\r')
                m->state_ = S_LF;
            else if (c != ' ' && c != '\t')
                rc = ERR_INVALID;
            break;
        case S_DASH2:
            i++;
            if (c == '-')
                m->state_ = S_END;
            else
                rc = ERR_INVALID;
            break;
        case S_LF:
            i++;
            if (c != '\n') {
                rc = ERR_INVALID;
                break;
            }
            buf_reset(&m->head_);
            m->state_ = S_HEAD;
            break;
        case S_HEAD: {
            size_t len;
            i++;
            rc = buf_append(&m->head_, &c, 1);
            if (rc)
                break;
            len = buf_len(&m->head_);
            if ((len == 2 && memcmp(buf_ptr(&m->head_), "\r\n", 2) == 0) ||
                (len >= 4 && memcmp(buf_ptr(&m->head_) + len - 4, "\r\n\r\n", 4) == 0)) {
                struct multipart_part part;
                rc = parse_headers(m);
                if (rc)
                    break;
                part.name = m->name_;
                part.filename = m->has_filename_ ? m->filename_ : NULL;
                part.content_type = m->has_ctype_ ? m->ctype_ : NULL;
                m->state_ = S_BODY;
                m->match_ = 0;
                rc = cb->part(cb->ud, &part);
                run = i;
            }
            break;
        }
        case S_END:
            i = n;
            break;
        }
    }
    if (!rc && m->state_ == S_BODY && m->match_ == 0 && run < n)
        rc = emit(m, cb, p + run, n - run);
    m->rc_ = rc;
    return rc;
}

/* 0 when the closing delimiter has been seen, else ERR_INVALID (a cut or malformed body). */
int multipart_finish(struct multipart *m)
{
    if (m->rc_)
        return m->rc_;
    return m->state_ == S_END ? 0 : ERR_INVALID;
}
