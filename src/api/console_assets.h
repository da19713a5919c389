/* SPDX-License-Identifier: MIT */
/*
 * console_assets.h: the web console's files, embedded at build time (tools/embed_console.py
 * writes the table, sorted by name) and served by console.c.
 */
#ifndef WORKFORCE_CONSOLE_ASSETS_H
#define WORKFORCE_CONSOLE_ASSETS_H

#include <stddef.h>

struct console_asset {
    const char *name;  /* served as /console/<name> */
    const char *ctype; /* Content-Type */
    const char *body;
    size_t len;
    const char *gz; /* the same bytes gzip-compressed */
    size_t gz_len;
    const char *etag; /* quoted, from the SHA-256 of 'body' */
};

extern const struct console_asset console_assets[];
extern const size_t console_assets_count;

#endif
