/* SPDX-License-Identifier: MIT */
/*
 * metrics: counters for GET /metrics (Prometheus text format 0.0.4). Requests by route and
 * status, one latency histogram, refusals by the rate limiter. Lock-free: relaxed atomics.
 */
#ifndef WORKFORCE_METRICS_H
#define WORKFORCE_METRICS_H

#include "../core/buf.h"

#include <stddef.h>
#include <stdint.h>

struct metrics;

struct metrics *metrics_new(size_t nroutes);
void metrics_free(struct metrics *m);
/* Count one finished request of route 'route' (-1: unmatched) with 'status' after 'dur_us'. */
void metrics_observe(struct metrics *m, int route, unsigned status, int64_t dur_us);
/* Append the exposition; 'methods'/'patterns' label routes by index. */
int metrics_render(const struct metrics *m, const char *const *methods, const char *const *patterns,
                   uint64_t rate_refused, uint64_t conc_refused, struct buf *out);

#endif
