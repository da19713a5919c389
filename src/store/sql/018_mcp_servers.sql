-- SPDX-License-Identifier: MIT
-- Migration 18: the MCP servers of an organization (issue 27, contract §19).
--
-- A server is reached at 'url' with the headers the organization gave: their names are kept in
-- clear ('header_names', a JSON array), their values only sealed ('headers': the JSON object
-- {name: value} under AES-256-GCM with a key derived from the server secret, bound to the
-- organization, the mode and the server's id), never in clear. 'tools' is the tool list last
-- read (a JSON array of {name, description, effect, input_schema}); 'status' says whether that
-- read worked ('error' says why not). 'generation' counts the changes of url and headers: a
-- read begun before one is not written after it.
CREATE TABLE mcp_servers (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL,
    mode         TEXT NOT NULL,
    name         TEXT NOT NULL,
    url          TEXT NOT NULL,
    header_names TEXT NOT NULL DEFAULT '[]',
    headers      BLOB,
    enabled      INTEGER NOT NULL DEFAULT 1,
    status       TEXT NOT NULL CHECK (status IN ('ok', 'error')),
    error        TEXT,
    tools        TEXT NOT NULL DEFAULT '[]',
    generation   INTEGER NOT NULL DEFAULT 0,
    refreshed_at INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (org_id, mode, name)
) WITHOUT ROWID;
CREATE INDEX mcp_servers_tenant ON mcp_servers (org_id, mode, created_at, id);
