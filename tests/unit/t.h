/* SPDX-License-Identifier: MIT */
/*
 * t.h: a small TAP harness (h2o picotest style). ok(), is_int(), is_str() print one TAP line
 * each, named after the test file; skip() one for a check that cannot run here; done_testing()
 * prints the plan and returns the exit code.
 */
#ifndef WORKFORCE_T_H
#define WORKFORCE_T_H

#include <stdio.h>
#include <string.h>

static int t_n, t_failed;
static const char *t_sub = "";

static inline int t_ok(int cond, const char *file, int line, const char *what)
{
    t_n++;
    if (!cond)
        t_failed++;
    printf("%sok %d - %s%s%s (%s:%d)\n", cond ? "" : "not ", t_n, t_sub, *t_sub ? ": " : "", what,
           file, line);
    return cond;
}

#define ok(cond, what) t_ok(!!(cond), __FILE__, __LINE__, what)
#define is_int(got, want, what)                                                                    \
    do {                                                                                           \
        long long g_ = (long long)(got), w_ = (long long)(want);                                   \
        if (!ok(g_ == w_, what))                                                                   \
            printf("#   got %lld, want %lld\n", g_, w_);                                           \
    } while (0)
#define is_str(got, want, what)                                                                    \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (!ok(g_ && w_ && strcmp(g_, w_) == 0, what))                                            \
            printf("#   got '%s', want '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)");           \
    } while (0)
/* A check that cannot run here: "ok N - what # SKIP why", which TAP (and tools/test.sh) counts as
 * skipped, never as passed. */
static inline void skip(const char *what, const char *why)
{
    t_n++;
    printf("ok %d - %s%s%s # SKIP %s\n", t_n, t_sub, *t_sub ? ": " : "", what, why);
}

#define subtest(name) for (int once_ = (t_sub = (name), 1); once_; once_ = 0, t_sub = "")

static inline int done_testing(void)
{
    printf("1..%d\n", t_n);
    return t_failed ? 1 : 0;
}

#endif
