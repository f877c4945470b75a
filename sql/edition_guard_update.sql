-- Copyright (c) 2026, the dlock developers
--
-- At most one dlock per database (issue 26), on the update path: a 1.1 C
-- edition (which had no such check) created beside the SQL edition
-- refuses to update to 1.2 with 55000, before any 1.2 object collides with
-- the other dlock's (the event trigger dlock_fence_ddl is per database).
-- The check is src/sql/00_guard.sql, one text for both editions, at the
-- top of the update script.
--
\set VERBOSITY default
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE SCHEMA other;
CREATE EXTENSION dlock_sql SCHEMA other;
SELECT other.dlock_edition();
-- 1.2 of either edition refuses beside it.
CREATE EXTENSION dlock;
-- 1.1 did not check; its update does.
CREATE EXTENSION dlock VERSION '1.1';
ALTER EXTENSION dlock UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
DROP EXTENSION dlock;
DROP EXTENSION dlock_sql;
DROP SCHEMA other;
-- Alone, the update runs through (its own extension is no other dlock).
CREATE EXTENSION dlock VERSION '1.1';
ALTER EXTENSION dlock UPDATE TO '1.2';
SELECT extversion, dlock_edition() FROM pg_extension WHERE extname = 'dlock';
