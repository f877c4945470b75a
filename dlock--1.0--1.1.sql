/* dlock--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlock UPDATE TO '1.1'" to load this file. \quit

-- Every change below has its twin in dlock--1.1.sql; the upgrade test proves
-- that both paths give the same objects.

-- 1.1: hardening (issue 13)

-- 1.1: fencing (issue 11)

-- 1.1: tokens (issue 12)

-- One row per jump of the token counter (src/token.c): the floor it jumped
-- to and the history it jumped in.  Tokens are accepted without reading it
-- while the history stays the same; a new history (cluster, timeline,
-- database, counter) jumps again, above every earlier token.
CREATE TABLE @extschema@.dlock_epoch (
	floor				pg_catalog.int8 NOT NULL,
	system_identifier	pg_catalog.int8 NOT NULL,
	timeline			pg_catalog.int8 NOT NULL,
	database_oid		pg_catalog.oid NOT NULL,
	counter_relfilenode	pg_catalog.oid NOT NULL,
	jumped_at			pg_catalog.timestamptz NOT NULL,
	reason				pg_catalog.text NOT NULL,
	CONSTRAINT dlock_epoch_pkey PRIMARY KEY (floor)
);
REVOKE ALL ON TABLE @extschema@.dlock_epoch FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_epoch IS
	'dlock token epochs, one row per jump of the token counter; written only by the dlock functions';
COMMENT ON COLUMN @extschema@.dlock_epoch.floor IS 'every token handed out after the jump is above this';
COMMENT ON COLUMN @extschema@.dlock_epoch.system_identifier IS 'system identifier of the cluster that jumped (pg_control_system())';
COMMENT ON COLUMN @extschema@.dlock_epoch.timeline IS 'timeline the cluster wrote WAL on when it jumped';
COMMENT ON COLUMN @extschema@.dlock_epoch.database_oid IS 'OID of the database that jumped';
COMMENT ON COLUMN @extschema@.dlock_epoch.counter_relfilenode IS 'relfilenode of dlock_token_seq when it jumped';
COMMENT ON COLUMN @extschema@.dlock_epoch.jumped_at IS 'when the jump happened (server clock)';
COMMENT ON COLUMN @extschema@.dlock_epoch.reason IS 'why: first, system, database, timeline, counter, floor, lease or rebase';
SELECT pg_catalog.pg_extension_config_dump('@extschema@.dlock_epoch', '');

CREATE FUNCTION @extschema@.dlock_rebase()
RETURNS pg_catalog.int8
AS 'MODULE_PATHNAME', 'dlock_rebase'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
REVOKE ALL ON FUNCTION @extschema@.dlock_rebase() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_rebase() IS
	'make every later token greater than the server clock in microseconds and every token recorded so far; returns the new floor; superusers and the extension owner only';

-- 1.1: waiting and events (issue 16)

-- 1.1: package (issue 15)
