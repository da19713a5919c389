-- SPDX-License-Identifier: MIT
-- Migration 21 (PostgreSQL): the level of a workflow run's turns (contract §19: employees.ask
-- and workflows.run together at most 3 levels deep).
--
-- A run started by the workflows.run tool of a turn at level d runs its steps' turns at level
-- d + 1, so that their own employees.ask and workflows.run calls know how deep they are; a run
-- started by the API, a hook, an integration event or a schedule is at level 0.
ALTER TABLE workflow_runs ADD COLUMN depth BIGINT NOT NULL DEFAULT 0;
