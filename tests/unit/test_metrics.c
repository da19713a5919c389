/* SPDX-License-Identifier: MIT */
/* Unit tests of metrics/: counters by route and status, the histogram, the exposition text. */
#include "../../src/metrics/metrics.h"
#include "t.h"

#include <stdlib.h>

int main(void)
{
    const char *methods[] = {"GET", "POST"};
    const char *patterns[] = {"/a", "/b/{id}"};
    struct metrics *m = metrics_new(2);
    struct buf b;

    metrics_observe(m, 0, 200, 1000);
    metrics_observe(m, 0, 200, 3000);
    metrics_observe(m, 1, 429, 20000);
    metrics_observe(m, -1, 404, 7000000);
    metrics_observe(m, 1, 418, 10);
    buf_init(&b, 1 << 20);
    is_int(metrics_render(m, methods, patterns, 3, 1, &b), 0, "render");
    ok(strstr(buf_ptr(&b),
              "workforce_http_requests_total{route=\"/a\",method=\"GET\",status=\"200\"} 2\n") !=
           NULL,
       "requests by route and status");
    ok(strstr(buf_ptr(&b), "{route=\"/b/{id}\",method=\"POST\",status=\"429\"} 1\n") != NULL,
       "429 counted under its route");
    ok(strstr(buf_ptr(&b), "{route=\"unmatched\",method=\"*\",status=\"404\"} 1\n") != NULL,
       "unmatched requests");
    ok(strstr(buf_ptr(&b), "status=\"other\"} 1\n") != NULL, "unusual status as other");
    ok(strstr(buf_ptr(&b), "workforce_http_request_duration_seconds_bucket{le=\"0.005\"} 3\n") !=
           NULL,
       "histogram: three requests within 5 ms");
    ok(strstr(buf_ptr(&b), "workforce_http_request_duration_seconds_bucket{le=\"0.025\"} 4\n") !=
           NULL,
       "histogram is cumulative");
    ok(strstr(buf_ptr(&b), "workforce_http_request_duration_seconds_bucket{le=\"+Inf\"} 5\n") !=
           NULL,
       "+Inf holds everything");
    ok(strstr(buf_ptr(&b), "workforce_http_request_duration_seconds_count 5\n") != NULL, "count");
    ok(strstr(buf_ptr(&b), "workforce_rate_limited_total{code=\"rate_limit_exceeded\"} 3\n") !=
           NULL,
       "rate-limited by code");
    ok(strstr(buf_ptr(&b), "status=\"500\"") == NULL, "no zero rows");
    buf_cleanup(&b);
    buf_init(&b, 64);
    ok(metrics_render(m, methods, patterns, 0, 0, &b) != 0, "a too-small buffer is an error");
    buf_cleanup(&b);
    metrics_free(m);
    return done_testing();
}
