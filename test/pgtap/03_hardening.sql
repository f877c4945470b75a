-- 03_hardening.sql: what other roles and a superuser's DDL can do to a lease
-- (issue 13: findings 2, 4, 6, 7, 8 and 9).
--
-- * Expression and partial indexes, a check constraint and a row-level
--   security policy on dlock_lease are handled correctly; a trigger is
--   refused with a clear error.  (On 1.0 an expression index crashed every
--   acquire, and a partial index gave wrong answers.)
-- * Only the holder role (or a member) may take the protection of a check:
--   another role that presents the right token gets 42501, and dlock_leases
--   shows it no token.
-- * The holder is a role, not a name: a rename keeps the leases, a role
--   created later under the old name gets none, a dropped holder's leases
--   are left to superusers.
--
-- Everything made here vanishes with the final ROLLBACK.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION dlock;

SELECT plan(50);

CREATE ROLE dlock_pgtap_h1 NOLOGIN;
CREATE ROLE dlock_pgtap_h2 NOLOGIN;
CREATE ROLE dlock_pgtap_h3 NOLOGIN;
GRANT dlock_pgtap_h1 TO dlock_pgtap_h3;

-- Values carried from one statement to the next (tokens), never printed.
CREATE TEMP TABLE dlock_pgtap_val (k text PRIMARY KEY, i bigint);
GRANT ALL ON dlock_pgtap_val TO PUBLIC;

-- ---------------------------------------------------------------------------
-- Finding 2: DDL on the lease table
-- ---------------------------------------------------------------------------
CREATE INDEX dlock_pgtap_lower ON dlock_lease (lower(name));
CREATE INDEX dlock_pgtap_partial ON dlock_lease (expires_at) WHERE released_at IS NULL;
CREATE INDEX dlock_pgtap_partial_owner ON dlock_lease (owner) WHERE owner LIKE 'w%';

SELECT lives_ok($$INSERT INTO dlock_pgtap_val VALUES ('x1', dlock_acquire('Index Test', '1 min', '0', 'worker'))$$,
                'acquire with an expression and partial indexes on the table');
SELECT is((SELECT i FROM dlock_pgtap_val WHERE k = 'x1') > 0, true, 'the acquire returned a token');
SELECT is(dlock_acquire('Index Test', '1 min', '0', 'worker'), (SELECT i FROM dlock_pgtap_val WHERE k = 'x1'),
          'an owner renewal through the indexes keeps its token');
SELECT is(dlock_renew('Index Test', (SELECT i FROM dlock_pgtap_val WHERE k = 'x1'), '2 min'), true,
          'renew with the indexes');

-- Every index answers like the table (the planner is made to use them).
SET LOCAL enable_seqscan = off;
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE lower(name) = 'index test'), 1,
          'the expression index finds the row');
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE released_at IS NULL AND expires_at > '-infinity'), 1,
          'the partial index finds the held row');
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE owner LIKE 'w%' AND owner = 'worker'), 1,
          'the partial index on owner finds the row');
SELECT is(dlock_release('Index Test', (SELECT i FROM dlock_pgtap_val WHERE k = 'x1')), true,
          'release with the indexes');
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE released_at IS NULL AND expires_at > '-infinity'), 0,
          'the released row has left the partial index');
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE lower(name) = 'index test'), 1,
          'the expression index still finds the released row');
SELECT lives_ok($$SELECT dlock_acquire('Index Test', '1 min')$$,
                'a new holder takes the released lease through the indexes');
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE released_at IS NULL AND expires_at > '-infinity'), 1,
          'the new holder is back in the partial index');
RESET enable_seqscan;
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE name = 'Index Test'), 1, 'one row per name');

-- A unique expression index is enforced, as a clear error.
CREATE UNIQUE INDEX dlock_pgtap_unique_lower ON dlock_lease (lower(name));
SELECT throws_ok($$SELECT dlock_acquire('INDEX TEST', '1 min')$$, '23505', NULL,
                 'a unique expression index is enforced with 23505');
DROP INDEX dlock_pgtap_unique_lower;

-- A check constraint is enforced.
ALTER TABLE dlock_lease ADD CONSTRAINT dlock_pgtap_short CHECK (length(name) < 20);
SELECT throws_ok($$SELECT dlock_acquire('a name that is far too long for the check', '1 min')$$,
                 '23514', NULL, 'a check constraint is enforced with 23514');
ALTER TABLE dlock_lease DROP CONSTRAINT dlock_pgtap_short;

-- A trigger is refused with a clear error, and nothing is written.
CREATE FUNCTION dlock_pgtap_trig() RETURNS trigger LANGUAGE plpgsql
	AS $$BEGIN NEW.token := 1; RETURN NEW; END$$;
CREATE TRIGGER dlock_pgtap_trigger BEFORE INSERT OR UPDATE ON dlock_lease
	FOR EACH ROW EXECUTE FUNCTION dlock_pgtap_trig();
SELECT throws_ok($$SELECT dlock_acquire('trigger test', '1 min')$$, '0A000',
                 'relation "dlock_lease" of extension "dlock" must not have triggers',
                 'an acquire on a table with a trigger is refused with 0A000');
SELECT is((SELECT count(*)::int FROM dlock_lease WHERE name = 'trigger test'), 0,
          'the refused acquire wrote nothing');
DROP TRIGGER dlock_pgtap_trigger ON dlock_lease;

-- Row-level security policies restrict queries of the table, not dlock.
ALTER TABLE dlock_lease ENABLE ROW LEVEL SECURITY;
ALTER TABLE dlock_lease FORCE ROW LEVEL SECURITY;
CREATE POLICY dlock_pgtap_none ON dlock_lease USING (false) WITH CHECK (false);
SELECT lives_ok($$INSERT INTO dlock_pgtap_val VALUES ('x2', dlock_acquire('policy test', '1 min'))$$,
                'acquire under a policy that hides every row');
SELECT is(dlock_check('policy test', (SELECT i FROM dlock_pgtap_val WHERE k = 'x2')), true,
          'check sees the lease under the policy');
SELECT is(dlock_acquire('policy test', '1 min'), NULL, 'a second acquire is busy under the policy');
SELECT is(dlock_release('policy test', (SELECT i FROM dlock_pgtap_val WHERE k = 'x2')), true,
          'release under the policy');
DROP POLICY dlock_pgtap_none ON dlock_lease;
ALTER TABLE dlock_lease NO FORCE ROW LEVEL SECURITY;
ALTER TABLE dlock_lease DISABLE ROW LEVEL SECURITY;

-- ---------------------------------------------------------------------------
-- Finding 4: another role's check
-- ---------------------------------------------------------------------------
SET ROLE dlock_pgtap_h1;
INSERT INTO dlock_pgtap_val VALUES ('h1', dlock_acquire('pgtap 03 held', '1 hour'));
SELECT is(dlock_check('pgtap 03 held', (SELECT i FROM dlock_pgtap_val WHERE k = 'h1')), true,
          'the holder role checks its token');
SELECT is((SELECT token FROM dlock_leases WHERE name = 'pgtap 03 held'),
          (SELECT i FROM dlock_pgtap_val WHERE k = 'h1'), 'the holder role sees its token in dlock_leases');
SET ROLE dlock_pgtap_h2;
SELECT is((SELECT token FROM dlock_leases WHERE name = 'pgtap 03 held'), NULL,
          'another role sees no token in dlock_leases');
SELECT is((SELECT role::text FROM dlock_leases WHERE name = 'pgtap 03 held'), 'dlock_pgtap_h1',
          'another role sees the holder role');
SELECT throws_ok($$SELECT dlock_check('pgtap 03 held', (SELECT i FROM dlock_pgtap_val WHERE k = 'h1'))$$,
                 '42501', 'permission denied to check lock "pgtap 03 held"',
                 'another role that presents the right token cannot check it (42501)');
SELECT throws_ok($$SELECT dlock_assert('pgtap 03 held', (SELECT i FROM dlock_pgtap_val WHERE k = 'h1'))$$,
                 '42501', NULL, 'nor assert it (42501)');
SELECT is(dlock_check('pgtap 03 held', 1), false, 'a wrong token is still just false for another role');
SET ROLE dlock_pgtap_h3;
SELECT is(dlock_check('pgtap 03 held', (SELECT i FROM dlock_pgtap_val WHERE k = 'h1')), true,
          'a member of the holder role checks the token');
SELECT is((SELECT token FROM dlock_leases WHERE name = 'pgtap 03 held'),
          (SELECT i FROM dlock_pgtap_val WHERE k = 'h1'), 'a member sees the token');
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Finding 8: the holder is a role, not a name
-- ---------------------------------------------------------------------------
ALTER ROLE dlock_pgtap_h1 RENAME TO dlock_pgtap_h1_renamed;
SET ROLE dlock_pgtap_h1_renamed;
SELECT is(dlock_renew('pgtap 03 held', (SELECT i FROM dlock_pgtap_val WHERE k = 'h1'), '1 hour'), true,
          'a renamed holder role renews its lease');
SELECT is((SELECT role::text FROM dlock_leases WHERE name = 'pgtap 03 held'), 'dlock_pgtap_h1_renamed',
          'dlock_leases shows the current name of the holder role');
RESET ROLE;
CREATE ROLE dlock_pgtap_h1 NOLOGIN;
SET ROLE dlock_pgtap_h1;
SELECT throws_ok($$SELECT dlock_release('pgtap 03 held', (SELECT i FROM dlock_pgtap_val WHERE k = 'h1'))$$,
                 '42501', NULL, 'a new role under the old name cannot release the lease');
SELECT is((SELECT token FROM dlock_leases WHERE name = 'pgtap 03 held'), NULL,
          'a new role under the old name sees no token');
SELECT is(dlock_acquire('pgtap 03 held', '1 min', '0', NULL), NULL,
          'a new role under the old name cannot take the lease');
SET ROLE dlock_pgtap_h1_renamed;
SELECT is(dlock_release('pgtap 03 held', (SELECT i FROM dlock_pgtap_val WHERE k = 'h1')), true,
          'the renamed holder role releases its lease');

-- A dropped holder: its leases are left to superusers.
SET ROLE dlock_pgtap_h2;
INSERT INTO dlock_pgtap_val VALUES ('h2', dlock_acquire('pgtap 03 orphan', '1 hour'));
RESET ROLE;
DROP ROLE dlock_pgtap_h2;
CREATE ROLE dlock_pgtap_h2 NOLOGIN;
SELECT is((SELECT role FROM dlock_leases WHERE name = 'pgtap 03 orphan'), NULL,
          'dlock_leases shows no role for a dropped holder');
SET ROLE dlock_pgtap_h2;
SELECT throws_ok($$SELECT dlock_renew('pgtap 03 orphan', (SELECT i FROM dlock_pgtap_val WHERE k = 'h2'), '1 hour')$$,
                 '42501', NULL, 'a role re-created under the dropped holder''s name cannot renew its lease');
RESET ROLE;
SELECT is(dlock_release('pgtap 03 orphan', (SELECT i FROM dlock_pgtap_val WHERE k = 'h2')), true,
          'a superuser releases the lease of a dropped holder');

-- ---------------------------------------------------------------------------
-- Finding 7: dlock.max_ttl bounds the real expiry, whatever the interval
-- ---------------------------------------------------------------------------
SELECT throws_ok($$SELECT dlock_acquire('pgtap 03 ttl', interval '1200 mons -35999 days')$$,
                 '22023', NULL, 'a mixed-sign ttl a nominal day long but 525 days real is refused');
SELECT throws_ok($$SELECT dlock_acquire('pgtap 03 ttl', interval '2 mons -59 days')$$,
                 '22023', NULL, 'a ttl of 2 months less 59 days is refused when it reaches past a day');
SELECT throws_ok($$SELECT dlock_acquire('pgtap 03 ttl', interval '86401 seconds')$$,
                 '22023', NULL, 'a ttl one second over a day is refused');
INSERT INTO dlock_pgtap_val VALUES ('t1', dlock_acquire('pgtap 03 ttl', '1 day'));
SELECT isnt((SELECT i FROM dlock_pgtap_val WHERE k = 't1'), NULL, 'a ttl of 1 day is allowed');
SELECT throws_ok($$SELECT dlock_renew('pgtap 03 ttl', (SELECT i FROM dlock_pgtap_val WHERE k = 't1'),
                                      interval '1200 mons -35999 days')$$,
                 '22023', NULL, 'renew refuses the mixed-sign ttl too');
SELECT ok((SELECT expires_at <= clock_timestamp() + interval '1 day 1 hour'
             FROM dlock_leases WHERE name = 'pgtap 03 ttl'), 'the expiry stays within a day');

-- ---------------------------------------------------------------------------
-- Finding 9: waiting for a lease this transaction holds
-- ---------------------------------------------------------------------------
INSERT INTO dlock_pgtap_val VALUES ('w0', (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
SELECT is(dlock_acquire('pgtap 03 ttl', '1 min', '5 s'), NULL,
          'an acquire that would wait for a lease its own transaction holds says busy');
SELECT ok((extract(epoch FROM clock_timestamp()) * 1000)::bigint
            - (SELECT i FROM dlock_pgtap_val WHERE k = 'w0') < 2000,
          'and says it at once, not after the wait');

-- ---------------------------------------------------------------------------
-- Finding 6: a cleanup of any size
-- ---------------------------------------------------------------------------
INSERT INTO dlock_lease (name, token, role, acquired_at, expires_at, released_at)
	SELECT 'pgtap 03 old ' || i, i, current_user, now() - interval '3 days',
		   now() - interval '2 days', NULL
	  FROM generate_series(1, 20000) AS i;
SELECT is(dlock_cleanup('1 day', 30000), 20000::bigint, 'one call cleans 20,000 expired rows');
SELECT cmp_ok((SELECT count(*)::int FROM pg_catalog.pg_locks
                WHERE locktype = 'advisory' AND objsubid = 17484
                  AND pid = pg_catalog.pg_backend_pid()), '<', 20,
              'and keeps no lock per row');
SELECT lives_ok($$SELECT pg_advisory_xact_lock(i) FROM generate_series(1, 100) AS i$$,
                'advisory locks can still be taken after it');

SELECT * FROM finish();
ROLLBACK;
