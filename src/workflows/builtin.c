/* SPDX-License-Identifier: MIT */
/*
 * builtin.c: the built-in engine's classify, summarize and draft_email (see builtin.h).
 * Sentences are knowledge/chunk.c's (one rule for the whole server); vectors come from the
 * embedding pool and are normalised here, so that a dot product is a cosine whatever the
 * provider returns.
 */
#include "builtin.h"

#include "../core/buf.h"
#include "../core/mem.h"
#include "../core/utf8.h"
#include "../embed/pool.h"
#include "../json/json.h"
#include "../knowledge/extract.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SUBJECT_MAX 78

/* Embed 'n' texts and normalise each vector; '*vecs' is the caller's to free. */
static int embed(struct embed_pool *p, const char *const *texts, const size_t *lens, size_t n,
                 float **vecs, size_t *dim, struct err *e)
{
    int rc = embed_pool_embed_all(p, texts, lens, n, vecs, dim, e);
    if (rc)
        return rc;
    for (size_t i = 0; i < n; i++)
        embed_vec_normalise(*vecs + i * *dim, *dim);
    return 0;
}

/* ---- Label vectors, kept between runs ----
 * A workflow classifies with the same labels at every run: the vectors of the last
 * LABEL_CACHE label texts (per embedding model) are kept, so that a run embeds its input and
 * only the labels not seen lately. The entries are the cache's and live for the process. */

#define LABEL_CACHE 256

struct label_vec {
    char *key; /* model name, '\n', label text (owned) */
    float *v;  /* normalised, 'dim' floats (owned) */
    size_t dim;
    uint64_t used;
};

static struct label_vec label_cache[LABEL_CACHE];
static pthread_mutex_t label_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t label_tick;

/* A copy of the vector kept for 'key', of '*dim' floats (the caller frees), or NULL. */
static float *label_get(const char *key, size_t *dim)
{
    float *v = NULL;
    pthread_mutex_lock(&label_mu);
    for (size_t i = 0; i < LABEL_CACHE; i++) {
        struct label_vec *c = &label_cache[i];
        if (c->key && strcmp(c->key, key) == 0) {
            c->used = ++label_tick;
            *dim = c->dim;
            v = xmalloc(c->dim * sizeof(*v));
            memcpy(v, c->v, c->dim * sizeof(*v));
            break;
        }
    }
    pthread_mutex_unlock(&label_mu);
    return v;
}

/* Keep a copy of 'v' for 'key', in place of the least recently used entry. */
static void label_put(const char *key, const float *v, size_t dim)
{
    struct label_vec *slot = &label_cache[0];
    pthread_mutex_lock(&label_mu);
    for (size_t i = 0; i < LABEL_CACHE; i++) {
        struct label_vec *c = &label_cache[i];
        if (c->key && strcmp(c->key, key) == 0) { /* another run kept it meanwhile */
            slot = NULL;
            break;
        }
        if (!c->key) {
            slot = c;
            break;
        }
        if (c->used < slot->used)
            slot = c;
    }
    if (slot) {
        free(slot->key);
        free(slot->v);
        slot->key = xstrdup(key);
        slot->v = xmalloc(dim * sizeof(*v));
        memcpy(slot->v, v, dim * sizeof(*v));
        slot->dim = dim;
        slot->used = ++label_tick;
    }
    pthread_mutex_unlock(&label_mu);
}

/* The cache key of label 'l' (a name, or {name, description}) for 'model': the text it is
 * embedded as ("name: description", or the name) follows the first '\n'. The caller frees. */
static char *label_key(const char *model, const json_t *l)
{
    const char *name =
        json_is_string(l) ? json_string_value(l) : json_string_value(json_object_get(l, "name"));
    const char *desc = json_string_value(json_object_get(l, "description"));
    struct buf b;

    buf_init(&b, 1u << 17);
    buf_appendf(&b, "%s\n", model);
    if (desc && *desc)
        buf_appendf(&b, "%s: %s", name, desc);
    else
        buf_appends(&b, name);
    return buf_take(&b, NULL);
}

/* See builtin.h. */
int wf_builtin_classify(struct embed_pool *p, const char *input, const json_t *labels, json_t **out,
                        struct err *e)
{
    size_t n = json_array_size(labels), dim = 0, best = 0, nmiss = 0;
    const char *model = embed_pool_model(p);
    char **keys = xcalloc(n, sizeof(*keys));
    float **lv = xcalloc(n, sizeof(*lv)); /* each label's vector */
    size_t *miss = xcalloc(n, sizeof(*miss));
    size_t *dims = xcalloc(n, sizeof(*dims)); /* of the kept vectors */
    const char **texts = xcalloc(n + 1, sizeof(*texts));
    size_t *lens = xcalloc(n + 1, sizeof(*lens));
    float *vecs = NULL;
    double best_cos = -2;
    int rc;

    *out = NULL;
    texts[0] = input;
    lens[0] = strlen(input);
    for (size_t i = 0; i < n; i++) {
        keys[i] = label_key(model, json_array_get(labels, i));
        lv[i] = label_get(keys[i], &dims[i]);
        if (!lv[i]) {
            texts[1 + nmiss] = strchr(keys[i], '\n') + 1;
            lens[1 + nmiss] = strlen(texts[1 + nmiss]);
            miss[nmiss++] = i;
        }
    }
    rc = embed(p, texts, lens, 1 + nmiss, &vecs, &dim, e);
    for (size_t i = 0; !rc && i < n; i++) /* one model, one width: never, unless it changed */
        if (lv[i] && dims[i] != dim)
            rc = err_set(e, ERR_UPSTREAM, "upstream_error", NULL,
                         "The embedding model answered vectors of another width.");
    if (!rc) {
        for (size_t m = 0; m < nmiss; m++) {
            label_put(keys[miss[m]], vecs + (m + 1) * dim, dim);
            lv[miss[m]] = xmalloc(dim * sizeof(float));
            memcpy(lv[miss[m]], vecs + (m + 1) * dim, dim * sizeof(float));
        }
        for (size_t i = 0; i < n; i++) {
            double c = embed_vec_dot(vecs, lv[i], dim);
            if (c > best_cos) {
                best_cos = c;
                best = i;
            }
        }
        {
            const json_t *l = json_array_get(labels, best);
            double score = (best_cos + 1) / 2;
            *out = json_object();
            json_object_set_new(*out, "label",
                                json_string(json_is_string(l)
                                                ? json_string_value(l)
                                                : json_string_value(json_object_get(l, "name"))));
            json_object_set_new(*out, "score",
                                json_real(round((score < 0   ? 0
                                                 : score > 1 ? 1
                                                             : score) *
                                                1e4) /
                                          1e4));
        }
    }
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
        free(lv[i]);
    }
    free(keys);
    free(lv);
    free(miss);
    free(dims);
    free(texts);
    free(lens);
    free(vecs);
    return rc;
}

/* The text of 's' ('len' bytes) with its runs of whitespace made single spaces. */
static void append_flat(struct buf *b, const char *s, size_t len)
{
    bool space = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            space = true;
            continue;
        }
        if (space)
            buf_append(b, " ", 1);
        space = false;
        buf_append(b, &c, 1);
    }
}

/* See builtin.h. */
int wf_builtin_summarize(struct embed_pool *p, const char *input, int max, json_t **out,
                         struct err *e)
{
    size_t len = strlen(input), total, n, dim = 0;
    struct chunk *sent;
    const char **texts;
    size_t *lens;
    float *vecs = NULL, *mean;
    bool *keep;
    struct buf b;
    int rc = 0;

    *out = NULL;
    sent = xcalloc(WF_SUMMARY_SENTENCES_MAX, sizeof(*sent));
    total = chunk_sentences(input, len, sent, WF_SUMMARY_SENTENCES_MAX);
    n = total < WF_SUMMARY_SENTENCES_MAX ? total : WF_SUMMARY_SENTENCES_MAX;
    keep = xcalloc(n ? n : 1, sizeof(*keep));
    if (n <= (size_t)max) {
        for (size_t i = 0; i < n; i++)
            keep[i] = true;
    } else {
        texts = xcalloc(n, sizeof(*texts));
        lens = xcalloc(n, sizeof(*lens));
        for (size_t i = 0; i < n; i++) {
            texts[i] = input + sent[i].off;
            lens[i] = sent[i].len;
        }
        rc = embed(p, texts, lens, n, &vecs, &dim, e);
        free(texts);
        free(lens);
        if (!rc) {
            double *score = xcalloc(n, sizeof(*score));
            mean = xcalloc(dim, sizeof(*mean));
            for (size_t i = 0; i < n; i++)
                for (size_t d = 0; d < dim; d++)
                    mean[d] += vecs[i * dim + d];
            embed_vec_normalise(mean, dim);
            for (size_t i = 0; i < n; i++)
                score[i] = embed_vec_dot(mean, vecs + i * dim, dim);
            /* The 'max' best, ties to the earlier sentence. */
            for (int k = 0; k < max; k++) {
                size_t best = n;
                for (size_t i = 0; i < n; i++) {
                    if (!keep[i] && (best == n || score[i] > score[best]))
                        best = i;
                }
                keep[best] = true;
            }
            free(score);
            free(mean);
        }
    }
    if (!rc) {
        buf_init(&b, len + 16);
        for (size_t i = 0; i < n; i++) {
            if (!keep[i])
                continue;
            if (buf_len(&b))
                buf_append(&b, " ", 1);
            append_flat(&b, input + sent[i].off, sent[i].len);
        }
        *out = jo_string(buf_ptr(&b));
        buf_cleanup(&b);
    }
    free(vecs);
    free(keep);
    free(sent);
    return rc;
}

/* See builtin.h. */
json_t *wf_builtin_draft(const char *input, const char *to, const char *tone, const char *signer)
{
    struct chunk first;
    size_t len = strlen(input), n = chunk_sentences(input, len, &first, 1);
    const char *hello = "Hello", *bye = "Best regards,";
    bool named = to && *to && !strchr(to, '@');
    struct buf subject, body;
    json_t *o = json_object();

    if (tone && (strcasecmp(tone, "formal") == 0 || strcasecmp(tone, "professional") == 0)) {
        hello = "Dear";
        bye = "Kind regards,";
    } else if (tone && (strcasecmp(tone, "friendly") == 0 || strcasecmp(tone, "casual") == 0 ||
                        strcasecmp(tone, "warm") == 0)) {
        hello = "Hi";
        bye = "Cheers,";
    }
    buf_init(&subject, 4096);
    if (n > 0) {
        size_t cut = first.len;
        const char *s = input + first.off;
        if (cut > SUBJECT_MAX) {
            /* At the last space before the limit, else between characters. */
            cut = SUBJECT_MAX;
            while (cut > SUBJECT_MAX / 2 && s[cut] != ' ')
                cut--;
            if (s[cut] != ' ') {
                cut = SUBJECT_MAX;
                while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
                    cut--;
            }
        }
        while (cut > 0 && strchr(".!?:;, ", s[cut - 1]))
            cut--;
        append_flat(&subject, s, cut);
    }
    if (!buf_len(&subject))
        buf_appends(&subject, "(no subject)");
    buf_init(&body, len + 4096);
    if (named)
        buf_appendf(&body, "%s %s,\n\n", hello, to);
    else if (strcmp(hello, "Dear") == 0)
        buf_appends(&body, "Dear Sir or Madam,\n\n");
    else
        buf_appendf(&body, "%s,\n\n", hello);
    buf_append(&body, input, len);
    buf_appendf(&body, "\n\n%s\n%s", bye, signer && *signer ? signer : "");
    json_object_set_new(o, "subject", jo_string(buf_ptr(&subject)));
    json_object_set_new(o, "body", jo_string(buf_ptr(&body)));
    buf_cleanup(&subject);
    buf_cleanup(&body);
    return o;
}
