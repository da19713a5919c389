-- SPDX-License-Identifier: MIT
-- Migration 3: knowledge documents, their chunks (text, page, embedding) and the FTS5 index
-- that gives BM25 (contract §11). Deleting a document deletes its chunks; triggers keep the
-- full-text index equal to the chunks table.

CREATE TABLE documents (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    name          TEXT NOT NULL,
    filename      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size_bytes    INTEGER NOT NULL,
    sha256        TEXT NOT NULL,
    tags          TEXT NOT NULL DEFAULT '[]',
    employee_ids  TEXT NOT NULL DEFAULT '[]',
    status        TEXT NOT NULL CHECK (status IN ('processing', 'ready', 'failed')),
    error         TEXT,
    chunk_count   INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE INDEX documents_by_created ON documents (org_id, mode, created_at, id);
CREATE INDEX documents_processing ON documents (status) WHERE status = 'processing';

CREATE TABLE chunks (
    rowid         INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    document_id   TEXT NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    page          INTEGER,
    content       TEXT NOT NULL,
    embedding     BLOB
);
CREATE INDEX chunks_by_document ON chunks (document_id, seq);
CREATE INDEX chunks_by_tenant ON chunks (org_id, mode);

CREATE VIRTUAL TABLE chunks_fts USING fts5 (content, content = 'chunks', content_rowid = 'rowid',
                                            tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, content) VALUES (new.rowid, new.content);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END;
