/* SPDX-License-Identifier: MIT */
/*
 * utf8: the one UTF-8 decoder of the code base (RFC 3629: no overlong forms, no surrogates,
 * nothing past U+10FFFF). Validation at the edges, cutting at character boundaries, and the
 * replacement of invalid sequences by U+FFFD counted by maximal subparts (Unicode chapter 3,
 * as the WHATWG decoder does), and the one encoder of a code point.
 */
#ifndef WORKFORCE_UTF8_H
#define WORKFORCE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the well-formed sequence at 'p' ('n' > 0 bytes), or 0 and '*skip' (1-3) if none. */
size_t utf8_seq(const char *p, size_t n, size_t *skip);
/* True when the 'n' bytes at 's' are well-formed UTF-8 (NUL bytes allowed). */
bool utf8_valid(const char *s, size_t n);
/* The longest prefix of 's' ('n' bytes) of at most 'max' bytes that does not cut a character. */
size_t utf8_prefix(const char *s, size_t n, size_t max);
/* 'cp' (a Unicode scalar value, not a surrogate) as UTF-8 into 'out'; returns 1 to 4. */
size_t utf8_encode(uint32_t cp, char out[4]);
/* A NUL-terminated copy of 's' with every invalid sequence as U+FFFD; free() it. */
char *utf8_scrub_dup(const char *s, size_t n);

#endif
