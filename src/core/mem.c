/* SPDX-License-Identifier: MIT */
/*
 * mem: the x*alloc family and the arena. Arena blocks are 8 KiB or the request, whichever is
 * larger; a large request gets a block of its own placed after the head so that the head's
 * remaining space is not wasted.
 */
#include "mem.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_SIZE 8192
#define ALIGN 16

struct arena_block {
    struct arena_block *next;
    size_t size;
    _Alignas(16) unsigned char data[];
};

static atomic_long fail_countdown;

static void oom(size_t n)
{
    fprintf(stderr, "workforce: out of memory allocating %zu bytes\n", n);
    abort();
}

/* Set the fault hook: the 'n'th mem_try_alloc from now returns NULL. 0 disables it. */
void mem_fail_after(long n)
{
    atomic_store(&fail_countdown, n);
}

static int should_fail(void)
{
    long v = atomic_load(&fail_countdown);
    if (v <= 0)
        return 0;
    v = atomic_fetch_sub(&fail_countdown, 1);
    return v == 1;
}

/* Allocate 'n' bytes or abort. The caller frees with free(). */
void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

/* Allocate 'n' zeroed elements of 'sz' bytes or abort. */
void *xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p)
        oom(n * sz);
    return p;
}

/* Resize 'p' to 'n' bytes or abort; 'p' is invalid afterwards. */
void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

/* Copy 's' to the heap; the caller frees with free(). */
char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

/* Copy 'n' bytes of 's' plus a NUL to the heap; the caller frees with free(). */
char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/*
 * Allocate 'n' bytes for a buffer whose size a client chose. Returns NULL when the system (or
 * the test hook) refuses, so the caller can answer with an error instead of dying.
 */
void *mem_try_alloc(size_t n)
{
    if (should_fail())
        return NULL;
    return malloc(n ? n : 1);
}

/* Make 'a' an empty arena. */
void arena_init(struct arena *a)
{
    a->head_ = NULL;
    a->used_ = 0;
    a->total_ = 0;
}

/* Free every block of 'a'; every pointer it handed out is invalid afterwards. */
void arena_cleanup(struct arena *a)
{
    struct arena_block *b = a->head_;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    arena_init(a);
}

/* Allocate 'n' bytes that live until arena_cleanup(). Never NULL. */
void *arena_alloc(struct arena *a, size_t n)
{
    size_t need = (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    struct arena_block *b;

    if (need < n)
        oom(n);
    a->total_ += need;
    if (a->head_ && a->head_->size - a->used_ >= need) {
        void *p = a->head_->data + a->used_;
        a->used_ += need;
        return p;
    }
    if (need > BLOCK_SIZE / 4) {
        /* A big piece gets its own block, linked behind the head to keep the head's space. */
        b = xmalloc(sizeof(*b) + need);
        b->size = need;
        if (a->head_) {
            b->next = a->head_->next;
            a->head_->next = b;
        } else {
            b->next = NULL;
            a->head_ = b;
            a->used_ = need;
        }
        return b->data;
    }
    b = xmalloc(sizeof(*b) + BLOCK_SIZE);
    b->size = BLOCK_SIZE;
    b->next = a->head_;
    a->head_ = b;
    a->used_ = need;
    return b->data;
}

/* Allocate 'n' zeroed bytes from 'a'. */
void *arena_calloc(struct arena *a, size_t n)
{
    void *p = arena_alloc(a, n);
    memset(p, 0, n);
    return p;
}

/* Copy 's' into 'a'. */
char *arena_strdup(struct arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

/* Copy 'n' bytes of 's' plus a NUL into 'a'. */
char *arena_strndup(struct arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

/* Format into a string owned by 'a'. */
char *arena_printf(struct arena *a, const char *fmt, ...)
{
    va_list ap;
    int n;
    char *p;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return arena_strdup(a, "");
    p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

/* Bytes handed out by 'a' since it was initialised. */
size_t arena_total(const struct arena *a)
{
    return a->total_;
}
