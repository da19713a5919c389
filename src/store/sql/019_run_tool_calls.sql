-- SPDX-License-Identifier: MIT
-- Migration 19: the work of task runs and workflow steps that call tools (issue 27, contract
-- §19).
--
-- A task run and a workflow run's step record why their turn stopped (completed, max_steps,
-- repeated_call, timeout, insufficient_credits; NULL while it runs, when it failed, and for a
-- step that asks no model). The calls they made are rows of tool_calls owned by the run
-- (task_run_id) or the step (workflow_run_id, step_index), migration 17; they go with the run
-- (a task or a workflow deleted takes its runs, and so their calls, with it).
ALTER TABLE task_runs ADD COLUMN stop_reason TEXT;
ALTER TABLE workflow_run_steps ADD COLUMN stop_reason TEXT;
CREATE TRIGGER task_runs_drop_tool_calls AFTER DELETE ON task_runs BEGIN
    DELETE FROM tool_calls WHERE task_run_id = old.id;
END;
CREATE TRIGGER workflow_runs_drop_tool_calls AFTER DELETE ON workflow_runs BEGIN
    DELETE FROM tool_calls WHERE workflow_run_id = old.id;
END;
