-- Copyright (c) 2026, the dlock developers
--
-- 71_stats_comments.sql: the comments of the views dlock_stats,
-- dlock_stats_total and dlock_waiters and of their columns, one text for
-- both editions (issue 27 items 1 and 3): the SQL edition's script has this
-- file in its place, after the views (70_stats.sql), and make splices it
-- into the C edition's update script (dlock--1.1--1.2.sql, at its
-- "-- @include" line, after its views).
COMMENT ON VIEW @extschema@.dlock_stats IS
	'counters per lock name, one row per lease row, since the row was made or its last reset; busy, wait_timeouts and fence_refusals need shared_preload_libraries = ''dlock'' (else NULL) and count from the server''s start';
COMMENT ON COLUMN @extschema@.dlock_stats.name IS 'the lock name';
COMMENT ON COLUMN @extschema@.dlock_stats.acquisitions IS 'acquires that issued a new token';
COMMENT ON COLUMN @extschema@.dlock_stats.owner_renewals IS 'acquires by the holder''s owner that kept the token';
COMMENT ON COLUMN @extschema@.dlock_stats.renewals IS 'dlock_renew calls that returned true';
COMMENT ON COLUMN @extschema@.dlock_stats.releases IS 'dlock_release calls that returned true';
COMMENT ON COLUMN @extschema@.dlock_stats.takeovers IS 'acquisitions of a lease that had expired without a release';
COMMENT ON COLUMN @extschema@.dlock_stats.lost IS 'leases that expired without a release, counted when seen: at the takeover, at dlock_cleanup or at dlock_import(replace => true)';
COMMENT ON COLUMN @extschema@.dlock_stats.busy IS 'acquires that returned NULL (shared memory; NULL without shared_preload_libraries, or for a name that dlock.stats_max_names left uncounted)';
COMMENT ON COLUMN @extschema@.dlock_stats.waits IS 'acquires that waited, whether they got the lease or not (those that did not: only with shared_preload_libraries)';
COMMENT ON COLUMN @extschema@.dlock_stats.wait_time IS 'total seconds those acquires waited';
COMMENT ON COLUMN @extschema@.dlock_stats.wait_time_max IS 'the longest of those waits, in seconds';
COMMENT ON COLUMN @extschema@.dlock_stats.wait_timeouts IS 'acquires that waited and returned NULL (shared memory; NULL without shared_preload_libraries, or for a name that dlock.stats_max_names left uncounted)';
COMMENT ON COLUMN @extschema@.dlock_stats.fence_refusals IS 'LK001 errors raised by dlock_assert and dlock_fence (shared memory; NULL without shared_preload_libraries, or for a name that dlock.stats_max_names left uncounted)';
COMMENT ON COLUMN @extschema@.dlock_stats.stats_reset IS 'when the name''s counters were last reset; NULL if never';
COMMENT ON VIEW @extschema@.dlock_stats_total IS
	'the counters of dlock_stats summed over every lease row and the rows dlock_cleanup deleted or dlock_import replaced (dlock_stats_retired): they never go down but by dlock_stats_reset()';
COMMENT ON COLUMN @extschema@.dlock_stats_total.acquisitions IS 'acquires that issued a new token';
COMMENT ON COLUMN @extschema@.dlock_stats_total.owner_renewals IS 'acquires by the holder''s owner that kept the token';
COMMENT ON COLUMN @extschema@.dlock_stats_total.renewals IS 'dlock_renew calls that returned true';
COMMENT ON COLUMN @extschema@.dlock_stats_total.releases IS 'dlock_release calls that returned true';
COMMENT ON COLUMN @extschema@.dlock_stats_total.takeovers IS 'acquisitions of a lease that had expired without a release';
COMMENT ON COLUMN @extschema@.dlock_stats_total.lost IS 'leases that expired without a release, counted when seen: at the takeover, at dlock_cleanup or at dlock_import(replace => true)';
COMMENT ON COLUMN @extschema@.dlock_stats_total.busy IS 'acquires that returned NULL (shared memory; NULL without shared_preload_libraries)';
COMMENT ON COLUMN @extschema@.dlock_stats_total.waits IS 'acquires that waited, whether they got the lease or not (those that did not: only with shared_preload_libraries)';
COMMENT ON COLUMN @extschema@.dlock_stats_total.wait_time IS 'total seconds those acquires waited';
COMMENT ON COLUMN @extschema@.dlock_stats_total.wait_time_max IS 'the longest of those waits, in seconds';
COMMENT ON COLUMN @extschema@.dlock_stats_total.wait_timeouts IS 'acquires that waited and returned NULL (shared memory; NULL without shared_preload_libraries)';
COMMENT ON COLUMN @extschema@.dlock_stats_total.fence_refusals IS 'LK001 errors raised by dlock_assert and dlock_fence (shared memory; NULL without shared_preload_libraries)';
COMMENT ON COLUMN @extschema@.dlock_stats_total.stats_reset IS 'when all counters were last reset (dlock_stats_reset()); NULL if never';
COMMENT ON VIEW @extschema@.dlock_waiters IS
	'waiting acquires (kind waiting) and transactions that keep a lease no longer held from changing hands with its check protection (kind pinning)';
COMMENT ON COLUMN @extschema@.dlock_waiters.name IS 'the lock name';
COMMENT ON COLUMN @extschema@.dlock_waiters.kind IS 'waiting: an acquire waiting for the lease; pinning: a transaction holding the check protection of a lease that is no longer held';
COMMENT ON COLUMN @extschema@.dlock_waiters.pid IS 'the backend; NULL unless the current role is a member of its role or of pg_read_all_stats';
COMMENT ON COLUMN @extschema@.dlock_waiters.role IS 'the backend''s role; NULL unless the current role is a member of it or of pg_read_all_stats';
COMMENT ON COLUMN @extschema@.dlock_waiters.since IS 'waiting: when the acquire began (with shared_preload_libraries; else when it began to wait in the lock manager, or its statement''s start); pinning: its transaction''s start';
COMMENT ON COLUMN @extschema@.dlock_waiters.position IS 'waiting: 1 for the head of the queue (the one that looks at the lease), then by pg_locks.waitstart order; pinning: NULL';
COMMENT ON COLUMN @extschema@.dlock_waiters.deadline IS 'waiting: when the acquire gives up (with shared_preload_libraries; else NULL); pinning: NULL';
COMMENT ON COLUMN @extschema@.dlock_waiters.state IS 'the backend''s state (pg_stat_activity.state), with the same visibility';
COMMENT ON COLUMN @extschema@.dlock_waiters.lease_expires_at IS 'when the lease expires or expired; NULL if the name has no lease row';
