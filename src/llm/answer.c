/* SPDX-License-Identifier: MIT */
/*
 * answer.c: what kind of answer a question asks for, and whether a sentence holds one (the
 * "expected answer type" of classic question answering). The built-in engine ranks knowledge
 * sentences by the encoder's similarity to the message; a sentence that holds the kind of
 * answer asked for ("How long...?": a duration or a date; "How much...?": an amount) gets a
 * small bonus, which breaks near ties in favour of the sentence that answers over the one that
 * merely talks about the same thing. The words a sentence shares with the question (by their
 * first five letters, a crude stem: "returned" is "return") weigh a little too, since the
 * encoder alone sometimes prefers a sentence on a neighbouring topic. English only, ASCII case
 * folded; pure, no allocation.
 */
#include "llm_int.h"

#include <stdbool.h>
#include <string.h>

#define WORD_MAX 24       /* longer words are never one of ours */
#define STEM 5            /* letters of a word compared with another's */
#define QUESTION_WORDS 32 /* content words of a question weighed */

/* The next ASCII word of s[*i..len) lowered into 'w' (letters, or digits); 0 at the end. */
static size_t next_word(const char *s, size_t len, size_t *i, char *w)
{
    size_t n = 0;
    while (*i < len) {
        unsigned char c = (unsigned char)s[*i];
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        bool digit = c >= '0' && c <= '9';
        if (alpha || digit) {
            bool first_digit = digit;
            while (*i < len) {
                c = (unsigned char)s[*i];
                alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
                digit = c >= '0' && c <= '9';
                if (first_digit ? !digit : !alpha)
                    break;
                if (n < WORD_MAX)
                    w[n++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
                (*i)++;
            }
            w[n < WORD_MAX ? n : WORD_MAX] = '\0';
            return n < WORD_MAX ? n : WORD_MAX;
        }
        (*i)++;
    }
    w[0] = '\0';
    return 0;
}

static bool among(const char *w, const char *const *list)
{
    for (; *list; list++)
        if (strcmp(w, *list) == 0)
            return true;
    return false;
}

static const char *const time_units[] = {
    "second", "seconds", "minute", "minutes", "hour",  "hours", "day",    "days", "week",
    "weeks",  "month",   "months", "year",    "years", "night", "nights", NULL};
static const char *const calendar[] = {
    "monday",   "tuesday",   "wednesday", "thursday", "friday",   "saturday", "sunday", "today",
    "tomorrow", "tonight",   "january",   "february", "march",    "april",    "june",   "july",
    "august",   "september", "october",   "november", "december", "midnight", "noon",   NULL};
static const char *const number_words[] = {
    "one",    "two",     "three",    "four",    "five",   "six",     "seven", "eight", "nine",
    "ten",    "eleven",  "twelve",   "fifteen", "twenty", "thirty",  "forty", "fifty", "sixty",
    "ninety", "hundred", "thousand", "a",       "an",     "several", "few",   NULL};
static const char *const amount_words[] = {"cost", "costs",  "price", "prices", "fee",
                                           "fees", "charge", "pay",   "paid",   NULL};

static bool is_number(const char *w)
{
    return (w[0] >= '0' && w[0] <= '9') || among(w, number_words);
}

/* See llm_int.h. */
enum llm_answer_kind llm_answer_kind(const char *q, size_t len)
{
    char w[WORD_MAX + 1], prev[WORD_MAX + 1] = "";
    size_t i = 0;
    bool amount = false;

    while (next_word(q, len, &i, w) > 0) {
        if (strcmp(w, "when") == 0 ||
            (strcmp(prev, "how") == 0 && (strcmp(w, "long") == 0 || strcmp(w, "soon") == 0)) ||
            (strcmp(prev, "what") == 0 && strcmp(w, "time") == 0) ||
            (strcmp(prev, "many") == 0 && among(w, time_units)))
            return LLM_ANSWER_TIME;
        if ((strcmp(prev, "how") == 0 && strcmp(w, "much") == 0) ||
            (strcmp(prev, "how") == 0 && strcmp(w, "many") == 0) || among(w, amount_words))
            amount = true;
        memcpy(prev, w, sizeof(prev));
    }
    return amount ? LLM_ANSWER_AMOUNT : LLM_ANSWER_ANY;
}

/* See llm_int.h. */
bool llm_answer_holds(const char *s, size_t len, enum llm_answer_kind kind)
{
    char w[WORD_MAX + 1];
    size_t i = 0, since_number = 3;

    if (kind == LLM_ANSWER_ANY)
        return false;
    for (size_t k = 0; k < len; k++)
        if (kind == LLM_ANSWER_AMOUNT && (s[k] == '$' || s[k] == '%'))
            return true;
    while (next_word(s, len, &i, w) > 0) {
        if (kind == LLM_ANSWER_AMOUNT && is_number(w) && strcmp(w, "a") != 0 &&
            strcmp(w, "an") != 0)
            return true;
        if (kind == LLM_ANSWER_TIME) {
            if (among(w, calendar) || (since_number <= 2 && among(w, time_units)))
                return true;
            since_number = is_number(w) ? 0 : since_number + 1;
        }
    }
    return false;
}

/* Words of a question that say nothing about its topic. */
static const char *const question_stop[] = {
    "how",  "what", "when",  "where", "who",   "whom", "why",  "which",  "the",   "and",    "for",
    "are",  "can",  "could", "does",  "did",   "you",  "your", "will",   "would", "with",   "from",
    "that", "this", "have",  "has",   "there", "long", "much", "many",   "until", "after",  "about",
    "into", "get",  "any",   "our",   "its",   "was",  "were", "should", "tell",  "please", NULL};

static bool same_stem(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la >= STEM && lb >= STEM)
        return memcmp(a, b, STEM) == 0;
    if (la > 1 && a[la - 1] == 's') /* "fees" is "fee" */
        la--;
    if (lb > 1 && b[lb - 1] == 's')
        lb--;
    return la == lb && memcmp(a, b, la) == 0;
}

/* See llm_int.h. */
double llm_answer_overlap(const char *q, size_t qlen, const char *s, size_t slen)
{
    char qw[QUESTION_WORDS][WORD_MAX + 1], w[WORD_MAX + 1];
    bool seen[QUESTION_WORDS] = {false};
    size_t nq = 0, i = 0, hits = 0;

    while (nq < QUESTION_WORDS && next_word(q, qlen, &i, qw[nq]) > 0)
        if (strlen(qw[nq]) >= 3 && !among(qw[nq], question_stop) && !is_number(qw[nq]))
            nq++;
    if (nq == 0)
        return 0;
    i = 0;
    while (next_word(s, slen, &i, w) > 0)
        for (size_t k = 0; k < nq; k++)
            if (!seen[k] && same_stem(qw[k], w)) {
                seen[k] = true;
                hits++;
            }
    return (double)hits / (double)nq;
}
