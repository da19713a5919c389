-- SPDX-License-Identifier: MIT
-- Migration 9: how far the processing of a document is (issue 12): its chunks, once the text is
-- cut, and how many of them are embedded so far. A record shows embedded / chunks as progress.

ALTER TABLE documents ADD COLUMN progress_chunks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE documents ADD COLUMN progress_embedded INTEGER NOT NULL DEFAULT 0;
