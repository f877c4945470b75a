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

-- issue 24 items 7 and 11: dlock_fenced_tables tells which triggers fence;
-- an event trigger warns about DDL that leaves a fence that does not fire;
-- token columns that cannot hold every bigint are named.

-- A dlock_fence trigger fences its table only if it fires for every write
-- of an ordinary session: enabled in origin mode or ALWAYS, BEFORE ... FOR
-- EACH ROW (or BEFORE TRUNCATE FOR EACH STATEMENT), with no column list and
-- no WHEN condition.  Every other one is listed with the reason, and so is
-- every inheritance descendant of a table with a dlock_fence trigger that
-- has no fencing one of its own (row triggers fire only on the table that
-- holds the row).  CREATE OR REPLACE VIEW keeps the columns of 1.1 and adds
-- not_fencing at the end.
CREATE OR REPLACE VIEW @extschema@.dlock_fenced_tables AS
	WITH RECURSIVE trig AS (
		SELECT t.tgrelid, t.tgname, t.tgtype::pg_catalog.int4 AS tgtype,
			   CASE
				 WHEN t.tgenabled OPERATOR(pg_catalog.=) 'D'
				   THEN 'disabled'
				 WHEN t.tgenabled OPERATOR(pg_catalog.=) 'R'
				   THEN 'replica only (ENABLE REPLICA TRIGGER)'
				 WHEN (t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 67) OPERATOR(pg_catalog.<>) 3
				  AND (t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 99) OPERATOR(pg_catalog.<>) 34
				   THEN 'not BEFORE FOR EACH ROW, nor BEFORE TRUNCATE'
				 WHEN pg_catalog.cardinality(t.tgattr::pg_catalog.int2[]) OPERATOR(pg_catalog.>) 0
				   THEN 'column list (UPDATE OF)'
				 WHEN t.tgqual IS NOT NULL
				   THEN 'WHEN condition'
			   END AS reason
		  FROM pg_catalog.pg_trigger AS t
		 WHERE t.tgfoid OPERATOR(pg_catalog.=) '@extschema@.dlock_fence()'::pg_catalog.regprocedure
	), descendant AS (
		SELECT i.inhrelid AS relid, i.inhparent AS ancestor
		  FROM pg_catalog.pg_inherits AS i
		 WHERE i.inhparent IN (SELECT trig.tgrelid FROM trig)
		UNION
		SELECT i.inhrelid, d.ancestor
		  FROM pg_catalog.pg_inherits AS i
		  JOIN descendant AS d ON i.inhparent OPERATOR(pg_catalog.=) d.relid
	), unfenced_child AS (
		SELECT d.relid,
			   'inheritance child of ' OPERATOR(pg_catalog.||)
			   pg_catalog.min(d.ancestor::pg_catalog.regclass::pg_catalog.text) OPERATOR(pg_catalog.||)
			   ', without a fencing trigger of its own' AS reason
		  FROM descendant AS d
		 WHERE d.relid NOT IN (SELECT trig.tgrelid FROM trig WHERE trig.reason IS NULL)
		 GROUP BY d.relid
	), rel AS (
		SELECT trig.tgrelid AS relid FROM trig
		UNION
		SELECT unfenced_child.relid FROM unfenced_child
	)
	SELECT r.relid::pg_catalog.regclass AS "table",
		   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 7) OPERATOR(pg_catalog.=) 7) FILTER (WHERE t.reason IS NULL), false) AS "insert",
		   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 19) OPERATOR(pg_catalog.=) 19) FILTER (WHERE t.reason IS NULL), false) AS "update",
		   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 11) OPERATOR(pg_catalog.=) 11) FILTER (WHERE t.reason IS NULL), false) AS "delete",
		   COALESCE(pg_catalog.bool_or((t.tgtype OPERATOR(pg_catalog.&) 35) OPERATOR(pg_catalog.=) 34) FILTER (WHERE t.reason IS NULL), false) AS "truncate",
		   COALESCE(pg_catalog.array_agg(t.tgname ORDER BY t.tgname) FILTER (WHERE t.tgname IS NOT NULL AND t.reason IS NULL), '{}'::pg_catalog.name[]) AS triggers,
		   pg_catalog.array_cat(
			   COALESCE(pg_catalog.array_agg((t.tgname::pg_catalog.text OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) t.reason) ORDER BY t.tgname) FILTER (WHERE t.reason IS NOT NULL), '{}'::pg_catalog.text[]),
			   (SELECT pg_catalog.array_agg(u.reason) FROM unfenced_child AS u WHERE u.relid OPERATOR(pg_catalog.=) r.relid)) AS not_fencing
	  FROM rel AS r
	  LEFT JOIN trig AS t ON t.tgrelid OPERATOR(pg_catalog.=) r.relid
	 GROUP BY r.relid;
COMMENT ON VIEW @extschema@.dlock_fenced_tables IS
	'every table with a dlock_fence trigger or an inheritance ancestor that has one, which writes its fencing triggers fence, and why any other does not fence';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."table" IS 'the table (a partition has triggers of its own, cloned from its parent; an inheritance child needs its own)';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."insert" IS 'a fencing BEFORE INSERT row trigger fences INSERT, COPY FROM and the insert of an upsert or MERGE';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."update" IS 'a fencing BEFORE UPDATE row trigger fences UPDATE, ON CONFLICT DO UPDATE and MERGE ... THEN UPDATE';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."delete" IS 'a fencing BEFORE DELETE row trigger fences DELETE and MERGE ... THEN DELETE; false for triggers created the 1.0 way';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables."truncate" IS 'a fencing BEFORE TRUNCATE statement trigger fences TRUNCATE';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables.triggers IS 'the fencing dlock_fence triggers of the table: enabled in origin mode or ALWAYS, with no column list and no WHEN condition';
COMMENT ON COLUMN @extschema@.dlock_fenced_tables.not_fencing IS 'each dlock_fence trigger of the table that fences nothing, as "trigger: reason" (disabled, replica only, not BEFORE, column list, WHEN condition), and, for an inheritance child with no fencing trigger of its own, that reason; empty if none';

-- The event trigger: a WARNING for DDL that makes a dlock_fence trigger
-- that does not fence (src/fence_ddl.c).  It only reads the catalogs.
CREATE FUNCTION @extschema@.dlock_fence_ddl()
RETURNS event_trigger
AS 'MODULE_PATHNAME', 'dlock_fence_ddl'
LANGUAGE C VOLATILE PARALLEL UNSAFE;
COMMENT ON FUNCTION @extschema@.dlock_fence_ddl() IS
	'event trigger: a WARNING when CREATE TRIGGER, ALTER TABLE ... ENABLE [REPLICA | ALWAYS] TRIGGER, CREATE TABLE ... INHERITS or ALTER TABLE ... INHERIT leaves a dlock_fence trigger that does not fence its table';
CREATE EVENT TRIGGER dlock_fence_ddl ON ddl_command_end
	WHEN TAG IN ('CREATE TRIGGER', 'ALTER TABLE', 'CREATE TABLE')
	EXECUTE FUNCTION @extschema@.dlock_fence_ddl();
COMMENT ON EVENT TRIGGER dlock_fence_ddl IS
	'dlock: warns when DDL leaves a dlock_fence trigger that does not fence its table (see the view dlock_fenced_tables)';

-- Fenced tables whose token column cannot hold every bigint: from 1.2 on
-- dlock_fence refuses them when it first fires, with SQLSTATE 42804 (the
-- first 1.1 token is about 1.8e15).  bigint and domains over bigint pass.
DO $dlock$
DECLARE
	tables pg_catalog.text;
BEGIN
	-- tgargs holds each argument followed by a zero byte: the token
	-- column is the second.
	WITH RECURSIVE arg AS (
		SELECT t.tgrelid,
			   pg_catalog.substr(t.tgargs,
								 pg_catalog.position(t.tgargs, pg_catalog.decode('00', 'hex')) OPERATOR(pg_catalog.+) 1) AS rest
		  FROM pg_catalog.pg_trigger AS t
		 WHERE t.tgfoid OPERATOR(pg_catalog.=) '@extschema@.dlock_fence()'::pg_catalog.regprocedure
		   AND t.tgnargs OPERATOR(pg_catalog.>=) 2
		   AND (t.tgtype::pg_catalog.int4 OPERATOR(pg_catalog.&) 1) OPERATOR(pg_catalog.=) 1
	), col AS (
		SELECT a.attrelid, a.attname, a.atttypid
		  FROM arg
		  JOIN pg_catalog.pg_attribute AS a
			ON a.attrelid OPERATOR(pg_catalog.=) arg.tgrelid
		   AND a.attnum OPERATOR(pg_catalog.>) 0
		   AND NOT a.attisdropped
		   AND a.attname::pg_catalog.text OPERATOR(pg_catalog.=) pg_catalog.convert_from(
				   pg_catalog.substr(arg.rest, 1,
									 pg_catalog.position(arg.rest, pg_catalog.decode('00', 'hex')) OPERATOR(pg_catalog.-) 1),
				   pg_catalog.current_setting('server_encoding')::pg_catalog.name)
	), base AS (
		SELECT col.attrelid, col.attname, col.atttypid, col.atttypid AS typid FROM col
		UNION
		SELECT b.attrelid, b.attname, b.atttypid, ty.typbasetype
		  FROM base AS b
		  JOIN pg_catalog.pg_type AS ty ON ty.oid OPERATOR(pg_catalog.=) b.typid
		 WHERE ty.typtype OPERATOR(pg_catalog.=) 'd'
	), refused AS (
		SELECT DISTINCT b.attrelid::pg_catalog.regclass::pg_catalog.text OPERATOR(pg_catalog.||) '.'
			   OPERATOR(pg_catalog.||) pg_catalog.quote_ident(b.attname::pg_catalog.text)
			   OPERATOR(pg_catalog.||) ' (' OPERATOR(pg_catalog.||) pg_catalog.format_type(b.atttypid, NULL)
			   OPERATOR(pg_catalog.||) ')' AS what
		  FROM base AS b
		  JOIN pg_catalog.pg_type AS ty ON ty.oid OPERATOR(pg_catalog.=) b.typid
		 WHERE ty.typtype OPERATOR(pg_catalog.<>) 'd'
		   AND b.typid OPERATOR(pg_catalog.<>) 'pg_catalog.int8'::pg_catalog.regtype
	)
	SELECT pg_catalog.string_agg(refused.what, ', ' ORDER BY refused.what)
	  INTO tables
	  FROM refused;
	IF tables IS NOT NULL THEN
		-- Extension scripts run with client_min_messages raised to WARNING;
		-- this NOTICE is for the one who runs the update.
		PERFORM pg_catalog.set_config('client_min_messages', 'notice', true);
		RAISE NOTICE 'dlock_fence refuses these token columns, whose type cannot hold every token: %', tables
			USING DETAIL = 'Tokens are bigint values above 2^31 (about 1.8e15 and up since 1.1); the first write through the fence fails with SQLSTATE 42804.',
				  HINT = 'Change each column with ALTER TABLE ... ALTER COLUMN ... TYPE bigint (a domain over bigint is accepted too).';
	END IF;
END
$dlock$;
