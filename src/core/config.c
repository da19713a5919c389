/* SPDX-License-Identifier: MIT */
/*
 * config: defaults, environment, flags. The list of known variables is the contract's §3 list
 * plus WORKFORCE_SECRET_FILE and WORKFORCE_THREADS (ours, recorded in the OpenAPI document);
 * OAuth variables are WORKFORCE_OAUTH_<PROVIDER>_<FIELD> for the five providers.
 */
#include "config.h"

#include "str.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const struct config_limits default_limits[TIER_COUNT] = {
    {60, 10, 5},
    {300, 50, 20},
    {1000, 200, 100},
};

static const char *const tier_names[TIER_COUNT] = {"starter", "manager", "agency"};

static const char *const known_vars[] = {
    "WORKFORCE_LISTEN",
    "WORKFORCE_DATABASE",
    "WORKFORCE_PUBLIC_URL",
    "WORKFORCE_RATE_LIMITS",
    "WORKFORCE_LLM",
    "WORKFORCE_LLM_BASE_URL",
    "WORKFORCE_LLM_API_KEY",
    "WORKFORCE_LLM_MODEL",
    "WORKFORCE_TEST_LLM",
    "WORKFORCE_EMBEDDINGS",
    "WORKFORCE_EMBEDDINGS_BASE_URL",
    "WORKFORCE_EMBEDDINGS_API_KEY",
    "WORKFORCE_EMBEDDINGS_MODEL",
    "WORKFORCE_SECRET_FILE",
    "WORKFORCE_FILES_DIR",
    "WORKFORCE_REDIS_URL",
    "WORKFORCE_THREADS",
    "WORKFORCE_TEST_PG_URL",
    "WORKFORCE_EMBEDDINGS_PATH",
    "WORKFORCE_LLM_TIMEOUT_MS",
    "WORKFORCE_LLM_CONNECT_TIMEOUT_MS",
    "WORKFORCE_LLM_RETRIES",
    "WORKFORCE_LLM_HISTORY_TOKENS",
    "WORKFORCE_EMBEDDINGS_THREADS",
    "WORKFORCE_TASK_WORKERS",
    "WORKFORCE_LEASE_SECONDS",
    "WORKFORCE_KNOWLEDGE_WORKERS",
    "WORKFORCE_VECTORS",
    "WORKFORCE_WEBHOOKS_ALLOW_PRIVATE",
    "WORKFORCE_WEBHOOKS_TIMEOUT_MS",
    "WORKFORCE_WEBHOOKS_WORKERS",
};

const char *const config_oauth_provider_names[CONFIG_OAUTH_PROVIDERS] = {
    "SLACK", "GOOGLE_CALENDAR", "OUTLOOK", "GITHUB", "HUBSPOT"};
static const char *const oauth_fields[CONFIG_OAUTH_FIELDS] = {
    [CONFIG_OAUTH_CLIENT_ID] = "CLIENT_ID",   [CONFIG_OAUTH_CLIENT_SECRET] = "CLIENT_SECRET",
    [CONFIG_OAUTH_AUTH_URL] = "AUTH_URL",     [CONFIG_OAUTH_TOKEN_URL] = "TOKEN_URL",
    [CONFIG_OAUTH_REVOKE_URL] = "REVOKE_URL", [CONFIG_OAUTH_API_URL] = "API_URL",
    [CONFIG_OAUTH_SCOPES] = "SCOPES",         [CONFIG_OAUTH_SIGNING_SECRET] = "SIGNING_SECRET"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* "starter" -> TIER_STARTER, or -1. */
int config_tier_from_name(const char *name)
{
    for (int i = 0; i < TIER_COUNT; i++) {
        if (strcmp(name, tier_names[i]) == 0)
            return i;
    }
    return -1;
}

/* Name of tier 't'. */
const char *config_tier_name(enum config_tier t)
{
    return (unsigned)t < TIER_COUNT ? tier_names[t] : "starter";
}

static int parse_u32(const char *p, size_t n, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;
    struct str s = {p, n};
    if (str_to_u64(s, &v) || v < min || v > max)
        return ERR_INVALID;
    *out = (uint32_t)v;
    return 0;
}

/*
 * Parse a tier table "tier:rpm/burst/concurrent[,…]" of 'len' bytes at 's' over 'out'.
 * Tiers left out keep what 'out' held. Pure: no allocation, no globals (fuzzed).
 */
int config_parse_rate_limits(const char *s, size_t len, struct config_limits out[TIER_COUNT],
                             struct err *e)
{
    struct config_limits tmp[TIER_COUNT];
    size_t i = 0;

    memcpy(tmp, out, sizeof(tmp));
    if (len == 0)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_RATE_LIMITS", "is empty");
    while (i < len) {
        size_t end = i, colon, s1, s2;
        char name[16];
        int t;
        struct config_limits l;

        while (end < len && s[end] != ',')
            end++;
        colon = i;
        while (colon < end && s[colon] != ':')
            colon++;
        s1 = colon + 1;
        while (s1 < end && s[s1] != '/')
            s1++;
        s2 = s1 + 1;
        while (s2 < end && s[s2] != '/')
            s2++;
        if (colon >= end || s1 >= end || s2 >= end || colon - i >= sizeof(name) ||
            memchr(s + i, '\0', colon - i))
            goto bad;
        memcpy(name, s + i, colon - i);
        name[colon - i] = '\0';
        t = config_tier_from_name(name);
        if (t < 0 || parse_u32(s + colon + 1, s1 - colon - 1, 1, 1000000, &l.per_minute) ||
            parse_u32(s + s1 + 1, s2 - s1 - 1, 1, 1000000, &l.burst) ||
            parse_u32(s + s2 + 1, end - s2 - 1, 1, 1000000, &l.concurrent))
            goto bad;
        tmp[t] = l;
        i = end + 1;
        if (end + 1 == len)
            goto bad; /* trailing comma */
    }
    memcpy(out, tmp, sizeof(tmp));
    return 0;
bad:
    return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_RATE_LIMITS",
                   "expected tier:requests_per_minute/burst/concurrent[,…] with tiers starter, "
                   "manager, agency and whole numbers from 1 to 1,000,000");
}

/* Parse "<digits><s|m|h|d>" into milliseconds. 0 or ERR_INVALID. */
int config_parse_duration(const char *s, size_t len, int64_t *out_ms)
{
    uint64_t v, mul;
    struct str num = {s, len ? len - 1 : 0};

    if (len < 2)
        return ERR_INVALID;
    switch (s[len - 1]) {
    case 's':
        mul = 1000;
        break;
    case 'm':
        mul = 60000;
        break;
    case 'h':
        mul = 3600000;
        break;
    case 'd':
        mul = 86400000;
        break;
    default:
        return ERR_INVALID;
    }
    if (str_to_u64(num, &v) || v == 0 || v > 3650ull * 86400000 / mul)
        return ERR_INVALID;
    *out_ms = (int64_t)(v * mul);
    return 0;
}

/* Whether 'name' ('n' bytes) is WORKFORCE_OAUTH_<PROVIDER>_<FIELD>: which, in '*p' and '*f'. */
static bool oauth_var(const char *name, size_t n, size_t *p, size_t *f)
{
    for (size_t i = 0; i < CONFIG_OAUTH_PROVIDERS; i++) {
        for (size_t j = 0; j < CONFIG_OAUTH_FIELDS; j++) {
            char full[128];
            int len = snprintf(full, sizeof(full), "WORKFORCE_OAUTH_%s_%s",
                               config_oauth_provider_names[i], oauth_fields[j]);
            if (len > 0 && (size_t)len == n && strncmp(name, full, n) == 0) {
                if (p)
                    *p = i;
                if (f)
                    *f = j;
                return true;
            }
        }
    }
    return false;
}

static bool known_var(const char *name, size_t n)
{
    char buf[128];
    if (n >= sizeof(buf))
        return false;
    memcpy(buf, name, n);
    buf[n] = '\0';
    for (size_t i = 0; i < COUNT(known_vars); i++) {
        if (strcmp(buf, known_vars[i]) == 0)
            return true;
    }
    return oauth_var(buf, strlen(buf), NULL, NULL);
    return false;
}

static int set_str(char *dst, size_t n, const char *v, const char *name, struct err *e)
{
    if (strlen(v) >= n)
        return err_set(e, ERR_INVALID, "invalid_setting", name, "is too long");
    snprintf(dst, n, "%s", v);
    return 0;
}

static int set_int(int64_t *dst, const char *v, int64_t min, int64_t max, const char *name,
                   struct err *e)
{
    int64_t x;
    if (str_to_i64(str_c(v), &x) || x < min || x > max)
        return err_set(e, ERR_INVALID, "invalid_setting", name,
                       "must be a whole number from %lld to %lld", (long long)min, (long long)max);
    *dst = x;
    return 0;
}

/* Apply "HOST:PORT" (HOST may be empty for all addresses, or [v6]). */
int config_set_listen(struct config *c, const char *v, struct err *e)
{
    const char *colon = strrchr(v, ':');
    uint64_t port;
    size_t hl;

    if (!colon || str_to_u64((struct str){colon + 1, strlen(colon + 1)}, &port) || port == 0 ||
        port > 65535)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_LISTEN",
                       "expected HOST:PORT with a port from 1 to 65535");
    hl = (size_t)(colon - v);
    if (hl >= 2 && v[0] == '[' && v[hl - 1] == ']') {
        v++;
        hl -= 2;
    }
    if (hl >= sizeof(c->listen_host))
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_LISTEN", "host is too long");
    memcpy(c->listen_host, v, hl);
    c->listen_host[hl] = '\0';
    if (hl == 0)
        snprintf(c->listen_host, sizeof(c->listen_host), "0.0.0.0");
    c->listen_port = (unsigned)port;
    return 0;
}

/* Apply a database path (or, later, a postgres:// URL). */
int config_set_database(struct config *c, const char *v, struct err *e)
{
    if (!*v)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_DATABASE", "is empty");
    return set_str(c->database, sizeof(c->database), v, "WORKFORCE_DATABASE", e);
}

static int one_of(const char *v, const char *a, const char *b)
{
    return strcmp(v, a) == 0 || strcmp(v, b) == 0;
}

/*
 * Reset 'c' to the defaults and apply the WORKFORCE_* variables of 'envp'. Any unknown
 * WORKFORCE_* variable, or a malformed value, fails with ERR_INVALID naming it in e->param.
 */
int config_load_env(struct config *c, char *const *envp, struct err *e)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

    memset(c, 0, sizeof(*c));
    snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
    c->listen_port = 8080;
    snprintf(c->database, sizeof(c->database), "./data/workforce.db");
    memcpy(c->limits, default_limits, sizeof(default_limits));
    c->threads = ncpu > 0 && ncpu < 256 ? (unsigned)ncpu : 2;
    snprintf(c->llm, sizeof(c->llm), "builtin");
    snprintf(c->test_llm, sizeof(c->test_llm), "builtin");
    snprintf(c->embeddings, sizeof(c->embeddings), "builtin");
    c->llm_timeout_ms = 120000;
    c->llm_connect_timeout_ms = 10000;
    c->llm_retries = 2;
    c->llm_history_tokens = 3000;
    c->embeddings_threads = c->threads;
    c->task_workers = 4;
    c->lease_seconds = 60;
    c->knowledge_workers = 2;
    c->webhooks_timeout_ms = 10000;
    c->webhooks_workers = 4;
    snprintf(c->vectors, sizeof(c->vectors), "float32");

    for (; envp && *envp; envp++) {
        const char *kv = *envp, *eq = strchr(kv, '=');
        const char *v;
        size_t n, op = 0, of = 0;
        int rc = 0;

        if (!eq || strncmp(kv, "WORKFORCE_", 10) != 0)
            continue;
        n = (size_t)(eq - kv);
        v = eq + 1;
        if (!known_var(kv, n))
            return err_set(e, ERR_INVALID, "invalid_setting", "", "unknown setting %.*s",
                           (int)(n < 100 ? n : 100), kv);
#define IS(name) (n == strlen(name) && strncmp(kv, name, n) == 0)
        if (IS("WORKFORCE_LISTEN")) {
            rc = config_set_listen(c, v, e);
        } else if (IS("WORKFORCE_DATABASE")) {
            rc = config_set_database(c, v, e);
        } else if (IS("WORKFORCE_PUBLIC_URL")) {
            if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_PUBLIC_URL",
                             "must start with http:// or https://");
            else
                rc = set_str(c->public_url, sizeof(c->public_url), v, "WORKFORCE_PUBLIC_URL", e);
        } else if (IS("WORKFORCE_REDIS_URL")) {
            /* checked when the server connects (ratelimit_redis_open): exit 2 naming it */
            rc = set_str(c->redis_url, sizeof(c->redis_url), v, "WORKFORCE_REDIS_URL", e);
        } else if (IS("WORKFORCE_FILES_DIR")) {
            rc = set_str(c->files_dir, sizeof(c->files_dir), v, "WORKFORCE_FILES_DIR", e);
        } else if (IS("WORKFORCE_SECRET_FILE")) {
            rc = set_str(c->secret_file, sizeof(c->secret_file), v, "WORKFORCE_SECRET_FILE", e);
        } else if (IS("WORKFORCE_RATE_LIMITS")) {
            rc = config_parse_rate_limits(v, strlen(v), c->limits, e);
        } else if (IS("WORKFORCE_THREADS")) {
            uint64_t t;
            if (str_to_u64(str_c(v), &t) || t < 1 || t > 256)
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_THREADS",
                             "must be a whole number from 1 to 256");
            else
                c->threads = (unsigned)t;
        } else if (IS("WORKFORCE_LLM_BASE_URL")) {
            if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_LLM_BASE_URL",
                             "must start with http:// or https://");
            else
                rc = set_str(c->llm_base_url, sizeof(c->llm_base_url), v, "WORKFORCE_LLM_BASE_URL",
                             e);
        } else if (IS("WORKFORCE_LLM_API_KEY")) {
            rc = set_str(c->llm_api_key, sizeof(c->llm_api_key), v, "WORKFORCE_LLM_API_KEY", e);
        } else if (IS("WORKFORCE_LLM_MODEL")) {
            rc = set_str(c->llm_model, sizeof(c->llm_model), v, "WORKFORCE_LLM_MODEL", e);
        } else if (IS("WORKFORCE_LLM_TIMEOUT_MS")) {
            rc = set_int(&c->llm_timeout_ms, v, 100, 3600000, "WORKFORCE_LLM_TIMEOUT_MS", e);
        } else if (IS("WORKFORCE_LLM_CONNECT_TIMEOUT_MS")) {
            rc = set_int(&c->llm_connect_timeout_ms, v, 100, 600000,
                         "WORKFORCE_LLM_CONNECT_TIMEOUT_MS", e);
        } else if (IS("WORKFORCE_LLM_RETRIES")) {
            int64_t r = 0;
            rc = set_int(&r, v, 0, 10, "WORKFORCE_LLM_RETRIES", e);
            c->llm_retries = (int)r;
        } else if (IS("WORKFORCE_LLM_HISTORY_TOKENS")) {
            rc = set_int(&c->llm_history_tokens, v, 0, 10000000, "WORKFORCE_LLM_HISTORY_TOKENS", e);
        } else if (IS("WORKFORCE_EMBEDDINGS_BASE_URL")) {
            if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_EMBEDDINGS_BASE_URL",
                             "must start with http:// or https://");
            else
                rc = set_str(c->embeddings_base_url, sizeof(c->embeddings_base_url), v,
                             "WORKFORCE_EMBEDDINGS_BASE_URL", e);
        } else if (IS("WORKFORCE_EMBEDDINGS_API_KEY")) {
            rc = set_str(c->embeddings_api_key, sizeof(c->embeddings_api_key), v,
                         "WORKFORCE_EMBEDDINGS_API_KEY", e);
        } else if (IS("WORKFORCE_EMBEDDINGS_MODEL")) {
            rc = set_str(c->embeddings_model, sizeof(c->embeddings_model), v,
                         "WORKFORCE_EMBEDDINGS_MODEL", e);
        } else if (IS("WORKFORCE_EMBEDDINGS_THREADS")) {
            int64_t t = 0;
            rc = set_int(&t, v, 1, 256, "WORKFORCE_EMBEDDINGS_THREADS", e);
            c->embeddings_threads = (unsigned)t;
        } else if (oauth_var(kv, n, &op, &of)) {
            char name[128];
            snprintf(name, sizeof(name), "%.*s", (int)(n < 127 ? n : 127), kv);
            if ((of == CONFIG_OAUTH_AUTH_URL || of == CONFIG_OAUTH_TOKEN_URL ||
                 of == CONFIG_OAUTH_REVOKE_URL || of == CONFIG_OAUTH_API_URL) &&
                strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
                rc = err_set(e, ERR_INVALID, "invalid_setting", name,
                             "must start with http:// or https://");
            else
                rc = set_str(c->oauth[op][of], CONFIG_OAUTH_VALUE_MAX, v, name, e);
        } else if (IS("WORKFORCE_VECTORS")) {
            if (!one_of(v, "float32", "int8"))
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_VECTORS",
                             "must be float32 or int8");
            else
                rc = set_str(c->vectors, sizeof(c->vectors), v, "WORKFORCE_VECTORS", e);
        } else if (IS("WORKFORCE_KNOWLEDGE_WORKERS")) {
            int64_t t = 0;
            rc = set_int(&t, v, 1, 64, "WORKFORCE_KNOWLEDGE_WORKERS", e);
            c->knowledge_workers = (unsigned)t;
        } else if (IS("WORKFORCE_WEBHOOKS_ALLOW_PRIVATE")) {
            if (!one_of(v, "0", "1"))
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_WEBHOOKS_ALLOW_PRIVATE",
                             "must be 0 or 1");
            c->webhooks_allow_private = strcmp(v, "1") == 0;
        } else if (IS("WORKFORCE_WEBHOOKS_TIMEOUT_MS")) {
            rc =
                set_int(&c->webhooks_timeout_ms, v, 100, 10000, "WORKFORCE_WEBHOOKS_TIMEOUT_MS", e);
        } else if (IS("WORKFORCE_WEBHOOKS_WORKERS")) {
            int64_t t = 0;
            rc = set_int(&t, v, 1, 64, "WORKFORCE_WEBHOOKS_WORKERS", e);
            c->webhooks_workers = (unsigned)t;
        } else if (IS("WORKFORCE_LEASE_SECONDS")) {
            int64_t t = 0;
            rc = set_int(&t, v, 3, 3600, "WORKFORCE_LEASE_SECONDS", e);
            c->lease_seconds = (unsigned)t;
        } else if (IS("WORKFORCE_TASK_WORKERS")) {
            int64_t t = 0;
            rc = set_int(&t, v, 1, 256, "WORKFORCE_TASK_WORKERS", e);
            c->task_workers = (unsigned)t;
        } else if (IS("WORKFORCE_EMBEDDINGS_PATH")) {
            rc = set_str(c->embeddings_path, sizeof(c->embeddings_path), v,
                         "WORKFORCE_EMBEDDINGS_PATH", e);
        } else if (IS("WORKFORCE_LLM")) {
            if (!one_of(v, "builtin", "openai"))
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_LLM",
                             "must be builtin or openai");
            else
                snprintf(c->llm, sizeof(c->llm), "%s", v);
        } else if (IS("WORKFORCE_TEST_LLM")) {
            if (!one_of(v, "builtin", "provider"))
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_TEST_LLM",
                             "must be builtin or provider");
            else
                snprintf(c->test_llm, sizeof(c->test_llm), "%s", v);
        } else if (IS("WORKFORCE_EMBEDDINGS")) {
            if (!one_of(v, "builtin", "openai"))
                rc = err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_EMBEDDINGS",
                             "must be builtin or openai");
            else
                snprintf(c->embeddings, sizeof(c->embeddings), "%s", v);
        }
#undef IS
        if (rc)
            return rc;
    }
    return 0;
}

/* See config.h. */
bool config_database_is_postgres(const char *database)
{
    return strncmp(database, "postgres://", 11) == 0 || strncmp(database, "postgresql://", 13) == 0;
}

/*
 * Derive what depends on other settings: the public URL, and the places of the secret file and
 * of uploaded files, beside a SQLite database by default. With PostgreSQL there is nothing to be
 * beside and every node must read the same ones: both settings are then required (ERR_INVALID
 * naming the one missing).
 */
int config_finish(struct config *c, struct err *e)
{
    if (config_database_is_postgres(c->database)) {
        if (!c->secret_file[0])
            return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_SECRET_FILE",
                           "is required with a postgres:// database: a path every node reads");
        if (!c->files_dir[0])
            return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_FILES_DIR",
                           "is required with a postgres:// database: a directory every node "
                           "reads and writes");
    }
    if (!c->public_url[0])
        snprintf(c->public_url, sizeof(c->public_url), "http://%s:%u", c->listen_host,
                 c->listen_port);
    if (!c->files_dir[0]) {
        const char *slash = strrchr(c->database, '/');
        if (!slash)
            snprintf(c->files_dir, sizeof(c->files_dir), "files");
        else
            snprintf(c->files_dir, sizeof(c->files_dir), "%.*s/files", (int)(slash - c->database),
                     c->database);
    }
    if (!c->secret_file[0]) {
        const char *slash = strrchr(c->database, '/');
        if (!slash)
            snprintf(c->secret_file, sizeof(c->secret_file), "server.secret");
        else
            snprintf(c->secret_file, sizeof(c->secret_file), "%.*s/server.secret",
                     (int)(slash - c->database), c->database);
    }
    return 0;
}
