/* SPDX-License-Identifier: MIT */
/*
 * tools.c: GET /v1/tools, the tools of the organization (contract §19): the built-in ones and
 * one per integration operation, from the catalog (src/tools/catalog.c), each with the JSON
 * Schema of its arguments and whether it can be called now (an integration tool is available
 * while the organization's connection to its provider is connected). Not paged: the list is
 * short and whole.
 */
#include "api.h"

#include "../tools/tools.h"

#include <string.h>

/* Whether the tenant's connection to 'provider' is connected. */
static bool connected(struct router_req *r, const char *provider, struct err *e, int *rc)
{
    struct store_integration row;
    int got = store_integration_get(r->store, &r->tenant, provider, r->arena, &row);
    if (got == ERR_NOT_FOUND)
        return false;
    if (got) {
        *rc = err_set(e, got, "internal_error", NULL, "integration read failed");
        return false;
    }
    return strcmp(row.status, "connected") == 0;
}

/* GET /v1/tools */
int api_tools_list(struct router_req *r, struct err *e)
{
    size_t n;
    const struct tools_def *defs = tools_defs(&n);
    json_t *o = jo_object(), *list = json_array();
    int rc = 0;

    for (size_t i = 0; i < n && !rc; i++) {
        const struct tools_def *d = &defs[i];
        bool available = d->source != TOOLS_INTEGRATION || connected(r, d->provider, e, &rc);
        json_t *t = jo_object();
        jo_str(t, "name", d->name);
        jo_str(t, "description", d->description);
        jo_str(t, "source", tools_sources[d->source]);
        jo_str(t, "effect", tools_effects[d->effect]);
        jo_set(t, "input_schema", tools_def_schema(d));
        jo_bool(t, "available", available);
        json_array_append_new(list, t);
    }
    jo_set(o, "tools", list);
    if (rc) {
        json_decref(o);
        return rc;
    }
    router_respond(r, o);
    return 0;
}
