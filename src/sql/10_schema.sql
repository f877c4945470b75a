-- Copyright (c) 2026, the dlock developers
--
-- 10_schema.sql: the SQL edition's tables, counter and settings (issue 26,
-- docs/editions.md).
--
-- A lease is two rows.  dlock_lease holds who has the name (token, owner,
-- holder role) and changes only when the lease changes hands: the check
-- protection is a FOR SHARE lock on it, which a hand-over (an UPDATE, or
-- SELECT ... FOR UPDATE) waits for.  dlock_expiry holds how long the lease
-- lasts and whether it was released: renewals and releases update only it,
-- so they never wait for a checker, and the lock modes make sure a checker
-- never waits for them (FOR SHARE on one row, FOR NO KEY UPDATE on another).
-- Every table is written only by the SECURITY DEFINER functions of this
-- edition, which run as the owner of these tables.

CREATE TABLE @extschema@.dlock_lease (
	name		pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
	token		pg_catalog.int8 NOT NULL,
	owner		pg_catalog.text,
	role		pg_catalog.name NOT NULL,
	role_oid	pg_catalog.oid NOT NULL,
	role_system_identifier pg_catalog.int8,
	role_counter_relfilenode pg_catalog.oid NOT NULL,
	acquired_at	pg_catalog.timestamptz NOT NULL,
	CONSTRAINT dlock_lease_pkey PRIMARY KEY (name)
) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.0,
		autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
CREATE INDEX dlock_lease_token ON @extschema@.dlock_lease (token);
REVOKE ALL ON TABLE @extschema@.dlock_lease FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_lease IS
	'dlock leases (SQL edition), one row per lock name ever acquired: who holds it; changes only when the lease changes hands; written only by the dlock functions';
COMMENT ON COLUMN @extschema@.dlock_lease.name IS 'the lock name, 1 to 255 bytes';
COMMENT ON COLUMN @extschema@.dlock_lease.token IS 'fencing token of the last acquisition';
COMMENT ON COLUMN @extschema@.dlock_lease.owner IS 'owner label of the last acquisition; NULL when anonymous';
COMMENT ON COLUMN @extschema@.dlock_lease.role IS 'name of the holder role when the row was last written';
COMMENT ON COLUMN @extschema@.dlock_lease.role_oid IS 'the holder role, valid while role_system_identifier and role_counter_relfilenode match this database (docs/editions.md, the identity rule)';
COMMENT ON COLUMN @extschema@.dlock_lease.role_system_identifier IS 'system identifier of the cluster that recorded role_oid, NULL where pg_control_system() was not executable';
COMMENT ON COLUMN @extschema@.dlock_lease.role_counter_relfilenode IS 'relfilenode of dlock_token_seq when role_oid was recorded: a restore or a re-created counter makes the holder be found by name';
COMMENT ON COLUMN @extschema@.dlock_lease.acquired_at IS 'when the last acquisition happened (server clock)';

CREATE TABLE @extschema@.dlock_expiry (
	name		pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
	token		pg_catalog.int8 NOT NULL,
	expires_at	pg_catalog.timestamptz NOT NULL,
	released_at	pg_catalog.timestamptz,
	min_hold	pg_catalog.interval,
	lock_delay	pg_catalog.interval,
	pin_grace	pg_catalog.interval,
	CONSTRAINT dlock_expiry_pkey PRIMARY KEY (name)
) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0.0,
		autovacuum_vacuum_threshold = 1000, autovacuum_vacuum_cost_delay = 0);
REVOKE ALL ON TABLE @extschema@.dlock_expiry FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_expiry IS
	'dlock lease expiries (SQL edition), one row per row of dlock_lease: renewals and releases change only this row, so they never wait for a check';
COMMENT ON COLUMN @extschema@.dlock_expiry.name IS 'the lock name, 1 to 255 bytes';
COMMENT ON COLUMN @extschema@.dlock_expiry.token IS 'the token this expiry belongs to (the token of dlock_lease)';
COMMENT ON COLUMN @extschema@.dlock_expiry.expires_at IS 'when the lease expires or expired (server clock)';
COMMENT ON COLUMN @extschema@.dlock_expiry.released_at IS 'when the lease was released; NULL if it was not';
COMMENT ON COLUMN @extschema@.dlock_expiry.min_hold IS 'the minimum hold of the lease: released earlier, the name stays unavailable until acquired_at + min_hold; NULL for none';
COMMENT ON COLUMN @extschema@.dlock_expiry.pin_grace IS 'the pin grace of the lease (dlock_sql_settings.pin_grace when it was acquired or renewed): past its expiry or release plus this, a waiting acquire ends a transaction that still holds its check protection; NULL: never';
COMMENT ON COLUMN @extschema@.dlock_expiry.lock_delay IS 'the lock-delay of the lease: expired without a release, the name stays unavailable until expires_at + lock_delay; NULL for none';

-- When a lease that is not held can be taken again (issue 27 items 5 and
-- 6; a held lease's result is when it could be, at the earliest): after a
-- release, at acquired_at + min_hold (a revoke clears min_hold); after an
-- expiry without release, at expires_at + lock_delay, and not before
-- acquired_at + min_hold either (a renewal with a short ttl that expires
-- does not end the minimum hold early: a10 F7, a11 "Also").
CREATE FUNCTION @extschema@.dlock_sql_available_at(acquired_at pg_catalog.timestamptz,
	expires_at pg_catalog.timestamptz, released_at pg_catalog.timestamptz,
	min_hold pg_catalog.interval, lock_delay pg_catalog.interval)
RETURNS pg_catalog.timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $dlock$
SELECT CASE WHEN released_at IS NOT NULL
			THEN GREATEST(released_at, acquired_at OPERATOR(pg_catalog.+) coalesce(min_hold, '0'::pg_catalog.interval))
			ELSE GREATEST(expires_at OPERATOR(pg_catalog.+) coalesce(lock_delay, '0'::pg_catalog.interval),
						  acquired_at OPERATOR(pg_catalog.+) min_hold) END
$dlock$;
COMMENT ON FUNCTION @extschema@.dlock_sql_available_at(pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.timestamptz, pg_catalog.interval, pg_catalog.interval) IS
	'internal: when a lease that is not held can be taken again (after a release: acquired_at + min_hold at the earliest; after an expiry: expires_at + lock_delay, and acquired_at + min_hold at the earliest)';

-- The queue of a name: its row is created with the name's lease row; the
-- head of the queue holds FOR UPDATE on it, the others wait for that lock
-- in the lock manager's queue of the tuple (first come, first served, no CPU).
CREATE TABLE @extschema@.dlock_sql_queue (
	name		pg_catalog.text COLLATE pg_catalog."C" NOT NULL,
	CONSTRAINT dlock_sql_queue_pkey PRIMARY KEY (name)
);
REVOKE ALL ON TABLE @extschema@.dlock_sql_queue FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_sql_queue IS
	'dlock wait queues (SQL edition): one row per lock name; the head waiter holds FOR UPDATE on it';
COMMENT ON COLUMN @extschema@.dlock_sql_queue.name IS 'the lock name';

CREATE SEQUENCE @extschema@.dlock_token_seq
	AS pg_catalog.int8 MINVALUE 1 NO MAXVALUE START 1 CACHE 1 NO CYCLE;
REVOKE ALL ON SEQUENCE @extschema@.dlock_token_seq FROM PUBLIC;
COMMENT ON SEQUENCE @extschema@.dlock_token_seq IS
	'dlock fencing token counter; drawn only by dlock_acquire';

-- One row per jump of the counter (20_token.sql).  system_identifier and
-- timeline are NULL where the installing role may not read them.
CREATE TABLE @extschema@.dlock_epoch (
	floor				pg_catalog.int8 NOT NULL,
	system_identifier	pg_catalog.int8,
	timeline			pg_catalog.int8,
	database_oid		pg_catalog.oid NOT NULL,
	counter_relfilenode	pg_catalog.oid NOT NULL,
	jumped_at			pg_catalog.timestamptz NOT NULL,
	reason				pg_catalog.text NOT NULL,
	CONSTRAINT dlock_epoch_pkey PRIMARY KEY (floor)
);
REVOKE ALL ON TABLE @extschema@.dlock_epoch FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_epoch IS
	'dlock token epochs, one row per jump of the token counter; written only by the dlock functions';
COMMENT ON COLUMN @extschema@.dlock_epoch.floor IS 'every token handed out after the jump is above this';
COMMENT ON COLUMN @extschema@.dlock_epoch.system_identifier IS 'system identifier of the cluster that jumped (pg_control_system()); NULL where not readable';
COMMENT ON COLUMN @extschema@.dlock_epoch.timeline IS 'timeline the cluster wrote WAL on when it jumped; NULL where not readable (then the clock rule applies)';
COMMENT ON COLUMN @extschema@.dlock_epoch.database_oid IS 'OID of the database that jumped';
COMMENT ON COLUMN @extschema@.dlock_epoch.counter_relfilenode IS 'relfilenode of dlock_token_seq when it jumped';
COMMENT ON COLUMN @extschema@.dlock_epoch.jumped_at IS 'when the jump happened (server clock)';
COMMENT ON COLUMN @extschema@.dlock_epoch.reason IS 'why: first, system, database, timeline, counter, floor, lease, clock or rebase';

-- Jumps serialise on a lock of this table (SHARE UPDATE EXCLUSIVE, held
-- only from the read of the counter to its setval: 20_token.sql).
CREATE TABLE @extschema@.dlock_sql_jump (
	one			pg_catalog.bool NOT NULL DEFAULT true,
	CONSTRAINT dlock_sql_jump_pkey PRIMARY KEY (one),
	CONSTRAINT dlock_sql_jump_one CHECK (one)
);
INSERT INTO @extschema@.dlock_sql_jump DEFAULT VALUES;
REVOKE ALL ON TABLE @extschema@.dlock_sql_jump FROM PUBLIC;
COMMENT ON TABLE @extschema@.dlock_sql_jump IS
	'dlock (SQL edition): the table that jumps of the token counter lock, so that they run one after the other';
COMMENT ON COLUMN @extschema@.dlock_sql_jump.one IS 'always true: the table has one row';

-- The settings that are superuser GUCs in the C edition.
CREATE TABLE @extschema@.dlock_sql_settings (
	one			pg_catalog.bool NOT NULL DEFAULT true,
	max_ttl		pg_catalog.int4 NOT NULL DEFAULT 86400,
	events		pg_catalog.bool NOT NULL DEFAULT false,
	poll_interval pg_catalog.interval NOT NULL DEFAULT '2 ms',
	lock_delay	pg_catalog.interval NOT NULL DEFAULT '0',
	pin_grace	pg_catalog.interval,
	CONSTRAINT dlock_sql_settings_pkey PRIMARY KEY (one),
	CONSTRAINT dlock_sql_settings_one CHECK (one),
	CONSTRAINT dlock_sql_settings_max_ttl CHECK (max_ttl BETWEEN 1 AND 2147483647),
	CONSTRAINT dlock_sql_settings_poll_interval
		CHECK (poll_interval BETWEEN '1 ms'::pg_catalog.interval AND '1 s'::pg_catalog.interval),
	CONSTRAINT dlock_sql_settings_lock_delay
		CHECK (pg_catalog.isfinite(lock_delay) AND lock_delay >= '0'::pg_catalog.interval),
	CONSTRAINT dlock_sql_settings_pin_grace
		CHECK (pg_catalog.isfinite(pin_grace) AND pin_grace >= '0'::pg_catalog.interval)
);
INSERT INTO @extschema@.dlock_sql_settings DEFAULT VALUES;
REVOKE ALL ON TABLE @extschema@.dlock_sql_settings FROM PUBLIC;
GRANT SELECT ON TABLE @extschema@.dlock_sql_settings TO PUBLIC;
COMMENT ON TABLE @extschema@.dlock_sql_settings IS
	'dlock settings (SQL edition), one row; its owner changes them with UPDATE (they are the GUCs dlock.max_ttl and dlock.events of the C edition)';
COMMENT ON COLUMN @extschema@.dlock_sql_settings.one IS 'always true: the table has one row';
COMMENT ON COLUMN @extschema@.dlock_sql_settings.max_ttl IS 'the longest ttl in seconds (dlock.max_ttl of the C edition); default a day';
COMMENT ON COLUMN @extschema@.dlock_sql_settings.events IS 'send NOTIFY dlock when a lease changes hands or is released (dlock.events of the C edition); default off';
COMMENT ON COLUMN @extschema@.dlock_sql_settings.poll_interval IS 'how often the head of a wait queue looks at the lease while it is held (1 ms to 1 s); the hand-over delay after a release is about half of it';
COMMENT ON COLUMN @extschema@.dlock_sql_settings.pin_grace IS 'how long past a lease''s expiry or release a transaction holding its check protection may delay a hand-over before a waiting acquire ends it (dlock.pin_grace of the C edition); read at acquire and renew; default NULL: never';
COMMENT ON COLUMN @extschema@.dlock_sql_settings.lock_delay IS 'the lock-delay of an acquire or renewal that passes none (dlock.lock_delay of the C edition); default 0; at most max_ttl when used';

SELECT @extschema@.dlock_sql_config_dump('@extschema@.dlock_lease', '');
SELECT @extschema@.dlock_sql_config_dump('@extschema@.dlock_expiry', '');
SELECT @extschema@.dlock_sql_config_dump('@extschema@.dlock_token_seq', '');
SELECT @extschema@.dlock_sql_config_dump('@extschema@.dlock_epoch', '');
SELECT @extschema@.dlock_sql_config_dump('@extschema@.dlock_sql_settings', '');
