/* dlock--1.0--1.1.sql */
-- Copyright (c) 2026, the dlock developers

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlock UPDATE TO '1.1'" to load this file. \quit

-- Every change below has its twin in dlock--1.1.sql; the upgrade test proves
-- that both paths give the same objects.

-- 1.1: hardening (issue 13)
-- The holder role as an OID, with the system identifier of the cluster that
-- recorded it: a rename keeps the leases, a role created later under the
-- old name gets none, and a restore into another cluster falls back on the
-- name (docs/security.md).
ALTER TABLE @extschema@.dlock_lease
	ADD COLUMN role_oid pg_catalog.oid,
	ADD COLUMN role_sysid pg_catalog.int8;
COMMENT ON COLUMN @extschema@.dlock_lease.role IS
	'name of the holder role when the row was last written';
COMMENT ON COLUMN @extschema@.dlock_lease.role_oid IS
	'the holder role, valid in the cluster whose system identifier is role_sysid; 0 for a role that no longer existed';
COMMENT ON COLUMN @extschema@.dlock_lease.role_sysid IS
	'system identifier of the cluster that recorded role_oid; elsewhere the holder is found by name';
-- Existing holders: the role of that name now, or 0 if it no longer exists
-- (its leases are then left to superusers, as for a role dropped later).
UPDATE @extschema@.dlock_lease AS l
   SET role_oid = COALESCE(
		   (SELECT r.oid FROM pg_catalog.pg_roles AS r
			 WHERE r.rolname OPERATOR(pg_catalog.=) l.role),
		   0),
	   role_sysid = (SELECT c.system_identifier
					   FROM pg_catalog.pg_control_system() AS c);
CREATE FUNCTION @extschema@.dlock_resolve_holder(
	role pg_catalog.name,
	role_oid pg_catalog.oid,
	role_sysid pg_catalog.int8)
RETURNS pg_catalog.oid
AS 'MODULE_PATHNAME', 'dlock_resolve_holder'
LANGUAGE C STABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.dlock_resolve_holder(pg_catalog.name, pg_catalog.oid, pg_catalog.int8) IS
	'the holder role of a dlock_lease row (by OID in the cluster that recorded it, else by name), or NULL if it no longer exists';

-- Tokens only to the roles that may use them (the holder role and its
-- members); the role column shows the holder's current name.
CREATE OR REPLACE VIEW @extschema@.dlock_leases AS
	SELECT l.name,
		   l.owner,
		   CASE WHEN pg_catalog.pg_has_role(
						 @extschema@.dlock_resolve_holder(l.role, l.role_oid, l.role_sysid),
						 'USAGE')
				THEN l.token END AS token,
		   l.acquired_at,
		   l.expires_at,
		   (l.released_at IS NULL AND
			l.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()) AS held,
		   pg_catalog.pg_get_userbyid(
			   @extschema@.dlock_resolve_holder(l.role, l.role_oid, l.role_sysid)) AS role,
		   l.released_at
	  FROM @extschema@.dlock_lease AS l;
COMMENT ON COLUMN @extschema@.dlock_leases.token IS
	'fencing token of the last acquisition; NULL unless the current role is (a member of) the holder role';
COMMENT ON COLUMN @extschema@.dlock_leases.role IS
	'the holder role, by its current name; NULL if it no longer exists';

-- 1.1: fencing (issue 11)

-- dlock_assert declares the token its transaction writes with; the trigger
-- fences DELETE and TRUNCATE too, and needs a declared token for writes that
-- do not change the token column.
COMMENT ON FUNCTION @extschema@.dlock_assert(pg_catalog.text, pg_catalog.int8) IS
	'like dlock_check, but raise SQLSTATE LK001 (stale fencing token) instead of returning false; on success, declare token as this transaction''s token for name, which dlock_fence takes for writes that carry no new token';
COMMENT ON FUNCTION @extschema@.dlock_fence() IS
	'fencing trigger: BEFORE INSERT OR UPDATE OR DELETE FOR EACH ROW EXECUTE FUNCTION dlock_fence(lock, token_column [, ''column'']), and BEFORE TRUNCATE FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence(lock); a write that does not carry a new token needs the token declared by dlock_assert; stale writers get SQLSTATE LK001';

CREATE VIEW @extschema@.dlock_fenced_tables AS
	SELECT t.tgrelid::pg_catalog.regclass AS "table",
		   pg_catalog.bool_or((t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 7) OPERATOR(pg_catalog.=) 7) AS "insert",
		   pg_catalog.bool_or((t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 19) OPERATOR(pg_catalog.=) 19) AS "update",
		   pg_catalog.bool_or((t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 11) OPERATOR(pg_catalog.=) 11) AS "delete",
		   pg_catalog.bool_or((t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 35) OPERATOR(pg_catalog.=) 34) AS "truncate",
		   pg_catalog.array_agg(t.tgname ORDER BY t.tgname) AS triggers
	  FROM pg_catalog.pg_trigger AS t
	 WHERE t.tgfoid OPERATOR(pg_catalog.=) '@extschema@.dlock_fence()'::pg_catalog.regprocedure
	   AND t.tgenabled OPERATOR(pg_catalog.<>) 'D'
	 GROUP BY t.tgrelid;
COMMENT ON VIEW @extschema@.dlock_fenced_tables IS
	'every table with an enabled dlock_fence trigger, and which writes its triggers fence';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."table" IS 'the fenced table (a partition has triggers of its own, cloned from its parent)';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."insert" IS 'a BEFORE INSERT row trigger fences INSERT, COPY FROM and the insert of an upsert or MERGE';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."update" IS 'a BEFORE UPDATE row trigger fences UPDATE, ON CONFLICT DO UPDATE and MERGE ... THEN UPDATE';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."delete" IS 'a BEFORE DELETE row trigger fences DELETE and MERGE ... THEN DELETE; false for triggers created the 1.0 way';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."truncate" IS 'a BEFORE TRUNCATE statement trigger fences TRUNCATE';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables.triggers IS 'the enabled dlock_fence triggers on the table';
GRANT SELECT ON @extschema@.dlock_fenced_tables TO PUBLIC;

-- Tables fenced the 1.0 way (BEFORE INSERT OR UPDATE) do not fence DELETE.
DO $dlock$
DECLARE
	tables pg_catalog.text;
BEGIN
	SELECT pg_catalog.string_agg(f."table"::pg_catalog.text, ', ' ORDER BY f."table"::pg_catalog.text)
	  INTO tables
	  FROM @extschema@.dlock_fenced_tables AS f
	 WHERE NOT f."delete";
	IF tables IS NOT NULL THEN
		-- Extension scripts run with client_min_messages raised to WARNING;
		-- this NOTICE is for the one who runs the update.  (The setting goes
		-- back when the script ends.)
		PERFORM pg_catalog.set_config('client_min_messages', 'notice', true);
		RAISE NOTICE 'dlock_fence does not fence DELETE on these tables: %', tables
			USING DETAIL = 'Their dlock_fence triggers were created BEFORE INSERT OR UPDATE, the 1.0 way.',
				  HINT = 'Re-create each trigger BEFORE INSERT OR UPDATE OR DELETE, and add a BEFORE TRUNCATE trigger; the view dlock_fenced_tables shows what each table fences.';
	END IF;
END
$dlock$;

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

-- The time left on a lease, for its holder: it only reads, like dlock_check
-- without the transaction-long protection.
CREATE FUNCTION @extschema@.dlock_remaining(
	name pg_catalog.text,
	token pg_catalog.int8)
RETURNS pg_catalog.interval
AS 'MODULE_PATHNAME', 'dlock_remaining'
LANGUAGE C VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlock_remaining(pg_catalog.text, pg_catalog.int8) IS
	'the time left on the lease on name if token holds it unexpired, NULL otherwise (released, expired, taken over, never acquired); takes no lock that outlives the call';

-- 1.1: package (issue 15)

-- pg_dump run by the database owner (not a superuser) reads every table and
-- sequence that dlock marks for dumping: give SELECT on each of them to
-- pg_database_owner, the role that is always the current owner of the
-- database, so the grant follows ALTER DATABASE ... OWNER TO.  Nobody else
-- gets it: the lease table holds tokens.  The list comes from extconfig, so
-- this stays the last section of the script and covers every config table
-- the sections above add.  An update script of a later version that adds a
-- config table must grant it the same way.
DO $$
DECLARE
	cfg record;
BEGIN
	FOR cfg IN
		SELECT n.nspname, c.relname, c.relkind
		  FROM pg_catalog.pg_extension AS e,
			   pg_catalog.unnest(e.extconfig) AS x(reloid)
		  JOIN pg_catalog.pg_class AS c ON c.oid OPERATOR(pg_catalog.=) x.reloid
		  JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
		 WHERE e.extname OPERATOR(pg_catalog.=) 'dlock'
		 ORDER BY c.relname
	LOOP
		EXECUTE pg_catalog.format('GRANT SELECT ON %s %I.%I TO pg_database_owner',
								  CASE cfg.relkind WHEN 'S' THEN 'SEQUENCE' ELSE 'TABLE' END,
								  cfg.nspname, cfg.relname);
	END LOOP;
END
$$;
