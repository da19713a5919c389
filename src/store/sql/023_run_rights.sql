-- SPDX-License-Identifier: MIT
-- Migration 23: whose rights the turns of tasks and workflow runs have (issue 27, contract
-- §19: "tasks and workflow runs record who created them and their turns run with those
-- rights").
--
-- 'created_by' / 'started_by' is the key that made the row (NULL: none recorded: rows made
-- before, or by the server itself); 'scopes' is that key's scopes as the server's scope bits
-- (0: every scope, as a key without scopes, and as every row made before). A task run's tool
-- calls run with its task's; a workflow run's with its own: those of whoever started it (a
-- manual run, a turn's workflows.run), or, when no one did (a schedule, a webhook, an
-- integration event), those of whoever created the workflow.
ALTER TABLE tasks ADD COLUMN created_by TEXT;
ALTER TABLE tasks ADD COLUMN scopes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workflows ADD COLUMN created_by TEXT;
ALTER TABLE workflows ADD COLUMN scopes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workflow_runs ADD COLUMN started_by TEXT;
ALTER TABLE workflow_runs ADD COLUMN scopes INTEGER NOT NULL DEFAULT 0;
