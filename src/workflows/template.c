/* SPDX-License-Identifier: MIT */
/*
 * template.c: `{{ ... }}` templates and conditions (see template.h for the language).
 *
 * DESIGN. A parsed tree is one allocation owner (struct tmpl) holding an array of parts (the
 * template's text runs and placeholders) or an array of expression nodes (the condition),
 * each node naming its operands by index, so a tree is freed in a few calls and no recursion
 * walks an unbounded depth: the parser counts its nesting and stops at TMPL_DEPTH_MAX, and the
 * evaluator recurses at most as deep as the parser allowed.
 */
#include "template.h"

#include "../core/mem.h"
#include "../core/utf8.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum root { ROOT_TRIGGER, ROOT_STEPS, ROOT_WORKFLOW, ROOT_RUN };

struct seg {
    char *name; /* NULL: an index */
    size_t index;
};

struct path {
    enum root root;
    size_t step; /* ROOT_STEPS */
    struct seg *segs;
    size_t nsegs;
    char *src; /* the path's text, normalised (no spaces), for placeholders */
};

enum node_kind { N_PATH, N_LIT, N_NOT, N_AND, N_OR, N_CMP };
enum cmp_op { OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_CONTAINS };

struct node {
    enum node_kind kind;
    enum cmp_op op;
    int a, b;         /* operand nodes */
    struct path path; /* N_PATH */
    json_t *lit;      /* N_LIT (owned) */
};

struct part {
    char *text; /* a text run, or NULL for a placeholder */
    size_t len;
    struct path path;
};

struct tmpl {
    bool is_cond;
    bool uses_steps;
    struct part *parts;
    size_t nparts;
    struct node *nodes;
    size_t nnodes;
    int top;
};

/* ---- Errors ---- */

struct parser {
    const char *s;
    size_t len, pos;
    int step_index;
    const char *param;
    struct err *e;
    struct tmpl *t;
    int depth;
};

static int fail(struct parser *p, size_t at, const char *what)
{
    return err_set(p->e, ERR_INVALID, "invalid_request", p->param,
                   "Invalid %s: %s (at character %zu).", p->param, what, at + 1);
}

/* ---- Paths ---- */

static bool name_byte(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

static void skip_space(struct parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
                               p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
        p->pos++;
}

static size_t name_len(const struct parser *p)
{
    size_t n = 0;
    while (p->pos + n < p->len && name_byte(p->s[p->pos + n]))
        n++;
    return n;
}

/* '[' digits ']' at p->pos into '*out'. */
static int parse_index(struct parser *p, size_t *out)
{
    size_t start = p->pos, v = 0, digits = 0;
    p->pos++; /* '[' */
    while (p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9') {
        if (v > 100000000)
            return fail(p, start, "an index is too large");
        v = v * 10 + (size_t)(p->s[p->pos] - '0');
        p->pos++;
        digits++;
    }
    if (digits == 0 || p->pos >= p->len || p->s[p->pos] != ']')
        return fail(p, start, "an index must be [digits]");
    p->pos++;
    *out = v;
    return 0;
}

static void path_free(struct path *path)
{
    for (size_t i = 0; i < path->nsegs; i++)
        free(path->segs[i].name);
    free(path->segs);
    free(path->src);
    memset(path, 0, sizeof(*path));
}

static bool is_word(const struct parser *p, size_t n, const char *w)
{
    return strlen(w) == n && memcmp(p->s + p->pos, w, n) == 0;
}

/* A path at p->pos (its root's name already known to start there). */
static int parse_path(struct parser *p, struct path *out)
{
    size_t start = p->pos, n = name_len(p), cap = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    if (is_word(p, n, "trigger")) {
        out->root = ROOT_TRIGGER;
    } else if (is_word(p, n, "steps")) {
        out->root = ROOT_STEPS;
    } else if (is_word(p, n, "workflow")) {
        out->root = ROOT_WORKFLOW;
    } else if (is_word(p, n, "run")) {
        out->root = ROOT_RUN;
    } else {
        return fail(p, start,
                    "unknown root (a reference starts with trigger, steps[N].output, "
                    "workflow.id or run.id)");
    }
    p->pos += n;
    if (out->root == ROOT_STEPS) {
        if (p->pos >= p->len || p->s[p->pos] != '[')
            return fail(p, start, "steps needs an index: steps[N].output");
        rc = parse_index(p, &out->step);
        if (rc)
            return rc;
        if ((long long)out->step >= (long long)p->step_index)
            return fail(p, start,
                        "a step can only use the output of an earlier step (steps[N] with N "
                        "below this step's index)");
        if (p->len - p->pos < 7 || memcmp(p->s + p->pos, ".output", 7) != 0 ||
            (p->pos + 7 < p->len && name_byte(p->s[p->pos + 7])))
            return fail(p, start, "a step reference is steps[N].output");
        p->pos += 7;
        p->t->uses_steps = true;
    } else if (out->root == ROOT_WORKFLOW || out->root == ROOT_RUN) {
        if (p->len - p->pos < 3 || memcmp(p->s + p->pos, ".id", 3) != 0 ||
            (p->pos + 3 < p->len && name_byte(p->s[p->pos + 3])))
            return fail(p, start, "workflow and run have only .id");
        p->pos += 3;
    }
    for (;;) {
        struct seg sg = {NULL, 0};
        if (p->pos < p->len && p->s[p->pos] == '.') {
            size_t at = p->pos++;
            n = name_len(p);
            if (n == 0)
                return fail(p, at, "a name must follow '.'");
            if (out->root == ROOT_WORKFLOW || out->root == ROOT_RUN)
                return fail(p, at, "workflow.id and run.id have no members");
            sg.name = xstrndup(p->s + p->pos, n);
            p->pos += n;
        } else if (p->pos < p->len && p->s[p->pos] == '[') {
            if (out->root == ROOT_WORKFLOW || out->root == ROOT_RUN)
                return fail(p, p->pos, "workflow.id and run.id have no members");
            rc = parse_index(p, &sg.index);
            if (rc)
                return rc;
        } else {
            break;
        }
        if (out->nsegs == cap) {
            cap = cap ? 2 * cap : 4;
            out->segs = xrealloc(out->segs, cap * sizeof(*out->segs));
        }
        out->segs[out->nsegs++] = sg;
        if (out->nsegs > TMPL_TERMS_MAX)
            return fail(p, start, "a path is too long");
    }
    out->src = xstrndup(p->s + start, p->pos - start);
    return 0;
}

/* The value at 'path' in 'data', or NULL when missing. */
static const json_t *resolve(const struct path *path, const json_t *data)
{
    const json_t *v;
    switch (path->root) {
    case ROOT_TRIGGER:
        v = json_object_get(data, "trigger");
        break;
    case ROOT_STEPS:
        v = json_object_get(json_array_get(json_object_get(data, "steps"), path->step), "output");
        break;
    case ROOT_WORKFLOW:
        v = json_object_get(json_object_get(data, "workflow"), "id");
        break;
    default:
        v = json_object_get(json_object_get(data, "run"), "id");
        break;
    }
    for (size_t i = 0; v && i < path->nsegs; i++) {
        const struct seg *sg = &path->segs[i];
        v = sg->name ? json_object_get(v, sg->name) : json_array_get(v, sg->index);
    }
    return v;
}

/* ---- Templates ---- */

static struct part *new_part(struct tmpl *t, size_t *cap)
{
    if (t->nparts == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        t->parts = xrealloc(t->parts, *cap * sizeof(*t->parts));
    }
    memset(&t->parts[t->nparts], 0, sizeof(t->parts[0]));
    return &t->parts[t->nparts++];
}

/* Append 'n' bytes of text to the last text part (or a new one). */
static void add_text(struct tmpl *t, size_t *cap, const char *s, size_t n)
{
    struct part *pt = t->nparts ? &t->parts[t->nparts - 1] : NULL;
    if (n == 0)
        return;
    if (!pt || !pt->text) {
        pt = new_part(t, cap);
        pt->text = xmalloc(1);
    }
    pt->text = xrealloc(pt->text, pt->len + n + 1);
    memcpy(pt->text + pt->len, s, n);
    pt->len += n;
    pt->text[pt->len] = '\0';
}

static int check_text(struct parser *p)
{
    if (p->len > TMPL_TEXT_MAX)
        return fail(p, TMPL_TEXT_MAX, "longer than 65,536 bytes");
    if (!utf8_valid(p->s, p->len))
        return fail(p, 0, "not valid UTF-8");
    if (memchr(p->s, '\0', p->len))
        return fail(p, (size_t)((const char *)memchr(p->s, '\0', p->len) - p->s),
                    "holds a NUL character");
    return 0;
}

static void init_parser(struct parser *p, const char *s, size_t len, int step_index,
                        const char *param, struct err *e, struct tmpl *t)
{
    memset(p, 0, sizeof(*p));
    p->s = s;
    p->len = len;
    p->step_index = step_index;
    p->param = param;
    p->e = e;
    p->t = t;
}

/* See template.h. */
int tmpl_parse(const char *s, size_t len, int step_index, const char *param, struct tmpl **out,
               struct err *e)
{
    struct tmpl *t = xcalloc(1, sizeof(*t));
    struct parser p;
    size_t cap = 0, nholes = 0, run = 0;
    int rc;

    init_parser(&p, s, len, step_index, param, e, t);
    rc = check_text(&p);
    while (!rc && p.pos < len) {
        if (s[p.pos] == '\\' && len - p.pos >= 3 && s[p.pos + 1] == '{' && s[p.pos + 2] == '{') {
            add_text(t, &cap, s + run, p.pos - run);
            add_text(t, &cap, "{{", 2);
            p.pos += 3;
            run = p.pos;
        } else if (s[p.pos] == '{' && len - p.pos >= 2 && s[p.pos + 1] == '{') {
            size_t open = p.pos;
            struct part *pt;
            struct path path;
            add_text(t, &cap, s + run, p.pos - run);
            if (++nholes > TMPL_TERMS_MAX) {
                rc = fail(&p, open, "more than 256 references");
                break;
            }
            p.pos += 2;
            skip_space(&p);
            if (p.pos + 1 < len && s[p.pos] == '}' && s[p.pos + 1] == '}') {
                rc = fail(&p, open, "an empty {{ }}");
                break;
            }
            if (p.pos >= len || !name_byte(s[p.pos])) {
                rc = fail(&p, p.pos >= len ? open : p.pos,
                          p.pos >= len ? "a {{ is not closed by }}" : "expected a reference");
                break;
            }
            rc = parse_path(&p, &path);
            if (rc) {
                path_free(&path);
                break;
            }
            skip_space(&p);
            if (p.pos + 1 >= len || s[p.pos] != '}' || s[p.pos + 1] != '}') {
                path_free(&path);
                rc = fail(&p, p.pos >= len ? open : p.pos,
                          p.pos >= len ? "a {{ is not closed by }}"
                                       : "a reference must be followed by }}");
                break;
            }
            p.pos += 2;
            run = p.pos;
            pt = new_part(t, &cap);
            pt->path = path;
        } else {
            p.pos++;
        }
    }
    if (!rc)
        add_text(t, &cap, s + run, len - run);
    if (rc) {
        tmpl_free(t);
        t = NULL;
    }
    *out = t;
    return rc;
}

/* Write 'v' as a template renders it. */
static int render_value(const json_t *v, struct buf *out)
{
    char num[64];
    char *dump;
    int rc;

    switch (json_typeof(v)) {
    case JSON_STRING:
        return buf_append(out, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return buf_appends(out, num);
    case JSON_REAL:
    case JSON_OBJECT:
    case JSON_ARRAY:
        dump = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!dump)
            return ERR_NOMEM;
        rc = buf_appends(out, dump);
        free(dump);
        return rc;
    case JSON_TRUE:
        return buf_appends(out, "true");
    case JSON_FALSE:
        return buf_appends(out, "false");
    default:
        return 0; /* null */
    }
}

/* See template.h. */
int tmpl_render(const struct tmpl *t, const json_t *data, bool placeholders, struct buf *out)
{
    for (size_t i = 0; i < t->nparts; i++) {
        const struct part *pt = &t->parts[i];
        const json_t *v;
        int rc;
        if (pt->text) {
            rc = buf_append(out, pt->text, pt->len);
        } else if (placeholders && pt->path.root == ROOT_STEPS) {
            rc = buf_appendf(out, "{{%s}}", pt->path.src);
        } else {
            v = resolve(&pt->path, data);
            rc = v ? render_value(v, out) : 0;
        }
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- Conditions: parsing ---- */

static int new_node(struct parser *p, enum node_kind kind, int *out)
{
    struct tmpl *t = p->t;
    if (t->nnodes >= TMPL_TERMS_MAX)
        return fail(p, p->pos, "more than 256 terms");
    if (!t->nodes)
        t->nodes = xcalloc(TMPL_TERMS_MAX, sizeof(*t->nodes));
    memset(&t->nodes[t->nnodes], 0, sizeof(t->nodes[0]));
    t->nodes[t->nnodes].kind = kind;
    *out = (int)t->nnodes++;
    return 0;
}

/* Four hex digits at p->pos (after the backslash-u of an escape) into '*out'. */
static int hex4(struct parser *p, uint32_t *out)
{
    uint32_t v = 0;
    if (p->len - p->pos < 4)
        return fail(p, p->pos, "\\u needs four hex digits");
    for (size_t i = 0; i < 4; i++) {
        char h = p->s[p->pos + i];
        int d = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (d < 0)
            return fail(p, p->pos, "\\u needs four hex digits");
        v = v << 4 | (uint32_t)d;
    }
    p->pos += 4;
    *out = v;
    return 0;
}

/* A string literal ("..." or '...') with JSON's escapes, into a new json string. */
static int parse_string(struct parser *p, json_t **out)
{
    char quote = p->s[p->pos];
    size_t start = p->pos++;
    struct buf b;
    int rc = 0;

    buf_init(&b, TMPL_TEXT_MAX);
    for (;;) {
        unsigned char c;
        if (p->pos >= p->len) {
            rc = fail(p, start, "a string is not closed");
            break;
        }
        c = (unsigned char)p->s[p->pos];
        if (c == (unsigned char)quote) {
            p->pos++;
            break;
        }
        if (c < 0x20) {
            rc = fail(p, p->pos, "a control character in a string (write it as an escape)");
            break;
        }
        if (c != '\\') {
            buf_append(&b, &p->s[p->pos++], 1);
            continue;
        }
        if (p->pos + 1 >= p->len) {
            rc = fail(p, p->pos, "a string is not closed");
            break;
        }
        c = (unsigned char)p->s[p->pos + 1];
        p->pos += 2;
        switch (c) {
        case '"':
        case '\'':
        case '\\':
        case '/':
            buf_append(&b, (const char *)&c, 1);
            break;
        case 'n':
            buf_appends(&b, "\n");
            break;
        case 't':
            buf_appends(&b, "\t");
            break;
        case 'r':
            buf_appends(&b, "\r");
            break;
        case 'b':
            buf_appends(&b, "\b");
            break;
        case 'f':
            buf_appends(&b, "\f");
            break;
        case 'u': {
            uint32_t cp = 0, lo = 0;
            char enc[4];
            rc = hex4(p, &cp);
            if (!rc && cp >= 0xDC00 && cp <= 0xDFFF)
                rc = fail(p, p->pos - 6, "a lone low surrogate");
            if (!rc && cp >= 0xD800 && cp <= 0xDBFF) {
                /* A high surrogate needs its low one, as the next escape. */
                if (p->len - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u')
                    rc = fail(p, p->pos - 6, "a high surrogate without its low one");
                if (!rc) {
                    p->pos += 2;
                    rc = hex4(p, &lo);
                }
                if (!rc && (lo < 0xDC00 || lo > 0xDFFF))
                    rc = fail(p, p->pos - 6, "a high surrogate without its low one");
                if (!rc)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            if (!rc && cp == 0)
                rc = fail(p, p->pos - 6, "\\u0000 is not allowed");
            if (!rc)
                buf_append(&b, enc, utf8_encode(cp, enc));
            break;
        }
        default:
            rc = fail(p, p->pos - 2, "an unknown escape in a string");
            break;
        }
        if (rc)
            break;
    }
    if (!rc) {
        *out = json_stringn(buf_ptr(&b), buf_len(&b));
        if (!*out)
            rc = fail(p, start, "a string that is not valid UTF-8");
    }
    buf_cleanup(&b);
    return rc;
}

/* A JSON number at p->pos. */
static int parse_number(struct parser *p, json_t **out)
{
    size_t start = p->pos, i = p->pos;
    char tmp[64];
    bool real = false;

    if (i < p->len && p->s[i] == '-')
        i++;
    if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
        return fail(p, start, "expected a number");
    if (p->s[i] == '0') {
        i++;
    } else {
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    if (i < p->len && p->s[i] == '.') {
        real = true;
        i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
            return fail(p, start, "a number needs digits after '.'");
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    if (i < p->len && (p->s[i] == 'e' || p->s[i] == 'E')) {
        real = true;
        i++;
        if (i < p->len && (p->s[i] == '+' || p->s[i] == '-'))
            i++;
        if (i >= p->len || p->s[i] < '0' || p->s[i] > '9')
            return fail(p, start, "a number needs digits in its exponent");
        while (i < p->len && p->s[i] >= '0' && p->s[i] <= '9')
            i++;
    }
    if (i < p->len && name_byte(p->s[i]))
        return fail(p, start, "a number runs into a name");
    if (i - start >= sizeof(tmp))
        return fail(p, start, "a number is too long");
    memcpy(tmp, p->s + start, i - start);
    tmp[i - start] = '\0';
    if (!real) {
        errno = 0;
        long long v = strtoll(tmp, NULL, 10);
        if (errno == 0) {
            *out = json_integer((json_int_t)v);
            p->pos = i;
            return 0;
        }
    }
    {
        double d = strtod(tmp, NULL);
        if (!isfinite(d))
            return fail(p, start, "a number is out of range");
        *out = json_real(d);
    }
    p->pos = i;
    return 0;
}

static int parse_or(struct parser *p, int *out);

static int parse_primary(struct parser *p, int *out)
{
    size_t n;
    int rc;

    skip_space(p);
    if (p->pos >= p->len || (p->s[p->pos] == '}' && p->pos + 1 < p->len && p->s[p->pos + 1] == '}'))
        return fail(p, p->pos, "expected a value");
    if (p->s[p->pos] == '(') {
        size_t open = p->pos++;
        if (++p->depth > TMPL_DEPTH_MAX)
            return fail(p, open, "nested more than 64 levels");
        rc = parse_or(p, out);
        if (rc)
            return rc;
        p->depth--;
        skip_space(p);
        if (p->pos >= p->len || p->s[p->pos] != ')')
            return fail(p, open, "a '(' is not closed");
        p->pos++;
        return 0;
    }
    if (p->s[p->pos] == '"' || p->s[p->pos] == '\'') {
        json_t *v = NULL;
        rc = parse_string(p, &v);
        if (rc)
            return rc;
        rc = new_node(p, N_LIT, out);
        if (rc) {
            json_decref(v);
            return rc;
        }
        p->t->nodes[*out].lit = v;
        return 0;
    }
    if (p->s[p->pos] == '-' || (p->s[p->pos] >= '0' && p->s[p->pos] <= '9')) {
        json_t *v = NULL;
        rc = parse_number(p, &v);
        if (rc)
            return rc;
        rc = new_node(p, N_LIT, out);
        if (rc) {
            json_decref(v);
            return rc;
        }
        p->t->nodes[*out].lit = v;
        return 0;
    }
    n = name_len(p);
    if (n == 0)
        return fail(p, p->pos, "expected a value");
    if (is_word(p, n, "true") || is_word(p, n, "false") || is_word(p, n, "null")) {
        json_t *v = is_word(p, n, "true")    ? json_true()
                    : is_word(p, n, "false") ? json_false()
                                             : json_null();
        p->pos += n;
        rc = new_node(p, N_LIT, out);
        if (rc)
            return rc;
        p->t->nodes[*out].lit = v;
        return 0;
    }
    {
        struct path path;
        rc = parse_path(p, &path);
        if (!rc)
            rc = new_node(p, N_PATH, out);
        if (rc) {
            path_free(&path);
            return rc;
        }
        p->t->nodes[*out].path = path;
        return 0;
    }
}

/* The comparison operator at p->pos, or -1. */
static int peek_op(struct parser *p, size_t *len)
{
    const char *s = p->s + p->pos;
    size_t left = p->len - p->pos;
    if (left >= 2 && s[0] == '=' && s[1] == '=')
        return *len = 2, OP_EQ;
    if (left >= 2 && s[0] == '!' && s[1] == '=')
        return *len = 2, OP_NE;
    if (left >= 2 && s[0] == '<' && s[1] == '=')
        return *len = 2, OP_LE;
    if (left >= 2 && s[0] == '>' && s[1] == '=')
        return *len = 2, OP_GE;
    if (left >= 1 && s[0] == '<')
        return *len = 1, OP_LT;
    if (left >= 1 && s[0] == '>')
        return *len = 1, OP_GT;
    if (left >= 8 && memcmp(s, "contains", 8) == 0 && (left == 8 || !name_byte(s[8])))
        return *len = 8, OP_CONTAINS;
    return -1;
}

static bool is_num_lit(const struct node *n)
{
    return n->kind == N_LIT && json_is_number(n->lit);
}

static bool is_str_lit(const struct node *n)
{
    return n->kind == N_LIT && json_is_string(n->lit);
}

static int parse_cmp(struct parser *p, int *out)
{
    size_t oplen = 0, at;
    int op, rc, b;

    rc = parse_primary(p, out);
    if (rc)
        return rc;
    skip_space(p);
    at = p->pos;
    op = peek_op(p, &oplen);
    if (op < 0)
        return 0;
    p->pos += oplen;
    rc = parse_primary(p, &b);
    if (rc)
        return rc;
    {
        const struct node *l = &p->t->nodes[*out], *r = &p->t->nodes[b];
        if ((is_num_lit(l) && is_str_lit(r)) || (is_str_lit(l) && is_num_lit(r)))
            return fail(p, at, "compares a string with a number");
    }
    {
        int a = *out;
        rc = new_node(p, N_CMP, out);
        if (rc)
            return rc;
        p->t->nodes[*out].op = (enum cmp_op)op;
        p->t->nodes[*out].a = a;
        p->t->nodes[*out].b = b;
    }
    skip_space(p);
    if (peek_op(p, &oplen) >= 0)
        return fail(p, p->pos, "comparisons do not chain (use && between them)");
    return 0;
}

static int parse_not(struct parser *p, int *out)
{
    skip_space(p);
    if (p->pos < p->len && p->s[p->pos] == '!' &&
        !(p->pos + 1 < p->len && p->s[p->pos + 1] == '=')) {
        int a, rc;
        size_t at = p->pos++;
        if (++p->depth > TMPL_DEPTH_MAX)
            return fail(p, at, "nested more than 64 levels");
        rc = parse_not(p, &a);
        if (rc)
            return rc;
        p->depth--;
        rc = new_node(p, N_NOT, out);
        if (!rc)
            p->t->nodes[*out].a = a;
        return rc;
    }
    return parse_cmp(p, out);
}

/* left-assoc chain of 'sub' joined by the two-byte operator 'tok' */
static int parse_chain(struct parser *p, int *out, const char *tok, enum node_kind kind,
                       int (*sub)(struct parser *, int *))
{
    int rc = sub(p, out);
    while (!rc) {
        int b, a = *out;
        skip_space(p);
        if (p->len - p->pos < 2 || memcmp(p->s + p->pos, tok, 2) != 0)
            break;
        p->pos += 2;
        rc = sub(p, &b);
        if (!rc)
            rc = new_node(p, kind, out);
        if (!rc) {
            p->t->nodes[*out].a = a;
            p->t->nodes[*out].b = b;
        }
    }
    return rc;
}

static int parse_and(struct parser *p, int *out)
{
    return parse_chain(p, out, "&&", N_AND, parse_not);
}

static int parse_or(struct parser *p, int *out)
{
    return parse_chain(p, out, "||", N_OR, parse_and);
}

/* See template.h. */
int tmpl_cond_parse(const char *s, size_t len, int step_index, const char *param, struct tmpl **out,
                    struct err *e)
{
    struct tmpl *t = xcalloc(1, sizeof(*t));
    struct parser p;
    size_t end = len;
    int rc;

    t->is_cond = true;
    init_parser(&p, s, len, step_index, param, e, t);
    rc = check_text(&p);
    if (!rc) {
        skip_space(&p);
        while (end > p.pos && (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\n' ||
                               s[end - 1] == '\r'))
            end--;
        if (end - p.pos < 4 || s[p.pos] != '{' || s[p.pos + 1] != '{' || s[end - 2] != '}' ||
            s[end - 1] != '}')
            rc = fail(&p, p.pos, "a condition is one {{ expression }}");
    }
    if (!rc) {
        p.pos += 2;
        p.len = end - 2; /* the expression ends before the closing }} */
        skip_space(&p);
        if (p.pos >= p.len)
            rc = fail(&p, p.pos, "an empty {{ }}");
    }
    if (!rc)
        rc = parse_or(&p, &t->top);
    if (!rc) {
        skip_space(&p);
        if (p.pos < p.len)
            rc = fail(&p, p.pos, p.s[p.pos] == ')' ? "a ')' without its '('" : "unexpected text");
    }
    if (rc) {
        tmpl_free(t);
        t = NULL;
    }
    *out = t;
    return rc;
}

/* ---- Conditions: evaluation ---- */

struct val {
    const json_t *v; /* NULL: missing */
    bool unknown;
};

static bool truthy(const json_t *v)
{
    if (!v)
        return false;
    switch (json_typeof(v)) {
    case JSON_NULL:
    case JSON_FALSE:
        return false;
    case JSON_INTEGER:
    case JSON_REAL:
        return json_number_value(v) != 0;
    case JSON_STRING:
        return json_string_length(v) != 0 && strcmp(json_string_value(v), "false") != 0;
    default:
        return true;
    }
}

/* == of the contract: numbers by value, a string never equals a number, else JSON equality.
 * A missing value is null. */
static bool equal(const json_t *a, const json_t *b)
{
    if (!a)
        a = json_null();
    if (!b)
        b = json_null();
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b) != 0;
}

static int order(const json_t *a, const json_t *b, bool *ok)
{
    *ok = true;
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (json_is_string(a) && json_is_string(b)) {
        size_t la = json_string_length(a), lb = json_string_length(b);
        int c = memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);
        return c ? c : la < lb ? -1 : la > lb ? 1 : 0;
    }
    *ok = false;
    return 0;
}

static bool contains(const json_t *a, const json_t *b)
{
    if (json_is_string(a) && json_is_string(b)) {
        return memmem(json_string_value(a), json_string_length(a), json_string_value(b),
                      json_string_length(b)) != NULL ||
               json_string_length(b) == 0;
    }
    if (json_is_array(a)) {
        size_t i;
        json_t *x;
        json_array_foreach(a, i, x)
        {
            if (equal(x, b))
                return true;
        }
        return false;
    }
    if (json_is_object(a) && json_is_string(b))
        return json_object_get(a, json_string_value(b)) != NULL;
    return false;
}

static enum tmpl_value eval(const struct tmpl *t, int i, const json_t *data, bool ph);

static struct val operand(const struct tmpl *t, int i, const json_t *data, bool ph)
{
    const struct node *n = &t->nodes[i];
    struct val r = {NULL, false};
    enum tmpl_value b;

    if (n->kind == N_LIT) {
        r.v = n->lit;
    } else if (n->kind == N_PATH) {
        if (ph && n->path.root == ROOT_STEPS)
            r.unknown = true;
        else
            r.v = resolve(&n->path, data);
    } else {
        /* A logical sub-expression as an operand: its boolean. */
        b = eval(t, i, data, ph);
        if (b == TMPL_UNKNOWN)
            r.unknown = true;
        else
            r.v = b == TMPL_TRUE ? json_true() : json_false();
    }
    return r;
}

static enum tmpl_value compare(const struct node *n, struct val a, struct val b)
{
    bool ok;
    int c;

    if (a.unknown || b.unknown)
        return TMPL_UNKNOWN;
    switch (n->op) {
    case OP_EQ:
        return equal(a.v, b.v) ? TMPL_TRUE : TMPL_FALSE;
    case OP_NE:
        return equal(a.v, b.v) ? TMPL_FALSE : TMPL_TRUE;
    case OP_CONTAINS:
        return a.v && b.v && contains(a.v, b.v) ? TMPL_TRUE : TMPL_FALSE;
    default:
        break;
    }
    if (!a.v || !b.v)
        return TMPL_FALSE;
    c = order(a.v, b.v, &ok);
    if (!ok)
        return TMPL_FALSE;
    switch (n->op) {
    case OP_LT:
        return c < 0 ? TMPL_TRUE : TMPL_FALSE;
    case OP_LE:
        return c <= 0 ? TMPL_TRUE : TMPL_FALSE;
    case OP_GT:
        return c > 0 ? TMPL_TRUE : TMPL_FALSE;
    default:
        return c >= 0 ? TMPL_TRUE : TMPL_FALSE;
    }
}

static enum tmpl_value eval(const struct tmpl *t, int i, const json_t *data, bool ph)
{
    const struct node *n = &t->nodes[i];
    enum tmpl_value a, b;
    struct val v;

    switch (n->kind) {
    case N_CMP:
        return compare(n, operand(t, n->a, data, ph), operand(t, n->b, data, ph));
    case N_NOT:
        a = eval(t, n->a, data, ph);
        return a == TMPL_UNKNOWN ? TMPL_UNKNOWN : a == TMPL_TRUE ? TMPL_FALSE : TMPL_TRUE;
    case N_AND:
        a = eval(t, n->a, data, ph);
        if (a == TMPL_FALSE)
            return TMPL_FALSE;
        b = eval(t, n->b, data, ph);
        if (b == TMPL_FALSE)
            return TMPL_FALSE;
        return a == TMPL_TRUE && b == TMPL_TRUE ? TMPL_TRUE : TMPL_UNKNOWN;
    case N_OR:
        a = eval(t, n->a, data, ph);
        if (a == TMPL_TRUE)
            return TMPL_TRUE;
        b = eval(t, n->b, data, ph);
        if (b == TMPL_TRUE)
            return TMPL_TRUE;
        return a == TMPL_FALSE && b == TMPL_FALSE ? TMPL_FALSE : TMPL_UNKNOWN;
    default:
        v = operand(t, i, data, ph);
        if (v.unknown)
            return TMPL_UNKNOWN;
        return truthy(v.v) ? TMPL_TRUE : TMPL_FALSE;
    }
}

/* See template.h. */
enum tmpl_value tmpl_eval(const struct tmpl *t, const json_t *data, bool placeholders)
{
    if (!t->is_cond || t->nnodes == 0)
        return TMPL_FALSE;
    return eval(t, t->top, data, placeholders);
}

/* See template.h. */
bool tmpl_uses_steps(const struct tmpl *t)
{
    return t && t->uses_steps;
}

/* See template.h. */
void tmpl_free(struct tmpl *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->nparts; i++) {
        free(t->parts[i].text);
        path_free(&t->parts[i].path);
    }
    free(t->parts);
    for (size_t i = 0; i < t->nnodes; i++) {
        path_free(&t->nodes[i].path);
        json_decref(t->nodes[i].lit);
    }
    free(t->nodes);
    free(t);
}
