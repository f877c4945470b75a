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

-- issue 24 item 3: lock keys keyed with a secret (src/locktag.c)
--
-- A name's lock key becomes SipHash-2-4 of the name with a 128-bit secret
-- drawn once, here, from pg_strong_random().  The table is readable only by
-- its owner (and superusers, and pg_read_all_data); the C code reads it
-- without the caller's privileges.  It is not a configuration table: a dump
-- leaves the row out and a restore draws a new secret, since keys only
-- matter for live locks.  The secret never changes while the extension
-- exists.
CREATE TABLE @extschema@.dlock_lock_key (
	scheme pg_catalog.int4 NOT NULL,
	secret pg_catalog.bytea NOT NULL,
	CONSTRAINT dlock_lock_key_secret_check CHECK (pg_catalog.length(secret) = 16)
);
REVOKE ALL ON TABLE @extschema@.dlock_lock_key FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_lock_key IS
	'the secret that lock names are keyed with (one row, never changed); readable only by its owner';
COMMENT ON COLUMN @extschema@.dlock_lock_key.scheme IS
	'how lock keys are computed: 1 = SipHash-2-4 of the name with the secret';
COMMENT ON COLUMN @extschema@.dlock_lock_key.secret IS
	'128-bit SipHash key, from pg_strong_random() when the extension was created or updated to 1.2';
CREATE FUNCTION @extschema@.dlock_new_lock_key() RETURNS pg_catalog.bytea
	LANGUAGE C VOLATILE PARALLEL UNSAFE
	AS 'MODULE_PATHNAME', 'dlock_new_lock_key';
INSERT INTO @extschema@.dlock_lock_key (scheme, secret)
	VALUES (1, @extschema@.dlock_new_lock_key());
DROP FUNCTION @extschema@.dlock_new_lock_key();
-- Every backend of a database keys names one way.  A backend still running
-- the 1.1 library validates these two column names whenever the table's
-- relcache entry is invalidated (this rename does it), and refuses every
-- call on a name it does not know; the 1.2 library takes the new name as
-- "keyed with dlock_lock_key".  The new name matches
-- dlock_epoch.system_identifier.
ALTER TABLE @extschema@.dlock_lease
	RENAME COLUMN role_sysid TO role_system_identifier;
