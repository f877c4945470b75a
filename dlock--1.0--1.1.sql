/* dlock--1.0--1.1.sql */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION dlock UPDATE TO '1.1'" to load this file. \quit

-- Every change below has its twin in dlock--1.1.sql; the upgrade test proves
-- that both paths give the same objects.

-- 1.1: hardening (issue 13)

-- 1.1: fencing (issue 11)

-- 1.1: tokens (issue 12)

-- 1.1: waiting and events (issue 16)

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
