-- SPDX-License-Identifier: MIT
-- Migration 24: people, their sessions and the audit log (issue 28, contract §20).
--
-- A user belongs to one organization; an email is unique across the deployment (kept in lower
-- case). 'password' is the argon2id encoding of the password, NULL until one is set (an
-- invited user, or one who signs in with OpenID Connect only). A set-password token and a
-- session are stored as their keyed hash, never as themselves.
CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    email          TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL DEFAULT '',
    role           TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'member', 'viewer')),
    status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    password       TEXT,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    last_login_at  INTEGER
);
CREATE INDEX users_org ON users (org_id, created_at, id);

CREATE TABLE user_tokens (
    hash        BLOB PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id),
    expires_at  INTEGER NOT NULL,
    used_at     INTEGER
);
CREATE INDEX user_tokens_user ON user_tokens (user_id);

CREATE TABLE sessions (
    hash          BLOB PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    user_id       TEXT NOT NULL REFERENCES users (id),
    method        TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    seen_at       INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    revoked_at    INTEGER
);
CREATE INDEX sessions_user ON sessions (user_id);

-- Failed sign-ins of an email from an address, in their window (a lockout after 10).
CREATE TABLE sign_in_failures (
    email       TEXT NOT NULL,
    ip          TEXT NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX sign_in_failures_pair ON sign_in_failures (email, ip, at);

-- Keys made from the API carry a name, who made them and when they were last used.
ALTER TABLE api_keys ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN created_by TEXT;
ALTER TABLE api_keys ADD COLUMN last_used_at INTEGER;

-- Append-only: no statement of the server updates an entry; the keeper deletes the ones older
-- than WORKFORCE_AUDIT_DAYS. Kept in the order it is read (an organization's entries by time:
-- one b-tree, so that an entry adds one insert to the transaction of its change). The key's
-- columns come first, in its order: SQLite 3.40's integrity check (Debian 12's, which backups
-- and restores run) misreads a WITHOUT ROWID table whose key columns are not.
CREATE TABLE audit_events (
    org_id       TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    id           TEXT NOT NULL,
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    actor_type   TEXT NOT NULL,
    actor_id     TEXT NOT NULL,
    actor_label  TEXT NOT NULL DEFAULT '',
    action       TEXT NOT NULL,
    target_type  TEXT,
    target_id    TEXT,
    ip           TEXT,
    user_agent   TEXT,
    request_id   TEXT,
    PRIMARY KEY (org_id, created_at, id)
) WITHOUT ROWID;
CREATE TRIGGER audit_events_append_only BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit entries are never changed');
END;
