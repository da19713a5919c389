/* SPDX-License-Identifier: MIT */
/*
 * operations: a workflow step or an employee's tool acting through a connection: the stored
 * token, refreshed first when it is about to expire (one refresh at a time per connection),
 * then the provider's own request, its answer mapped to {id, url} (operations.c). The tools
 * (tool_call.c) are those five operations and a reading one per provider, each answering a
 * small JSON the model can use. Blocking: worker threads only.
 */
#ifndef WORKFORCE_INTEGRATIONS_OPERATIONS_H
#define WORKFORCE_INTEGRATIONS_OPERATIONS_H

#include "../core/buf.h"
#include "../core/config.h"
#include "../core/crypto.h"
#include "../core/err.h"
#include "../store/store.h"

#include <jansson.h>
#include <stdbool.h>

struct httpc;
struct store_pool;

#define INTEG_REFRESH_AHEAD_MS 60000 /* a token this close to its end is refreshed first */

/* What an operation needs; filled once at start, read-only afterwards. */
struct integ_env {
    const struct config *cfg;
    struct store_pool *pool;
    struct httpc *httpc;
    unsigned char key[CRYPTO_SEAL_KEY_LEN]; /* integ_key() of the server secret */
};

struct integ_result {
    json_t *output; /* {id, url}, or what a reading operation read: owned by the caller */
    bool failed;
    bool retry;        /* worth another attempt (the provider was unreachable or busy) */
    const char *param; /* refused before anything was sent: the argument at fault (static) */
    char error[512];
};

/*
 * Do operation 'action' ("slack.post_message", ...) for tenant 't' with its rendered text
 * options 'options' (an object of strings, borrowed) on 'input'. Not connected: failed with
 * "integration_not_connected: ..."; the provider refusing: failed with its reason.
 */
void integ_operation(const struct integ_env *env, const struct store_tenant *t, const char *action,
                     const json_t *options, const char *input, struct integ_result *out);

/*
 * Call the integration tool 'tool' ("slack.list_channels", ...) for tenant 't' with 'args' (an
 * object already checked against the tool's argument table, borrowed). 0 with the result as
 * compact JSON appended to 'result'; else the error, 'e->msg' what the model is told (never a
 * token): "integration_not_connected" (ERR_NOT_FOUND), a refused argument "invalid_request"
 * with its 'param' (ERR_INVALID), the provider refusing, busy or silent "upstream_error"
 * (ERR_UPSTREAM). Blocks for the provider: each call to it is bounded by 30 s.
 */
int integ_tool_call(const struct integ_env *env, const struct store_tenant *t, const char *tool,
                    const json_t *args, struct buf *result, struct err *e);

#endif
