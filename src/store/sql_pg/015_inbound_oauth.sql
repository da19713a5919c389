-- SPDX-License-Identifier: MIT
-- Migration 15 (PostgreSQL): inbound events and OAuth connections, hardened (issue 26).
--
-- integration_inbound replaces integration_event_tokens: how each provider's events reach an
-- organization and mode. The token of its events URL is now one per provider, so that the URL
-- handed to one provider is rotated alone; the tokens of before are kept for both providers
-- that send events (Slack, GitHub), so that the URLs already registered keep working. 'secret'
-- is the organization's own signing secret (GitHub's webhook secret), sealed like tokens
-- (AES-256-GCM under a key derived from the server secret); NULL: the server's setting.
--
-- integrations.account_key is a keyed hash (HMAC-SHA256 under a key derived from the server
-- secret) of the account's id at the provider (Slack's team id): the events of a Slack app that
-- serves many organizations go to those whose connection holds it, and the database alone still
-- does not tell whose account it is.
--
-- An OAuth state is bound to the browser that opened its start page: binding_hash is the
-- SHA-256 of the cookie that browser holds, opened_at when it went on to the provider.
--
-- Not 1:1 with sql/015_inbound_oauth.sql (SQLite): integration_inbound is "WITHOUT ROWID" there
-- (a storage choice); BLOB is BYTEA and INTEGER BIGINT here.

CREATE TABLE integration_inbound (
    org_id   TEXT NOT NULL,
    mode     TEXT NOT NULL,
    provider TEXT NOT NULL,
    token    TEXT NOT NULL,
    secret   BYTEA,
    PRIMARY KEY (org_id, mode, provider)
);
CREATE UNIQUE INDEX integration_inbound_token ON integration_inbound (provider, token);
INSERT INTO integration_inbound (org_id, mode, provider, token)
    SELECT t.org_id, t.mode, p.provider, t.token FROM integration_event_tokens t
    CROSS JOIN (SELECT 'slack' AS provider UNION ALL SELECT 'github') p;
DROP TABLE integration_event_tokens;

ALTER TABLE integrations ADD COLUMN account_key TEXT;
CREATE INDEX integrations_account ON integrations (provider, account_key)
    WHERE account_key IS NOT NULL;

ALTER TABLE oauth_states ADD COLUMN binding_hash TEXT;
ALTER TABLE oauth_states ADD COLUMN opened_at BIGINT;
