-- SPDX-License-Identifier: MIT
-- Migration 7 (PostgreSQL): workflow runs and their steps (contract §12). A run keeps a snapshot
-- of its workflow's steps, so that an edit made while it runs changes nothing under it. Runs
-- share the durable queue of tasks (one claim takes either, store_claim): a run is runnable while
-- it is queued or running, no worker holds its current step (lease IS NULL), the employee of that
-- step is not offline ('held', kept by a trigger like the tasks' one), and its 'ready_at' has
-- come (the time the step became runnable; a retry's backoff puts it in the future). The partial
-- index holds exactly those runs, in the order their steps became ready.
--
-- Not 1:1 with sql/007_workflow_runs.sql (SQLite):
--  * held is BOOLEAN (a copy of employees.disabled), so the queue index's "held = 0" is
--    "NOT held".
--  * The trigger employees_hold_workflow_runs is a PL/pgSQL function of the same name and a row
--    trigger.
--  * workflow_run_steps is "WITHOUT ROWID" in SQLite (a storage choice: the table is its primary
--    key's b-tree); an ordinary table with the same primary key here.

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
    step_count        BIGINT NOT NULL,
    next_step         BIGINT NOT NULL DEFAULT 0, -- the step to run (step_count: none left)
    step_employee_id  TEXT,                      -- the employee of next_step
    held              BOOLEAN NOT NULL DEFAULT false, -- true while that employee is offline
    lease             TEXT,                      -- the claim of the step in flight
    ready_at          BIGINT NOT NULL,
    error             TEXT,
    credits_used      BIGINT NOT NULL DEFAULT 0,
    created_at        BIGINT NOT NULL,
    started_at        BIGINT,
    completed_at      BIGINT
);
CREATE INDEX workflow_runs_by_workflow ON workflow_runs (workflow_id, created_at, id);
CREATE INDEX workflow_runs_queue ON workflow_runs (ready_at, id)
    WHERE status IN ('queued', 'running') AND lease IS NULL AND NOT held;
CREATE INDEX workflow_runs_leased ON workflow_runs (lease) WHERE lease IS NOT NULL;
CREATE INDEX workflow_runs_by_step_employee ON workflow_runs (step_employee_id)
    WHERE status IN ('queued', 'running');

CREATE FUNCTION employees_hold_workflow_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE workflow_runs SET held = NEW.disabled
    WHERE step_employee_id = NEW.id AND org_id = NEW.org_id AND mode = NEW.mode
      AND status IN ('queued', 'running');
    RETURN NULL;
END
$$;
CREATE TRIGGER employees_hold_workflow_runs AFTER UPDATE OF disabled ON employees
FOR EACH ROW WHEN (OLD.disabled <> NEW.disabled)
EXECUTE FUNCTION employees_hold_workflow_runs();

CREATE TABLE workflow_run_steps (
    run_id        TEXT NOT NULL REFERENCES workflow_runs (id) ON DELETE CASCADE,
    idx           BIGINT NOT NULL,
    employee_id   TEXT NOT NULL,
    action        TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'skipped',
                                                  'failed', 'cancelled')),
    input         TEXT,
    output        TEXT, -- JSON text
    error         TEXT,
    attempts      BIGINT NOT NULL DEFAULT 0,
    credits_used  BIGINT NOT NULL DEFAULT 0,
    started_at    BIGINT,
    completed_at  BIGINT,
    PRIMARY KEY (run_id, idx)
);
