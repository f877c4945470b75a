-- test/lib/edition_catalog.sql: the API of the dlock installed in this
-- Copyright (c) 2026, the dlock developers
-- database, either edition, one line per fact, for comparing the two
-- editions (test/scripts/sql_edition_catalog.py).  It finds dlock through
-- dlock_edition() (the SQL edition's script makes no extension) and
-- describes every function of that schema (signature with argument names
-- and defaults, result, kind, volatility, parallel safety, strictness,
-- whether PUBLIC may execute it, comment) and every view (columns with
-- their types and comments, whether PUBLIC may read it, comment).  What
-- may differ by design (language, SECURITY DEFINER, settings, cost) is
-- left out; tables and sequences are each edition's own.  Run it with
-- psql -X -A -t -q.
SET search_path = pg_catalog;
SET IntervalStyle = 'postgres';

WITH s AS (
	SELECT p.pronamespace AS nsp
	  FROM pg_proc p
	 WHERE p.proname = 'dlock_edition' AND p.pronargs = 0
),
fn AS (
	SELECT p.* FROM pg_proc p, s WHERE p.pronamespace = s.nsp
),
rel AS (
	SELECT c.* FROM pg_class c, s WHERE c.relnamespace = s.nsp AND c.relkind IN ('v', 'm')
),
facts(line) AS (
	SELECT 'function|' || f.oid::regprocedure::text || '|' || x.k || '=' || coalesce(x.v, '<null>')
	  FROM fn f,
		   LATERAL (VALUES
			('arguments', pg_get_function_arguments(f.oid)),
			('result', pg_get_function_result(f.oid)),
			('kind', f.prokind::text),
			('volatility', f.provolatile::text),
			('parallel', f.proparallel::text),
			('strict', f.proisstrict::text),
			('returns_set', f.proretset::text),
			('public_execute', (f.proacl IS NULL OR EXISTS (SELECT FROM aclexplode(f.proacl) a
															  WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE'))::text),
			('comment', obj_description(f.oid, 'pg_proc'))
		   ) AS x(k, v)
	UNION ALL
	SELECT 'view|' || r.oid::regclass::text || '|' || x.k || '=' || coalesce(x.v, '<null>')
	  FROM rel r,
		   LATERAL (VALUES
			('kind', r.relkind::text),
			('public_select', (EXISTS (SELECT FROM aclexplode(r.relacl) a
										WHERE a.grantee = 0 AND a.privilege_type = 'SELECT'))::text),
			('comment', obj_description(r.oid, 'pg_class'))
		   ) AS x(k, v)
	UNION ALL
	SELECT 'column|' || r.oid::regclass::text || '.' || quote_ident(a.attname) || '|' || x.k || '=' || coalesce(x.v, '<null>')
	  FROM rel r
	  JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped,
		   LATERAL (VALUES
			('position', a.attnum::text),
			('type', format_type(a.atttypid, a.atttypmod)),
			('comment', col_description(r.oid, a.attnum))
		   ) AS x(k, v)
)
SELECT x.fact FROM (SELECT regexp_replace(f.line, E'\\s*\\n\\s*', ' ', 'g') AS fact FROM facts f) AS x ORDER BY x.fact COLLATE "C";
