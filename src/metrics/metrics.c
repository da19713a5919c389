/* SPDX-License-Identifier: MIT */
/*
 * metrics.c: a [route][status] table of counters (status from a fixed list of the codes the
 * server can answer; anything else counts under "other") and a histogram of request durations
 * with Prometheus' default buckets.
 */
#include "metrics.h"

#include "../core/err.h"
#include "../core/mem.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static const unsigned statuses[] = {200, 302, 400, 401, 402, 403, 404, 405,
                                    409, 413, 415, 429, 500, 502, 503, 0};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0])) /* last: other */

static const double bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

struct metrics {
    size_t nroutes;
    atomic_ullong *count; /* (nroutes + 1) x NSTATUS; row nroutes is "unmatched" */
    atomic_ullong hist[NBOUNDS + 1];
    atomic_ullong sum_us;
    atomic_ullong total;
};

/* A zeroed set of counters for 'nroutes' routes; the caller owns it (metrics_free()). */
struct metrics *metrics_new(size_t nroutes)
{
    struct metrics *m = xcalloc(1, sizeof(*m));
    m->nroutes = nroutes;
    m->count = xcalloc((nroutes + 1) * NSTATUS, sizeof(*m->count));
    return m;
}

/* Free 'm'; NULL is a no-op. */
void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    free(m->count);
    free(m);
}

/* Count a finished request. */
void metrics_observe(struct metrics *m, int route, unsigned status, int64_t dur_us)
{
    size_t row = route < 0 || (size_t)route >= m->nroutes ? m->nroutes : (size_t)route;
    size_t col = NSTATUS - 1;
    double secs = (double)dur_us / 1e6;
    size_t b = 0;

    for (size_t i = 0; i + 1 < NSTATUS; i++) {
        if (statuses[i] == status) {
            col = i;
            break;
        }
    }
    atomic_fetch_add_explicit(&m->count[row * NSTATUS + col], 1, memory_order_relaxed);
    while (b < NBOUNDS && secs > bounds[b])
        b++;
    atomic_fetch_add_explicit(&m->hist[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_us, (unsigned long long)(dur_us > 0 ? dur_us : 0),
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&m->total, 1, memory_order_relaxed);
}

/* Append the Prometheus text of 'm' to 'out'. */
int metrics_render(const struct metrics *m, const char *const *methods, const char *const *patterns,
                   uint64_t rate_refused, uint64_t conc_refused, struct buf *out)
{
    unsigned long long cum = 0;
    int rc = 0;

    rc |= buf_appends(out, "# HELP workforce_http_requests_total HTTP requests by route, method "
                           "and status.\n# TYPE workforce_http_requests_total counter\n");
    for (size_t r = 0; r <= m->nroutes; r++) {
        for (size_t c = 0; c < NSTATUS; c++) {
            unsigned long long v = atomic_load(&m->count[r * NSTATUS + c]);
            char st[16];
            if (!v)
                continue;
            if (statuses[c])
                snprintf(st, sizeof(st), "%u", statuses[c]);
            else
                snprintf(st, sizeof(st), "other");
            rc |= buf_appendf(out,
                              "workforce_http_requests_total{route=\"%s\",method=\"%s\","
                              "status=\"%s\"} %llu\n",
                              r < m->nroutes ? patterns[r] : "unmatched",
                              r < m->nroutes ? methods[r] : "*", st, v);
        }
    }
    rc |= buf_appends(out, "# HELP workforce_http_request_duration_seconds Time from request "
                           "headers to response.\n# TYPE workforce_http_request_duration_seconds "
                           "histogram\n");
    for (size_t b = 0; b < NBOUNDS; b++) {
        cum += atomic_load(&m->hist[b]);
        rc |= buf_appendf(out, "workforce_http_request_duration_seconds_bucket{le=\"%g\"} %llu\n",
                          bounds[b], cum);
    }
    cum += atomic_load(&m->hist[NBOUNDS]);
    rc |=
        buf_appendf(out, "workforce_http_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n", cum);
    rc |= buf_appendf(out, "workforce_http_request_duration_seconds_sum %.6f\n",
                      (double)atomic_load(&m->sum_us) / 1e6);
    rc |= buf_appendf(out, "workforce_http_request_duration_seconds_count %llu\n",
                      (unsigned long long)atomic_load(&m->total));
    rc |= buf_appendf(out,
                      "# HELP workforce_rate_limited_total Requests refused with 429, by code.\n"
                      "# TYPE workforce_rate_limited_total counter\n"
                      "workforce_rate_limited_total{code=\"rate_limit_exceeded\"} %llu\n"
                      "workforce_rate_limited_total{code=\"concurrency_limit_exceeded\"} %llu\n",
                      (unsigned long long)rate_refused, (unsigned long long)conc_refused);
    return rc ? ERR_LIMIT : 0;
}
