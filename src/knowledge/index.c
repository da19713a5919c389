/* SPDX-License-Identifier: MIT */
/*
 * index.c: see index.h. DESIGN: one mutex guards the tenant list; a search holds it for the
 * scan (about 10 ms at 100k chunks of 512 floats), which keeps the code simple on a 2-core
 * machine. Access rules are evaluated once per document, not per row: a query computes which
 * documents it may see (tags any-of, employee_ids reader rule) and the scan skips the rest.
 * Tags and employee ids are matched as their JSON string forms inside the document's compact
 * JSON arrays, which jansson writes with one escaping, so a substring test is exact.
 */
#include "index.h"

#include "../core/log.h"
#include "../core/mem.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

struct kdoc {
    char id[ID_MAX];
    char *tags; /* JSON array text */
    char *emps; /* JSON array text */
};

struct ktenant {
    struct ktenant *next;
    const char *model; /* vectors of other models are left out; NULL: any */
    bool int8;
    char key[ID_MAX + 8];
    int64_t version; /* the tenant's knowledge version it was read at (store_knowledge_version) */
    size_t dim;
    size_t chunks; /* searchable chunks, with or without a vector */
    size_t n, cap; /* rows with a vector */
    float *vecs;   /* float32 rows, or NULL with int8 */
    int8_t *q8;    /* int8 rows: row r is scale[r] * q8[r * dim + i] */
    float *scale;
    int64_t *rowids;
    uint32_t *doc;
    struct kdoc *docs;
    size_t ndocs, capdocs;
};

struct kindex {
    char *model; /* NULL: any */
    bool int8;
    pthread_mutex_t mu;
    struct ktenant *head;
};

static void tenant_key(const struct store_tenant *t, char *out, size_t n)
{
    snprintf(out, n, "%s:%d", t->org_id, (int)t->mode);
}

static void tenant_free(struct ktenant *kt)
{
    for (size_t i = 0; i < kt->ndocs; i++) {
        free(kt->docs[i].tags);
        free(kt->docs[i].emps);
    }
    free(kt->docs);
    free(kt->vecs);
    free(kt->q8);
    free(kt->scale);
    free(kt->rowids);
    free(kt->doc);
    free(kt);
}

/* An empty index; the caller owns it (kindex_free()). */
struct kindex *kindex_new(const char *model, bool int8)
{
    struct kindex *k = xcalloc(1, sizeof(*k));
    k->model = model ? xstrdup(model) : NULL;
    k->int8 = int8;
    pthread_mutex_init(&k->mu, NULL);
    return k;
}

/* Free 'k' and every tenant's vectors; NULL is a no-op. */
void kindex_free(struct kindex *k)
{
    if (!k)
        return;
    while (k->head) {
        struct ktenant *kt = k->head;
        k->head = kt->next;
        tenant_free(kt);
    }
    pthread_mutex_destroy(&k->mu);
    free(k->model);
    free(k);
}

/* Drop the tenant's index; the next search loads it again. */
void kindex_invalidate(struct kindex *k, const struct store_tenant *t)
{
    char key[ID_MAX + 8];
    struct ktenant **pp;
    if (!k)
        return;
    tenant_key(t, key, sizeof(key));
    pthread_mutex_lock(&k->mu);
    for (pp = &k->head; *pp; pp = &(*pp)->next) {
        if (strcmp((*pp)->key, key) == 0) {
            struct ktenant *kt = *pp;
            *pp = kt->next;
            tenant_free(kt);
            break;
        }
    }
    pthread_mutex_unlock(&k->mu);
}

static int add_row(void *ud, const struct store_vector_row *row)
{
    struct ktenant *kt = ud;
    kt->chunks++;
    if (!row->embedding || row->dim == 0 || (kt->dim && row->dim != kt->dim))
        return 0;
    if (kt->model && (!row->embed_model || strcmp(row->embed_model, kt->model) != 0))
        return 0;
    kt->dim = row->dim;
    if (kt->ndocs == 0 || strcmp(kt->docs[kt->ndocs - 1].id, row->document_id) != 0) {
        if (kt->ndocs == kt->capdocs) {
            kt->capdocs = kt->capdocs ? 2 * kt->capdocs : 64;
            kt->docs = xrealloc(kt->docs, kt->capdocs * sizeof(*kt->docs));
        }
        snprintf(kt->docs[kt->ndocs].id, sizeof(kt->docs[0].id), "%s", row->document_id);
        kt->docs[kt->ndocs].tags = xstrdup(row->tags ? row->tags : "[]");
        kt->docs[kt->ndocs].emps = xstrdup(row->employee_ids ? row->employee_ids : "[]");
        kt->ndocs++;
    }
    if (kt->n == kt->cap) {
        kt->cap = kt->cap ? 2 * kt->cap : 1024;
        if (kt->int8) {
            kt->q8 = xrealloc(kt->q8, kt->cap * kt->dim);
            kt->scale = xrealloc(kt->scale, kt->cap * sizeof(*kt->scale));
        } else {
            kt->vecs = xrealloc(kt->vecs, kt->cap * kt->dim * sizeof(float));
        }
        kt->rowids = xrealloc(kt->rowids, kt->cap * sizeof(*kt->rowids));
        kt->doc = xrealloc(kt->doc, kt->cap * sizeof(*kt->doc));
    }
    if (kt->int8) { /* symmetric: the largest magnitude maps to 127 */
        float mx = 0;
        int8_t *dst = kt->q8 + kt->n * kt->dim;
        for (size_t i = 0; i < kt->dim; i++)
            mx = fabsf(row->embedding[i]) > mx ? fabsf(row->embedding[i]) : mx;
        kt->scale[kt->n] = mx > 0 ? mx / 127.0f : 0;
        for (size_t i = 0; i < kt->dim; i++)
            dst[i] = (int8_t)(mx > 0 ? lrintf(row->embedding[i] / kt->scale[kt->n]) : 0);
    } else {
        memcpy(kt->vecs + kt->n * kt->dim, row->embedding, kt->dim * sizeof(float));
    }
    kt->rowids[kt->n] = row->rowid;
    kt->doc[kt->n] = (uint32_t)(kt->ndocs - 1);
    kt->n++;
    return 0;
}

/* The tenant's index, loaded when absent. Called with k->mu held. */
/*
 * The index of tenant 't', read from 's' when there is none or when the one kept was read at
 * another version of the tenant's knowledge ('version': changed on this node or on another).
 * Under k->mu.
 */
static int tenant_get(struct kindex *k, struct store *s, const struct store_tenant *t,
                      int64_t version, struct ktenant **out)
{
    char key[ID_MAX + 8];
    struct ktenant *kt, **pp;
    int rc;
    tenant_key(t, key, sizeof(key));
    for (pp = &k->head; *pp; pp = &(*pp)->next) {
        kt = *pp;
        if (strcmp(kt->key, key) != 0)
            continue;
        if (kt->version == version) {
            *out = kt;
            return 0;
        }
        *pp = kt->next;
        tenant_free(kt);
        break;
    }
    kt = xcalloc(1, sizeof(*kt));
    snprintf(kt->key, sizeof(kt->key), "%s", key);
    kt->model = k->model;
    kt->int8 = k->int8;
    kt->version = version;
    rc = store_vectors_each(s, t, add_row, kt);
    if (rc) {
        tenant_free(kt);
        return rc;
    }
    kt->next = k->head;
    k->head = kt;
    *out = kt;
    return 0;
}

/* The JSON string form of 's' ("\"tag\""), or NULL. The caller frees it. */
static char *json_quoted(const char *s)
{
    json_t *v = json_string(s);
    char *out = v ? json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(v);
    return out;
}

/* Which documents 'f' lets the query see. 'ok' has kt->ndocs entries. */
static void allowed_docs(const struct ktenant *kt, const struct store_search_filter *f, bool *ok)
{
    char *tags[64];
    size_t ntags = 0;
    char *reader = f->employee_id ? json_quoted(f->employee_id) : NULL;
    json_t *arr = f->tags_json ? json_loads(f->tags_json, 0, NULL) : NULL;
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && ntags < 64)
            tags[ntags++] = json_quoted(json_string_value(v));
    }
    for (size_t d = 0; d < kt->ndocs; d++) {
        bool pass = true;
        if (arr) {
            pass = false;
            for (size_t j = 0; j < ntags && !pass; j++)
                pass = tags[j] && strstr(kt->docs[d].tags, tags[j]) != NULL;
        }
        if (pass && reader && strcmp(kt->docs[d].emps, "[]") != 0)
            pass = strstr(kt->docs[d].emps, reader) != NULL;
        ok[d] = pass;
    }
    for (size_t j = 0; j < ntags; j++)
        free(tags[j]);
    free(reader);
    json_decref(arr);
}

static float dot(const float *a, const float *b, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * b[i];
        s1 += a[i + 1] * b[i + 1];
        s2 += a[i + 2] * b[i + 2];
        s3 += a[i + 3] * b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

static float dot8(const float *a, const int8_t *b, size_t n)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += a[i] * (float)b[i];
        s1 += a[i + 1] * (float)b[i + 1];
        s2 += a[i + 2] * (float)b[i + 2];
        s3 += a[i + 3] * (float)b[i + 3];
    }
    for (; i < n; i++)
        s0 += a[i] * (float)b[i];
    return (s0 + s1) + (s2 + s3);
}

/* Nearest chunks by cosine (the vectors are unit length: a dot product). */
int kindex_search(struct kindex *k, struct store *s, const struct store_tenant *t, const float *q,
                  size_t dim, const struct store_search_filter *f, unsigned limit, struct arena *a,
                  struct store_hit **out, size_t *n)
{
    struct ktenant *kt;
    int64_t *best_row = arena_alloc(a, ((size_t)limit + 1) * sizeof(*best_row));
    double *best = arena_alloc(a, ((size_t)limit + 1) * sizeof(*best));
    size_t have = 0;
    int64_t version;
    bool *ok;
    int rc;

    *out = NULL;
    *n = 0;
    rc = store_knowledge_version(s, t, &version);
    if (rc)
        return rc;
    pthread_mutex_lock(&k->mu);
    rc = tenant_get(k, s, t, version, &kt);
    if (rc || kt->n == 0 || kt->dim != dim || limit == 0) {
        pthread_mutex_unlock(&k->mu);
        return rc;
    }
    ok = arena_alloc(a, kt->ndocs * sizeof(*ok));
    allowed_docs(kt, f, ok);
    for (size_t r = 0; r < kt->n; r++) {
        double d;
        size_t pos;
        if (!ok[kt->doc[r]])
            continue;
        d = kt->int8 ? (double)kt->scale[r] * dot8(q, kt->q8 + r * dim, dim)
                     : dot(q, kt->vecs + r * dim, dim);
        if (have == limit && d <= best[have - 1])
            continue;
        pos = have < limit ? have++ : limit - 1;
        while (pos > 0 && best[pos - 1] < d) {
            best[pos] = best[pos - 1];
            best_row[pos] = best_row[pos - 1];
            pos--;
        }
        best[pos] = d;
        best_row[pos] = kt->rowids[r];
    }
    pthread_mutex_unlock(&k->mu);
    return store_hits_by_rowid(s, best_row, best, have, a, out, n);
}

/* Bytes held by the vectors of every loaded tenant. */
size_t kindex_bytes(struct kindex *k)
{
    size_t total = 0;
    pthread_mutex_lock(&k->mu);
    for (struct ktenant *kt = k->head; kt; kt = kt->next)
        total += kt->cap * ((kt->int8 ? kt->dim + sizeof(float) : kt->dim * sizeof(float)) +
                            sizeof(int64_t) + sizeof(uint32_t));
    pthread_mutex_unlock(&k->mu);
    return total;
}

/*
 * The tenant's searchable chunks ('*chunks') and those with a vector ('*vectors'), loading its
 * index: a tenant without chunks needs no search at all, one without vectors no embedding.
 * Returns 0, or the store's error (then both are 0).
 */
int kindex_counts(struct kindex *k, struct store *s, const struct store_tenant *t, size_t *chunks,
                  size_t *vectors)
{
    struct ktenant *kt;
    int64_t version;
    int rc;
    *chunks = *vectors = 0;
    rc = store_knowledge_version(s, t, &version);
    if (rc)
        return rc;
    pthread_mutex_lock(&k->mu);
    rc = tenant_get(k, s, t, version, &kt);
    if (rc == 0) {
        *chunks = kt->chunks;
        *vectors = kt->n;
    }
    pthread_mutex_unlock(&k->mu);
    return rc;
}
