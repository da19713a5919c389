-- SPDX-License-Identifier: MIT
-- Migration 12 (PostgreSQL): what the nodes share beyond the data (issue 13). SQLite has no
-- counterpart (sql/012_shared_limits.sql is empty).

-- The data version. A store call that changed rows takes the next value after its commit; the
-- last value is what every node's request-path caches compare (any change by any node moves
-- it, and nothing else does: not the rate limits below, not the upkeep of the log).
CREATE SEQUENCE data_changes;

-- Rate limits across nodes (contract §4), kept here when no Redis is configured. Unlogged: a
-- count lost in a crash of the database only starts a new window, and a request pays no log
-- flush for it.
--
-- One row per tenant (organization and key mode): the minute window and the token bucket.
CREATE UNLOGGED TABLE rate_windows (
    tenant     TEXT PRIMARY KEY,
    minute     BIGINT NOT NULL,
    count      BIGINT NOT NULL,
    tokens     DOUBLE PRECISION NOT NULL,
    refill_ms  BIGINT NOT NULL
);

-- Requests in flight, per tenant and holder: a node under one epoch (a node that lost the
-- database for a while starts a new epoch, and what it could not release under the old one
-- no longer counts). The rows of a node that stopped beating (nodes.heartbeat_at) do not count.
CREATE UNLOGGED TABLE rate_inflight (
    tenant   TEXT NOT NULL,
    node_id  TEXT NOT NULL,
    epoch    BIGINT NOT NULL,
    n        BIGINT NOT NULL,
    PRIMARY KEY (tenant, node_id, epoch)
);

-- Admit one request of p_tenant for the holder (p_node, p_epoch) at p_now (ms), or refuse it:
-- verdict 0 admitted (a token, a window slot and an in-flight place taken), 1 over the rate,
-- 2 over the concurrency (nothing taken). The checks and their order are those of the
-- in-memory limiter (src/ratelimit/bucket.c). The tenant's window row is locked until the
-- caller's statement ends, so concurrent requests of one tenant are counted one at a time.
CREATE FUNCTION rate_enter(p_tenant TEXT, p_node TEXT, p_epoch BIGINT, p_per_minute BIGINT,
                           p_burst BIGINT, p_concurrent BIGINT, p_now BIGINT, p_lease_ms BIGINT,
                           OUT verdict INT, OUT remaining BIGINT, OUT reset_s BIGINT,
                           OUT retry_after BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
    w rate_windows%ROWTYPE;
    cur BIGINT := p_now / 60000;
    rate DOUBLE PRECISION := p_per_minute / 60000.0;
    busy BIGINT;
BEGIN
    INSERT INTO rate_windows VALUES (p_tenant, cur, 0, p_burst, p_now)
        ON CONFLICT (tenant) DO NOTHING;
    SELECT * INTO w FROM rate_windows WHERE tenant = p_tenant FOR UPDATE;
    IF w.minute <> cur THEN
        w.minute := cur;
        w.count := 0;
    END IF;
    IF p_now > w.refill_ms THEN
        w.tokens := w.tokens + (p_now - w.refill_ms) * rate;
        w.refill_ms := p_now;
    END IF;
    IF w.tokens > p_burst THEN
        w.tokens := p_burst;
    END IF;

    -- what no longer counts: this node's earlier epochs, and nodes silent for a lease
    DELETE FROM rate_inflight i
     WHERE i.tenant = p_tenant
       AND ((i.node_id = p_node AND i.epoch <> p_epoch)
            OR (i.node_id <> p_node
                AND NOT EXISTS (SELECT 1 FROM nodes n
                                 WHERE n.id = i.node_id
                                   AND n.heartbeat_at >= p_now - p_lease_ms)));
    SELECT coalesce(sum(n), 0) INTO busy FROM rate_inflight WHERE tenant = p_tenant;

    reset_s := (cur + 1) * 60;
    retry_after := 0;
    IF busy >= p_concurrent THEN
        verdict := 2;
        retry_after := 1;
    ELSIF w.count >= p_per_minute THEN
        verdict := 1;
        retry_after := ceil(((cur + 1) * 60000 - p_now) / 1000.0);
    ELSIF w.tokens < 1.0 THEN
        verdict := 1;
        retry_after := ceil((1.0 - w.tokens) / rate / 1000.0);
    ELSE
        verdict := 0;
        w.tokens := w.tokens - 1.0;
        w.count := w.count + 1;
        INSERT INTO rate_inflight VALUES (p_tenant, p_node, p_epoch, 1)
            ON CONFLICT (tenant, node_id, epoch) DO UPDATE SET n = rate_inflight.n + 1;
    END IF;
    IF verdict <> 0 AND retry_after < 1 THEN
        retry_after := 1;
    END IF;
    remaining := greatest(p_per_minute - w.count, 0);
    UPDATE rate_windows
       SET minute = w.minute, count = w.count, tokens = w.tokens, refill_ms = w.refill_ms
     WHERE tenant = p_tenant;
END;
$$;

-- End a request that rate_enter admitted for the holder (p_node, p_epoch).
CREATE FUNCTION rate_leave(p_tenant TEXT, p_node TEXT, p_epoch BIGINT) RETURNS VOID
LANGUAGE sql AS $$
    UPDATE rate_inflight SET n = n - 1
     WHERE tenant = p_tenant AND node_id = p_node AND epoch = p_epoch AND n > 0;
$$;
