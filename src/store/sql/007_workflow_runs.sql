-- SPDX-License-Identifier: MIT
-- Migration 7: workflow runs and their steps (contract §12). A run keeps a snapshot of its
-- workflow's steps, so that an edit made while it runs changes nothing under it. Runs share the
-- durable queue of tasks (one claim takes either, store_claim): a run is runnable while it is
-- queued or running, no worker holds its current step (lease IS NULL), the employee of that
-- step is not offline ('held', kept by a trigger like the tasks' one), and its 'ready_at' has
-- come (the time the step became runnable; a retry's backoff puts it in the future). The
-- partial index holds exactly those runs, in the order their steps became ready.

CREATE TABLE workflow_runs (
    id                TEXT PRIMARY KEY,
    workflow_id       TEXT NOT NULL REFERENCES workflows (id) ON DELETE CASCADE,
    org_id            TEXT NOT NULL,
    mode              TEXT NOT NULL,
    status            TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed',
                                                      'cancelled')),
    trigger_type      TEXT NOT NULL,
    trigger_event     TEXT,
    trigger_data      TEXT NOT NULL, -- JSON object
    definition        TEXT NOT NULL, -- the workflow's steps (JSON array) when the run was made
    step_count        INTEGER NOT NULL,
    next_step         INTEGER NOT NULL DEFAULT 0, -- the step to run (step_count: none left)
    step_employee_id  TEXT,                       -- the employee of next_step
    held              INTEGER NOT NULL DEFAULT 0, -- 1 while that employee is offline
    lease             TEXT,                       -- the claim of the step in flight
    ready_at          INTEGER NOT NULL,
    error             TEXT,
    credits_used      INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    started_at        INTEGER,
    completed_at      INTEGER
);
CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow_id, created_at, id);
CREATE INDEX workflow_runs_queue ON workflow_runs (ready_at, id)
    WHERE status IN ('queued', 'running') AND lease IS NULL AND held = 0;
CREATE INDEX workflow_runs_leased ON workflow_runs (lease) WHERE lease IS NOT NULL;
CREATE INDEX workflow_runs_by_step_employee ON workflow_runs (step_employee_id)
    WHERE status IN ('queued', 'running');

CREATE TRIGGER employees_hold_workflow_runs AFTER UPDATE OF disabled ON employees
WHEN old.disabled != new.disabled BEGIN
    UPDATE workflow_runs SET held = new.disabled
    WHERE step_employee_id = new.id AND org_id = new.org_id AND mode = new.mode
      AND status IN ('queued', 'running');
END;

CREATE TABLE workflow_run_steps (
    run_id        TEXT NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    idx           INTEGER NOT NULL,
    employee_id   TEXT NOT NULL,
    action        TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'skipped',
                                                  'failed', 'cancelled')),
    input         TEXT,
    output        TEXT, -- JSON text
    error         TEXT,
    attempts      INTEGER NOT NULL DEFAULT 0,
    credits_used  INTEGER NOT NULL DEFAULT 0,
    started_at    INTEGER,
    completed_at  INTEGER,
    PRIMARY KEY (run_id, idx)
) WITHOUT ROWID;
