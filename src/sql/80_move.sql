-- Copyright (c) 2026, the dlock developers
--
-- 80_move.sql: moving between the editions (issue 26 item 5,
-- docs/moving.md): dlock_export() and dlock_import() with the C edition's
-- names, arguments and export format (dlock--1.1--1.2.sql, the block "issue
-- 26 item 5", has the format).  An export of either edition is imported by
-- either.
--
-- What differs from the C edition: a lease is two rows here (dlock_lease
-- and dlock_expiry), the holder is bound by the identity rule
-- (dlock_sql_holder), and the import's jump is this edition's
-- (dlock_sql_jump with reason rebase, above the highest exported token).
-- dlock_import is a SECURITY INVOKER function without SET clauses, so that
-- dlock_sql_durable makes its commit synchronous (a function's SET clause
-- would end the setting with the function); the work is done by
-- dlock_sql_import, as the tables' owner, for callers that may execute
-- dlock_import.  Neither builds dynamic SQL from the export.  Both
-- editions read an export through dlock_import_leases (79_import_leases.sql).

CREATE FUNCTION @extschema@.dlock_export()
RETURNS pg_catalog.jsonb
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
AS $dlock$
DECLARE
	counter pg_catalog.int8;
	highest pg_catalog.int8;
	leases pg_catalog.jsonb;
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') OPERATOR(pg_catalog.<>) 'read committed' THEN
		RAISE EXCEPTION 'dlock_export() must be called in a READ COMMITTED transaction'
			USING ERRCODE = '25000',
				  DETAIL = pg_catalog.format('The snapshot of a transaction at isolation level "%s" can miss leases that were acquired while the export waited for its lock.',
											 pg_catalog.upper(pg_catalog.current_setting('transaction_isolation')));
	END IF;
	-- An acquisition writes dlock_lease (ROW EXCLUSIVE) after its draw and
	-- keeps the lock until it commits.
	IF NOT pg_catalog.pg_is_in_recovery() THEN
		LOCK TABLE @extschema@.dlock_lease IN SHARE MODE;
	END IF;
	SELECT s.last_value INTO counter FROM @extschema@.dlock_token_seq AS s;
	SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
			   'name', l.name, 'token', l.token, 'owner', l.owner,
			   'role', pg_catalog.pg_get_userbyid(
						   @extschema@.dlock_sql_holder(l.role, l.role_oid, l.role_system_identifier,
														l.role_counter_relfilenode)),
			   'acquired_at', l.acquired_at, 'expires_at', e.expires_at,
			   'released_at', e.released_at) ORDER BY l.name), '[]'),
		   pg_catalog.max(l.token)
	  INTO leases, highest
	  FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name OPERATOR(pg_catalog.=) l.name;
	highest := greatest(counter, highest,
						(SELECT pg_catalog.max(p.floor) FROM @extschema@.dlock_epoch AS p));
	RETURN pg_catalog.jsonb_build_object(
		'format', 'dlock-export', 'version', 1, 'edition', 'sql',
		'exported_at', pg_catalog.clock_timestamp(),
		'highest_token', highest, 'counter', counter, 'leases', leases);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_export() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_export() IS
	'the lease state (every lease, its holder role by name, the highest token handed out) as jsonb, for dlock_import of either edition; locks dlock_lease against acquisitions until the transaction ends; the extension owner, superusers and roles granted EXECUTE only';

-- dlock_sql_import found a lease row locked by another transaction
-- (FOR UPDATE NOWAIT): say which leases, and why, with 55P03.  The rows it
-- can lock now (SKIP LOCKED) are the free ones; of the others, those that
-- a share lock can join are held by checkers (the check protection), the
-- rest by a transaction changing the lease (dlock_sql_ending, 72_operators.sql).
CREATE FUNCTION @extschema@.dlock_sql_import_refuse()
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	locked pg_catalog.text[];
	pinned pg_catalog.text[];
	changing pg_catalog.text[];
	pid pg_catalog.int4;
BEGIN
	locked := ARRAY(SELECT l.name FROM @extschema@.dlock_lease AS l
					 WHERE l.name OPERATOR(pg_catalog.<>) ALL (ARRAY(
						SELECT f.name FROM @extschema@.dlock_lease AS f FOR UPDATE SKIP LOCKED))
					 ORDER BY l.name COLLATE pg_catalog."C");
	pinned := ARRAY(SELECT n FROM pg_catalog.unnest(locked) AS n WHERE NOT @extschema@.dlock_sql_ending(n));
	changing := ARRAY(SELECT n FROM pg_catalog.unnest(locked) AS n WHERE n OPERATOR(pg_catalog.<>) ALL (pinned));
	-- The C edition's words (api.c, dlock_import_check_name): the first
	-- lease found, and a process that holds its lock where one is told.
	IF pg_catalog.cardinality(pinned) OPERATOR(pg_catalog.>) 0 THEN
		pid := (@extschema@.dlock_sql_pinners(pinned[1]))[1];
		IF pid IS NOT NULL THEN
			RAISE EXCEPTION 'could not import dlock leases'
				USING ERRCODE = '55P03',
					  DETAIL = pg_catalog.format('Process %s holds the check protection of lease "%s", which the import would replace.',
												 pid, pinned[1]),
					  HINT = 'Wait for the transactions that hold it to end, or end them (dlock_revoke(name, force => true) does for an expired lease), then import again.';
		END IF;
		changing := pinned;
	ELSIF pg_catalog.cardinality(changing) OPERATOR(pg_catalog.>) 0 THEN
		pid := (@extschema@.dlock_sql_pinners(changing[1]))[1];
	END IF;
	RAISE EXCEPTION 'could not import dlock leases'
		USING ERRCODE = '55P03',
			  DETAIL = CASE WHEN pid IS NOT NULL
							THEN pg_catalog.format('Process %s holds a lock on lease "%s" for a change or a check in progress, and the import would replace the lease.',
												   pid, changing[1])
							WHEN changing[1] IS NOT NULL
							THEN pg_catalog.format('Another transaction held a lock on lease "%s" for a change or a check in progress, and the import would replace the lease.',
												   changing[1])
							ELSE 'Another transaction held a lock on a lease for a change or a check in progress, and the import would replace the lease.' END,
			  HINT = 'Import again once that transaction has ended.';
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_import_refuse() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_import_refuse() IS
	'internal (dlock_import): raise 55P03 for an import that found a lease row locked, naming a lease whose check protection a transaction holds (or that a transaction is changing)';

-- The work of dlock_import, as the tables' owner, for a caller that may
-- execute dlock_import (the privilege on the API function decides).
CREATE FUNCTION @extschema@.dlock_sql_import(state pg_catalog.jsonb, replace pg_catalog.bool)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	existing pg_catalog.int8;
	held pg_catalog.int8;
	busy_until pg_catalog.timestamptz;
	here pg_catalog.int8;
	stale pg_catalog.text;
	greater pg_catalog.bool;
	missing pg_catalog.text;
	imported pg_catalog.int8;
	hist record;
BEGIN
	IF NOT pg_catalog.has_function_privilege(@extschema@.dlock_sql_caller(),
			'@extschema@.dlock_import(pg_catalog.jsonb, pg_catalog.bool)'::pg_catalog.regprocedure, 'EXECUTE') THEN
		RAISE EXCEPTION 'permission denied for function dlock_import' USING ERRCODE = '42501';
	END IF;
	IF state IS NULL OR replace IS NULL THEN
		RAISE EXCEPTION 'argument "%" must not be null', CASE WHEN state IS NULL THEN 'state' ELSE 'replace' END
			USING ERRCODE = '22004';
	END IF;
	PERFORM FROM @extschema@.dlock_import_leases(state);
	PERFORM @extschema@.dlock_sql_writable('dlock_import()');
	PERFORM @extschema@.dlock_sql_no_prepare();
	-- One cleanup, reset or import at a time (70_stats.sql), this lock first.
	PERFORM FROM @extschema@.dlock_sql_stats_lock FOR UPDATE;
	-- Against acquisitions, renewals, releases and other imports until the
	-- transaction ends.
	LOCK TABLE @extschema@.dlock_lease, @extschema@.dlock_expiry IN SHARE ROW EXCLUSIVE MODE;
	-- busy_until: a row not held that still cannot be taken (minimum hold,
	-- lock-delay: dlock_leases.available_at); replacing it would let its
	-- name be taken at once, so it counts as held (the C edition's rule,
	-- attack5 F3).
	SELECT pg_catalog.count(*),
		   pg_catalog.count(*) FILTER (WHERE l.held),
		   pg_catalog.max(l.available_at) FILTER (WHERE NOT l.held
													AND l.available_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())
	  INTO existing, held, busy_until
	  FROM @extschema@.dlock_leases AS l;
	IF existing OPERATOR(pg_catalog.>) 0 AND (NOT replace OR held OPERATOR(pg_catalog.>) 0
											  OR busy_until IS NOT NULL) THEN
		RAISE EXCEPTION 'cannot import dlock leases into a database that has leases'
			USING ERRCODE = '55000',
				  DETAIL = CASE WHEN held OPERATOR(pg_catalog.>) 0 THEN 'Some of its leases are held now.'
							 WHEN busy_until IS NOT NULL
							 THEN pg_catalog.format('Some of its leases are unavailable until %s.', busy_until)
							 ELSE 'None of its leases is held now.' END,
				  HINT = CASE WHEN held OPERATOR(pg_catalog.>) 0
							  THEN 'Release the held leases or let them expire first; dlock_import(state, replace => true) then replaces the rows.'
							  WHEN busy_until IS NOT NULL
							  THEN 'Wait until then; dlock_import(state, replace => true) then replaces the rows.'
							  ELSE 'Call dlock_import(state, replace => true) to replace them.' END;
	END IF;
	-- Never a token this database has superseded again, never a name's
	-- token lower (the C edition's rule, attack5 F8): an export older than
	-- this database's leases is refused.  here: the highest token this
	-- database handed out, by dlock_export's rule (counter, floors, lease
	-- rows), but a counter never drawn from (a new install) counts as 0.
	SELECT greatest(CASE WHEN s.is_called THEN s.last_value ELSE 0 END,
					(SELECT pg_catalog.max(p.floor) FROM @extschema@.dlock_epoch AS p),
					(SELECT pg_catalog.max(l.token) FROM @extschema@.dlock_lease AS l))
	  INTO here
	  FROM @extschema@.dlock_token_seq AS s;
	IF here OPERATOR(pg_catalog.>) greatest((state OPERATOR(pg_catalog.->>) 'highest_token')::pg_catalog.int8,
											(state OPERATOR(pg_catalog.->>) 'counter')::pg_catalog.int8) THEN
		RAISE EXCEPTION 'cannot import a dlock export older than this database''s leases'
			USING ERRCODE = '55000',
				  DETAIL = 'This database has handed out tokens above the highest token of the export.',
				  HINT = 'Take a new export of the database the leases come from (after dlock_rebase() there if this database drew tokens of its own), then import it.';
	END IF;
	-- With replace, the rows of names that are in the export: none has a
	-- greater token here, and none has ended here a token that the export
	-- has held.
	SELECT l.name, l.token OPERATOR(pg_catalog.>) r.token INTO stale, greater
	  FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_import_leases(state) AS r ON r.name OPERATOR(pg_catalog.=) l.name
	 WHERE l.token OPERATOR(pg_catalog.>) r.token
		OR (l.token OPERATOR(pg_catalog.=) r.token AND r.released_at IS NULL
			AND r.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())
	 ORDER BY l.name
	 LIMIT 1;
	IF greater THEN
		RAISE EXCEPTION 'cannot import a dlock export older than this database''s leases'
			USING ERRCODE = '55000',
				  DETAIL = pg_catalog.format('Lease "%s" has a greater token here than in the export.', stale),
				  HINT = 'Take a new export of the database the leases come from, then import it.';
	ELSIF stale IS NOT NULL THEN
		RAISE EXCEPTION 'cannot import a dlock export older than this database''s leases'
			USING ERRCODE = '55000',
				  DETAIL = pg_catalog.format('Lease "%s" is held in the export, and its token has since been released, revoked or has expired here.', stale),
				  HINT = 'Take a new export of the database the leases come from, then import it.';
	END IF;
	-- Not while a transaction holds the check protection of a lease that
	-- is no longer held (the row's FOR SHARE, 30_lease.sql): a lease never
	-- changes hands under it, and the DELETE below would wait for that
	-- transaction, for as long as it stays open.  Every lease row is locked
	-- as a hand-over locks it, without waiting (55P03, as the C edition's
	-- import refuses); from then on no check can take its protection.
	-- Another lock on a row (an acquire or a revoke that locked it before
	-- the table lock above, and now waits for it) is refused too: waiting
	-- would be a deadlock.  The block's subtransaction is the call's only one.
	BEGIN
		PERFORM FROM @extschema@.dlock_lease AS l FOR UPDATE NOWAIT;
	EXCEPTION WHEN lock_not_available THEN
		PERFORM @extschema@.dlock_sql_import_refuse();
	END;
	SELECT pg_catalog.string_agg(DISTINCT coalesce(pg_catalog.quote_ident(r.role), '(dropped)'), ', ') INTO missing
	  FROM @extschema@.dlock_import_leases(state) AS r
	 WHERE r.released_at IS NULL AND r.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()
	   AND NOT EXISTS (SELECT FROM pg_catalog.pg_roles AS a WHERE a.rolname OPERATOR(pg_catalog.=) r.role);
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'holder roles of held leases do not exist in this cluster: "%"', missing
			USING ERRCODE = '42704',
				  HINT = 'Create the roles first (pg_dumpall -r dumps them), or let those leases expire, then import again.';
	END IF;
	-- The counters of the rows replaced stay in the totals (a10 F9).
	PERFORM @extschema@.dlock_sql_stats_retire_rows() WHERE existing OPERATOR(pg_catalog.>) 0;
	-- A replaced lease that expired without a release, which the import
	-- writes back as it was (same name and token, not released), is the
	-- same loss: counted once, when that row is taken over, cleaned up or
	-- replaced again, not now as well (the C edition's rule, attack5 F5).
	UPDATE @extschema@.dlock_stats_retired AS s
	   SET lost = s.lost OPERATOR(pg_catalog.-) w.n
	  FROM (SELECT pg_catalog.count(*) AS n
			  FROM @extschema@.dlock_expiry AS x
			  JOIN @extschema@.dlock_import_leases(state) AS r
				ON r.name OPERATOR(pg_catalog.=) x.name AND r.token OPERATOR(pg_catalog.=) x.token
			 WHERE x.released_at IS NULL AND r.released_at IS NULL) AS w
	 WHERE existing OPERATOR(pg_catalog.>) 0 AND w.n OPERATOR(pg_catalog.>) 0;
	DELETE FROM @extschema@.dlock_sql_stats_base;
	DELETE FROM @extschema@.dlock_expiry;
	DELETE FROM @extschema@.dlock_lease;
	hist := @extschema@.dlock_sql_history();
	INSERT INTO @extschema@.dlock_lease (name, token, owner, role, role_oid, role_system_identifier,
										 role_counter_relfilenode, acquired_at)
		SELECT r.name, r.token, r.owner, coalesce(r.role, ''), coalesce(a.oid, 0),
			   hist.system_identifier, hist.counter_relfilenode, r.acquired_at
		  FROM @extschema@.dlock_import_leases(state) AS r
		  LEFT JOIN pg_catalog.pg_roles AS a ON a.rolname OPERATOR(pg_catalog.=) r.role;
	GET DIAGNOSTICS imported = ROW_COUNT;
	INSERT INTO @extschema@.dlock_expiry (name, token, expires_at, released_at)
		SELECT r.name, r.token, r.expires_at, r.released_at
		  FROM @extschema@.dlock_import_leases(state) AS r;
	-- The queue rows come with the lease rows (30_lease.sql, dlock_sql_write_new).
	INSERT INTO @extschema@.dlock_sql_queue (name)
		SELECT r.name FROM @extschema@.dlock_import_leases(state) AS r
		ON CONFLICT DO NOTHING;
	-- This edition's jump, above every exported token: only ever raises.
	PERFORM @extschema@.dlock_sql_jump(pg_catalog.nextval('@extschema@.dlock_token_seq'::pg_catalog.regclass),
									   greatest((state OPERATOR(pg_catalog.->>) 'highest_token')::pg_catalog.int8,
												(state OPERATOR(pg_catalog.->>) 'counter')::pg_catalog.int8),
									   'rebase');
	RETURN imported;
END
$dlock$;
GRANT EXECUTE ON FUNCTION @extschema@.dlock_sql_import(pg_catalog.jsonb, pg_catalog.bool) TO PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_import(pg_catalog.jsonb, pg_catalog.bool) IS
	'internal: the work of dlock_import, for callers that may execute dlock_import';

CREATE FUNCTION @extschema@.dlock_import(
	state pg_catalog.jsonb,
	replace pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	n pg_catalog.int8 := @extschema@.dlock_sql_import(state, replace);
BEGIN
	PERFORM @extschema@.dlock_sql_durable();
	RETURN n;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_import(pg_catalog.jsonb, pg_catalog.bool) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_import(pg_catalog.jsonb, pg_catalog.bool) IS
	'write the leases of a dlock_export of either edition into an empty lease table (replace => true: one without held or still unavailable leases), holders bound by role name, and raise the token counter above the highest exported token; refuses an export older than the database''s leases; returns how many leases; the extension owner, superusers and roles granted EXECUTE only';

-- The installing role runs the move: a trusted extension's functions
-- belong to the bootstrap superuser, so the role that created the
-- extension gets EXECUTE (with the grant option, to pass it on); where it
-- owns them (the psql script), the grant changes nothing.
DO $dlock$
DECLARE
	-- dlock_sql_caller(): the session's current role, not the superuser
	-- that CREATE EXTENSION runs a trusted extension's script as.
	installer pg_catalog.name := coalesce(nullif(pg_catalog.current_setting('role'), 'none'),
										  session_user)::pg_catalog.name;
BEGIN
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s, %s TO %I WITH GRANT OPTION',
							  '@extschema@.dlock_export()'::pg_catalog.regprocedure,
							  '@extschema@.dlock_import(pg_catalog.jsonb, pg_catalog.bool)'::pg_catalog.regprocedure,
							  installer);
END
$dlock$;
