-- SPDX-License-Identifier: MIT
-- Migration 6 (PostgreSQL): workflows (contract §12). A workflow keeps its checked definition as
-- canonical JSON text (trigger and steps, as the API shows them) plus the columns the server
-- queries: the webhook token (unique across organizations: the token alone finds the workflow),
-- the schedule's canonical recurrence text and its next occurrence.
--
-- Not 1:1 with sql/006_workflows.sql (SQLite): 'enabled' is BOOLEAN (default true; SQLite:
-- INTEGER 1). SQL comparing it with 1 must say "enabled" or "enabled = TRUE" on PostgreSQL (both
-- databases read that); a bound '0'/'1' reads alike. trigger and steps stay TEXT (the canonical
-- text is shown as stored); SQL reading into them casts to jsonb on PostgreSQL.

CREATE TABLE workflows (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL,
    mode           TEXT NOT NULL,
    name           TEXT NOT NULL,
    description    TEXT,
    trigger_type   TEXT NOT NULL CHECK (trigger_type IN ('manual', 'webhook', 'schedule',
                                                        'integration')),
    trigger        TEXT NOT NULL, -- JSON object
    steps          TEXT NOT NULL, -- JSON array
    webhook_token  TEXT UNIQUE,   -- set while the trigger is a webhook
    recurring      TEXT,          -- schedule triggers: canonical recurrence text
    next_run_at    BIGINT,        -- schedule triggers: the next occurrence
    enabled        BOOLEAN NOT NULL DEFAULT true,
    run_count      BIGINT NOT NULL DEFAULT 0,
    last_run_at    BIGINT,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX workflows_by_created ON workflows (org_id, mode, created_at, id);
CREATE INDEX workflows_scheduled ON workflows (next_run_at) WHERE recurring IS NOT NULL;
