-- Copyright (c) 2026, the dlock developers
--
-- src/sql/00_guard.sql: at most one dlock per database (issue 26), one text
-- for both editions: the SQL edition's script begins with this file, and
-- make splices it into the C edition's scripts (dlock--1.1--1.2.sql, at
-- its "-- @include" line, and the head of the generated dlock--1.2.sql, so
-- that a fresh install refuses before any object collides).
--
-- Two copies of dlock in one database would keep two lease tables and two
-- token counters for one lock name: two holders at once, tokens that
-- repeat.  So the script refuses, before it creates anything of its own
-- version, when the database has a dlock already: the C edition (extension
-- "dlock"), the trusted extension "dlock_sql", or any copy installed by the
-- psql script or under another name (a dlock_edition() function in any
-- schema).
--
-- The extension whose script runs this is not another copy: while CREATE
-- EXTENSION runs, its pg_extension row exists already and has no member
-- yet; while ALTER EXTENSION ... UPDATE runs, the row has members, lives in
-- this schema and was written by this transaction (the update sets
-- extversion before it runs the script: extension.c,
-- ApplyExtensionUpdates).  Another dlock that this very transaction made or
-- updated in this schema would be taken for it; this script's first object
-- of a name that both editions have (dlock_lease) then collides with it.
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
			   AND NOT (e.extnamespace OPERATOR(pg_catalog.=) '@extschema@'::pg_catalog.regnamespace
						AND e.xmin OPERATOR(pg_catalog.=) ANY (SELECT l.transactionid FROM pg_catalog.pg_locks AS l
															   WHERE l.locktype OPERATOR(pg_catalog.=) 'transactionid' AND l.granted
																 AND l.mode OPERATOR(pg_catalog.=) 'ExclusiveLock'
																 AND l.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()))
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
