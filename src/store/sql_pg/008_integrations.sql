-- SPDX-License-Identifier: MIT
-- Migration 8 (PostgreSQL): integrations (contract §13). One row per organization, mode and
-- provider once it was connected (or its connection failed); no row is "available". What the
-- provider gave (the tokens, their expiry, the granted scopes and the account's name) is one
-- sealed blob (AES-256-GCM under a key derived from the server secret, which is not in the
-- database): the database alone holds neither a usable token nor whose account it is. An OAuth
-- state is kept as the SHA-256 of its value and is single-use (used_at); its PKCE verifier is
-- sealed too. The events token names an organization and mode in the inbound events URL.
--
-- Not 1:1 with sql/008_integrations.sql (SQLite): the four tables are "WITHOUT ROWID" there (a
-- storage choice); ordinary tables with the same primary keys here. BLOB is BYTEA.

CREATE TABLE integrations (
    org_id       TEXT NOT NULL,
    mode         TEXT NOT NULL,
    provider     TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('connected', 'error')),
    secrets      BYTEA, -- sealed {access_token, refresh_token?, expires_at, scopes, account?}
    error        TEXT,
    connected_at BIGINT,
    updated_at   BIGINT NOT NULL,
    PRIMARY KEY (org_id, mode, provider)
);

CREATE TABLE oauth_states (
    state_hash   TEXT PRIMARY KEY, -- hex SHA-256 of the state
    org_id       TEXT NOT NULL,
    mode         TEXT NOT NULL,
    provider     TEXT NOT NULL,
    verifier     BYTEA NOT NULL,   -- sealed PKCE code_verifier
    redirect_uri TEXT,
    scopes       TEXT NOT NULL,    -- JSON array of the requested scopes
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    used_at      BIGINT
);
CREATE INDEX oauth_states_open ON oauth_states (org_id, mode, provider, expires_at)
    WHERE used_at IS NULL;

-- Deliveries of inbound events already received (Slack's event_id, GitHub's delivery id):
-- a provider's retry starts nothing twice. Kept a week.
CREATE TABLE integration_deliveries (
    org_id      TEXT NOT NULL,
    mode        TEXT NOT NULL,
    provider    TEXT NOT NULL,
    delivery_id TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (org_id, mode, provider, delivery_id)
);

CREATE TABLE integration_event_tokens (
    org_id TEXT NOT NULL,
    mode   TEXT NOT NULL,
    token  TEXT NOT NULL UNIQUE,
    PRIMARY KEY (org_id, mode)
);
