-- Copyright (c) 2026, the dlock developers
--
-- At most one dlock per database (issue 26), on the update path: a 1.1 C
-- edition (whose script has no such check) beside another dlock refuses to
-- update to 1.2 with 55000, before any 1.2 object collides with the other
-- dlock's (the event trigger dlock_fence_ddl is per database).  The check
-- is src/sql/00_guard.sql, one text for both editions, at the top of the
-- update script, and the 1.2 library's (src/dlock.c), which also refuses
-- the 1.1 script itself beside the SQL edition.
--
\set VERBOSITY default
\set SHOW_CONTEXT never
DROP EXTENSION dlock;
CREATE SCHEMA other;
CREATE EXTENSION dlock_sql SCHEMA other;
SELECT other.dlock_edition();
-- 1.2 of either edition refuses beside it.
CREATE EXTENSION dlock;
-- 1.1's script checks nothing, but the 1.2 library that it loads refuses
-- it (src/dlock.c; test/scripts/sql_edition_guard.sh tries every version
-- beside every form of the SQL edition).
CREATE EXTENSION dlock VERSION '1.1';
SELECT count(*) FROM pg_extension WHERE extname = 'dlock';
DROP EXTENSION dlock_sql;
DROP SCHEMA other;
-- A 1.1 that another dlock joined later (one installed beside an older
-- library, or a copy made by hand): its update refuses.
CREATE EXTENSION dlock VERSION '1.1';
CREATE SCHEMA other;
CREATE FUNCTION other.dlock_edition() RETURNS text LANGUAGE sql AS $$SELECT 'sql'::text$$;
ALTER EXTENSION dlock UPDATE TO '1.2';
SELECT extversion FROM pg_extension WHERE extname = 'dlock';
DROP EXTENSION dlock;
DROP SCHEMA other CASCADE;
-- Alone, the update runs through (its own extension is no other dlock).
CREATE EXTENSION dlock VERSION '1.1';
ALTER EXTENSION dlock UPDATE TO '1.2';
SELECT extversion, dlock_edition() FROM pg_extension WHERE extname = 'dlock';
