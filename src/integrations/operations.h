/* SPDX-License-Identifier: MIT */
/*
 * operations: a workflow step acting through a connection (contract §13): the stored token,
 * refreshed first when it is about to expire (one refresh at a time per connection), then the
 * provider's own request, its answer mapped to {id, url}. Blocking: worker threads only.
 */
#ifndef WORKFORCE_INTEGRATIONS_OPERATIONS_H
#define WORKFORCE_INTEGRATIONS_OPERATIONS_H

#include "../core/config.h"
#include "../core/crypto.h"
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
    json_t *output; /* {id, url}: owned by the caller when set */
    bool failed;
    bool retry; /* worth another attempt (the provider was unreachable or busy) */
    char error[512];
};

/*
 * Do operation 'action' ("slack.post_message", ...) for tenant 't' with its rendered text
 * options 'options' (an object of strings, borrowed) on 'input'. Not connected: failed with
 * "integration_not_connected: ..."; the provider refusing: failed with its reason.
 */
void integ_operation(const struct integ_env *env, const struct store_tenant *t, const char *action,
                     const json_t *options, const char *input, struct integ_result *out);

#endif
