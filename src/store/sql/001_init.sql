-- SPDX-License-Identifier: MIT
-- Migration 1: organizations, keys, employees and the facts employee statistics are computed
-- from. Times are integer milliseconds since the Unix epoch (UTC). The tenant of every row is
-- (org_id, mode), mode 'live' or 'test' (contract §3).

CREATE TABLE orgs (
    id          TEXT PRIMARY KEY,
    slug        TEXT NOT NULL UNIQUE,
    tier        TEXT NOT NULL CHECK (tier IN ('starter', 'manager', 'agency')),
    credits     INTEGER NOT NULL DEFAULT 0 CHECK (credits >= 0),
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES orgs (id),
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    hash         BLOB NOT NULL UNIQUE,
    last4        TEXT NOT NULL,
    scopes       TEXT NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER,
    revoked_at   INTEGER
);
CREATE INDEX api_keys_org ON api_keys (org_id, created_at);

CREATE TABLE employees (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs (id),
    mode          TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    name          TEXT NOT NULL,
    role          TEXT NOT NULL,
    category      TEXT NOT NULL,
    tier          TEXT NOT NULL,
    capabilities  TEXT NOT NULL DEFAULT '[]',
    description   TEXT NOT NULL DEFAULT '',
    instructions  TEXT NOT NULL DEFAULT '',
    model         TEXT,
    disabled      INTEGER NOT NULL DEFAULT 0,
    busy          INTEGER NOT NULL DEFAULT 0 CHECK (busy >= 0),
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX employees_by_name ON employees (org_id, mode, name, id);

-- One row per fact that statistics count: kind 'message' (an assistant reply: response_ms,
-- credits, conversation_id), 'conversation' (a conversation started), 'task_completed',
-- 'task_failed', 'workflow_step', 'rating' (value 1..5). Append-only: statistics are a usage
-- ledger and survive the deletion of the conversation or task they came from.
CREATE TABLE employee_events (
    id               INTEGER PRIMARY KEY,
    org_id           TEXT NOT NULL,
    mode             TEXT NOT NULL,
    employee_id      TEXT NOT NULL,
    kind             TEXT NOT NULL,
    at               INTEGER NOT NULL,
    response_ms      INTEGER,
    credits          INTEGER NOT NULL DEFAULT 0,
    value            INTEGER,
    conversation_id  TEXT
);
CREATE INDEX employee_events_by_emp ON employee_events (employee_id, kind, at);
