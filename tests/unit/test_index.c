/* SPDX-License-Identifier: MIT */
/* Unit tests of knowledge/index.c: loading, rules per document, top-k, invalidation, the
 * model of the vectors; and the store's stale-chunk queue behind re-embedding. */
#include "../../src/knowledge/index.h"
#include "t.h"

int main(void)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_tenant t = {.mode = STORE_LIVE}, other = {.mode = STORE_TEST};
    struct kindex *k = kindex_new("m1", false);
    struct store_search_filter f = {NULL, NULL};
    struct store_hit *hits = NULL;
    struct arena a;
    struct err e;
    size_t n = 0;
    float e1[4] = {1, 0, 0, 0}, e2[4] = {0, 1, 0, 0}, e3[4] = {0, 0, 1, 0};
    float q[4] = {0.6f, 0.8f, 0, 0};
    struct store_chunk c1[] = {{"alpha one", 0, e1, 4, "m1"}, {"beta one", 0, e2, 4, "m1"}};
    struct store_chunk c2[] = {{"gamma two", 0, e3, 4, "m1"}};
    struct store_chunk c3[] = {{"delta three", 0, e1, 4, "m2"},
                               {"epsilon three", 0, NULL, 0, NULL}};
    struct store_stale_chunk *stale = NULL;
    size_t ns = 0;
    struct store_document d;

    err_clear(&e);
    arena_init(&a);
    ok(store_open(":memory:", &s, &e) == 0 && store_migrate(s, &e) == 0, "store");
    store_org_create(s, "x", 0, 0, NULL, 0, &org, &e);
    snprintf(t.org_id, sizeof(t.org_id), "%s", org.id);
    snprintf(other.org_id, sizeof(other.org_id), "%s", org.id);
    memset(&d, 0, sizeof(d));
    d.id = "doc_one000000000000000000000";
    d.name = "One";
    d.filename = "one.txt";
    d.content_type = "text/plain";
    d.sha256 = "0";
    d.tags = "[\"a\\\"b\",\"hr\"]";
    d.employee_ids = "[]";
    store_document_create(s, &t, &d);
    store_document_finish(s, d.id, c1, 2, NULL);
    d.id = "doc_two000000000000000000000";
    d.name = "Two";
    d.tags = "[\"sales\"]";
    d.employee_ids = "[\"emp_reader\"]";
    store_document_create(s, &t, &d);
    store_document_finish(s, d.id, c2, 1, NULL);

    is_int(kindex_search(k, s, &t, q, 4, &f, 2, &a, &hits, &n), 0, "search");
    ok(n == 2 && strcmp(hits[0].content, "beta one") == 0 &&
           strcmp(hits[1].content, "alpha one") == 0,
       "best first, top-k cut");
    ok(hits[0].score > 0.79 && hits[0].score < 0.81, "cosine score");
    ok(kindex_bytes(k) > 0, "loaded");
    {
        /* int8 rows: the same order and nearly the same scores, in less memory. */
        struct kindex *k8 = kindex_new("m1", true);
        struct store_hit *h8 = NULL;
        size_t n8 = 0;
        is_int(kindex_search(k8, s, &t, q, 4, &f, 2, &a, &h8, &n8), 0, "int8 search");
        ok(n8 == 2 && strcmp(h8[0].content, "beta one") == 0 &&
               strcmp(h8[1].content, "alpha one") == 0,
           "int8: the same order");
        ok(n8 == 2 && h8[0].score > 0.79 && h8[0].score < 0.81, "int8: the cosine, nearly");
        ok(kindex_bytes(k8) < kindex_bytes(k), "int8: less memory");
        kindex_free(k8);
    }
    f.tags_json = "[\"sales\"]";
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    ok(n == 1 && strcmp(hits[0].document_name, "Two") == 0, "tags filter");
    f.tags_json = "[\"a\\\"b\"]";
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    ok(n == 2 && strcmp(hits[0].document_name, "One") == 0, "a tag with a quote matches exactly");
    f.tags_json = "[\"a\"]";
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    is_int(n, 0, "a prefix of a tag does not match");
    f.tags_json = NULL;
    f.employee_id = "emp_other";
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    ok(n == 2 && strcmp(hits[0].document_name, "One") == 0, "restricted document hidden");
    f.employee_id = "emp_reader";
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    is_int(n, 3, "its reader sees it");
    f.employee_id = NULL;
    kindex_search(k, s, &other, q, 4, &f, 5, &a, &hits, &n);
    is_int(n, 0, "another mode has its own (empty) index");
    /* A third document whose vectors are of another model, or missing. */
    d.id = "doc_three0000000000000000000";
    d.name = "Three";
    d.tags = "[]";
    d.employee_ids = "[]";
    store_document_create(s, &t, &d);
    store_document_finish(s, d.id, c3, 2, NULL);
    kindex_invalidate(k, &t);
    {
        size_t chunks = 0, vectors = 0;
        is_int(kindex_counts(k, s, &t, &chunks, &vectors), 0, "counts");
        ok(chunks == 5 && vectors == 3, "vectors of another model are not searched");
    }
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    is_int(n, 3, "the other model's vector is never compared");
    is_int(store_chunks_stale(s, "m1", 0, 10, &a, &stale, &ns), 0, "stale chunks");
    ok(ns == 2 && strcmp(stale[0].content, "delta three") == 0 &&
           strcmp(stale[1].content, "epsilon three") == 0 &&
           strcmp(stale[0].tenant.org_id, org.id) == 0 && stale[0].tenant.mode == STORE_LIVE,
       "stale: another model's and the missing vector, in order, with the tenant");
    store_chunks_stale(s, "m1", stale[0].rowid, 10, &a, &stale, &ns);
    is_int(ns, 1, "stale: after a rowid");
    store_chunks_stale(s, "m2", 0, 10, &a, &stale, &ns);
    is_int(ns, 4, "stale for model m2: the three m1 chunks and the one without a vector");
    {
        int64_t rowids[2];
        float v[8] = {0, 0, 0, 1, 0, 0, 0, 1};
        store_chunks_stale(s, "m1", 0, 10, &a, &stale, &ns);
        rowids[0] = stale[0].rowid;
        rowids[1] = stale[1].rowid;
        is_int(store_chunks_set_vectors(s, rowids, 2, v, 4, "m1"), 0, "set vectors");
        store_chunks_stale(s, "m1", 0, 10, &a, &stale, &ns);
        is_int(ns, 0, "nothing stale once embedded again");
        kindex_invalidate(k, &t);
        kindex_search(k, s, &t, (float[4]){0, 0, 0, 1}, 4, &f, 5, &a, &hits, &n);
        ok(n == 5 && strcmp(hits[0].document_name, "Three") == 0 && hits[0].score > 0.99,
           "the new vectors are searched");
    }
    store_document_delete(s, &t, "doc_three0000000000000000000");
    kindex_invalidate(k, &t);
    store_document_delete(s, &t, "doc_one000000000000000000000");
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    is_int(n, 1, "a stale index never returns a deleted document");
    kindex_invalidate(k, &t);
    kindex_search(k, s, &t, q, 4, &f, 5, &a, &hits, &n);
    ok(n == 1 && strcmp(hits[0].document_name, "Two") == 0, "reloaded after invalidation");
    {
        /* Another node's index is never told of a change made here: it sees the change by the
         * tenant's knowledge version, at its next search. */
        struct kindex *k2 = kindex_new("m1", false);
        struct store_chunk c4[] = {{"zeta four", 0, e2, 4, "m1"}};
        int64_t v0 = -1, v1 = -1;
        is_int(store_knowledge_version(s, &t, &v0), 0, "knowledge version");
        kindex_search(k2, s, &t, q, 4, &f, 5, &a, &hits, &n);
        is_int(n, 1, "another node's index: loaded");
        d.id = "doc_four00000000000000000000";
        d.name = "Four";
        store_document_create(s, &t, &d);
        store_document_finish(s, d.id, c4, 1, NULL);
        store_knowledge_version(s, &t, &v1);
        ok(v1 > v0, "a ready document moves the version");
        kindex_search(k2, s, &t, q, 4, &f, 5, &a, &hits, &n);
        ok(n == 2 && strcmp(hits[0].document_name, "Four") == 0,
           "another node's index sees a document as soon as it is ready");
        store_document_delete(s, &t, d.id);
        kindex_search(k2, s, &t, q, 4, &f, 5, &a, &hits, &n);
        ok(n == 1 && strcmp(hits[0].document_name, "Two") == 0,
           "and no longer sees it once deleted");
        kindex_free(k2);
    }
    arena_cleanup(&a);
    kindex_free(k);
    store_close(s);
    return done_testing();
}
