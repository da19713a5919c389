-- SPDX-License-Identifier: MIT
-- Migration 6: workflows (contract §12). A workflow keeps its checked definition as canonical
-- JSON text (trigger and steps, as the API shows them) plus the columns the server queries:
-- the webhook token (unique across organizations: the token alone finds the workflow), the
-- schedule's canonical recurrence text and its next occurrence.

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
    next_run_at    INTEGER,       -- schedule triggers: the next occurrence
    enabled        INTEGER NOT NULL DEFAULT 1,
    run_count      INTEGER NOT NULL DEFAULT 0,
    last_run_at    INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX workflows_by_created ON workflows (org_id, mode, created_at, id);
CREATE INDEX workflows_scheduled ON workflows (next_run_at) WHERE recurring IS NOT NULL;
