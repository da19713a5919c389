/* SPDX-License-Identifier: MIT */
/*
 * operations_int: what the operations of operations.c and the reading operations of
 * tool_call.c share, inside integrations/ only: a blocking call to a provider, the access token
 * of a connection (refreshed first when it is about to expire), a provider's refusal read into
 * a result, and the checks of path parts.
 */
#ifndef WORKFORCE_INTEGRATIONS_OPERATIONS_INT_H
#define WORKFORCE_INTEGRATIONS_OPERATIONS_INT_H

#include "operations.h"
#include "providers.h"

#include "../core/buf.h"
#include "../core/mem.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#define INTEG_GITHUB_NAME_MAX 100  /* bytes of an owner or a repository's name */
#define INTEG_CALENDAR_ID_MAX 1024 /* bytes of a calendar id (an address, or "primary") */

/* One call to a provider under way or done; the members are integ_call_run()'s. */
struct integ_call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int rc;
    long status;     /* the answer's HTTP status */
    struct buf body; /* the answer's body (at most 1 MiB) */
    char why[256];   /* httpc's reason when the call failed */
};

/* 'method' 'url' with 'headers' and 'body' (NULL: none), waited for (30 s at most): 0 with the
 * answer in 'c', or ERR_UPSTREAM. Either way the caller ends with integ_call_cleanup(c). */
int integ_call_run(const struct integ_env *env, const char *method, const char *url,
                   const char *const *headers, size_t nh, const char *body, struct integ_call *c);
void integ_call_cleanup(struct integ_call *c);

/* The tenant's access token for 'p' (in 'a'), refreshed first when it is about to expire; NULL
 * with 'out' failed ("integration_not_connected: ..." when there is no working connection). */
const char *integ_token_now(const struct integ_env *env, const struct store_tenant *t,
                            const struct integ_provider *p, struct arena *a,
                            struct integ_result *out);

/* Fail 'out' with a message; 'retry' when another attempt may succeed. */
void integ_failf(struct integ_result *out, bool retry, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fail 'out' with "<provider> refused: HTTP <status>: <reason>" read from the answer in 'c'. */
void integ_refused(struct integ_result *out, const struct integ_provider *p,
                   const struct integ_call *c);
/* "Authorization: Bearer <token>" in 'a'. */
const char *integ_auth_header(struct arena *a, const char *token);

/* Whether 'repo' is "owner/name" of GitHub (each part one segment of a URL path). */
bool integ_repo_ok(const char *repo);

#endif
