-- SPDX-License-Identifier: MIT
-- Migration 14 (PostgreSQL): fair shares (issue 26), as sql/014_fair_queues.sql. The outbox is
-- taken endpoint by endpoint, and the task queue organization by organization, so that one
-- tenant's backlog or dead receivers cost another at most one slot's time, and so that a paused
-- delivery costs nothing. Not 1:1 with SQLite: BIGINT for INTEGER, "NOT held" for "held = 0"
-- (held is BOOLEAN here), and queue_turns is an ordinary table.
--
-- An endpoint carries the state of its part of the outbox: 'due_at' is the time its first
-- pending delivery is due while it is enabled (null when it is disabled or has none pending:
-- its deliveries are then in no due set at all), 'busy_lease' and 'busy_until' name the one
-- attempt it may have in flight, and 'turn' orders the claims (a larger turn was served more
-- recently; an organization's turn is the largest of its endpoints').
ALTER TABLE webhook_endpoints ADD COLUMN due_at BIGINT;
ALTER TABLE webhook_endpoints ADD COLUMN busy_lease TEXT;
ALTER TABLE webhook_endpoints ADD COLUMN busy_until BIGINT;
ALTER TABLE webhook_endpoints ADD COLUMN turn BIGINT NOT NULL DEFAULT 0;
UPDATE webhook_endpoints SET due_at = (SELECT min(d.next_attempt_at) FROM webhook_deliveries d
                                       WHERE d.endpoint_id = webhook_endpoints.id
                                         AND d.status = 'pending')
WHERE enabled = 1;
CREATE INDEX webhook_endpoints_due ON webhook_endpoints (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX webhook_endpoints_turn ON webhook_endpoints (turn);

-- An endpoint's pending deliveries in the order they are attempted (the global order by time
-- is no longer read: a claim picks the endpoint first).
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (endpoint_id, next_attempt_at)
    WHERE status = 'pending';

-- The task queue by organization first: one index seek finds the next organization with
-- runnable work, another its head. 'queue_turns' is when each organization was last served
-- (the same counter as above: larger is more recent).
DROP INDEX tasks_queue;
CREATE INDEX tasks_queue_org ON tasks (org_id, prio_rank, due_key, created_at, id)
    WHERE status = 'pending' AND NOT held;
CREATE INDEX workflow_runs_queue_org ON workflow_runs (org_id, ready_at, id)
    WHERE status IN ('queued', 'running') AND lease IS NULL AND NOT held;
CREATE TABLE queue_turns (
    org_id TEXT PRIMARY KEY,
    turn   BIGINT NOT NULL
);
CREATE INDEX queue_turns_turn ON queue_turns (turn);
