-- SPDX-License-Identifier: MIT
-- Migration 16 (PostgreSQL): the tools an employee may use (issue 27, contract §19).
--
-- employees.tools holds the employee's rules, a JSON array of {name, policy} checked by
-- src/tools/rules.c before it is written. Every employee made before starts with the default of
-- a new one (store.h, STORE_EMP_TOOLS_DEFAULT): the knowledge search, run without approval.
ALTER TABLE employees ADD COLUMN tools TEXT NOT NULL
    DEFAULT '[{"name":"knowledge.search","policy":"auto"}]';
