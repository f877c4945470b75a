-- Copyright (c) 2026, the dlock developers
--
-- Installation: DROP and re-CREATE, a chosen schema, and independence from
-- the caller's search_path.
--
-- DROP EXTENSION removes every object it made.
DROP EXTENSION dlock;
SELECT count(*) AS leftover_relations FROM pg_class WHERE relname LIKE 'dlock%';
SELECT count(*) AS leftover_functions FROM pg_proc WHERE proname LIKE 'dlock%';

-- Re-created in the same session, it works at once, with a fresh table.
CREATE EXTENSION dlock;
SELECT count(*) AS leases FROM dlock_leases;
SELECT dlock_acquire('again', '1 min') IS NOT NULL AS works_after_recreate;
DROP EXTENSION dlock;

-- Installed into a chosen schema; not relocatable.
CREATE SCHEMA locks;
CREATE EXTENSION dlock SCHEMA locks;
SELECT n.nspname, c.relname, c.relkind
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relname LIKE 'dlock%' ORDER BY c.relname;
SELECT count(*) AS functions_in_locks FROM pg_proc
 WHERE proname LIKE 'dlock%' AND pronamespace = 'locks'::regnamespace;
ALTER EXTENSION dlock SET SCHEMA public;

-- Called from a search_path that does not include the schema.
SET search_path = public;
SELECT locks.dlock_acquire('job', '1 min') AS t1 \gset
SELECT locks.dlock_acquire('job', '1 min') IS NULL AS busy;
SELECT locks.dlock_check('job', :t1) AS checked;

-- A decoy table of the same name in the caller's path is never used.
CREATE TABLE public.dlock_lease (name text, token bigint);
INSERT INTO public.dlock_lease VALUES ('job', 0);
SELECT locks.dlock_release('job', :t1) AS released_in_the_real_table;
SELECT count(*) AS decoy_untouched FROM public.dlock_lease WHERE token = 0;
DROP TABLE public.dlock_lease;

-- Functions named now() and clock_timestamp() planted first in the caller's
-- search_path change nothing: not the decisions, not the view.
CREATE SCHEMA evil;
CREATE FUNCTION evil.now() RETURNS timestamptz
  LANGUAGE sql AS $$ SELECT '2000-01-01'::timestamptz $$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz
  LANGUAGE sql AS $$ SELECT '2000-01-01'::timestamptz $$;
CREATE FUNCTION evil.dlock_acquire(text, interval, interval, text) RETURNS bigint
  LANGUAGE sql AS $$ SELECT -1::bigint $$;
SET search_path = evil, pg_catalog, locks;
SELECT clock_timestamp() = '2000-01-01' AS planted_clock_is_visible;
SELECT locks.dlock_acquire('short', '200 ms') AS s1 \gset
SELECT held FROM locks.dlock_leases WHERE name = 'short';
SELECT pg_sleep(0.4);
SELECT held FROM locks.dlock_leases WHERE name = 'short';
SELECT locks.dlock_check('short', :s1) AS expired_by_the_real_clock;
SELECT locks.dlock_acquire('short', '1 min') > :s1 AS taken_over;
RESET search_path;
DROP SCHEMA evil CASCADE;

DROP EXTENSION dlock;
DROP SCHEMA locks;
-- Leave the extension installed in public for the tests that follow.
CREATE EXTENSION dlock;
