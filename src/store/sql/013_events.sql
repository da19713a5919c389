-- SPDX-License-Identifier: MIT
-- Migration 13: events and outbound webhooks (contract §15).
--
-- An event is written in the same transaction as the change it reports (a task's run ended, a
-- document became ready, ...): its 'data' is {"object": ...}, the object as the API showed it at
-- that moment. Kept 30 days.
CREATE TABLE events (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    type       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    data       TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX events_tenant ON events (org_id, mode, created_at, id);
CREATE INDEX events_age ON events (created_at);

-- Where an organization wants its events sent. 'events' is a JSON array of types, or ["*"]. The
-- signing secret is sealed (AES-256-GCM under a key derived from the server secret, bound to the
-- endpoint's id); during a rotation the previous one also signs until 'previous_until'.
CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL,
    mode            TEXT NOT NULL,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    enabled         INTEGER NOT NULL DEFAULT 1,
    description     TEXT,
    secret          BLOB NOT NULL,
    previous_secret BLOB,
    previous_until  INTEGER,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (org_id, mode, created_at, id);

-- The outbox: one delivery per endpoint and event, written with the event. A worker takes a due
-- one under a lease (no two nodes attempt it at once); each attempt is a row of
-- webhook_attempts. 'next_attempt_at' is null once it is delivered or failed.
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL,
    mode             TEXT NOT NULL,
    endpoint_id      TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status_code INTEGER,
    last_error       TEXT,
    next_attempt_at  INTEGER,
    lease            TEXT,
    redeliver        INTEGER NOT NULL DEFAULT 0, -- asked again while in flight
    lease_until      INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (endpoint_id, event_id)
) WITHOUT ROWID;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, id);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL,
    n           INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    status_code INTEGER,
    error       TEXT,
    duration_ms INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, n)
) WITHOUT ROWID;
