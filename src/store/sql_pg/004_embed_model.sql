-- SPDX-License-Identifier: MIT
-- Migration 4 (PostgreSQL): each chunk's vector says which model made it ('use-lite-512' for the
-- built-in model, 'openai:<model>' for the provider), so that vectors of two models are never
-- compared and chunks whose vector is missing or of another model are embedded again in the
-- background. Same as sql/004_embed_model.sql (SQLite); the new column comes after 'fts' here,
-- which no query selects with '*'.

ALTER TABLE chunks ADD COLUMN embed_model TEXT;
UPDATE chunks SET embed_model = 'use-lite-512' WHERE embedding IS NOT NULL;
CREATE INDEX chunks_by_model ON chunks (embed_model);
