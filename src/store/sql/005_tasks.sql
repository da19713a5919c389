-- SPDX-License-Identifier: MIT
-- Migration 5: tasks and their runs (contract §10). The queue is the tasks table itself: a
-- pending task whose next_run_at has come (or has none) and whose employee is not offline
-- ('held' mirrors that, kept by a trigger) is runnable; the partial index holds exactly the
-- pending, unheld tasks, in the order they run: priority, then due_at (none last), then
-- creation. A run is one
-- execution; run_id names the run in progress, so that a finishing worker can tell a run that
-- was cancelled or whose task was deleted meanwhile.

CREATE TABLE tasks (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    employee_id   TEXT NOT NULL,
    title         TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
    priority      TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'urgent')),
    prio_rank     INTEGER NOT NULL, -- 0 urgent .. 3 low
    due_at        INTEGER,
    due_key       INTEGER NOT NULL, -- due_at, or the largest integer when there is none
    recurring     TEXT,             -- canonical JSON text, or NULL for a one-time task
    next_run_at   INTEGER,
    last_run_at   INTEGER,
    run_count     INTEGER NOT NULL DEFAULT 0,
    run_id        TEXT,             -- the run in progress
    held          INTEGER NOT NULL DEFAULT 0, -- 1 while the employee is offline
    run_now       INTEGER NOT NULL DEFAULT 0, -- queued again: runs before its next occurrence
    result        TEXT,
    error         TEXT,
    credits_used  INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    started_at    INTEGER,
    completed_at  INTEGER
);
CREATE INDEX tasks_by_created ON tasks (org_id, mode, created_at, id);
CREATE INDEX tasks_queue ON tasks (prio_rank, due_key, created_at, id)
    WHERE status = 'pending' AND held = 0;
CREATE INDEX tasks_recurring ON tasks (next_run_at) WHERE recurring IS NOT NULL;
CREATE INDEX tasks_by_employee ON tasks (employee_id);

CREATE TRIGGER employees_hold_tasks AFTER UPDATE OF disabled ON employees
WHEN old.disabled != new.disabled BEGIN
    UPDATE tasks SET held = new.disabled
    WHERE employee_id = new.id AND org_id = new.org_id AND mode = new.mode;
END;

CREATE TABLE task_runs (
    id            TEXT PRIMARY KEY,
    task_id       TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    employee_id   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed',
                                                  'cancelled')),
    reserved      INTEGER NOT NULL DEFAULT 0, -- credits held while in progress
    result        TEXT,
    error         TEXT,
    credits_used  INTEGER NOT NULL DEFAULT 0,
    started_at    INTEGER NOT NULL,
    completed_at  INTEGER
);
CREATE INDEX task_runs_by_task ON task_runs (task_id, started_at, id);
CREATE INDEX task_runs_in_progress ON task_runs (status) WHERE status = 'in_progress';
