-- Copyright (c) 2026, the dlock developers
--
-- 40_wait.sql: dlock_acquire and its waiting, in the SQL edition.
--
-- At most one poller per name.  An acquire that must wait locks the name's
-- queue row FOR UPDATE (dlock_sql_queue, created with the lease row):
-- the lock manager queues the others behind it, first come, first served,
-- asleep.  The holder of that lock, the head, looks at the lease every
-- poll_interval (dlock_sql_settings; nothing in SQL can wake a sleeping
-- backend when a lease is released) and takes it once it is free.
--
-- Every lock an acquire takes that its answer may make useless is taken
-- inside its one exception block (dlock_sql_acquire_locked), so a busy
-- answer gives them all back: the block's subtransaction is the only one
-- the call starts, and it gets an XID only when it locks or writes a row
-- (once, however long the head polls).  The block ends with:
--   - a token (the subtransaction commits: its locks stay until the
--     transaction ends, the queue row's too, which only makes the next
--     waiter move up when the new holder commits);
--   - 55P03 from the lock_timeout that bounds each wait by the deadline:
--     NULL; a 55P03 before the deadline is the caller's own lock_timeout,
--     raised as such;
--   - DLKBY (dlock's own, never seen outside): busy, NULL;
--   - 23505: another acquire created the same new name meanwhile: NULL;
--   - anything else (57014 statement_timeout or cancel, 40P01, 40001) is
--     raised.

-- Set lock_timeout (SET LOCAL) to the time left until deadline, at most
-- the caller's own lock_timeout, at least 1 ms.
CREATE FUNCTION @extschema@.dlock_sql_bound(deadline pg_catalog.timestamptz, caller_ms pg_catalog.int8)
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	ms pg_catalog.int8 := pg_catalog.ceil(EXTRACT(epoch FROM deadline - pg_catalog.clock_timestamp())
										  * 1000)::pg_catalog.int8;
BEGIN
	ms := GREATEST(ms, 1);
	IF caller_ms > 0 THEN
		ms := LEAST(ms, caller_ms);
	END IF;
	PERFORM pg_catalog.set_config('lock_timeout', LEAST(ms, 2147483647)::pg_catalog.text, true);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_bound(pg_catalog.timestamptz, pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_bound(pg_catalog.timestamptz, pg_catalog.int8) IS
	'internal: bound the next lock wait by the acquire''s deadline (and the caller''s lock_timeout)';

-- Join the queue of name: lock its row FOR UPDATE, waiting in line; true
-- if it had to wait (the counters, 70_stats.sql).
CREATE FUNCTION @extschema@.dlock_sql_queue_join(name pg_catalog.text, deadline pg_catalog.timestamptz, caller_ms pg_catalog.int8)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	-- Twice at most: dlock_cleanup may delete a row nobody waits in.
	FOR i IN 1 .. 2 LOOP
		IF NOT EXISTS (SELECT FROM @extschema@.dlock_sql_queue AS q WHERE q.name = $1) THEN
			-- Bounded too: the INSERT waits for another transaction that
			-- inserted the same name and has not ended (a first acquire).
			PERFORM @extschema@.dlock_sql_bound($2, $3);
			INSERT INTO @extschema@.dlock_sql_queue VALUES ($1) ON CONFLICT DO NOTHING;
		END IF;
		PERFORM FROM @extschema@.dlock_sql_queue AS q WHERE q.name = $1 FOR UPDATE SKIP LOCKED;
		IF FOUND THEN
			RETURN false;
		END IF;
		PERFORM @extschema@.dlock_sql_bound($2, $3);
		PERFORM FROM @extschema@.dlock_sql_queue AS q WHERE q.name = $1 FOR UPDATE;
		IF FOUND THEN
			RETURN true;
		END IF;
	END LOOP;
	RAISE EXCEPTION 'busy' USING ERRCODE = 'DLKBY';
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_queue_join(pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_queue_join(pg_catalog.text, pg_catalog.timestamptz, pg_catalog.int8) IS
	'internal: wait in the queue of name until this acquire is its head (FOR UPDATE on the queue row)';

-- The head of the queue: look at the lease every poll_interval, without a
-- lock, until it is free (or ours to renew), then take it.  Between full
-- looks, one read of the expiry row: while it shows the same token held,
-- nothing else can have changed (READ COMMITTED; under REPEATABLE READ
-- every look is a full one, which raises 40001 on a change).
CREATE FUNCTION @extschema@.dlock_sql_head(name pg_catalog.text, ttl pg_catalog.interval, owner pg_catalog.text,
	caller pg_catalog.oid, deadline pg_catalog.timestamptz, caller_ms pg_catalog.int8,
	waited pg_catalog.bool DEFAULT false, start pg_catalog.timestamptz DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	poll pg_catalog.interval := (SELECT s.poll_interval FROM @extschema@.dlock_sql_settings AS s);
	cheap pg_catalog.bool := pg_catalog.current_setting('transaction_isolation') = 'read committed';
	r record;
	e record;
	pause pg_catalog.interval;
	avail pg_catalog.timestamptz;
	later pg_catalog.bool;
	pinned pg_catalog.bool;
	-- When this wait last signalled the pinners (bounded pinning): a local
	-- variable, which no caller can set (attack3 F2).
	signalled pg_catalog.timestamptz;
BEGIN
	r := @extschema@.dlock_sql_look($1, true);
	LOOP
		-- Not held: free now, or after its minimum hold or lock-delay
		-- (72_operators.sql), which a revoke may end early: look again.
		avail := CASE WHEN NOT r.held AND r.present THEN @extschema@.dlock_sql_available($1) END;
		later := coalesce(avail > pg_catalog.clock_timestamp(), false);
		pinned := false;
		IF NOT later AND NOT r.held AND r.present THEN
			SELECT p.pinned, p.signalled_at INTO pinned, signalled FROM @extschema@.dlock_sql_pinned($1, signalled) AS p;
		END IF;
		IF later THEN
			r.expires_at := avail;
		ELSIF pinned THEN
			-- A pin grace (72_operators.sql): poll, do not wait in the lock.
			r.expires_at := pg_catalog.clock_timestamp() + poll;
		ELSIF NOT r.held OR ($3 IS NOT NULL AND r.owner = $3 AND @extschema@.dlock_sql_acts_for($4, r.holder)) THEN
			PERFORM @extschema@.dlock_sql_bound($5, $6);
			RETURN @extschema@.dlock_sql_take($1, $2, $3, $4, false,
				CASE WHEN waited THEN pg_catalog.round(EXTRACT(epoch FROM pg_catalog.clock_timestamp() - $8)
													  * 1000000)::pg_catalog.int8 END);
		END IF;
		pause := LEAST(poll, r.expires_at - pg_catalog.clock_timestamp(), $5 - pg_catalog.clock_timestamp());
		IF pause <= '0'::pg_catalog.interval AND pg_catalog.clock_timestamp() >= $5 THEN
			RAISE EXCEPTION 'busy' USING ERRCODE = 'DLKBY';
		END IF;
		PERFORM pg_catalog.pg_sleep(GREATEST(EXTRACT(epoch FROM pause), 0)::pg_catalog.float8);
		waited := true;
		SELECT x.token, x.expires_at, x.released_at INTO e
		  FROM @extschema@.dlock_expiry AS x WHERE x.name = $1;
		IF cheap AND r.held AND e.token = r.token AND e.released_at IS NULL
		   AND e.expires_at > pg_catalog.clock_timestamp() THEN
			r.expires_at := e.expires_at;
		ELSE
			r := @extschema@.dlock_sql_look($1, true);
		END IF;
	END LOOP;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_head(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.oid, pg_catalog.timestamptz, pg_catalog.int8, pg_catalog.bool, pg_catalog.timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_head(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.oid, pg_catalog.timestamptz, pg_catalog.int8, pg_catalog.bool, pg_catalog.timestamptz) IS
	'internal: the head of the queue of name polls the lease until it is free or the deadline passes (waited, start: whether and since when the acquire has waited, for the counters)';

-- The one exception block of an acquire (see the top of this file).
CREATE FUNCTION @extschema@.dlock_sql_acquire_locked(name pg_catalog.text, ttl pg_catalog.interval, owner pg_catalog.text,
	caller pg_catalog.oid, deadline pg_catalog.timestamptz, nowait pg_catalog.bool)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
DECLARE
	saved pg_catalog.text := pg_catalog.current_setting('lock_timeout');
	-- The caller's lock_timeout in ms: SHOW's form (0, 250ms, 5s, 2min,
	-- 1h, 1d) is valid interval input.  Not the pg_settings view, which
	-- builds a row for every setting (0.7 ms).
	caller_ms pg_catalog.int8 := pg_catalog.round(EXTRACT(epoch FROM saved::pg_catalog.interval) * 1000)::pg_catalog.int8;
	-- The caller's own lock_timeout counts from the start of the wait, as
	-- if the acquire waited for one lock (the C edition's rule): the wait
	-- ends at until, and one that ends there before the deadline raises
	-- the caller's 55P03, also when the head was polling.
	until pg_catalog.timestamptz := CASE WHEN caller_ms > 0
		THEN LEAST($5, pg_catalog.clock_timestamp() + caller_ms * '1 millisecond'::pg_catalog.interval)
		ELSE $5 END;
	t pg_catalog.int8;
	start pg_catalog.timestamptz := pg_catalog.clock_timestamp();
BEGIN
	BEGIN
		-- Bound every wait from here on, also for the relation locks that a
		-- statement takes when it is planned or run (an operator's VACUUM
		-- FULL, REINDEX, ALTER SEQUENCE, LOCK of dlock's tables, indexes or
		-- counter): wait => 0 by lock_timeout's least step, 1 ms.
		IF nowait THEN
			PERFORM pg_catalog.set_config('lock_timeout', '1', true);
		ELSE
			PERFORM @extschema@.dlock_sql_bound(until, 0);
		END IF;
		IF nowait THEN
			-- A free lease goes to those who already wait for it: a queue
			-- row that a waiter locks (the lock skips it) makes this busy.
			PERFORM FROM @extschema@.dlock_sql_queue AS q WHERE q.name = $1
			  FOR KEY SHARE SKIP LOCKED;
			IF NOT FOUND AND EXISTS (SELECT FROM @extschema@.dlock_sql_queue AS q WHERE q.name = $1) THEN
				RAISE EXCEPTION 'busy' USING ERRCODE = 'DLKBY';
			END IF;
			t := @extschema@.dlock_sql_take($1, $2, $3, $4, true);
		ELSE
			t := @extschema@.dlock_sql_head($1, $2, $3, $4, until, 0,
				@extschema@.dlock_sql_queue_join($1, until, 0), start);
		END IF;
	EXCEPTION
		WHEN lock_not_available THEN
			IF NOT nowait AND pg_catalog.clock_timestamp() < until THEN
				RAISE;
			END IF;
			t := NULL;
		WHEN unique_violation OR SQLSTATE 'DLKBY' THEN
			t := NULL;
	END;
	PERFORM pg_catalog.set_config('lock_timeout', saved, true);
	IF t IS NULL AND until < $5 AND pg_catalog.clock_timestamp() >= until THEN
		-- The caller's own lock_timeout, as the lock manager words it.
		RAISE EXCEPTION 'canceling statement due to lock timeout' USING ERRCODE = 'lock_not_available';
	END IF;
	RETURN t;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_acquire_locked(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.oid, pg_catalog.timestamptz, pg_catalog.bool) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_acquire_locked(pg_catalog.text, pg_catalog.interval, pg_catalog.text, pg_catalog.oid, pg_catalog.timestamptz, pg_catalog.bool) IS
	'internal: the locking part of an acquire, in its one exception block: a token, or NULL for busy';

-- dlock_acquire's work.  The busy path (held, wait => 0, no owner, READ
-- COMMITTED) is one read with the argument checks: no lock, no
-- subtransaction, no XID, no call of another function of dlock's.  Any
-- other anonymous acquire in READ COMMITTED goes straight to the locks.
CREATE FUNCTION @extschema@.dlock_sql_acquire(name pg_catalog.text, ttl pg_catalog.interval,
	wait pg_catalog.interval, owner pg_catalog.text)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	start pg_catalog.timestamptz := pg_catalog.clock_timestamp();
	wait_us pg_catalog.int8;
	caller pg_catalog.oid;
	r record;
	max_ttl pg_catalog.int4;
	busy pg_catalog.bool;
	delay_over pg_catalog.bool;
	renewed pg_catalog.bool;
BEGIN
	IF $1 IS NULL OR pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_name($1);
	END IF;
	-- One query: the maximum ttl, whether the lock_delay setting exceeds it,
	-- and, for an anonymous try in READ
	-- COMMITTED, whether the lease is held (answered only after the checks).
	SELECT s.max_ttl,
		   $3 IS NOT NULL AND $3 = '0'::pg_catalog.interval AND $4 IS NULL
		   AND pg_catalog.current_setting('transaction_isolation') = 'read committed'
		   AND EXISTS (SELECT FROM @extschema@.dlock_expiry AS e
					   WHERE e.name = $1 AND e.released_at IS NULL	-- held, or in its lock-delay
						 AND e.expires_at + coalesce(e.lock_delay, '0'::pg_catalog.interval) > pg_catalog.clock_timestamp()),
		   s.lock_delay > pg_catalog.make_interval(secs => s.max_ttl)
	  INTO max_ttl, busy, delay_over
	  FROM @extschema@.dlock_sql_settings AS s;
	-- A ttl of hours, minutes and seconds within the maximum passes at
	-- once; any other goes through every check.
	IF $2 IS NULL OR NOT ($2 > '0'::pg_catalog.interval AND pg_catalog.date_trunc('day', $2) = '0'::pg_catalog.interval
			AND $2 <= pg_catalog.make_interval(secs => max_ttl)) THEN
		PERFORM @extschema@.dlock_sql_expiry($2, start);
	END IF;
	-- The lock_delay setting above max_ttl: 22023, as the C edition refuses
	-- dlock.lock_delay (with an owner, dlock_sql_acquire_hold has checked
	-- it; an anonymous acquire that passes a lock_delay is refused too).
	IF delay_over AND $4 IS NULL THEN
		PERFORM @extschema@.dlock_sql_hold_args($2, NULL, NULL);
	END IF;
	IF $3 IS NOT NULL AND $3 = '0'::pg_catalog.interval THEN
		wait_us := 0;
	ELSE
		wait_us := @extschema@.dlock_sql_duration_us($3, 'wait');
	END IF;
	IF pg_catalog.octet_length($4) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_owner($4);
	END IF;
	IF pg_catalog.pg_is_in_recovery() OR pg_catalog.current_setting('transaction_read_only')::pg_catalog.bool THEN
		PERFORM @extschema@.dlock_sql_writable('dlock_acquire()');
	END IF;
	IF $4 IS NULL AND pg_catalog.current_setting('transaction_isolation') = 'read committed' THEN
		-- No owner renewal to find and no snapshot to keep to: the look
		-- below could only tell held from free, which the locked part
		-- decides again under its locks.
		IF busy THEN
			RETURN NULL;
		END IF;
		PERFORM @extschema@.dlock_sql_no_prepare();
		RETURN @extschema@.dlock_sql_acquire_locked($1, $2, $4, @extschema@.dlock_sql_caller(),
			start + wait_us * '1 microsecond'::pg_catalog.interval, wait_us = 0);
	END IF;
	PERFORM @extschema@.dlock_sql_no_prepare();
	caller := @extschema@.dlock_sql_caller();
	r := @extschema@.dlock_sql_look($1, true);
	IF r.held THEN
		IF $4 IS NOT NULL AND r.owner = $4 AND @extschema@.dlock_sql_acts_for(caller, r.holder) THEN
			-- The owner's renewal: only the expiry row, no block, within wait.
			renewed := @extschema@.dlock_sql_owner_extend($1, r.token, $2,
				start + wait_us * '1 microsecond'::pg_catalog.interval);
			IF renewed THEN
				RETURN r.token;
			ELSIF renewed IS NULL THEN
				RETURN NULL;
			END IF;
		ELSIF wait_us = 0 THEN
			RETURN NULL;
		END IF;
	END IF;
	RETURN @extschema@.dlock_sql_acquire_locked($1, $2, $4, caller,
		start + wait_us * '1 microsecond'::pg_catalog.interval, wait_us = 0);
END
$dlock$;
GRANT EXECUTE ON FUNCTION @extschema@.dlock_sql_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text) TO PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text) IS
	'internal: the work of dlock_acquire (which then makes the commit durable)';

-- SECURITY INVOKER: the durable commit is a setting of the caller's
-- transaction, which a function with a SET clause would undo on return.
CREATE FUNCTION @extschema@.dlock_acquire(
	name pg_catalog.text,
	ttl pg_catalog.interval,
	wait pg_catalog.interval DEFAULT '0',
	owner pg_catalog.text DEFAULT NULL,
	min_hold pg_catalog.interval DEFAULT NULL,
	lock_delay pg_catalog.interval DEFAULT NULL)
RETURNS pg_catalog.int8
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY INVOKER
AS $dlock$
DECLARE
	t pg_catalog.int8;
BEGIN
	-- An owner's renewal or a minimum hold or lock-delay: 72_operators.sql.
	IF $4 IS NULL AND $5 IS NULL AND $6 IS NULL THEN
		t := @extschema@.dlock_sql_acquire($1, $2, $3, $4);
	ELSE
		t := @extschema@.dlock_sql_acquire_hold($1, $2, $3, $4, $5, $6);
	END IF;
	IF t IS NOT NULL THEN
		PERFORM @extschema@.dlock_sql_durable();
	END IF;
	RETURN t;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
	'take the lease on name for ttl and return a new fencing token, or NULL if it stays busy for wait; an owner renews its own lease and keeps its token; released before min_hold, the name stays unavailable until acquired_at + min_hold; expired without a release, until expires_at + lock_delay (NULL: dlock_sql_settings.lock_delay)';
