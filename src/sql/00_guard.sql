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
	found text;
BEGIN
	SELECT pg_catalog.string_agg(x.what, '; ' ORDER BY x.what) INTO found
	  FROM (SELECT pg_catalog.format('extension "%s" %s (%s) is installed in schema "%s"',
									 e.extname, e.extversion,
									 CASE e.extname WHEN 'dlock' THEN 'the C edition'
										  ELSE 'the SQL edition' END,
									 n.nspname) AS what
			  FROM pg_catalog.pg_extension e
			  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
			 WHERE e.extname OPERATOR(pg_catalog.=) ANY (ARRAY['dlock', 'dlock_sql']::pg_catalog.name[])
			   AND EXISTS (SELECT FROM pg_catalog.pg_depend d
							WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
							  AND d.refobjid OPERATOR(pg_catalog.=) e.oid
							  AND d.deptype OPERATOR(pg_catalog.=) 'e')
			UNION ALL
			SELECT pg_catalog.format('a dlock is installed in schema "%s" (function %I.dlock_edition()%s)',
									 n.nspname, n.nspname,
									 CASE WHEN e.extname IS NOT NULL
										  THEN pg_catalog.format(', of extension "%s"', e.extname) ELSE '' END)
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
					OR e.extname OPERATOR(pg_catalog.<>) ALL (ARRAY['dlock', 'dlock_sql']::pg_catalog.name[]))) AS x;
	IF found IS NOT NULL THEN
		RAISE EXCEPTION 'cannot install dlock: %', found
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
