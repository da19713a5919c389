-- SPDX-License-Identifier: MIT
-- Migration 11: a version of each tenant's knowledge (issue 13). It moves in the transaction
-- that makes a document ready or failed, deletes one, or gives chunks new vectors. Every node
-- keeps a vector index per tenant in memory and rebuilds it when the version it was built at is
-- no longer the stored one, so a search on any node sees a document as soon as it is ready.

CREATE TABLE tenant_versions (
    org_id     TEXT NOT NULL,
    mode       TEXT NOT NULL,
    knowledge  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, mode)
);
