-- SPDX-License-Identifier: MIT
-- Migration 10 (PostgreSQL): nodes, and the work each one holds (issue 13), as
-- sql/010_nodes.sql. Every server process is a node with a heartbeat. The work it holds names it: the chats its employees are busy with
-- (employee_work, in place of one busy counter per employee that a starting node had to clear
-- for everyone), its requests in flight under an Idempotency-Key, the task runs and workflow
-- steps it runs, the documents it processes. When a node stops beating (a crash, kill -9, a lost
-- machine) another node takes back exactly that work once the node's lease has expired, and
-- never the work of a node that is alive.

CREATE TABLE nodes (
    id            TEXT PRIMARY KEY,
    started_at    BIGINT NOT NULL,
    heartbeat_at  BIGINT NOT NULL
);

-- An employee is busy while some node holds work of it (n > 0).
CREATE TABLE employee_work (
    employee_id   TEXT NOT NULL REFERENCES employees (id) ON DELETE CASCADE,
    node_id       TEXT NOT NULL,
    n             BIGINT NOT NULL CHECK (n >= 0),
    PRIMARY KEY (employee_id, node_id)
);
CREATE INDEX employee_work_by_node ON employee_work (node_id);

ALTER TABLE employees DROP COLUMN busy;
ALTER TABLE idempotency_keys ADD COLUMN node_id TEXT;
ALTER TABLE task_runs ADD COLUMN node_id TEXT;
ALTER TABLE workflow_runs ADD COLUMN lease_node TEXT;
ALTER TABLE documents ADD COLUMN node_id TEXT;
