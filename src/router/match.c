/* SPDX-License-Identifier: MIT */
/*
 * match.c: method + path against the route table. Patterns are literal segments and {name}
 * segments that match one non-empty segment of at most 4096 bytes. A path that matches some
 * pattern under other methods yields the Allow list (405). Pure and fuzzed.
 */
#include "router.h"

#include <stdio.h>
#include <string.h>

/* Match one pattern; on success the {param} values are copied into 'params'. */
static bool match_one(const char *pat, const char *path, struct arena *a, const char **params)
{
    size_t np = 0;

    while (*pat && *path) {
        if (*pat != '/' || *path != '/')
            return false;
        pat++;
        path++;
        if (*pat == '{') {
            const char *pend = strchr(pat, '/');
            size_t seg = strcspn(path, "/");
            if (seg == 0 || seg > 4096 || np >= ROUTER_MAX_PARAMS)
                return false;
            if (a)
                params[np] = arena_strndup(a, path, seg);
            np++;
            pat = pend ? pend : pat + strlen(pat);
            path += seg;
        } else {
            size_t pl = strcspn(pat, "/"), sl = strcspn(path, "/");
            if (pl != sl || memcmp(pat, path, pl) != 0)
                return false;
            pat += pl;
            path += sl;
        }
    }
    return *pat == '\0' && *path == '\0';
}

/*
 * Find the route for 'method' and 'path' among the 'n' 'routes'. out->route is its index, or
 * -1; then out->allow lists the methods the path does have ("" when none: 404).
 */
void router_match(const struct route *routes, size_t n, const char *method, const char *path,
                  struct arena *a, struct router_match *out)
{
    size_t used = 0;

    memset(out, 0, sizeof(*out));
    out->route = -1;
    for (size_t i = 0; i < n; i++) {
        const char *params[ROUTER_MAX_PARAMS];
        if (!match_one(routes[i].pattern, path, NULL, params))
            continue;
        if (strcmp(routes[i].method, method) == 0) {
            match_one(routes[i].pattern, path, a, out->params);
            out->route = (int)i;
            out->allow[0] = '\0';
            return;
        }
        if (!strstr(out->allow, routes[i].method)) {
            int w = snprintf(out->allow + used, sizeof(out->allow) - used, "%s%s", used ? ", " : "",
                             routes[i].method);
            if (w > 0 && (size_t)w < sizeof(out->allow) - used)
                used += (size_t)w;
        }
    }
}
