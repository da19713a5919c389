-- SPDX-License-Identifier: MIT
-- Migration 2: conversations, messages, feedback and idempotency keys (contract §5, §8).

CREATE TABLE conversations (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    mode           TEXT NOT NULL,
    employee_id    TEXT NOT NULL,
    title          TEXT NOT NULL,
    message_count  INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX conversations_by_activity ON conversations (org_id, mode, updated_at, id);
CREATE INDEX conversations_by_employee ON conversations (org_id, mode, employee_id, updated_at, id);

CREATE TABLE messages (
    id               TEXT PRIMARY KEY,
    conversation_id  TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    org_id           TEXT NOT NULL,
    mode             TEXT NOT NULL,
    employee_id      TEXT NOT NULL,
    role             TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
    content          TEXT NOT NULL,
    credits_used     INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    response_ms      INTEGER,
    sources          TEXT,
    created_at       INTEGER NOT NULL,
    seq              INTEGER NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);

-- A rating replaces the earlier one of the same message; employee_events keeps one 'rating'
-- row per rated message (message_id) so that statistics count the latest only.
CREATE TABLE feedback (
    message_id       TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    conversation_id  TEXT NOT NULL,
    rating           INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    comment          TEXT,
    created_at       INTEGER NOT NULL
);
ALTER TABLE employee_events ADD COLUMN message_id TEXT;
CREATE INDEX employee_events_by_message ON employee_events (message_id);

-- Idempotency-Key records: claimed (state 0) while the first request runs, then the response.
CREATE TABLE idempotency_keys (
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    key           TEXT NOT NULL,
    fingerprint   BLOB NOT NULL,
    state         INTEGER NOT NULL DEFAULT 0,
    status        INTEGER,
    content_type  TEXT,
    body          BLOB,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (org_id, mode, key)
);
