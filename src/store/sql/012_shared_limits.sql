-- SPDX-License-Identifier: MIT
-- Migration 12: nothing on SQLite. On PostgreSQL this version adds the rate limits that every
-- node shares and the data version the nodes' caches compare (sql_pg/012_shared_limits.sql);
-- a SQLite database is served by one process, which keeps its limits in memory and learns of
-- other processes' changes from PRAGMA data_version.
SELECT 1;
