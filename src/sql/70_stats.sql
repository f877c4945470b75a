-- Copyright (c) 2026, the dlock developers
--
-- 70_stats.sql: operators' views of the SQL edition (issue 27 items 1 and
-- 3, and the cleanup counters of item 8; docs/editions.md, "Counters,
-- waiters and cleanup").
--
-- Counters (item 1).  Every counted call already writes the name's row of
-- dlock_expiry: a hand-over (dlock_sql_write_new), a renewal and an
-- owner's renewal (dlock_sql_extend), a release.  The counters are columns
-- of that row, set by that same INSERT or UPDATE: no other row, no other
-- WAL record.  A busy answer writes nothing, and a refusal (LK001) or an
-- acquire that waited in vain ends without a write that commits: busy,
-- fence_refusals and wait_timeouts are NULL in this edition (the C edition
-- counts them in shared memory), and waits, wait_time and wait_time_max
-- count only the waits that ended with a new token.
--
-- A reset writes none of those rows (it would wait for every renewal in
-- progress and hold back the next ones): it records the counters as they
-- are, per name, in dlock_sql_stats_base, and the views subtract them.  The
-- longest wait is not a sum: the row keeps when it was recorded
-- (wait_max_at), and a maximum older than the name's reset counts as 0.
-- dlock_cleanup and a reset of one name add what they take out of the
-- per-name counters to the one row of dlock_stats_retired, so that the
-- totals never go down except by a reset of everything.

ALTER TABLE @extschema@.dlock_expiry
	ADD COLUMN acquisitions pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN owner_renewals pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN renewals pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN releases pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN takeovers pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN lost pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN waits pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN wait_us pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN wait_max_us pg_catalog.int8 NOT NULL DEFAULT 0,
	ADD COLUMN wait_max_at pg_catalog.timestamptz,
	ADD COLUMN stats_since pg_catalog.timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp();
COMMENT ON COLUMN @extschema@.dlock_expiry.acquisitions IS 'new tokens issued for the name since stats_since';
COMMENT ON COLUMN @extschema@.dlock_expiry.owner_renewals IS 'acquires by the holder''s owner that kept the token';
COMMENT ON COLUMN @extschema@.dlock_expiry.renewals IS 'successful dlock_renew calls';
COMMENT ON COLUMN @extschema@.dlock_expiry.releases IS 'dlock_release calls that released the lease';
COMMENT ON COLUMN @extschema@.dlock_expiry.takeovers IS 'acquisitions of a lease that had expired without a release';
COMMENT ON COLUMN @extschema@.dlock_expiry.lost IS 'leases that expired without a release, counted at the takeover';
COMMENT ON COLUMN @extschema@.dlock_expiry.waits IS 'acquisitions that waited before they got their token';
COMMENT ON COLUMN @extschema@.dlock_expiry.wait_us IS 'total wait of those acquisitions, in microseconds';
COMMENT ON COLUMN @extschema@.dlock_expiry.wait_max_us IS 'the longest of those waits, in microseconds';
COMMENT ON COLUMN @extschema@.dlock_expiry.wait_max_at IS 'when the longest wait ended (a maximum older than the name''s reset counts as 0)';
COMMENT ON COLUMN @extschema@.dlock_expiry.stats_since IS 'when this row was created: the counters start from 0 then';

-- The counters of a name as they were at its last reset (dlock_stats_reset).
-- stats_since ties a baseline to the row it was taken of: a row made anew
-- (dlock_cleanup, then an acquire) is not measured against an old one.
CREATE TABLE @extschema@.dlock_sql_stats_base (
	name		pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
	stats_since	pg_catalog.timestamptz NOT NULL,
	acquisitions pg_catalog.int8 NOT NULL,
	owner_renewals pg_catalog.int8 NOT NULL,
	renewals	pg_catalog.int8 NOT NULL,
	releases	pg_catalog.int8 NOT NULL,
	takeovers	pg_catalog.int8 NOT NULL,
	lost		pg_catalog.int8 NOT NULL,
	waits		pg_catalog.int8 NOT NULL,
	wait_us		pg_catalog.int8 NOT NULL,
	stats_reset	pg_catalog.timestamptz NOT NULL,
	CONSTRAINT dlock_sql_stats_base_pkey PRIMARY KEY (name)
);
REVOKE ALL ON TABLE @extschema@.dlock_sql_stats_base FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_sql_stats_base IS
	'dlock counters (SQL edition): the counters of dlock_expiry at the last dlock_stats_reset of each name, which dlock_stats subtracts';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.name IS 'the lock name';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.stats_since IS 'stats_since of the dlock_expiry row the baseline was taken of';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.acquisitions IS 'acquisitions at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.owner_renewals IS 'owner_renewals at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.renewals IS 'renewals at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.releases IS 'releases at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.takeovers IS 'takeovers at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.lost IS 'lost at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.waits IS 'waits at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.wait_us IS 'wait_us at the reset';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_base.stats_reset IS 'when the name''s counters were reset';

-- What the counters of deleted rows (dlock_cleanup) and of names reset one
-- at a time added up to: at most one row, part of dlock_stats_total, made
-- by the first cleanup or reset (a row made by the script would collide,
-- at a restore, with the dumped one).
CREATE TABLE @extschema@.dlock_stats_retired (
	one			pg_catalog.bool NOT NULL DEFAULT true,
	acquisitions pg_catalog.int8 NOT NULL DEFAULT 0,
	owner_renewals pg_catalog.int8 NOT NULL DEFAULT 0,
	renewals	pg_catalog.int8 NOT NULL DEFAULT 0,
	releases	pg_catalog.int8 NOT NULL DEFAULT 0,
	takeovers	pg_catalog.int8 NOT NULL DEFAULT 0,
	lost		pg_catalog.int8 NOT NULL DEFAULT 0,
	waits		pg_catalog.int8 NOT NULL DEFAULT 0,
	wait_us		pg_catalog.int8 NOT NULL DEFAULT 0,
	wait_max_us	pg_catalog.int8 NOT NULL DEFAULT 0,
	stats_reset	pg_catalog.timestamptz,
	CONSTRAINT dlock_stats_retired_pkey PRIMARY KEY (one),
	CONSTRAINT dlock_stats_retired_one CHECK (one)
);
REVOKE ALL ON TABLE @extschema@.dlock_stats_retired FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_stats_retired IS
	'dlock counters (SQL edition), at most one row, made by the first cleanup, reset or import over rows: the counters of lease rows dlock_cleanup deleted or dlock_import replaced and of names reset one at a time, so that dlock_stats_total never goes down but by a reset of everything';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.one IS 'always true: the table has at most one row';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.acquisitions IS 'acquisitions of retired counters';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.owner_renewals IS 'owner_renewals of retired counters';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.renewals IS 'renewals of retired counters';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.releases IS 'releases of retired counters';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.takeovers IS 'takeovers of retired counters';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.lost IS 'lost of retired counters, and the leases dlock_cleanup deleted or dlock_import replaced that had expired without a release';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.waits IS 'waits of retired counters';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.wait_us IS 'total wait of retired counters, in microseconds';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.wait_max_us IS 'the longest wait of retired counters, in microseconds';
COMMENT ON COLUMN @extschema@.dlock_stats_retired.stats_reset IS 'when every counter was last reset; NULL if never';

-- Cleanups and resets run one at a time: each locks this row first (a row
-- made by the script and never dumped, so that nobody waits for an
-- uncommitted first row of dlock_stats_retired).
CREATE TABLE @extschema@.dlock_sql_stats_lock (
	one			pg_catalog.bool NOT NULL DEFAULT true,
	CONSTRAINT dlock_sql_stats_lock_pkey PRIMARY KEY (one),
	CONSTRAINT dlock_sql_stats_lock_one CHECK (one)
);
INSERT INTO @extschema@.dlock_sql_stats_lock DEFAULT VALUES;
REVOKE ALL ON TABLE @extschema@.dlock_sql_stats_lock FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_sql_stats_lock IS
	'dlock (SQL edition): the one row that dlock_cleanup and dlock_stats_reset lock, so that they run one after the other';
COMMENT ON COLUMN @extschema@.dlock_sql_stats_lock.one IS 'always true: the table has one row';

SELECT @extschema@.dlock_sql_config_dump('@extschema@.dlock_sql_stats_base', '');
SELECT @extschema@.dlock_sql_config_dump('@extschema@.dlock_stats_retired', '');

CREATE VIEW @extschema@.dlock_stats AS
	SELECT e.name,
		   e.acquisitions OPERATOR(pg_catalog.-) coalesce(b.acquisitions, 0) AS acquisitions,
		   e.owner_renewals OPERATOR(pg_catalog.-) coalesce(b.owner_renewals, 0) AS owner_renewals,
		   e.renewals OPERATOR(pg_catalog.-) coalesce(b.renewals, 0) AS renewals,
		   e.releases OPERATOR(pg_catalog.-) coalesce(b.releases, 0) AS releases,
		   e.takeovers OPERATOR(pg_catalog.-) coalesce(b.takeovers, 0) AS takeovers,
		   e.lost OPERATOR(pg_catalog.-) coalesce(b.lost, 0) AS lost,
		   NULL::pg_catalog.int8 AS busy,
		   e.waits OPERATOR(pg_catalog.-) coalesce(b.waits, 0) AS waits,
		   (e.wait_us OPERATOR(pg_catalog.-) coalesce(b.wait_us, 0))::pg_catalog.float8
			   OPERATOR(pg_catalog./) 1000000 AS wait_time,
		   CASE WHEN b.stats_reset IS NULL OR e.wait_max_at OPERATOR(pg_catalog.>) b.stats_reset
				THEN e.wait_max_us::pg_catalog.float8 OPERATOR(pg_catalog./) 1000000
				ELSE 0::pg_catalog.float8 END AS wait_time_max,
		   NULL::pg_catalog.int8 AS wait_timeouts,
		   NULL::pg_catalog.int8 AS fence_refusals,
		   b.stats_reset
	  FROM @extschema@.dlock_expiry AS e
	  LEFT JOIN @extschema@.dlock_sql_stats_base AS b
		ON b.name OPERATOR(pg_catalog.=) e.name AND b.stats_since OPERATOR(pg_catalog.=) e.stats_since;
GRANT SELECT ON @extschema@.dlock_stats TO PUBLIC;

CREATE VIEW @extschema@.dlock_stats_total AS
	WITH l AS (
		SELECT coalesce(pg_catalog.sum(s.acquisitions), 0)::pg_catalog.int8 AS acquisitions,
			   coalesce(pg_catalog.sum(s.owner_renewals), 0)::pg_catalog.int8 AS owner_renewals,
			   coalesce(pg_catalog.sum(s.renewals), 0)::pg_catalog.int8 AS renewals,
			   coalesce(pg_catalog.sum(s.releases), 0)::pg_catalog.int8 AS releases,
			   coalesce(pg_catalog.sum(s.takeovers), 0)::pg_catalog.int8 AS takeovers,
			   coalesce(pg_catalog.sum(s.lost), 0)::pg_catalog.int8 AS lost,
			   coalesce(pg_catalog.sum(s.waits), 0)::pg_catalog.int8 AS waits,
			   coalesce(pg_catalog.sum(s.wait_time), 0) AS wait_time,
			   coalesce(pg_catalog.max(s.wait_time_max), 0) AS wait_time_max
		  FROM @extschema@.dlock_stats AS s)
	SELECT l.acquisitions OPERATOR(pg_catalog.+) coalesce(r.acquisitions, 0) AS acquisitions,
		   l.owner_renewals OPERATOR(pg_catalog.+) coalesce(r.owner_renewals, 0) AS owner_renewals,
		   l.renewals OPERATOR(pg_catalog.+) coalesce(r.renewals, 0) AS renewals,
		   l.releases OPERATOR(pg_catalog.+) coalesce(r.releases, 0) AS releases,
		   l.takeovers OPERATOR(pg_catalog.+) coalesce(r.takeovers, 0) AS takeovers,
		   l.lost OPERATOR(pg_catalog.+) coalesce(r.lost, 0) AS lost,
		   NULL::pg_catalog.int8 AS busy,
		   l.waits OPERATOR(pg_catalog.+) coalesce(r.waits, 0) AS waits,
		   -- OPERATOR() binds as any other operator: the quotient in parentheses.
		   l.wait_time OPERATOR(pg_catalog.+)
			   (coalesce(r.wait_us, 0)::pg_catalog.float8 OPERATOR(pg_catalog./) 1000000) AS wait_time,
		   GREATEST(l.wait_time_max,
					coalesce(r.wait_max_us, 0)::pg_catalog.float8 OPERATOR(pg_catalog./) 1000000) AS wait_time_max,
		   NULL::pg_catalog.int8 AS wait_timeouts,
		   NULL::pg_catalog.int8 AS fence_refusals,
		   r.stats_reset
	  FROM l
	  LEFT JOIN @extschema@.dlock_stats_retired AS r ON true;
GRANT SELECT ON @extschema@.dlock_stats_total TO PUBLIC;

-- Reset the counters of one name (its counters go to dlock_stats_retired:
-- the totals stay) or, with NULL, of every name and the totals.  Writes no
-- lease row: it waits for nothing but another reset or a cleanup.
CREATE FUNCTION @extschema@.dlock_stats_reset(name pg_catalog.text DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql VOLATILE CALLED ON NULL INPUT PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
DECLARE
	now pg_catalog.timestamptz := pg_catalog.clock_timestamp();
BEGIN
	IF $1 IS NOT NULL AND pg_catalog.octet_length($1) NOT BETWEEN 1 AND 255 THEN
		PERFORM @extschema@.dlock_sql_check_name($1);
	END IF;
	PERFORM @extschema@.dlock_sql_writable('dlock_stats_reset()');
	-- One reset or cleanup at a time, each on the latest committed counters.
	PERFORM FROM @extschema@.dlock_sql_stats_lock FOR UPDATE;
	IF NOT EXISTS (SELECT FROM @extschema@.dlock_stats_retired) THEN
		INSERT INTO @extschema@.dlock_stats_retired DEFAULT VALUES;
	END IF;
	IF $1 IS NULL THEN
		UPDATE @extschema@.dlock_stats_retired AS r
		   SET acquisitions = 0, owner_renewals = 0, renewals = 0, releases = 0, takeovers = 0,
			   lost = 0, waits = 0, wait_us = 0, wait_max_us = 0, stats_reset = now;
	END IF;
	-- One name: what moves to the totals and the new baseline are read in
	-- one statement, so in one snapshot: a renewal that commits while the
	-- reset runs is in both or in neither (a11 finding 7).
	WITH s AS (
		SELECT x.* FROM @extschema@.dlock_stats AS x WHERE $1 IS NOT NULL AND x.name = $1
	), moved AS (
		UPDATE @extschema@.dlock_stats_retired AS r
		   SET acquisitions = r.acquisitions + s.acquisitions,
			   owner_renewals = r.owner_renewals + s.owner_renewals,
			   renewals = r.renewals + s.renewals, releases = r.releases + s.releases,
			   takeovers = r.takeovers + s.takeovers, lost = r.lost + s.lost,
			   waits = r.waits + s.waits,
			   wait_us = r.wait_us + pg_catalog.round(s.wait_time * 1000000)::pg_catalog.int8,
			   wait_max_us = GREATEST(r.wait_max_us, pg_catalog.round(s.wait_time_max * 1000000)::pg_catalog.int8)
		  FROM s
	)
	INSERT INTO @extschema@.dlock_sql_stats_base AS b
		SELECT e.name, e.stats_since, e.acquisitions, e.owner_renewals, e.renewals, e.releases,
			   e.takeovers, e.lost, e.waits, e.wait_us, now
		  FROM @extschema@.dlock_expiry AS e
		 WHERE $1 IS NULL OR e.name = $1
	ON CONFLICT ON CONSTRAINT dlock_sql_stats_base_pkey DO UPDATE
		   SET stats_since = EXCLUDED.stats_since, acquisitions = EXCLUDED.acquisitions,
			   owner_renewals = EXCLUDED.owner_renewals, renewals = EXCLUDED.renewals,
			   releases = EXCLUDED.releases, takeovers = EXCLUDED.takeovers, lost = EXCLUDED.lost,
			   waits = EXCLUDED.waits, wait_us = EXCLUDED.wait_us, stats_reset = EXCLUDED.stats_reset;
	IF $1 IS NULL THEN
		-- Baselines of rows that no longer exist.
		DELETE FROM @extschema@.dlock_sql_stats_base AS b WHERE b.stats_reset <> now;
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_stats_reset(pg_catalog.text) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_stats_reset(pg_catalog.text) IS
	'zero the counters of one lock name (they move to the totals), or with NULL of every name, the totals and the shared-memory counters of this database; the extension owner, superusers and roles granted EXECUTE only';

-- When the counters of the row of name made at since were last reset, or
-- NULL (dlock_sql_write_new: a longest wait older than that is replaced).
CREATE FUNCTION @extschema@.dlock_sql_stats_reset_at(name pg_catalog.text, since pg_catalog.timestamptz)
RETURNS pg_catalog.timestamptz
LANGUAGE sql STABLE PARALLEL SAFE
AS $dlock$
SELECT b.stats_reset FROM @extschema@.dlock_sql_stats_base AS b
 WHERE b.name OPERATOR(pg_catalog.=) $1 AND b.stats_since OPERATOR(pg_catalog.=) $2
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_stats_reset_at(pg_catalog.text, pg_catalog.timestamptz) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_stats_reset_at(pg_catalog.text, pg_catalog.timestamptz) IS
	'internal: when the counters of the dlock_expiry row of name created at since were last reset; NULL if never';

-- Waiters and pinners (item 3).  The SQL edition's waiting and its check
-- protection are row locks, which PostgreSQL records in the row (xmax: one
-- locker's transaction ID, or a MultiXact of several), not in pg_locks.
-- dlock_waiters reads them so:
--   - the head of a name's queue holds FOR UPDATE on its dlock_sql_queue
--     row: the row's xmax is its (sub)transaction; it waits while the lease
--     is held or while it is blocked (a pinner);
--   - the others wait for that row in the lock manager: the first in line
--     holds the row's tuple lock and waits for the head's transaction, the
--     rest wait for the tuple lock (pg_locks, locktype tuple, in waitstart
--     order);
--   - a pinner holds FOR SHARE on the dlock_lease row of a lease that is no
--     longer held: the row's xmax, a live transaction that is not the one
--     that changes the lease (a hand-over or a cleanup locks the
--     dlock_expiry row too, and writes or deletes the dlock_lease row; a
--     pinner that renewed the lease in its transaction wrote dlock_expiry
--     and not dlock_lease, and counts: a11 finding 10), or the live FOR
--     SHARE members of its MultiXact.
-- A locker is told by the lock on its transaction ID (pg_locks,
-- transactionid, ExclusiveLock), which its backend holds until the
-- transaction ends, but a subtransaction's only until the subtransaction
-- ends: a check in a savepoint since released, or in a PL/pgSQL block with
-- an EXCEPTION clause, leaves a row locked by an XID whose lock nobody
-- holds (xact.c, CommitSubTransaction, releases it: XactLockTableWait
-- waits for the parent instead, which SQL cannot ask for).  Such an XID,
-- still in progress, is taken for the one backend that can be its
-- top-level transaction: the only one holding a row-level lock on the table
-- and an XID older than it; where several can, nobody (a13 finding 1).  A
-- row's xmax does not say whether it is a MultiXact: both readings are
-- made, and where both find a live locker, nobody counts (a13 finding 2;
-- dlock_sql_lockers).

-- Whether the transaction ID y (of a row lock: assigned, not frozen) is in
-- progress, a subtransaction's too: pg_xact_status with y's epoch, which
-- y shares with the next XID or precedes it by one.
CREATE FUNCTION @extschema@.dlock_sql_xid_running(y pg_catalog.xid)
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $dlock$
DECLARE
	nxt pg_catalog.int8 := pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::pg_catalog.text::pg_catalog.int8;
	back pg_catalog.int8 := (nxt % 4294967296 - y::pg_catalog.text::pg_catalog.int8 + 4294967296) % 4294967296;
BEGIN
	IF y::pg_catalog.text::pg_catalog.int8 < 3 THEN
		RETURN false;
	END IF;
	-- An XID assigned after the snapshot is ahead of nxt, by less than 2^31.
	RETURN pg_catalog.pg_xact_status((CASE WHEN back > 2147483648 THEN nxt + 4294967296 - back ELSE nxt - back END)
									 ::pg_catalog.text::pg_catalog.xid8) = 'in progress';
EXCEPTION
	WHEN OTHERS THEN
		-- In the future, or before the epoch: no transaction of a locked row.
		RETURN false;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_xid_running(pg_catalog.xid) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_xid_running(pg_catalog.xid) IS
	'internal (dlock_waiters, dlock_revoke, bounded pinning): whether the transaction ID y, a subtransaction''s too, is in progress';

-- The backend whose transaction has the XID y and holds a row-level lock
-- on rel (in this database): the holder of y's lock, or, for an XID in
-- progress whose lock nobody holds (a subtransaction that ended into its
-- parent), the only backend that holds a row-level lock on rel and an XID
-- older than y (a subtransaction's XID is newer than its parent's); NULL
-- where there is none, or several.
CREATE FUNCTION @extschema@.dlock_sql_xid_backend(y pg_catalog.xid, rel pg_catalog.regclass)
RETURNS pg_catalog.int4
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $dlock$
DECLARE
	db pg_catalog.oid := (SELECT d.oid FROM pg_catalog.pg_database AS d WHERE d.datname = pg_catalog.current_database());
	holder pg_catalog.int4;
	found pg_catalog.bool;
BEGIN
	SELECT l.pid, true INTO holder, found FROM pg_catalog.pg_locks AS l
	 WHERE l.locktype = 'transactionid' AND l.mode = 'ExclusiveLock' AND l.granted AND l.transactionid = y
	 LIMIT 1;
	IF found THEN
		-- A prepared transaction's has no pid.
		RETURN (SELECT holder WHERE EXISTS (
			SELECT FROM pg_catalog.pg_locks AS r
			 WHERE r.pid = holder AND r.locktype = 'relation' AND r.mode = 'RowShareLock' AND r.granted
			   AND r.relation = rel AND r.database = db));
	END IF;
	IF NOT @extschema@.dlock_sql_xid_running(y) THEN
		RETURN NULL;
	END IF;
	RETURN (SELECT CASE WHEN pg_catalog.count(DISTINCT r.pid) = 1 THEN pg_catalog.min(r.pid) END
			  FROM pg_catalog.pg_locks AS r
			 WHERE r.locktype = 'relation' AND r.mode = 'RowShareLock' AND r.granted
			   AND r.relation = rel AND r.database = db
			   AND EXISTS (SELECT FROM pg_catalog.pg_locks AS t
							WHERE t.pid = r.pid AND t.locktype = 'transactionid' AND t.mode = 'ExclusiveLock'
							  AND t.granted AND pg_catalog.age(t.transactionid) > pg_catalog.age(y)));
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_xid_backend(pg_catalog.xid, pg_catalog.regclass) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_xid_backend(pg_catalog.xid, pg_catalog.regclass) IS
	'internal (dlock_sql_lockers): the backend whose transaction has the XID y, a subtransaction''s too, and holds a row-level lock on rel; NULL for none or where several can';

-- The members of MultiXact x, or none where x is not one.
CREATE FUNCTION @extschema@.dlock_sql_multi_members(x pg_catalog.xid)
RETURNS TABLE (xid pg_catalog.xid, mode pg_catalog.text)
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $dlock$
BEGIN
	IF pg_catalog.mxid_age(x) > 0 THEN
		RETURN QUERY SELECT m.xid, m.mode FROM pg_catalog.pg_get_multixact_members(x) AS m;
	END IF;
EXCEPTION
	WHEN OTHERS THEN
		-- Not a MultiXact (out of range): a plain transaction ID.
		RETURN;
END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_multi_members(pg_catalog.xid) IS
	'internal (dlock_waiters): the members of the MultiXact x, none if x is not one';

-- The live lockers of a row of rel whose xmax is x, with their lock mode
-- where x is a MultiXact (NULL where it is one XID): x read both as one
-- XID and as a MultiXact (SQL cannot read the tuple's infomask, which
-- says which it is), each XID mapped to its backend by
-- dlock_sql_xid_backend.  A reading that does not apply finds nobody (an
-- XID that is not in progress, a number that is not a MultiXact in use, or
-- a MultiXact whose members have ended); where both find somebody, the
-- number is a MultiXact and an XID in progress at once, and nobody is
-- returned (a11 finding 2: a backend whose XID has the MultiXact's number
-- would be taken for a locker).  A MultiXact with a member in progress is
-- never read as one XID, also where no member is identified (a
-- subtransaction's XID that several backends can have made): its members
-- or nobody (attack3 F3: the backend whose XID has the number was
-- signalled; a waiter's own probe, dlock_sql_ending, makes MultiXacts).  Before, a number was ambiguous as soon as
-- the MultiXact counter passed rel's relfrozenxid (a13 finding 2).
CREATE FUNCTION @extschema@.dlock_sql_lockers(x pg_catalog.xid, rel pg_catalog.regclass)
RETURNS TABLE (pid pg_catalog.int4, mode pg_catalog.text)
LANGUAGE plpgsql VOLATILE PARALLEL SAFE
AS $dlock$
DECLARE
	one pg_catalog.int4;
	many pg_catalog.int4[];
	modes pg_catalog.text[];
	live pg_catalog.bool;
BEGIN
	IF x IS NULL OR x::pg_catalog.text = '0' THEN
		RETURN;
	END IF;
	SELECT pg_catalog.array_agg(b.pid) FILTER (WHERE b.pid IS NOT NULL),
		   pg_catalog.array_agg(b.mode) FILTER (WHERE b.pid IS NOT NULL), coalesce(pg_catalog.bool_or(b.live), false)
	  INTO many, modes, live
	  FROM (SELECT @extschema@.dlock_sql_xid_backend(m.xid, rel) AS pid, m.mode,
				   @extschema@.dlock_sql_xid_running(m.xid) AS live
			  FROM @extschema@.dlock_sql_multi_members(x) AS m) AS b;
	IF live THEN
		-- x is a MultiXact in use: never one XID as well, also where no
		-- member is identified (attack3 F3), and nobody where x is also
		-- the XID of a locker.
		IF many IS NOT NULL AND @extschema@.dlock_sql_xid_backend(x, rel) IS NULL THEN
			RETURN QUERY SELECT u.p, u.m FROM ROWS FROM (pg_catalog.unnest(many), pg_catalog.unnest(modes)) AS u(p, m);
		END IF;
		RETURN;
	END IF;
	one := @extschema@.dlock_sql_xid_backend(x, rel);
	IF one IS NOT NULL THEN
		RETURN QUERY SELECT one, NULL::pg_catalog.text;
	END IF;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_lockers(pg_catalog.xid, pg_catalog.regclass) FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_lockers(pg_catalog.xid, pg_catalog.regclass) IS
	'internal (dlock_waiters, dlock_revoke, bounded pinning): the backends that hold a row lock on a row of rel whose xmax is x, with the MultiXact member''s mode; none where x reads as both an XID and a MultiXact in use';

-- The rows of dlock_waiters, as the C edition's function of that name
-- gives them (head: the holder of the queue row's lock; since: when the
-- wait for the tuple lock began, NULL for the head and the next in line;
-- deadline: never known here; position: each waiting acquire's place in
-- its name's queue, 1 for the head, then the holder of the queue row's
-- tuple lock, then by when each began to wait, counted over every waiter,
-- also those the caller may not see).  SECURITY DEFINER: it reads dlock's
-- tables; a pid, and the wait's start and deadline, are shown only to a
-- role that may see the backend (the calling session's, dlock_sql_caller),
-- as in the C edition (WaitersMaySee, pg_stat_activity's rule).
CREATE FUNCTION @extschema@.dlock_waiters_locks(
	OUT name pg_catalog.text, OUT kind pg_catalog.text, OUT pid pg_catalog.int4,
	OUT head pg_catalog.bool, OUT since pg_catalog.timestamptz,
	OUT deadline pg_catalog.timestamptz, OUT "position" pg_catalog.int4)
RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $dlock$
	WITH lk AS MATERIALIZED (
		SELECT l.locktype, l.database, l.relation, l.page, l.tuple, l.transactionid,
			   l.pid, l.mode, l.granted, l.waitstart
		  FROM pg_catalog.pg_locks AS l
	), renewers AS MATERIALIZED (
		-- Those that wrote dlock_expiry, and not dlock_lease, in this database.
		SELECT l.pid FROM lk AS l
		 WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.mode OPERATOR(pg_catalog.=) 'RowExclusiveLock'
		   AND l.granted AND l.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database AS d
				 WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
		 GROUP BY l.pid
		HAVING pg_catalog.bool_or(l.relation OPERATOR(pg_catalog.=) '@extschema@.dlock_expiry'::pg_catalog.regclass)
		   AND NOT pg_catalog.bool_or(l.relation OPERATOR(pg_catalog.=) '@extschema@.dlock_lease'::pg_catalog.regclass)
	), lease AS MATERIALIZED (
		SELECT l.name, l.xmax AS lx, e.xmax AS ex, e.expires_at,
			   (e.released_at IS NULL AND e.expires_at OPERATOR(pg_catalog.>) pg_catalog.clock_timestamp()) AS held
		  FROM @extschema@.dlock_lease AS l
		  JOIN @extschema@.dlock_expiry AS e ON e.name OPERATOR(pg_catalog.=) l.name
	), queued AS (
		-- The head: the locker of the queue row, while it waits.
		SELECT q.name, h.pid, 0 AS rank, NULL::pg_catalog.timestamptz AS waitstart
		  FROM @extschema@.dlock_sql_queue AS q
		 CROSS JOIN LATERAL (
			SELECT DISTINCT v.pid
			  FROM @extschema@.dlock_sql_lockers(q.xmax, '@extschema@.dlock_sql_queue'::pg_catalog.regclass) AS v
			 WHERE v.mode IS NULL OR v.mode OPERATOR(pg_catalog.=) 'upd') AS h
		 WHERE (EXISTS (SELECT FROM lease AS s WHERE s.name OPERATOR(pg_catalog.=) q.name AND s.held)
				OR EXISTS (SELECT FROM lk AS b WHERE b.pid OPERATOR(pg_catalog.=) h.pid AND NOT b.granted))
		UNION ALL
		-- The others: the tuple lock of the queue row, held by the next in
		-- line, waited for by the rest.
		SELECT q.name, t.pid, CASE WHEN t.granted THEN 1 ELSE 2 END,
			   CASE WHEN NOT t.granted THEN t.waitstart END
		  FROM lk AS t
		  JOIN @extschema@.dlock_sql_queue AS q
			ON q.ctid OPERATOR(pg_catalog.=) pg_catalog.format('(%s,%s)', t.page, t.tuple)::pg_catalog.tid
		 WHERE t.locktype OPERATOR(pg_catalog.=) 'tuple'
		   AND t.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database AS d
												   WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
		   AND t.relation OPERATOR(pg_catalog.=) '@extschema@.dlock_sql_queue'::pg_catalog.regclass
	), pinned AS (
		SELECT s.name, p.pid
		  FROM lease AS s
		 CROSS JOIN LATERAL (
			SELECT DISTINCT v.pid
			  FROM @extschema@.dlock_sql_lockers(s.lx, '@extschema@.dlock_lease'::pg_catalog.regclass) AS v
			 WHERE (v.mode IS NULL
					AND (s.lx OPERATOR(pg_catalog.<>) s.ex OR v.pid IN (SELECT r.pid FROM renewers AS r)))
				OR v.mode OPERATOR(pg_catalog.=) 'sh') AS p
		 WHERE NOT s.held
	), rows AS (
		SELECT x.name, 'waiting'::pg_catalog.text AS kind, x.pid, x.rank OPERATOR(pg_catalog.=) 0 AS head,
			   x.waitstart AS since, NULL::pg_catalog.timestamptz AS deadline,
			   pg_catalog.row_number() OVER (PARTITION BY x.name
											 ORDER BY x.rank, x.waitstart, x.pid)::pg_catalog.int4 AS "position"
		  FROM queued AS x
		UNION ALL
		SELECT y.name, 'pinning', y.pid, false, NULL, NULL, NULL FROM pinned AS y
	), me AS MATERIALIZED (
		SELECT @extschema@.dlock_sql_caller() AS caller
	)
	-- The pid, since and deadline only where the calling session's role,
	-- not the tables' owner that this function runs as, has the
	-- privileges of the backend's role or of pg_read_all_stats (from
	-- PostgreSQL 15 on; on 14, is a member of it): the C edition's
	-- WaitersMaySee, pg_stat_activity's rule.
	SELECT r.name, r.kind,
		   CASE WHEN v.visible THEN r.pid END,
		   r.head,
		   CASE WHEN v.visible THEN r.since END,
		   CASE WHEN v.visible THEN r.deadline END,
		   r."position"
	  FROM rows AS r CROSS JOIN me AS m
	 CROSS JOIN LATERAL (
		SELECT coalesce(pg_catalog.pg_has_role(m.caller,
							(SELECT a.usesysid FROM pg_catalog.pg_stat_activity AS a
							  WHERE a.pid OPERATOR(pg_catalog.=) r.pid), 'USAGE')
						OR pg_catalog.pg_has_role(m.caller, 'pg_read_all_stats',
							CASE WHEN pg_catalog.current_setting('server_version_num')::pg_catalog.int4
									  OPERATOR(pg_catalog.>=) 150000
								 THEN 'USAGE' ELSE 'MEMBER' END), false) AS visible) AS v
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_waiters_locks() IS
	'the lock manager''s view of dlock''s waiting acquires (head: holds the name''s queue lock) and check protections, by lease name, with the wait''s start and deadline where known and the caller may see them, and each waiting acquire''s position in its queue; dlock_waiters shows it';

-- The function shows a pid, a since and a deadline only where the caller
-- may see them (pg_stat_activity's rule), so the backend's role and state
-- are joined only where it shows the pid.
CREATE VIEW @extschema@.dlock_waiters AS
	SELECT w.name,
		   w.kind,
		   w.pid,
		   a.usename AS role,
		   coalesce(w.since, CASE WHEN w.kind OPERATOR(pg_catalog.=) 'pinning'
								  THEN a.xact_start ELSE a.query_start END) AS since,
		   w.position,
		   w.deadline,
		   a.state,
		   e.expires_at AS lease_expires_at
	  FROM @extschema@.dlock_waiters_locks() AS w
	  LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid OPERATOR(pg_catalog.=) w.pid
	  LEFT JOIN @extschema@.dlock_expiry AS e ON e.name OPERATOR(pg_catalog.=) w.name;
GRANT SELECT ON @extschema@.dlock_waiters TO PUBLIC;

-- Lock dlock_sql_stats_lock for this cleanup without waiting, and make
-- the row of dlock_stats_retired if missing: false if another cleanup or
-- reset holds the lock (dlock_cleanup then deletes nothing).
CREATE FUNCTION @extschema@.dlock_sql_retire_lock()
RETURNS pg_catalog.bool
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	PERFORM FROM @extschema@.dlock_sql_stats_lock FOR UPDATE SKIP LOCKED;
	IF NOT FOUND THEN
		RETURN false;
	END IF;
	IF NOT EXISTS (SELECT FROM @extschema@.dlock_stats_retired) THEN
		INSERT INTO @extschema@.dlock_stats_retired DEFAULT VALUES;
	END IF;
	RETURN true;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_retire_lock() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_retire_lock() IS
	'internal (dlock_cleanup): lock dlock_sql_stats_lock without waiting and make the row of dlock_stats_retired if missing; false if another cleanup or reset holds the lock';

-- dlock_import(replace => true) keeps the counters of the rows it replaces
-- in the totals, as dlock_cleanup does (a10 F9): the caller holds the lock
-- of dlock_sql_stats_lock and deletes the rows and their baselines next.
CREATE FUNCTION @extschema@.dlock_sql_stats_retire_rows()
RETURNS void
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
AS $dlock$
BEGIN
	IF NOT EXISTS (SELECT FROM @extschema@.dlock_stats_retired) THEN
		INSERT INTO @extschema@.dlock_stats_retired DEFAULT VALUES;
	END IF;
	WITH s AS (
		SELECT pg_catalog.sum(x.acquisitions) AS acquisitions,
			   pg_catalog.sum(x.owner_renewals) AS owner_renewals,
			   pg_catalog.sum(x.renewals) AS renewals, pg_catalog.sum(x.releases) AS releases,
			   pg_catalog.sum(x.takeovers) AS takeovers,
			   pg_catalog.sum(x.lost) OPERATOR(pg_catalog.+)
				   pg_catalog.count(*) FILTER (WHERE e.released_at IS NULL) AS lost,
			   pg_catalog.sum(x.waits) AS waits,
			   pg_catalog.round(pg_catalog.sum(x.wait_time) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 AS wait_us,
			   pg_catalog.round(pg_catalog.max(x.wait_time_max) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 AS wait_max_us
		  FROM @extschema@.dlock_stats AS x
		  JOIN @extschema@.dlock_expiry AS e ON e.name OPERATOR(pg_catalog.=) x.name)
	UPDATE @extschema@.dlock_stats_retired AS r
	   SET acquisitions = r.acquisitions OPERATOR(pg_catalog.+) s.acquisitions,
		   owner_renewals = r.owner_renewals OPERATOR(pg_catalog.+) s.owner_renewals,
		   renewals = r.renewals OPERATOR(pg_catalog.+) s.renewals,
		   releases = r.releases OPERATOR(pg_catalog.+) s.releases,
		   takeovers = r.takeovers OPERATOR(pg_catalog.+) s.takeovers,
		   lost = r.lost OPERATOR(pg_catalog.+) s.lost,
		   waits = r.waits OPERATOR(pg_catalog.+) s.waits,
		   wait_us = r.wait_us OPERATOR(pg_catalog.+) s.wait_us,
		   wait_max_us = GREATEST(r.wait_max_us, s.wait_max_us)
	  FROM s;
END
$dlock$;
REVOKE ALL ON FUNCTION @extschema@.dlock_sql_stats_retire_rows() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.dlock_sql_stats_retire_rows() IS
	'internal (dlock_import): add the counters of every lease row to dlock_stats_retired, an expiry never released as lost, before the rows are deleted';

-- The installing role may pass cleanup and reset on: where it does not own
-- the functions (a trusted extension's belong to the bootstrap superuser),
-- it gets EXECUTE with the grant option; where it owns them, nothing changes.
DO $dlock$
DECLARE
	installer pg_catalog.name := coalesce(nullif(pg_catalog.current_setting('role'), 'none'),
										  session_user)::pg_catalog.name;
BEGIN
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s, %s TO %I WITH GRANT OPTION',
							  '@extschema@.dlock_cleanup(pg_catalog.interval, pg_catalog.int4)'::pg_catalog.regprocedure,
							  '@extschema@.dlock_stats_reset(pg_catalog.text)'::pg_catalog.regprocedure,
							  installer);
END
$dlock$;

-- The C edition's counters in shared memory (busy answers, waits that timed
-- out, LK001 refusals), which the SQL edition has none of: no row, as in
-- the C edition without shared_preload_libraries.
CREATE FUNCTION @extschema@.dlock_stats_shared(
	OUT name pg_catalog.text, OUT busy pg_catalog.int8,
	OUT wait_timeouts pg_catalog.int8, OUT wait_timeout_time pg_catalog.float8,
	OUT wait_timeout_time_max pg_catalog.float8,
	OUT fence_refusals pg_catalog.int8, OUT counted_by_name pg_catalog.bool)
RETURNS SETOF record
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $dlock$
SELECT NULL::pg_catalog.text, NULL::pg_catalog.int8, NULL::pg_catalog.int8, NULL::pg_catalog.float8,
	   NULL::pg_catalog.float8, NULL::pg_catalog.int8, NULL::pg_catalog.bool
 WHERE false
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_stats_shared() IS
	'the counters dlock keeps in shared memory for this database: one row per name and one with a NULL name for the total; no row unless the library is in shared_preload_libraries; counted_by_name false: the name''s counters may miss events (dlock.stats_max_names), or in the total, names without a row are unknown, not 0';
