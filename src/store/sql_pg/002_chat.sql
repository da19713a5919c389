-- SPDX-License-Identifier: MIT
-- Migration 2 (PostgreSQL): conversations, messages, feedback and idempotency keys (contract §5,
-- §8). Same as sql/002_chat.sql (SQLite).

CREATE TABLE conversations (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    mode           TEXT NOT NULL,
    employee_id    TEXT NOT NULL,
    title          TEXT NOT NULL,
    message_count  BIGINT NOT NULL DEFAULT 0,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
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
    credits_used     BIGINT NOT NULL DEFAULT 0,
    input_tokens     BIGINT NOT NULL DEFAULT 0,
    output_tokens    BIGINT NOT NULL DEFAULT 0,
    response_ms      BIGINT,
    sources          TEXT,
    created_at       BIGINT NOT NULL,
    seq              BIGINT NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_id, seq);

-- A rating replaces the earlier one of the same message; employee_events keeps one 'rating'
-- row per rated message (message_id) so that statistics count the latest only.
CREATE TABLE feedback (
    message_id       TEXT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    conversation_id  TEXT NOT NULL,
    rating           BIGINT NOT NULL CHECK (rating BETWEEN 1 AND 5),
    comment          TEXT,
    created_at       BIGINT NOT NULL
);
ALTER TABLE employee_events ADD COLUMN message_id TEXT;
CREATE INDEX employee_events_by_message ON employee_events (message_id);

-- Idempotency-Key records: claimed (state 0) while the first request runs, then the response.
-- 'state' is a state number compared with 0 and 1 (not a condition): BIGINT.
CREATE TABLE idempotency_keys (
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    key           TEXT NOT NULL,
    fingerprint   BYTEA NOT NULL,
    state         BIGINT NOT NULL DEFAULT 0,
    status        BIGINT,
    content_type  TEXT,
    body          BYTEA,
    created_at    BIGINT NOT NULL,
    PRIMARY KEY (org_id, mode, key)
);
