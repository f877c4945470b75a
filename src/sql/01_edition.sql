-- Copyright (c) 2026, the dlock developers
--
-- 01_edition.sql: the helpers the SQL edition's three install forms share,
-- and dlock_edition() (the C edition's is in dlock--1.1--1.2.sql).

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
