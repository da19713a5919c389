-- SPDX-License-Identifier: MIT
-- Migration 17 (PostgreSQL): the work of an assistant message (issue 27, contract §19).
--
-- An assistant message has a status (in_progress while its turn runs tools, completed or
-- failed at its end), the reason its turn stopped, and the error of a failed one. Messages of
-- before were all completed answers.
--
-- tool_calls is the journal of the tools a turn called: a step's calls are written, as
-- 'running', in one transaction before any of them starts, then each one's end. 'seq' orders
-- the calls of a message, 'step' is the model call that asked for it, 'model_id' the model's
-- own id of the call; 'result' is cut to 16 KiB by the turn.
ALTER TABLE messages ADD COLUMN status TEXT NOT NULL DEFAULT 'completed';
ALTER TABLE messages ADD COLUMN stop_reason TEXT;
ALTER TABLE messages ADD COLUMN error TEXT;
CREATE TABLE tool_calls (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    message_id    TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    seq           BIGINT NOT NULL,
    step          BIGINT NOT NULL,
    model_id      TEXT NOT NULL,
    tool          TEXT NOT NULL,
    arguments     TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed',
                                                  'pending_approval', 'rejected')),
    result        TEXT,
    error         TEXT,
    approval_id   TEXT,
    started_at    BIGINT NOT NULL,
    completed_at  BIGINT
);
CREATE INDEX tool_calls_by_message ON tool_calls (message_id, seq);
