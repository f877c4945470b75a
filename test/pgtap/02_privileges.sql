-- 02_privileges.sql: who may do what with dlock.
--
-- A plain role uses dlock only through its functions and the dlock_leases
-- view; it can neither read nor write the lease table or the token sequence
-- directly.  A lease taken by one role is released or renewed only by that
-- role (or its members), even by someone who knows the token.  Functions and
-- operators planted in front of pg_catalog on the search_path change nothing:
-- dlock decides by the real server clock.
--
-- The roles, schemas and leases made here vanish with the final ROLLBACK.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION dlock;

SELECT plan(80);

CREATE ROLE dlock_pgtap_a NOLOGIN;
CREATE ROLE dlock_pgtap_b NOLOGIN;
CREATE ROLE dlock_pgtap_c NOLOGIN;
GRANT dlock_pgtap_a TO dlock_pgtap_c;

-- Values carried from one statement to the next (tokens, booleans), never printed.
CREATE TEMP TABLE dlock_pgtap_val (k text PRIMARY KEY, b boolean, i bigint);
GRANT ALL ON dlock_pgtap_val TO PUBLIC;

SELECT is((SELECT pg_catalog.count(*)::integer FROM pg_catalog.pg_roles
            WHERE rolname IN ('dlock_pgtap_a', 'dlock_pgtap_b', 'dlock_pgtap_c')
              AND NOT rolsuper AND NOT rolbypassrls AND NOT rolcreaterole AND NOT rolcreatedb),
          3, 'the test roles are plain roles');

-- ---------------------------------------------------------------------------
-- Catalogued privileges
-- ---------------------------------------------------------------------------
SELECT table_privs_are('dlock_lease', 'public', ARRAY[]::name[],
                       'PUBLIC has no privilege on table dlock_lease');
SELECT table_privs_are('dlock_lease', 'dlock_pgtap_a', ARRAY[]::name[],
                       'a plain role has no privilege on table dlock_lease');
SELECT sequence_privs_are('dlock_token_seq', 'public', ARRAY[]::name[],
                          'PUBLIC has no privilege on sequence dlock_token_seq');
SELECT sequence_privs_are('dlock_token_seq', 'dlock_pgtap_a', ARRAY[]::name[],
                          'a plain role has no privilege on sequence dlock_token_seq');
SELECT table_privs_are('dlock_leases', 'public', ARRAY['SELECT']::name[],
                       'PUBLIC may only SELECT from view dlock_leases');
SELECT function_privs_are('dlock_acquire', ARRAY['text', 'interval', 'interval', 'text', 'interval', 'interval'],
                          'public', ARRAY['EXECUTE']::name[], 'PUBLIC may execute dlock_acquire');
SELECT function_privs_are('dlock_release', ARRAY['text', 'bigint'],
                          'public', ARRAY['EXECUTE']::name[], 'PUBLIC may execute dlock_release');
SELECT function_privs_are('dlock_renew', ARRAY['text', 'bigint', 'interval', 'interval'],
                          'public', ARRAY['EXECUTE']::name[], 'PUBLIC may execute dlock_renew');
SELECT function_privs_are('dlock_check', ARRAY['text', 'bigint'],
                          'public', ARRAY['EXECUTE']::name[], 'PUBLIC may execute dlock_check');
SELECT function_privs_are('dlock_assert', ARRAY['text', 'bigint'],
                          'public', ARRAY['EXECUTE']::name[], 'PUBLIC may execute dlock_assert');
SELECT function_privs_are('dlock_remaining', ARRAY['text', 'bigint'],
                          'public', ARRAY['EXECUTE']::name[], 'PUBLIC may execute dlock_remaining');
SELECT function_privs_are('dlock_fence', ARRAY[]::name[],
                          'public', ARRAY['EXECUTE']::name[], 'PUBLIC may execute dlock_fence');
SELECT function_privs_are('dlock_cleanup', ARRAY['interval', 'integer'],
                          'public', ARRAY[]::name[], 'PUBLIC may not execute dlock_cleanup');
SELECT function_privs_are('dlock_cleanup', ARRAY['interval', 'integer'],
                          'dlock_pgtap_a', ARRAY[]::name[], 'a plain role may not execute dlock_cleanup');
SELECT function_privs_are('dlock_rebase', ARRAY[]::name[],
                          'public', ARRAY[]::name[], 'PUBLIC may not execute dlock_rebase');
SELECT function_privs_are('dlock_revoke', ARRAY['text', 'bigint', 'interval', 'boolean'],
                          'public', ARRAY[]::name[], 'PUBLIC may not execute dlock_revoke');
SELECT function_privs_are('dlock_rebase', ARRAY['bigint'],
                          'public', ARRAY[]::name[], 'PUBLIC may not execute dlock_rebase(at_least)');
SELECT table_privs_are('dlock_epoch', 'dlock_pgtap_a', ARRAY[]::name[],
                       'a plain role has no privilege on table dlock_epoch');
SELECT table_privs_are('dlock_lock_key', 'public', ARRAY[]::name[],
                       'PUBLIC has no privilege on table dlock_lock_key (the lock key secret)');
SELECT table_privs_are('dlock_lock_key', 'dlock_pgtap_a', ARRAY[]::name[],
                       'a plain role has no privilege on table dlock_lock_key');
SELECT throws_ok($$SET LOCAL ROLE dlock_pgtap_a; SELECT secret FROM dlock_lock_key$$, '42501', NULL,
                 'a plain role cannot read the lock key secret');

-- ---------------------------------------------------------------------------
-- A plain role uses the API and the view
-- ---------------------------------------------------------------------------
SET ROLE dlock_pgtap_a;

SELECT lives_ok($$INSERT INTO dlock_pgtap_val (k, i)
                  SELECT 'a1', dlock_acquire('pgtap 02 plain', '1 hour')$$,
                'a plain role can call dlock_acquire');
SELECT isnt((SELECT i FROM dlock_pgtap_val WHERE k = 'a1'), NULL,
            'dlock_acquire gives a plain role a token for a free lease');
SELECT is(dlock_check('pgtap 02 plain', (SELECT i FROM dlock_pgtap_val WHERE k = 'a1')), true,
          'dlock_check vouches for the plain role''s token');
SELECT lives_ok(pg_catalog.format('SELECT dlock_assert(%L, %s)', 'pgtap 02 plain',
                                  (SELECT i FROM dlock_pgtap_val WHERE k = 'a1')),
                'dlock_assert accepts the plain role''s token');
SELECT is(dlock_renew('pgtap 02 plain', (SELECT i FROM dlock_pgtap_val WHERE k = 'a1'), '2 hours'), true,
          'a plain role can renew its lease');
SELECT lives_ok('SELECT pg_catalog.count(*) FROM dlock_leases',
                'a plain role can SELECT from dlock_leases');
SELECT is((SELECT held FROM dlock_leases WHERE name = 'pgtap 02 plain'), true,
          'dlock_leases shows the plain role''s lease held');
SELECT ok((SELECT token = (SELECT i FROM dlock_pgtap_val WHERE k = 'a1')
             FROM dlock_leases WHERE name = 'pgtap 02 plain'),
          'dlock_leases shows the plain role''s token');
SELECT is((SELECT role::text FROM dlock_leases WHERE name = 'pgtap 02 plain'), 'dlock_pgtap_a',
          'dlock_leases.role shows the role that acquired the lease');
SELECT is(dlock_release('pgtap 02 plain', (SELECT i FROM dlock_pgtap_val WHERE k = 'a1')), true,
          'a plain role can release its lease');
SELECT is(dlock_check('pgtap 02 plain', (SELECT i FROM dlock_pgtap_val WHERE k = 'a1')), false,
          'dlock_check refuses the token after the release');
SELECT throws_ok(pg_catalog.format('SELECT dlock_assert(%L, %s)', 'pgtap 02 plain',
                                   (SELECT i FROM dlock_pgtap_val WHERE k = 'a1')),
                 'LK001', NULL, 'dlock_assert raises LK001 for the token after the release');
SELECT is(dlock_release('pgtap 02 plain', (SELECT i FROM dlock_pgtap_val WHERE k = 'a1')), false,
          'a second release returns false');
SELECT is(dlock_renew('pgtap 02 plain', (SELECT i FROM dlock_pgtap_val WHERE k = 'a1'), '1 hour'), false,
          'a released lease is not renewed');
SELECT is((SELECT held FROM dlock_leases WHERE name = 'pgtap 02 plain'), false,
          'dlock_leases shows the released lease not held');
SELECT lives_ok($$INSERT INTO dlock_pgtap_val (k, i)
                  SELECT 'a2', dlock_acquire('pgtap 02 plain', '1 hour')$$,
                'a plain role can acquire the released lease again');
SELECT ok((SELECT a2.i > a1.i FROM dlock_pgtap_val AS a1, dlock_pgtap_val AS a2
            WHERE a1.k = 'a1' AND a2.k = 'a2'),
          'the new acquisition has a greater token');

-- ... but it cannot go around the functions.
SELECT throws_ok($$INSERT INTO dlock_lease (name, token, role, acquired_at, expires_at)
                   VALUES ('pgtap 02 forged', 1, 0, pg_catalog.now(), 'infinity')$$,
                 '42501', 'permission denied for table dlock_lease',
                 'a plain role cannot INSERT into dlock_lease');
SELECT throws_ok($$UPDATE dlock_lease SET expires_at = 'infinity'$$,
                 '42501', 'permission denied for table dlock_lease',
                 'a plain role cannot UPDATE dlock_lease');
SELECT throws_ok($$DELETE FROM dlock_lease$$,
                 '42501', 'permission denied for table dlock_lease',
                 'a plain role cannot DELETE FROM dlock_lease');
SELECT throws_ok($$TRUNCATE dlock_lease$$,
                 '42501', 'permission denied for table dlock_lease',
                 'a plain role cannot TRUNCATE dlock_lease');
SELECT throws_ok($$SELECT * FROM dlock_lease$$,
                 '42501', 'permission denied for table dlock_lease',
                 'a plain role cannot SELECT FROM dlock_lease');
SELECT throws_ok($$SELECT pg_catalog.nextval('dlock_token_seq')$$,
                 '42501', 'permission denied for sequence dlock_token_seq',
                 'a plain role cannot draw a token with nextval');
SELECT throws_ok($$SELECT pg_catalog.setval('dlock_token_seq', 1)$$,
                 '42501', 'permission denied for sequence dlock_token_seq',
                 'a plain role cannot reset the token counter with setval');
SELECT throws_ok($$SELECT last_value FROM dlock_token_seq$$,
                 '42501', 'permission denied for sequence dlock_token_seq',
                 'a plain role cannot SELECT FROM dlock_token_seq');
SELECT throws_ok($$INSERT INTO dlock_leases (name, owner) VALUES ('pgtap 02 forged', 'x')$$,
                 '42501', 'permission denied for view dlock_leases',
                 'a plain role cannot INSERT through the view dlock_leases');
SELECT throws_ok($$UPDATE dlock_leases SET expires_at = 'infinity'$$,
                 '42501', 'permission denied for view dlock_leases',
                 'a plain role cannot UPDATE through the view dlock_leases');
SELECT throws_ok($$DELETE FROM dlock_leases$$,
                 '42501', 'permission denied for view dlock_leases',
                 'a plain role cannot DELETE through the view dlock_leases');

RESET ROLE;

-- ---------------------------------------------------------------------------
-- The token is not enough: another role cannot release or renew
-- ---------------------------------------------------------------------------
SET ROLE dlock_pgtap_a;
SELECT lives_ok($$INSERT INTO dlock_pgtap_val (k, i)
                  SELECT 'shared', dlock_acquire('pgtap 02 shared', '1 hour', '0', 'replica-a')$$,
                'role a acquires a lease with owner label replica-a');
RESET ROLE;

CREATE TEMP TABLE dlock_pgtap_snap AS
	SELECT * FROM dlock_lease WHERE name = 'pgtap 02 shared';
SELECT is((SELECT pg_catalog.count(*)::integer FROM dlock_pgtap_snap WHERE token IS NOT NULL), 1,
          'the lease row of role a is recorded');

SET ROLE dlock_pgtap_b;
SELECT is(dlock_acquire('pgtap 02 shared', '1 hour'), NULL,
          'role b cannot take the lease role a holds');
SELECT is(dlock_acquire('pgtap 02 shared', '1 hour', '0', 'replica-a'), NULL,
          'role b cannot renew the lease by passing role a''s owner label');
SELECT throws_ok(pg_catalog.format('SELECT dlock_release(%L, %s)', 'pgtap 02 shared',
                                   (SELECT i FROM dlock_pgtap_val WHERE k = 'shared')),
                 '42501', 'permission denied to release lock "pgtap 02 shared"',
                 'role b cannot release role a''s lease, even with the right token');
SELECT throws_ok(pg_catalog.format('SELECT dlock_renew(%L, %s, %L)', 'pgtap 02 shared',
                                   (SELECT i FROM dlock_pgtap_val WHERE k = 'shared'), '2 hours'),
                 '42501', 'permission denied to renew lock "pgtap 02 shared"',
                 'role b cannot renew role a''s lease, even with the right token');
RESET ROLE;

SELECT ok((SELECT (l.token, l.owner, l.role, l.acquired_at, l.expires_at, l.released_at)
                  IS NOT DISTINCT FROM
                  (s.token, s.owner, s.role, s.acquired_at, s.expires_at, s.released_at)
             FROM dlock_lease AS l JOIN dlock_pgtap_snap AS s USING (name)),
          'role a''s lease is unchanged after role b''s attempts');
SELECT is((SELECT held FROM dlock_leases WHERE name = 'pgtap 02 shared'), true,
          'role a''s lease is still held');
SELECT is((SELECT role::text FROM dlock_leases WHERE name = 'pgtap 02 shared'), 'dlock_pgtap_a',
          'dlock_leases.role still shows role a');

-- A member of the holder role may.
SET ROLE dlock_pgtap_c;
SELECT is(dlock_renew('pgtap 02 shared', (SELECT i FROM dlock_pgtap_val WHERE k = 'shared'), '2 hours'), true,
          'role c, a member of role a, can renew role a''s lease');
SELECT ok(dlock_acquire('pgtap 02 shared', '2 hours', '0', 'replica-a')
              = (SELECT i FROM dlock_pgtap_val WHERE k = 'shared'),
          'role c can renew it by owner label and keeps the token');
RESET ROLE;
SELECT ok((SELECT l.expires_at > s.expires_at AND l.token = s.token AND l.role = s.role
                  AND l.released_at IS NULL
             FROM dlock_lease AS l JOIN dlock_pgtap_snap AS s USING (name)),
          'the renewals moved the expiry and kept the token and the holder role');
SET ROLE dlock_pgtap_c;
SELECT is(dlock_release('pgtap 02 shared', (SELECT i FROM dlock_pgtap_val WHERE k = 'shared')), true,
          'role c, a member of role a, can release role a''s lease');
RESET ROLE;
SELECT is((SELECT held FROM dlock_leases WHERE name = 'pgtap 02 shared'), false,
          'the lease is free after role c released it');

SET ROLE dlock_pgtap_b;
SELECT lives_ok($$INSERT INTO dlock_pgtap_val (k, i)
                  SELECT 'shared b', dlock_acquire('pgtap 02 shared', '1 hour')$$,
                'role b acquires the freed lease');
SELECT ok((SELECT b.i > a.i FROM dlock_pgtap_val AS a, dlock_pgtap_val AS b
            WHERE a.k = 'shared' AND b.k = 'shared b'),
          'role b gets a new, greater token');
SELECT is((SELECT role::text FROM dlock_leases WHERE name = 'pgtap 02 shared'), 'dlock_pgtap_b',
          'dlock_leases.role shows role b as the new holder');
RESET ROLE;

-- ---------------------------------------------------------------------------
-- Planted clocks, operators and nextval() in front of pg_catalog change nothing
-- ---------------------------------------------------------------------------
CREATE SCHEMA dlock_pgtap_future AUTHORIZATION dlock_pgtap_a;
CREATE SCHEMA dlock_pgtap_past AUTHORIZATION dlock_pgtap_a;

SET ROLE dlock_pgtap_a;

CREATE FUNCTION dlock_pgtap_future.now() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2999-01-01 00:00:00+00'::pg_catalog.timestamptz$$;
CREATE FUNCTION dlock_pgtap_future.clock_timestamp() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2999-01-01 00:00:00+00'::pg_catalog.timestamptz$$;
CREATE FUNCTION dlock_pgtap_future.statement_timestamp() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2999-01-01 00:00:00+00'::pg_catalog.timestamptz$$;
CREATE FUNCTION dlock_pgtap_future.transaction_timestamp() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2999-01-01 00:00:00+00'::pg_catalog.timestamptz$$;

CREATE FUNCTION dlock_pgtap_past.now() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2000-01-01 00:00:00+00'::pg_catalog.timestamptz$$;
CREATE FUNCTION dlock_pgtap_past.clock_timestamp() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2000-01-01 00:00:00+00'::pg_catalog.timestamptz$$;
CREATE FUNCTION dlock_pgtap_past.statement_timestamp() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2000-01-01 00:00:00+00'::pg_catalog.timestamptz$$;
CREATE FUNCTION dlock_pgtap_past.transaction_timestamp() RETURNS pg_catalog.timestamptz
	LANGUAGE sql AS $$SELECT '2000-01-01 00:00:00+00'::pg_catalog.timestamptz$$;
CREATE FUNCTION dlock_pgtap_past.always(pg_catalog.timestamptz, pg_catalog.timestamptz)
	RETURNS pg_catalog.bool LANGUAGE sql AS $$SELECT true$$;
CREATE OPERATOR dlock_pgtap_past.> (LEFTARG = pg_catalog.timestamptz, RIGHTARG = pg_catalog.timestamptz,
                                    FUNCTION = dlock_pgtap_past.always);
CREATE FUNCTION dlock_pgtap_past.nextval(pg_catalog.regclass) RETURNS pg_catalog.int8
	LANGUAGE sql AS $$SELECT 1::pg_catalog.int8$$;

-- search_path: the planted schema, then dlock's and pgTAP's, then pg_catalog.
DO $$
BEGIN
	PERFORM pg_catalog.set_config('search_path',
		'dlock_pgtap_future, ' ||
		(SELECT pg_catalog.string_agg(DISTINCT pg_catalog.quote_ident(n.nspname), ', ')
		   FROM pg_catalog.pg_extension AS e
		   JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
		  WHERE e.extname IN ('dlock', 'pgtap')) ||
		', pg_catalog', true);
END
$$;

-- Only plain statements while the planted objects are visible; the
-- assertions come after the search_path is reset.
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('future planted', pg_catalog.date_part('year', clock_timestamp()) = 2999
	                          AND pg_catalog.date_part('year', now()) = 2999);
INSERT INTO dlock_pgtap_val (k, i)
	VALUES ('future token', dlock_acquire('pgtap 02 future clock', '1 hour'));
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('future check', dlock_check('pgtap 02 future clock',
	                                    (SELECT i FROM dlock_pgtap_val WHERE k = 'future token')));
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('future held', (SELECT held FROM dlock_leases WHERE name = 'pgtap 02 future clock'));
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('future renew', dlock_renew('pgtap 02 future clock',
	                                    (SELECT i FROM dlock_pgtap_val WHERE k = 'future token'), '1 hour'));

DO $$
BEGIN
	PERFORM pg_catalog.set_config('search_path',
		'dlock_pgtap_past, ' ||
		(SELECT pg_catalog.string_agg(DISTINCT pg_catalog.quote_ident(n.nspname), ', ')
		   FROM pg_catalog.pg_extension AS e
		   JOIN pg_catalog.pg_namespace AS n ON n.oid = e.extnamespace
		  WHERE e.extname IN ('dlock', 'pgtap')) ||
		', pg_catalog', true);
END
$$;

INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('past planted', pg_catalog.date_part('year', clock_timestamp()) = 2000
	                        AND pg_catalog.date_part('year', now()) = 2000
	                        AND '2000-01-01'::pg_catalog.timestamptz > '2999-01-01'::pg_catalog.timestamptz
	                        AND nextval('dlock_token_seq') = 1);
INSERT INTO dlock_pgtap_val (k, i)
	VALUES ('past token', dlock_acquire('pgtap 02 past clock', '1 second'));
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('past check before', dlock_check('pgtap 02 past clock',
	                                         (SELECT i FROM dlock_pgtap_val WHERE k = 'past token')));
DO $$ BEGIN PERFORM pg_catalog.pg_sleep(1.2); END $$;
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('past check after', dlock_check('pgtap 02 past clock',
	                                        (SELECT i FROM dlock_pgtap_val WHERE k = 'past token')));
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('past held after', (SELECT held FROM dlock_leases WHERE name = 'pgtap 02 past clock'));
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('past renew after', dlock_renew('pgtap 02 past clock',
	                                        (SELECT i FROM dlock_pgtap_val WHERE k = 'past token'), '1 hour'));
INSERT INTO dlock_pgtap_val (k, b)
	VALUES ('past release after', dlock_release('pgtap 02 past clock',
	                                            (SELECT i FROM dlock_pgtap_val WHERE k = 'past token')));
INSERT INTO dlock_pgtap_val (k, i)
	VALUES ('past token 2', dlock_acquire('pgtap 02 past clock', '1 hour'));

RESET search_path;
RESET ROLE;

SELECT ok((SELECT b FROM dlock_pgtap_val WHERE k = 'future planted'),
          'the planted now() and clock_timestamp() (year 2999) shadow pg_catalog''s');
SELECT isnt((SELECT i FROM dlock_pgtap_val WHERE k = 'future token'), NULL,
            'with a far-future clock planted, dlock_acquire takes a free lease');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'future check'), true,
          'with a far-future clock planted, dlock_check vouches for the fresh lease');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'future held'), true,
          'with a far-future clock planted, dlock_leases shows the fresh lease held');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'future renew'), true,
          'with a far-future clock planted, dlock_renew renews the fresh lease');
SELECT ok((SELECT expires_at BETWEEN pg_catalog.clock_timestamp() + '50 minutes'::interval
                             AND pg_catalog.clock_timestamp() + '70 minutes'::interval
             FROM dlock_lease WHERE name = 'pgtap 02 future clock'),
          'the expiry is the real clock plus the ttl, not the planted clock');

SELECT ok((SELECT b FROM dlock_pgtap_val WHERE k = 'past planted'),
          'the planted now(), clock_timestamp() (year 2000), > operator and nextval() shadow pg_catalog''s');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'past check before'), true,
          'with a far-past clock planted, a fresh 1-second lease is held');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'past check after'), false,
          'with a far-past clock planted, dlock_check sees the lease expire by the real clock');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'past held after'), false,
          'with a far-past clock planted, dlock_leases shows the expired lease not held');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'past renew after'), false,
          'with a far-past clock planted, dlock_renew refuses the expired lease');
SELECT is((SELECT b FROM dlock_pgtap_val WHERE k = 'past release after'), false,
          'with a far-past clock planted, dlock_release returns false for the expired lease');
SELECT ok((SELECT t2.i > t1.i FROM dlock_pgtap_val AS t1, dlock_pgtap_val AS t2
            WHERE t1.k = 'past token' AND t2.k = 'past token 2'),
          'the expired lease is taken again with a greater token (not from the planted nextval())');

SELECT * FROM finish();
ROLLBACK;
