-- SPDX-License-Identifier: MIT
-- Migration 20: approvals, and turns that pause and resume (issue 27, contract §19).
--
-- An approval is a person's decision on one tool call whose policy is 'approve': the call
-- (tool_calls.approval_id) waits as 'pending_approval' until it is approved (the call runs,
-- with the arguments as approved), rejected or expired (the model is told). 'expires_at' is
-- when an undecided one expires; the keeper reads the pending ones by it.
--
-- A chat turn that waits for approvals is stored: its message is 'requires_approval' and
-- 'turn_state' holds what the turn needs to go on that its rows do not (JSON: the request's
-- context, the starter's rights, the knowledge it was given, model calls made, running time,
-- the credits spent, the next event number). A turn that runs names its node ('lease_node'):
-- when that node dies, the node that takes its work back (nodes_recover) clears the name, and
-- a node then takes the turn over from its journal.
--
-- message_events keeps every event of an assistant message's stream as it was sent, in
-- chunks (first_seq..last_seq, the SSE text), for GET .../messages/{id}/events.
CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL,
    mode            TEXT NOT NULL,
    employee_id     TEXT NOT NULL,
    tool_call_id    TEXT NOT NULL,
    tool            TEXT NOT NULL,
    arguments       TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    reason          TEXT,
    requested_by_type TEXT NOT NULL,
    requested_by_id TEXT,
    conversation_id TEXT,
    message_id      TEXT REFERENCES messages (id) ON DELETE CASCADE,
    task_id         TEXT,
    task_run_id     TEXT,
    workflow_run_id TEXT,
    step_index      INTEGER,
    requested_at    INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    decided_at      INTEGER,
    decided_by_type TEXT,
    decided_by_id   TEXT
);
CREATE INDEX approvals_by_time ON approvals (org_id, mode, requested_at DESC, id DESC);
CREATE INDEX approvals_by_message ON approvals (message_id) WHERE message_id IS NOT NULL;
CREATE INDEX approvals_due ON approvals (expires_at) WHERE status = 'pending';
ALTER TABLE messages ADD COLUMN turn_state TEXT;
ALTER TABLE messages ADD COLUMN lease_node TEXT;
CREATE INDEX messages_running ON messages (lease_node) WHERE status = 'in_progress';
CREATE INDEX messages_paused ON messages (id) WHERE status = 'requires_approval';
CREATE TABLE message_events (
    message_id  TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    first_seq   INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL,
    events      TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (message_id, first_seq)
);
