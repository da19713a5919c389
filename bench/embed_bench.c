/* SPDX-License-Identifier: MIT */
/*
 * embed_bench: throughput of the C embedding model (src/embed/) on the sentences of
 * tests/data/embed_golden.json (those the package can embed), one embed_text() call per
 * sentence on one thread, for about SECONDS after a warm-up. Built and run by bench/embed.sh;
 * prints one line:
 *
 *     c tokens=N sentences=N seconds=S tokens_per_s=X sentences_per_s=Y
 *
 * Usage: embed_bench MODEL_DIR GOLDEN_JSON SECONDS
 */
#include "../src/embed/embed.h"
#include "../src/json/json.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct embed_model *m = NULL;
    struct err e = {0};
    json_error_t je;
    json_t *doc, *cases;
    double secs, t0, el;
    unsigned long long tokens = 0, sentences = 0;
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
                tokens += n < EMBED_MAX_TOKENS ? n : EMBED_MAX_TOKENS;
                sentences++;
            }
            el = now_s() - t0;
        } while (el < limit);
    }
    printf("c tokens=%llu sentences=%llu seconds=%.3f tokens_per_s=%.1f sentences_per_s=%.1f\n",
           tokens, sentences, el, (double)tokens / el, (double)sentences / el);
    json_decref(doc);
    embed_model_free(m);
    return 0;
}
