/* SPDX-License-Identifier: MIT */
/*
 * users.c: people (users, set-password tokens, sign-in failures), their sessions and the audit
 * log (contract §20), over the driver. Written once for both databases; store.c's wrappers are
 * the callers. Tokens and sessions are kept as their keyed hash only; passwords as their
 * argon2id encoding, made by the caller (auth).
 *
 * The audit log is append-only: audit_insert() is its one writer and store_audit_prune() its
 * one deletion (the retention); the schema refuses any update (migration 24).
 */
#include "store_int.h"

#include "../core/clock.h"

#include <stdio.h>
#include <string.h>

const char *const store_role_names[] = {"viewer", "member", "developer", "admin", "owner", NULL};
const char *const store_actor_names[] = {"user",   "api_key", "cli", "employee",
                                         "stripe", "system",  NULL};
static const char *const status_names[] = {"active", "disabled"};

/* See store.h. */
const char *store_role_name(int role)
{
    return role >= 0 && role < STORE_ROLE_COUNT ? store_role_names[role] : "viewer";
}

/* See store.h. */
int store_role_parse(const char *name)
{
    for (int i = 0; name && i < STORE_ROLE_COUNT; i++) {
        if (strcmp(name, store_role_names[i]) == 0)
            return i;
    }
    return -1;
}

#define USER_COLS                                                                                  \
    "u.id, u.org_id, u.email, u.name, u.role, u.status,"                                           \
    " CASE WHEN u.password IS NULL THEN 0 ELSE 1 END, u.created_at, u.updated_at,"                 \
    " coalesce(u.last_login_at, 0)"
#define USER_NCOLS 10

/* The USER_COLS of the current row from column 'col'. */
static void user_cols(struct db_stmt *st, int col, struct store_user *out)
{
    memset(out, 0, sizeof(*out));
    db_copy(st, col, out->id, sizeof(out->id));
    db_copy(st, col + 1, out->org_id, sizeof(out->org_id));
    db_copy(st, col + 2, out->email, sizeof(out->email));
    db_copy(st, col + 3, out->name, sizeof(out->name));
    out->role = store_role_parse(db_text(st, col + 4));
    if (out->role < 0)
        out->role = STORE_ROLE_VIEWER; /* a damaged row grants the least */
    out->status = db_text(st, col + 5) && strcmp(db_text(st, col + 5), "active") == 0
                      ? STORE_USER_ACTIVE
                      : STORE_USER_DISABLED;
    out->has_password = db_int64(st, col + 6) != 0;
    out->created_at = db_int64(st, col + 7);
    out->updated_at = db_int64(st, col + 8);
    out->last_login_at = db_int64(st, col + 9);
}

/* The one user of a statement whose first columns are USER_COLS. */
static int one_user(struct db_stmt *st, struct store_user *out)
{
    bool row = false;
    int rc = db_step(st, &row);
    if (!rc && row)
        user_cols(st, 0, out);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int users_create(struct store *s, const struct store_user *u, struct err *e)
{
    struct db_stmt *st = db_prepare(s, "INSERT INTO users (id, org_id, email, name, role, status,"
                                       " password, created_at, updated_at, last_login_at)"
                                       " VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $7, NULL)");
    int rc;
    if (!st)
        return err_set(e, ERR_STORE, "internal_error", NULL, "the user could not be stored");
    db_bind_text(st, 1, u->id);
    db_bind_text(st, 2, u->org_id);
    db_bind_text(st, 3, u->email);
    db_bind_text(st, 4, u->name);
    db_bind_text(st, 5, store_role_name(u->role));
    db_bind_text(st, 6, status_names[u->status == STORE_USER_DISABLED]);
    db_bind_int64(st, 7, u->created_at);
    rc = db_exec(st);
    if (rc == ERR_CONFLICT)
        return err_set(e, ERR_CONFLICT, "user_exists", "email",
                       "A user with this email already exists.");
    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the user could not be stored");
    return 0;
}

/* See store_int.h. */
int users_get(struct store *s, const char *org_id, const char *id, struct store_user *out)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT " USER_COLS " FROM users u WHERE u.org_id = $1 AND u.id = $2");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_text(st, 2, id);
    return one_user(st, out);
}

/* See store_int.h. */
int users_by_email(struct store *s, const char *email, struct store_user *out)
{
    struct db_stmt *st = db_prepare(s, "SELECT " USER_COLS " FROM users u WHERE u.email = $1");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, email);
    return one_user(st, out);
}

/* See store_int.h. */
int users_page(struct store *s, const char *org_id, int64_t before_t, const char *before_id,
               unsigned limit, struct arena *a, struct store_user **out, size_t *n, bool *more)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT " USER_COLS " FROM users u WHERE u.org_id = $1 AND (CAST($3 AS TEXT) IS NULL"
           " OR (u.created_at, u.id) < ($2, $3)) ORDER BY u.created_at DESC, u.id DESC LIMIT $4");
    struct store_user *v = arena_alloc(a, ((size_t)limit + 1) * sizeof(*v));
    size_t len = 0;
    bool row = false;
    int rc;

    *n = 0;
    *more = false;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_int64(st, 2, before_t);
    db_bind_text(st, 3, before_id);
    db_bind_int64(st, 4, (int64_t)limit + 1);
    while (!(rc = db_step(st, &row)) && row && len <= limit)
        user_cols(st, 0, &v[len++]);
    db_done(st);
    if (len > limit) {
        *more = true;
        len = limit;
    }
    *out = v;
    *n = len;
    return rc;
}

/* Whether the organization keeps an active owner other than 'id'. */
static int other_owner(struct store *s, const char *org_id, const char *id, bool *yes)
{
    struct db_stmt *st =
        db_prepare(s, "SELECT count(*) FROM users WHERE org_id = $1 AND id <> $2 AND"
                      " role = 'owner' AND status = 'active'");
    bool row = false;
    int rc;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_text(st, 2, id);
    rc = db_step(st, &row);
    *yes = !rc && row && db_int64(st, 0) > 0;
    db_done(st);
    return rc;
}

/* Revoke every live session of 'user_id'. */
static int revoke_all(struct store *s, const char *user_id, int64_t now)
{
    const char *texts[] = {user_id};
    return db_run(s,
                  "UPDATE sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL",
                  texts, 1, &now, 1);
}

/* See store_int.h. */
int users_update(struct store *s, const char *org_id, const char *id, const char *name, int role,
                 int status, int64_t now, struct store_user *out, struct err *e)
{
    struct store_user cur;
    struct db_stmt *st;
    bool others = true;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the user could not be changed");
    rc = users_get(s, org_id, id, &cur);
    if (rc == ERR_NOT_FOUND) {
        err_set(e, rc, "resource_not_found", "id", "No user with this id.");
        goto out;
    }
    /* the last active owner stays an active owner */
    if (!rc && cur.role == STORE_ROLE_OWNER && cur.status == STORE_USER_ACTIVE &&
        ((role >= 0 && role != STORE_ROLE_OWNER) || status == STORE_USER_DISABLED)) {
        rc = other_owner(s, org_id, id, &others);
        if (!rc && !others) {
            rc = err_set(e, ERR_CONFLICT, "last_owner", role >= 0 ? "role" : "status",
                         "The organization's last owner cannot be demoted or disabled.");
            goto out;
        }
    }
    if (rc)
        goto out;
    st = db_prepare(s, "UPDATE users SET name = coalesce($3, name), role = coalesce($4, role),"
                       " status = coalesce($5, status), updated_at = $6 WHERE org_id = $1 AND"
                       " id = $2");
    if (!st) {
        rc = ERR_STORE;
        goto out;
    }
    db_bind_text(st, 1, org_id);
    db_bind_text(st, 2, id);
    db_bind_text(st, 3, name);
    db_bind_text(st, 4, role >= 0 ? store_role_name(role) : NULL);
    db_bind_text(st, 5, status >= 0 ? status_names[status == STORE_USER_DISABLED] : NULL);
    db_bind_int64(st, 6, now);
    rc = db_exec_one(st);
    if (!rc && status == STORE_USER_DISABLED)
        rc = revoke_all(s, id, now);
    if (!rc)
        rc = users_get(s, org_id, id, out);
    if (!rc)
        rc = db_commit(s);
out:
    if (rc) {
        db_rollback(s);
        if (!e->code)
            err_set(e, rc, "internal_error", NULL, "the user could not be changed");
    }
    return rc;
}

/* See store_int.h. */
int users_delete(struct store *s, const char *org_id, const char *id, struct err *e)
{
    struct store_user cur;
    const char *texts[] = {id};
    bool others = true;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return err_set(e, rc, "internal_error", NULL, "the user could not be deleted");
    rc = users_get(s, org_id, id, &cur);
    if (rc == ERR_NOT_FOUND) {
        err_set(e, rc, "resource_not_found", "id", "No user with this id.");
        goto out;
    }
    if (!rc && cur.role == STORE_ROLE_OWNER && cur.status == STORE_USER_ACTIVE) {
        rc = other_owner(s, org_id, id, &others);
        if (!rc && !others) {
            rc = err_set(e, ERR_CONFLICT, "last_owner", NULL,
                         "The organization's last owner cannot be removed.");
            goto out;
        }
    }
    if (!rc)
        rc = db_run(s, "DELETE FROM sessions WHERE user_id = $1", texts, 1, NULL, 0);
    if (!rc)
        rc = db_run(s, "DELETE FROM user_tokens WHERE user_id = $1", texts, 1, NULL, 0);
    if (!rc)
        rc = db_run(s, "DELETE FROM users WHERE id = $1", texts, 1, NULL, 0);
    if (!rc)
        rc = db_commit(s);
out:
    if (rc) {
        db_rollback(s);
        if (!e->code)
            err_set(e, rc, "internal_error", NULL, "the user could not be deleted");
    }
    return rc;
}

/* See store_int.h. */
int users_password(struct store *s, const char *user_id, struct arena *a, const char **out)
{
    struct db_stmt *st = db_prepare(s, "SELECT password FROM users WHERE id = $1");
    bool row = false;
    int rc;

    *out = NULL;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, user_id);
    rc = db_step(st, &row);
    if (!rc && row)
        *out = db_arena_text(a, st, 0);
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* The password of 'user_id' set, its sessions revoked (inside the caller's transaction). */
static int set_password(struct store *s, const char *user_id, const char *encoded, int64_t now)
{
    const char *texts[] = {user_id, encoded};
    int rc = db_run(s, "UPDATE users SET password = $2, updated_at = $3 WHERE id = $1", texts, 2,
                    &now, 1);
    return rc ? rc : revoke_all(s, user_id, now);
}

/* See store_int.h. */
int users_password_set(struct store *s, const char *user_id, const char *encoded, int64_t now)
{
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = set_password(s, user_id, encoded, now);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int users_token_create(struct store *s, const char *user_id, const unsigned char hash[32],
                       int64_t expires_at)
{
    struct db_stmt *st = db_prepare(
        s,
        "INSERT INTO user_tokens (hash, user_id, expires_at, used_at) VALUES ($1, $2, $3, NULL)");
    if (!st)
        return ERR_STORE;
    db_bind_blob(st, 1, hash, 32);
    db_bind_text(st, 2, user_id);
    db_bind_int64(st, 3, expires_at);
    return db_exec(st);
}

/* See store_int.h. */
int users_token_use(struct store *s, const unsigned char hash[32], const char *encoded, int64_t now,
                    struct store_user *out)
{
    struct db_stmt *st;
    char user_id[ID_MAX] = "";
    bool row = false;
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    st = db_prepare(s, "SELECT user_id FROM user_tokens WHERE hash = $1 AND used_at IS NULL AND"
                       " expires_at > $2");
    if (!st) {
        rc = ERR_STORE;
        goto out;
    }
    db_bind_blob(st, 1, hash, 32);
    db_bind_int64(st, 2, now);
    rc = db_step(st, &row);
    if (!rc && row)
        db_copy(st, 0, user_id, sizeof(user_id));
    db_done(st);
    if (!rc && !row)
        rc = ERR_NOT_FOUND;
    if (!rc) {
        st = db_prepare(s, "UPDATE user_tokens SET used_at = $2 WHERE hash = $1");
        if (!st) {
            rc = ERR_STORE;
            goto out;
        }
        db_bind_blob(st, 1, hash, 32);
        db_bind_int64(st, 2, now);
        rc = db_exec_one(st);
    }
    if (!rc)
        rc = set_password(s, user_id, encoded, now);
    if (!rc) {
        st = db_prepare(s, "SELECT " USER_COLS " FROM users u WHERE u.id = $1");
        if (!st)
            rc = ERR_STORE;
        else {
            db_bind_text(st, 1, user_id);
            rc = one_user(st, out);
        }
    }
    /* an entry armed without its organization (a set-password link names none) takes the
     * user's, before the commit writes it */
    if (!rc && s->audit && !s->audit->tenant.org_id[0])
        snprintf(s->audit->tenant.org_id, sizeof(s->audit->tenant.org_id), "%s", out->org_id);
    if (!rc)
        rc = db_commit(s);
out:
    if (rc)
        db_rollback(s);
    return rc;
}

/* ---- Sessions ---- */

/* See store_int.h. */
int sessions_create(struct store *s, const unsigned char hash[32], const struct store_session *ses,
                    const char *user_id)
{
    struct db_stmt *st;
    const char *texts[] = {user_id};
    int rc = db_begin(s, DB_TX_WRITE);

    if (rc)
        return rc;
    st = db_prepare(s, "INSERT INTO sessions (hash, id, user_id, method, created_at, seen_at,"
                       " expires_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $5, $6, NULL)");
    if (!st) {
        rc = ERR_STORE;
        goto out;
    }
    db_bind_blob(st, 1, hash, 32);
    db_bind_text(st, 2, ses->id);
    db_bind_text(st, 3, user_id);
    db_bind_text(st, 4, ses->method);
    db_bind_int64(st, 5, ses->created_at);
    db_bind_int64(st, 6, ses->expires_at);
    rc = db_exec(st);
    if (!rc)
        rc = db_run(s, "UPDATE users SET last_login_at = $2 WHERE id = $1", texts, 1,
                    &ses->created_at, 1);
    if (!rc)
        rc = db_commit(s);
out:
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int sessions_auth(struct store *s, const unsigned char hash[32], struct store_session *ses,
                  struct store_user *user, struct store_org *org)
{
    struct db_stmt *st = db_prepare(
        s,
        "SELECT " USER_COLS ", x.id, x.method, x.created_at, x.seen_at, x.expires_at,"
        " coalesce(x.revoked_at, 0), " ORGS_COLS(
            "o.") " FROM sessions x JOIN users u ON u.id = x.user_id JOIN orgs o ON o.id = u.org_id"
                  " WHERE x.hash = $1");
    bool row = false;
    int rc;

    if (!st)
        return ERR_STORE;
    db_bind_blob(st, 1, hash, 32);
    rc = db_step(st, &row);
    if (!rc && row) {
        int c = USER_NCOLS;
        user_cols(st, 0, user);
        memset(ses, 0, sizeof(*ses));
        db_copy(st, c, ses->id, sizeof(ses->id));
        db_copy(st, c + 1, ses->method, sizeof(ses->method));
        ses->created_at = db_int64(st, c + 2);
        ses->seen_at = db_int64(st, c + 3);
        ses->expires_at = db_int64(st, c + 4);
        ses->revoked_at = db_int64(st, c + 5);
        orgs_cols(st, c + 6, org);
    }
    db_done(st);
    return rc ? rc : row ? 0 : ERR_NOT_FOUND;
}

/* See store_int.h. */
int sessions_touch(struct store *s, const char *id, int64_t now)
{
    const char *texts[] = {id};
    return db_run(s, "UPDATE sessions SET seen_at = $2 WHERE id = $1", texts, 1, &now, 1);
}

/* See store_int.h. */
int sessions_revoke(struct store *s, const char *id, int64_t now)
{
    const char *texts[] = {id};
    return db_run(s, "UPDATE sessions SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1",
                  texts, 1, &now, 1);
}

/* ---- Sign-in failures ---- */

/* See store_int.h. */
int signin_failures(struct store *s, const char *email, const char *ip, int64_t since, int64_t *n)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT count(*) FROM sign_in_failures WHERE email = $1 AND ip = $2 AND at >= $3");
    bool row = false;
    int rc;

    *n = 0;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, email);
    db_bind_text(st, 2, ip);
    db_bind_int64(st, 3, since);
    rc = db_step(st, &row);
    if (!rc && row)
        *n = db_int64(st, 0);
    db_done(st);
    return rc;
}

/* See store_int.h. */
int signin_fail(struct store *s, const char *email, const char *ip, int64_t now,
                int64_t forget_before)
{
    const char *texts[] = {email, ip};
    int rc = db_begin(s, DB_TX_WRITE);
    if (rc)
        return rc;
    rc = db_run(s, "DELETE FROM sign_in_failures WHERE email = $1 AND ip = $2 AND at < $3", texts,
                2, &forget_before, 1);
    if (!rc)
        rc = db_run(s, "INSERT INTO sign_in_failures (email, ip, at) VALUES ($1, $2, $3)", texts, 2,
                    &now, 1);
    if (!rc)
        rc = db_commit(s);
    if (rc)
        db_rollback(s);
    return rc;
}

/* See store_int.h. */
int signin_clear(struct store *s, const char *email, const char *ip)
{
    const char *texts[] = {email, ip};
    return db_run(s, "DELETE FROM sign_in_failures WHERE email = $1 AND ip = $2", texts, 2, NULL,
                  0);
}

/* ---- The audit log ---- */

/* See store_int.h. */
int audit_insert(struct store *s, const struct store_audit *a)
{
    char id[ID_MAX];
    struct db_stmt *st;
    int rc = id_new("aud", id, sizeof(id));

    if (rc)
        return rc;
    st = db_prepare(s, "INSERT INTO audit_events (id, org_id, mode, actor_type, actor_id,"
                       " actor_label, action, target_type, target_id, ip, user_agent, request_id,"
                       " created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,"
                       " $13)");
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, id);
    db_bind_text(st, 2, a->tenant.org_id);
    db_bind_text(st, 3, db_mode_name(a->tenant.mode));
    db_bind_text(st, 4,
                 store_actor_names[a->actor_type >= 0 && a->actor_type <= STORE_ACTOR_SYSTEM
                                       ? a->actor_type
                                       : STORE_ACTOR_SYSTEM]);
    db_bind_text(st, 5, a->actor_id ? a->actor_id : "");
    db_bind_text(st, 6, a->actor_label ? a->actor_label : "");
    db_bind_text(st, 7, a->action);
    db_bind_text(st, 8, a->target_type);
    db_bind_text(st, 9, a->target_id);
    db_bind_text(st, 10, a->ip && *a->ip ? a->ip : NULL);
    db_bind_text(st, 11, a->user_agent);
    db_bind_text(st, 12, a->request_id);
    db_bind_int64(st, 13, a->created_at ? a->created_at : clock_now_ms());
    return db_exec(st);
}

/* See store_int.h. */
int audit_list(struct store *s, const char *org_id, const struct store_audit_filter *f,
               struct arena *a, struct store_audit **out, size_t *n, bool *more)
{
    struct db_stmt *st = db_prepare(
        s, "SELECT id, mode, actor_type, actor_id, actor_label, action, target_type, target_id,"
           " ip, user_agent, request_id, created_at FROM audit_events WHERE org_id = $1 AND"
           " (CAST($2 AS TEXT) IS NULL OR actor_id = $2) AND (CAST($3 AS TEXT) IS NULL OR"
           " action = $3) AND (CAST($4 AS TEXT) IS NULL OR target_id = $4) AND created_at >= $5"
           " AND (CAST($7 AS TEXT) IS NULL OR (created_at, id) < ($6, $7))"
           " ORDER BY created_at DESC, id DESC LIMIT $8");
    struct store_audit *v = arena_alloc(a, ((size_t)f->limit + 1) * sizeof(*v));
    size_t len = 0;
    bool row = false;
    int rc;

    *n = 0;
    *more = false;
    if (!st)
        return ERR_STORE;
    db_bind_text(st, 1, org_id);
    db_bind_text(st, 2, f->actor_id);
    db_bind_text(st, 3, f->action);
    db_bind_text(st, 4, f->target_id);
    db_bind_int64(st, 5, f->since);
    db_bind_int64(st, 6, f->before_t);
    db_bind_text(st, 7, f->before_id);
    db_bind_int64(st, 8, (int64_t)f->limit + 1);
    while (!(rc = db_step(st, &row)) && row && len <= f->limit) {
        struct store_audit *x = &v[len++];
        const char *actor = db_text(st, 2);
        memset(x, 0, sizeof(*x));
        x->id = db_arena_text(a, st, 0);
        snprintf(x->tenant.org_id, sizeof(x->tenant.org_id), "%s", org_id);
        x->tenant.mode = db_mode(db_text(st, 1));
        x->actor_type = STORE_ACTOR_SYSTEM;
        for (int i = 0; actor && store_actor_names[i]; i++) {
            if (strcmp(actor, store_actor_names[i]) == 0)
                x->actor_type = i;
        }
        x->actor_id = db_arena_text(a, st, 3);
        x->actor_label = db_arena_text(a, st, 4);
        x->action = db_arena_text(a, st, 5);
        x->target_type = db_arena_text(a, st, 6);
        x->target_id = db_arena_text(a, st, 7);
        x->ip = db_arena_text(a, st, 8);
        x->user_agent = db_arena_text(a, st, 9);
        x->request_id = db_arena_text(a, st, 10);
        x->created_at = db_int64(st, 11);
    }
    db_done(st);
    if (len > f->limit) {
        *more = true;
        len = f->limit;
    }
    *out = v;
    *n = len;
    return rc;
}

/* See store_int.h. */
int audit_prune(struct store *s, int64_t before, int64_t *deleted)
{
    struct db_stmt *st = db_prepare(s, "DELETE FROM audit_events WHERE created_at < $1");
    bool row;
    int rc;

    *deleted = 0;
    if (!st)
        return ERR_STORE;
    db_bind_int64(st, 1, before);
    rc = db_step(st, &row);
    if (!rc)
        *deleted = db_changes(st);
    db_done(st);
    return rc;
}
