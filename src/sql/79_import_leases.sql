-- Copyright (c) 2026, the dlock developers
--
-- 79_import_leases.sql: dlock_import_leases(), one text for both editions
-- (issue 26 item 5, docs/moving.md): the SQL edition's script has this file
-- in its place, and make splices it into the C edition's update script
-- (dlock--1.1--1.2.sql, at its "-- @include" line).  Each edition's
-- dlock_import (80_move.sql here) reads an export through it.
--
-- The leases of an export, checked: 22023 for anything that is not a
-- well-formed export of format 1.
CREATE FUNCTION @extschema@.dlock_import_leases(state pg_catalog.jsonb)
RETURNS TABLE (name pg_catalog.text, token pg_catalog.int8,
			   owner pg_catalog.text, role pg_catalog.text,
			   acquired_at pg_catalog.timestamptz,
			   expires_at pg_catalog.timestamptz,
			   released_at pg_catalog.timestamptz)
LANGUAGE plpgsql STABLE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	bad pg_catalog.text;
BEGIN
	IF pg_catalog.jsonb_typeof(state) IS DISTINCT FROM 'object'
	   OR (state OPERATOR(pg_catalog.->>) 'format') IS DISTINCT FROM 'dlock-export' THEN
		RAISE EXCEPTION 'argument "state" is not a dlock export'
			USING ERRCODE = '22023',
				  DETAIL = 'A dlock export is a JSON object whose "format" is "dlock-export".',
				  HINT = 'Pass the value that dlock_export() returned.';
	END IF;
	IF (state OPERATOR(pg_catalog.->) 'version') IS DISTINCT FROM '1'::pg_catalog.jsonb THEN
		RAISE EXCEPTION 'dlock export version "%" is not supported', state OPERATOR(pg_catalog.->) 'version'
			USING ERRCODE = '22023',
				  DETAIL = 'This version of dlock reads exports of version 1.';
	END IF;
	BEGIN
		SELECT pg_catalog.string_agg(k, ', ') INTO bad
		  FROM pg_catalog.unnest('{highest_token,counter}'::pg_catalog.text[]) AS k
		 WHERE pg_catalog.jsonb_typeof(state OPERATOR(pg_catalog.->) k) IS DISTINCT FROM 'number'
			OR (state OPERATOR(pg_catalog.->>) k)::pg_catalog.int8 OPERATOR(pg_catalog.<) 0;
		IF bad IS NULL AND pg_catalog.jsonb_typeof(state OPERATOR(pg_catalog.->) 'leases') IS DISTINCT FROM 'array' THEN
			bad := 'leases';
		END IF;
		IF bad IS NULL THEN
			SELECT pg_catalog.string_agg('lease ' OPERATOR(pg_catalog.||) e.i, ', ' ORDER BY e.i) INTO bad
			  FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'leases') WITH ORDINALITY AS e(v, i)
			 WHERE pg_catalog.jsonb_typeof(e.v) IS DISTINCT FROM 'object'
				OR pg_catalog.jsonb_typeof(e.v OPERATOR(pg_catalog.->) 'name') IS DISTINCT FROM 'string'
				OR pg_catalog.jsonb_typeof(e.v OPERATOR(pg_catalog.->) 'token') IS DISTINCT FROM 'number'
				OR pg_catalog.jsonb_typeof(e.v OPERATOR(pg_catalog.->) 'acquired_at') IS DISTINCT FROM 'string'
				OR pg_catalog.jsonb_typeof(e.v OPERATOR(pg_catalog.->) 'expires_at') IS DISTINCT FROM 'string'
				OR coalesce(pg_catalog.jsonb_typeof(e.v OPERATOR(pg_catalog.->) 'owner'), 'null') NOT IN ('null', 'string')
				OR coalesce(pg_catalog.jsonb_typeof(e.v OPERATOR(pg_catalog.->) 'role'), 'null') NOT IN ('null', 'string')
				OR coalesce(pg_catalog.jsonb_typeof(e.v OPERATOR(pg_catalog.->) 'released_at'), 'null') NOT IN ('null', 'string')
				OR pg_catalog.octet_length(e.v OPERATOR(pg_catalog.->>) 'name') NOT BETWEEN 1 AND 255
				OR pg_catalog.octet_length(e.v OPERATOR(pg_catalog.->>) 'owner') NOT BETWEEN 1 AND 255
				OR (e.v OPERATOR(pg_catalog.->>) 'token')::pg_catalog.int8 OPERATOR(pg_catalog.<=) 0
				OR (e.v OPERATOR(pg_catalog.->>) 'token')::pg_catalog.int8 OPERATOR(pg_catalog.>)
				   (state OPERATOR(pg_catalog.->>) 'highest_token')::pg_catalog.int8
				OR NOT pg_catalog.isfinite((e.v OPERATOR(pg_catalog.->>) 'acquired_at')::pg_catalog.timestamptz)
				OR NOT pg_catalog.isfinite((e.v OPERATOR(pg_catalog.->>) 'expires_at')::pg_catalog.timestamptz)
				OR NOT pg_catalog.isfinite((e.v OPERATOR(pg_catalog.->>) 'released_at')::pg_catalog.timestamptz);
		END IF;
		IF bad IS NULL THEN
			SELECT pg_catalog.string_agg(pg_catalog.format('name %s twice', pg_catalog.quote_literal(d.n)), ', ') INTO bad
			  FROM (SELECT e.v OPERATOR(pg_catalog.->>) 'name' COLLATE pg_catalog."C" AS n
					  FROM pg_catalog.jsonb_array_elements(state OPERATOR(pg_catalog.->) 'leases') AS e(v)
					 GROUP BY 1 HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1) AS d;
		END IF;
	EXCEPTION WHEN data_exception THEN
		bad := SQLERRM;
	END;
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'argument "state" is not a valid dlock export'
			USING ERRCODE = '22023',
				  DETAIL = pg_catalog.format('What is wrong, missing or out of range: "%s".', bad);
	END IF;
	RETURN QUERY
		SELECT x.name, x.token, x.owner, x.role, x.acquired_at, x.expires_at, x.released_at
		  FROM pg_catalog.jsonb_to_recordset(state OPERATOR(pg_catalog.->) 'leases')
			   AS x(name pg_catalog.text, token pg_catalog.int8, owner pg_catalog.text,
					role pg_catalog.text, acquired_at pg_catalog.timestamptz,
					expires_at pg_catalog.timestamptz, released_at pg_catalog.timestamptz);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_import_leases(pg_catalog.jsonb) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_import_leases(pg_catalog.jsonb) IS
	'the leases of a dlock export, checked (SQLSTATE 22023 for anything else); used by dlock_import';
