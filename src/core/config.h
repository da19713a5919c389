/* SPDX-License-Identifier: MIT */
/*
 * config: every setting of the server, read once from the environment and then from flags
 * (flags win). Unknown WORKFORCE_* variables and malformed values are refused with a message
 * naming the setting. After config_load_env() and config_finish() the struct is read-only and
 * shared by all threads.
 *
 * The settings are rows of one table (config.c, Redis standardConfig): name, type, default,
 * range or allowed values, secret or not, the member of struct config it fills and a one-line
 * description. Parsing, defaults, derived values, `workforce config` and the documentation
 * (README's Settings section and the OpenAPI document, through docs/settings.json) walk it.
 */
#ifndef WORKFORCE_CONFIG_H
#define WORKFORCE_CONFIG_H

#include "err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum config_tier { TIER_STARTER, TIER_MANAGER, TIER_AGENCY, TIER_COUNT };

struct config_limits {
    uint32_t per_minute;
    uint32_t burst;
    uint32_t concurrent;
};

/* Per provider (in the order of config_oauth_provider_names), WORKFORCE_OAUTH_<PROVIDER>_<FIELD>.
 */
#define CONFIG_OAUTH_PROVIDERS 5
enum config_oauth_field {
    CONFIG_OAUTH_CLIENT_ID,
    CONFIG_OAUTH_CLIENT_SECRET, /* a secret: never logged */
    CONFIG_OAUTH_AUTH_URL,
    CONFIG_OAUTH_TOKEN_URL,
    CONFIG_OAUTH_REVOKE_URL,
    CONFIG_OAUTH_API_URL,
    CONFIG_OAUTH_SCOPES,
    CONFIG_OAUTH_SIGNING_SECRET, /* inbound events; a secret */
    CONFIG_OAUTH_FIELDS
};
#define CONFIG_OAUTH_VALUE_MAX 1024
/* "SLACK", "GOOGLE_CALENDAR", "OUTLOOK", "GITHUB", "HUBSPOT". */
extern const char *const config_oauth_provider_names[CONFIG_OAUTH_PROVIDERS];

/* Room for the rows of the settings table (checked at compile time in config.c). */
#define CONFIG_SETTINGS_MAX 96

/* Where a setting's effective value came from. */
enum config_source { CONFIG_FROM_DEFAULT, CONFIG_FROM_ENV, CONFIG_FROM_FLAG };

/* A pack of credits sold through Stripe: its price id and the credits it buys. */
#define CONFIG_PACKS_MAX 16
struct config_pack {
    char price_id[128];
    int64_t credits;
};
/* Parse "price_A:1000,price_B:5000" (price ids of letters, digits and _; credits 1 to 10^9;
 * each price once) into 'out' (at most CONFIG_PACKS_MAX); "" is no pack. 0, or
 * ERR_INVALID with 'e' naming 'setting'. */
int config_parse_packs(const char *s, const char *setting, struct config_pack *out, size_t *n,
                       struct err *e);

struct config {
    char listen_host[64];
    unsigned listen_port;
    char database[1024];
    char public_url[512];
    /* Where an OAuth connection may send the user back: canonical origins, comma separated */
    char oauth_redirect_origins[1024];
    char secret_file[1024];
    char redis_url[1024];       /* shared rate limits (redis://...); empty: in the database */
    char files_dir[1024];       /* uploaded documents: "files" beside the database */
    char embeddings_path[1024]; /* the model's package directory ("" = look in node_modules) */
    unsigned threads;
    unsigned connections_per_address; /* connections one client address may hold open */
    struct config_limits limits[TIER_COUNT];
    char llm[16]; /* builtin | openai */
    char llm_base_url[512];
    char llm_api_key[512]; /* a secret: never logged */
    char llm_model[200];
    int64_t llm_timeout_ms;
    int64_t llm_connect_timeout_ms;
    int llm_retries;
    int64_t llm_history_tokens;
    char test_llm[16];             /* builtin | provider */
    char embeddings[16];           /* builtin | openai */
    char embeddings_base_url[512]; /* openai: "" = llm_base_url */
    char embeddings_api_key[512];  /* openai: "" = llm_api_key; a secret */
    char embeddings_model[200];    /* openai (default in the settings table) */
    unsigned embeddings_threads;   /* builtin: threads that embed (one kept for queries) */
    unsigned task_workers;         /* tasks carried out at once */
    int agent_max_steps;           /* model calls of one turn that calls tools (§19) */
    int approval_ttl_hours;        /* an approval undecided this long expires (§19) */
    char session_rate_limit[64];   /* §20: a person's limits, "per_minute/burst[/concurrent]" */
    struct config_limits session_limits; /* parsed from session_rate_limit */
    char trusted_proxies[1024];  /* §20: addresses or CIDR blocks whose X-Forwarded-For counts */
    int audit_days;              /* §20: audit entries are kept this many days */
    unsigned tool_workers;       /* tool calls run at once */
    unsigned lease_seconds;      /* a node silent this long is dead: its work is taken back */
    unsigned knowledge_workers;  /* documents processed at once */
    char vectors[8];             /* float32 | int8: how the vector index keeps embeddings */
    bool mcp_allow_private;      /* MCP servers may be at loopback, private, ... addresses */
    bool webhooks_allow_private; /* deliveries may go to loopback, private, ... addresses */
    int64_t webhooks_timeout_ms; /* one delivery attempt (at most the contract's 10 s) */
    unsigned webhooks_workers;   /* deliveries attempted at once */
    /* OpenID Connect sign-in (§20): "" issuer = not configured */
    char oidc_issuer[512];
    char oidc_client_id[256];
    char oidc_client_secret[512];    /* a secret: never logged */
    char oidc_allowed_domains[1024]; /* lower case, comma separated; "" = no user is created */
    char oidc_org[64];               /* slug; "" = the only organization */
    /* Payments (§21), by mode (0 live, 1 test): "" secret key = not configured for the mode */
    char stripe_secret_key[2][256];                /* secrets: never logged */
    char stripe_webhook_secret[2][1024];           /* comma separated (rotation) */
    char credit_packs_text[2][2048];               /* "price_A:1000,price_B:5000" */
    struct config_pack packs[2][CONFIG_PACKS_MAX]; /* parsed from credit_packs_text */
    size_t npacks[2];
    char stripe_api_url[512];
    int64_t credits_low; /* account.credits_low when a balance falls below it */
    /* "" where not set: the provider's default (URLs, scopes) or not configured */
    char oauth[CONFIG_OAUTH_PROVIDERS][CONFIG_OAUTH_FIELDS][CONFIG_OAUTH_VALUE_MAX];
    unsigned char source[CONFIG_SETTINGS_MAX]; /* enum config_source, by row of the table */
};

/* ---- The settings table ---- */

enum config_type {
    CONFIG_STRING,      /* any text that fits the member */
    CONFIG_PATH,        /* a file or directory path */
    CONFIG_URL,         /* http:// or https:// */
    CONFIG_ENUM,        /* one of 'values' */
    CONFIG_INT,         /* a whole number from 'min' to 'max' */
    CONFIG_BOOL,        /* 0 or 1 */
    CONFIG_LISTEN,      /* HOST:PORT */
    CONFIG_DATABASE,    /* a SQLite file or a postgres:// URL */
    CONFIG_RATE_LIMITS, /* tier:requests_per_minute/burst/concurrent[,...] */
    CONFIG_TYPES
};

/* Flags of a row. */
#define CONFIG_SECRET 1u      /* never printed: shown as "(set)" */
#define CONFIG_CREDENTIALS 2u /* a URL that may hold a password: printed with it masked */
#define CONFIG_UNUSED 4u      /* accepted and not read by the server */

/* How the member a row fills is stored: text, or a number of this C type. */
enum config_member { CONFIG_M_TEXT, CONFIG_M_I64, CONFIG_M_UINT, CONFIG_M_INT, CONFIG_M_BOOL };

/* A default worked out at start (the number of processors): written as the environment would. */
typedef void (*config_compute_fn)(char *out, size_t n);
/* A value derived from others once flags are applied; ERR_INVALID naming the setting. */
typedef int (*config_finish_fn)(struct config *c, struct err *e);

/* One setting: a row of the table. */
struct config_setting {
    char name[64];             /* WORKFORCE_... */
    enum config_type type;     /* how the value is written */
    unsigned flags;            /* CONFIG_SECRET, CONFIG_CREDENTIALS, CONFIG_UNUSED */
    const char *def;           /* default as the environment writes it ("" none); NULL: computed */
    const char *computed;      /* for people: how an empty or NULL default is worked out */
    const char *const *values; /* CONFIG_ENUM: the allowed values, NULL-terminated */
    int64_t min, max;          /* CONFIG_INT */
    const char *flag;          /* the command-line flag that also sets it, or NULL */
    const char *provider;      /* OAuth rows: "SLACK"...; else NULL */
    const char *field;         /* OAuth rows: "CLIENT_ID"...; else NULL */
    const char *desc;          /* one line */
    size_t off, size;          /* the member of struct config it fills (size 0: none) */
    enum config_member kind;   /* how that member is stored */
    config_compute_fn compute; /* the default when 'def' is NULL, or NULL */
    config_finish_fn finish;   /* derives the value in config_finish(), or NULL */
};

/*
 * The canonical origin of the http(s) URL 'url' ('len' bytes) into 'out' ('n' bytes):
 * "scheme://host[:port]", scheme and host in lower case, the scheme's default port left out.
 * '*end' (when not NULL) is where the authority ends in 'url'. ERR_INVALID for another scheme,
 * an empty or malformed host, a port out of range, or a user name or password before the host.
 * Pure.
 */
int config_origin(const char *url, size_t len, char *out, size_t n, size_t *end);

/* Number of rows (the OAuth ones included: provider x field). */
size_t config_setting_count(void);
/* Copy row 'i' into 'out'; ERR_NOT_FOUND past the end. */
int config_setting_get(size_t i, struct config_setting *out);
/* Row index of the setting named 'name' ('n' bytes), or -1. */
int config_setting_find(const char *name, size_t n);
/* Name of a type, as the JSON description says it ("integer", "url", ...). */
const char *config_type_name(enum config_type t);
/* The effective value of row 'i' as text in 'buf', secrets masked. */
void config_value_text(const struct config *c, size_t i, char *buf, size_t n);
/* Name of a source: "default", "environment", "flag". */
const char *config_source_name(enum config_source s);
struct json_t; /* jansson's json_t */
/* The table as a JSON array (with each value and source when 'c' is not NULL). Caller decrefs. */
struct json_t *config_describe(const struct config *c);
/* Print name, source and effective value of every setting to 'out', secrets masked. */
void config_print(const struct config *c, FILE *out);
/* Print name, type with its range or values, and default of every setting to 'out'. */
void config_print_defaults(FILE *out);

/* Defaults, then the environment 'envp'; 0 or ERR_INVALID with the setting in e->param. */
int config_load_env(struct config *c, char *const *envp, struct err *e);
/* Apply a command-line 'flag' ("--listen") of the table; ERR_INVALID naming the setting. */
int config_set_flag(struct config *c, const char *flag, const char *v, struct err *e);
/* Apply --listen HOST:PORT. */
int config_set_listen(struct config *c, const char *v, struct err *e);
/* Apply --database. */
int config_set_database(struct config *c, const char *v, struct err *e);
/* Derive the settings that depend on others; ERR_INVALID (naming the setting) when one required
 * by another is missing. */
int config_finish(struct config *c, struct err *e);
/* True for a postgres:// (or postgresql://) database URL. */
bool config_database_is_postgres(const char *database);

/* Parse "starter:60/10/5,manager:300/50/20" over 'out' (tiers left out keep their value). */
int config_parse_rate_limits(const char *s, size_t len, struct config_limits out[TIER_COUNT],
                             struct err *e);
/* Parse "90s", "10m", "12h", "30d" into milliseconds. */
int config_parse_duration(const char *s, size_t len, int64_t *out_ms);
/* "starter" -> TIER_STARTER; -1 when unknown. */
int config_tier_from_name(const char *name);
const char *config_tier_name(enum config_tier t);

#endif
