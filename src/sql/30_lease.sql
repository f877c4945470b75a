-- Copyright (c) 2026, the dlock developers
--
-- 30_lease.sql: the leases of the SQL edition (issue 26; docs/editions.md
-- says what differs from the C edition and why).
--
-- Locks, in the order a call takes them (10_schema.sql has the tables):
--   1. the queue row of the name, FOR UPDATE: the head of the queue, only
--      while an acquire waits (40_wait.sql);
--   2. the lease row, FOR SHARE: a true check, assert or fence (the check
--      protection), to the end of the (sub)transaction that took it; FOR
--      UPDATE: a hand-over, which so waits for every checker;
--   3. the expiry row, FOR NO KEY UPDATE (an UPDATE): a renewal, a release,
--      an owner's renewal; FOR UPDATE: a hand-over;
--   4. the jump table (SHARE UPDATE EXCLUSIVE, 20_token.sql), only from a
--      jump's read of the counter to its setval.
-- A renewal or release touches only the expiry row, so it waits for no
-- checker and no waiting acquirer (they lock the lease row, or wait for the
-- queue row); a checker never waits for a renewal or a waiting acquirer
-- (FOR SHARE on a row whose other lockers share it, or are only waiting,
-- is granted at once: heapam.c, heap_lock_tuple, takes the tuple lock only
-- to sleep).  Row locks belong to the (sub)transaction that took them: they
-- are released at its end, or by ROLLBACK TO SAVEPOINT, never by a portal.
-- A lock taken and found useless cannot be given back in SQL, so every
-- lock that an acquire may find useless is taken inside its one exception
-- block (40_wait.sql), which a busy answer rolls back.
--
-- Who the caller is: the session's current role (SET ROLE's, else the
-- session user), not current_user, which is the tables' owner in these
-- SECURITY DEFINER functions (docs/editions.md).

-- The calling session's role.  SET ROLE keeps the role's name: if that
-- name no longer names a role (renamed since), refuse rather than guess.
CREATE FUNCTION @extschema@.dlock_sql_caller()
RETURNS pg_catalog.oid
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $dlock$
DECLARE
	setname pg_catalog.text := coalesce(NULLIF(pg_catalog.current_setting('role'), 'none'), SESSION_USER);
	-- to_regrole of the quoted name: exactly that name, or NULL (a syscache
	-- lookup, not a query of the pg_roles view).
	caller pg_catalog.oid := pg_catalog.to_regrole(pg_catalog.quote_ident(setname));
BEGIN
	IF caller IS NULL THEN
		RAISE EXCEPTION 'role "%" of this session does not exist', setname
			USING ERRCODE = '42501',
				  HINT = 'The role was renamed or dropped after SET ROLE: run SET ROLE again.';
	END IF;
	RETURN caller;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_caller() IS
	'internal: the role dlock acts for: the session''s current role (SET ROLE, else the session user), also inside SECURITY DEFINER functions';

-- Argument checks: the C edition's messages and SQLSTATEs (src/args.c).
CREATE FUNCTION @extschema@.dlock_sql_check_name(name pg_catalog.text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $dlock$
BEGIN
	IF name IS NULL THEN
		RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = '22004';
	ELSIF pg_catalog.octet_length(name) = 0 THEN
		RAISE EXCEPTION 'lock name must not be empty' USING ERRCODE = '22023';
	ELSIF pg_catalog.octet_length(name) > 255 THEN
		RAISE EXCEPTION 'lock name is too long' USING ERRCODE = '22023',
			DETAIL = pg_catalog.format('A lock name has at most 255 bytes; this one has %s.', pg_catalog.octet_length(name));
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_check_name(pg_catalog.text) IS
	'internal: refuse a NULL (22004), empty or over 255 bytes (22023) lock name';

CREATE FUNCTION @extschema@.dlock_sql_check_token(token pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $dlock$
BEGIN
	IF token IS NULL THEN
		RAISE EXCEPTION 'argument "token" must not be null' USING ERRCODE = '22004';
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_check_token(pg_catalog.int8) IS
	'internal: refuse a NULL token (22004)';

-- An interval's nominal length in microseconds (24-hour days, 30-day
-- months, as interval comparison counts them), exact.
CREATE FUNCTION @extschema@.dlock_sql_nominal_us(span pg_catalog.interval)
RETURNS pg_catalog.numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $dlock$
SELECT (EXTRACT(year FROM span) * 12 + EXTRACT(month FROM span))
		   * 2592000000000
	   + EXTRACT(day FROM span) * 86400000000
	   + EXTRACT(epoch FROM span - pg_catalog.date_trunc('day', span))
		   * 1000000
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_nominal_us(pg_catalog.interval) IS
	'internal: the nominal length of an interval in microseconds (a day is 24 hours, a month 30 days)';

-- The expiry now + ttl, after the checks of the C edition's DlockExpiryArg.
-- Parts that could not be added to the clock at all are out of range
-- before the sum is tried (a ttl's parts beyond a thousand years).
CREATE FUNCTION @extschema@.dlock_sql_expiry(ttl pg_catalog.interval, now pg_catalog.timestamptz)
RETURNS pg_catalog.timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $dlock$
DECLARE
	max_ttl pg_catalog.int4 := (SELECT s.max_ttl FROM @extschema@.dlock_sql_settings AS s);
	nominal pg_catalog.numeric;
	expires_at pg_catalog.timestamptz;
BEGIN
	IF ttl IS NULL THEN
		RAISE EXCEPTION 'argument "ttl" must not be null' USING ERRCODE = '22004';
	ELSIF NOT pg_catalog.isfinite(ttl) THEN
		RAISE EXCEPTION 'ttl must be finite' USING ERRCODE = '22023';
	ELSIF pg_catalog.abs(EXTRACT(year FROM ttl)) > 1000
		  OR pg_catalog.abs(EXTRACT(day FROM ttl)) > 365250
		  OR pg_catalog.abs(EXTRACT(epoch FROM ttl - pg_catalog.date_trunc('day', ttl)))
			 > 31557600000 THEN
		RAISE EXCEPTION 'ttl is out of range' USING ERRCODE = '22023';
	END IF;
	expires_at := now + ttl;
	nominal := @extschema@.dlock_sql_nominal_us(ttl);
	IF nominal <= 0 OR expires_at <= now THEN
		RAISE EXCEPTION 'ttl must be positive' USING ERRCODE = '22023';
	ELSIF nominal > max_ttl::pg_catalog.numeric * 1000000
		  OR expires_at - now >
			 pg_catalog.make_interval(secs => max_ttl +
					CASE WHEN EXTRACT(day FROM ttl) <> 0
							  OR EXTRACT(month FROM ttl) <> 0
							  OR EXTRACT(year FROM ttl) <> 0
						 THEN 3600 ELSE 0 END) THEN
		RAISE EXCEPTION 'ttl exceeds the maximum of % seconds', max_ttl USING ERRCODE = '22023',
			HINT = 'The maximum is set by the column max_ttl of the table dlock_sql_settings.';
	END IF;
	RETURN expires_at;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_expiry(pg_catalog.interval, pg_catalog.timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_expiry(pg_catalog.interval, pg_catalog.timestamptz) IS
	'internal: now + ttl after checking ttl (22004 NULL, 22023 infinite, out of range, not positive, above max_ttl)';

-- A duration argument (wait, older_than) in microseconds, cut to a century.
CREATE FUNCTION @extschema@.dlock_sql_duration_us(span pg_catalog.interval, what pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $dlock$
DECLARE
	us pg_catalog.numeric;
BEGIN
	IF span IS NULL THEN
		RAISE EXCEPTION 'argument "%" must not be null', what USING ERRCODE = '22004';
	ELSIF NOT pg_catalog.isfinite(span) THEN
		RAISE EXCEPTION 'argument "%" must be finite', what USING ERRCODE = '22023';
	END IF;
	us := @extschema@.dlock_sql_nominal_us(span);
	IF us < 0 THEN
		RAISE EXCEPTION 'argument "%" must not be negative', what USING ERRCODE = '22023';
	END IF;
	RETURN LEAST(us, 3155760000000000)::pg_catalog.int8;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_duration_us(pg_catalog.interval, pg_catalog.text) IS
	'internal: a wait or older_than argument in microseconds (22004 NULL, 22023 infinite or negative), cut to a century';

CREATE FUNCTION @extschema@.dlock_sql_check_owner(owner pg_catalog.text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $dlock$
BEGIN
	IF pg_catalog.octet_length(owner) = 0 THEN
		RAISE EXCEPTION 'owner must not be empty' USING ERRCODE = '22023',
			HINT = 'Pass NULL for an anonymous holder.';
	ELSIF pg_catalog.octet_length(owner) > 255 THEN
		RAISE EXCEPTION 'owner is too long' USING ERRCODE = '22023',
			DETAIL = pg_catalog.format('An owner has at most 255 bytes; this one has %s.', pg_catalog.octet_length(owner));
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_check_owner(pg_catalog.text) IS
	'internal: refuse an empty or over 255 bytes owner label (22023); NULL is an anonymous holder';

-- 25006 on a hot standby and in a read-only transaction (every call but
-- dlock_remaining takes a row lock or writes).
CREATE FUNCTION @extschema@.dlock_sql_writable(what pg_catalog.text)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $dlock$
BEGIN
	IF pg_catalog.pg_is_in_recovery() THEN
		RAISE EXCEPTION 'cannot execute % during recovery', what USING ERRCODE = '25006';
	ELSIF pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
		RAISE EXCEPTION 'cannot execute % in a read-only transaction', what USING ERRCODE = '25006';
	END IF;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_writable(pg_catalog.text) IS
	'internal: refuse a call on a hot standby or in a read-only transaction (25006)';

-- PREPARE TRANSACTION refuses a transaction that opened a temporary
-- relation (0A000, XACT_FLAGS_ACCESSEDTEMPNAMESPACE, set by relation_open):
-- every call that locks or writes opens the session's dlock_sql_prepare
-- table first.  pg_relation_size only opens the relation, whatever it is
-- (a relation of that name the session made itself included): it runs no
-- code of anybody's.
CREATE FUNCTION @extschema@.dlock_sql_prepare_table()
RETURNS pg_catalog.regclass
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	CREATE TEMPORARY TABLE dlock_sql_prepare ();
	RETURN pg_catalog.to_regclass('pg_temp.dlock_sql_prepare');
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_prepare_table() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_prepare_table() IS
	'internal: create the session''s temporary table dlock_sql_prepare (dlock_sql_no_prepare opens it)';

-- A SQL function, inlined into its callers' PERFORM: no PL/pgSQL call.
-- coalesce evaluates its second argument only when the first is NULL.
CREATE FUNCTION @extschema@.dlock_sql_no_prepare()
RETURNS pg_catalog.int8
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $dlock$
SELECT pg_catalog.pg_relation_size(coalesce(pg_catalog.to_regclass('pg_temp.dlock_sql_prepare'),
											@extschema@.dlock_sql_prepare_table()))
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_no_prepare() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_no_prepare() IS
	'internal: open a temporary table, so that PREPARE TRANSACTION refuses the calling transaction (0A000)';

-- The holder role of a lease row (the identity rule, docs/editions.md): by
-- OID while the row was written in this cluster (system identifier, where
-- readable) and for this counter (its relfilenode: a restore or a
-- re-created counter differs), else by name; NULL if it no longer exists.
CREATE FUNCTION @extschema@.dlock_sql_holder(role pg_catalog.name, role_oid pg_catalog.oid,
	role_system_identifier pg_catalog.int8, role_counter_relfilenode pg_catalog.oid)
RETURNS pg_catalog.oid
LANGUAGE plpgsql STABLE PARALLEL SAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	sysid pg_catalog.int8;
BEGIN
	-- The role named role has the OID role_oid: both rules name it, in any
	-- history (a lookup in the role cache, no query, no control file).
	IF pg_catalog.to_regrole(pg_catalog.quote_ident(role)) = role_oid THEN
		RETURN role_oid;
	END IF;
	-- Its own statement: a plan that names pg_control_system() checks the
	-- privilege when it starts, whether it calls it or not.
	IF pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE') THEN
		SELECT c.system_identifier INTO sysid FROM pg_catalog.pg_control_system() AS c;
	END IF;
	IF role_counter_relfilenode = pg_catalog.pg_relation_filenode('@extschema@.dlock_token_seq'::pg_catalog.regclass)
	   AND role_system_identifier IS NOT DISTINCT FROM sysid THEN
		RETURN (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.oid = role_oid);
	END IF;
	RETURN (SELECT r.oid FROM pg_catalog.pg_roles AS r WHERE r.rolname = role);
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_holder(pg_catalog.name, pg_catalog.oid, pg_catalog.int8, pg_catalog.oid) IS
	'internal: the holder role of a dlock_lease row (by OID in the history that recorded it, else by name), or NULL if it no longer exists';

-- May role act for holder (NULL: a role that no longer exists)?
-- PL/pgSQL, not SQL: the common case is one simple expression, without
-- the executor that the subquery of the other case would need.
CREATE FUNCTION @extschema@.dlock_sql_acts_for(role pg_catalog.oid, holder pg_catalog.oid)
RETURNS pg_catalog.bool
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $dlock$
BEGIN
	IF holder IS NOT NULL THEN
		RETURN coalesce(pg_catalog.pg_has_role(role, holder, 'USAGE'), false);
	END IF;
	RETURN coalesce((SELECT r.rolsuper FROM pg_catalog.pg_roles AS r WHERE r.oid = role), false);
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_acts_for(pg_catalog.oid, pg_catalog.oid) IS
	'internal: may role act for the holder role (a member of it, or a superuser)';

-- 42501 for a caller that may not act for the holder (src/lease.c).
CREATE FUNCTION @extschema@.dlock_sql_deny(name pg_catalog.text, holder pg_catalog.oid, action pg_catalog.text)
RETURNS void
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $dlock$
DECLARE
	rolname pg_catalog.name := (SELECT r.rolname FROM pg_catalog.pg_roles AS r WHERE r.oid = holder);
BEGIN
	RAISE EXCEPTION 'permission denied to % lock "%"', action, name
		USING ERRCODE = '42501',
			  DETAIL = CASE WHEN rolname IS NULL THEN 'The lease is held by a role that no longer exists.'
							WHEN action = 'check'
							THEN pg_catalog.format('The lease is held by role "%s"; only that role and its members may vouch for its token.', rolname)
							ELSE pg_catalog.format('The lease is held by role "%s".', rolname) END;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_deny(pg_catalog.text, pg_catalog.oid, pg_catalog.text) IS
	'internal: raise 42501 for a role that may not release, renew or check a lease';

-- Did a transaction that this transaction's snapshot does not see commit
-- xmax (the xmax of a row version the snapshot reads)?  Only asked under
-- REPEATABLE READ and SERIALIZABLE, whose snapshot cannot see it.
CREATE FUNCTION @extschema@.dlock_sql_changed(x pg_catalog.xid)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $dlock$
DECLARE
	snap pg_catalog.pg_snapshot := pg_catalog.pg_current_snapshot();
	nxt pg_catalog.int8 := pg_catalog.pg_snapshot_xmax(snap)::pg_catalog.text::pg_catalog.int8;
	full8 pg_catalog.xid8;
BEGIN
	IF x::pg_catalog.text = '0' THEN
		RETURN false;
	END IF;
	full8 := (nxt - ((nxt % 4294967296
				- x::pg_catalog.text::pg_catalog.int8 + 4294967296)
				% 4294967296))::pg_catalog.text::pg_catalog.xid8;
	RETURN NOT pg_catalog.pg_visible_in_snapshot(full8, snap)
		AND pg_catalog.pg_xact_status(full8) = 'committed';
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_changed(pg_catalog.xid) IS
	'internal: did a transaction invisible to this transaction''s snapshot commit xid x';

-- REPEATABLE READ and SERIALIZABLE: name has no lease row in this
-- transaction's snapshot; if one was created since (its queue row comes
-- with it, dlock_sql_write_new), raise PostgreSQL's 40001 rather than
-- answer on the snapshot: an INSERT ... ON CONFLICT DO NOTHING meets a
-- row that the snapshot cannot see (nodeModifyTable.c,
-- ExecCheckTupleVisible).  Else it leaves the name's queue row, which
-- dlock_cleanup removes.  A queue row older than the snapshot (a waiter
-- made it while the name had no lease row) hides a lease created since.
CREATE FUNCTION @extschema@.dlock_sql_unseen(name pg_catalog.text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	IF pg_catalog.current_setting('transaction_isolation') <> 'read committed' THEN
		INSERT INTO @extschema@.dlock_sql_queue VALUES ($1) ON CONFLICT DO NOTHING;
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_unseen(pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_unseen(pg_catalog.text) IS
	'internal: raise 40001 for a name whose lease was created after this REPEATABLE READ or SERIALIZABLE transaction''s snapshot';

-- The state of a lease as the statement's snapshot (READ COMMITTED: the
-- latest committed) shows it.  Under REPEATABLE READ or SERIALIZABLE,
-- a lease that changed since the transaction's snapshot raises 40001 when
-- strict (acquire), or sets changed (check).  Every change (renewal,
-- release, hand-over) updates the expiry row, so its xmax tells; the lease
-- row's would not: a committed check leaves its xid there as a locker.
CREATE FUNCTION @extschema@.dlock_sql_look(name pg_catalog.text, strict pg_catalog.bool,
	OUT present pg_catalog.bool, OUT token pg_catalog.int8, OUT owner pg_catalog.text,
	OUT holder pg_catalog.oid, OUT expires_at pg_catalog.timestamptz,
	OUT released_at pg_catalog.timestamptz, OUT held pg_catalog.bool, OUT changed pg_catalog.bool)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	lx pg_catalog.xid;
	ex pg_catalog.xid;
	r record;
BEGIN
	SELECT l.token, l.owner, l.role, l.role_oid, l.role_system_identifier, l.role_counter_relfilenode,
		   e.expires_at, e.released_at, l.xmax AS lx, e.xmax AS ex
	  INTO r
	  FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
	 WHERE l.name = $1;
	present := r.token IS NOT NULL;
	token := r.token;
	owner := r.owner;
	expires_at := r.expires_at;
	released_at := r.released_at;
	held := present AND r.released_at IS NULL AND r.expires_at > pg_catalog.clock_timestamp();
	-- Every caller asks for the holder only of a held lease.
	IF held THEN
		holder := @extschema@.dlock_sql_holder(r.role, r.role_oid, r.role_system_identifier, r.role_counter_relfilenode);
	END IF;
	changed := present
		AND pg_catalog.current_setting('transaction_isolation') <> 'read committed'
		AND @extschema@.dlock_sql_changed(r.ex);
	IF changed AND strict THEN
		RAISE EXCEPTION 'could not serialize access due to concurrent update of lease "%"', $1
			USING ERRCODE = '40001',
				  DETAIL = 'The lease changed after this transaction''s snapshot was taken; dlock_acquire cannot see the change in it.',
				  HINT = 'Retry the transaction, or call dlock_acquire in a READ COMMITTED transaction.';
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_look(pg_catalog.text, pg_catalog.bool) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_look(pg_catalog.text, pg_catalog.bool) IS
	'internal: the lease of name as the statement''s snapshot shows it, with its holder role while held';

-- Raise LK001 for a token that does not hold the lease, saying why (the C
-- edition's FenceReject).  SECURITY DEFINER, executable by PUBLIC: the
-- fence (60_fence.sql) raises it too.
CREATE FUNCTION @extschema@.dlock_sql_stale(name pg_catalog.text, token pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	r record;
BEGIN
	SELECT l.token, e.released_at IS NOT NULL AS released,
		   l.role, l.role_oid, l.role_system_identifier, l.role_counter_relfilenode INTO r
	  FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
	 WHERE l.name = $1;
	-- Why, only to the holder role: to anybody else "newer" against "never
	-- issued" would tell the order of its token and the lease's, and so the
	-- lease's token by bisection (as in the C edition, fence.c).
	RAISE EXCEPTION 'stale fencing token % for lock "%"', $2, $1
		USING ERRCODE = 'LK001',
			  DETAIL = CASE WHEN r.token IS NULL THEN 'The lock has never been acquired.'
							WHEN NOT @extschema@.dlock_sql_acts_for(@extschema@.dlock_sql_caller(),
									@extschema@.dlock_sql_holder(r.role, r.role_oid, r.role_system_identifier,
																 r.role_counter_relfilenode))
							THEN 'The token does not hold the lease, whose holder is another role.'
							WHEN r.token > $2 THEN 'The lock has since been acquired with a newer token.'
							WHEN r.token < $2 THEN 'This token was never issued for this lock.'
							WHEN r.released THEN 'The lease was released.'
							ELSE 'The lease expired.' END;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_stale(pg_catalog.text, pg_catalog.int8) IS
	'internal (dlock_assert, dlock_fence): raise SQLSTATE LK001 for a token that does not hold the lease of name, with the reason as the detail';

-- dlock_check's work, for the calling session's role: true and the check
-- protection (FOR SHARE on the lease row, to the end of the (sub)transaction),
-- or false.  The fence (60_fence.sql) calls it for every row it checks.
-- After the check protection is granted, READ COMMITTED: is the lease
-- still held by token, read now?  The lock may have been granted after a
-- revoke (which holds the lease row FOR UPDATE, then marks the expiry row
-- released) committed since the locking statement's snapshot; that
-- statement read the expiry row as its snapshot shows it (a row it does
-- not lock is not read again).  A new statement's snapshot shows the
-- revoke.  Under REPEATABLE READ the revoke's new lease row version makes
-- the lock raise 40001 instead (72_operators.sql).
CREATE FUNCTION @extschema@.dlock_sql_still_held(name pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $dlock$
SELECT pg_catalog.current_setting('transaction_isolation') <> 'read committed'
	OR EXISTS (SELECT FROM @extschema@.dlock_expiry AS e
				WHERE e.name = $1 AND e.token = $2 AND e.released_at IS NULL
				  AND e.expires_at > pg_catalog.clock_timestamp())
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_still_held(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_still_held(pg_catalog.text, pg_catalog.int8) IS
	'internal (dlock_sql_protect): in READ COMMITTED, whether token still holds the lease on name, read after the check protection was granted';

CREATE FUNCTION @extschema@.dlock_sql_protect(name pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	r record;
	waited pg_catalog.bool := false;
	holder pg_catalog.oid;
BEGIN
	-- The common case in one statement: the lease held by token, its
	-- holder the role its row names by both OID and name (so both identity
	-- rules agree, as in dlock_sql_holder), the session's role a member of
	-- it (or a superuser); then the check protection, and the transaction
	-- marked unpreparable (the target list is computed only for the row
	-- that passes, before it is locked).  Anything else, or a row SKIP
	-- LOCKED passes over, goes the long way below, which decides again.
	PERFORM @extschema@.dlock_sql_no_prepare()
	   FROM @extschema@.dlock_lease AS l
	   JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
	  WHERE l.name = $1 AND l.token = $2 AND e.token = $2
		AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp()
		AND pg_catalog.to_regrole(pg_catalog.quote_ident(l.role)) = l.role_oid
		AND pg_catalog.pg_has_role(pg_catalog.to_regrole(pg_catalog.quote_ident(
				coalesce(NULLIF(pg_catalog.current_setting('role'), 'none'), SESSION_USER))), l.role_oid, 'USAGE')
	  FOR SHARE OF l SKIP LOCKED;
	IF FOUND THEN
		RETURN @extschema@.dlock_sql_still_held($1, $2);
	END IF;
	-- dlock_sql_look's read, without its call and its answers not needed
	-- here: the holder only for the token, changed only for a refusal.
	-- Expired as last committed while a renewal (or a release, a revoke, a
	-- hand-over) of it is in progress, whose transaction holds the expiry
	-- row: wait for it (FOR SHARE, in a subtransaction rolled back at
	-- once, bounded by the caller's lock_timeout only), then read again,
	-- once, as the C edition's check waits for the renewal's state lock
	-- (pin_grace_waiting_check.spec; sql_check_renewing.spec).  READ
	-- COMMITTED only: a later snapshot shows the outcome.
	LOOP
		SELECT l.token, l.role, l.role_oid, l.role_system_identifier, l.role_counter_relfilenode,
			   e.released_at, e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp() AS held,
			   e.xmax AS ex
		  INTO r
		  FROM @extschema@.dlock_lease AS l
		  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
		 WHERE l.name = $1;
		EXIT WHEN waited OR NOT (r.token = $2 AND r.released_at IS NULL AND NOT r.held
			AND pg_catalog.current_setting('transaction_isolation') = 'read committed'
			AND @extschema@.dlock_sql_xid_running(r.ex)) IS TRUE;
		BEGIN
			PERFORM FROM @extschema@.dlock_expiry AS e WHERE e.name = $1 FOR SHARE;
			RAISE EXCEPTION 'given back' USING ERRCODE = 'DLKBY';
		EXCEPTION
			WHEN SQLSTATE 'DLKBY' THEN
				NULL;
		END;
		waited := true;
	END LOOP;
	IF r.held IS NOT TRUE OR r.token <> $2 THEN
		IF r.token IS NULL THEN
			PERFORM @extschema@.dlock_sql_unseen($1);
		END IF;
		-- REPEATABLE READ: the snapshot's expiry passed, but a renewal may
		-- have moved it since.
		IF r.token = $2 AND r.released_at IS NULL
		   AND pg_catalog.current_setting('transaction_isolation') <> 'read committed'
		   AND @extschema@.dlock_sql_changed(r.ex) THEN
			RAISE EXCEPTION 'could not serialize access due to concurrent update of lease "%"', $1
				USING ERRCODE = '40001',
					  DETAIL = 'The lease expired in this transaction''s snapshot, and it was renewed or released since.',
					  HINT = 'Retry the transaction.';
		END IF;
		RETURN false;
	END IF;
	holder := @extschema@.dlock_sql_holder(r.role, r.role_oid, r.role_system_identifier, r.role_counter_relfilenode);
	IF NOT @extschema@.dlock_sql_acts_for(@extschema@.dlock_sql_caller(), holder) THEN
		PERFORM @extschema@.dlock_sql_deny($1, holder, 'check');
	END IF;
	PERFORM @extschema@.dlock_sql_no_prepare();
	-- The lock and the second look in one statement: the expiry row as
	-- this statement's snapshot shows it (a release or the expiry since
	-- the first look), the lease row locked only if that passes.  SKIP
	-- LOCKED: a row locked FOR UPDATE (a hand-over, a revoke) is waited
	-- for below, only if token still holds the lease.  A hand-over that
	-- committed since the snapshot made a new row version: the lock
	-- follows it and its token no longer matches (READ COMMITTED), or
	-- 40001 (REPEATABLE READ).  Once locked, no new token can be drawn
	-- for name until the (sub)transaction ends.
	PERFORM FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
	  WHERE l.name = $1 AND l.token = $2 AND e.token = $2
		AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp()
	  FOR SHARE OF l SKIP LOCKED;
	-- Or, skipped while token still holds the lease (a revoke in progress,
	-- or one giving the row back), after waiting for the row's locker, at
	-- most until the lease expires (72_operators.sql).
	RETURN (FOUND OR @extschema@.dlock_sql_locked_wait($1, $2)) AND @extschema@.dlock_sql_still_held($1, $2);
END
$dlock$;
GRANT EXECUTE ON FUNCTION @extschema@.dlock_sql_protect(pg_catalog.text, pg_catalog.int8) TO PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_protect(pg_catalog.text, pg_catalog.int8) IS
	'internal (dlock_check, dlock_assert, dlock_fence): true, with the check protection until the (sub)transaction ends, if token holds the unexpired lease on name and the session''s role may vouch for it';

-- The token dlock_assert declared for name in this transaction, or NULL.
-- A transaction-local setting: ROLLBACK TO SAVEPOINT forgets it, with the
-- lock it came with.  Any role can set it, so the fence checks a declared
-- token again (dlock_sql_protect) before it takes it.
CREATE FUNCTION @extschema@.dlock_sql_declared(name pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE sql STABLE PARALLEL SAFE
AS $dlock$
SELECT NULLIF(pg_catalog.current_setting('dlock_sql.declared_' OPERATOR(pg_catalog.||) pg_catalog.md5(name), true), '')::pg_catalog.int8
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_declared(pg_catalog.text) IS
	'internal (dlock_fence): the token dlock_assert declared for name in this transaction, or NULL';

CREATE FUNCTION @extschema@.dlock_check(
	name pg_catalog.text,
	token pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
BEGIN
	IF $1 IS NULL OR pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_name($1);
	END IF;
	IF $2 IS NULL THEN
		PERFORM @extschema@.dlock_sql_check_token($2);
	END IF;
	IF pg_catalog.pg_is_in_recovery() OR pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
		PERFORM @extschema@.dlock_sql_writable('dlock_check()');
	END IF;
	RETURN @extschema@.dlock_sql_protect($1, $2);
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_check(pg_catalog.text, pg_catalog.int8) IS
	'true if token holds the unexpired lease on name; the lease then cannot change hands until this transaction ends';

-- SECURITY INVOKER: the declaration is a setting of the caller's
-- transaction, which a function with a SET clause would undo on return.
CREATE FUNCTION @extschema@.dlock_assert(
	name pg_catalog.text,
	token pg_catalog.int8)
RETURNS pg_catalog.void
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
	IF $1 IS NULL OR pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_name($1);
	END IF;
	IF $2 IS NULL THEN
		PERFORM @extschema@.dlock_sql_check_token($2);
	END IF;
	IF pg_catalog.pg_is_in_recovery() OR pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
		PERFORM @extschema@.dlock_sql_writable('dlock_assert()');
	END IF;
	IF NOT @extschema@.dlock_sql_protect($1, $2) THEN
		PERFORM @extschema@.dlock_sql_stale($1, $2);
	END IF;
	PERFORM pg_catalog.set_config('dlock_sql.declared_' OPERATOR(pg_catalog.||) pg_catalog.md5($1), $2::pg_catalog.text, true);
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_assert(pg_catalog.text, pg_catalog.int8) IS
	'like dlock_check, but raise SQLSTATE LK001 (stale fencing token) instead of returning false; on success, declare token as this transaction''s token for name, which dlock_fence takes for writes that carry no new token';

CREATE FUNCTION @extschema@.dlock_remaining(
	name pg_catalog.text,
	token pg_catalog.int8)
RETURNS pg_catalog.interval
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	r record;
BEGIN
	IF $1 IS NULL OR pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_name($1);
	END IF;
	IF $2 IS NULL THEN
		PERFORM @extschema@.dlock_sql_check_token($2);
	END IF;
	IF pg_catalog.pg_is_in_recovery() THEN
		RAISE EXCEPTION 'cannot execute dlock_remaining() during recovery' USING ERRCODE = '25006';
	END IF;
	r := @extschema@.dlock_sql_look($1, false);
	IF NOT r.held OR r.token <> $2 THEN
		RETURN NULL;
	END IF;
	IF NOT @extschema@.dlock_sql_acts_for(@extschema@.dlock_sql_caller(), r.holder) THEN
		PERFORM @extschema@.dlock_sql_deny($1, r.holder, 'check');
	END IF;
	RETURN r.expires_at - pg_catalog.clock_timestamp();
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_remaining(pg_catalog.text, pg_catalog.int8) IS
	'the time left on the lease on name if token holds it unexpired, NULL otherwise (released, expired, taken over, never acquired); takes no lock that outlives the call';

-- The holder's own renewal: only the expiry row.  The UPDATE waits only for
-- another change of that row in progress (a renewal, a release, a hand-over
-- that found the lease free), never for a checker or a waiter.
CREATE FUNCTION @extschema@.dlock_sql_extend(name pg_catalog.text, token pg_catalog.int8, ttl pg_catalog.interval,
	by_owner pg_catalog.bool DEFAULT false)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	-- The counters are columns of the row (70_stats.sql).
	UPDATE @extschema@.dlock_expiry AS e
	   SET expires_at = @extschema@.dlock_sql_expiry($3, pg_catalog.clock_timestamp()),
		   renewals = e.renewals + CASE WHEN $4 THEN 0 ELSE 1 END,
		   owner_renewals = e.owner_renewals + CASE WHEN $4 THEN 1 ELSE 0 END,
		   pin_grace = (SELECT s.pin_grace FROM @extschema@.dlock_sql_settings AS s)
	 WHERE e.name = $1 AND e.token = $2
	   AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp();
	RETURN FOUND;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_extend(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.bool) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_extend(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.bool) IS
	'internal: move the expiry of the unexpired lease of token to now + ttl, counted as a renewal or (by_owner) an owner''s renewal; false if it is not held by token';

-- An owner's renewal by dlock_acquire (owner =>) outside the hand-over:
-- the expiry row locked without waiting (SKIP LOCKED: a renewal, release
-- or hand-over of another transaction that has not ended holds it), and
-- while it is locked, looked at again every poll_interval until deadline,
-- as the C edition's acquire waits at most wait.  true: renewed; false:
-- not held by token (any more), the caller takes the usual way; NULL:
-- still locked at the deadline (busy).  No lock wait, so no exception
-- block and no subtransaction.
CREATE FUNCTION @extschema@.dlock_sql_owner_extend(name pg_catalog.text, token pg_catalog.int8,
	ttl pg_catalog.interval, deadline pg_catalog.timestamptz)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	poll pg_catalog.interval;
BEGIN
	LOOP
		-- Locked only if still held by token: a busy answer after false
		-- (40_wait.sql) must not keep a lock on the row.
		PERFORM FROM @extschema@.dlock_expiry AS e
		  WHERE e.name = $1 AND e.token = $2
			AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp()
		  FOR NO KEY UPDATE SKIP LOCKED;
		IF FOUND THEN
			RETURN @extschema@.dlock_sql_extend($1, $2, $3, true);
		ELSIF NOT EXISTS (SELECT FROM @extschema@.dlock_expiry AS e
						   WHERE e.name = $1 AND e.token = $2
							 AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp()) THEN
			RETURN false;
		ELSIF pg_catalog.clock_timestamp() >= $4 THEN
			RETURN NULL;
		END IF;
		poll := coalesce(poll, (SELECT s.poll_interval FROM @extschema@.dlock_sql_settings AS s));
		PERFORM pg_catalog.pg_sleep(GREATEST(EXTRACT(epoch FROM LEAST(poll, $4 - pg_catalog.clock_timestamp())), 0)::pg_catalog.float8);
	END LOOP;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_owner_extend(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_owner_extend(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.timestamptz) IS
	'internal: an owner''s renewal by dlock_acquire, waiting for the expiry row at most until deadline (NULL: still locked then; false: not held by token)';

-- Find the lease held by token for a change by its holder: true, or false
-- (not held by token), or 42501 for a role that may not act for the holder.
CREATE FUNCTION @extschema@.dlock_sql_holder_call(lock pg_catalog.text, tok pg_catalog.int8, action pg_catalog.text,
	OUT present pg_catalog.bool, OUT token pg_catalog.int8, OUT owner pg_catalog.text,
	OUT holder pg_catalog.oid, OUT expires_at pg_catalog.timestamptz,
	OUT released_at pg_catalog.timestamptz, OUT held pg_catalog.bool, OUT changed pg_catalog.bool)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	r record;
BEGIN
	IF pg_catalog.pg_is_in_recovery() OR pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
		PERFORM @extschema@.dlock_sql_writable(pg_catalog.format('dlock_%s()', action));
	END IF;
	PERFORM @extschema@.dlock_sql_no_prepare();
	-- dlock_sql_look's read and answers, without its call; the holder
	-- only for the token's own lease.
	SELECT l.token, l.owner, l.role, l.role_oid, l.role_system_identifier, l.role_counter_relfilenode,
		   e.expires_at, e.released_at, e.xmax AS ex
	  INTO r
	  FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
	 WHERE l.name = lock;
	present := r.token IS NOT NULL;
	IF NOT present THEN
		PERFORM @extschema@.dlock_sql_unseen(lock);
	END IF;
	token := r.token;
	owner := r.owner;
	expires_at := r.expires_at;
	released_at := r.released_at;
	held := present AND r.released_at IS NULL AND r.expires_at > pg_catalog.clock_timestamp();
	changed := present
		AND pg_catalog.current_setting('transaction_isolation') <> 'read committed'
		AND @extschema@.dlock_sql_changed(r.ex);
	IF held AND token = tok THEN
		holder := @extschema@.dlock_sql_holder(r.role, r.role_oid, r.role_system_identifier, r.role_counter_relfilenode);
		IF NOT @extschema@.dlock_sql_acts_for(@extschema@.dlock_sql_caller(), holder) THEN
			PERFORM @extschema@.dlock_sql_deny(lock, holder, action);
		END IF;
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_holder_call(pg_catalog.text, pg_catalog.int8, pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_holder_call(pg_catalog.text, pg_catalog.int8, pg_catalog.text) IS
	'internal: the lease of name for a release or renewal by the holder of token (25006, 42501)';

CREATE FUNCTION @extschema@.dlock_release(
	name pg_catalog.text,
	token pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	r record;
BEGIN
	IF $1 IS NULL OR pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		IF $1 IS NULL OR pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_name($1);
	END IF;
	END IF;
	IF $2 IS NULL THEN
		PERFORM @extschema@.dlock_sql_check_token($2);
	END IF;
	r := @extschema@.dlock_sql_holder_call($1, $2, 'release');
	IF NOT r.held OR r.token <> $2 THEN
		RETURN false;
	END IF;
	UPDATE @extschema@.dlock_expiry AS e SET released_at = pg_catalog.clock_timestamp(), releases = e.releases + 1
	 WHERE e.name = $1 AND e.token = $2
	   AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp();
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	PERFORM @extschema@.dlock_sql_event($1, 'released', $2, r.owner);
	RETURN true;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_release(pg_catalog.text, pg_catalog.int8) IS
	'free the lease on name if token holds it; false if the lease had expired or changed hands';

CREATE FUNCTION @extschema@.dlock_sql_renew(name pg_catalog.text, token pg_catalog.int8, ttl pg_catalog.interval,
	lock_delay pg_catalog.interval)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	r record;
	h record;
BEGIN
	IF $1 IS NULL OR pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_name($1);
	END IF;
	IF $2 IS NULL THEN
		PERFORM @extschema@.dlock_sql_check_token($2);
	END IF;
	PERFORM @extschema@.dlock_sql_expiry($3, pg_catalog.clock_timestamp());
	h := @extschema@.dlock_sql_hold_args($3, NULL, $4);
	r := @extschema@.dlock_sql_holder_call($1, $2, 'renew');
	IF NOT r.held OR r.token <> $2 THEN
		RETURN false;
	END IF;
	IF NOT @extschema@.dlock_sql_extend($1, $2, $3) THEN
		RETURN false;
	END IF;
	PERFORM @extschema@.dlock_sql_hold_store($1, $2, NULL, h.lock_delay);
	RETURN true;
END
$dlock$;
GRANT EXECUTE ON FUNCTION @extschema@.dlock_sql_renew(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.interval) TO PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_renew(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.interval) IS
	'internal: the work of dlock_renew (which then makes the commit durable)';

CREATE FUNCTION @extschema@.dlock_renew(
	name pg_catalog.text,
	token pg_catalog.int8,
	ttl pg_catalog.interval,
	lock_delay pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
BEGIN
	IF @extschema@.dlock_sql_renew($1, $2, $3, $4) THEN
		-- A renewal lost in a crash or failover would end the lease early.
		PERFORM @extschema@.dlock_sql_durable();
		RETURN true;
	END IF;
	RETURN false;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_renew(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.interval) IS
	'extend the lease on name to now + ttl if token holds it unexpired; lock_delay (NULL: dlock_sql_settings.lock_delay) replaces the lease''s lock-delay';

-- Write a new lease of name for the caller, whose row had the token last
-- (NULL: a new name, whose lease row dlock_sql_take inserted with token 0
-- before the draw): the caller's role, the history hist (the identity
-- rule; dlock_sql_history(), computed once by the acquire).
CREATE FUNCTION @extschema@.dlock_sql_write_new(name pg_catalog.text, last pg_catalog.int8, token pg_catalog.int8,
	owner pg_catalog.text, caller pg_catalog.oid, now pg_catalog.timestamptz, expires_at pg_catalog.timestamptz,
	hist record, waited_us pg_catalog.int8 DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	-- caller exists: dlock_sql_caller found it in this statement.
	rolname pg_catalog.name := pg_catalog.pg_get_userbyid(caller);
BEGIN
	IF last IS NULL THEN
		UPDATE @extschema@.dlock_lease AS l SET token = $3 WHERE l.name = $1;
		INSERT INTO @extschema@.dlock_expiry AS e (name, token, expires_at, released_at, acquisitions,
												  waits, wait_us, wait_max_us, wait_max_at,
												  min_hold, lock_delay, pin_grace)
			SELECT $1, $3, $7, NULL, 1, CASE WHEN $9 IS NULL THEN 0 ELSE 1 END, coalesce($9, 0),
				   coalesce($9, 0), CASE WHEN $9 IS NOT NULL THEN $6 END,
				   NULL, NULLIF(s.lock_delay, '0'::pg_catalog.interval), s.pin_grace
			  FROM @extschema@.dlock_sql_settings AS s;
		-- The queue row comes with the lease row, committed before anyone
		-- waits: a waiter that had to insert it would wait for the
		-- inserting transaction, not in the row lock's queue (40_wait.sql).
		INSERT INTO @extschema@.dlock_sql_queue VALUES ($1) ON CONFLICT DO NOTHING;
		RETURN;
	END IF;
	UPDATE @extschema@.dlock_lease AS l
	   SET token = $3, owner = $4, role = rolname, role_oid = caller,
		   role_system_identifier = hist.system_identifier,
		   role_counter_relfilenode = hist.counter_relfilenode, acquired_at = $6
	 WHERE l.name = $1;
	-- The counters (70_stats.sql): a lease that expired without a release
	-- is lost, and taken over now.  A longest wait older than the name's
	-- reset is replaced.
	UPDATE @extschema@.dlock_expiry AS e
	   SET token = $3, expires_at = $7, released_at = NULL,
		   acquisitions = e.acquisitions + 1,
		   takeovers = e.takeovers + CASE WHEN e.released_at IS NULL THEN 1 ELSE 0 END,
		   lost = e.lost + CASE WHEN e.released_at IS NULL THEN 1 ELSE 0 END,
		   waits = e.waits + CASE WHEN $9 IS NULL THEN 0 ELSE 1 END,
		   wait_us = e.wait_us + coalesce($9, 0),
		   wait_max_us = CASE WHEN $9 IS NULL THEN e.wait_max_us
							  WHEN $9 > e.wait_max_us OR e.wait_max_at <= @extschema@.dlock_sql_stats_reset_at(e.name, e.stats_since)
							  THEN $9 ELSE e.wait_max_us END,
		   wait_max_at = CASE WHEN $9 IS NULL THEN e.wait_max_at
							  WHEN $9 > e.wait_max_us OR e.wait_max_at <= @extschema@.dlock_sql_stats_reset_at(e.name, e.stats_since)
							  THEN $6 ELSE e.wait_max_at END,
		   min_hold = NULL,
		   (lock_delay, pin_grace) = (SELECT NULLIF(s.lock_delay, '0'::pg_catalog.interval), s.pin_grace
										FROM @extschema@.dlock_sql_settings AS s)
	 WHERE e.name = $1;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_write_new(pg_catalog.text, pg_catalog.int8, pg_catalog.int8, pg_catalog.text, pg_catalog.oid, pg_catalog.timestamptz, pg_catalog.timestamptz, record, pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_write_new(pg_catalog.text, pg_catalog.int8, pg_catalog.int8, pg_catalog.text, pg_catalog.oid, pg_catalog.timestamptz, pg_catalog.timestamptz, record, pg_catalog.int8) IS
	'internal: write the rows of a new lease (insert for a new name, with its queue row; else update), counted (waited_us: how long the acquire waited, NULL if it did not)';

-- The hand-over, inside the exception block of the acquire (40_wait.sql):
-- lock the lease row (FOR UPDATE: waits for every checker), then the
-- expiry row (waits for a renewal or release in progress), decide on the
-- latest committed state, draw the token and write.  Busy after the locks
-- raises DLKBY, so that the block gives back every lock taken here.
-- nowait (wait => 0): SKIP LOCKED and NOWAIT instead of waiting.
CREATE FUNCTION @extschema@.dlock_sql_take(name pg_catalog.text, ttl pg_catalog.interval, owner pg_catalog.text,
	caller pg_catalog.oid, nowait pg_catalog.bool, waited_us pg_catalog.int8 DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	l record;
	e record;
	now pg_catalog.timestamptz;
	t pg_catalog.int8;
	hist record;
BEGIN
	IF nowait THEN
		SELECT x.* INTO l FROM @extschema@.dlock_lease AS x WHERE x.name = $1 FOR UPDATE SKIP LOCKED;
		IF l.name IS NULL AND EXISTS (SELECT FROM @extschema@.dlock_lease AS x WHERE x.name = $1) THEN
			RAISE EXCEPTION 'busy' USING ERRCODE = 'DLKBY';
		END IF;
		SELECT x.* INTO e FROM @extschema@.dlock_expiry AS x WHERE x.name = $1 FOR UPDATE NOWAIT;
	ELSE
		SELECT x.* INTO l FROM @extschema@.dlock_lease AS x WHERE x.name = $1 FOR UPDATE;
		SELECT x.* INTO e FROM @extschema@.dlock_expiry AS x WHERE x.name = $1 FOR UPDATE;
	END IF;
	now := pg_catalog.clock_timestamp();
	IF l.name IS NOT NULL AND e.released_at IS NULL AND e.expires_at > now THEN
		-- Held: the owner's own renewal, or someone came first.
		IF $3 IS NOT NULL AND l.owner = $3
		   AND @extschema@.dlock_sql_acts_for(caller, @extschema@.dlock_sql_holder(l.role, l.role_oid,
				l.role_system_identifier, l.role_counter_relfilenode))
		   AND @extschema@.dlock_sql_extend($1, l.token, $2, true) THEN
			RETURN l.token;
		END IF;
		RAISE EXCEPTION 'busy' USING ERRCODE = 'DLKBY';
	END IF;
	-- Not held, but within its minimum hold or lock-delay (72_operators.sql).
	IF l.name IS NOT NULL AND (e.min_hold IS NOT NULL OR e.lock_delay IS NOT NULL)
	   AND @extschema@.dlock_sql_available_at(l.acquired_at, e.expires_at, e.released_at,
											  e.min_hold, e.lock_delay) > now THEN
		RAISE EXCEPTION 'busy' USING ERRCODE = 'DLKBY';
	END IF;
	-- A new name's INSERT waits for another transaction that inserted the
	-- same name and has not ended (the unique index: a first acquire, or one
	-- after dlock_cleanup).  wait => 0 bounds that by lock_timeout's least
	-- step, 1 ms, whose 55P03 is busy; a waiting acquire is bounded by its
	-- deadline already (dlock_sql_head).
	IF nowait AND l.name IS NULL THEN
		PERFORM pg_catalog.set_config('lock_timeout', '1', true);
	END IF;
	-- The history once, for the draw and the row (each reads the control file).
	hist := @extschema@.dlock_sql_history();
	IF l.name IS NULL THEN
		-- A new name: claim it before the draw, so that an acquire that
		-- loses the race for it draws no token (the C edition's busy calls
		-- burn none).  The INSERT fails (23505) if another acquire
		-- inserted it meanwhile, and waits (bounded) for one that has not
		-- ended; either ends the block as busy (40_wait.sql).
		-- ON CONFLICT: under REPEATABLE READ and SERIALIZABLE a row that
		-- committed after the snapshot raises PostgreSQL's 40001 here
		-- (nodeModifyTable.c, ExecCheckTupleVisible) instead of a wrong
		-- busy answer.
		INSERT INTO @extschema@.dlock_lease
			VALUES ($1, 0, $3, pg_catalog.pg_get_userbyid(caller), caller, hist.system_identifier,
					hist.counter_relfilenode, now)
			ON CONFLICT DO NOTHING;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'busy' USING ERRCODE = 'DLKBY';
		END IF;
	END IF;
	t := @extschema@.dlock_sql_draw(coalesce(l.token, 0), hist);
	-- A ttl without days, months or years that dlock_sql_acquire let
	-- through passes every check at any now; any other is checked again.
	PERFORM @extschema@.dlock_sql_write_new($1, l.token, t, $3, caller, now,
		CASE WHEN pg_catalog.date_trunc('day', $2) = '0'::pg_catalog.interval THEN now + $2
			 ELSE @extschema@.dlock_sql_expiry($2, now) END, hist, $6);
	PERFORM @extschema@.dlock_sql_event($1, CASE WHEN l.name IS NULL OR e.released_at IS NOT NULL
												THEN 'acquired' ELSE 'taken_over' END, t, $3);
	RETURN t;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_take(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.oid, pg_catalog.bool, pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_take(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.oid, pg_catalog.bool, pg_catalog.int8) IS
	'internal: hand the lease of name to the caller if it is free under the row locks (raises DLKBY if not)';

-- dlock_cleanup: rows of leases not held and idle for older_than; each is
-- locked without waiting (a checker's or a hand-over's lock skips it), so
-- an acquire never waits for a cleanup beyond its own wait, and a cleanup
-- never waits for anything.  The counters of the rows it deletes go to
-- dlock_stats_retired in the same transaction (70_stats.sql): one cleanup
-- (or reset) at a time; another one's open transaction makes it delete
-- nothing, at once.  EXECUTE may be granted to an application role.
CREATE FUNCTION @extschema@.dlock_cleanup(
	older_than pg_catalog.interval DEFAULT '1 day',
	max_rows pg_catalog.int4 DEFAULT 1000)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	cutoff pg_catalog.timestamptz;
	n pg_catalog.int8;
BEGIN
	cutoff := pg_catalog.clock_timestamp() -
		@extschema@.dlock_sql_duration_us($1, 'older_than') * '1 microsecond'::pg_catalog.interval;
	IF $2 IS NULL THEN
		RAISE EXCEPTION 'argument "max_rows" must not be null' USING ERRCODE = '22004';
	ELSIF $2 < 1 THEN
		RAISE EXCEPTION 'argument "max_rows" must be at least 1' USING ERRCODE = '22023';
	END IF;
	PERFORM @extschema@.dlock_sql_writable('dlock_cleanup()');
	PERFORM @extschema@.dlock_sql_no_prepare();
	IF NOT @extschema@.dlock_sql_retire_lock() THEN
		RETURN 0;
	END IF;
	WITH idle AS (
		SELECT l.name FROM @extschema@.dlock_lease AS l
		  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
		 WHERE coalesce(e.released_at, e.expires_at) < cutoff
		   AND NOT (e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp())
		   -- not within a minimum hold or a lock-delay (72_operators.sql)
		   AND @extschema@.dlock_sql_available_at(l.acquired_at, e.expires_at, e.released_at,
												  e.min_hold, e.lock_delay) <= pg_catalog.clock_timestamp()
		 LIMIT $2
		   FOR UPDATE OF l, e SKIP LOCKED
	), gone AS (
		DELETE FROM @extschema@.dlock_expiry AS e USING idle
		 WHERE e.name = idle.name RETURNING e.*
	), lease AS (
		DELETE FROM @extschema@.dlock_lease AS l USING gone
		 WHERE l.name = gone.name
	), base AS (
		DELETE FROM @extschema@.dlock_sql_stats_base AS b USING gone
		 WHERE b.name = gone.name RETURNING b.*, b.stats_since = gone.stats_since AS valid
	), s AS (
		-- A lease deleted that had expired without a release is lost.
		SELECT pg_catalog.count(*) AS n,
			   coalesce(pg_catalog.sum(g.acquisitions - coalesce(b.acquisitions, 0)), 0) AS acquisitions,
			   coalesce(pg_catalog.sum(g.owner_renewals - coalesce(b.owner_renewals, 0)), 0) AS owner_renewals,
			   coalesce(pg_catalog.sum(g.renewals - coalesce(b.renewals, 0)), 0) AS renewals,
			   coalesce(pg_catalog.sum(g.releases - coalesce(b.releases, 0)), 0) AS releases,
			   coalesce(pg_catalog.sum(g.takeovers - coalesce(b.takeovers, 0)), 0) AS takeovers,
			   coalesce(pg_catalog.sum(g.lost - coalesce(b.lost, 0)
									   + CASE WHEN g.released_at IS NULL THEN 1 ELSE 0 END), 0) AS lost,
			   coalesce(pg_catalog.sum(g.waits - coalesce(b.waits, 0)), 0) AS waits,
			   coalesce(pg_catalog.sum(g.wait_us - coalesce(b.wait_us, 0)), 0) AS wait_us,
			   coalesce(pg_catalog.max(CASE WHEN b.stats_reset IS NULL OR g.wait_max_at > b.stats_reset
											THEN g.wait_max_us ELSE 0 END), 0) AS wait_max_us
		  FROM gone AS g LEFT JOIN base AS b ON b.name = g.name AND b.valid
	)
	UPDATE @extschema@.dlock_stats_retired AS r
	   SET acquisitions = r.acquisitions + s.acquisitions, owner_renewals = r.owner_renewals + s.owner_renewals,
		   renewals = r.renewals + s.renewals, releases = r.releases + s.releases,
		   takeovers = r.takeovers + s.takeovers, lost = r.lost + s.lost, waits = r.waits + s.waits,
		   wait_us = r.wait_us + s.wait_us, wait_max_us = GREATEST(r.wait_max_us, s.wait_max_us)
	  FROM s
	RETURNING s.n INTO n;
	-- Queues nobody waits in (a waiter's lock skips its row).
	DELETE FROM @extschema@.dlock_sql_queue AS q
	 WHERE q.name = ANY (ARRAY(
		SELECT x.name FROM @extschema@.dlock_sql_queue AS x
		 WHERE NOT EXISTS (SELECT FROM @extschema@.dlock_lease AS l WHERE l.name = x.name)
		 LIMIT $2 FOR UPDATE SKIP LOCKED));
	RETURN n;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_cleanup(pg_catalog.interval, pg_catalog.int4) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_cleanup(pg_catalog.interval, pg_catalog.int4) IS
	'delete up to max_rows rows of leases that are not held and were released or expired more than older_than ago; returns how many; future tokens are not lowered';

CREATE VIEW @extschema@.dlock_leases AS
	SELECT l.name,
		   l.owner,
		   CASE WHEN pg_catalog.pg_has_role(h.holder, 'USAGE') THEN l.token END AS token,
		   l.acquired_at,
		   e.expires_at,
		   (e.released_at IS NULL AND
			e.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()) AS held,
		   pg_catalog.pg_get_userbyid(h.holder) AS role,
		   e.released_at,
		   e.min_hold,
		   e.lock_delay,
		   CASE WHEN NOT (e.released_at IS NULL AND
						  e.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp())
				THEN @extschema@.dlock_sql_available_at(l.acquired_at, e.expires_at, e.released_at,
														e.min_hold, e.lock_delay) END AS available_at
	  FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name OPERATOR(pg_catalog.=) l.name
	 CROSS JOIN LATERAL (SELECT @extschema@.dlock_sql_holder(l.role, l.role_oid, l.role_system_identifier,
															 l.role_counter_relfilenode) AS holder) AS h;
COMMENT ON VIEW @extschema@.dlock_leases IS
	'every lock name dlock knows, its last token, and whether it is held now (by the server clock at the moment of the query)';
COMMENT ON COLUMN @extschema@.dlock_leases.name IS 'the lock name, 1 to 255 bytes';
COMMENT ON COLUMN @extschema@.dlock_leases.owner IS 'owner label of the last acquisition; NULL when anonymous';
COMMENT ON COLUMN @extschema@.dlock_leases.token IS 'fencing token of the last acquisition; NULL unless the current role is (a member of) the holder role';
COMMENT ON COLUMN @extschema@.dlock_leases.acquired_at IS 'when the last acquisition happened (server clock)';
COMMENT ON COLUMN @extschema@.dlock_leases.expires_at IS 'when the lease expires or expired (server clock)';
COMMENT ON COLUMN @extschema@.dlock_leases.held IS 'true while the lease is unreleased and unexpired at the moment of the query';
COMMENT ON COLUMN @extschema@.dlock_leases.role IS 'the holder role, by its current name; NULL if it no longer exists';
COMMENT ON COLUMN @extschema@.dlock_leases.released_at IS 'when the lease was released; NULL if it was not';
COMMENT ON COLUMN @extschema@.dlock_leases.min_hold IS
	'minimum hold of the last acquisition; NULL: none';
COMMENT ON COLUMN @extschema@.dlock_leases.lock_delay IS
	'lock-delay after an expiry without a release, fixed by the last acquire or renew; NULL: none';
COMMENT ON COLUMN @extschema@.dlock_leases.available_at IS
	'when the name can next be taken (minimum hold after an early release or expiry, lock-delay after an expiry); NULL while the lease is held';
GRANT SELECT ON @extschema@.dlock_leases TO PUBLIC;
