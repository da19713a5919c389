-- SPDX-License-Identifier: MIT
-- Migration 25: credits that are bought, and a ledger of every credit (issue 29, contract §21).
--
-- 'credit_transactions' is the ledger: one entry for every change of a balance, written in the
-- transaction that changes it (src/store/ledger.c is its one writer). 'amount' is what actually
-- changed (negative: taken); 'shortfall' what a take-back or a charge could not take because
-- the balance met 0. A balance always equals the sum of its entries' amounts. Entries are never
-- changed. The key columns come first (SQLite 3.40's integrity check misreads a WITHOUT ROWID
-- table whose key columns are not: see migration 24).
--
-- Each mode has its own balance: 'orgs.credits' is the live one (spent by live keys' work),
-- 'orgs.test_credits' the test one, which only test-mode purchases change (test mode is free).
--
-- 'orgs.ledger_at' / 'orgs.test_ledger_at' are each balance's ledger clock: the time of its
-- latest entry. The statement that changes a balance moves it to now, or one millisecond past
-- the latest entry when that is not before now, so a balance's entries have distinct,
-- increasing times and are listed in the order they were written.
--
-- 'credit_usage' keeps the sums of the work entries (chat, task_run, workflow_step) by employee
-- and hour, written with each entry; once a day is over by a whole day, the keeper folds its
-- hours into one row at the day's start (store_credit_usage_compact), so GET
-- /v1/account/usage reads at most 90 + 48 rows per employee whatever the size of the ledger.
-- 'credit_usage_compacted' says up to when that was done (its one row, locked by the node
-- that does it, so two nodes never fold the same hours twice).
--
-- 'checkout_sessions' records each Stripe Checkout Session this server created (the
-- organization, the mode and the credits of its pack); 'stripe_events' each Stripe event
-- received once verified: applied, ignored (not ours, not a type that changes credits), held
-- (a refund or dispute that came before its purchase) or refused (with why).
ALTER TABLE orgs ADD COLUMN test_credits INTEGER NOT NULL DEFAULT 0 CHECK (test_credits >= 0);
ALTER TABLE orgs ADD COLUMN ledger_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE orgs ADD COLUMN test_ledger_at INTEGER NOT NULL DEFAULT 0;

CREATE TABLE credit_transactions (
    org_id        TEXT NOT NULL,
    mode          TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    created_at    INTEGER NOT NULL,
    id            TEXT NOT NULL,
    amount        INTEGER NOT NULL,
    balance_after INTEGER NOT NULL CHECK (balance_after >= 0),
    shortfall     INTEGER NOT NULL DEFAULT 0 CHECK (shortfall >= 0),
    reason        TEXT NOT NULL CHECK (reason IN ('purchase', 'refund', 'dispute', 'chat',
                                                  'task_run', 'workflow_step', 'grant',
                                                  'adjustment')),
    ref_type      TEXT,
    ref_id        TEXT,
    employee_id   TEXT,
    PRIMARY KEY (org_id, mode, created_at, id)
) WITHOUT ROWID;
CREATE TRIGGER credit_transactions_append_only BEFORE UPDATE ON credit_transactions
BEGIN
    SELECT RAISE(ABORT, 'ledger entries are never changed');
END;

CREATE TABLE credit_usage (
    org_id       TEXT NOT NULL,
    mode         TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    hour         INTEGER NOT NULL,
    employee_id  TEXT NOT NULL,
    credits      INTEGER NOT NULL DEFAULT 0,
    count        INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, mode, hour, employee_id)
) WITHOUT ROWID;

CREATE TABLE credit_usage_compacted (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    before_at  INTEGER NOT NULL
);
INSERT INTO credit_usage_compacted (id, before_at) VALUES (1, 0);

CREATE TABLE checkout_sessions (
    id              TEXT PRIMARY KEY,
    org_id          TEXT NOT NULL REFERENCES orgs (id),
    mode            TEXT NOT NULL CHECK (mode IN ('live', 'test')),
    price_id        TEXT NOT NULL,
    credits         INTEGER NOT NULL CHECK (credits > 0),
    created_by      TEXT,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    payment_intent  TEXT,
    paid_at         INTEGER,
    taken_back      INTEGER NOT NULL DEFAULT 0 CHECK (taken_back >= 0)
);
CREATE INDEX checkout_sessions_intent ON checkout_sessions (payment_intent);
CREATE INDEX checkout_sessions_org ON checkout_sessions (org_id, created_at);

CREATE TABLE stripe_events (
    id              TEXT PRIMARY KEY,
    type            TEXT NOT NULL,
    livemode        INTEGER NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('applied', 'ignored', 'held', 'refused')),
    note            TEXT,
    object_id       TEXT,
    payment_intent  TEXT,
    amount          INTEGER,
    amount_refunded INTEGER,
    received_at     INTEGER NOT NULL,
    applied_at      INTEGER
);
CREATE INDEX stripe_events_held ON stripe_events (payment_intent, received_at)
    WHERE status = 'held';

-- Each existing organization's ledger opens with one adjustment entry for its balance.
INSERT INTO credit_transactions (org_id, mode, created_at, id, amount, balance_after, shortfall,
                                 reason)
SELECT id, 'live', CAST(strftime('%s', 'now') AS INTEGER) * 1000, 'ctx_' || substr(id, 5),
       credits, credits, 0, 'adjustment'
FROM orgs;
