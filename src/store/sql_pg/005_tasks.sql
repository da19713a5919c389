-- SPDX-License-Identifier: MIT
-- Migration 5 (PostgreSQL): tasks and their runs (contract §10). The queue is the tasks table
-- itself: a pending task whose next_run_at has come (or has none) and whose employee is not
-- offline ('held' mirrors that, kept by a trigger) is runnable; the partial index holds exactly
-- the pending, unheld tasks, in the order they run: priority, then due_at (none last), then
-- creation. A run is one execution; run_id names the run in progress, so that a finishing worker
-- can tell a run that was cancelled or whose task was deleted meanwhile.
--
-- Not 1:1 with sql/005_tasks.sql (SQLite):
--  * held and run_now are BOOLEAN (flags; SQLite compares them with 0 and 1). held is a copy of
--    employees.disabled (BOOLEAN), set by the trigger. The queue index's "held = 0" is
--    "NOT held". SQL that compares them with 0/1 literals must say FALSE/TRUE on PostgreSQL
--    (both databases read TRUE and FALSE); bound parameters '0'/'1' read alike.
--  * The trigger employees_hold_tasks is a PL/pgSQL function of the same name and a row trigger.
--  * task_runs.reserved stays a number (credits held: BIGINT), as the recovery sums it.

CREATE TABLE tasks (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    employee_id   TEXT NOT NULL,
    title         TEXT NOT NULL,
    description   TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL CHECK (status IN ('pending', 'in_progress', 'completed', 'failed')),
    priority      TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'urgent')),
    prio_rank     BIGINT NOT NULL, -- 0 urgent .. 3 low
    due_at        BIGINT,
    due_key       BIGINT NOT NULL, -- due_at, or the largest integer when there is none
    recurring     TEXT,            -- canonical JSON text, or NULL for a one-time task
    next_run_at   BIGINT,
    last_run_at   BIGINT,
    run_count     BIGINT NOT NULL DEFAULT 0,
    run_id        TEXT,            -- the run in progress
    held          BOOLEAN NOT NULL DEFAULT false, -- true while the employee is offline
    run_now       BOOLEAN NOT NULL DEFAULT false, -- queued again: runs before its next occurrence
    result        TEXT,
    error         TEXT,
    credits_used  BIGINT NOT NULL DEFAULT 0,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    started_at    BIGINT,
    completed_at  BIGINT
);
CREATE INDEX tasks_by_created ON tasks (org_id, mode, created_at, id);
CREATE INDEX tasks_queue ON tasks (prio_rank, due_key, created_at, id)
    WHERE status = 'pending' AND NOT held;
CREATE INDEX tasks_recurring ON tasks (next_run_at) WHERE recurring IS NOT NULL;
CREATE INDEX tasks_by_employee ON tasks (employee_id);

CREATE FUNCTION employees_hold_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE tasks SET held = NEW.disabled
    WHERE employee_id = NEW.id AND org_id = NEW.org_id AND mode = NEW.mode;
    RETURN NULL;
END
$$;
CREATE TRIGGER employees_hold_tasks AFTER UPDATE OF disabled ON employees
FOR EACH ROW WHEN (OLD.disabled <> NEW.disabled)
EXECUTE FUNCTION employees_hold_tasks();

CREATE TABLE task_runs (
    id            TEXT PRIMARY KEY,
    task_id       TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    employee_id   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('in_progress', 'completed', 'failed',
                                                  'cancelled')),
    reserved      BIGINT NOT NULL DEFAULT 0, -- credits held while in progress
    result        TEXT,
    error         TEXT,
    credits_used  BIGINT NOT NULL DEFAULT 0,
    started_at    BIGINT NOT NULL,
    completed_at  BIGINT
);
CREATE INDEX task_runs_by_task ON task_runs (task_id, started_at, id);
CREATE INDEX task_runs_in_progress ON task_runs (status) WHERE status = 'in_progress';
