/* SPDX-License-Identifier: MIT */
/*
 * test_embed_pool: embed/pool.c and embed/openai.c's answer parser. The parser: order by
 * index, normalisation, and every malformed answer refused. The pool (with the built-in model
 * from node_modules; skipped when missing): the same vectors as embed_text(), batches in
 * order, a query served before queued document batches, every queued job failed exactly once
 * when the pool stops. Run from the repository root.
 */
#include "t.h"

#include "../../src/core/err.h"
#include "../../src/embed/embed.h"
#include "../../src/embed/embed_int.h"
#include "../../src/embed/pool.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse(const char *body, size_t n, size_t max_dim, float **v, size_t *dim)
{
    struct err e;
    err_clear(&e);
    return embed_openai_parse(body, strlen(body), n, max_dim, v, dim, &e);
}

static void test_parse(void)
{
    float *v = NULL;
    size_t dim = 0;
    static const char *const bad[] = {
        "",
        "[]",
        "{\"data\": {}}",
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}]}", /* one of two */
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}, {\"index\": 0, \"embedding\": [0, "
        "1]}]}", /* repeated index */
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}, {\"index\": 2, \"embedding\": [0, "
        "1]}]}", /* out of range */
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}, {\"index\": 1, \"embedding\": [0, 1, "
        "0]}]}", /* two widths */
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}, {\"index\": 1, \"embedding\": [0, "
        "\"1\"]}]}", /* a string */
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}, {\"index\": 1, \"embedding\": []}]}",
        "{\"data\": [{\"index\": 0, \"embedding\": [0, 0]}, {\"index\": 1, \"embedding\": [0, "
        "1]}]}", /* all zeros */
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}, {\"index\": -1, \"embedding\": [0, "
        "1]}]}",
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0]}, {\"index\": 1.0, \"embedding\": [0, "
        "1]}]}",
        "{\"data\": [{\"index\": 0, \"embedding\": [1e300, 0]}, {\"index\": 1, \"embedding\": [0, "
        "1]}]}", /* not a float */
        "{\"data\": [{\"index\": 0, \"embedding\": [1, 0, 0]}, {\"index\": 1, \"embedding\": [0, "
        "1, 0]}]}", /* wider than max_dim (2) */
    };

    subtest("parse")
    {
        is_int(parse("{\"data\": [{\"index\": 1, \"embedding\": [0, 2]}, {\"index\": 0, "
                     "\"embedding\": [3, 4]}], \"model\": \"m\"}",
                     2, 2, &v, &dim),
               0, "a valid answer, out of order");
        ok(dim == 2 && v && fabsf(v[0] - 0.6f) < 1e-6f && fabsf(v[1] - 0.8f) < 1e-6f &&
               fabsf(v[2]) < 1e-6f && fabsf(v[3] - 1.0f) < 1e-6f,
           "placed by index and L2-normalised");
        free(v);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            char what[64];
            v = (float *)1;
            snprintf(what, sizeof(what), "malformed answer %zu refused", i);
            ok(parse(bad[i], 2, 2, &v, &dim) == ERR_UPSTREAM && v == NULL, what);
        }
        is_int(parse("{\"data\": []}", 0, 2, &v, &dim), 0, "no inputs, no vectors");
        /* below float's range, and squares below double's: still a direction (the fuzzer's
         * 13e-80 came out as a vector of zeros) */
        is_int(parse("{\"data\": [{\"index\": 0, \"embedding\": [13e-80]}]}", 1, 2, &v, &dim), 0,
               "tiny numbers accepted");
        ok(dim == 1 && v && fabsf(v[0] - 1.0f) < 1e-6f, "a number below float's range is 1");
        free(v);
        is_int(
            parse("{\"data\": [{\"index\": 0, \"embedding\": [3e-200, -4e-200]}]}", 1, 2, &v, &dim),
            0, "squares below double's range accepted");
        ok(dim == 2 && v && fabsf(v[0] - 0.6f) < 1e-6f && fabsf(v[1] + 0.8f) < 1e-6f,
           "normalised as if they were 3 and -4");
        free(v);
    }
}

/* ---- The pool over the built-in model ---- */

struct result {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int calls, rc;
    size_t n, dim;
    float vecs[4 * EMBED_DIM];
    int order; /* the value of 'finished' when this job finished */
};

static atomic_int finished;

static void on_done(void *ud, int rc, const float *vecs, size_t n, size_t dim, const struct err *e)
{
    struct result *r = ud;
    (void)e;
    pthread_mutex_lock(&r->mu);
    r->calls++;
    r->rc = rc;
    r->n = n;
    r->dim = dim;
    if (!rc && n <= 4)
        memcpy(r->vecs, vecs, n * dim * sizeof(float));
    r->order = atomic_fetch_add(&finished, 1);
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void wait_result(struct result *r)
{
    pthread_mutex_lock(&r->mu);
    while (r->calls == 0)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
}

static void result_init(struct result *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
}

static void test_pool(void)
{
    struct embed_model *m = NULL;
    struct embed_pool *p = NULL;
    struct embed_pool_options o;
    struct err e;
    char dir[4096];
    static const char *const texts[] = {"The refund takes thirty days.", "Où est la gare ?", "",
                                        "Shipping is free above fifty euros."};
    size_t lens[4];
    float want[4][EMBED_DIM];

    embed_model_default_dir(dir, sizeof(dir));
    err_clear(&e);
    if (embed_model_load(dir, &m, &e) != 0) {
        printf("ok %d - # SKIP embedding model not loadable from %s (%s): run npm ci\n", ++t_n, dir,
               e.msg);
        return;
    }
    for (int i = 0; i < 4; i++) {
        lens[i] = strlen(texts[i]);
        embed_text(m, texts[i], lens[i], want[i]);
    }
    memset(&o, 0, sizeof(o));
    o.provider = "builtin";
    o.model = m;
    o.threads = 2;
    is_int(embed_pool_new(&o, &p, &e), 0, "pool starts");
    is_str(embed_pool_model(p), "use-lite-512", "model name");

    subtest("submit")
    {
        struct result r;
        result_init(&r);
        embed_pool_submit(p, true, texts, lens, 4, on_done, &r);
        wait_result(&r);
        ok(r.calls == 1 && r.rc == 0 && r.n == 4 && r.dim == EMBED_DIM, "one answer of 4");
        ok(memcmp(r.vecs, want, sizeof(want)) == 0, "the vectors of embed_text, in order");
    }

    subtest("embed_all")
    {
        enum { N = 37 };
        const char *many[N];
        size_t ml[N];
        float *v = NULL;
        size_t dim = 0;
        int same = 1;
        for (int i = 0; i < N; i++) {
            many[i] = texts[i % 4];
            ml[i] = lens[i % 4];
        }
        is_int(embed_pool_embed_all(p, many, ml, N, &v, &dim, &e), 0, "37 texts in 3 batches");
        for (int i = 0; v && i < N; i++)
            same &= memcmp(v + (size_t)i * dim, want[i % 4], sizeof(want[0])) == 0;
        ok(dim == EMBED_DIM && same, "every vector in its place");
        free(v);
    }

    subtest("lanes")
    {
        /* Twelve document batches of 16, then one query: with two threads the documents
         * never take the second, so the query finishes before most of them. */
        enum { JOBS = 12 };
        static struct result docs[JOBS];
        struct result q;
        const char *batch[16];
        size_t bl[16];
        int after = 0;
        for (int i = 0; i < 16; i++) {
            batch[i] = texts[3];
            bl[i] = lens[3];
        }
        atomic_store(&finished, 0);
        for (int i = 0; i < JOBS; i++) {
            result_init(&docs[i]);
            embed_pool_submit(p, false, batch, bl, 16, on_done, &docs[i]);
        }
        result_init(&q);
        embed_pool_submit(p, true, texts, lens, 1, on_done, &q);
        wait_result(&q);
        for (int i = 0; i < JOBS; i++)
            wait_result(&docs[i]);
        for (int i = 0; i < JOBS; i++)
            after += docs[i].order > q.order;
        ok(after >= JOBS - 2, "the query did not wait for the queued document batches");
        printf("#   document batches finished after the query: %d of %d\n", after, JOBS);
    }

    subtest("loaded on first use")
    {
        /* Given the package and a cache path, the pool loads the model when the first job
         * comes, once, even with jobs arriving on both threads at once. */
        struct embed_pool_options lo = o;
        struct embed_pool *lp = NULL;
        struct result r[4];
        char tmpl[] = "/tmp/wf-pool-XXXXXX", cache[4200];
        int same = 0;
        ok(mkdtemp(tmpl) != NULL, "a temporary directory");
        snprintf(cache, sizeof(cache), "%s/embeddings.cache", tmpl);
        lo.model = NULL;
        lo.model_dir = dir;
        lo.model_cache = cache;
        lo.threads = 2;
        is_int(embed_pool_new(&lo, &lp, &e), 0, "a pool without a loaded model starts");
        ok(access(cache, F_OK) != 0, "nothing loaded before the first job");
        for (int i = 0; i < 4; i++) {
            result_init(&r[i]);
            embed_pool_submit(lp, true, texts, lens, 4, on_done, &r[i]);
        }
        for (int i = 0; i < 4; i++) {
            wait_result(&r[i]);
            same += r[i].rc == 0 && r[i].n == 4 && memcmp(r[i].vecs, want, sizeof(want)) == 0;
        }
        is_int(same, 4, "every job answered with embed_text's vectors");
        ok(access(cache, F_OK) == 0, "the weight cache was made");
        embed_pool_free(lp);
        unlink(cache);
        rmdir(tmpl);
        /* A package that cannot be loaded fails the jobs, not the process. */
        lo.model_dir = "/nonexistent/model";
        lo.model_cache = NULL;
        lp = NULL;
        is_int(embed_pool_new(&lo, &lp, &e), 0, "starts");
        result_init(&r[0]);
        embed_pool_submit(lp, true, texts, lens, 1, on_done, &r[0]);
        wait_result(&r[0]);
        ok(r[0].rc != 0 && r[0].calls == 1, "the job fails once, with an error");
        embed_pool_free(lp);
    }

    subtest("stop")
    {
        /* One thread, busy; queued jobs are failed exactly once by embed_pool_free. */
        struct embed_pool *p1 = NULL;
        static struct result r[6];
        const char *batch[16];
        size_t bl[16];
        int failed = 0, calls = 0;
        for (int i = 0; i < 16; i++) {
            batch[i] = texts[0];
            bl[i] = lens[0];
        }
        o.threads = 1;
        embed_pool_new(&o, &p1, &e);
        for (int i = 0; i < 6; i++) {
            result_init(&r[i]);
            embed_pool_submit(p1, false, batch, bl, 16, on_done, &r[i]);
        }
        embed_pool_free(p1);
        for (int i = 0; i < 6; i++) {
            calls += r[i].calls;
            failed += r[i].rc == ERR_INTERNAL;
        }
        is_int(calls, 6, "every job answered once");
        ok(failed >= 1, "the queued ones failed");
        printf("#   failed at stop: %d of 6\n", failed);
    }
    embed_pool_free(p);
    embed_model_free(m);
    {
        struct embed_pool *none = NULL;
        memset(&o, 0, sizeof(o));
        o.provider = "builtin";
        is_int(embed_pool_new(&o, &none, &e), ERR_INVALID, "builtin without a model is refused");
        o.provider = "openai";
        is_int(embed_pool_new(&o, &none, &e), ERR_INVALID, "openai without a base URL");
        is_str(e.param, "WORKFORCE_EMBEDDINGS_BASE_URL", "names the setting");
    }
}

int main(void)
{
    test_parse();
    test_pool();
    return done_testing();
}
