/* SPDX-License-Identifier: MIT */
/*
 * err: the one error vocabulary of the server. Every fallible function returns 0 or an
 * enum err_code; the details a client may see (contract code, param path, message) travel in
 * an optional struct err out-parameter, filled by err_set(). Only api/errors.c turns a struct
 * err into an HTTP status and body.
 */
#ifndef WORKFORCE_ERR_H
#define WORKFORCE_ERR_H

#include <stddef.h>

enum err_code {
    ERR_OK = 0,
    ERR_NOMEM,     /* allocation failed */
    ERR_INVALID,   /* the input is wrong: 400 family */
    ERR_AUTH,      /* missing or invalid credentials: 401 */
    ERR_FORBIDDEN, /* authenticated, not allowed: 403 */
    ERR_NOT_FOUND, /* absent (or another tenant's): 404 */
    ERR_CONFLICT,  /* state forbids it: 409 */
    ERR_LIMIT,     /* a limit was hit: 413/429, by the contract code */
    ERR_UPSTREAM,  /* a provider failed: 502 */
    ERR_STORE,     /* the database failed */
    ERR_IO,        /* file or socket failure */
    ERR_INTERNAL   /* a bug or an impossible state */
};

/* Client-safe details of a failure. `code` is the contract string ("invalid_request"). */
struct err {
    enum err_code kind;
    const char *code; /* static string, or NULL when unset */
    char param[128];  /* "" when no parameter is at fault */
    char msg[256];
};

/* Fill 'e' (may be NULL) and return 'kind'. 'param' may be NULL. */
int err_set(struct err *e, enum err_code kind, const char *code, const char *param, const char *fmt,
            ...) __attribute__((format(printf, 5, 6)));

/* Reset 'e' to the empty state. */
void err_clear(struct err *e);

/* Short name of an err_code for logs ("ERR_STORE"). */
const char *err_name(enum err_code kind);

#endif
