-- src/sql/00_guard.sql: at most one dlock per database (issue 26), and the
-- helpers the three install forms share.
-- Copyright (c) 2026, the dlock developers
--
-- Two copies of dlock in one database would keep two lease tables and two
-- token counters for one lock name: two holders at once, tokens that
-- repeat.  So the script refuses, before it creates anything, when the
-- database has a dlock already: the C edition (extension "dlock"), the
-- trusted extension "dlock_sql", or any copy installed by the psql script or
-- under another name (a dlock_edition() function in any schema).  The C
-- edition makes the same check (dlock--1.1--1.2.sql, "issue 26").
--
-- While CREATE EXTENSION dlock_sql runs this, its own pg_extension row
-- exists already and has no member yet: that row is not another copy.
-- The check only reads catalogs (never calls a function it finds: in the
-- trusted extension this runs as the bootstrap superuser, and a
-- dlock_edition() in some schema may be anybody's).
DO $dlock$
DECLARE
	ext pg_catalog.name;
	nsp pg_catalog.name;
BEGIN
	-- Installs serialise here (a transaction-level advisory lock that any
	-- role may take too: it can only hold back an install), so that two at
	-- once cannot both find nothing; then the catalogs are read afresh.
	PERFORM pg_catalog.pg_advisory_xact_lock(1684825963, 26);
	SELECT x.ext, x.nsp INTO ext, nsp
	  FROM (SELECT 0 AS kind, e.extname AS ext, n.nspname AS nsp
			  FROM pg_catalog.pg_extension e
			  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
			 WHERE e.extname OPERATOR(pg_catalog.=) ANY (ARRAY['dlock', 'dlock_sql']::pg_catalog.name[])
			   AND EXISTS (SELECT FROM pg_catalog.pg_depend d
							WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
							  AND d.refobjid OPERATOR(pg_catalog.=) e.oid
							  AND d.deptype OPERATOR(pg_catalog.=) 'e')
			UNION ALL
			SELECT 1, NULL, n.nspname
			  FROM pg_catalog.pg_proc p
			  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
			  LEFT JOIN pg_catalog.pg_depend d
					 ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
					AND d.objid OPERATOR(pg_catalog.=) p.oid
					AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
					AND d.deptype OPERATOR(pg_catalog.=) 'e'
			  LEFT JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
			 WHERE p.proname OPERATOR(pg_catalog.=) 'dlock_edition'
			   AND p.pronargs OPERATOR(pg_catalog.=) 0
			   AND (e.extname IS NULL
					OR e.extname OPERATOR(pg_catalog.<>) ALL (ARRAY['dlock', 'dlock_sql']::pg_catalog.name[]))) AS x
	 ORDER BY x.kind, x.nsp
	 LIMIT 1;
	IF nsp IS NOT NULL AND ext IS NOT NULL THEN
		RAISE EXCEPTION 'cannot install dlock: extension "%" is installed in schema "%"', ext, nsp
			USING ERRCODE = '55000',
				  DETAIL = 'A database holds at most one dlock, of either edition: two would keep two lease tables and two token counters for one lock name.',
				  HINT = 'Use the dlock that is installed, or move to the other edition by export and import (docs/editions.md).';
	ELSIF nsp IS NOT NULL THEN
		RAISE EXCEPTION 'cannot install dlock: a dlock is installed in schema "%"', nsp
			USING ERRCODE = '55000',
				  DETAIL = 'A database holds at most one dlock, of either edition: two would keep two lease tables and two token counters for one lock name.',
				  HINT = 'Use the dlock that is installed, or move to the other edition by export and import (docs/editions.md).';
	END IF;
END
$dlock$;

-- pg_extension_config_dump() works only inside CREATE EXTENSION; the psql
-- form has no extension, and pg_dump dumps its tables' rows anyway.  The
-- SQL edition's scripts mark their tables through this: a member of an
-- extension (the trusted extension or pg_tle) is marked, anything else is
-- left alone.
CREATE FUNCTION @extschema@.dlock_sql_config_dump(config pg_catalog.regclass, filter pg_catalog.text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $dlock$
BEGIN
	IF EXISTS (SELECT FROM pg_catalog.pg_depend d
				WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
				  AND d.objid OPERATOR(pg_catalog.=) config
				  AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
				  AND d.deptype OPERATOR(pg_catalog.=) 'e') THEN
		PERFORM pg_catalog.pg_extension_config_dump(config, filter);
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_config_dump(pg_catalog.regclass, pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_config_dump(pg_catalog.regclass, pg_catalog.text) IS
	'dlock internal: pg_extension_config_dump() when the SQL edition is an extension (trusted or pg_tle), nothing when the psql script installed it';

-- What the guards above (and the C edition's) look for, and what clients
-- find dlock by.  The C edition's returns 'c' (dlock--1.1--1.2.sql).
CREATE FUNCTION @extschema@.dlock_edition()
RETURNS pg_catalog.text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $dlock$SELECT 'sql'::pg_catalog.text$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_edition() IS
	'the edition of dlock installed in this database: c (the C extension) or sql (the SQL edition); clients find dlock through it';
