/* SPDX-License-Identifier: MIT */
/*
 * fields.c: the `extract` action of the built-in engine. No language model and no regex
 * library: `name: value` lines and a few hand-written scanners, each a single forward pass.
 *
 * Rules, in order, for each field {name: type} of the action:
 *  1. Labelled lines. A line (up to '\n'; a final '\r' is blank) whose label, the text before
 *     its first ':' or '=', equals the field's name ignoring ASCII case, blanks, '_' and '-'
 *     ("Due date:", "due-date =" and "DUE_DATE:" all name `due_date`) gives the text after the
 *     separator, trimmed. The value must convert by the field's type (below); the first
 *     labelled line whose value converts wins. A name that is only blanks, '_' and '-' names
 *     no line.
 *  2. Otherwise the first match of the type's pattern in the whole text (string and boolean:
 *     none, the field stays null).
 * Types, as a labelled value and in the whole text:
 *  - string: the labelled value itself, not empty, at most WF_FIELDS_STRING_MAX bytes, with
 *    each invalid UTF-8 sequence replaced by U+FFFD. Never searched for.
 *  - boolean: a labelled yes/no, true/false, y/n or on/off (any case, one trailing '.' or '!'
 *    allowed) as true or false. Never searched for.
 *  - email: local@domain as written: local part of letters, digits and . _ % + - (at most
 *    64, no leading/trailing or double dot), a domain of at least two labels of letters,
 *    digits and inner hyphens, the last one letters only (2+). ASCII only; a final '.' is
 *    the sentence's.
 *  - url: http:// or https:// (any case, not inside a word) and a letter, digit or '[', up to
 *    a blank, control character, '<', '>', '"' or invalid UTF-8; then trailing . , ; : ! ? '
 *    and * are dropped, and a ')' or ']' with no partner inside the link. At most
 *    WF_FIELDS_URL_MAX bytes.
 *  - phone: an optional '+', then 7 to 15 digits in groups joined by at most three of
 *    space, '.', '-', '(' and ')' (at most one '.' or '-', two spaces, balanced parentheses),
 *    as written from the first '+', '(' or digit to the last digit. Not glued to a word or
 *    another number on either side ("ID12345678", "12345678@x", "/12345678"), and not a
 *    date (a 4-2-2 or 2-2-4 run joined by one '-' or '.' of plausible month and day), a
 *    decimal (two groups joined by '.') or an IPv4 address.
 *  - date: ISO YYYY-MM-DD, optionally followed by THH:MM[:SS[.fff]][Z|+HH:MM|-HH:MM];
 *    "25 November 2026", "25th of Nov. 2026", "November 25, 2026", "Nov 25 2026" (month
 *    names in full or 3 letters, "Sept", any case). Real calendar dates only (month lengths,
 *    Gregorian leap years). Slashed dates are ambiguous (day or month first) and never read.
 *    The value is always "YYYY-MM-DD".
 *  - number: optional sign, digits, optional thousands commas (1-3 digits then groups of
 *    exactly 3: "1,250.50"), optional decimal part; not glued to letters, and not joined by
 *    '-', '.', ',', ':' or '/' to more digits ("12,50", "5-10" and "10:30" are no number).
 *    The search skips links, dates and phone numbers, so their digits are never a number. A
 *    JSON integer when there is no decimal part and it fits int64, a real otherwise; at most
 *    64 characters.
 *
 * DESIGN. Every scanner is a function of a position that looks at a bounded window or at a
 * run it then jumps over, so each search is linear in the input; the labelled pass is one walk
 * over the lines that compares each label, normalised into one buffer, with each field's
 * normalised name. The whole-text search of a type runs at most once per call, whatever the
 * number of fields of that type. Nothing is allocated per character. Strings taken from the
 * input are valid UTF-8: email, phone and date values are ASCII by construction, a link stops
 * at invalid UTF-8, and a labelled string is repaired.
 */
#include "fields.h"

#include "../core/mem.h"
#include "../core/str.h"
#include "../core/utf8.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUMBER_MAX 64   /* characters of a number, sign and decimal point included */
#define PHONE_GROUPS 16 /* digit groups of a phone number kept for the shape checks */
#define BLANKS_MAX 4    /* blanks between the words of a written date */

/* ---- Characters ---- */

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(unsigned char c)
{
    return is_digit(c) || is_alpha(c);
}

static bool is_blank(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static char lower(unsigned char c)
{
    return (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
}

/* The byte p[i], or 0 past the end (the scanners treat 0 like the end: no letter, no digit). */
static unsigned char at(const char *p, size_t n, size_t i)
{
    return i < n ? (unsigned char)p[i] : 0;
}

/* How many digits start at p[i], counting no further than 'cap'. */
static size_t ndigits(const char *p, size_t n, size_t i, size_t cap)
{
    size_t k = 0;
    while (k < cap && is_digit(at(p, n, i + k)))
        k++;
    return k;
}

/* The value of the 'k' (at most 4) digits at p[i]. */
static int digits_value(const char *p, size_t i, size_t k)
{
    int v = 0;
    for (size_t j = 0; j < k; j++)
        v = v * 10 + (p[i + j] - '0');
    return v;
}

/* How many spaces and tabs start at p[i], counting up to BLANKS_MAX + 1. */
static size_t spaces(const char *p, size_t n, size_t i)
{
    size_t k = 0;
    while (k <= BLANKS_MAX && (at(p, n, i + k) == ' ' || at(p, n, i + k) == '\t'))
        k++;
    return k;
}

/*
 * True when a phone number or a number may start at p[i]: at the start, or after a blank,
 * a non-ASCII byte or an opening or quoting mark; after ':' or ',' only when no digit comes
 * before them ("10:30" and "1,5" are not two numbers). 'money' also allows '$' and '~'.
 */
static bool token_start_ok(const char *p, size_t i, bool money)
{
    unsigned char c;
    if (i == 0)
        return true;
    c = (unsigned char)p[i - 1];
    if (c == 0 || c >= 0x80 || is_blank(c) || strchr("([{<>\"'*;", c))
        return true;
    if (c == ':' || c == ',')
        return i < 2 || !is_digit((unsigned char)p[i - 2]);
    return money && (c == '$' || c == '~');
}

/* True when a phone number or a number may end at p[j]: no word, address or more digits. */
static bool token_end_ok(const char *p, size_t n, size_t j)
{
    unsigned char c = at(p, n, j);
    if (is_alnum(c) || c == '_' || c == '@')
        return false;
    return !(c && strchr(".,:/-", c) && is_digit(at(p, n, j + 1)));
}

/* ---- Dates ---- */

struct ymd {
    int y, m, d;
};

static bool leap(int y)
{
    return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

static bool valid_date(int y, int m, int d)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (m < 1 || m > 12 || d < 1)
        return false;
    return d <= mdays[m - 1] + (m == 2 && leap(y));
}

/* A date may start at p[i]: not inside a word, a number or a path. */
static bool date_start_ok(const char *p, size_t i)
{
    unsigned char c = i ? (unsigned char)p[i - 1] : 0;
    return !(is_alnum(c) || c == '_' || c == '-' || c == '.' || c == '/');
}

/* A date may end at p[j]: no letter or digit follows, nor a separator and a digit. */
static bool date_end_ok(const char *p, size_t n, size_t j)
{
    unsigned char c = at(p, n, j);
    if (is_alnum(c) || c == '_')
        return false;
    return !(c && strchr("-./:", c) && is_digit(at(p, n, j + 1)));
}

/* The two digits at p[i] (no third follows) as a number in [lo, hi], or -1. */
static int field2(const char *p, size_t n, size_t i, int lo, int hi)
{
    int v;
    if (ndigits(p, n, i, 3) != 2)
        return -1;
    v = digits_value(p, i, 2);
    return v >= lo && v <= hi ? v : -1;
}

/* The end of the time THH:MM[:SS[.fff]][Z|±HH:MM] whose 'T' is at p[i - 1], or 0. */
static size_t time_at(const char *p, size_t n, size_t i)
{
    size_t j = i;
    unsigned char c;

    if (field2(p, n, j, 0, 23) < 0 || at(p, n, j + 2) != ':' || field2(p, n, j + 3, 0, 59) < 0)
        return 0;
    j += 5;
    if (at(p, n, j) == ':') {
        if (field2(p, n, j + 1, 0, 60) < 0)
            return 0;
        j += 3;
        if (at(p, n, j) == '.' && is_digit(at(p, n, j + 1))) {
            j++;
            while (is_digit(at(p, n, j)) && j - i < 64)
                j++;
        }
    }
    c = at(p, n, j);
    if (c == 'Z')
        return j + 1;
    if (c == '+' || c == '-') {
        if (field2(p, n, j + 1, 0, 23) < 0 || at(p, n, j + 3) != ':' ||
            field2(p, n, j + 4, 0, 59) < 0)
            return 0;
        return j + 6;
    }
    return j;
}

/* The end of the ISO date (and time) at p[i], or 0. */
static size_t iso_at(const char *p, size_t n, size_t i, struct ymd *out)
{
    size_t j = i + 10;

    if (ndigits(p, n, i, 5) != 4 || at(p, n, i + 4) != '-' || ndigits(p, n, i + 5, 3) != 2 ||
        at(p, n, i + 7) != '-' || ndigits(p, n, i + 8, 3) != 2)
        return 0;
    out->y = digits_value(p, i, 4);
    out->m = digits_value(p, i + 5, 2);
    out->d = digits_value(p, i + 8, 2);
    if (!valid_date(out->y, out->m, out->d))
        return 0;
    if (at(p, n, j) == 'T') {
        j = time_at(p, n, j + 1);
        if (!j)
            return 0;
    }
    return date_end_ok(p, n, j) ? j : 0;
}

/* The end of the month name at p[i] (a whole word, full or abbreviated, '.' after an
 * abbreviation), its number in '*m'; or 0. */
static size_t month_at(const char *p, size_t n, size_t i, int *m)
{
    static const char *const names[] = {"january",   "february", "march",    "april",
                                        "may",       "june",     "july",     "august",
                                        "september", "october",  "november", "december"};
    char w[10];
    size_t k = 0;

    while (k < sizeof(w) && is_alpha(at(p, n, i + k))) {
        w[k] = lower(at(p, n, i + k));
        k++;
    }
    if (k < 3 || k == sizeof(w))
        return 0;
    for (int mi = 0; mi < 12; mi++) {
        size_t full = strlen(names[mi]);
        bool abbrev = k == 3 || (mi == 8 && k == 4); /* "Sept" */
        if ((k == full || abbrev) && memcmp(w, names[mi], k) == 0) {
            *m = mi + 1;
            return i + k + (k < full && at(p, n, i + k) == '.');
        }
    }
    return 0;
}

/* The end of a day of the month (1-2 digits, optional st/nd/rd/th) at p[i], or 0. */
static size_t day_at(const char *p, size_t n, size_t i, int *d)
{
    size_t k = ndigits(p, n, i, 3), j = i + k;
    char a = lower(at(p, n, j)), b = lower(at(p, n, j + 1));

    if (k < 1 || k > 2)
        return 0;
    *d = digits_value(p, i, k);
    if (((a == 's' && b == 't') || (a == 'n' && b == 'd') || (a == 'r' && b == 'd') ||
         (a == 't' && b == 'h')) &&
        !is_alnum(at(p, n, j + 2)))
        j += 2;
    return j;
}

/* 1 to BLANKS_MAX spaces or tabs at p[j], after an optional ','; the end, or 0. */
static size_t gap(const char *p, size_t n, size_t j, bool comma)
{
    size_t k;
    if (comma && at(p, n, j) == ',')
        j++;
    k = spaces(p, n, j);
    return k >= 1 && k <= BLANKS_MAX ? j + k : 0;
}

/* The end of the 4-digit year at p[j] that ends a written date, or 0. */
static size_t year_at(const char *p, size_t n, size_t j, int *y)
{
    if (ndigits(p, n, j, 5) != 4 || !date_end_ok(p, n, j + 4))
        return 0;
    *y = digits_value(p, j, 4);
    return j + 4;
}

/* The end of "25 November 2026" or "25th of Nov. 2026" at p[i], or 0. */
static size_t day_first_at(const char *p, size_t n, size_t i, struct ymd *out)
{
    size_t j = day_at(p, n, i, &out->d);
    if (!j || !(j = gap(p, n, j, false)))
        return 0;
    if (lower(at(p, n, j)) == 'o' && lower(at(p, n, j + 1)) == 'f') {
        size_t k = gap(p, n, j + 2, false);
        if (k)
            j = k;
    }
    if (!(j = month_at(p, n, j, &out->m)) || !(j = gap(p, n, j, true)))
        return 0;
    return year_at(p, n, j, &out->y);
}

/* The end of "November 25, 2026" or "Nov 25th 2026" at p[i], or 0. */
static size_t month_first_at(const char *p, size_t n, size_t i, struct ymd *out)
{
    size_t j = month_at(p, n, i, &out->m);
    if (!j || !(j = gap(p, n, j, false)) || !(j = day_at(p, n, j, &out->d)))
        return 0;
    if (!(j = gap(p, n, j, true)))
        return 0;
    return year_at(p, n, j, &out->y);
}

/* The end of a valid date in any accepted form starting at p[i], or 0. Bounded work. */
static size_t date_at(const char *p, size_t n, size_t i, struct ymd *out)
{
    unsigned char c = (unsigned char)p[i];
    size_t e;

    if (!date_start_ok(p, i))
        return 0;
    if (is_digit(c)) {
        e = iso_at(p, n, i, out);
        if (!e)
            e = day_first_at(p, n, i, out);
    } else if (is_alpha(c)) {
        e = month_first_at(p, n, i, out);
    } else {
        return 0;
    }
    return e && valid_date(out->y, out->m, out->d) ? e : 0;
}

/* The first date in p[0..n) as a "YYYY-MM-DD" string, or NULL. */
static json_t *find_date(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct ymd d;
        if (date_at(p, n, i, &d)) {
            char s[32];
            snprintf(s, sizeof(s), "%04d-%02d-%02d", d.y, d.m, d.d);
            return json_string(s);
        }
    }
    return NULL;
}

/* ---- Phone numbers ---- */

static bool is_phone_sep(unsigned char c)
{
    return c == ' ' || c == '.' || c == '-' || c == '(' || c == ')';
}

static bool is_phone_start(unsigned char c)
{
    return c == '+' || c == '(' || is_digit(c);
}

struct phone {
    size_t ngroups, digits;
    size_t len[PHONE_GROUPS]; /* digits of each group */
    int val[PHONE_GROUPS];    /* value of each group of at most 4 digits */
    char sep[PHONE_GROUPS];   /* the one-character separator before each group, else 0 */
    int open, close;          /* parentheses */
};

/* True when the separator p[s..e) between two digit groups (or before the first) is one. */
static bool phone_sep_ok(const char *p, size_t s, size_t e, bool first, struct phone *ph)
{
    int marks = 0, blanks = 0, open = 0, close = 0;
    for (size_t i = s; i < e; i++) {
        marks += p[i] == '.' || p[i] == '-';
        blanks += p[i] == ' ';
        open += p[i] == '(';
        close += p[i] == ')';
    }
    if (marks > 1 || blanks > 2 || open > 1 || close > 1)
        return false;
    if (first && e - s != (size_t)open)
        return false; /* only "(" may come before the first digit */
    ph->open += open;
    ph->close += close;
    return true;
}

/* True when the groups read as a date, a decimal or an IPv4 address rather than a phone. */
static bool phone_lookalike(const struct phone *ph)
{
    size_t g = ph->ngroups < PHONE_GROUPS ? ph->ngroups : PHONE_GROUPS;
    if (g == 2 && ph->sep[1] == '.')
        return true;
    if (g == 4 && ph->sep[1] == '.' && ph->sep[2] == '.' && ph->sep[3] == '.' && ph->len[0] <= 3 &&
        ph->len[1] <= 3 && ph->len[2] <= 3 && ph->len[3] <= 3)
        return true;
    for (size_t k = 0; k + 2 < g; k++) {
        const size_t *l = ph->len + k;
        const int *v = ph->val + k;
        char s = ph->sep[k + 1];
        if (s != ph->sep[k + 2] || (s != '-' && s != '.'))
            continue;
        if (l[0] == 4 && l[1] <= 2 && l[2] <= 2 && v[1] >= 1 && v[1] <= 12 && v[2] >= 1 &&
            v[2] <= 31)
            return true;
        if (l[0] <= 2 && l[1] <= 2 && l[2] == 4 && v[0] >= 1 && v[0] <= 31 && v[1] >= 1 &&
            v[1] <= 31 && (v[0] <= 12 || v[1] <= 12))
            return true;
    }
    return false;
}

/*
 * A phone number whose first character is p[i]: true and its span [*ps, *pe); false when
 * none starts there. Either way '*next' is where the run of phone characters scanned from
 * p[i] ended: no phone number starts before it (the caller resumes there).
 */
static bool phone_at(const char *p, size_t n, size_t i, size_t *ps, size_t *pe, size_t *next)
{
    struct phone ph;
    size_t j = i, last = i;

    memset(&ph, 0, sizeof(ph));
    *next = i + 1;
    if (!is_phone_start(at(p, n, i)) || !token_start_ok(p, i, false))
        return false;
    if (p[i] == '+')
        j++;
    for (;;) { /* the whole run, so that no tail of a long number reads as a phone number */
        size_t s = j, k;
        while (j < n && is_phone_sep((unsigned char)p[j]) && j - s <= 3)
            j++;
        if (j - s > 3 || !is_digit(at(p, n, j)) || !phone_sep_ok(p, s, j, ph.ngroups == 0, &ph))
            break;
        for (k = 0; is_digit(at(p, n, j + k));)
            k++;
        if (ph.ngroups < PHONE_GROUPS) {
            ph.len[ph.ngroups] = k;
            ph.val[ph.ngroups] = k <= 4 ? digits_value(p, j, k) : -1;
            ph.sep[ph.ngroups] = j - s == 1 ? p[s] : 0;
        }
        ph.ngroups++;
        ph.digits += k;
        j += k;
        last = j;
    }
    if (last > i)
        *next = last;
    if (ph.digits < 7 || ph.digits > 15 || !token_end_ok(p, n, last) || phone_lookalike(&ph))
        return false;
    if (p[i] == '(' && ph.open > ph.close) {
        i++; /* "(555-123-4567" : the '(' opens a remark, not an area code */
        ph.open--;
    }
    if (ph.open != ph.close)
        return false;
    *ps = i;
    *pe = last;
    return true;
}

/* The first phone number in p[0..n), as written, or NULL. */
static json_t *find_phone(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t s, e, next;
        if (phone_at(p, n, i, &s, &e, &next))
            return json_stringn(p + s, e - s);
        i = next;
    }
    return NULL;
}

/* ---- Links ---- */

/* True when the 'n' bytes at 'p' begin with the lowercase ASCII 'prefix', in any case. */
static bool starts_nocase(const char *p, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    if (n < k)
        return false;
    for (size_t i = 0; i < k; i++) {
        if (lower((unsigned char)p[i]) != prefix[i])
            return false;
    }
    return true;
}

/*
 * The run of a link starting at p[i]: its end (0 when no link starts there), and in '*pend'
 * the end of the link once trailing punctuation is dropped, or 0 when the run is no link.
 */
static size_t url_at(const char *p, size_t n, size_t i, size_t *pend)
{
    size_t j, host;
    size_t open = 0, close = 0, sq_open = 0, sq_close = 0;

    *pend = 0;
    if (lower(at(p, n, i)) != 'h' || (i > 0 && is_alnum((unsigned char)p[i - 1])))
        return 0;
    if (starts_nocase(p + i, n - i, "https://"))
        host = i + 8;
    else if (starts_nocase(p + i, n - i, "http://"))
        host = i + 7;
    else
        return 0;
    if (!is_alnum(at(p, n, host)) && at(p, n, host) != '[')
        return 0;
    for (j = host; j < n;) {
        unsigned char c = (unsigned char)p[j];
        size_t skip, k = 1;
        if (c <= 0x20 || c == 0x7F || c == '<' || c == '>' || c == '"')
            break;
        if (c >= 0x80 && !(k = utf8_seq(p + j, n - j, &skip)))
            break;
        open += c == '(';
        close += c == ')';
        sq_open += c == '[';
        sq_close += c == ']';
        j += k;
    }
    *pend = j;
    while (*pend > host) {
        unsigned char c = (unsigned char)p[*pend - 1];
        if (strchr(".,;:!?'*", c)) {
            (*pend)--;
        } else if (c == ')' && close > open) {
            close--;
            (*pend)--;
        } else if (c == ']' && sq_close > sq_open) {
            sq_close--;
            (*pend)--;
        } else {
            break;
        }
    }
    if (*pend == host || *pend - i > WF_FIELDS_URL_MAX)
        *pend = 0;
    return j;
}

/* The first http(s) link in p[0..n), as written, or NULL. */
static json_t *find_url(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t end, run = url_at(p, n, i, &end);
        if (end)
            return json_stringn(p + i, end - i);
        i = run ? run : i + 1;
    }
    return NULL;
}

/* ---- Email addresses ---- */

static bool is_local(unsigned char c)
{
    return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-';
}

static bool is_host(unsigned char c)
{
    return is_alnum(c) || c == '-' || c == '.';
}

/* True when p[0..n) is a domain: 2+ labels of 1-63, no edge hyphen, an alphabetic TLD. */
static bool valid_domain(const char *p, size_t n)
{
    size_t labels = 0, i = 0;
    if (n == 0 || n > 253)
        return false;
    while (i <= n) {
        size_t s = i;
        bool alpha = true;
        while (i < n && p[i] != '.') {
            alpha = alpha && is_alpha((unsigned char)p[i]);
            i++;
        }
        if (i == s || i - s > 63 || p[s] == '-' || p[i - 1] == '-')
            return false;
        labels++;
        if (i == n)
            return labels >= 2 && alpha && i - s >= 2;
        i++;
    }
    return false;
}

/* True when p[s..a) is a local part: 1 to 64 characters, no edge or double dot. */
static bool valid_local(const char *p, size_t s, size_t a)
{
    if (a == s || a - s > 64 || p[s] == '.' || p[a - 1] == '.')
        return false;
    for (size_t i = s; i + 1 < a; i++) {
        if (p[i] == '.' && p[i + 1] == '.')
            return false;
    }
    return true;
}

/* The first email address in p[0..n), as written, or NULL. Each '@' looks at most at the
 * characters up to its neighbours, so the walk is linear. */
static json_t *find_email(const char *p, size_t n)
{
    size_t from = 0;
    const char *hit;

    while (from < n && (hit = memchr(p + from, '@', n - from)) != NULL) {
        size_t a = (size_t)(hit - p), s = a, e = a + 1;
        while (s > 0 && is_local((unsigned char)p[s - 1]) && a - s <= 64)
            s--;
        while (e < n && is_host((unsigned char)p[e]) && e - a <= 254)
            e++;
        from = a + 1;
        if ((s > 0 && is_local((unsigned char)p[s - 1])) || (e < n && is_host((unsigned char)p[e])))
            continue; /* too long to be an address */
        while (s < a && p[s] == '.')
            s++;
        while (e > a + 1 && p[e - 1] == '.')
            e--;
        if (valid_local(p, s, a) && valid_domain(p + a + 1, e - a - 1))
            return json_stringn(p + s, e - s);
    }
    return NULL;
}

/* ---- Numbers ---- */

/* The end of the number at p[i] and its value in '*out', or 0. */
static size_t number_at(const char *p, size_t n, size_t i, json_t **out)
{
    char buf[NUMBER_MAX + 1];
    size_t b = 0, j = i, k;
    bool frac = false;
    unsigned char c = at(p, n, i);
    int64_t iv;

    if ((c == '+' || c == '-') && is_digit(at(p, n, i + 1))) {
        if (c == '-')
            buf[b++] = '-';
        j++;
    } else if (!is_digit(c)) {
        return 0;
    }
    if (!token_start_ok(p, i, true))
        return 0;
    for (k = 0; is_digit(at(p, n, j + k));)
        k++;
    if (k > NUMBER_MAX - b)
        return 0;
    memcpy(buf + b, p + j, k);
    b += k;
    j += k;
    if (k <= 3) {
        while (at(p, n, j) == ',' && ndigits(p, n, j + 1, 4) == 3 && b + 3 <= NUMBER_MAX) {
            memcpy(buf + b, p + j + 1, 3);
            b += 3;
            j += 4;
        }
    }
    if (at(p, n, j) == ',' && is_digit(at(p, n, j + 1)))
        return 0; /* "12,50" or "1,2,3": not one number */
    if (at(p, n, j) == '.' && is_digit(at(p, n, j + 1))) {
        frac = true;
        j++;
        for (k = 0; is_digit(at(p, n, j + k));)
            k++;
        if (k + 1 > NUMBER_MAX - b)
            return 0;
        buf[b++] = '.';
        memcpy(buf + b, p + j, k);
        b += k;
        j += k;
    }
    if (!token_end_ok(p, n, j))
        return 0;
    buf[b] = '\0';
    if (!frac && str_to_i64((struct str){buf, b}, &iv) == 0) {
        *out = json_integer(iv);
    } else {
        double d = strtod(buf, NULL);
        if (!isfinite(d))
            return 0;
        *out = json_real(d);
    }
    return j;
}

/* The first number in p[0..n) that is not part of a link, a date or a phone number, or NULL. */
static json_t *find_number(const char *p, size_t n)
{
    size_t i = 0, phone_until = 0;

    while (i < n) {
        size_t end, s, e;
        struct ymd d;
        json_t *v = NULL;

        if ((end = url_at(p, n, i, &e)) || (end = date_at(p, n, i, &d))) {
            i = end;
            continue;
        }
        if (i >= phone_until && is_phone_start((unsigned char)p[i])) {
            if (phone_at(p, n, i, &s, &e, &phone_until)) {
                i = e;
                continue;
            }
        }
        if (number_at(p, n, i, &v))
            return v;
        i++;
    }
    return NULL;
}

/* ---- Labelled values ---- */

/* p[0..n) as a JSON string with every invalid UTF-8 sequence as U+FFFD, or NULL when empty
 * or longer than WF_FIELDS_STRING_MAX. */
static json_t *conv_string(const char *p, size_t n)
{
    char *s;
    size_t i = 0, o = 0;
    json_t *v;

    if (n == 0 || n > WF_FIELDS_STRING_MAX)
        return NULL;
    if (utf8_valid(p, n))
        return json_stringn(p, n);
    s = xmalloc(n * 3);
    while (i < n) {
        size_t skip = 1, k = utf8_seq(p + i, n - i, &skip);
        if (k) {
            memcpy(s + o, p + i, k);
            o += k;
            i += k;
        } else {
            memcpy(s + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += skip;
        }
    }
    v = json_stringn_nocheck(s, o);
    free(s);
    return v;
}

/* yes/no, true/false, y/n, on/off (any case, one trailing '.' or '!') as true/false, or NULL. */
static json_t *conv_boolean(const char *p, size_t n)
{
    static const char *const yes[] = {"yes", "true", "y", "on"};
    static const char *const no[] = {"no", "false", "n", "off"};
    struct str w = {p, n};

    if (w.len && (p[w.len - 1] == '.' || p[w.len - 1] == '!'))
        w.len--;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (str_eq_nocase(w, yes[i]))
            return json_true();
        if (str_eq_nocase(w, no[i]))
            return json_false();
    }
    return NULL;
}

/* ---- Extraction ---- */

/* A field type: how a labelled value converts, and how the whole text is searched. */
typedef json_t *(*conv_fn)(const char *p, size_t n);

struct ftype {
    const char *name;
    conv_fn labelled; /* the value of a labelled line, or NULL when it does not convert */
    conv_fn search;   /* the first match in the text, or NULL; NULL: never searched */
};

static const struct ftype ftypes[] = {
    {"string", conv_string, NULL},     {"number", find_number, find_number},
    {"boolean", conv_boolean, NULL},   {"date", find_date, find_date},
    {"email", find_email, find_email}, {"url", find_url, find_url},
    {"phone", find_phone, find_phone},
};

#define NTYPES (sizeof(ftypes) / sizeof(ftypes[0]))

struct field {
    const char *name; /* key of 'fields' (borrowed) */
    size_t name_len;
    const struct ftype *type; /* NULL: not a known type, always null */
    char *norm;               /* the name normalised (owned) */
    size_t norm_len;          /* 0: names no line */
    json_t *value;            /* found value (owned), or NULL */
};

/*
 * 'n' bytes at 's' lowercased (ASCII), without blanks, '_' and '-', into 'out' (room for
 * 'cap' bytes): its length, or cap + 1 as soon as it does not fit.
 */
static size_t normalize(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (is_blank(c) || c == '_' || c == '-')
            continue;
        if (o == cap)
            return cap + 1;
        out[o++] = lower(c);
    }
    return o;
}

static struct str trim(const char *p, size_t n)
{
    while (n && is_blank((unsigned char)*p)) {
        p++;
        n--;
    }
    while (n && is_blank((unsigned char)p[n - 1]))
        n--;
    return (struct str){p, n};
}

/* Rule 1: give each field the first labelled line's value that converts. */
static void read_labels(const char *p, size_t n, struct field *f, size_t nf, size_t maxnorm)
{
    char *label = xmalloc(maxnorm + 1);
    size_t left = 0, i = 0;

    for (size_t k = 0; k < nf; k++)
        left += f[k].type && f[k].norm_len > 0;
    while (i < n && left) {
        const char *nl = memchr(p + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - p) : n, sep = i, ln;
        struct str v;

        while (sep < end && p[sep] != ':' && p[sep] != '=')
            sep++;
        ln = sep < end ? normalize(p + i, sep - i, label, maxnorm) : 0;
        v = trim(p + sep + (sep < end), end - sep - (sep < end));
        for (size_t k = 0; ln > 0 && ln <= maxnorm && k < nf; k++) {
            if (f[k].value || !f[k].type || f[k].norm_len != ln || memcmp(f[k].norm, label, ln))
                continue;
            f[k].value = f[k].type->labelled(v.p, v.len);
            left -= f[k].value != NULL;
        }
        i = end + 1;
    }
    free(label);
}

/* Rule 2: search the whole text once per type for the fields still without a value. */
static void search_text(const char *p, size_t n, struct field *f, size_t nf)
{
    json_t *found[NTYPES] = {NULL};
    bool searched[NTYPES] = {false};

    for (size_t k = 0; k < nf; k++) {
        size_t t;
        if (f[k].value || !f[k].type || !f[k].type->search)
            continue;
        t = (size_t)(f[k].type - ftypes);
        if (!searched[t]) {
            found[t] = f[k].type->search(p, n);
            searched[t] = true;
        }
        if (found[t])
            f[k].value = json_copy(found[t]);
    }
    for (size_t t = 0; t < NTYPES; t++)
        json_decref(found[t]);
}

/*
 * The fields named by 'fields' ({name: type}, as checked by the workflow definition) read
 * from 'text' ('len' bytes, any bytes, NULL when 'len' is 0) by the rules at the top of this
 * file. Returns a new object holding every field of 'fields' as a key, with null where the
 * text does not hold it; the caller owns it and releases it with json_decref. Never NULL
 * (allocation failures abort). A type not in the table gives null.
 */
json_t *wf_fields_extract(const char *text, size_t len, const json_t *fields)
{
    /* jansson's iterator takes a mutable object; 'fields' is only read */
    json_t *obj = (json_t *)(uintptr_t)fields, *t, *out = json_object();
    size_t nf = json_object_size(fields), k = 0, maxnorm = 0, nlen;
    struct field *f;
    const char *name;

    if (!text) {
        text = "";
        len = 0;
    }
    f = xcalloc(nf ? nf : 1, sizeof(*f));
    json_object_keylen_foreach(obj, name, nlen, t)
    {
        f[k].name = name;
        f[k].name_len = nlen;
        for (size_t i = 0; i < NTYPES && json_is_string(t); i++) {
            if (strcmp(json_string_value(t), ftypes[i].name) == 0)
                f[k].type = &ftypes[i];
        }
        f[k].norm = xmalloc(nlen + 1);
        f[k].norm_len = normalize(name, nlen, f[k].norm, nlen);
        if (f[k].norm_len > maxnorm)
            maxnorm = f[k].norm_len;
        k++;
    }
    read_labels(text, len, f, nf, maxnorm);
    search_text(text, len, f, nf);
    for (k = 0; k < nf; k++) {
        json_object_setn_new(out, f[k].name, f[k].name_len, f[k].value ? f[k].value : json_null());
        free(f[k].norm);
    }
    free(f);
    return out;
}
