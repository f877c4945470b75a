/* dlock--1.1--1.2.sql */
-- Copyright (c) 2026, the dlock developers

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlock UPDATE TO '1.2'" to load this file. \quit

-- 1.2 has no full install script of its own: CREATE EXTENSION dlock runs
-- dlock--1.1.sql and then this file, so every 1.2 object is written once.
-- The upgrade test (test/t/012_upgrade.pl) still compares two independent
-- paths: 1.0 -> 1.1 -> 1.2 against 1.1 -> 1.2.
--
-- Each change below names the issue and item it belongs to.

-- issue 24 item 10: carry the token floor over DROP and CREATE EXTENSION
-- (docs/tokens.md): dlock_rebase(at_least) also puts every later token
-- above at_least, raising the counter under the jump lock, never lowering it.
CREATE FUNCTION @extschema@.dlock_rebase(at_least pg_catalog.int8)
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlock_rebase'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION @extschema@.dlock_rebase(pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_rebase(pg_catalog.int8) IS
	'dlock_rebase(), and every later token is also above at_least: raises the token counter, never lowers it; returns the new floor; superusers and the extension owner only';
