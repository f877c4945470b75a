-- test/catalog.sql: a description of the installed dlock extension, one line
-- Copyright (c) 2026, the dlock developers
-- per fact, sorted, for comparing two databases (an updated one with a fresh
-- install, a restored one with its source).  Run it with psql -X -A -t -q.
--
-- It finds the objects through the catalogs, never through a list, so an
-- object any issue adds to one install script and forgets in the other shows
-- up as a difference.  It describes:
--   the extension row (version, schema, relocatable, config tables);
--   every member (pg_describe_object);
--   functions: arguments with defaults, result, kind, language, C symbol,
--     volatility, parallel, strictness, security, leakproof, cost, rows,
--     settings, ACL, comment;
--   relations (members, their indexes, composite types of member types):
--     kind, persistence, reloptions, row security, replica identity, ACL,
--     comment, columns (type, collation, not null, default, identity,
--     generated, ACL, comment), indexes, constraints, triggers, policies,
--     rules, view definitions, sequence parameters;
--   types, event triggers, and the initial privileges (pg_init_privs).
-- Only columns that PostgreSQL 14 to 18 all have are used.  OIDs never
-- appear: objects are named by regclass/regprocedure text with search_path
-- set to pg_catalog, so every name outside it is schema-qualified.
SET search_path = pg_catalog;
SET IntervalStyle = 'postgres';
SET DateStyle = 'ISO, YMD';
SET extra_float_digits = 0;

WITH ext AS (
	SELECT e.oid, e.extname, e.extversion, e.extrelocatable, e.extnamespace,
		   e.extconfig, e.extcondition
	  FROM pg_extension e
	 WHERE e.extname = 'dlock'
),
member AS (
	SELECT d.classid, d.objid, d.objsubid
	  FROM pg_depend d, ext
	 WHERE d.refclassid = 'pg_extension'::regclass
	   AND d.refobjid = ext.oid
	   AND d.deptype = 'e'
),
fn AS (
	SELECT p.*
	  FROM pg_proc p
	 WHERE p.oid IN (SELECT objid FROM member WHERE classid = 'pg_proc'::regclass)
),
rel AS (
	-- member relations, their indexes, and relations behind member types
	SELECT c.*
	  FROM pg_class c
	 WHERE c.oid IN (SELECT objid FROM member WHERE classid = 'pg_class'::regclass)
		OR c.oid IN (SELECT i.indexrelid FROM pg_index i
					  WHERE i.indrelid IN (SELECT objid FROM member
											WHERE classid = 'pg_class'::regclass))
		OR c.reltype IN (SELECT objid FROM member WHERE classid = 'pg_type'::regclass)
),
facts(line) AS (
	-- the extension itself
	SELECT 'extension|version=' || extversion FROM ext
	UNION ALL
	SELECT 'extension|schema=' || extnamespace::regnamespace::text FROM ext
	UNION ALL
	SELECT 'extension|relocatable=' || extrelocatable FROM ext
	UNION ALL
	SELECT 'extension|comment=' || coalesce(obj_description(ext.oid, 'pg_extension'), '<none>') FROM ext
	UNION ALL
	SELECT 'extension|config=' || c.cfg::regclass::text || ' where ' || quote_literal(c.cond)
	  FROM ext, unnest(ext.extconfig, ext.extcondition) AS c(cfg, cond)
	UNION ALL
	-- membership
	SELECT 'member|' || pg_describe_object(classid, objid, objsubid) FROM member
	UNION ALL
	-- functions
	SELECT 'function|' || f.oid::regprocedure::text || '|' || x.k || '=' || coalesce(x.v, '<null>')
	  FROM fn f,
		   LATERAL (VALUES
			('arguments', pg_get_function_arguments(f.oid)),
			('result', pg_get_function_result(f.oid)),
			('kind', f.prokind::text),
			('language', (SELECT l.lanname::text FROM pg_language l WHERE l.oid = f.prolang)),
			('source', CASE WHEN f.probin IS NULL THEN f.prosrc END),
			('symbol', CASE WHEN f.probin IS NOT NULL THEN f.probin || ':' || f.prosrc END),
			('volatility', f.provolatile::text),
			('parallel', f.proparallel::text),
			('strict', f.proisstrict::text),
			('security_definer', f.prosecdef::text),
			('leakproof', f.proleakproof::text),
			('returns_set', f.proretset::text),
			('cost', f.procost::text),
			('rows', f.prorows::text),
			('support', f.prosupport::regproc::text),
			('config', f.proconfig::text),
			('acl', f.proacl::text),
			('comment', obj_description(f.oid, 'pg_proc'))
		   ) AS x(k, v)
	 WHERE x.v IS NOT NULL OR x.k NOT IN ('source', 'symbol', 'support')
	UNION ALL
	-- relations
	SELECT 'relation|' || r.oid::regclass::text || '|' || x.k || '=' || coalesce(x.v, '<null>')
	  FROM rel r,
		   LATERAL (VALUES
			('kind', r.relkind::text),
			('persistence', r.relpersistence::text),
			('options', r.reloptions::text),
			('row_security', r.relrowsecurity::text || '/' || r.relforcerowsecurity::text),
			('replica_identity', r.relreplident::text),
			('acl', r.relacl::text),
			('comment', obj_description(r.oid, 'pg_class')),
			('view', CASE WHEN r.relkind IN ('v', 'm') THEN pg_get_viewdef(r.oid, true) END),
			('index', CASE WHEN r.relkind IN ('i', 'I') THEN pg_get_indexdef(r.oid) END),
			('partitioned', CASE WHEN r.relkind = 'p' THEN pg_get_partkeydef(r.oid) END)
		   ) AS x(k, v)
	 WHERE x.v IS NOT NULL OR x.k NOT IN ('view', 'index', 'partitioned')
	UNION ALL
	SELECT 'column|' || r.oid::regclass::text || '.' || quote_ident(a.attname) || '|' ||
		   x.k || '=' || coalesce(x.v, '<null>')
	  FROM rel r
	  JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
	  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum,
		   LATERAL (VALUES
			('position', (SELECT count(*) FROM pg_attribute b
						   WHERE b.attrelid = r.oid AND b.attnum > 0
							 AND NOT b.attisdropped AND b.attnum <= a.attnum)::text),
			('type', format_type(a.atttypid, a.atttypmod)),
			('collation', CASE WHEN a.attcollation <> 0
						  THEN (SELECT quote_ident(co.collname) FROM pg_collation co
								 WHERE co.oid = a.attcollation) END),
			('not_null', a.attnotnull::text),
			('default', pg_get_expr(ad.adbin, ad.adrelid)),
			('identity', nullif(a.attidentity::text, '')),
			('generated', nullif(a.attgenerated::text, '')),
			('acl', a.attacl::text),
			('comment', col_description(r.oid, a.attnum))
		   ) AS x(k, v)
	UNION ALL
	SELECT 'constraint|' || r.oid::regclass::text || '|' || quote_ident(co.conname) || '=' ||
		   pg_get_constraintdef(co.oid) ||
		   CASE WHEN co.condeferrable THEN ' deferrable' ELSE '' END ||
		   coalesce(' comment ' || quote_literal(obj_description(co.oid, 'pg_constraint')), '')
	  FROM rel r JOIN pg_constraint co ON co.conrelid = r.oid
	UNION ALL
	SELECT 'trigger|' || r.oid::regclass::text || '|' || quote_ident(t.tgname) || '=' ||
		   pg_get_triggerdef(t.oid) || ' enabled ' || t.tgenabled::text
	  FROM rel r JOIN pg_trigger t ON t.tgrelid = r.oid
	 WHERE NOT t.tgisinternal
	UNION ALL
	SELECT 'policy|' || r.oid::regclass::text || '|' || quote_ident(p.polname) || '=' ||
		   p.polcmd::text || ' permissive ' || p.polpermissive::text ||
		   ' roles ' || (SELECT string_agg(CASE WHEN ro = 0 THEN 'public' ELSE ro::regrole::text END,
										   ',' ORDER BY ro::regrole::text)
						   FROM unnest(p.polroles) AS ro) ||
		   ' using ' || coalesce(pg_get_expr(p.polqual, p.polrelid), '<none>') ||
		   ' check ' || coalesce(pg_get_expr(p.polwithcheck, p.polrelid), '<none>')
	  FROM rel r JOIN pg_policy p ON p.polrelid = r.oid
	UNION ALL
	SELECT 'rule|' || r.oid::regclass::text || '|' || quote_ident(ru.rulename) || '=' ||
		   pg_get_ruledef(ru.oid, true)
	  FROM rel r JOIN pg_rewrite ru ON ru.ev_class = r.oid
	 WHERE ru.rulename <> '_RETURN'
	UNION ALL
	SELECT 'sequence|' || s.seqrelid::regclass::text || '=' ||
		   format_type(s.seqtypid, NULL) || ' start ' || s.seqstart || ' increment ' ||
		   s.seqincrement || ' min ' || s.seqmin || ' max ' || s.seqmax ||
		   ' cache ' || s.seqcache || ' cycle ' || s.seqcycle
	  FROM pg_sequence s
	 WHERE s.seqrelid IN (SELECT oid FROM rel)
	UNION ALL
	-- types that are members in their own right (enums, domains, composites)
	SELECT 'type|' || format_type(t.oid, NULL) || '=' || t.typtype::text ||
		   coalesce(' enum ' || (SELECT string_agg(quote_literal(e.enumlabel), ',' ORDER BY e.enumsortorder)
								   FROM pg_enum e WHERE e.enumtypid = t.oid), '') ||
		   CASE WHEN t.typtype = 'd'
				THEN ' over ' || format_type(t.typbasetype, t.typtypmod) ||
					 ' not null ' || t.typnotnull::text ||
					 coalesce(' default ' || t.typdefault, '')
				ELSE '' END ||
		   ' acl ' || coalesce(t.typacl::text, '<null>') ||
		   ' comment ' || coalesce(obj_description(t.oid, 'pg_type'), '<null>')
	  FROM pg_type t
	 WHERE t.oid IN (SELECT objid FROM member WHERE classid = 'pg_type'::regclass)
	UNION ALL
	SELECT 'event_trigger|' || quote_ident(et.evtname) || '=' || et.evtevent || ' ' ||
		   et.evtfoid::regprocedure::text || ' enabled ' || et.evtenabled::text ||
		   ' tags ' || coalesce(et.evttags::text, '<all>')
	  FROM pg_event_trigger et
	 WHERE et.oid IN (SELECT objid FROM member WHERE classid = 'pg_event_trigger'::regclass)
	UNION ALL
	-- what pg_dump takes as the extension's own privileges
	SELECT 'init_privs|' || pg_describe_object(ip.classoid, ip.objoid, ip.objsubid) || '=' ||
		   ip.privtype::text || ' ' || ip.initprivs::text
	  FROM pg_init_privs ip
	 WHERE (ip.classoid, ip.objoid) IN (SELECT classid, objid FROM member)
)
-- one line per fact: multi-line view definitions are folded
SELECT x.fact
  FROM (SELECT regexp_replace(f.line, E'\\s*\\n\\s*', ' ', 'g') AS fact FROM facts f) AS x
 ORDER BY x.fact COLLATE "C";
