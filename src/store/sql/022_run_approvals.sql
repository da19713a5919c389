-- SPDX-License-Identifier: MIT
-- Migration 22: task runs and workflow steps that wait for approvals (issue 27, contract §19).
--
-- A task run's turn, or a workflow `respond` step's, that calls a tool whose policy is
-- 'approve' journals the call as 'pending_approval' with its approval (migration 20), runs
-- the step's other calls, and stops: the run is 'waiting_approval' (its task stays
-- in_progress), the step is 'waiting_approval' (its run stays running). It then holds no
-- worker, no node, no credit and no busy employee. 'turn_state' holds what the turn goes on
-- from that its rows do not (JSON: the input, the knowledge it was given, model calls made,
-- running time, what the model wrote so far, the first call of this turn); it stays until the
-- run or step ends, so that a turn cut by a crash after it went on is taken up again from its
-- journal, not run again.
--
-- Once none of its approvals is pending, a waiting run or step is runnable again (the queue's
-- claim reads that, store_claim): a waiting step's run is kept out of the step queue by a
-- 'ready_at' no clock reaches (9e18).
--
-- SQLite cannot change a CHECK constraint: task_runs and workflow_run_steps are made again
-- with the new statuses (and their indexes and trigger), their rows copied over.
DROP TRIGGER task_runs_drop_tool_calls;
CREATE TABLE task_runs_new (
    id            TEXT PRIMARY KEY,
    task_id       TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    employee_id   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('in_progress', 'waiting_approval', 'completed',
                                                  'failed', 'cancelled')),
    reserved      INTEGER NOT NULL DEFAULT 0, -- credits held while in progress
    result        TEXT,
    error         TEXT,
    credits_used  INTEGER NOT NULL DEFAULT 0,
    started_at    INTEGER NOT NULL,
    completed_at  INTEGER,
    node_id       TEXT,
    stop_reason   TEXT,
    turn_state    TEXT
);
INSERT INTO task_runs_new (id, task_id, org_id, mode, employee_id, status, reserved, result,
                           error, credits_used, started_at, completed_at, node_id, stop_reason)
SELECT id, task_id, org_id, mode, employee_id, status, reserved, result, error, credits_used,
       started_at, completed_at, node_id, stop_reason FROM task_runs;
DROP TABLE task_runs;
ALTER TABLE task_runs_new RENAME TO task_runs;
CREATE INDEX task_runs_by_task ON task_runs (task_id, started_at, id);
CREATE INDEX task_runs_in_progress ON task_runs (status) WHERE status = 'in_progress';
CREATE INDEX task_runs_waiting ON task_runs (started_at, id) WHERE status = 'waiting_approval';
CREATE TRIGGER task_runs_drop_tool_calls AFTER DELETE ON task_runs BEGIN
    DELETE FROM tool_calls WHERE task_run_id = old.id;
END;

CREATE TABLE workflow_run_steps_new (
    run_id        TEXT NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    employee_id   TEXT NOT NULL,
    action        TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'running', 'waiting_approval',
                                                  'completed', 'skipped', 'failed',
                                                  'cancelled')),
    input         TEXT,
    output        TEXT, -- JSON text
    error         TEXT,
    attempts      INTEGER NOT NULL DEFAULT 0,
    credits_used  INTEGER NOT NULL DEFAULT 0,
    started_at    INTEGER,
    completed_at  INTEGER,
    stop_reason   TEXT,
    turn_state    TEXT,
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
INSERT INTO workflow_run_steps_new (run_id, idx, employee_id, action, status, input, output,
                                    error, attempts, credits_used, started_at, completed_at,
                                    stop_reason)
SELECT run_id, idx, employee_id, action, status, input, output, error, attempts, credits_used,
       started_at, completed_at, stop_reason FROM workflow_run_steps;
DROP TABLE workflow_run_steps;
ALTER TABLE workflow_run_steps_new RENAME TO workflow_run_steps;
CREATE INDEX workflow_run_steps_waiting ON workflow_run_steps (run_id, idx)
    WHERE status = 'waiting_approval';

-- The approvals of a run, or of a step, as its claim asks whether any is still pending.
CREATE INDEX approvals_by_task_run ON approvals (task_run_id, status)
    WHERE task_run_id IS NOT NULL;
CREATE INDEX approvals_by_workflow_step ON approvals (workflow_run_id, step_index, status)
    WHERE workflow_run_id IS NOT NULL;
