-- Copyright (c) 2026, the dlock developers
--
-- The lease lifecycle: acquire, busy, release, renew, owners, expiry, waiting.
-- Tokens and times vary, so results are compared, never printed.
--
CREATE EXTENSION dlock;

-- A free lease is taken and gets a token.
SELECT dlock_acquire('job', '1 min') AS t1 \gset
SELECT :t1 > 0 AS got_token;

-- Held by someone else: busy, NULL; busy calls burn no tokens.
SELECT dlock_acquire('job', '1 min') IS NULL AS busy;
SELECT dlock_acquire('job', '1 min', '0', 'someone') IS NULL AS busy_for_an_owner;
SELECT dlock_acquire('other', '1 min') AS t2 \gset
SELECT :t2 = :t1 + 1 AS next_token_no_gap;

-- The view.
SELECT name, owner, held, token = :t1 AS token_ok, role = current_user AS role_ok,
       expires_at - acquired_at = '1 min' AS ttl_ok, released_at IS NULL AS not_released
  FROM dlock_leases ORDER BY name;

-- Release: true once, then false; the lease is free and a new token is higher.
SELECT dlock_release('job', :t1) AS released;
SELECT dlock_release('job', :t1) AS released_again;
SELECT held, released_at IS NOT NULL AS has_released_at FROM dlock_leases WHERE name = 'job';
SELECT dlock_acquire('job', '1 min') AS t3 \gset
SELECT :t3 > :t2 AS higher_than_every_token;
SELECT dlock_release('job', :t1) AS stale_release;
SELECT held FROM dlock_leases WHERE name = 'job';

-- Release of an unknown name, or with a wrong token, is false.
SELECT dlock_release('never-held', 1) AS unknown_name;
SELECT dlock_release('job', :t3 + 1000) AS wrong_token;

-- Renew: true, same token, later expiry; stale tokens are refused.
SELECT expires_at AS e1 FROM dlock_leases WHERE name = 'job' \gset
SELECT dlock_renew('job', :t3, '1 hour') AS renewed;
SELECT token = :t3 AS same_token, expires_at > :'e1'::timestamptz AS later,
       expires_at - clock_timestamp() > '59 min' AS about_an_hour
  FROM dlock_leases WHERE name = 'job';
SELECT dlock_renew('job', :t1, '1 hour') AS stale_renew;
SELECT dlock_renew('never-held', 1, '1 hour') AS unknown_renew;
SELECT dlock_release('job', :t3) AS released;
SELECT dlock_renew('job', :t3, '1 hour') AS renew_after_release;

-- Owners: re-acquiring one's own unexpired lease renews it, same token.
SELECT dlock_acquire('leader', '10 s', '0', 'pod-a') AS l1 \gset
SELECT expires_at AS le1 FROM dlock_leases WHERE name = 'leader' \gset
SELECT dlock_acquire('leader', '1 min', '0', 'pod-a') = :l1 AS owner_renews_same_token;
SELECT expires_at > :'le1'::timestamptz AS owner_renewal_extends, owner
  FROM dlock_leases WHERE name = 'leader';
SELECT dlock_acquire('leader', '1 min', '0', 'pod-b') IS NULL AS other_owner_busy;
SELECT dlock_acquire('leader', '1 min') IS NULL AS anonymous_busy;
SELECT dlock_acquire('leader', '1 min', owner => 'POD-A') IS NULL AS owner_is_case_sensitive;
SELECT dlock_release('leader', :l1) AS leader_released;
SELECT dlock_acquire('leader', '1 min', '0', 'pod-a') > :l1 AS new_term_new_token;

-- An anonymous holder that acquires again is busy like anybody else.
SELECT dlock_acquire('anon', '1 min') IS NOT NULL AS anon_first;
SELECT dlock_acquire('anon', '1 min') IS NULL AS anon_again_busy;

-- Expiry: by the server clock at each call, also inside one transaction.
SELECT dlock_acquire('short', '200 ms') AS s1 \gset
SELECT pg_sleep(0.4);
SELECT held FROM dlock_leases WHERE name = 'short';
SELECT dlock_renew('short', :s1, '1 min') AS expired_never_renewed;
SELECT dlock_release('short', :s1) AS expired_release;
SELECT dlock_check('short', :s1) AS expired_check;
SELECT dlock_acquire('short', '1 min') > :s1 AS expired_lease_taken_with_higher_token;

BEGIN;
SELECT dlock_acquire('in-tx', '200 ms') AS x1 \gset
SELECT dlock_check('in-tx', :x1) AS held_at_first;
SELECT pg_sleep(0.4);
SELECT dlock_check('in-tx', :x1) AS expired_within_the_transaction;
SELECT dlock_acquire('in-tx', '1 min') > :x1 AS retaken_in_same_transaction;
COMMIT;

-- An owner whose lease expired gets a new token, not a renewal.
SELECT dlock_acquire('lapsed', '200 ms', '0', 'pod-a') AS p1 \gset
SELECT pg_sleep(0.4);
SELECT dlock_acquire('lapsed', '1 min', '0', 'pod-a') > :p1 AS lapsed_owner_new_token;

-- Waiting: for an expiry ...
SELECT dlock_acquire('w', '300 ms') IS NOT NULL AS w_held;
SELECT dlock_acquire('w', '1 min', '5 s') IS NOT NULL AS got_it_after_expiry;
-- ... and giving up after the wait.
SELECT dlock_acquire('w', '1 min', '200 ms') IS NULL AS gave_up_after_wait;

-- A rolled-back acquire leaves the lease free, a rolled-back release held.
BEGIN;
SELECT dlock_acquire('rb', '1 min') IS NOT NULL AS acquired_in_tx;
ROLLBACK;
SELECT count(*) AS rb_rows FROM dlock_leases WHERE name = 'rb' AND held;
SELECT dlock_acquire('rb', '1 min') AS rb1 \gset
BEGIN;
SELECT dlock_release('rb', :rb1) AS released_in_tx;
ROLLBACK;
SELECT held FROM dlock_leases WHERE name = 'rb';
BEGIN;
SAVEPOINT sp;
SELECT dlock_release('rb', :rb1) AS released_in_savepoint;
ROLLBACK TO SAVEPOINT sp;
SELECT dlock_check('rb', :rb1) AS still_held_after_rollback_to_savepoint;
COMMIT;

-- Several calls in one statement see each other.
SELECT dlock_release('same-stmt', dlock_acquire('same-stmt', '1 min')) AS acquire_then_release;
SELECT held FROM dlock_leases WHERE name = 'same-stmt';

-- Tokens: strictly increasing over all names, no gaps from busy calls.
CREATE TEMP TABLE toks (n int, t bigint);
INSERT INTO toks SELECT i, dlock_acquire('many-' || i, '1 min') FROM generate_series(1, 50) i;
INSERT INTO toks SELECT 100 + i, dlock_acquire('many-' || i, '1 min') FROM generate_series(1, 50) i;
SELECT count(t) AS granted, count(*) - count(t) AS busy,
       bool_and(t > (SELECT max(token) FROM dlock_leases WHERE name NOT LIKE 'many-%')) AS above_earlier,
       max(t) - min(t) = 49 AS no_gaps
  FROM toks;
SELECT bool_and(a.t < b.t) AS in_call_order
  FROM toks a JOIN toks b ON b.n = a.n + 1 WHERE a.n < 50;

-- Names are any 1 to 255 bytes of text.
SELECT dlock_acquire(n, '1 min') IS NOT NULL AS ok, octet_length(n) AS bytes
  FROM (VALUES ('it''s "quoted"'), (E'tab\there\nnewline'), ('%s%d%n'), ('名前-ロック'),
               ('\'), (' '), (repeat('x', 255)), (repeat('é', 127))) v(n);
SELECT dlock_acquire(repeat('x', 255), '1 min') IS NULL AS long_name_held;
SELECT count(*) AS odd_names_held FROM dlock_leases
 WHERE held AND name IN ('it''s "quoted"', E'tab\there\nnewline', '%s%d%n', '名前-ロック', '\', ' ');

-- dlock.max_ttl caps the ttl.
SET dlock.max_ttl = '10s';
SHOW dlock.max_ttl;
SELECT dlock_acquire('capped', '10 s') IS NOT NULL AS at_the_cap;
SELECT dlock_acquire('capped2', '11 s');
RESET dlock.max_ttl;
SHOW dlock.max_ttl;
SELECT dlock_acquire('capped2', '1 day') IS NOT NULL AS default_cap_one_day;

-- The busy path assigns no transaction ID and writes no WAL.
SELECT dlock_acquire('busy', '1 hour') IS NOT NULL AS busy_held;
BEGIN;
SELECT count(*) AS busy_calls FROM generate_series(1, 100) WHERE dlock_acquire('busy', '1 min') IS NULL;
SELECT pg_current_xact_id_if_assigned() IS NULL AS no_xid_assigned;
COMMIT;
CREATE FUNCTION explain_wal(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE l text;
BEGIN
  FOR l IN EXECUTE 'EXPLAIN (ANALYZE, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
    RETURN NEXT l;
  END LOOP;
END $$;
-- A free lease writes WAL (the positive control) ...
SELECT count(*) > 0 AS acquire_writes_wal FROM explain_wal($$SELECT dlock_acquire('wal-' || i, '1 min') FROM generate_series(1, 10) i$$) l WHERE l LIKE '%WAL:%';
-- ... a busy one writes none.
SELECT count(*) AS busy_wal_lines FROM explain_wal($$SELECT dlock_acquire('busy', '1 min') FROM generate_series(1, 100)$$) l WHERE l LIKE '%WAL:%';
DROP FUNCTION explain_wal(text);

-- Cleanup deletes idle rows only, and never lowers a future token.
SELECT max(token) AS top FROM dlock_leases \gset
SELECT dlock_acquire('idle-1', '1 min') AS i1 \gset
SELECT dlock_release('idle-1', :i1);
SELECT dlock_acquire('idle-2', '100 ms') AS i2 \gset
SELECT dlock_acquire('still-held', '1 hour') IS NOT NULL AS held_one;
SELECT pg_sleep(0.2);
SELECT dlock_cleanup('1 hour') AS nothing_old_enough;
SELECT dlock_cleanup('0', 1) AS at_most_one;
SELECT dlock_cleanup('0') > 0 AS deleted_the_rest;
SELECT count(*) AS idle_rows_left FROM dlock_leases WHERE NOT held;
SELECT count(*) > 0 AS held_rows_kept FROM dlock_leases WHERE held AND name = 'still-held';
SELECT dlock_acquire('idle-1', '1 min') > :i2 AS next_token_still_higher;
SELECT dlock_cleanup(NULL);
SELECT dlock_cleanup('-1 s');
SELECT dlock_cleanup('1 s', 0);

-- dlock.max_leases_per_role caps the leases one role holds at once.
CREATE ROLE regress_dlock_capped;
SET dlock.max_leases_per_role = 2;
SET ROLE regress_dlock_capped;
SELECT dlock_acquire('cap-1', '1 min') IS NOT NULL AS first_lease,
       dlock_acquire('cap-2', '1 min', owner => 'me') IS NOT NULL AS second_lease;
SELECT dlock_acquire('cap-3', '1 min');
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_acquire('cap-2', '1 min', owner => 'me') IS NOT NULL AS owner_renewal_still_works;
SELECT dlock_acquire('cap-1', '1 min') IS NULL AS busy_is_not_an_error;
SET dlock.max_leases_per_role = 100;
\echo :LAST_ERROR_SQLSTATE
SELECT dlock_release('cap-1', token) AS released FROM dlock_leases WHERE name = 'cap-1';
SELECT dlock_acquire('cap-3', '1 min') IS NOT NULL AS room_again;
RESET ROLE;
RESET dlock.max_leases_per_role;
SELECT count(*) AS capped_role_holds FROM dlock_leases WHERE held AND role = 'regress_dlock_capped';
DROP ROLE regress_dlock_capped;
