/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the settings table (core/config.c): the rows themselves, each type's parser
 * (good, malformed, out of range), unknown variables, sources, flags, derived values, and the
 * printers (text and JSON) that must never show a character of a secret. test_core.c keeps the
 * older checks of config_load_env, config_finish and the rate-limit and duration parsers.
 */
#include "../../src/core/config.h"
#include "../../src/core/err.h"
#include "t.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct config c; /* 40 KiB of OAuth values: not on the stack */

/* Load 'env' (NULL-terminated) into c; the return code, with 'e' filled. */
static int load(char **env, struct err *e)
{
    err_clear(e);
    return config_load_env(&c, env, e);
}

/* The effective value of the setting 'name', as config_value_text() prints it. */
static const char *value_of(const char *name)
{
    static char buf[2048];
    int i = config_setting_find(name, strlen(name));
    buf[0] = '\0';
    if (i >= 0)
        config_value_text(&c, (size_t)i, buf, sizeof(buf));
    return i >= 0 ? buf : "(no such setting)";
}

static int source_of(const char *name)
{
    int i = config_setting_find(name, strlen(name));
    return i >= 0 ? c.source[i] : -1;
}

/* One variable 'kv' alone: 0, or ERR_INVALID with e->param and e->msg. */
static int load_one(const char *kv, struct err *e)
{
    char *env[] = {(char *)(uintptr_t)kv, NULL};
    return load(env, e);
}

/* Whether one variable is refused naming 'param' with a message holding 'msg'. */
static bool refused(const char *kv, const char *param, const char *msg)
{
    struct err e;
    bool ok = load_one(kv, &e) == ERR_INVALID && strcmp(e.param, param) == 0 &&
              strstr(e.msg, msg) != NULL;
    if (!ok)
        printf("#   %s: param '%s', msg '%s'\n", kv, e.param, e.msg);
    return ok;
}

static void test_rows(void)
{
    subtest("the table")
    {
        struct config_setting s;
        size_t n = config_setting_count(), bad = 0, oauth = 0, secrets = 0;
        struct err e;

        is_int(n, 53 + CONFIG_OAUTH_PROVIDERS * CONFIG_OAUTH_FIELDS,
               "53 rows and 5 x 8 OAuth ones");
        ok(n <= CONFIG_SETTINGS_MAX, "within CONFIG_SETTINGS_MAX");
        is_int(config_setting_get(n, &s), ERR_NOT_FOUND, "nothing past the end");
        for (size_t i = 0; i < n; i++) {
            config_setting_get(i, &s);
            if (strncmp(s.name, "WORKFORCE_", 10) != 0 || !s.desc || !*s.desc ||
                (s.type == CONFIG_INT && s.min > s.max) || (s.type == CONFIG_ENUM && !s.values) ||
                (!s.def && !s.compute && !s.computed) ||
                config_setting_find(s.name, strlen(s.name)) != (int)i)
                bad++;
            oauth += s.provider != NULL;
            secrets += (s.flags & CONFIG_SECRET) != 0;
        }
        is_int(bad, 0, "every row: a WORKFORCE_ name found at its index, a description, a range");
        is_int(oauth, 40, "the OAuth rows are generated, one per provider and field");
        is_int(secrets, 7 + 2 * CONFIG_OAUTH_PROVIDERS,
               "API keys, the OIDC client secret, Stripe's keys and webhook secrets of both "
               "modes, OAuth client and signing secrets");
        config_setting_get((size_t)config_setting_find("WORKFORCE_OAUTH_GITHUB_SCOPES", 29), &s);
        is_str(s.provider, "GITHUB", "a generated row knows its provider");
        is_str(s.field, "SCOPES", "and its field");
        is_int(load(NULL, &e), 0, "every default is a value its own parser accepts");
    }
}

/* Each default, printed back, is the default as written in the table. */
static void test_defaults_round_trip(void)
{
    subtest("defaults")
    {
        struct config_setting s;
        struct err e;
        size_t diff = 0;

        load(NULL, &e);
        for (size_t i = 0; config_setting_get(i, &s) == 0; i++) {
            char v[2048];
            config_value_text(&c, i, v, sizeof(v));
            if (s.def && strcmp(v, s.def) != 0) {
                printf("#   %s: '%s' printed as '%s'\n", s.name, s.def, v);
                diff++;
            }
            if (c.source[i] != CONFIG_FROM_DEFAULT)
                diff++;
        }
        is_int(diff, 0, "every literal default prints as written, with source default");
        ok(c.threads >= 1 && c.threads <= 256 && c.embeddings_threads == c.threads,
           "a computed default: one thread per processor");
        is_int(c.llm_timeout_ms, 120000, "int64 member");
        is_int(c.task_workers, 4, "unsigned member");
        is_int(c.llm_retries, 2, "int member");
        is_int(c.limits[TIER_AGENCY].burst, 200, "rate limits");
    }
}

static void test_types(void)
{
    subtest("types")
    {
        char longv[300] = "WORKFORCE_LLM_MODEL=";
        struct err e;

        /* string */
        is_int(load_one("WORKFORCE_LLM_MODEL=llama3.1", &e), 0, "string: good");
        is_str(c.llm_model, "llama3.1", "string: stored");
        memset(longv + strlen(longv), 'm', 250);
        ok(refused(longv, "WORKFORCE_LLM_MODEL", "is too long"), "string: too long, named");
        /* path */
        is_int(load_one("WORKFORCE_FILES_DIR=/srv/files", &e), 0, "path: good");
        is_str(c.files_dir, "/srv/files", "path: stored");
        /* url */
        is_int(load_one("WORKFORCE_LLM_BASE_URL=https://llm.example/v1", &e), 0, "url: good");
        ok(refused("WORKFORCE_LLM_BASE_URL=ftp://x", "WORKFORCE_LLM_BASE_URL",
                   "must start with http:// or https://"),
           "url: another scheme refused, named");
        ok(refused("WORKFORCE_PUBLIC_URL=", "WORKFORCE_PUBLIC_URL", "must start with http://"),
           "url: empty refused");
        /* enum */
        is_int(load_one("WORKFORCE_VECTORS=int8", &e), 0, "enum: good");
        is_str(c.vectors, "int8", "enum: stored");
        ok(refused("WORKFORCE_VECTORS=int16", "WORKFORCE_VECTORS", "must be float32 or int8"),
           "enum: unknown value refused with the values");
        ok(refused("WORKFORCE_TEST_LLM=yes", "WORKFORCE_TEST_LLM", "must be builtin or provider"),
           "enum: the row's own values");
        /* integer */
        is_int(load_one("WORKFORCE_LLM_RETRIES=0", &e), 0, "integer: the minimum");
        is_int(c.llm_retries, 0, "integer: stored");
        is_int(load_one("WORKFORCE_LLM_RETRIES=10", &e), 0, "integer: the maximum");
        ok(refused("WORKFORCE_LLM_RETRIES=11", "WORKFORCE_LLM_RETRIES",
                   "must be a whole number from 0 to 10"),
           "integer: above the range");
        ok(refused("WORKFORCE_LEASE_SECONDS=2", "WORKFORCE_LEASE_SECONDS", "from 3 to 3600"),
           "integer: below the range");
        ok(refused("WORKFORCE_THREADS=2x", "WORKFORCE_THREADS", "whole number"),
           "integer: malformed");
        ok(refused("WORKFORCE_TASK_WORKERS=", "WORKFORCE_TASK_WORKERS", "whole number"),
           "integer: empty");
        ok(refused("WORKFORCE_LLM_HISTORY_TOKENS=1.5", "WORKFORCE_LLM_HISTORY_TOKENS",
                   "whole number"),
           "integer: not whole");
        is_int(load_one("WORKFORCE_LLM_TIMEOUT_MS=3600000", &e), 0, "integer: int64 member");
        is_int(c.llm_timeout_ms, 3600000, "integer: int64 stored");
        /* bool */
        is_int(load_one("WORKFORCE_WEBHOOKS_ALLOW_PRIVATE=1", &e), 0, "bool: good");
        ok(c.webhooks_allow_private, "bool: stored");
        ok(refused("WORKFORCE_WEBHOOKS_ALLOW_PRIVATE=yes", "WORKFORCE_WEBHOOKS_ALLOW_PRIVATE",
                   "must be 0 or 1"),
           "bool: malformed");
        is_int(load_one("WORKFORCE_MCP_ALLOW_PRIVATE=1", &e), 0, "bool: the MCP servers' own");
        ok(c.mcp_allow_private && !c.webhooks_allow_private, "bool: stored in its own member");
    }
}

static void test_structured_types(void)
{
    subtest("listen, database, rate limits, OAuth")
    {
        struct err e;

        is_int(load_one("WORKFORCE_LISTEN=[::1]:8081", &e), 0, "listen: [v6]:port");
        is_str(c.listen_host, "::1", "listen: host without brackets");
        is_str(value_of("WORKFORCE_LISTEN"), "[::1]:8081", "listen: printed with brackets");
        is_int(load_one("WORKFORCE_LISTEN=:9", &e), 0, "listen: empty host");
        is_str(c.listen_host, "0.0.0.0", "listen: every address");
        ok(refused("WORKFORCE_LISTEN=127.0.0.1:0", "WORKFORCE_LISTEN", "port from 1 to 65535"),
           "listen: port 0 refused");
        ok(refused("WORKFORCE_LISTEN=localhost", "WORKFORCE_LISTEN", "HOST:PORT"),
           "listen: no port refused");
        ok(refused("WORKFORCE_DATABASE=", "WORKFORCE_DATABASE", "is empty"), "database: empty");
        is_int(load_one("WORKFORCE_DATABASE=postgres://u:p@h/db", &e), 0, "database: a URL");
        is_int(load_one("WORKFORCE_RATE_LIMITS=agency:7/6/5", &e), 0, "rate limits: one tier");
        is_str(value_of("WORKFORCE_RATE_LIMITS"), "starter:60/10/5,manager:300/50/20,agency:7/6/5",
               "rate limits: the others kept");
        ok(refused("WORKFORCE_RATE_LIMITS=starter:2000000/10/5", "WORKFORCE_RATE_LIMITS",
                   "1,000,000"),
           "rate limits: out of range");
        is_int(load_one("WORKFORCE_OAUTH_GOOGLE_CALENDAR_AUTH_URL=http://127.0.0.1:9/a", &e), 0,
               "OAuth: a generated row parses");
        is_str(c.oauth[1][CONFIG_OAUTH_AUTH_URL], "http://127.0.0.1:9/a", "OAuth: stored");
        ok(refused("WORKFORCE_OAUTH_HUBSPOT_API_URL=x", "WORKFORCE_OAUTH_HUBSPOT_API_URL",
                   "must start with http://"),
           "OAuth: a URL field is checked, named");
    }
}

static void test_unknown(void)
{
    subtest("unknown variables")
    {
        static const char *const names[] = {"WORKFORCE_NOPE", "WORKFORCE_LISTN",
                                            "WORKFORCE_OAUTH_SLACK_PASSWORD",
                                            "WORKFORCE_OAUTH_DROPBOX_CLIENT_ID", "WORKFORCE_"};
        struct err e;

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            char kv[80];
            snprintf(kv, sizeof(kv), "%s=1", names[i]);
            ok(load_one(kv, &e) == ERR_INVALID && strcmp(e.param, "") == 0 &&
                   strstr(e.msg, "unknown setting") && strstr(e.msg, names[i]),
               names[i]);
        }
        is_int(load_one("WORKFORCE_TEST_PG_URL=postgres://x@127.0.0.1:1/y", &e), 0,
               "the unit tests' URL is accepted (and not read)");
        is_int(load_one("HOME=/root", &e), 0, "other variables are not ours");
    }
}

static void test_sources_and_flags(void)
{
    subtest("sources, flags, derived values")
    {
        char *env[] = {"WORKFORCE_LISTEN=127.0.0.1:7000", "WORKFORCE_THREADS=3", NULL};
        struct err e;

        is_int(load(env, &e), 0, "environment loads");
        is_int(source_of("WORKFORCE_THREADS"), CONFIG_FROM_ENV, "source: environment");
        is_int(source_of("WORKFORCE_TASK_WORKERS"), CONFIG_FROM_DEFAULT, "source: default");
        is_int(config_set_flag(&c, "--listen", "127.0.0.1:7001", &e), 0, "--listen");
        is_int(c.listen_port, 7001, "the flag wins over the environment");
        is_int(source_of("WORKFORCE_LISTEN"), CONFIG_FROM_FLAG, "source: flag");
        ok(config_set_flag(&c, "--database", "", &e) == ERR_INVALID &&
               strcmp(e.param, "WORKFORCE_DATABASE") == 0,
           "a bad flag value names the setting");
        ok(config_set_flag(&c, "--threads", "2", &e) == ERR_INVALID, "a flag not in the table");
        is_int(config_set_database(&c, "/var/lib/w/w.db", &e), 0, "--database");
        is_int(config_finish(&c, &e), 0, "finish");
        is_str(c.public_url, "http://127.0.0.1:7001", "public URL derived from the flag");
        is_str(c.secret_file, "/var/lib/w/server.secret", "secret file beside the database");
        is_int(source_of("WORKFORCE_PUBLIC_URL"), CONFIG_FROM_DEFAULT, "a derived value: default");
    }
}

/* Issue 26 finding 6: where an OAuth connection may send the user back. */
static void test_redirect_origins(void)
{
    subtest("WORKFORCE_OAUTH_REDIRECT_ORIGINS")
    {
        char *list[] = {"WORKFORCE_PUBLIC_URL=https://wf.example.com/base/",
                        "WORKFORCE_OAUTH_REDIRECT_ORIGINS=HTTPS://App.Example.com:443/, "
                        "http://127.0.0.1:8080,https://[::1]:8443",
                        NULL};
        char *dflt[] = {"WORKFORCE_PUBLIC_URL=https://WF.example.com:443/base/", NULL};
        static const char *bad[] = {"https://a.example/path",
                                    "https://u:p@a.example",
                                    "ftp://a.example",
                                    "https://a.example:0",
                                    "https://",
                                    "https://a.example?x",
                                    "https://a_b.example",
                                    ","};
        char origin[128];
        size_t end = 0;
        struct err e;

        is_int(load(list, &e), 0, "a list loads");
        is_int(config_finish(&c, &e), 0, "and finishes");
        is_str(c.oauth_redirect_origins,
               "https://app.example.com,http://127.0.0.1:8080,https://[::1]:8443",
               "kept canonical, comma separated");
        is_int(load(dflt, &e), 0, "without it");
        is_int(config_finish(&c, &e), 0, "finishes");
        is_str(c.oauth_redirect_origins, "https://wf.example.com", "the public URL's origin");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            char kv[128];
            snprintf(kv, sizeof(kv), "WORKFORCE_OAUTH_REDIRECT_ORIGINS=%s", bad[i]);
            ok(load_one(kv, &e) == 0 && config_finish(&c, &e) == ERR_INVALID &&
                   strcmp(e.param, "WORKFORCE_OAUTH_REDIRECT_ORIGINS") == 0,
               bad[i]);
        }
        is_int(config_origin("http://A.b:80/x", 15, origin, sizeof(origin), &end), 0, "an origin");
        is_str(origin, "http://a.b", "its default port left out");
        is_int(end, 13, "the authority's end");
        is_int(config_origin("https://a.b@c.d/", 16, origin, sizeof(origin), NULL), ERR_INVALID,
               "a user name before the host");
        is_int(config_origin("https://a.b\\@c.d/", 17, origin, sizeof(origin), &end), 0,
               "a backslash ends the authority, as in a browser");
        is_str(origin, "https://a.b", "so the host is the one before it");
    }
}

/* Print c into a string with config_print (or the JSON of config_describe). Caller frees. */
static char *printed(bool json)
{
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    if (json) {
        json_t *d = config_describe(&c);
        json_dumpf(d, f, JSON_COMPACT);
        json_decref(d);
    } else {
        config_print(&c, f);
    }
    fclose(f);
    return out;
}

/* The line of 'name' in the text 'out', or "". */
static const char *line_of(const char *out, const char *name)
{
    static char line[2048];
    char key[80];
    const char *p;
    snprintf(key, sizeof(key), "\n%s ", name);
    p = strstr(out, key);
    line[0] = '\0';
    if (p)
        snprintf(line, sizeof(line), "%.*s", (int)strcspn(p + 1, "\n"), p + 1);
    return line;
}

static void test_printers(void)
{
    subtest("printers mask secrets")
    {
        char *env[] = {"WORKFORCE_LLM_API_KEY=sk-Zq9Xw7Vu",
                       "WORKFORCE_EMBEDDINGS_API_KEY=ek-Mm4Nn5",
                       "WORKFORCE_OAUTH_SLACK_CLIENT_SECRET=cs-Pp1Qq2",
                       "WORKFORCE_OAUTH_GITHUB_SIGNING_SECRET=gh-Rr3Ss4",
                       "WORKFORCE_DATABASE=postgres://bob:pw-Tt5Uu6@db:5432/w?password=pq-Vv7&x=1",
                       "WORKFORCE_REDIS_URL=redis://:rd-Ww8Xx9@r:6379/0",
                       "WORKFORCE_SECRET_FILE=/etc/w/secret",
                       "WORKFORCE_FILES_DIR=/srv/w/files",
                       "WORKFORCE_TASK_WORKERS=9",
                       NULL};
        static const char *const secrets[] = {"Zq9Xw7Vu", "Mm4Nn5", "Pp1Qq2", "Rr3Ss4",
                                              "Tt5Uu6",   "pq-Vv7", "Ww8Xx9"};
        struct err e;
        char *text, *json;
        size_t leaks = 0;
        json_t *doc, *row;
        json_error_t je;

        is_int(load(env, &e), 0, "loads");
        is_int(config_finish(&c, &e), 0, "finishes");
        text = printed(false);
        json = printed(true);
        for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
            leaks += strstr(text, secrets[i]) != NULL || strstr(json, secrets[i]) != NULL;
        is_int(leaks, 0, "no secret, nor a URL's password, in the text or the JSON");
        ok(strstr(line_of(text, "WORKFORCE_LLM_API_KEY"), "environment  (set)") != NULL,
           "a secret that is set: (set), from the environment");
        ok(strstr(line_of(text, "WORKFORCE_OAUTH_SLACK_SIGNING_SECRET"), "(not set)") != NULL,
           "a secret that is not set: (not set)");
        ok(strstr(line_of(text, "WORKFORCE_DATABASE"),
                  "postgres://bob:****@db:5432/w?password=****&x=1") != NULL,
           "a URL's passwords masked, the rest kept");
        ok(strstr(line_of(text, "WORKFORCE_TASK_WORKERS"), "environment  9") != NULL,
           "an effective value and its source");
        ok(strstr(line_of(text, "WORKFORCE_OAUTH_HUBSPOT_SCOPES"), "default") != NULL,
           "the generated OAuth rows are printed");

        doc = json_loads(json, 0, &je);
        ok(json_is_array(doc) && json_array_size(doc) == config_setting_count(),
           "JSON: one object per row");
        row = json_array_get(doc, (size_t)config_setting_find("WORKFORCE_LLM_API_KEY", 21));
        is_str(json_string_value(json_object_get(row, "value")), "(set)", "JSON: masked");
        ok(json_is_true(json_object_get(row, "secret")), "JSON: marked secret");
        row = json_array_get(doc, (size_t)config_setting_find("WORKFORCE_LLM_RETRIES", 21));
        ok(json_integer_value(json_object_get(row, "min")) == 0 &&
               json_integer_value(json_object_get(row, "max")) == 10,
           "JSON: min and max");
        is_str(json_string_value(json_object_get(row, "source")), "default", "JSON: source");
        json_decref(doc);
        free(text);
        free(json);

        doc = config_describe(NULL);
        row = json_array_get(doc, (size_t)config_setting_find("WORKFORCE_THREADS", 17));
        ok(json_is_null(json_object_get(row, "default")) && json_object_get(row, "computed") &&
               !json_object_get(row, "value"),
           "the table alone: a computed default is described, no value is given");
        json_decref(doc);
    }
}

/* Issue 28: OpenID Connect sign-in's settings, checked together. */
static void test_oidc(void)
{
    subtest("WORKFORCE_OIDC_*")
    {
        char *good[] = {"WORKFORCE_OIDC_ISSUER=https://id.example.com",
                        "WORKFORCE_OIDC_CLIENT_ID=wf", "WORKFORCE_OIDC_CLIENT_SECRET=s3cret",
                        "WORKFORCE_OIDC_ALLOWED_DOMAINS= Example.COM, b.example ,", NULL};
        char *local[] = {"WORKFORCE_OIDC_ISSUER=http://127.0.0.1:9000",
                         "WORKFORCE_OIDC_CLIENT_ID=wf", "WORKFORCE_OIDC_CLIENT_SECRET=s", NULL};
        char *plain[] = {"WORKFORCE_OIDC_ISSUER=http://id.example.com",
                         "WORKFORCE_OIDC_CLIENT_ID=wf", "WORKFORCE_OIDC_CLIENT_SECRET=s", NULL};
        char *no_secret[] = {"WORKFORCE_OIDC_ISSUER=https://id.example.com",
                             "WORKFORCE_OIDC_CLIENT_ID=wf", NULL};
        char *bad_domain[] = {"WORKFORCE_OIDC_ISSUER=https://id.example.com",
                              "WORKFORCE_OIDC_CLIENT_ID=wf", "WORKFORCE_OIDC_CLIENT_SECRET=s",
                              "WORKFORCE_OIDC_ALLOWED_DOMAINS=@example.com", NULL};
        struct err e;

        ok(load(good, &e) == 0 && config_finish(&c, &e) == 0, "an issuer with its client");
        is_str(c.oidc_allowed_domains, "example.com,b.example", "domains lower case, no blanks");
        is_str(value_of("WORKFORCE_OIDC_CLIENT_SECRET"), "(set)", "the secret is not printed");
        ok(load(local, &e) == 0 && config_finish(&c, &e) == 0, "http to 127.0.0.1");
        ok(load(plain, &e) == 0 && config_finish(&c, &e) == ERR_INVALID &&
               strcmp(e.param, "WORKFORCE_OIDC_ISSUER") == 0,
           "http to another host is refused");
        ok(load(no_secret, &e) == 0 && config_finish(&c, &e) == ERR_INVALID &&
               strcmp(e.param, "WORKFORCE_OIDC_CLIENT_SECRET") == 0,
           "an issuer without a client secret is refused");
        ok(load(bad_domain, &e) == 0 && config_finish(&c, &e) == ERR_INVALID &&
               strcmp(e.param, "WORKFORCE_OIDC_ALLOWED_DOMAINS") == 0,
           "a domain with an @ is refused");
        ok(load(NULL, &e) == 0 && config_finish(&c, &e) == 0 && c.oidc_issuer[0] == '\0',
           "no issuer: not configured, nothing required");
    }
}

/* Issue 29: the credit packs sold through Stripe, per mode. */
static void test_packs(void)
{
    subtest("WORKFORCE_CREDIT_PACKS")
    {
        static const char seventeen[] = "p:1,p2:2,p3:3,p4:4,p5:5,p6:6,p7:7,p8:8,p9:9,p10:10,"
                                        "p11:11,p12:12,p13:13,p14:14,p15:15,p16:16,p17:17";
        char *good[] = {"WORKFORCE_CREDIT_PACKS=price_A:1000,price_B:5000",
                        "WORKFORCE_TEST_CREDIT_PACKS=price_T:10",
                        "WORKFORCE_STRIPE_SECRET_KEY=sk_live_xyz", NULL};
        const char *bad[] = {"price_A",   "price_A:",           ":10",
                             "price_A:0", "price_A:1000000001", "price_A:1,price_A:2",
                             "price-A:5", "price_A:5,",         "price A:5",
                             seventeen};
        struct err e;

        ok(load(good, &e) == 0 && config_finish(&c, &e) == 0, "two live packs, one test pack");
        is_int((int64_t)c.npacks[0], 2, "live: 2 packs");
        is_str(c.packs[0][1].price_id, "price_B", "in order");
        is_int(c.packs[0][1].credits, 5000, "with their credits");
        is_int((int64_t)c.npacks[1], 1, "test: 1 pack");
        is_str(value_of("WORKFORCE_STRIPE_SECRET_KEY"), "(set)", "the secret key is not printed");
        is_str(value_of("WORKFORCE_STRIPE_API_URL"), "https://api.stripe.com", "Stripe's API");
        is_int(c.credits_low, 100, "the low mark defaults to 100");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
            char kv[512];
            snprintf(kv, sizeof(kv), "WORKFORCE_TEST_CREDIT_PACKS=%s", bad[i]);
            ok(load_one(kv, &e) == 0 && config_finish(&c, &e) == ERR_INVALID &&
                   strcmp(e.param, "WORKFORCE_TEST_CREDIT_PACKS") == 0,
               bad[i]);
        }
        ok(load(NULL, &e) == 0 && config_finish(&c, &e) == 0 && c.npacks[0] == 0,
           "none: nothing sold");
        ok(load_one("WORKFORCE_STRIPE_SECRET_KEY=sk_test_abc", &e) == 0 &&
               config_finish(&c, &e) == ERR_INVALID &&
               strcmp(e.param, "WORKFORCE_STRIPE_SECRET_KEY") == 0,
           "a test-mode key in the live setting is refused");
        ok(load_one("WORKFORCE_STRIPE_TEST_SECRET_KEY=pk_test_abc", &e) == 0 &&
               config_finish(&c, &e) == ERR_INVALID &&
               strcmp(e.param, "WORKFORCE_STRIPE_TEST_SECRET_KEY") == 0,
           "a publishable key is refused");
        ok(load_one("WORKFORCE_STRIPE_TEST_SECRET_KEY=rk_test_abc", &e) == 0 &&
               config_finish(&c, &e) == 0,
           "a restricted key of the mode is taken");
    }
}

int main(void)
{
    test_packs();
    test_rows();
    test_defaults_round_trip();
    test_types();
    test_structured_types();
    test_unknown();
    test_sources_and_flags();
    test_redirect_origins();
    test_oidc();
    test_printers();
    return done_testing();
}
