/* SPDX-License-Identifier: MIT */
/*
 * test_embed: the embedding module (src/embed/). Without the model: the tokenizer's rules on
 * a small vocabulary of our own (NFKC, U+2581, Viterbi and the package's quirks, unknown runs,
 * invalid UTF-8, the 128-token cut). With the model (node_modules, installed by `npm ci`;
 * skipped when missing): the ids and vectors of tests/data/embed_golden.json, produced by the
 * package's own JavaScript (tools/gen_embed_golden.js), must match, ids exactly and vectors
 * within 1e-4; paraphrases must be closer than unrelated sentences; threads must agree.
 * Run from the repository root.
 */
#include "t.h"

#include "../../src/core/err.h"
#include "../../src/embed/embed.h"
#include "../../src/embed/embed_int.h"
#include "../../src/json/json.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <string.h>

#define GOLDEN "tests/data/embed_golden.json"
#define TOLERANCE 1e-4

/*
 * ---- The tokenizer on a vocabulary of our own ----
 * Every expectation below is what the package's JavaScript tokenizer returns for the same
 * vocabulary (new EmbeddingsModel({vocabulary, model: null}).tokenizer.encode(text)).
 */

#define PIECE(s, score)                                                                            \
    {                                                                                              \
        s, sizeof(s) - 1, score                                                                    \
    }

static const struct embed_piece toy[] = {
    PIECE("\uFFFD", 0),    PIECE("<s>", 0), PIECE("</s>", 0),
    PIECE("x1", 0),        PIECE("x2", 0),  PIECE("x3", 0),  /* 0-5: reserved, never matched */
    PIECE("\u2581", -5),                                     /* 6 */
    PIECE("a", -3),        PIECE("b", -3),  PIECE("ab", -4), /* 7, 8, 9 */
    PIECE("\u2581ab", -4),                                   /* 10 */
    PIECE("c", -2),        PIECE("fi", -1),                  /* 11, 12 */
    PIECE("\u2581c", -1),                                    /* 13 */
    PIECE("z", 0),         PIECE("zz", -1),                  /* 14, 15 */
    PIECE("q", -1),        PIECE("q", -2), /* 16, 17: a duplicate keeps the last id */
    PIECE("\u2581y", 0),                   /* 18: a best of exactly 0 */
    PIECE("i", -3),                        /* 19 */
    PIECE("f", -3),                        /* 20: else position 2 is unreached (best 0) */
};

static void toy_tokens(const struct embed_vocab *v, const char *text, size_t max, const int *want,
                       size_t nwant, const char *what)
{
    int ids[64];
    size_t n = 99;
    int rc = embed_vocab_encode(v, text, strlen(text), ids, max, &n);
    int same = rc == 0 && n == nwant;

    for (size_t i = 0; same && i < n; i++)
        same = ids[i] == want[i];
    if (!ok(same, what)) {
        printf("#   got rc %d, %zu ids:", rc, n);
        for (size_t i = 0; i < n && i < 64; i++)
            printf(" %d", ids[i]);
        printf("\n");
    }
}

#define TOKS(v, text, max, what, ...)                                                              \
    do {                                                                                           \
        static const int w_[] = {__VA_ARGS__};                                                     \
        toy_tokens(v, text, max, w_, sizeof(w_) / sizeof(w_[0]), what);                            \
    } while (0)

static void test_toy_vocab(void)
{
    struct embed_vocab v;
    int ids[4];
    size_t n = 7;

    is_int(embed_vocab_init(&v, toy, sizeof(toy) / sizeof(toy[0]), EMBED_RESERVED_IDS, NULL), 0,
           "toy vocabulary builds");
    TOKS(&v, "ab", 64, "▁ab is one piece", 10);
    TOKS(&v, "ab ab", 64, "a space becomes ▁", 10, 10);
    TOKS(&v, "ba", 64, "▁ then b, a", 6, 8, 7);
    TOKS(&v, "c", 64, "▁c beats ▁ + c", 13);
    TOKS(&v, "\xEF\xAC\x81", 64, "NFKC: the ligature U+FB01 is the piece fi", 6, 12);
    TOKS(&v, "xyzw", 64, "unknown code points collapse into one 0", 6, 0, 14, 0);
    TOKS(&v, "zz", 64, "best path: z + z (-5) beats zz (-6)", 6, 14, 14);
    TOKS(&v, "yy", 64, "a best of exactly 0 counts as unset (the package's quirk)", 6, 0);
    TOKS(&v, "q", 64, "a duplicate piece keeps its last id", 6, 17);
    TOKS(&v, "a\xFF\xC3(b", 64, "invalid UTF-8 reads as U+FFFD (unknown)", 6, 7, 0, 8);
    TOKS(&v, "ab ab ab ab", 2, "max cuts the ids", 10, 10);
    n = 7;
    is_int(embed_vocab_encode(&v, "", 0, ids, 4, &n), 0, "empty text");
    is_int(n, 0, "empty text has no ids");
    is_int(embed_vocab_encode(&v, "ab", 2, ids, 0, &n), 0, "max 0");
    is_int(n, 0, "max 0 writes nothing");
    embed_vocab_cleanup(&v);
    embed_vocab_cleanup(&v); /* twice is harmless */
}

/* A long text: the bounded pass must give what the whole pass gives. */
static void test_toy_long(void)
{
    struct embed_vocab v;
    static char text[20000];
    static int part[EMBED_MAX_TOKENS], mid[2048], all[16384];
    size_t np = 0, nm = 0, na = 0, len = 0;
    int same;

    embed_vocab_init(&v, toy, sizeof(toy) / sizeof(toy[0]), EMBED_RESERVED_IDS, NULL);
    /* Unknown runs longer than the cut, then words: the cut has to grow to find 128 ids. */
    for (int i = 0; i < 3000; i++)
        text[len++] = "xyw"[i % 3];
    for (int i = 0; len + 4 < sizeof(text); i++) {
        memcpy(text + len, i % 2 ? " ab" : " c ", 3);
        len += 3;
    }
    embed_vocab_encode(&v, text, len, part, EMBED_MAX_TOKENS, &np);
    embed_vocab_encode(&v, text, len, mid, 2048, &nm);
    embed_vocab_encode(&v, text, len, all, 16384, &na);
    ok(np == EMBED_MAX_TOKENS && nm == 2048 && na > 8000 && na < 16384, "counts");
    same = all[0] == 6 && all[1] == 0 && all[2] == 13;
    for (size_t i = 0; same && i < np; i++)
        same = part[i] == all[i];
    for (size_t i = 0; same && i < nm; i++)
        same = mid[i] == all[i];
    ok(same, "the first ids do not depend on where the pass stops");
    embed_vocab_cleanup(&v);
}

/* ---- The model against the JavaScript reference ---- */

static double cosine(const float *a, const float *b)
{
    double s = 0, na = 0, nb = 0;
    for (int i = 0; i < EMBED_DIM; i++) {
        s += (double)a[i] * b[i];
        na += (double)a[i] * a[i];
        nb += (double)b[i] * b[i];
    }
    return s / sqrt(na * nb);
}

struct golden {
    const char *name;
    float vec[EMBED_DIM];
    int has_vec;
};

static const float *find_vec(const struct golden *g, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(g[i].name, name) == 0)
            return g[i].vec;
    return NULL;
}

struct thread_arg {
    const struct embed_model *m;
    const struct golden *g;
    size_t n;
    json_t *cases;
    int mismatches;
};

static void *embed_all(void *p)
{
    struct thread_arg *a = p;
    float v[EMBED_DIM];

    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < a->n; i++) {
            const char *text =
                json_string_value(json_object_get(json_array_get(a->cases, i), "text"));
            size_t len = json_string_length(json_object_get(json_array_get(a->cases, i), "text"));
            if (embed_text(a->m, text, len, v) != 0 || memcmp(v, a->g[i].vec, sizeof(v)) != 0)
                a->mismatches++;
        }
    }
    return NULL;
}

static void test_model(void)
{
    struct embed_model *m = NULL;
    struct err e;
    json_error_t je;
    json_t *doc = NULL, *cases;
    struct golden *mine = NULL;
    size_t ncases;
    double worst = 0;
    int bad_ids = 0, bad_vec = 0;
    char dir[4096];

    embed_model_default_dir(dir, sizeof(dir));
    err_clear(&e);
    if (embed_model_load(dir, &m, &e) != 0) {
        printf("ok %d - # SKIP embedding model not loadable from %s (%s): run npm ci\n", ++t_n, dir,
               e.msg);
        return;
    }
    ok(m != NULL, "model loads from node_modules");
    doc = json_load_file(GOLDEN, 0, &je);
    if (!ok(doc != NULL, "golden file loads")) {
        printf("#   %s\n", je.text);
        embed_model_free(m);
        return;
    }
    cases = json_object_get(doc, "cases");
    ncases = json_array_size(cases);
    ok(ncases >= 30, "golden file has the cases");
    mine = calloc(ncases, sizeof(*mine));

    for (size_t i = 0; i < ncases; i++) {
        json_t *c = json_array_get(cases, i);
        json_t *want_ids = json_object_get(c, "ids"), *want_vec = json_object_get(c, "vector");
        const char *text = json_string_value(json_object_get(c, "text"));
        size_t len = json_string_length(json_object_get(c, "text"));
        int ids[4096], cut[EMBED_MAX_TOKENS];
        size_t n = 0, ncut = 0;
        double diff = 0;
        int same;

        mine[i].name = json_string_value(json_object_get(c, "name"));
        same = embed_tokenize(m, text, len, ids, 4096, &n) == 0 && n == json_array_size(want_ids) &&
               embed_tokenize(m, text, len, cut, EMBED_MAX_TOKENS, &ncut) == 0 &&
               ncut == (n < EMBED_MAX_TOKENS ? n : EMBED_MAX_TOKENS);
        for (size_t k = 0; same && k < n; k++)
            same = ids[k] == json_integer_value(json_array_get(want_ids, k)) &&
                   (k >= ncut || cut[k] == ids[k]);
        if (!same) {
            bad_ids++;
            printf("#   ids differ for '%s' (%zu ids, want %zu)\n", mine[i].name, n,
                   json_array_size(want_ids));
        }

        if (embed_text(m, text, len, mine[i].vec) != 0) {
            bad_vec++;
            printf("#   embed_text failed for '%s'\n", mine[i].name);
            continue;
        }
        mine[i].has_vec = 1;
        if (json_is_null(want_vec)) {
            /* The package throws on text without tokens; ours is defined: finite, unit. */
            double norm = 0;
            for (int k = 0; k < EMBED_DIM; k++)
                norm += (double)mine[i].vec[k] * mine[i].vec[k];
            if (!(fabs(norm - 1) < 1e-5)) {
                bad_vec++;
                printf("#   '%s': norm %g\n", mine[i].name, norm);
            }
            continue;
        }
        if (json_array_size(want_vec) != EMBED_DIM) {
            bad_vec++;
            continue;
        }
        for (int k = 0; k < EMBED_DIM; k++) {
            double d = fabs(mine[i].vec[k] - json_number_value(json_array_get(want_vec, k)));
            if (!(d <= diff))
                diff = d;
        }
        if (!(diff <= TOLERANCE)) {
            bad_vec++;
            printf("#   '%s': max abs diff %.3g\n", mine[i].name, diff);
        }
        if (!(diff <= worst))
            worst = diff;
    }
    is_int(bad_ids, 0, "token ids equal the package's for every golden case");
    is_int(bad_vec, 0, "every vector within 1e-4 of the package's");
    printf("# max abs diff vs golden over %zu cases: %.3g\n", ncases, worst);

    {
        const float *fox = find_vec(mine, ncases, "fox"),
                    *fox2 = find_vec(mine, ncases, "fox_para");
        const float *pw = find_vec(mine, ncases, "password");
        const float *pw2 = find_vec(mine, ncases, "password_para");
        const float *wx = find_vec(mine, ncases, "weather");
        const float *wx2 = find_vec(mine, ncases, "weather_para");
        const float *st = find_vec(mine, ncases, "stocks");
        if (ok(fox && fox2 && pw && pw2 && wx && wx2 && st, "paraphrase cases present")) {
            ok(cosine(fox, fox2) > cosine(fox, pw) && cosine(fox, fox2) > cosine(fox, st),
               "fox paraphrase closer than unrelated");
            ok(cosine(pw, pw2) > cosine(pw, wx) && cosine(pw, pw2) > cosine(pw, fox),
               "password paraphrase closer than unrelated");
            ok(cosine(wx, wx2) > cosine(wx, st) && cosine(wx, wx2) > cosine(wx, pw2),
               "weather paraphrase closer than unrelated");
            printf("# cos(fox, para) %.3f, cos(fox, password) %.3f\n", cosine(fox, fox2),
                   cosine(fox, pw));
        }
    }

    {
        pthread_t th[3];
        struct thread_arg args[3];
        int mism = 0;
        for (int i = 0; i < 3; i++) {
            args[i] = (struct thread_arg){m, mine, ncases, cases, 0};
            pthread_create(&th[i], NULL, embed_all, &args[i]);
        }
        for (int i = 0; i < 3; i++) {
            pthread_join(th[i], NULL);
            mism += args[i].mismatches;
        }
        is_int(mism, 0, "three threads sharing the model get identical vectors");
    }

    {
        int ids[EMBED_MAX_TOKENS];
        size_t n = 0;
        float v[EMBED_DIM];
        is_int(embed_tokenize(m, "\xC3\x28 caf\xC3\xA9", 7, ids, EMBED_MAX_TOKENS, &n), 0,
               "invalid UTF-8 tokenizes");
        is_int(embed_text(m, "\xFF\xFE\x00", 3, v), 0, "invalid UTF-8 and NUL embed");
    }

    {
        /* The portable kernel (the one a CPU without AVX2 gets) against the same golden. */
        double pworst = 0, agree = 0;
        int pbad = 0;
        embed_model_force_portable(m);
        for (size_t i = 0; i < ncases; i++) {
            json_t *c = json_array_get(cases, i), *want = json_object_get(c, "vector");
            json_t *t = json_object_get(c, "text");
            float v[EMBED_DIM];
            if (embed_text(m, json_string_value(t), json_string_length(t), v) != 0) {
                pbad++;
                continue;
            }
            for (int k = 0; k < EMBED_DIM; k++) {
                double d = fabs(v[k] - mine[i].vec[k]);
                if (!(d <= agree))
                    agree = d;
                if (json_array_size(want) == EMBED_DIM) {
                    d = fabs(v[k] - json_number_value(json_array_get(want, k)));
                    if (!(d <= pworst))
                        pworst = d;
                }
            }
        }
        ok(pbad == 0 && pworst <= TOLERANCE && agree <= TOLERANCE,
           "portable kernel: every vector within 1e-4 of the package's");
        printf("# portable kernel: max abs diff vs golden %.3g, vs the default kernel %.3g\n",
               pworst, agree);
    }

    free(mine);
    json_decref(doc);
    embed_model_free(m);
}

static void test_load_errors(void)
{
    struct embed_model *m = (struct embed_model *)1;
    struct err e;

    err_clear(&e);
    is_int(embed_model_load("/nonexistent/model", &m, &e), ERR_IO, "missing directory: ERR_IO");
    ok(m == NULL, "no model on failure");
    ok(strstr(e.msg, "model.json") != NULL, "the message names the file");
    embed_model_free(NULL);
}

/* The packed weights cached in a file and mapped give the same vectors as the heap copy; a
 * cache that does not match is made again; a cache that cannot be written is no failure. */
static void test_cache(void)
{
    static const char *const texts[] = {"The refund takes thirty days.",
                                        "Shipping is free above fifty euros.", ""};
    struct embed_model *heap = NULL, *mapped = NULL, *again = NULL;
    char dir[4096], tmpl[] = "/tmp/wf-embed-cache-XXXXXX", path[4200];
    float a[EMBED_DIM], b[EMBED_DIM];
    struct stat st1, st2;
    struct err e;
    int same = 0;
    FILE *f;

    embed_model_default_dir(dir, sizeof(dir));
    err_clear(&e);
    if (embed_model_load(dir, &heap, &e) != 0 || !mkdtemp(tmpl)) {
        printf("ok %d - # SKIP embedding model not loadable: run npm ci\n", ++t_n);
        embed_model_free(heap);
        return;
    }
    snprintf(path, sizeof(path), "%s/embeddings.cache", tmpl);
    is_int(embed_model_load_cached(dir, path, &mapped, &e), 0, "loads, making the cache");
    ok(stat(path, &st1) == 0 && st1.st_size > 20 * 1000 * 1000, "the cache file holds the weights");
    for (size_t i = 0; i < 3; i++) {
        embed_text(heap, texts[i], strlen(texts[i]), a);
        embed_text(mapped, texts[i], strlen(texts[i]), b);
        same += memcmp(a, b, sizeof(a)) == 0;
    }
    is_int(same, 3, "the mapped weights give the heap copy's vectors, bit for bit");
    embed_model_free(mapped);
    is_int(embed_model_load_cached(dir, path, &again, &e), 0, "loads again from the cache");
    ok(stat(path, &st2) == 0 && st2.st_ino == st1.st_ino, "the cache was mapped, not made again");
    embed_model_free(again);
    /* A cache of other weights (another package version) is made again. */
    f = fopen(path, "r+b");
    ok(f && fseek(f, 20, SEEK_SET) == 0 && fputc('X', f) != EOF && fclose(f) == 0,
       "the cache's fingerprint altered");
    again = NULL;
    is_int(embed_model_load_cached(dir, path, &again, &e), 0, "a stale cache is no failure");
    ok(stat(path, &st2) == 0 && st2.st_ino != st1.st_ino, "it was made again");
    embed_text(again, texts[0], strlen(texts[0]), b);
    embed_text(heap, texts[0], strlen(texts[0]), a);
    ok(memcmp(a, b, sizeof(a)) == 0, "and gives the same vectors");
    embed_model_free(again);
    unlink(path);
    rmdir(tmpl);
    /* A cache that cannot be written: the weights stay on the heap. */
    again = NULL;
    is_int(embed_model_load_cached(dir, "/nonexistent-dir/embeddings.cache", &again, &e), 0,
           "an unwritable cache is no failure");
    embed_text(again, texts[1], strlen(texts[1]), b);
    embed_text(heap, texts[1], strlen(texts[1]), a);
    ok(memcmp(a, b, sizeof(a)) == 0, "the heap weights work");
    embed_model_free(again);
    embed_model_free(heap);
}

int main(void)
{
    subtest("toy vocabulary") test_toy_vocab();
    subtest("toy long text") test_toy_long();
    subtest("load errors") test_load_errors();
    subtest("model") test_model();
    subtest("weight cache") test_cache();
    return done_testing();
}
