/* SPDX-License-Identifier: MIT */
/*
 * config: every setting of the server, read once from the environment and then from flags
 * (flags win). Unknown WORKFORCE_* variables and malformed values are refused with a message
 * naming the setting. After config_load() the struct is read-only and shared by all threads.
 */
#ifndef WORKFORCE_CONFIG_H
#define WORKFORCE_CONFIG_H

#include "err.h"

#include <stdbool.h>
#include <stdint.h>

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

struct config {
    char listen_host[64];
    unsigned listen_port;
    char database[1024];
    char public_url[512];
    char secret_file[1024];
    char redis_url[1024];       /* shared rate limits (redis://...); empty: in the database */
    char files_dir[1024];       /* uploaded documents: "files" beside the database */
    char embeddings_path[1024]; /* the model's package directory ("" = look in node_modules) */
    unsigned threads;
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
    char embeddings_model[200];    /* openai: "" = text-embedding-3-small */
    unsigned embeddings_threads;   /* builtin: threads that embed (one kept for queries) */
    unsigned task_workers;         /* tasks carried out at once */
    unsigned lease_seconds;        /* a node silent this long is dead: its work is taken back */
    unsigned knowledge_workers;    /* documents processed at once */
    char vectors[8];               /* float32 | int8: how the vector index keeps embeddings */
    bool webhooks_allow_private;   /* deliveries may go to loopback, private, ... addresses */
    int64_t webhooks_timeout_ms;   /* one delivery attempt (at most the contract's 10 s) */
    unsigned webhooks_workers;     /* deliveries attempted at once */
    /* "" where not set: the provider's default (URLs, scopes) or not configured */
    char oauth[CONFIG_OAUTH_PROVIDERS][CONFIG_OAUTH_FIELDS][CONFIG_OAUTH_VALUE_MAX];
};

/* Defaults, then the environment 'envp'; 0 or ERR_INVALID with the setting in e->param. */
int config_load_env(struct config *c, char *const *envp, struct err *e);
/* Apply --listen HOST:PORT. */
int config_set_listen(struct config *c, const char *v, struct err *e);
/* Apply --database. */
int config_set_database(struct config *c, const char *v, struct err *e);
/* Fill derived values (public_url, secret_file) once flags are applied. */
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
