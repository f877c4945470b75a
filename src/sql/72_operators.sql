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
	IF $2 IS NOT NULL THEN
		IF NOT pg_catalog.isfinite($2) THEN
			RAISE EXCEPTION 'min_hold must be finite' USING ERRCODE = '22023';
		ELSIF @extschema@.dlock_sql_nominal_us($2) < 0 THEN
			RAISE EXCEPTION 'min_hold must not be negative' USING ERRCODE = '22023';
		ELSIF @extschema@.dlock_sql_nominal_us($2) > @extschema@.dlock_sql_nominal_us($1) THEN
			RAISE EXCEPTION 'min_hold must not exceed ttl' USING ERRCODE = '22023';
		END IF;
		min_hold := NULLIF($2, '0'::pg_catalog.interval);
	END IF;
	lock_delay := coalesce($3, s.lock_delay);
	IF NOT pg_catalog.isfinite(lock_delay) THEN
		RAISE EXCEPTION 'lock_delay must be finite' USING ERRCODE = '22023';
	ELSIF @extschema@.dlock_sql_nominal_us(lock_delay) < 0 THEN
		RAISE EXCEPTION 'lock_delay must not be negative' USING ERRCODE = '22023';
	ELSIF @extschema@.dlock_sql_nominal_us(lock_delay) > s.max_ttl::pg_catalog.numeric * 1000000 THEN
		RAISE EXCEPTION 'lock_delay exceeds the maximum of % seconds', s.max_ttl USING ERRCODE = '22023',
			HINT = 'The maximum is set by the column max_ttl of the table dlock_sql_settings.';
	END IF;
	lock_delay := NULLIF(lock_delay, '0'::pg_catalog.interval);
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_hold_args(pg_catalog.interval, pg_catalog.interval, pg_catalog.interval) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_hold_args(pg_catalog.interval, pg_catalog.interval, pg_catalog.interval) IS
	'internal: the checked minimum hold and lock-delay of an acquire or renewal, NULL for none (22023)';

-- Store them with the lease that token holds, after the acquire or renewal
-- wrote its rows (a new lease's are NULL: dlock_sql_write_new); a new
-- value only, so that the usual call writes nothing more.  An owner's
-- renewal keeps the minimum hold unless it passes one.
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
BEGIN
	PERFORM @extschema@.dlock_sql_check_name($1);
	PERFORM @extschema@.dlock_sql_expiry($2, pg_catalog.clock_timestamp());
	h := @extschema@.dlock_sql_hold_args($2, $5, $6);
	t := @extschema@.dlock_sql_acquire($1, $2, $3, $4);
	IF t IS NOT NULL THEN
		PERFORM @extschema@.dlock_sql_hold_store($1, t, h.min_hold, h.lock_delay);
	END IF;
	RETURN t;
END
$dlock$;
GRANT EXECUTE ON FUNCTION @extschema@.dlock_sql_acquire_hold(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) TO PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_acquire_hold(pg_catalog.text, pg_catalog.interval, pg_catalog.interval, pg_catalog.text, pg_catalog.interval, pg_catalog.interval) IS
	'internal: the work of dlock_acquire with an owner, a minimum hold or a lock-delay (which then makes the commit durable)';
