/* SPDX-License-Identifier: MIT */
/*
 * extract_text.c: the pure extractors of knowledge/ for the text types (TXT, Markdown, CSV,
 * HTML, JSON) and the UTF-8 cleaner every extracted text goes through. No I/O, no globals:
 * extract.c runs them inside the extraction child, and tests/fuzz/fuzz_extract_{text,html,json}.c
 * run them on anything.
 *
 * DESIGN
 * Encoding. Uploads are read as UTF-8. A file is refused (ERR_INVALID, "not UTF-8 text") when
 * more than one of its byte sequences is invalid and they are more than 1 in 256 bytes: that
 * is a Latin-1 or UTF-16 file, or binary, and replacing most of its letters would index
 * garbage. Below that (a stray byte, a cut-off last character) each invalid sequence becomes
 * U+FFFD, counted by maximal subparts as Unicode chapter 3 and the WHATWG decoder do. A UTF-8
 * BOM at the start is dropped.
 *
 * Output. Every extractor writes through extract_put_clean(): valid UTF-8, CRLF and lone CR
 * turned into LF, and the C0 and C1 control characters dropped except TAB and LF (a NUL must
 * never reach a C string; a form feed is a page break only in pdftotext's output).
 *
 * HTML is read the way a browser would show it as text, in one pass without a tree: tags are
 * removed; script, style and the like are dropped with their content; block elements become
 * line or paragraph breaks; whitespace outside <pre> collapses to one space; character
 * references (&amp; &#233; &#x20AC; and the common named ones) are decoded. An unterminated
 * tag or comment ends the text, as it would in a browser.
 *
 * JSON is parsed by jansson (depth-limited, valid UTF-8, no NUL in strings) and written one
 * line per value: "key: value" for scalars in objects, the key on its own line before a
 * nested object or array, array items one per line, and a blank line after each object or
 * array inside an array, so that records become paragraphs for the chunker.
 */
#include "extract.h"
#include "extract_int.h"

#include "../core/err.h"
#include "../core/utf8.h"

#include <jansson.h>
#include <stdint.h>
#include <string.h>

/* ---- UTF-8 ---- */

/* The number of invalid sequences in the 'n' bytes at 'p', each counted as one U+FFFD. */
size_t extract_utf8_bad(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0, bad = 0;

    while (i < n) {
        size_t skip = 1, k;

        if (s[i] < 0x80) {
            i++;
            continue;
        }
        k = utf8_seq((const char *)s + i, n - i, &skip);
        if (k) {
            i += k;
        } else {
            bad++;
            i += skip;
        }
    }
    return bad;
}

/* Whether 'n' bytes holding 'bad' invalid sequences are still UTF-8 text (see DESIGN). */
bool extract_utf8_mostly(size_t bad, size_t n)
{
    return bad <= 1 || bad <= n / 256;
}

/* Whether the code point of the 2-byte sequence at 's' is a C1 control (U+0080-U+009F). */
static bool is_c1(const unsigned char *s)
{
    return s[0] == 0xC2 && s[1] < 0xA0;
}

/*
 * Append the 'n' bytes at 'p' to 'out', cleaned (see DESIGN): invalid UTF-8 as U+FFFD, CRLF and
 * CR as LF, control characters other than TAB and LF dropped. Returns 0, ERR_LIMIT or
 * ERR_NOMEM; on an error 'out' holds part of the text.
 */
int extract_put_clean(struct buf *out, const char *p, size_t n)
{
    static const char repl[] = "\xEF\xBF\xBD";
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0, run = 0; /* s[run, i) is clean and not yet appended */
    int rc = 0;

    while (i < n && !rc) {
        unsigned c = s[i];
        size_t skip = 1, k = 0;

        if ((c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            k = utf8_seq((const char *)s + i, n - i, &skip);
            if (k && !(k == 2 && is_c1(s + i))) {
                i += k;
                continue;
            }
        }
        /* Something to replace or drop: flush the clean run first. */
        rc = buf_append(out, p + run, i - run);
        if (rc)
            break;
        if (c == '\r') {
            rc = buf_append(out, "\n", 1);
            i += (i + 1 < n && s[i + 1] == '\n') ? 2 : 1;
        } else if (c >= 0x80 && !k) {
            rc = buf_append(out, repl, 3);
            i += skip;
        } else {
            i += c >= 0x80 ? 2 : 1; /* a control character (C0, DEL or C1): dropped */
        }
        run = i;
    }
    if (!rc)
        rc = buf_append(out, p + run, n - run);
    return rc;
}

/* Append the code point 'cp' as UTF-8 (U+FFFD for one that is not a scalar value). */
static int put_cp(struct buf *out, uint32_t cp)
{
    char u[4];

    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        cp = 0xFFFD;
    return extract_put_clean(out, u, utf8_encode(cp, u));
}

/* Skip a UTF-8 BOM at the start of '*in'. */
static void skip_bom(const char **in, size_t *n)
{
    if (*n >= 3 && memcmp(*in, "\xEF\xBB\xBF", 3) == 0) {
        *in += 3;
        *n -= 3;
    }
}

/* ---- Plain text ---- */

/*
 * The text of a TXT, Markdown or CSV file: the 'n' bytes at 'in' appended to 'out' cleaned
 * (see DESIGN; Markdown and CSV stay as written, which is what a reader and the embedder
 * want). Returns 0; ERR_INVALID when it is not UTF-8 text; ERR_LIMIT when 'out' would pass its
 * cap; ERR_NOMEM. On an error 'out' may hold part of the text: discard it.
 */
int extract_text(const char *in, size_t n, struct buf *out)
{
    skip_bom(&in, &n);
    if (!extract_utf8_mostly(extract_utf8_bad(in, n), n))
        return ERR_INVALID;
    return extract_put_clean(out, in, n);
}

/* ---- HTML ---- */

/* The writer of extract_html(): pending whitespace is emitted only before more text. */
struct html_out {
    struct buf *out;
    size_t start; /* length of 'out' when we began: nothing before it is ours */
    int nl;       /* pending line breaks: 0, 1 (LF) or 2 (blank line) */
    bool space;   /* pending space */
    int rc;
};

static bool is_html_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static bool is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* ASCII lower case of 'c'. */
static unsigned char lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* Whether the 'n' bytes at 'p' start with 'lit' (lower case), ignoring ASCII case. */
static bool starts_nocase(const char *p, size_t n, const char *lit)
{
    size_t k = strlen(lit);

    if (n < k)
        return false;
    for (size_t i = 0; i < k; i++) {
        if (lower((unsigned char)p[i]) != (unsigned char)lit[i])
            return false;
    }
    return true;
}

/* Ask for a break of 'n' line ends (1 or 2) before the next text. */
static void ho_break(struct html_out *w, int n)
{
    if (n > w->nl)
        w->nl = n;
}

/* Emit the pending breaks or space, if text came before (no leading whitespace). */
static void ho_flush(struct html_out *w)
{
    size_t len = buf_len(w->out);
    const char *p = buf_ptr(w->out);
    int have = 0;

    if (w->rc || len == w->start) {
        w->nl = 0;
        w->space = false;
        return;
    }
    while (have < 2 && len - (size_t)have > w->start && p[len - (size_t)have - 1] == '\n')
        have++;
    if (w->nl > have)
        w->rc = buf_append(w->out, "\n\n", (size_t)(w->nl - have));
    else if (!w->nl && w->space && !have)
        w->rc = buf_append(w->out, " ", 1);
    w->nl = 0;
    w->space = false;
}

/*
 * The length of the line end or dropped control character at 'p' ('n' > 0 bytes), for which
 * extract_put_clean() writes nothing or a LF; 0 for anything else.
 */
static size_t blank_or_dropped(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;

    if ((s[0] < 0x20 && s[0] != '\t') || s[0] == 0x7F)
        return 1;
    if (n >= 2 && is_c1(s))
        return 2;
    return 0;
}

/* Write text: 'p' is raw bytes of the document (not yet cleaned); 'pre' keeps whitespace. */
static void ho_text(struct html_out *w, const char *p, size_t n, bool pre)
{
    size_t i = 0;

    while (i < n && !w->rc) {
        size_t j = i;

        if (pre) {
            /* Kept as written, but the text never opens with a line break. */
            while (buf_len(w->out) == w->start && i < n) {
                size_t k = blank_or_dropped(p + i, n - i);
                if (!k)
                    break;
                i += k;
            }
            ho_flush(w);
            if (!w->rc)
                w->rc = extract_put_clean(w->out, p + i, n - i);
            return;
        }
        if (is_html_space((unsigned char)p[i])) {
            w->space = true;
            i++;
            continue;
        }
        while (j < n && !is_html_space((unsigned char)p[j]))
            j++;
        ho_flush(w);
        if (!w->rc)
            w->rc = extract_put_clean(w->out, p + i, j - i);
        i = j;
    }
}

/* Windows-1252 for the numeric references &#128; to &#159;, as HTML decodes them. */
static const uint16_t cp1252[32] = {0x20AC, 0xFFFD, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021,
                                    0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0xFFFD, 0x017D, 0xFFFD,
                                    0xFFFD, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014,
                                    0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0xFFFD, 0x017E, 0x0178};

/* The named references we decode: the XML five, spaces, punctuation, symbols, Latin-1 letters. */
static const struct {
    const char *name;
    uint32_t cp;
} entities[] = {
    {"amp", '&'},       {"lt", '<'},       {"gt", '>'},       {"quot", '"'},      {"apos", '\''},
    {"nbsp", 0xA0},     {"ensp", 0x2002},  {"emsp", 0x2003},  {"thinsp", 0x2009}, {"shy", 0xAD},
    {"ndash", 0x2013},  {"mdash", 0x2014}, {"lsquo", 0x2018}, {"rsquo", 0x2019},  {"sbquo", 0x201A},
    {"ldquo", 0x201C},  {"rdquo", 0x201D}, {"bdquo", 0x201E}, {"laquo", 0xAB},    {"raquo", 0xBB},
    {"hellip", 0x2026}, {"bull", 0x2022},  {"middot", 0xB7},  {"copy", 0xA9},     {"reg", 0xAE},
    {"trade", 0x2122},  {"deg", 0xB0},     {"plusmn", 0xB1},  {"times", 0xD7},    {"divide", 0xF7},
    {"euro", 0x20AC},   {"pound", 0xA3},   {"yen", 0xA5},     {"cent", 0xA2},     {"sect", 0xA7},
    {"para", 0xB6},     {"micro", 0xB5},   {"frac12", 0xBD},  {"frac14", 0xBC},   {"frac34", 0xBE},
    {"iexcl", 0xA1},    {"iquest", 0xBF},  {"agrave", 0xE0},  {"aacute", 0xE1},   {"acirc", 0xE2},
    {"atilde", 0xE3},   {"auml", 0xE4},    {"aring", 0xE5},   {"aelig", 0xE6},    {"ccedil", 0xE7},
    {"egrave", 0xE8},   {"eacute", 0xE9},  {"ecirc", 0xEA},   {"euml", 0xEB},     {"igrave", 0xEC},
    {"iacute", 0xED},   {"icirc", 0xEE},   {"iuml", 0xEF},    {"ntilde", 0xF1},   {"ograve", 0xF2},
    {"oacute", 0xF3},   {"ocirc", 0xF4},   {"otilde", 0xF5},  {"ouml", 0xF6},     {"oslash", 0xF8},
    {"ugrave", 0xF9},   {"uacute", 0xFA},  {"ucirc", 0xFB},   {"uuml", 0xFC},     {"yacute", 0xFD},
    {"yuml", 0xFF},     {"szlig", 0xDF},   {"Agrave", 0xC0},  {"Aacute", 0xC1},   {"Acirc", 0xC2},
    {"Atilde", 0xC3},   {"Auml", 0xC4},    {"Aring", 0xC5},   {"AElig", 0xC6},    {"Ccedil", 0xC7},
    {"Egrave", 0xC8},   {"Eacute", 0xC9},  {"Ecirc", 0xCA},   {"Euml", 0xCB},     {"Igrave", 0xCC},
    {"Iacute", 0xCD},   {"Icirc", 0xCE},   {"Iuml", 0xCF},    {"Ntilde", 0xD1},   {"Ograve", 0xD2},
    {"Oacute", 0xD3},   {"Ocirc", 0xD4},   {"Otilde", 0xD5},  {"Ouml", 0xD6},     {"Oslash", 0xD8},
    {"Ugrave", 0xD9},   {"Uacute", 0xDA},  {"Ucirc", 0xDB},   {"Uuml", 0xDC},     {"Yacute", 0xDD},
    {"alpha", 0x3B1},   {"beta", 0x3B2},   {"gamma", 0x3B3},  {"delta", 0x3B4},   {"pi", 0x3C0},
    {"sigma", 0x3C3},   {"omega", 0x3C9},  {"mu", 0x3BC},     {"larr", 0x2190},   {"rarr", 0x2192},
    {"uarr", 0x2191},   {"darr", 0x2193},  {"le", 0x2264},    {"ge", 0x2265},     {"ne", 0x2260},
    {"infin", 0x221E},
};

/*
 * The character reference at 'p' ('n' bytes, p[0] == '&'): its code point in '*cp' and its
 * length; 0 when it is not one we decode (the '&' is then text). Numeric references may omit
 * the ';' as browsers allow; named ones must have it.
 */
static size_t char_ref(const char *p, size_t n, uint32_t *cp)
{
    size_t i = 1;

    if (i < n && p[i] == '#') {
        uint32_t v = 0;
        bool hex = false, any = false;

        i++;
        if (i < n && (p[i] == 'x' || p[i] == 'X')) {
            hex = true;
            i++;
        }
        for (; i < n; i++) {
            unsigned char c = (unsigned char)p[i];
            unsigned d;

            if (is_digit(c))
                d = c - '0';
            else if (hex && lower(c) >= 'a' && lower(c) <= 'f')
                d = (unsigned)(lower(c) - 'a' + 10);
            else
                break;
            any = true;
            if (v <= 0x10FFFF)
                v = v * (hex ? 16 : 10) + d; /* past U+10FFFF it only has to stay past it */
        }
        if (!any)
            return 0;
        if (i < n && p[i] == ';')
            i++;
        if (v >= 0x80 && v <= 0x9F)
            v = cp1252[v - 0x80];
        *cp = v;
        return i;
    }
    while (i < n && i <= 8 && (is_alpha((unsigned char)p[i]) || is_digit((unsigned char)p[i])))
        i++;
    if (i >= n || p[i] != ';' || i == 1)
        return 0;
    for (size_t k = 0; k < sizeof(entities) / sizeof(entities[0]); k++) {
        if (strlen(entities[k].name) == i - 1 && memcmp(entities[k].name, p + 1, i - 1) == 0) {
            *cp = entities[k].cp;
            return i + 1;
        }
    }
    return 0;
}

/* Write the text 'p' with its character references decoded. */
static void ho_decoded(struct html_out *w, const char *p, size_t n, bool pre)
{
    size_t i = 0, run = 0;

    while (i < n && !w->rc) {
        uint32_t cp;
        size_t k;

        if (p[i] != '&') {
            i++;
            continue;
        }
        k = char_ref(p + i, n - i, &cp);
        if (!k) {
            i++;
            continue;
        }
        ho_text(w, p + run, i - run, pre);
        if (cp == '\t' || cp == '\n' || cp == '\r') {
            /* "&#10;" is whitespace like a line end in the source: it collapses. */
            ho_text(w, cp == '\t' ? "\t" : "\n", 1, pre);
        } else if (cp == ' ' || cp == '\f' || cp == 0xA0 || cp == 0x2002 || cp == 0x2003 ||
                   cp == 0x2009) {
            ho_text(w, " ", 1, pre);
        } else if (cp != 0xAD) {
            ho_flush(w);
            if (!w->rc)
                w->rc = put_cp(w->out, cp);
        }
        i += k;
        run = i;
    }
    ho_text(w, p + run, n - run, pre);
}

/* What a tag does to the text around it. */
enum tag_kind {
    TAG_INLINE, /* nothing: <b>, <a>, <span>, unknown tags */
    TAG_LINE,   /* a line break: <br>, <li>, <tr> */
    TAG_PARA,   /* a paragraph break: <p>, <div>, <h1> */
    TAG_CELL,   /* a space between table cells */
    TAG_RAW,    /* content dropped, raw text up to its end tag: <script>, <style> */
    TAG_HIDDEN, /* content dropped, nested elements counted: <noscript>, <template>, <svg> */
    TAG_PRE     /* a paragraph whose whitespace is kept */
};

static const struct {
    const char *name;
    enum tag_kind kind;
} tags[] = {
    {"p", TAG_PARA},          {"div", TAG_PARA},        {"h1", TAG_PARA},
    {"h2", TAG_PARA},         {"h3", TAG_PARA},         {"h4", TAG_PARA},
    {"h5", TAG_PARA},         {"h6", TAG_PARA},         {"ul", TAG_PARA},
    {"ol", TAG_PARA},         {"dl", TAG_PARA},         {"table", TAG_PARA},
    {"blockquote", TAG_PARA}, {"section", TAG_PARA},    {"article", TAG_PARA},
    {"header", TAG_PARA},     {"footer", TAG_PARA},     {"nav", TAG_PARA},
    {"aside", TAG_PARA},      {"main", TAG_PARA},       {"figure", TAG_PARA},
    {"form", TAG_PARA},       {"fieldset", TAG_PARA},   {"hr", TAG_PARA},
    {"address", TAG_PARA},    {"details", TAG_PARA},    {"body", TAG_PARA},
    {"html", TAG_PARA},       {"head", TAG_PARA},       {"br", TAG_LINE},
    {"li", TAG_LINE},         {"tr", TAG_LINE},         {"dt", TAG_LINE},
    {"dd", TAG_LINE},         {"title", TAG_LINE},      {"caption", TAG_LINE},
    {"figcaption", TAG_LINE}, {"option", TAG_LINE},     {"summary", TAG_LINE},
    {"legend", TAG_LINE},     {"td", TAG_CELL},         {"th", TAG_CELL},
    {"script", TAG_RAW},      {"style", TAG_RAW},       {"xmp", TAG_RAW},
    {"noscript", TAG_HIDDEN}, {"template", TAG_HIDDEN}, {"svg", TAG_HIDDEN},
    {"iframe", TAG_HIDDEN},   {"object", TAG_HIDDEN},   {"pre", TAG_PRE},
    {"textarea", TAG_PRE},
};

static enum tag_kind tag_kind(const char *name, size_t n)
{
    for (size_t k = 0; k < sizeof(tags) / sizeof(tags[0]); k++) {
        if (strlen(tags[k].name) == n && memcmp(tags[k].name, name, n) == 0)
            return tags[k].kind;
    }
    return TAG_INLINE;
}

/* Offset of the first 'lit' (lower case) at or after 'from', ignoring case; 'n' if none. */
static size_t find_nocase(const char *p, size_t n, size_t from, const char *lit)
{
    for (size_t i = from; i < n; i++) {
        if (lower((unsigned char)p[i]) == (unsigned char)lit[0] && starts_nocase(p + i, n - i, lit))
            return i;
    }
    return n;
}

/* Offset of the first 'lit' at or after 'from'; 'n' if none. */
static size_t find(const char *p, size_t n, size_t from, const char *lit)
{
    size_t k = strlen(lit);

    if (from > n || n - from < k)
        return n;
    for (size_t i = from; i + k <= n; i++) {
        if (p[i] == lit[0] && memcmp(p + i, lit, k) == 0)
            return i;
    }
    return n;
}

/*
 * Scan the tag whose name starts at 'i' (after '<' or '</'): its lower-case name (cut to
 * 'cap' - 1 bytes) in 'name', whether it closes itself ("/>") in '*self_close', and the offset
 * after its '>' ('n' when the input ends first). Quoted attribute values may hold '>'.
 */
static size_t scan_tag(const char *p, size_t n, size_t i, char *name, size_t cap, size_t *nlen,
                       bool *self_close)
{
    size_t k = 0;
    char quote = 0;

    while (i < n && !is_html_space((unsigned char)p[i]) && p[i] != '>' && p[i] != '/') {
        if (k + 1 < cap)
            name[k++] = (char)lower((unsigned char)p[i]);
        i++;
    }
    name[k] = '\0';
    *nlen = k;
    *self_close = false;
    for (; i < n; i++) {
        if (quote) {
            if (p[i] == quote)
                quote = 0;
            continue;
        }
        if (p[i] == '>') {
            *self_close = i > 0 && p[i - 1] == '/';
            return i + 1;
        }
        if (p[i] == '=') {
            size_t j = i + 1;
            while (j < n && is_html_space((unsigned char)p[j]))
                j++;
            if (j < n && (p[j] == '"' || p[j] == '\'')) {
                quote = p[j];
                i = j;
            }
        }
    }
    return n;
}

/* The elements an HTML text is inside of, as extract_html() reads it. */
struct html_state {
    int hidden;           /* depth inside a hidden element (0: not hidden) */
    char hidden_name[16]; /* its name */
    int pre;              /* depth inside preformatted elements */
};

/*
 * The tag 'name' ('nlen' bytes; 'closing', 'self_close') whose end is at byte 'i' of the 'n'
 * bytes at 'in': the breaks and spaces it makes in 'w', the state it changes; returns where
 * reading goes on (past a script's or style's source).
 */
static size_t on_tag(struct html_out *w, struct html_state *st, const char *in, size_t n, size_t i,
                     char *name, size_t nlen, bool closing, bool self_close)
{
    switch (tag_kind(name, nlen)) {
    case TAG_RAW:
        if (!closing && !self_close) {
            /* Everything up to "</name" is script or style source: skip it all. */
            char end[20];
            size_t at;

            end[0] = '<';
            end[1] = '/';
            memcpy(end + 2, name, nlen + 1);
            at = find_nocase(in, n, i, end);
            i = at < n ? scan_tag(in, n, at + 2, name, 16, &nlen, &self_close) : n;
        }
        ho_break(w, 1);
        break;
    case TAG_HIDDEN:
        if (!closing && !self_close) {
            st->hidden = 1;
            memcpy(st->hidden_name, name, nlen + 1);
        }
        break;
    case TAG_PRE:
        if (closing)
            st->pre -= st->pre > 0;
        else if (!self_close)
            st->pre++;
        ho_break(w, 2);
        break;
    case TAG_PARA:
        ho_break(w, 2);
        break;
    case TAG_LINE:
        ho_break(w, 1);
        break;
    case TAG_CELL:
        w->space = true;
        break;
    case TAG_INLINE:
        break;
    }
    return i;
}

/*
 * The text of an HTML document, as a browser would render it without styles (see DESIGN):
 * appended to 'out'. Returns 0; ERR_INVALID when it is not UTF-8 text; ERR_LIMIT when 'out'
 * would pass its cap; ERR_NOMEM. On an error 'out' may hold part of the text: discard it.
 */
int extract_html(const char *in, size_t n, struct buf *out)
{
    struct html_out w = {out, buf_len(out), 0, false, 0};
    struct html_state st = {0, "", 0};
    size_t i = 0, text = 0;

    skip_bom(&in, &n);
    if (!extract_utf8_mostly(extract_utf8_bad(in, n), n))
        return ERR_INVALID;
    while (i < n && !w.rc) {
        char name[16];
        size_t nlen, next;
        bool closing = false, self_close;

        if (in[i] != '<') {
            i++;
            continue;
        }
        /* The text before the '<'. */
        if (!st.hidden)
            ho_decoded(&w, in + text, i - text, st.pre > 0);
        if (starts_nocase(in + i, n - i, "<!--")) {
            next = find(in, n, i + 4, "-->");
            i = next < n ? next + 3 : n;
            text = i;
            continue;
        }
        if (starts_nocase(in + i, n - i, "<![cdata[")) {
            next = find(in, n, i + 9, "]]>");
            if (!st.hidden)
                ho_text(&w, in + i + 9, next - (i + 9), st.pre > 0);
            i = next < n ? next + 3 : n;
            text = i;
            continue;
        }
        if (i + 1 < n && (in[i + 1] == '!' || in[i + 1] == '?')) {
            next = find(in, n, i + 2, ">"); /* a doctype or a processing instruction */
            i = next < n ? next + 1 : n;
            text = i;
            continue;
        }
        if (i + 2 < n && in[i + 1] == '/' && is_alpha((unsigned char)in[i + 2])) {
            closing = true;
        } else if (!(i + 1 < n && is_alpha((unsigned char)in[i + 1]))) {
            /* "a < b": a '<' that opens no tag is text. */
            text = i;
            i++;
            continue;
        }
        next = scan_tag(in, n, i + (closing ? 2 : 1), name, sizeof(name), &nlen, &self_close);
        i = next;
        text = i;
        if (st.hidden) {
            /* Inside a hidden element only its own nesting matters. */
            if (strcmp(name, st.hidden_name) == 0 && !self_close)
                st.hidden += closing ? -1 : 1;
            continue;
        }
        i = on_tag(&w, &st, in, n, i, name, nlen, closing, self_close);
        text = i;
    }
    if (!st.hidden && !w.rc && text < n)
        ho_decoded(&w, in + text, n - text, st.pre > 0);
    return w.rc;
}

/* ---- JSON ---- */

/* Append a scalar's text ('v' is a string, number or boolean); other values add nothing. */
static int put_scalar(struct buf *out, json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_STRING:
        return extract_put_clean(out, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        return buf_appendf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    case JSON_REAL:
        return buf_appendf(out, "%.15g", json_real_value(v));
    case JSON_TRUE:
        return buf_appends(out, "true");
    case JSON_FALSE:
        return buf_appends(out, "false");
    case JSON_NULL:
    case JSON_OBJECT:
    case JSON_ARRAY:
        break;
    }
    return 0;
}

static bool is_container(json_t *v)
{
    return json_is_object(v) || json_is_array(v);
}

/* Write 'v' (see DESIGN). Recursion is bounded by jansson's parser depth limit. */
static int put_json(struct buf *out, json_t *v)
{
    int rc = 0;

    if (json_is_object(v)) {
        const char *key;
        json_t *val;

        json_object_foreach(v, key, val)
        {
            if (json_is_null(val))
                continue;
            rc = extract_put_clean(out, key, strlen(key));
            if (!rc && is_container(val)) {
                rc = buf_append(out, "\n", 1);
                if (!rc)
                    rc = put_json(out, val);
            } else if (!rc) {
                rc = buf_append(out, ": ", 2);
                if (!rc)
                    rc = put_scalar(out, val);
                if (!rc)
                    rc = buf_append(out, "\n", 1);
            }
            if (rc)
                break;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *val;

        json_array_foreach(v, i, val)
        {
            if (json_is_null(val))
                continue;
            if (is_container(val)) {
                rc = put_json(out, val);
                if (!rc)
                    rc = buf_append(out, "\n", 1); /* a blank line after each record */
            } else {
                rc = put_scalar(out, val);
                if (!rc)
                    rc = buf_append(out, "\n", 1);
            }
            if (rc)
                break;
        }
    } else if (!json_is_null(v)) {
        rc = put_scalar(out, v);
        if (!rc)
            rc = buf_append(out, "\n", 1);
    }
    return rc;
}

/*
 * The text of a JSON document (any value at the top; see DESIGN): appended to 'out'. Returns
 * 0; ERR_INVALID when it is not JSON (or holds a NUL in a string); ERR_LIMIT when 'out' would
 * pass its cap; ERR_NOMEM. On an error 'out' may hold part of the text: discard it.
 */
int extract_json(const char *in, size_t n, struct buf *out)
{
    json_error_t jerr;
    json_t *root;
    int rc;

    skip_bom(&in, &n);
    root = json_loadb(in, n, JSON_DECODE_ANY, &jerr);
    if (!root)
        return json_error_code(&jerr) == json_error_out_of_memory ? ERR_NOMEM : ERR_INVALID;
    rc = put_json(out, root);
    json_decref(root);
    return rc;
}
