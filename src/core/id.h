/* SPDX-License-Identifier: MIT */
/*
 * id: opaque identifiers, `<prefix>_<base62>` (contract §1), and random base62 secrets.
 */
#ifndef WORKFORCE_ID_H
#define WORKFORCE_ID_H

#include <stdbool.h>
#include <stddef.h>

#define ID_RANDOM_LEN 24 /* base62 characters after the prefix */
#define ID_TIME_LEN 8    /* of which the first: the creation time (ms), so ids sort by it */
#define ID_MAX 48        /* buffer size that holds any id of ours */

int id_base62(char *out, size_t n);                     /* n random base62 chars + NUL */
int id_new(const char *prefix, char *out, size_t outn); /* "emp_" + 24 chars; 0 or ERR_* */
bool id_is_base62(const char *s, size_t n);
bool id_valid(const char *id, const char *prefix); /* prefix + 20..40 base62 chars */

#endif
