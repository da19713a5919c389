/* SPDX-License-Identifier: MIT */
/*
 * embed_bench: throughput of the C embedding model (src/embed/) on the sentences of
 * tests/data/embed_golden.json (those the package can embed), one embed_text() call per
 * sentence on one thread, for about SECONDS after a warm-up. Built and run by bench/embed.sh;
 * prints one line:
 *
 *     c tokens=N sentences=N seconds=S tokens_per_s=X sentences_per_s=Y
 *
 * Also counts the floating-point work of those passes (a multiply-add is 2 operations) and
 * measures this core's peak in the same run: a tight loop of independent AVX2 fused
 * multiply-adds (12 accumulators of 8 floats), as long as the model was measured. The line
 * then holds gflops=X peak_gflops=Y.
 *
 * Usage: embed_bench MODEL_DIR GOLDEN_JSON SECONDS
 */
#include "../src/embed/embed.h"
#include "../src/json/json.h"

#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Floating-point operations of one forward pass over 'n' tokens (src/embed/model.c): per token,
 * layer 0 (width 256) qkv 2*256*768, its widening residual 2*256*512, output 2*256*512, then the
 * feed-forward 2*512*1536*2; layer 1 (width 512) qkv 2*512*1536, output 2*512*512, feed-forward
 * 2*512*1536*2; attention 4*n*width per token and layer (scores and weighted sum); the pooling
 * layer 2*512*512 once. Layer norms, softmax and activations are left out (under 1%).
 */
static double forward_flops(double n)
{
    double per_token = 2.0 * 256 * 768 + 2.0 * 256 * 512 * 2 + 2.0 * 512 * 1536 * 2 +
                       2.0 * 512 * 1536 + 2.0 * 512 * 512 + 2.0 * 512 * 1536 * 2;
    return n * per_token + n * n * (4.0 * 256 + 4.0 * 512) + 2.0 * 512 * 512;
}

/* This core's peak: 12 independent chains of 8-wide fused multiply-adds (in registers: enough
 * to cover the latency of two FMA ports) for 'secs' seconds. */
__attribute__((target("avx2,fma"))) static double peak_gflops(double secs)
{
    __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    __m256 c0 = _mm256_set1_ps(0), c1 = _mm256_set1_ps(1), c2 = _mm256_set1_ps(2),
           c3 = _mm256_set1_ps(3), c4 = _mm256_set1_ps(4), c5 = _mm256_set1_ps(5),
           c6 = _mm256_set1_ps(6), c7 = _mm256_set1_ps(7), c8 = _mm256_set1_ps(8),
           c9 = _mm256_set1_ps(9), c10 = _mm256_set1_ps(10), c11 = _mm256_set1_ps(11);
    double t0 = now_s(), el;
    unsigned long long iters = 0;
    float sink[8];

    do {
        for (int r = 0; r < 100000; r++) {
            c0 = _mm256_fmadd_ps(c0, a, b);
            c1 = _mm256_fmadd_ps(c1, a, b);
            c2 = _mm256_fmadd_ps(c2, a, b);
            c3 = _mm256_fmadd_ps(c3, a, b);
            c4 = _mm256_fmadd_ps(c4, a, b);
            c5 = _mm256_fmadd_ps(c5, a, b);
            c6 = _mm256_fmadd_ps(c6, a, b);
            c7 = _mm256_fmadd_ps(c7, a, b);
            c8 = _mm256_fmadd_ps(c8, a, b);
            c9 = _mm256_fmadd_ps(c9, a, b);
            c10 = _mm256_fmadd_ps(c10, a, b);
            c11 = _mm256_fmadd_ps(c11, a, b);
        }
        iters += 100000;
        el = now_s() - t0;
    } while (el < secs);
    c0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                       _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    c0 = _mm256_add_ps(c0, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    _mm256_storeu_ps(sink, c0);
    if (sink[0] == 12345.0f) /* keep the chains alive */
        printf("#\n");
    return (double)iters * 12 * 8 * 2 / el / 1e9;
}

int main(int argc, char **argv)
{
    struct embed_model *m = NULL;
    struct err e = {0};
    json_error_t je;
    json_t *doc, *cases;
    double secs, t0, el;
    unsigned long long tokens = 0, sentences = 0;
    double flops = 0, peak;
    float v[EMBED_DIM];

    if (argc != 4) {
        fprintf(stderr, "usage: embed_bench MODEL_DIR GOLDEN_JSON SECONDS\n");
        return 2;
    }
    secs = strtod(argv[3], NULL);
    if (embed_model_load(argv[1], &m, &e) != 0) {
        fprintf(stderr, "embed_bench: %s\n", e.msg);
        return 1;
    }
    doc = json_load_file(argv[2], 0, &je);
    if (!doc) {
        fprintf(stderr, "embed_bench: %s: %s\n", argv[2], je.text);
        return 1;
    }
    cases = json_object_get(doc, "cases");

    for (int pass = 0; pass < 2; pass++) { /* pass 0 warms up for a tenth of the time */
        double limit = pass ? secs : secs / 10;
        tokens = sentences = 0;
        flops = 0;
        t0 = now_s();
        do {
            for (size_t i = 0; i < json_array_size(cases); i++) {
                json_t *c = json_array_get(cases, i);
                json_t *t = json_object_get(c, "text");
                size_t n = json_array_size(json_object_get(c, "ids"));
                if (json_is_null(json_object_get(c, "vector")))
                    continue; /* the package cannot embed it: not in the comparison */
                if (embed_text(m, json_string_value(t), json_string_length(t), v) != 0) {
                    fprintf(stderr, "embed_bench: embed_text failed\n");
                    return 1;
                }
                n = n < EMBED_MAX_TOKENS ? n : EMBED_MAX_TOKENS;
                tokens += n;
                flops += forward_flops((double)n);
                sentences++;
            }
            el = now_s() - t0;
        } while (el < limit);
    }
    peak = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? peak_gflops(secs) : 0;
    printf("c tokens=%llu sentences=%llu seconds=%.3f tokens_per_s=%.1f sentences_per_s=%.1f "
           "gflops=%.2f peak_gflops=%.2f\n",
           tokens, sentences, el, (double)tokens / el, (double)sentences / el, flops / el / 1e9,
           peak);
    json_decref(doc);
    embed_model_free(m);
    return 0;
}
