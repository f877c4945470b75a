-- 03_majors.sql: features that only some PostgreSQL majors have.
--
-- Each feature is tested on every major where it exists, and on the majors
-- before it the test proves that it really does not exist there (the server
-- refuses its syntax), so that a check is never skipped by mistake:
--   MERGE (15+): the dlock_fence() trigger rejects a stale token with LK001,
--     on MERGE's INSERT and UPDATE actions alike, and lets the holder write.
--   Infinite intervals (17+): an infinite ttl or wait is refused with 22023
--     and changes nothing.
-- Statements a major cannot parse are run as strings, by throws_ok and
-- lives_ok.  The whole file is one transaction that is rolled back.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION dlock;

SELECT plan(10);

-- Values carried from one statement to the next (tokens), never printed.
CREATE TEMP TABLE dlock_pgtap_val (k text PRIMARY KEY, i bigint);
INSERT INTO dlock_pgtap_val VALUES ('t1', dlock_acquire('pgtap-merge', '1 min'));
SELECT ok(dlock_release('pgtap-merge', (SELECT i FROM dlock_pgtap_val WHERE k = 't1')),
          'the first token is released');
INSERT INTO dlock_pgtap_val VALUES ('t2', dlock_acquire('pgtap-merge', '1 min'));

CREATE TABLE dlock_pgtap_ledger (id int PRIMARY KEY, amount int, token bigint);
CREATE TRIGGER ledger_fence BEFORE INSERT OR UPDATE ON dlock_pgtap_ledger
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('pgtap-merge', 'token');
INSERT INTO dlock_pgtap_ledger VALUES (1, 100, (SELECT i FROM dlock_pgtap_val WHERE k = 't2'));

-- ---------------------------------------------------------------------------
-- MERGE (PostgreSQL 15 and later): 4 tests on every major
-- ---------------------------------------------------------------------------
SELECT CASE WHEN pg_catalog.current_setting('server_version_num')::pg_catalog.int4 >= 150000
THEN collect_tap(
    throws_ok($$MERGE INTO dlock_pgtap_ledger AS l
                USING (SELECT 2 AS id, 5 AS amount,
                              (SELECT i FROM dlock_pgtap_val WHERE k = 't1') AS token) AS s
                   ON l.id = s.id
                 WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.amount, s.token)$$,
              'LK001', NULL, 'MERGE ... INSERT with a stale token: LK001'),
    throws_ok($$MERGE INTO dlock_pgtap_ledger AS l
                USING (SELECT 1 AS id, (SELECT i FROM dlock_pgtap_val WHERE k = 't1') AS token) AS s
                   ON l.id = s.id
                 WHEN MATCHED THEN UPDATE SET amount = 0, token = s.token$$,
              'LK001', NULL, 'MERGE ... UPDATE that sets a stale token: LK001'),
    lives_ok($$MERGE INTO dlock_pgtap_ledger AS l
               USING (SELECT 3 AS id, 7 AS amount,
                             (SELECT i FROM dlock_pgtap_val WHERE k = 't2') AS token) AS s
                  ON l.id = s.id
                WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.amount, s.token)$$,
             'MERGE ... INSERT by the holder goes through'),
    set_eq($$SELECT id, amount FROM dlock_pgtap_ledger$$,
           $$VALUES (1, 100), (3, 7)$$,
           'the stale MERGEs changed nothing; the holder''s row is there'))
ELSE collect_tap(
    throws_ok($$MERGE INTO dlock_pgtap_ledger AS l USING (SELECT 1 AS id) AS s ON l.id = s.id
                 WHEN MATCHED THEN DELETE$$,
              '42601', NULL, 'no MERGE before PostgreSQL 15: a syntax error'),
    skip('MERGE exists from PostgreSQL 15 on', 3))
END;

-- ---------------------------------------------------------------------------
-- Infinite intervals (PostgreSQL 17 and later): 5 tests on every major
-- ---------------------------------------------------------------------------
SELECT CASE WHEN pg_catalog.current_setting('server_version_num')::pg_catalog.int4 >= 170000
THEN collect_tap(
    throws_ok($$SELECT dlock_acquire('pgtap-inf', 'infinity')$$,
              '22023', NULL, 'dlock_acquire with ttl infinity: 22023'),
    throws_ok($$SELECT dlock_acquire('pgtap-inf', '-infinity')$$,
              '22023', NULL, 'dlock_acquire with ttl -infinity: 22023'),
    throws_ok($$SELECT dlock_acquire('pgtap-inf', '1 min', 'infinity')$$,
              '22023', NULL, 'dlock_acquire with wait infinity: 22023'),
    throws_ok($$SELECT dlock_renew('pgtap-merge', (SELECT i FROM dlock_pgtap_val WHERE k = 't2'),
                                   'infinity')$$,
              '22023', NULL, 'dlock_renew with ttl infinity: 22023'),
    is((SELECT pg_catalog.count(*)::integer FROM dlock_leases WHERE name = 'pgtap-inf'),
       0, 'the refused acquires left no lease behind'))
ELSE collect_tap(
    throws_ok($$SELECT 'infinity'::pg_catalog.interval$$,
              '22007', NULL, 'no infinite intervals before PostgreSQL 17: invalid input'),
    skip('infinite intervals exist from PostgreSQL 17 on', 4))
END;

SELECT * FROM finish();
ROLLBACK;
