-- SPDX-License-Identifier: MIT
-- Migration 9 (PostgreSQL): how far the processing of a document is (issue 12): its chunks, once
-- the text is cut, and how many of them are embedded so far. A record shows embedded / chunks as
-- progress. Same as sql/009_document_progress.sql (SQLite).

ALTER TABLE documents ADD COLUMN progress_chunks BIGINT NOT NULL DEFAULT 0;
ALTER TABLE documents ADD COLUMN progress_embedded BIGINT NOT NULL DEFAULT 0;
