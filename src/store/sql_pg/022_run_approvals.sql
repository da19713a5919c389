-- SPDX-License-Identifier: MIT
-- Migration 22 (PostgreSQL): task runs and workflow steps that wait for approvals (issue 27,
-- contract §19).
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
ALTER TABLE task_runs DROP CONSTRAINT task_runs_status_check;
ALTER TABLE task_runs ADD CONSTRAINT task_runs_status_check
    CHECK (status IN ('in_progress', 'waiting_approval', 'completed', 'failed', 'cancelled'));
ALTER TABLE task_runs ADD COLUMN turn_state TEXT;
CREATE INDEX task_runs_waiting ON task_runs (started_at, id) WHERE status = 'waiting_approval';

ALTER TABLE workflow_run_steps DROP CONSTRAINT workflow_run_steps_status_check;
ALTER TABLE workflow_run_steps ADD CONSTRAINT workflow_run_steps_status_check
    CHECK (status IN ('pending', 'running', 'waiting_approval', 'completed', 'skipped',
                      'failed', 'cancelled'));
ALTER TABLE workflow_run_steps ADD COLUMN turn_state TEXT;
CREATE INDEX workflow_run_steps_waiting ON workflow_run_steps (run_id, idx)
    WHERE status = 'waiting_approval';

-- The approvals of a run, or of a step, as its claim asks whether any is still pending.
CREATE INDEX approvals_by_task_run ON approvals (task_run_id, status)
    WHERE task_run_id IS NOT NULL;
CREATE INDEX approvals_by_workflow_step ON approvals (workflow_run_id, step_index, status)
    WHERE workflow_run_id IS NOT NULL;
