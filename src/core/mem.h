/* SPDX-License-Identifier: MIT */
/*
 * mem: allocation that never returns NULL (x*alloc log and abort on exhaustion, as Redis
 * zmalloc does), a try-variant for client-sized buffers, and the per-request arena. Test
 * builds can make the Nth allocation fail to exercise error paths.
 */
#ifndef WORKFORCE_MEM_H
#define WORKFORCE_MEM_H

#include <stddef.h>

void *xmalloc(size_t n);            /* never NULL; caller frees with free() */
void *xcalloc(size_t n, size_t sz); /* zeroed; never NULL */
void *xrealloc(void *p, size_t n);  /* old pointer invalid after the call */
char *xstrdup(const char *s);       /* caller frees with free() */
char *xstrndup(const char *s, size_t n);
void *mem_try_alloc(size_t n); /* NULL when refused; for client-sized buffers */

/* Test hook: make the 'n'th mem_try_alloc/arena block allocation from now fail (0 = off). */
void mem_fail_after(long n);

/* An arena: a chain of blocks freed all at once. Members are private: use the functions. */
struct arena_block;
struct arena {
    struct arena_block *head_;
    size_t used_;  /* bytes used in head_ */
    size_t total_; /* bytes handed out, for limits and tests */
};

void arena_init(struct arena *a);              /* empty arena, no allocation yet */
void arena_cleanup(struct arena *a);           /* frees every block; the arena is empty again */
void *arena_alloc(struct arena *a, size_t n);  /* 16-byte aligned, never NULL */
void *arena_calloc(struct arena *a, size_t n); /* zeroed */
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t arena_total(const struct arena *a); /* bytes handed out so far */

#endif
