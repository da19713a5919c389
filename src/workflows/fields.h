/* SPDX-License-Identifier: MIT */
/*
 * fields: the built-in engine's `extract` action. Without a language model, the fields of a
 * text are read from its `name: value` lines and found by small typed scanners (email, url,
 * phone, date, number); a field the text does not hold is null, never invented. The rules are
 * written at the top of fields.c. Pure: no I/O, no globals.
 */
#ifndef WORKFORCE_WORKFLOWS_FIELDS_H
#define WORKFORCE_WORKFLOWS_FIELDS_H

#include <jansson.h>
#include <stddef.h>

/* A labelled string value longer than this (bytes of input) is not a value: the field is null. */
#define WF_FIELDS_STRING_MAX (64u << 10)
/* A link longer than this (bytes) is not a url value. */
#define WF_FIELDS_URL_MAX 8192u

/*
 * The fields {name: type} of 'fields' found in 'text' ('len' bytes, any bytes): a new object
 * with every field as a key, null where not found. The caller owns it (json_decref). Never NULL.
 */
json_t *wf_fields_extract(const char *text, size_t len, const json_t *fields);

#endif
