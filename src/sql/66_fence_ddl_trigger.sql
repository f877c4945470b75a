-- Copyright (c) 2026, the dlock developers
--
-- 66_fence_ddl_trigger.sql: the SQL edition's event triggers: dlock_fence_ddl
-- (its function is in 65_fenced_tables.sql, which both editions share) and
-- dlock_sql_guard (below).
--
-- CREATE EVENT TRIGGER needs a superuser: the script run by a superuser
-- creates it; run by an ordinary admin role (the psql form, pg_tle, or the
-- trusted extension, whose dlock_sql.control says superuser = false, so that
-- its script runs as the role that creates it) it goes without, and DDL
-- that leaves a dlock_fence trigger that does not fence gets no WARNING (the
-- view, and the trigger's own refusals when it fires, remain):
-- docs/editions.md.
DO $dlock$
BEGIN
	CREATE EVENT TRIGGER dlock_fence_ddl ON ddl_command_end
		WHEN TAG IN ('CREATE TRIGGER', 'ALTER TABLE', 'CREATE TABLE')
		EXECUTE FUNCTION @extschema@.dlock_fence_ddl();
	COMMENT ON EVENT TRIGGER dlock_fence_ddl IS
		'dlock: warns when DDL leaves a dlock_fence trigger that does not fence its table (see the view dlock_fenced_tables)';
EXCEPTION WHEN insufficient_privilege THEN
	RAISE NOTICE 'event trigger dlock_fence_ddl was not created: only a superuser can create event triggers'
		USING DETAIL = 'DDL that leaves a dlock_fence trigger that does not fence gets no WARNING; the view dlock_fenced_tables still lists it.';
END
$dlock$;

-- At most one dlock per database, also against the C edition's 1.0 and
-- 1.1 scripts, which are frozen and check nothing (00_guard.sql checks at
-- the top of the 1.2 scripts of both editions): CREATE EXTENSION dlock
-- VERSION '1.0' or '1.1' would make a second lease store beside this one.
-- The 1.2 C library refuses it when the script loads it (src/dlock.c);
-- this event trigger refuses it also where the library is older, at the
-- end of the CREATE EXTENSION, which then rolls back.  Like
-- dlock_fence_ddl it exists only where a superuser installed the edition
-- (docs/editions.md).  It only reads the catalogs.
CREATE FUNCTION @extschema@.dlock_sql_guard_ddl()
RETURNS event_trigger
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	ext pg_catalog.name;
	nsp pg_catalog.name;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_event_trigger_ddl_commands() AS c
					 JOIN pg_catalog.pg_extension AS e ON e.oid OPERATOR(pg_catalog.=) c.objid
					WHERE c.command_tag OPERATOR(pg_catalog.=) 'CREATE EXTENSION'
					  AND c.object_type OPERATOR(pg_catalog.=) 'extension'
					  AND e.extname OPERATOR(pg_catalog.=) 'dlock') THEN
		RETURN;
	END IF;
	-- This dlock: its schema, and its extension if it is one.
	SELECT n.nspname, e.extname INTO nsp, ext
	  FROM pg_catalog.pg_proc AS p
	  JOIN pg_catalog.pg_namespace AS n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
	  LEFT JOIN pg_catalog.pg_depend AS d
			 ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
			AND d.objid OPERATOR(pg_catalog.=) p.oid
			AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
			AND d.deptype OPERATOR(pg_catalog.=) 'e'
	  LEFT JOIN pg_catalog.pg_extension AS e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
	 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.dlock_edition()'::pg_catalog.regprocedure;
	IF ext IS NOT NULL THEN
		RAISE EXCEPTION 'cannot install dlock: extension "%" is installed in schema "%"', ext, nsp
			USING ERRCODE = '55000',
				  DETAIL = 'A database holds at most one dlock, of either edition: two would keep two lease tables and two token counters for one lock name.',
				  HINT = 'Use the dlock that is installed, or move to the other edition by export and import (docs/editions.md).';
	END IF;
	RAISE EXCEPTION 'cannot install dlock: a dlock is installed in schema "%"', nsp
		USING ERRCODE = '55000',
			  DETAIL = 'A database holds at most one dlock, of either edition: two would keep two lease tables and two token counters for one lock name.',
			  HINT = 'Use the dlock that is installed, or move to the other edition by export and import (docs/editions.md).';
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_guard_ddl() IS
	'event trigger: refuses CREATE EXTENSION dlock (55000) in a database that has this SQL edition of dlock, also for the C edition''s 1.0 and 1.1 scripts, which check nothing';
DO $dlock$
BEGIN
	CREATE EVENT TRIGGER dlock_sql_guard ON ddl_command_end
		WHEN TAG IN ('CREATE EXTENSION')
		EXECUTE FUNCTION @extschema@.dlock_sql_guard_ddl();
	COMMENT ON EVENT TRIGGER dlock_sql_guard IS
		'dlock: at most one dlock per database: refuses CREATE EXTENSION dlock beside the SQL edition';
EXCEPTION WHEN insufficient_privilege THEN
	RAISE NOTICE 'event trigger dlock_sql_guard was not created: only a superuser can create event triggers'
		USING DETAIL = 'CREATE EXTENSION dlock of a C edition older than 1.2 is not refused in this database; the 1.2 C library refuses it.';
END
$dlock$;
