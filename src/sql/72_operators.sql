-- Copyright (c) 2026, the dlock developers
--
-- 72_operators.sql: the operators' controls of the SQL edition (issue 27
-- items 4 to 7, /work shapes of docs/reference.md): the minimum hold and
-- the lock-delay of a lease (stored in its dlock_expiry row, which a
-- renewal may change), and dlock_revoke.
--
-- When a lease that is not held can change hands is
-- dlock_sql_available_at (10_schema.sql): the hand-over (dlock_sql_take)
-- refuses earlier, the head of a queue (dlock_sql_head) sleeps until
-- then, dlock_cleanup keeps the rows until then, dlock_leases shows it.

-- The minimum hold and the lock-delay of an acquire or a renewal, checked
-- (22023: negative, infinite, a minimum hold above the ttl, a lock-delay
-- above max_ttl) and stored as NULL for none.  A NULL lock_delay is the
-- setting dlock_sql_settings.lock_delay.
CREATE FUNCTION @extschema@.dlock_sql_hold_args(ttl pg_catalog.interval, want_min_hold pg_catalog.interval,
	want_lock_delay pg_catalog.interval, OUT min_hold pg_catalog.interval, OUT lock_delay pg_catalog.interval)
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $dlock$
DECLARE
	s record;
BEGIN
	SELECT x.max_ttl, x.lock_delay INTO s FROM @extschema@.dlock_sql_settings AS x;
	-- The C edition's words (args.c): a duration argument's, then these.
	IF $2 IS NOT NULL AND @extschema@.dlock_sql_duration_us($2, 'min_hold') > 0 THEN
		IF @extschema@.dlock_sql_nominal_us($2) > @extschema@.dlock_sql_nominal_us($1) THEN
			RAISE EXCEPTION 'min_hold must not be longer than ttl' USING ERRCODE = '22023';
		END IF;
		-- Stored as its nominal length, a plain time ('1 day' as
		-- 24:00:00), as the C edition stores it: a mixed-sign interval
		-- ('1200 mons -35999 days', one nominal day) added on the calendar
		-- was 525 days (attack3 F4).
		min_hold := pg_catalog.make_interval(secs => (@extschema@.dlock_sql_nominal_us($2) / 1000000)::pg_catalog.float8);
	END IF;
	IF $3 IS NOT NULL THEN
		PERFORM @extschema@.dlock_sql_duration_us($3, 'lock_delay');
	END IF;
	-- The setting is finite and not negative (its CHECK constraint).
	lock_delay := coalesce($3, s.lock_delay);
	IF @extschema@.dlock_sql_nominal_us(lock_delay) > s.max_ttl::pg_catalog.numeric * 1000000 THEN
		RAISE EXCEPTION 'lock_delay exceeds the maximum of % seconds', s.max_ttl USING ERRCODE = '22023',
			HINT = 'The maximum is set by the column max_ttl of the table dlock_sql_settings.';
	END IF;
	lock_delay := NULLIF(pg_catalog.make_interval(secs => (@extschema@.dlock_sql_nominal_us(lock_delay) / 1000000)::pg_catalog.float8),
						 '0'::pg_catalog.interval);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_hold_args(pg_catalog.interval, pg_catalog.interval, pg_catalog.interval) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_hold_args(pg_catalog.interval, pg_catalog.interval, pg_catalog.interval) IS
	'internal: the checked minimum hold and lock-delay of an acquire or renewal, NULL for none (22023)';

-- Store them with the lease that token holds, after the acquire or renewal
-- wrote its rows (a new lease's are NULL: dlock_sql_write_new); a new
-- value only, so that the usual call writes nothing more.  A NULL
-- min_hold keeps the lease's (an owner's renewal passes NULL).
CREATE FUNCTION @extschema@.dlock_sql_hold_store(name pg_catalog.text, token pg_catalog.int8,
	min_hold pg_catalog.interval, lock_delay pg_catalog.interval)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	UPDATE @extschema@.dlock_expiry AS e
	   SET min_hold = coalesce($3, e.min_hold), lock_delay = $4
	 WHERE e.name = $1 AND e.token = $2
	   AND (e.min_hold IS DISTINCT FROM coalesce($3, e.min_hold) OR e.lock_delay IS DISTINCT FROM $4);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_hold_store(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.interval) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_hold_store(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.interval) IS
	'internal: record the minimum hold and lock-delay with the lease of token';

-- When the lease of name, not held, can be taken again (NULL: no row).
CREATE FUNCTION @extschema@.dlock_sql_available(name pg_catalog.text)
RETURNS pg_catalog.timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
AS $dlock$
SELECT @extschema@.dlock_sql_available_at(l.acquired_at, e.expires_at, e.released_at, e.min_hold, e.lock_delay)
  FROM @extschema@.dlock_lease AS l
  JOIN @extschema@.dlock_expiry AS e ON e.name OPERATOR(pg_catalog.=) l.name
 WHERE l.name OPERATOR(pg_catalog.=) $1
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_available(pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_available(pg_catalog.text) IS
	'internal: when the lease of name, not held, can be taken again';

-- dlock_acquire with an owner, a minimum hold or a lock-delay: the
-- arguments checked first (nothing changes on bad input), then the acquire,
-- then what it took stored with the lease.
CREATE FUNCTION @extschema@.dlock_sql_acquire_hold(name pg_catalog.text, ttl pg_catalog.interval,
	wait pg_catalog.interval, owner pg_catalog.text, min_hold pg_catalog.interval, lock_delay pg_catalog.interval)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	h record;
	t pg_catalog.int8;
	last pg_catalog.int8;
	fresh pg_catalog.bool;
BEGIN
	PERFORM @extschema@.dlock_sql_check_name($1);
	PERFORM @extschema@.dlock_sql_expiry($2, pg_catalog.clock_timestamp());
	h := @extschema@.dlock_sql_hold_args($2, $5, $6);
	-- The token the name had: an acquire that returns it renewed the
	-- owner's lease (a new lease draws a new token), which keeps the
	-- minimum hold it was acquired with (a11 finding 6).
	SELECT e.token INTO last FROM @extschema@.dlock_expiry AS e WHERE e.name = $1;
	t := @extschema@.dlock_sql_acquire($1, $2, $3, $4);
	IF t IS NOT NULL THEN
		-- A new token is this call's only where this transaction wrote the
		-- lease row (dlock_sql_write_new; an owner's renewal writes only
		-- the expiry row): the lease may have changed hands during the
		-- wait, and the call then renewed the new holder's lease, whose
		-- minimum hold stays (attack3 F1).  A row written by another
		-- transaction that is still in progress is not visible here.
		fresh := t IS DISTINCT FROM last
			AND (SELECT @extschema@.dlock_sql_xid_running(l.xmin) FROM @extschema@.dlock_lease AS l
				  WHERE l.name = $1 AND l.token = t);
		PERFORM @extschema@.dlock_sql_hold_store($1, t, CASE WHEN fresh THEN h.min_hold END, h.lock_delay);
	END IF;
	RETURN t;
END
$dlock$;
GRANT EXECUTE ON FUNCTION @extschema@.dlock_sql_acquire_hold(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) TO PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_acquire_hold(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
	'internal: the work of dlock_acquire with an owner, a minimum hold or a lock-delay (which then makes the commit durable)';

-- The backends whose transaction holds a row lock on the lease row of
-- name (the check protection; also a hand-over or a revoke in progress),
-- this one excepted: the lockers of its xmax (dlock_sql_lockers, 70_stats.sql:
-- an XID or a MultiXact, read both ways; a subtransaction's XID mapped to
-- its backend), each holding a row-level lock on dlock_lease
-- (RowShareLock, which FOR SHARE and FOR UPDATE take).  docs/editions.md,
-- "Revoke, minimum hold, lock-delay and pinning".
CREATE FUNCTION @extschema@.dlock_sql_pinners(name pg_catalog.text)
RETURNS pg_catalog.int4[]
LANGUAGE sql VOLATILE PARALLEL UNSAFE
AS $dlock$
SELECT coalesce(pg_catalog.array_agg(DISTINCT k.pid ORDER BY k.pid), '{}')
  FROM @extschema@.dlock_lease AS l
 CROSS JOIN LATERAL @extschema@.dlock_sql_lockers(l.xmax, '@extschema@.dlock_lease'::pg_catalog.regclass) AS k
 WHERE l.name OPERATOR(pg_catalog.=) $1 AND k.pid OPERATOR(pg_catalog.<>) pg_catalog.pg_backend_pid()
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_pinners(pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_pinners(pg_catalog.text) IS
	'internal: the backends (other than this one) whose transaction holds a row lock on the lease row of name';

-- Whether another transaction holds the lease row of name in a mode that
-- excludes a share lock: a revoke that is ending the lease (from its lock
-- to its commit), a hand-over taking it, a cleanup deleting it.  Such a
-- transaction holds no check protection to end, and while it holds the
-- row nobody else does (a check's share lock waits for it): bounded
-- pinning and a forced revoke then end nobody (a13 findings 3 and 4).
-- Asked by trying the check's own lock (FOR SHARE NOWAIT) in a
-- subtransaction that is rolled back at once: a share lock is granted
-- beside share lockers without waiting (heapam.c, heap_lock_tuple), and
-- only the tables' owner can take a stronger one, so no other role can
-- pass for a revoke.  A row updated since a REPEATABLE READ snapshot (40001)
-- counts as held: it is being changed.
CREATE FUNCTION @extschema@.dlock_sql_ending(name pg_catalog.text)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	BEGIN
		PERFORM FROM @extschema@.dlock_lease AS l WHERE l.name = $1 FOR SHARE NOWAIT;
		RAISE EXCEPTION 'given back' USING ERRCODE = 'DLKBY';
	EXCEPTION
		WHEN lock_not_available OR serialization_failure THEN
			RETURN true;
		WHEN SQLSTATE 'DLKBY' THEN
			RETURN false;
	END;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_ending(pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_ending(pg_catalog.text) IS
	'internal (dlock_revoke, bounded pinning): whether another transaction holds the lease row of name in a mode that excludes the check protection (a revoke ending the lease, a hand-over, a cleanup)';

-- End the transactions of pids (issue 27 item 7's rules): cancel a running
-- statement; terminate a session idle in its transaction (which ignores a
-- cancel), and any session that a cancel did not free (again: a cancel
-- inside a savepoint leaves the outer transaction's lock).  Only sessions
-- the tables' owner may signal (pg_signal_backend's rules: its own roles'
-- with USAGE, any non-superuser's as a member of pg_signal_backend,
-- superusers' only as a superuser); the others are left alone.  Returns
-- the pids signalled; logs each at LOG.
-- Of pids, those whose sessions the tables' owner may signal
-- (pg_signal_backend's rules, as above), in order.
CREATE FUNCTION @extschema@.dlock_sql_signallable(pids pg_catalog.int4[])
RETURNS pg_catalog.int4[]
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $dlock$
SELECT ARRAY(
	SELECT a.pid
	  FROM pg_catalog.pg_stat_activity AS a
	  JOIN pg_catalog.pg_roles AS r ON r.oid OPERATOR(pg_catalog.=) a.usesysid
	 WHERE a.pid OPERATOR(pg_catalog.=) ANY ($1)
	   AND ((SELECT m.rolsuper FROM pg_catalog.pg_roles AS m WHERE m.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
			OR (NOT r.rolsuper AND (pg_catalog.pg_has_role(CURRENT_USER, 'pg_signal_backend', 'USAGE')
									OR pg_catalog.pg_has_role(CURRENT_USER, a.usesysid, 'USAGE'))))
	 ORDER BY a.pid)
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_signallable(pg_catalog.int4[]) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_signallable(pg_catalog.int4[]) IS
	'internal: of pids, the sessions the tables'' owner may signal (pg_signal_backend''s rules)';

CREATE FUNCTION @extschema@.dlock_sql_end_pinners(name pg_catalog.text, pids pg_catalog.int4[],
	terminate pg_catalog.bool)
RETURNS pg_catalog.int4[]
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	b record;
	ended pg_catalog.int4[] := '{}';
BEGIN
	FOR b IN
		SELECT a.pid, a.usename, a.state
		  FROM pg_catalog.pg_stat_activity AS a
		 WHERE a.pid = ANY (@extschema@.dlock_sql_signallable($2))
		 ORDER BY a.pid
	LOOP
		IF NOT $3 AND b.state IS DISTINCT FROM 'idle in transaction'
		   AND b.state IS DISTINCT FROM 'idle in transaction (aborted)' THEN
			PERFORM pg_catalog.pg_cancel_backend(b.pid);
			RAISE LOG 'dlock: cancelled the statement of process % (role %) holding the check protection of lock "%"',
				b.pid, b.usename, $1;
		ELSE
			PERFORM pg_catalog.pg_terminate_backend(b.pid);
			RAISE LOG 'dlock: terminated process % (role %) holding the check protection of lock "%"',
				b.pid, b.usename, $1;
		END IF;
		ended := ended || b.pid;
	END LOOP;
	RETURN ended;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_end_pinners(pg_catalog.text, pg_catalog.int4[], pg_catalog.bool) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_end_pinners(pg_catalog.text, pg_catalog.int4[], pg_catalog.bool) IS
	'internal: cancel or terminate the transactions of pids that hold the check protection of name, where the tables'' owner may signal them';

-- A revoke's writes, under its locks: the lease marked released, without
-- its minimum hold and lock-delay; and a new version of the lease row (its
-- token unchanged), so that a check whose REPEATABLE READ or SERIALIZABLE
-- snapshot is older than the revoke, which reads the lease unreleased,
-- raises 40001 from its FOR SHARE on that row instead of passing (a11
-- finding 1); that row's trigger dlock_sql_durable_revoke makes the commit
-- durable (finding 8).
CREATE FUNCTION @extschema@.dlock_sql_revoke_write(name pg_catalog.text)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	now pg_catalog.timestamptz := pg_catalog.clock_timestamp();
BEGIN
	-- Counted as a release, or, past its expiry, as lost (70_stats.sql; the
	-- C edition's LeaseSetRevoked); a released lease was counted already.
	UPDATE @extschema@.dlock_expiry AS x
	   SET released_at = coalesce(x.released_at, now), min_hold = NULL, lock_delay = NULL,
		   releases = x.releases + CASE WHEN x.released_at IS NULL AND x.expires_at > now THEN 1 ELSE 0 END,
		   lost = x.lost + CASE WHEN x.released_at IS NULL AND x.expires_at <= now THEN 1 ELSE 0 END
	 WHERE x.name = $1;
	UPDATE @extschema@.dlock_lease AS x SET token = x.token WHERE x.name = $1;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_revoke_write(pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_revoke_write(pg_catalog.text) IS
	'internal (dlock_revoke): mark the lease of name released and write a new version of its lease row';

-- A check (dlock_sql_protect) whose lock on the lease row of name was
-- skipped (SKIP LOCKED: another transaction holds the row FOR UPDATE, or
-- has updated it) while token, read again now, holds the unexpired lease:
-- wait for that transaction, whoever it is, with FOR SHARE (the check's
-- own lock) without SKIP LOCKED, bounded by the lease's expiry, and say
-- whether token still holds the lease by the row the lock is granted on.
-- A revoke that gives the row back (a renewal in progress, nothing to
-- revoke, its wait over) or rolls back leaves the lease held: true; one
-- that commits: false (READ COMMITTED: its new row version, which
-- dlock_sql_still_held then reads as released; REPEATABLE READ: 40001),
-- as the C edition's check waits for the revoke's lock.  A hand-over
-- holds the row of a held lease only for the moment it takes to find it
-- held, or takes a lease that expired meanwhile (the wait ends at that
-- expiry: false).  Asking who holds the lock instead (the revokers among
-- the row's lockers) raced with a revoke giving the row back in between:
-- false for a lease still held.  The caller's own shorter lock_timeout
-- raises its 55P03.  Only on this path: a subtransaction, with an XID.
CREATE FUNCTION @extschema@.dlock_sql_locked_wait(name pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	saved pg_catalog.text := pg_catalog.current_setting('lock_timeout');
	until pg_catalog.timestamptz;
	got pg_catalog.bool;
BEGIN
	SELECT e.expires_at INTO until FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
	 WHERE l.name = $1 AND l.token = $2 AND e.token = $2
	   AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp();
	IF until IS NULL THEN
		RETURN false;
	END IF;
	BEGIN
		-- SHOW's form of the caller's lock_timeout is valid interval input.
		PERFORM @extschema@.dlock_sql_bound(until,
			pg_catalog.round(EXTRACT(epoch FROM saved::pg_catalog.interval) * 1000)::pg_catalog.int8);
		PERFORM FROM @extschema@.dlock_lease AS l
		  JOIN @extschema@.dlock_expiry AS e ON e.name = l.name
		  WHERE l.name = $1 AND l.token = $2 AND e.token = $2
			AND e.released_at IS NULL AND e.expires_at > pg_catalog.clock_timestamp()
		  FOR SHARE OF l;
		got := FOUND;
	EXCEPTION
		WHEN lock_not_available THEN
			IF pg_catalog.clock_timestamp() < until THEN
				RAISE;
			END IF;
			got := false;
	END;
	PERFORM pg_catalog.set_config('lock_timeout', saved, true);
	RETURN got;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_locked_wait(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_locked_wait(pg_catalog.text, pg_catalog.int8) IS
	'internal (dlock_sql_protect): wait, at most until the lease expires, for the transaction that holds the lease row of name locked while token holds the lease, and take the check protection if token still holds it then';

-- The locks of a revoke, the hand-over's, bounded by deadline.  locked:
-- false if the lease row's check protection outlasted slice or deadline
-- (nothing held then); true once it held the lease row FOR UPDATE and the expiry
-- row FOR UPDATE, and revoke_token the token they show, if it is to be
-- revoked (held by token, if not NULL, and not released and available
-- already); else NULL, and the locks are given back: no check fails for a
-- revoke that does not end the lease.  While it waits for the lease row,
-- the holder's checks go on passing (a share lock beside share lockers is
-- granted without waiting for an exclusive request that sleeps: heapam.c,
-- heap_lock_tuple).  The lease row is never held while it waits for the
-- expiry row: if a renewal or release holds that, the lease row is given
-- back, that transaction waited for (FOR SHARE on the expiry row, given
-- back at once) and the locks tried again; 55P03 once deadline has
-- passed.  Each try that locks a row is a subtransaction with an XID.
CREATE FUNCTION @extschema@.dlock_sql_revoke_lock(name pg_catalog.text, token pg_catalog.int8,
	deadline pg_catalog.timestamptz, slice pg_catalog.timestamptz, OUT locked pg_catalog.bool,
	OUT revoke_token pg_catalog.int8, OUT owner pg_catalog.text)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	saved pg_catalog.text := pg_catalog.current_setting('lock_timeout');
	busy pg_catalog.bool;
	l record;
	e record;
BEGIN
	LOOP
		locked := false;
		busy := false;
		BEGIN
			-- The lease row is waited for until slice only (at most
			-- deadline): the caller then reads its lockers again.
			PERFORM @extschema@.dlock_sql_bound(LEAST($3, $4), 0);
			SELECT x.token, x.owner, x.acquired_at INTO l FROM @extschema@.dlock_lease AS x
			 WHERE x.name = $1 FOR UPDATE;
			locked := true;
			SELECT x.expires_at, x.released_at, x.min_hold, x.lock_delay INTO e FROM @extschema@.dlock_expiry AS x
			 WHERE x.name = $1 FOR UPDATE NOWAIT;
			IF l.token IS NULL OR l.token <> coalesce($2, l.token)
			   OR (e.released_at IS NOT NULL AND @extschema@.dlock_sql_available_at(l.acquired_at, e.expires_at,
					e.released_at, e.min_hold, e.lock_delay) <= pg_catalog.clock_timestamp()) THEN
				RAISE EXCEPTION 'nothing to revoke' USING ERRCODE = 'DLKBY';
			END IF;
			revoke_token := l.token;
			owner := l.owner;
		EXCEPTION
			WHEN lock_not_available THEN
				busy := locked;
				locked := false;
			WHEN SQLSTATE 'DLKBY' THEN
				NULL;
		END;
		PERFORM pg_catalog.set_config('lock_timeout', saved, true);
		IF NOT busy THEN
			RETURN;
		END IF;
		IF pg_catalog.clock_timestamp() < $3 THEN
			BEGIN
				PERFORM @extschema@.dlock_sql_bound($3, 0);
				PERFORM FROM @extschema@.dlock_expiry AS x WHERE x.name = $1 FOR SHARE;
				RAISE EXCEPTION 'given back' USING ERRCODE = 'DLKBY';
			EXCEPTION
				WHEN lock_not_available THEN
					NULL;
				WHEN SQLSTATE 'DLKBY' THEN
					busy := false;
			END;
			PERFORM pg_catalog.set_config('lock_timeout', saved, true);
		END IF;
		IF busy OR pg_catalog.clock_timestamp() >= $3 THEN
			RAISE EXCEPTION 'could not revoke lock "%": a renewal or release of it is in progress', $1
				USING ERRCODE = '55P03',
					  HINT = 'Another transaction changed the lease and has not ended; revoke again once it has.';
		END IF;
	END LOOP;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_revoke_lock(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_revoke_lock(pg_catalog.text, pg_catalog.int8, pg_catalog.timestamptz, pg_catalog.timestamptz) IS
	'internal (dlock_revoke): take the hand-over''s locks on the lease of name by deadline (waiting for the lease row until slice) and keep them only for a lease to revoke, never holding the lease row while a renewal or release holds the expiry row';

-- Whether a revoke of name (held by token, if not NULL) has nothing to
-- end, read without a lock: no lease, another token, or a lease released
-- and past its minimum hold (dlock_sql_revoke_lock's rule, which it
-- applies again under the lock).  dlock_revoke asks before it waits and
-- before each round, so that a checker of a released lease, which keeps
-- the lease row's lock from it, does not make it wait (attack3 F5).
CREATE FUNCTION @extschema@.dlock_sql_revoke_nothing(name pg_catalog.text, token pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
AS $dlock$
SELECT NOT EXISTS (
	SELECT FROM @extschema@.dlock_lease AS l
	  JOIN @extschema@.dlock_expiry AS e ON e.name OPERATOR(pg_catalog.=) l.name
	 WHERE l.name OPERATOR(pg_catalog.=) $1
	   AND l.token OPERATOR(pg_catalog.=) coalesce($2, l.token)
	   AND (e.released_at IS NULL
			OR @extschema@.dlock_sql_available_at(l.acquired_at, e.expires_at, e.released_at, e.min_hold,
												  e.lock_delay) OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()))
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_revoke_nothing(pg_catalog.text, pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_revoke_nothing(pg_catalog.text, pg_catalog.int8) IS
	'internal (dlock_revoke): whether the lease of name (held by token, if not NULL) is no lease to revoke: none, another token, or released and past its minimum hold';

-- dlock_revoke: wait, as a hand-over does (FOR UPDATE on the lease row,
-- bounded by lock_timeout: dlock_sql_revoke_lock), until no transaction
-- holds the lease row's check protection, ending them with force once wait
-- is over (a cancel or, idle in transaction, a terminate; then a
-- terminate; each round gets the wait again, at least a second); then,
-- under the hand-over's locks, mark the lease released, without its
-- minimum hold and lock-delay.  With force, only transactions that hold
-- the check protection are ended: none while another transaction holds the
-- lease row to end or take it (a revoke writing, a hand-over:
-- dlock_sql_ending), none once token no longer holds the name (a13
-- finding 4, as the C edition's revoke.c).
CREATE FUNCTION @extschema@.dlock_revoke(
	name pg_catalog.text,
	token pg_catalog.int8 DEFAULT NULL,
	wait pg_catalog.interval DEFAULT '5 s',
	force pg_catalog.bool DEFAULT false,
	OUT revoked_token pg_catalog.int8,
	OUT waited_for pg_catalog.int4[],
	OUT ended pg_catalog.int4[])
RETURNS record
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	deadline pg_catalog.timestamptz;
	span pg_catalog.interval;
	pins pg_catalog.int4[];
	rounds pg_catalog.int4 := 0;
	ending pg_catalog.bool;
	r record;
	-- The token to end: without one, the lease's when the revoke begins,
	-- so that a lease a waiter takes during the revoke (once the pinners it
	-- ended are gone) is another token's (the C edition's rule, attack5 F7).
	tok pg_catalog.int8 := $2;
BEGIN
	PERFORM @extschema@.dlock_sql_check_name($1);
	PERFORM @extschema@.dlock_sql_duration_us($3, 'wait');
	IF $4 IS NULL THEN
		RAISE EXCEPTION 'argument "force" must not be null' USING ERRCODE = '22004';
	END IF;
	PERFORM @extschema@.dlock_sql_writable('dlock_revoke()');
	PERFORM @extschema@.dlock_sql_no_prepare();
	-- wait by its nominal length, as it was checked (attack3 F4's note).
	span := @extschema@.dlock_sql_duration_us($3, 'wait') * '1 microsecond'::pg_catalog.interval;
	deadline := pg_catalog.clock_timestamp() + span;
	waited_for := '{}';
	ended := '{}';
	IF tok IS NULL THEN
		SELECT l.token INTO tok FROM @extschema@.dlock_lease AS l WHERE l.name OPERATOR(pg_catalog.=) $1;
		IF tok IS NULL THEN
			RETURN;
		END IF;
	END IF;
	LOOP
		-- A token that does not hold the name now, or a lease released
		-- and past its minimum hold: nothing to revoke, and no lock that
		-- would make the holder's checks skip its row meanwhile (read
		-- again under the lock below); after a wait, nobody to end (the
		-- name has another holder, or the lease was released: attack3 F5).
		IF @extschema@.dlock_sql_revoke_nothing($1, tok) THEN
			RETURN;
		END IF;
		pins := @extschema@.dlock_sql_pinners($1);
		waited_for := ARRAY(SELECT DISTINCT p FROM pg_catalog.unnest(waited_for || pins) AS p ORDER BY p);
		-- The lease row's lock is waited for 100 ms at a time, and its
		-- lockers read again in between: a transaction that takes the
		-- check protection during the wait (a share lock is granted beside
		-- the others while the revoke sleeps) is waited for too, and named.
		r := @extschema@.dlock_sql_revoke_lock($1, tok, deadline,
			pg_catalog.clock_timestamp() + '100 ms'::pg_catalog.interval);
		EXIT WHEN r.locked;
		CONTINUE WHEN pg_catalog.clock_timestamp() < deadline;
		IF @extschema@.dlock_sql_revoke_nothing($1, tok) THEN
			RETURN;
		END IF;
		ending := @extschema@.dlock_sql_ending($1);
		pins := CASE WHEN ending THEN '{}' ELSE @extschema@.dlock_sql_pinners($1) END;
		IF NOT $4 OR rounds >= 2 THEN
			-- The C edition's words (revoke.c); with force, which the C
			-- edition never gives up, the processes left.
			RAISE EXCEPTION 'could not revoke lease "%"', $1
				USING ERRCODE = '55P03',
					  DETAIL = CASE WHEN ending THEN 'A transaction that changes the lease (an acquire or a revoke in progress) is still open; force ends only the transactions that hold its check protection.'
									WHEN pins = '{}' THEN 'No session could be told to hold it: the lease row''s lock is recorded as a number that is both a transaction ID and a MultiXact ID in use, or as a subtransaction''s that one of several sessions may have made.'
									ELSE 'Other transactions still hold its check protection after the wait.' END,
					  HINT = CASE WHEN ending THEN 'Revoke again once that transaction has ended.'
								  WHEN $4 THEN pg_catalog.format('Processes %s could not be ended: the tables'' owner may not signal them, or they did not end in time.', pins)
								  ELSE 'Wait longer, or pass force => true to end them.' END;
		END IF;
		ended := ARRAY(SELECT DISTINCT p FROM pg_catalog.unnest(ended ||
			@extschema@.dlock_sql_end_pinners($1, pins, rounds > 0)) AS p ORDER BY p);
		rounds := rounds + 1;
		deadline := pg_catalog.clock_timestamp() + GREATEST(span, '1 s'::pg_catalog.interval);
	END LOOP;
	IF r.revoke_token IS NULL THEN
		RETURN;
	END IF;
	PERFORM @extschema@.dlock_sql_revoke_write($1);
	revoked_token := r.revoke_token;
	PERFORM @extschema@.dlock_sql_event($1, 'revoked', r.revoke_token, r.owner);
	RAISE LOG 'dlock: revoked lock "%" token %; waited for processes %, ended %', $1, r.revoke_token, waited_for, ended;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_revoke(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.bool) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_revoke(pg_catalog.text, pg_catalog.int8, pg_catalog.interval, pg_catalog.bool) IS
	'end the lease on name (held by token, if not NULL) once every transaction holding its check protection has ended, waiting up to wait (with force, cancelling or terminating them); skips minimum hold and lock-delay; revoked_token is NULL when nothing was revoked';

-- A revoke's commit is durable, as the C edition's is: its rewrite of the
-- lease row (the only update of that row that keeps its token) queues
-- dlock_sql_durable_commit, as a new token or expiry does (20_token.sql).
CREATE CONSTRAINT TRIGGER dlock_sql_durable_revoke
	AFTER UPDATE ON @extschema@.dlock_lease
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW WHEN (OLD.token = NEW.token)
	EXECUTE FUNCTION @extschema@.dlock_sql_durable_commit();
COMMENT ON TRIGGER dlock_sql_durable_revoke ON @extschema@.dlock_lease IS
	'dlock (SQL edition): a revoke makes the transaction commit synchronously, whatever synchronous_commit is at the call';

-- Bounded pinning (issue 27 item 7), for the head of a queue that found
-- the lease of name free: with a pin grace stored with the lease, pinned
-- true while a transaction holds its check protection (the head then polls
-- instead of waiting in the row lock, so that it can act), and past the
-- lease's expiry or release plus the grace, end those transactions (the
-- rules of dlock_sql_end_pinners; at most every 100 ms), but none while a
-- transaction holds the row to end or take the lease (dlock_sql_ending: a
-- revoke, which reads in the row as a pinner would).  Without a pin
-- grace, false: the hand-over waits in the row lock as in 1.1.  The lock
-- taken here (FOR UPDATE) is the hand-over's own, in its exception block.
-- When this wait last signalled is signalled, a local variable of the
-- head's polling loop (dlock_sql_head) passed in and given back as
-- signalled_at: nothing the caller can write (attack3 F2: the setting
-- dlock_sql.pin_signalled, keyed by an XID the caller could predict, made
-- the first signal a terminate), so the first signal is a cancel.
CREATE FUNCTION @extschema@.dlock_sql_pinned(name pg_catalog.text, signalled pg_catalog.timestamptz,
	OUT pinned pg_catalog.bool, OUT signalled_at pg_catalog.timestamptz)
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
-- The LOG lines of dlock_sql_end_pinners go to the server log only, not to
-- the waiter's client (the C edition's LOG_SERVER_ONLY); nothing here sets
-- a setting that must outlive the call (the SET clause restores them all).
SET client_min_messages = warning
AS $dlock$
DECLARE
	e record;
	pins pg_catalog.int4[];
BEGIN
	signalled_at := $2;
	pinned := false;
	SELECT x.pin_grace, coalesce(x.released_at, x.expires_at) + x.pin_grace AS pin_at INTO e
	  FROM @extschema@.dlock_expiry AS x WHERE x.name = $1;
	IF e.pin_grace IS NULL THEN
		RETURN;
	END IF;
	PERFORM FROM @extschema@.dlock_lease AS l WHERE l.name = $1 FOR UPDATE SKIP LOCKED;
	IF FOUND OR NOT EXISTS (SELECT FROM @extschema@.dlock_lease AS l WHERE l.name = $1) THEN
		RETURN;
	END IF;
	pinned := true;
	IF pg_catalog.clock_timestamp() < e.pin_at THEN
		RETURN;
	END IF;
	-- At most one round per 100 ms.  dlock_sql_ending's probe uses a
	-- subtransaction XID where it gets its lock: asked only before a round
	-- that signals somebody, never while the pinners are sessions the
	-- tables' owner may not signal (which can hold the lease for the rest
	-- of the wait).
	IF $2 IS NULL OR pg_catalog.clock_timestamp() >= $2 + '100 ms'::pg_catalog.interval THEN
		pins := @extschema@.dlock_sql_pinners($1);
		IF pins <> '{}' THEN
			IF @extschema@.dlock_sql_signallable(pins) <> '{}' AND NOT @extschema@.dlock_sql_ending($1) THEN
				-- A cancel first, then a terminate (a session's state may
				-- be unreadable to the tables' owner, as with revoke).
				PERFORM @extschema@.dlock_sql_end_pinners($1, pins, $2 IS NOT NULL);
			END IF;
			signalled_at := pg_catalog.clock_timestamp();
		END IF;
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_pinned(pg_catalog.text, pg_catalog.timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_pinned(pg_catalog.text, pg_catalog.timestamptz) IS
	'internal: pinned true while a transaction holds the check protection of the free lease of name under a pin grace; past the grace, end it (signalled: when this wait last signalled, given back as signalled_at)';
