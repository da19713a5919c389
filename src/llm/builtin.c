/* SPDX-License-Identifier: MIT */
/*
 * builtin.c: the offline engine. No instruction-tuned model ships with Debian or npm, so this
 * engine does not pretend: it answers deterministically as the employee (name, role and
 * capabilities; never its instructions, which may be confidential) and says plainly that no
 * language model is configured. When knowledge was found for the message, the reply opens with
 * the one or two sentences of those passages nearest the message by the sentence encoder, each
 * cited by its passage's number ("[1]"), then names the sources; otherwise it restates the
 * request and quotes the passages it has. The reply is delivered in chunks of a few words so
 * that streaming behaves as with a real model. Tokens are words.
 *
 * DESIGN. Ranking needs vectors, which come from the embedding pool on its own thread: a call
 * with passages composes everything it can at once (the text after the lead, and the whole
 * reply without a lead for when the pool fails), copies the candidate sentences, queues them
 * with the message and returns; the pool's callback picks the lead and delivers the reply. A
 * call without passages, or without a pool, answers before llm_call() returns.
 */
#include "llm_int.h"

#include "../core/buf.h"
#include "../core/mem.h"
#include "../embed/pool.h"
#include "../knowledge/extract.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_WORDS 4
#define REPLY_MAX (64u * 1024)
#define QUOTE_SENTENCES 64     /* sentences of one passage weighed as a lead */
#define QUOTE_MIN_WORDS 4      /* shorter ones (headings, "Thanks.") never lead */
#define QUOTE_CHARS 400        /* a lead sentence is cut past this */
#define QUOTE_SECOND 0.1       /* a second sentence leads too when its cosine is this close */
#define QUOTE_MIN_COSINE 0.2   /* no lead weaker than this: the passages are quoted instead */
#define QUOTE_KIND_BONUS 0.05  /* for a sentence holding the kind of answer asked (answer.c) */
#define QUOTE_WORDS_BONUS 0.05 /* times the share of the message's topic words it holds */

struct builtin {
    struct llm base;
    struct embed_pool *embed; /* borrowed; NULL: passages quoted, never ranked */
};

/* A reply waiting for the vectors of its candidate sentences. */
struct quote_job {
    struct llm_sink sink;
    struct buf tail;     /* the reply after the lead and its sources */
    struct buf fallback; /* the whole reply without a lead */
    char **sentences;    /* [0] is the message; owned */
    size_t *lens;
    int *passage;  /* passage index of each sentence ([0]: -1) */
    double *bonus; /* what answer.c adds to each sentence's cosine */
    size_t n;
    char **sources; /* "name (page N)" of each passage; owned */
    size_t nsources;
    int64_t prompt_words;
};
static void b_free(struct llm *l)
{
    free(l);
}

/* Append at most 'max' characters of 's' (cut at a word boundary, with an ellipsis). */
static void append_cut(struct buf *b, const char *s, size_t n, size_t max)
{
    if (n <= max) {
        buf_append(b, s, n);
        return;
    }
    while (max > 0 && s[max] != ' ')
        max--;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    buf_append(b, s, max);
    buf_appends(b, "…");
}

static void append_cuts(struct buf *b, const char *s, size_t max)
{
    append_cut(b, s, strlen(s), max);
}

static void append_source(struct buf *b, const struct llm_passage *p)
{
    buf_appends(b, p->source);
    if (p->page > 0)
        buf_appendf(b, " (page %d)", p->page);
}

/* Who answers, and that no language model does. */
static void append_identity(struct buf *b, const struct llm_request *req, bool quoted)
{
    buf_appendf(b, "%s %s, %s. ", quoted ? "I'm" : "Hello, I'm",
                req->employee_name ? req->employee_name : "your employee",
                req->employee_role ? req->employee_role : "an AI employee");
    if (quoted)
        buf_appends(b, "No language model is configured on this server, so the built-in engine "
                       "answered with the sentences of the knowledge I may read nearest your "
                       "message; it cannot reason about them or write new content.\n");
    else
        buf_appends(b, "No language model is configured on this server, so the built-in engine "
                       "is answering: I can restate your request and quote the knowledge I may "
                       "read, but I cannot reason about it or write new content.\n\n");
}

/* What the employee can do, the context and history it was given, and how to get more. */
static void append_rest(struct buf *b, const struct llm_request *req)
{
    json_t *caps = req->capabilities ? json_loads(req->capabilities, 0, NULL) : NULL;

    /* The persona (the employee's instructions) shapes a model's answer but is never quoted:
     * instructions are write-only in the API and may be confidential. */
    if (json_is_array(caps) && json_array_size(caps) > 0) {
        size_t i;
        json_t *v;
        buf_appends(b, "What I can do: ");
        json_array_foreach(caps, i, v)
        {
            const char *c = json_string_value(v);
            if (!c)
                continue;
            if (i)
                buf_appends(b, ", ");
            for (; *c; c++)
                buf_append(b, *c == '_' ? " " : c, 1);
        }
        buf_appends(b, ".\n");
    }
    if (req->context && strcmp(req->context, "{}") != 0) {
        buf_appends(b, "Context you sent: ");
        append_cuts(b, req->context, 300);
        buf_appends(b, "\n");
    }
    if (req->nhistory > 0)
        buf_appendf(b, "This conversation has %zu earlier messages.\n", req->nhistory);
    buf_appends(b, "To get real answers, an operator can set WORKFORCE_LLM=openai with an "
                   "OpenAI-compatible server.");
    json_decref(caps);
}

/* The reply without a lead: a restatement, then the passages quoted. */
static void compose_plain(struct buf *b, const struct llm_request *req)
{
    append_identity(b, req, false);
    buf_appends(b, "You asked: \"");
    append_cuts(b, req->message ? req->message : "", 300);
    buf_appends(b, "\"\n\n");
    if (req->nknowledge > 0) {
        buf_appends(b, "From the knowledge I can read:\n");
        for (size_t i = 0; i < req->nknowledge; i++) {
            buf_appendf(b, "[%zu] ", i + 1);
            append_source(b, &req->knowledge[i]);
            buf_appends(b, ": \"");
            append_cuts(b, req->knowledge[i].content, 400);
            buf_appends(b, "\"\n");
        }
        buf_appends(b, "\n");
    } else if (req->knowledge_searched) {
        buf_appends(b, "I found nothing about this in the knowledge I can read.\n\n");
    }
    append_rest(b, req);
}

static int64_t prompt_words(const struct llm_request *req)
{
    int64_t n = llm_count_words(req->persona) + llm_count_words(req->message) +
                llm_count_words(req->context);
    for (size_t i = 0; i < req->nhistory; i++)
        n += llm_count_words(req->history[i].content);
    for (size_t i = 0; i < req->nknowledge; i++)
        n += llm_count_words(req->knowledge[i].content);
    return n;
}

/* Deliver 'text' in chunks of a few words (whitespace stays with the word before it), then
 * the usage. */
static void deliver(const struct llm_sink *sink, const char *text, int64_t in_words)
{
    struct llm_usage u;
    const char *p = text, *start = text;
    int words = 0;

    while (*p) {
        while (*p && *p != ' ' && *p != '\n')
            p++;
        while (*p == ' ' || *p == '\n')
            p++;
        if (++words == CHUNK_WORDS || !*p) {
            sink->delta(sink->ud, start, (size_t)(p - start));
            start = p;
            words = 0;
        }
    }
    u.input_tokens = in_words;
    u.output_tokens = llm_count_words(text);
    sink->done(sink->ud, &u, NULL);
}

/* ---- The lead: the sentences nearest the message ---- */

static void job_free(struct quote_job *j)
{
    for (size_t i = 0; i < j->n; i++)
        free(j->sentences[i]);
    for (size_t i = 0; i < j->nsources; i++)
        free(j->sources[i]);
    free(j->sentences);
    free(j->lens);
    free(j->passage);
    free(j->bonus);
    free(j->sources);
    buf_cleanup(&j->tail);
    buf_cleanup(&j->fallback);
    free(j);
}

static void add_sentence(struct quote_job *j, const char *s, size_t len, int passage,
                         enum llm_answer_kind kind)
{
    for (size_t i = 1; i < j->n; i++) /* overlapping chunks repeat sentences */
        if (j->lens[i] == len && memcmp(j->sentences[i], s, len) == 0)
            return;
    j->sentences[j->n] = xstrndup(s, len);
    j->lens[j->n] = len;
    j->passage[j->n] = passage;
    j->bonus[j->n] = (llm_answer_holds(s, len, kind) ? QUOTE_KIND_BONUS : 0) +
                     QUOTE_WORDS_BONUS * llm_answer_overlap(j->sentences[0], j->lens[0], s, len);
    j->n++;
}

static size_t words_of(const char *s, size_t len)
{
    size_t n = 0;
    bool in = false;
    for (size_t i = 0; i < len; i++) {
        bool space = s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r';
        if (!space && !in)
            n++;
        in = !space;
    }
    return n;
}

/* The message and the candidate sentences of every passage, and what frames the lead. */
static struct quote_job *job_new(const struct llm_request *req, const struct llm_sink *sink)
{
    struct quote_job *j = xcalloc(1, sizeof(*j));
    struct chunk cs[QUOTE_SENTENCES];
    size_t cap = 1 + req->nknowledge * QUOTE_SENTENCES;
    enum llm_answer_kind kind;

    j->sink = *sink;
    j->prompt_words = prompt_words(req);
    j->sentences = xcalloc(cap, sizeof(*j->sentences));
    j->lens = xcalloc(cap, sizeof(*j->lens));
    j->passage = xcalloc(cap, sizeof(*j->passage));
    j->bonus = xcalloc(cap, sizeof(*j->bonus));
    j->sources = xcalloc(req->nknowledge, sizeof(*j->sources));
    j->nsources = req->nknowledge;
    j->sentences[0] = xstrdup(req->message ? req->message : "");
    j->lens[0] = strlen(j->sentences[0]);
    j->passage[0] = -1;
    j->n = 1;
    kind = llm_answer_kind(j->sentences[0], j->lens[0]);
    for (size_t i = 0; i < req->nknowledge; i++) {
        const char *c = req->knowledge[i].content;
        size_t k = chunk_sentences(c, strlen(c), cs, QUOTE_SENTENCES);
        struct buf src;

        if (k > QUOTE_SENTENCES)
            k = QUOTE_SENTENCES;
        for (size_t m = 0; m < k; m++)
            if (words_of(c + cs[m].off, cs[m].len) >= QUOTE_MIN_WORDS)
                add_sentence(j, c + cs[m].off, cs[m].len, (int)i, kind);
        buf_init(&src, 4096);
        append_source(&src, &req->knowledge[i]);
        j->sources[i] = buf_take(&src, NULL);
    }
    buf_init(&j->tail, REPLY_MAX);
    append_identity(&j->tail, req, true);
    append_rest(&j->tail, req);
    buf_init(&j->fallback, REPLY_MAX);
    compose_plain(&j->fallback, req);
    return j;
}

/* The vectors are here (or the pool failed): choose the lead, deliver, and end the job. */
static void quotes_ranked(void *ud, int rc, const float *vecs, size_t n, size_t dim,
                          const struct err *e)
{
    struct quote_job *j = ud;
    float *v = NULL;
    size_t best = 0, second = 0;
    double cb = -2, cs = -2;
    struct buf out;
    (void)e;

    if (rc || n != j->n || dim == 0) {
        deliver(&j->sink, buf_ptr(&j->fallback), j->prompt_words);
        job_free(j);
        return;
    }
    v = xmalloc(n * dim * sizeof(*v));
    memcpy(v, vecs, n * dim * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        embed_vec_normalise(v + i * dim, dim);
    for (size_t i = 1; i < n; i++) {
        double c = embed_vec_dot(v, v + i * dim, dim) + j->bonus[i];
        if (c > cb) {
            cs = cb;
            second = best;
            cb = c;
            best = i;
        } else if (c > cs) {
            cs = c;
            second = i;
        }
    }
    free(v);
    if (best == 0 || cb < QUOTE_MIN_COSINE) { /* nothing near enough to lead */
        deliver(&j->sink, buf_ptr(&j->fallback), j->prompt_words);
        job_free(j);
        return;
    }
    if (second == 0 || cs < cb - QUOTE_SECOND)
        second = 0;
    buf_init(&out, REPLY_MAX);
    append_cut(&out, j->sentences[best], j->lens[best], QUOTE_CHARS);
    buf_appendf(&out, " [%d]", j->passage[best] + 1);
    if (second) {
        buf_appends(&out, " ");
        append_cut(&out, j->sentences[second], j->lens[second], QUOTE_CHARS);
        buf_appendf(&out, " [%d]", j->passage[second] + 1);
    }
    buf_appends(&out, "\n\nSources: ");
    buf_appendf(&out, "[%d] %s", j->passage[best] + 1, j->sources[j->passage[best]]);
    if (second && j->passage[second] != j->passage[best])
        buf_appendf(&out, "; [%d] %s", j->passage[second] + 1, j->sources[j->passage[second]]);
    buf_appends(&out, "\n\n");
    buf_append(&out, buf_ptr(&j->tail), buf_len(&j->tail));
    deliver(&j->sink, buf_ptr(&out), j->prompt_words);
    buf_cleanup(&out);
    job_free(j);
}

static void b_call(struct llm *l, const struct llm_request *req, const struct llm_sink *sink)
{
    struct builtin *b = (struct builtin *)l;
    struct quote_job *j;
    struct buf text;

    if (b->embed && req->nknowledge > 0) {
        j = job_new(req, sink);
        if (j->n > 1) {
            embed_pool_submit(b->embed, true, (const char *const *)j->sentences, j->lens, j->n,
                              quotes_ranked, j);
            return;
        }
        job_free(j);
    }
    buf_init(&text, REPLY_MAX);
    compose_plain(&text, req);
    deliver(sink, buf_ptr(&text), prompt_words(req));
    buf_cleanup(&text);
}

static const struct llm_ops builtin_ops = {"builtin", b_call, b_free};

/* The built-in engine, ranking knowledge sentences with 'embed' (borrowed, may be NULL);
 * '*out' is owned by the caller (llm_free()). */
int llm_builtin_new(struct embed_pool *embed, struct llm **out)
{
    struct builtin *b = xcalloc(1, sizeof(*b));
    b->base.ops = &builtin_ops;
    b->embed = embed;
    *out = &b->base;
    return 0;
}
