-- test/scripts/sql_edition_escalate.sql: traps for an escalation through
-- the SQL edition's trusted extension (run by sql_edition_install.sh, as the
-- managed service's admin role, never as a superuser).
-- Copyright (c) 2026, the dlock developers
--
-- The trusted extension's objects belong to the bootstrap superuser, so
-- its SECURITY DEFINER functions run as a superuser.  Every trap logs
-- current_user into public.trap_log: a row there with a superuser is an
-- escalation.
--   -v phase=before   before CREATE EXTENSION: the log, the target schema
--                     (owned by the admin role) and, in it and in public,
--                     functions and operators named like the built-ins a
--                     script calls, with many signatures
--   -v phase=after    after it (-v target=SCHEMA): overloads of every
--                     function of the extension in its schema, temporary
--                     tables named like its relations (pg_temp first in
--                     search_path, public before pg_catalog), then a call of
--                     every function with odd names, and every trigger
--                     function on a table with odd names; each call is
--                     logged in public.esc_calls
--   -v phase=control  the same for public.control_definer(text), an
--                     unpinned SECURITY DEFINER function of a superuser's:
--                     the traps must catch it
\set ON_ERROR_STOP on
SET client_min_messages = warning;
SELECT :'phase' = 'before' AS before, :'phase' = 'after' AS after, :'phase' = 'control' AS control \gset

\if :before
CREATE TABLE public.trap_log (who name, fn text);
GRANT INSERT, SELECT ON public.trap_log TO PUBLIC;
CREATE TABLE public.esc_calls (fn text, call text, outcome text);
CREATE FUNCTION public.trap(fn text) RETURNS void LANGUAGE sql SECURITY INVOKER
	AS $$INSERT INTO public.trap_log VALUES (pg_catalog."current_user"(), fn)$$;
GRANT EXECUTE ON FUNCTION public.trap(text) TO PUBLIC;
CREATE SCHEMA "odd sch;-é";
-- traps(schema, names, signatures): one function per name and signature,
-- skipping what cannot be created
CREATE FUNCTION public.make_traps(target name, names text[], sigs text[]) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
	n text;
	s text;
	made integer := 0;
BEGIN
	FOREACH n IN ARRAY names LOOP
		FOREACH s IN ARRAY sigs LOOP
			BEGIN
				EXECUTE pg_catalog.format(
					'CREATE FUNCTION %I.%I(%s) RETURNS text LANGUAGE plpgsql AS %L',
					target, n, s,
					pg_catalog.format('BEGIN PERFORM public.trap(%L); RETURN NULL; END',
									  n || '(' || s || ')'));
				made := made + 1;
			EXCEPTION WHEN OTHERS THEN
				NULL;
			END;
		END LOOP;
	END LOOP;
	RETURN made;
END
$$;
CREATE FUNCTION public.trap_op(anyelement, anyelement) RETURNS boolean LANGUAGE plpgsql
	AS $$BEGIN PERFORM public.trap('operator'); RETURN NULL; END$$;
CREATE FUNCTION public.trap_op_t(text, name) RETURNS boolean LANGUAGE plpgsql
	AS $$BEGIN PERFORM public.trap('operator text name'); RETURN NULL; END$$;
CREATE FUNCTION public.trap_op_n(name, text) RETURNS boolean LANGUAGE plpgsql
	AS $$BEGIN PERFORM public.trap('operator name text'); RETURN NULL; END$$;
DO $$
DECLARE
	names text[] := ARRAY['format', 'quote_ident', 'quote_literal', 'quote_nullable', 'replace',
		'current_setting', 'set_config', 'nextval', 'setval', 'currval', 'lastval', 'clock_timestamp',
		'now', 'statement_timestamp', 'pg_sleep', 'txid_current', 'pg_current_xact_id',
		'pg_backend_pid', 'has_function_privilege', 'has_table_privilege', 'pg_has_role',
		'pg_is_in_recovery', 'pg_control_system', 'pg_control_checkpoint', 'length', 'octet_length',
		'lower', 'upper', 'count', 'max', 'min', 'sum', 'array_agg', 'string_agg', 'to_jsonb',
		'jsonb_build_object', 'row_to_json', 'to_json', 'pg_notify', 'pg_extension_config_dump',
		'pg_relation_filenode', 'pg_get_userbyid', 'to_regclass', 'to_regrole', 'to_regprocedure',
		'pg_advisory_xact_lock', 'pg_try_advisory_xact_lock', 'hashtext', 'md5', 'encode', 'decode',
		'date_part', 'age', 'make_interval', 'justify_interval', 'abs', 'floor', 'ceil', 'round',
		'trunc', 'concat', 'concat_ws', 'substr', 'left', 'right', 'strpos', 'split_part',
		'regexp_replace', 'array_length', 'cardinality', 'unnest', 'generate_series',
		'pg_trigger_depth', 'pg_typeof', 'pg_column_size', 'array_to_string', 'string_to_array',
		'pg_get_triggerdef', 'pg_get_function_identity_arguments', 'obj_description',
		'pg_describe_object', 'row_security_active', 'pg_current_wal_lsn', 'txid_current_if_assigned',
		'pg_stat_get_backend_subxact', 'pg_stat_clear_snapshot', 'timeofday', 'extract',
		'to_timestamp', 'pg_xact_status', 'xid', 'int8', 'text', 'bool', 'interval'];
	sigs text[] := ARRAY['text', 'text, text', 'text, text, text', 'bigint', 'integer', 'text, bigint',
		'bigint, text', 'interval', 'name', 'oid', 'regclass', 'double precision', 'timestamptz',
		'text, boolean', 'text, text, boolean', 'regclass, bigint', 'regclass, bigint, boolean',
		'regclass, text', 'bigint, bigint', 'name, text', 'text, interval', 'anyelement'];
	target name;
	op text;
	ty text;
BEGIN
	FOREACH target IN ARRAY ARRAY['odd sch;-é', 'public']::name[] LOOP
		PERFORM public.make_traps(target, names, sigs);
		FOREACH op IN ARRAY ARRAY['=', '<>', '<', '<=', '>', '>=', '~', '||', '+', '-'] LOOP
			FOREACH ty IN ARRAY ARRAY['text', 'bigint', 'integer', 'interval', 'timestamptz', 'oid',
									  'name', 'boolean', '"char"', 'regclass', 'xid'] LOOP
				BEGIN
					EXECUTE pg_catalog.format('CREATE OPERATOR %I.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = public.trap_op)',
											  target, op, ty, ty);
				EXCEPTION WHEN OTHERS THEN
					NULL;
				END;
			END LOOP;
			BEGIN
				EXECUTE pg_catalog.format('CREATE OPERATOR %I.%s (LEFTARG = text, RIGHTARG = name, FUNCTION = public.trap_op_t)', target, op);
				EXECUTE pg_catalog.format('CREATE OPERATOR %I.%s (LEFTARG = name, RIGHTARG = text, FUNCTION = public.trap_op_n)', target, op);
			EXCEPTION WHEN OTHERS THEN
				NULL;
			END;
		END LOOP;
	END LOOP;
END
$$;
\endif

\if :after
SELECT pg_catalog.set_config('esc.target', :'target', false) IS NOT NULL AS target_set \gset
-- Overloads of every function of the extension in its own schema (its
-- owner, the admin role, may create there), under every signature it
-- does not have.
SELECT public.make_traps(pg_catalog.current_setting('esc.target')::name,
		 ARRAY(SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc p
				WHERE p.pronamespace = pg_catalog.to_regnamespace(pg_catalog.quote_ident(pg_catalog.current_setting('esc.target')))),
		 ARRAY['text', 'text, text', 'text, bigint, interval', 'text, integer', 'text, bigint',
			   'text, text, text', 'text, interval', 'text, interval, interval', 'text, interval, interval, text',
			   'varchar, bigint', 'text, numeric', 'text, bigint, text', 'unknown', 'name, bigint', 'bigint',
			   'text, integer, interval', 'interval, bigint', 'interval, integer', 'regclass, text'])
	   >= 0 AS made \gset
-- Temporary tables named like the extension's relations, with a trap on
-- every write.
CREATE FUNCTION public.trap_trigger() RETURNS trigger LANGUAGE plpgsql
	AS $$BEGIN PERFORM public.trap('temp table ' || TG_TABLE_NAME); RETURN NULL; END$$;
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT c.relname FROM pg_catalog.pg_class c
			  WHERE c.relnamespace = pg_catalog.to_regnamespace(pg_catalog.quote_ident(pg_catalog.current_setting('esc.target')))
				AND c.relkind IN ('r', 'v', 'S', 'p') LOOP
		EXECUTE pg_catalog.format('CREATE TEMP TABLE %I (name text, token bigint, a int)', r.relname);
		EXECUTE pg_catalog.format('CREATE TRIGGER trap BEFORE INSERT OR UPDATE OR DELETE ON pg_temp.%I FOR EACH ROW EXECUTE FUNCTION public.trap_trigger()', r.relname);
	END LOOP;
END
$$;
-- A table with odd names, fenced by every trigger function of the extension.
CREATE TABLE public."t'ab""le;" ("na me" text, "tok""en" bigint, "col'umn" text);
DO $$
DECLARE
	f record;
	a text;
	i integer := 0;
BEGIN
	FOR f IN SELECT p.oid::regprocedure AS fn, p.proname FROM pg_catalog.pg_proc p
			  WHERE p.pronamespace = pg_catalog.to_regnamespace(pg_catalog.quote_ident(pg_catalog.current_setting('esc.target')))
				AND p.prorettype = 'pg_catalog.trigger'::pg_catalog.regtype LOOP
		FOREACH a IN ARRAY ARRAY['', $a$'x'$a$, $a$'na me', 'tok"en'$a$, $a$'na me', 'tok"en', 'column'$a$,
								 $a$'%I'';--', 'tok"en'$a$, $a$'a"b', '"; SELECT 1; --', 'x'$a$] LOOP
			i := i + 1;
			BEGIN
				EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE INSERT OR UPDATE OR DELETE ON public."t''ab""le;" FOR EACH ROW EXECUTE FUNCTION %s.%I(%s)',
										  'esc' || i, pg_catalog.quote_ident(pg_catalog.current_setting('esc.target')), f.proname, a);
				INSERT INTO public.esc_calls VALUES (f.proname, 'row trigger (' || a || ')', 'created');
			EXCEPTION WHEN OTHERS THEN
				INSERT INTO public.esc_calls VALUES (f.proname, 'row trigger (' || a || ')', SQLSTATE);
			END;
			BEGIN
				EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE TRUNCATE ON public."t''ab""le;" FOR EACH STATEMENT EXECUTE FUNCTION %s.%I(%s)',
										  'esct' || i, pg_catalog.quote_ident(pg_catalog.current_setting('esc.target')), f.proname, a);
			EXCEPTION WHEN OTHERS THEN
				NULL;
			END;
		END LOOP;
	END LOOP;
END
$$;
\endif

\if :control
SELECT pg_catalog.set_config('esc.target', 'public', false) IS NOT NULL AS target_set \gset
\endif

\if :before
\else
-- Call every function (every SECURITY DEFINER one included) with odd
-- values, under a search_path that puts the temporary schema, public and
-- the target before pg_catalog.
CREATE OR REPLACE FUNCTION public.esc_call(fn regprocedure, call text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	old text := pg_catalog.current_setting('search_path');
BEGIN
	PERFORM pg_catalog.set_config('search_path',
		pg_catalog.format('pg_temp, public, %I, pg_catalog', pg_catalog.current_setting('esc.target')), false);
	BEGIN
		EXECUTE call;
		PERFORM pg_catalog.set_config('search_path', old, false);
		INSERT INTO public.esc_calls VALUES (fn::text, call, 'ok');
	EXCEPTION WHEN OTHERS THEN
		PERFORM pg_catalog.set_config('search_path', old, false);
		INSERT INTO public.esc_calls VALUES (fn::text, call, SQLSTATE);
	END;
END
$$;
DO $esc$
DECLARE
	f record;
	v text;
	args text;
	t pg_catalog.oid;
	target text := pg_catalog.current_setting('esc.target');
BEGIN
	FOR f IN SELECT p.oid::regprocedure AS fn, p.oid, p.proname, p.proargtypes
			   FROM pg_catalog.pg_proc p
			  WHERE p.pronamespace = pg_catalog.to_regnamespace(pg_catalog.quote_ident(target))
				AND p.prorettype NOT IN ('pg_catalog.trigger'::pg_catalog.regtype, 'pg_catalog.event_trigger'::pg_catalog.regtype)
				AND p.prokind = 'f'
				AND (target = 'public' AND p.proname = 'control_definer'
					 OR target <> 'public' AND EXISTS (SELECT FROM pg_catalog.pg_depend d
								WHERE d.objid = p.oid AND d.deptype = 'e'))
				AND pg_catalog.has_function_privilege(p.oid, 'EXECUTE') LOOP
		FOREACH v IN ARRAY ARRAY['x', 'a''b";--', '%I%L%s', E'caf\u00e9 $dlock$ $$', 'job'] LOOP
			args := NULL;
			FOREACH t IN ARRAY f.proargtypes::pg_catalog.oid[] LOOP
				args := pg_catalog.concat_ws(', ', args,
					CASE t WHEN 'pg_catalog.text'::pg_catalog.regtype THEN pg_catalog.quote_literal(v)
						   WHEN 'pg_catalog.name'::pg_catalog.regtype THEN pg_catalog.quote_literal(v) || '::name'
						   WHEN 'pg_catalog.int8'::pg_catalog.regtype THEN '1::bigint'
						   WHEN 'pg_catalog.int4'::pg_catalog.regtype THEN '1'
						   WHEN 'pg_catalog.interval'::pg_catalog.regtype THEN '''1 s''::interval'
						   WHEN 'pg_catalog.bool'::pg_catalog.regtype THEN 'true'
						   WHEN 'pg_catalog.regclass'::pg_catalog.regtype THEN '''public.trap_log''::regclass'
						   ELSE pg_catalog.format('NULL::%s', t::pg_catalog.regtype) END);
			END LOOP;
			PERFORM public.esc_call(f.fn, pg_catalog.format('SELECT %s.%I(%s)',
				pg_catalog.quote_ident(target), f.proname, coalesce(args, '')));
		END LOOP;
	END LOOP;
END
$esc$;
\endif

\if :after
-- every statement shape on the fenced table
DO $$
DECLARE
	s text;
BEGIN
	FOREACH s IN ARRAY ARRAY[
		$s$INSERT INTO public."t'ab""le;" VALUES ('x', 1, 'x')$s$,
		$s$INSERT INTO public."t'ab""le;" VALUES ('a''b";--', 2, '%I')$s$,
		$s$UPDATE public."t'ab""le;" SET "col'umn" = 'y'$s$,
		$s$UPDATE public."t'ab""le;" SET "tok""en" = 3$s$,
		$s$DELETE FROM public."t'ab""le;"$s$,
		$s$TRUNCATE public."t'ab""le;"$s$] LOOP
		PERFORM public.esc_call('pg_catalog.now()'::regprocedure, s);
	END LOOP;
END
$$;
\endif
