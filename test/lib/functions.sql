-- test/lib/functions.sql: the functions of the installed dlock extension,
-- Copyright (c) 2026, the dlock developers
-- one Markdown table row each, as docs/reference.md's "Functions" table shows
-- them: signature (argument names, types and defaults), result, volatility,
-- parallel safety, security, and who may call it.  test/scripts/reference.py
-- compares the two; the comparison of the two editions (issue 26) can use
-- it too.  Run with psql -X -A -t -q in a database with dlock installed.
SET search_path = pg_catalog;
SET IntervalStyle = 'postgres';
SELECT format('| `%s(%s)` | %s | %s | %s | %s | %s |',
			  p.proname,
			  pg_get_function_arguments(p.oid),
			  pg_get_function_result(p.oid),
			  CASE p.provolatile WHEN 'v' THEN 'volatile' WHEN 's' THEN 'stable' ELSE 'immutable' END,
			  CASE p.proparallel WHEN 'u' THEN 'unsafe' WHEN 'r' THEN 'restricted' ELSE 'safe' END,
			  CASE WHEN p.prosecdef THEN 'definer' ELSE 'invoker' END,
			  CASE WHEN p.proacl IS NULL
					 OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) AS a
								 WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
				   THEN 'everyone'
				   ELSE 'superusers, the extension owner, roles granted EXECUTE' END)
  FROM pg_depend AS d
  JOIN pg_extension AS e ON e.oid = d.refobjid AND e.extname = 'dlock'
  JOIN pg_proc AS p ON p.oid = d.objid
 WHERE d.classid = 'pg_proc'::regclass AND d.refclassid = 'pg_extension'::regclass
   AND d.deptype = 'e'
 ORDER BY p.proname, pg_get_function_identity_arguments(p.oid);
