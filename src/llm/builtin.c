/* SPDX-License-Identifier: MIT */
/*
 * builtin.c: the offline engine. No instruction-tuned model ships with Debian or npm, so this
 * engine does not pretend: it answers deterministically as the employee (name, role and
 * capabilities; never its instructions, which may be confidential), says plainly that no
 * language model is configured, restates the request, and quotes the knowledge it found. The reply
 * is delivered in chunks of a few words so that streaming behaves as with a real model. Tokens are
 * words.
 */
#include "llm_int.h"

#include "../core/buf.h"
#include "../core/mem.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_WORDS 4

static void b_free(struct llm *l)
{
    free(l);
}

/* Append at most 'max' characters of 's' (cut at a word boundary, with an ellipsis). */
static void append_cut(struct buf *b, const char *s, size_t max)
{
    size_t n = strlen(s);
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

static void compose(struct buf *b, const struct llm_request *req)
{
    json_t *caps = req->capabilities ? json_loads(req->capabilities, 0, NULL) : NULL;

    buf_appendf(b, "Hello, I'm %s, %s. ", req->employee_name ? req->employee_name : "your employee",
                req->employee_role ? req->employee_role : "an AI employee");
    buf_appends(
        b, "No language model is configured on this server, so the built-in engine is "
           "answering: I can restate your request and quote the knowledge I may read, but I cannot "
           "reason about it or write new content.\n\n");
    buf_appends(b, "You asked: \"");
    append_cut(b, req->message ? req->message : "", 300);
    buf_appends(b, "\"\n\n");
    if (req->nknowledge > 0) {
        buf_appends(b, "From the knowledge I can read:\n");
        for (size_t i = 0; i < req->nknowledge; i++) {
            const struct llm_passage *p = &req->knowledge[i];
            buf_appendf(b, "[%zu] %s", i + 1, p->source);
            if (p->page > 0)
                buf_appendf(b, " (page %d)", p->page);
            buf_appends(b, ": \"");
            append_cut(b, p->content, 400);
            buf_appends(b, "\"\n");
        }
        buf_appends(b, "\n");
    } else if (req->knowledge_searched) {
        buf_appends(b, "I found nothing about this in the knowledge I can read.\n\n");
    }
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
        append_cut(b, req->context, 300);
        buf_appends(b, "\n");
    }
    if (req->nhistory > 0)
        buf_appendf(b, "This conversation has %zu earlier messages.\n", req->nhistory);
    buf_appends(b, "To get real answers, an operator can set WORKFORCE_LLM=openai with an "
                   "OpenAI-compatible server.");
    json_decref(caps);
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

static void b_call(struct llm *l, const struct llm_request *req, const struct llm_sink *sink)
{
    struct buf b;
    struct llm_usage u;
    const char *p, *start;
    int words = 0;
    (void)l;

    buf_init(&b, 64 * 1024);
    compose(&b, req);
    /* Deliver in chunks of a few words; whitespace stays with the word before it. */
    p = start = buf_ptr(&b);
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
    u.input_tokens = prompt_words(req);
    u.output_tokens = llm_count_words(buf_ptr(&b));
    buf_cleanup(&b);
    sink->done(sink->ud, &u, NULL);
}

static const struct llm_ops builtin_ops = {"builtin", b_call, b_free};

/* The built-in engine; '*out' is owned by the caller (llm_free()). */
int llm_builtin_new(struct llm **out)
{
    struct llm *l = xcalloc(1, sizeof(*l));
    l->ops = &builtin_ops;
    *out = l;
    return 0;
}
