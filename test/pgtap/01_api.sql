-- 01_api.sql: the shape of the dlock 1.0 API, as the contract states it.
--
-- Every object dlock creates exists, with the exact signature, return type,
-- language, volatility, strictness and security of the contract, and a
-- comment.  The whole file is one transaction that is rolled back.
BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION dlock;

-- pg_get_function_arguments() prints interval defaults in this style.
SET LOCAL IntervalStyle = 'postgres';

SELECT plan(121);

-- ---------------------------------------------------------------------------
-- The extension
-- ---------------------------------------------------------------------------
SELECT has_extension('dlock', 'extension dlock is installed');
SELECT is((SELECT extrelocatable FROM pg_catalog.pg_extension WHERE extname = 'dlock'),
          false, 'extension dlock is not relocatable');
SELECT set_eq(
    $$SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid)
        FROM pg_catalog.pg_depend AS d
        JOIN pg_catalog.pg_extension AS e
          ON d.refclassid = 'pg_catalog.pg_extension'::pg_catalog.regclass
         AND d.refobjid = e.oid
       WHERE e.extname = 'dlock' AND d.deptype = 'e'$$,
    ARRAY['function dlock_acquire(text,interval,interval,text,interval,interval)',
          'function dlock_release(text,bigint)',
          'function dlock_renew(text,bigint,interval,interval)',
          'function dlock_revoke(text,bigint,interval,boolean)',
          'function dlock_check(text,bigint)',
          'function dlock_assert(text,bigint)',
          'function dlock_fence()',
          'function dlock_fence_ddl()',
          'event trigger dlock_fence_ddl',
          'function dlock_cleanup(interval,integer)',
          'function dlock_rebase()',
          'function dlock_rebase(bigint)',
          'function dlock_resolve_holder(name,oid,bigint)',
          'function dlock_remaining(text,bigint)',
          'function dlock_edition()',
          'function dlock_export()',
          'function dlock_import(jsonb,boolean)',
          'function dlock_import_check_name(text)',
          'function dlock_import_leases(jsonb)',
          'function dlock_lock_key_replicated()',
          'function dlock_lock_key_frozen()',
          'function dlock_stats_shared()',
          'function dlock_stats_reset(text)',
          'function dlock_stats_retire_rows()',
          'function dlock_waiters_locks()',
          'table dlock_lease',
          'table dlock_epoch',
          'table dlock_lock_key',
          'table dlock_stats_retired',
          'table dlock_stats_base',
          'sequence dlock_token_seq',
          'view dlock_leases',
          'view dlock_fenced_tables',
          'view dlock_stats',
          'view dlock_stats_total',
          'view dlock_waiters']
    -- PostgreSQL 18 also records the row types of the table and the views
    -- (and their array types) as members of the extension.
    || CASE WHEN pg_catalog.current_setting('server_version_num')::pg_catalog.int4 >= 180000
            THEN ARRAY['type dlock_lease', 'type dlock_lease[]',
                       'type dlock_epoch', 'type dlock_epoch[]',
                       'type dlock_lock_key', 'type dlock_lock_key[]',
                       'type dlock_leases', 'type dlock_leases[]',
                       'type dlock_fenced_tables', 'type dlock_fenced_tables[]',
                       'type dlock_stats_retired', 'type dlock_stats_retired[]',
                       'type dlock_stats_base', 'type dlock_stats_base[]',
                       'type dlock_stats', 'type dlock_stats[]',
                       'type dlock_stats_total', 'type dlock_stats_total[]',
                       'type dlock_waiters', 'type dlock_waiters[]']
            ELSE '{}'::pg_catalog.text[] END,
    'extension dlock owns exactly its functions, the three tables, the sequence and the views');
SELECT ok((SELECT e.extconfig @> ARRAY[to_regclass('dlock_lease')::pg_catalog.oid,
                                       to_regclass('dlock_token_seq')::pg_catalog.oid,
                                       to_regclass('dlock_epoch')::pg_catalog.oid]
             FROM pg_catalog.pg_extension AS e WHERE e.extname = 'dlock'),
          'tables dlock_lease and dlock_epoch and sequence dlock_token_seq are dumped by pg_dump (pg_extension_config_dump)');
SELECT ok((SELECT NOT (e.extconfig @> ARRAY[to_regclass('dlock_lock_key')::pg_catalog.oid])
             FROM pg_catalog.pg_extension AS e WHERE e.extname = 'dlock'),
          'table dlock_lock_key (the lock key secret) is not dumped by pg_dump: a restore draws a new one');
SELECT is((SELECT pg_catalog.count(*) FROM dlock_lock_key WHERE scheme = 1 AND pg_catalog.length(secret) = 16),
          1::pg_catalog.int8, 'dlock_lock_key holds one 16-byte secret of scheme 1 (SipHash-2-4)');

-- ---------------------------------------------------------------------------
-- dlock_acquire(name text, ttl interval, wait interval DEFAULT '0', owner text DEFAULT NULL) RETURNS bigint
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_acquire', ARRAY['text', 'interval', 'interval', 'text', 'interval', 'interval'],
                    'dlock_acquire(text, interval, interval, text, interval, interval) exists');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_acquire(text,interval,interval,text,interval,interval)'))),
          'name text, ttl interval, wait interval DEFAULT ''00:00:00''::interval, owner text DEFAULT NULL::text, min_hold interval DEFAULT NULL::interval, lock_delay interval DEFAULT NULL::interval',
          'dlock_acquire has arguments name, ttl, wait DEFAULT 0, owner, min_hold and lock_delay DEFAULT NULL');
SELECT function_returns('dlock_acquire', ARRAY['text', 'interval', 'interval', 'text', 'interval', 'interval'], 'bigint',
                        'dlock_acquire returns bigint');
SELECT function_lang_is('dlock_acquire', ARRAY['text', 'interval', 'interval', 'text', 'interval', 'interval'], 'c',
                        'dlock_acquire is written in C');
SELECT volatility_is('dlock_acquire', ARRAY['text', 'interval', 'interval', 'text', 'interval', 'interval'], 'volatile',
                     'dlock_acquire is volatile');
SELECT isnt_strict('dlock_acquire', ARRAY['text', 'interval', 'interval', 'text', 'interval', 'interval'],
                   'dlock_acquire is not strict');
SELECT isnt_definer('dlock_acquire', ARRAY['text', 'interval', 'interval', 'text', 'interval', 'interval'],
                    'dlock_acquire is not security definer');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = to_regprocedure('dlock_acquire(text,interval,interval,text,interval,interval)')),
          'u'::"char", 'dlock_acquire is parallel unsafe');
SELECT isnt(dlock_acquire('pgtap 01 defaults', '1 minute'), NULL,
            'dlock_acquire can be called with name and ttl only (wait and owner have defaults)');
SELECT isnt(dlock_acquire(owner => 'pgtap', ttl => '1 minute', name => 'pgtap 01 named'), NULL,
            'dlock_acquire can be called with named arguments');

-- ---------------------------------------------------------------------------
-- dlock_release(name text, token bigint) RETURNS boolean
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_release', ARRAY['text', 'bigint'],
                    'dlock_release(text, bigint) exists');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_release(text,bigint)'))),
          'name text, token bigint', 'dlock_release has arguments name, token');
SELECT function_returns('dlock_release', ARRAY['text', 'bigint'], 'boolean',
                        'dlock_release returns boolean');
SELECT function_lang_is('dlock_release', ARRAY['text', 'bigint'], 'c',
                        'dlock_release is written in C');
SELECT volatility_is('dlock_release', ARRAY['text', 'bigint'], 'volatile',
                     'dlock_release is volatile');
SELECT isnt_strict('dlock_release', ARRAY['text', 'bigint'],
                   'dlock_release is not strict');
SELECT isnt_definer('dlock_release', ARRAY['text', 'bigint'],
                    'dlock_release is not security definer');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = to_regprocedure('dlock_release(text,bigint)')),
          'u'::"char", 'dlock_release is parallel unsafe');

-- ---------------------------------------------------------------------------
-- dlock_renew(name text, token bigint, ttl interval) RETURNS boolean
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_renew', ARRAY['text', 'bigint', 'interval', 'interval'],
                    'dlock_renew(text, bigint, interval, interval) exists');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_renew(text,bigint,interval,interval)'))),
          'name text, token bigint, ttl interval, lock_delay interval DEFAULT NULL::interval',
          'dlock_renew has arguments name, token, ttl, lock_delay DEFAULT NULL');
SELECT function_returns('dlock_renew', ARRAY['text', 'bigint', 'interval', 'interval'], 'boolean',
                        'dlock_renew returns boolean');
SELECT function_lang_is('dlock_renew', ARRAY['text', 'bigint', 'interval', 'interval'], 'c',
                        'dlock_renew is written in C');
SELECT volatility_is('dlock_renew', ARRAY['text', 'bigint', 'interval', 'interval'], 'volatile',
                     'dlock_renew is volatile');
SELECT isnt_strict('dlock_renew', ARRAY['text', 'bigint', 'interval', 'interval'],
                   'dlock_renew is not strict');
SELECT isnt_definer('dlock_renew', ARRAY['text', 'bigint', 'interval', 'interval'],
                    'dlock_renew is not security definer');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = to_regprocedure('dlock_renew(text,bigint,interval,interval)')),
          'u'::"char", 'dlock_renew is parallel unsafe');

-- ---------------------------------------------------------------------------
-- dlock_check(name text, token bigint) RETURNS boolean
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_check', ARRAY['text', 'bigint'],
                    'dlock_check(text, bigint) exists');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_check(text,bigint)'))),
          'name text, token bigint', 'dlock_check has arguments name, token');
SELECT function_returns('dlock_check', ARRAY['text', 'bigint'], 'boolean',
                        'dlock_check returns boolean');
SELECT function_lang_is('dlock_check', ARRAY['text', 'bigint'], 'c',
                        'dlock_check is written in C');
SELECT volatility_is('dlock_check', ARRAY['text', 'bigint'], 'volatile',
                     'dlock_check is volatile');
SELECT isnt_strict('dlock_check', ARRAY['text', 'bigint'],
                   'dlock_check is not strict');
SELECT isnt_definer('dlock_check', ARRAY['text', 'bigint'],
                    'dlock_check is not security definer');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = to_regprocedure('dlock_check(text,bigint)')),
          'u'::"char", 'dlock_check is parallel unsafe');

-- ---------------------------------------------------------------------------
-- dlock_edition() RETURNS text (1.2, issue 26): 'c' here, 'sql' in the SQL edition
-- ---------------------------------------------------------------------------
SELECT function_returns('dlock_edition', ARRAY[]::name[], 'text', 'dlock_edition() returns text');
SELECT volatility_is('dlock_edition', ARRAY[]::name[], 'immutable', 'dlock_edition is IMMUTABLE');
SELECT is(dlock_edition(), 'c', 'dlock_edition() says c in the C edition');
SELECT isnt(pg_catalog.obj_description(to_regprocedure('dlock_edition()'), 'pg_proc'), NULL,
            'dlock_edition has a comment');

-- ---------------------------------------------------------------------------
-- dlock_export() RETURNS jsonb, dlock_import(state jsonb, replace boolean
-- DEFAULT false) RETURNS bigint (1.2, issue 26 item 5): the owner's only
-- ---------------------------------------------------------------------------
SELECT function_returns('dlock_export', ARRAY[]::name[], 'jsonb', 'dlock_export() returns jsonb');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_import(jsonb,boolean)'))),
          'state jsonb, replace boolean DEFAULT false',
          'dlock_import has arguments state, replace DEFAULT false');
SELECT function_returns('dlock_import', ARRAY['jsonb', 'boolean'], 'bigint', 'dlock_import returns bigint');
SELECT is_definer('dlock_export', ARRAY[]::name[], 'dlock_export is SECURITY DEFINER');
SELECT is_definer('dlock_import', ARRAY['jsonb', 'boolean'], 'dlock_import is SECURITY DEFINER');
SELECT ok(NOT pg_catalog.has_function_privilege('public', 'dlock_export()', 'EXECUTE')
          AND NOT pg_catalog.has_function_privilege('public', 'dlock_import(jsonb,boolean)', 'EXECUTE')
          AND NOT pg_catalog.has_function_privilege('public', 'dlock_import_leases(jsonb)', 'EXECUTE')
          AND NOT pg_catalog.has_function_privilege('public', 'dlock_import_check_name(text)', 'EXECUTE'),
          'PUBLIC may not execute dlock_export, dlock_import, dlock_import_leases or dlock_import_check_name');
SELECT isnt(pg_catalog.obj_description(to_regprocedure('dlock_export()'), 'pg_proc'), NULL,
            'dlock_export has a comment');
SELECT isnt(pg_catalog.obj_description(to_regprocedure('dlock_import(jsonb,boolean)'), 'pg_proc'), NULL,
            'dlock_import has a comment');

-- ---------------------------------------------------------------------------
-- dlock_remaining(name text, token bigint) RETURNS interval (1.1)
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_remaining', ARRAY['text', 'bigint'],
                    'dlock_remaining(text, bigint) exists');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_remaining(text,bigint)'))),
          'name text, token bigint', 'dlock_remaining has arguments name, token');
SELECT function_returns('dlock_remaining', ARRAY['text', 'bigint'], 'interval',
                        'dlock_remaining returns interval');
SELECT function_lang_is('dlock_remaining', ARRAY['text', 'bigint'], 'c',
                        'dlock_remaining is written in C');
SELECT volatility_is('dlock_remaining', ARRAY['text', 'bigint'], 'volatile',
                     'dlock_remaining is volatile');
SELECT isnt_strict('dlock_remaining', ARRAY['text', 'bigint'],
                   'dlock_remaining is not strict');
SELECT isnt_definer('dlock_remaining', ARRAY['text', 'bigint'],
                    'dlock_remaining is not security definer');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = to_regprocedure('dlock_remaining(text,bigint)')),
          'u'::"char", 'dlock_remaining is parallel unsafe');

-- ---------------------------------------------------------------------------
-- dlock_assert(name text, token bigint) RETURNS void
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_assert', ARRAY['text', 'bigint'],
                    'dlock_assert(text, bigint) exists');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_assert(text,bigint)'))),
          'name text, token bigint', 'dlock_assert has arguments name, token');
SELECT function_returns('dlock_assert', ARRAY['text', 'bigint'], 'void',
                        'dlock_assert returns void');
SELECT function_lang_is('dlock_assert', ARRAY['text', 'bigint'], 'c',
                        'dlock_assert is written in C');
SELECT volatility_is('dlock_assert', ARRAY['text', 'bigint'], 'volatile',
                     'dlock_assert is volatile');
SELECT isnt_strict('dlock_assert', ARRAY['text', 'bigint'],
                   'dlock_assert is not strict');
SELECT isnt_definer('dlock_assert', ARRAY['text', 'bigint'],
                    'dlock_assert is not security definer');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = to_regprocedure('dlock_assert(text,bigint)')),
          'u'::"char", 'dlock_assert is parallel unsafe');

-- ---------------------------------------------------------------------------
-- dlock_fence() RETURNS trigger
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_fence', ARRAY[]::name[], 'dlock_fence() exists');
SELECT function_returns('dlock_fence', ARRAY[]::name[], 'trigger',
                        'dlock_fence returns trigger');
SELECT function_lang_is('dlock_fence', ARRAY[]::name[], 'c',
                        'dlock_fence is written in C');
SELECT volatility_is('dlock_fence', ARRAY[]::name[], 'volatile',
                     'dlock_fence is volatile');
SELECT isnt_strict('dlock_fence', ARRAY[]::name[], 'dlock_fence is not strict');
SELECT isnt_definer('dlock_fence', ARRAY[]::name[], 'dlock_fence is not security definer');

-- ---------------------------------------------------------------------------
-- dlock_fence_ddl() RETURNS event_trigger, and its event trigger (1.2)
-- ---------------------------------------------------------------------------
SELECT function_returns('dlock_fence_ddl', ARRAY[]::name[], 'event_trigger',
                        'dlock_fence_ddl returns event_trigger');
SELECT function_lang_is('dlock_fence_ddl', ARRAY[]::name[], 'plpgsql',
                        'dlock_fence_ddl is written in PL/pgSQL');
SELECT isnt_definer('dlock_fence_ddl', ARRAY[]::name[], 'dlock_fence_ddl is not security definer');
SELECT is((SELECT proconfig FROM pg_catalog.pg_proc WHERE oid = to_regprocedure('dlock_fence_ddl()')),
          ARRAY['search_path=pg_catalog, pg_temp'],
          'dlock_fence_ddl pins search_path');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_fence_ddl()'), 'pg_proc'), '') <> '',
          'function dlock_fence_ddl has a comment');
SELECT is((SELECT evtevent || ' ' || evtenabled::text || ' ' || pg_catalog.array_to_string(evttags, ',')
             FROM pg_catalog.pg_event_trigger WHERE evtname = 'dlock_fence_ddl'),
          'ddl_command_end O CREATE TRIGGER,ALTER TABLE,CREATE TABLE',
          'event trigger dlock_fence_ddl fires at ddl_command_end of CREATE TRIGGER, ALTER TABLE and CREATE TABLE');
SELECT ok(COALESCE(pg_catalog.obj_description((SELECT oid FROM pg_catalog.pg_event_trigger
                                                WHERE evtname = 'dlock_fence_ddl'), 'pg_event_trigger'), '') <> '',
          'event trigger dlock_fence_ddl has a comment');

-- ---------------------------------------------------------------------------
-- dlock_cleanup(older_than interval DEFAULT '1 day', max_rows integer DEFAULT 1000) RETURNS bigint
-- ---------------------------------------------------------------------------
SELECT has_function('dlock_cleanup', ARRAY['interval', 'integer'],
                    'dlock_cleanup(interval, integer) exists');
SELECT is((SELECT pg_catalog.pg_get_function_arguments(to_regprocedure('dlock_cleanup(interval,integer)'))),
          'older_than interval DEFAULT ''1 day''::interval, max_rows integer DEFAULT 1000',
          'dlock_cleanup has arguments older_than DEFAULT 1 day, max_rows DEFAULT 1000');
SELECT function_returns('dlock_cleanup', ARRAY['interval', 'integer'], 'bigint',
                        'dlock_cleanup returns bigint');
SELECT function_lang_is('dlock_cleanup', ARRAY['interval', 'integer'], 'c',
                        'dlock_cleanup is written in C');
SELECT volatility_is('dlock_cleanup', ARRAY['interval', 'integer'], 'volatile',
                     'dlock_cleanup is volatile');
SELECT isnt_strict('dlock_cleanup', ARRAY['interval', 'integer'],
                   'dlock_cleanup is not strict');
SELECT isnt_definer('dlock_cleanup', ARRAY['interval', 'integer'],
                    'dlock_cleanup is not security definer');
SELECT is((SELECT proparallel FROM pg_catalog.pg_proc
            WHERE oid = to_regprocedure('dlock_cleanup(interval,integer)')),
          'u'::"char", 'dlock_cleanup is parallel unsafe');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_cleanup(interval,integer)'), 'pg_proc'), '') <> '',
          'function dlock_cleanup has a comment');

-- No other overloads that could make a call ambiguous.
SELECT is((SELECT pg_catalog.count(*)::integer FROM pg_catalog.pg_proc
            WHERE proname IN ('dlock_acquire', 'dlock_release', 'dlock_renew',
                              'dlock_check', 'dlock_assert', 'dlock_fence', 'dlock_cleanup',
                              'dlock_remaining')
              AND pronamespace = (SELECT extnamespace FROM pg_catalog.pg_extension
                                   WHERE extname = 'dlock')),
          8, 'each dlock function has exactly one signature');

-- ---------------------------------------------------------------------------
-- The view dlock_leases
-- ---------------------------------------------------------------------------
SELECT has_view('dlock_leases', 'view dlock_leases exists');
SELECT is(ARRAY(SELECT attname::text FROM pg_catalog.pg_attribute
                 WHERE attrelid = to_regclass('dlock_leases')
                   AND attnum > 0 AND NOT attisdropped
                 ORDER BY attnum),
          ARRAY['name', 'owner', 'token', 'acquired_at', 'expires_at', 'held', 'role', 'released_at',
                'min_hold', 'lock_delay', 'available_at'],
          'dlock_leases has the columns name, owner, token, acquired_at, expires_at, held, role, released_at, min_hold, lock_delay, available_at, in that order');
SELECT col_type_is('dlock_leases', 'name', 'text', 'dlock_leases.name is text');
SELECT col_type_is('dlock_leases', 'owner', 'text', 'dlock_leases.owner is text');
SELECT col_type_is('dlock_leases', 'token', 'bigint', 'dlock_leases.token is bigint');
SELECT col_type_is('dlock_leases', 'acquired_at', 'timestamp with time zone',
                   'dlock_leases.acquired_at is timestamptz');
SELECT col_type_is('dlock_leases', 'expires_at', 'timestamp with time zone',
                   'dlock_leases.expires_at is timestamptz');
SELECT col_type_is('dlock_leases', 'held', 'boolean', 'dlock_leases.held is boolean');
SELECT col_type_is('dlock_leases', 'role', 'name', 'dlock_leases.role is name');
SELECT col_type_is('dlock_leases', 'released_at', 'timestamp with time zone',
                   'dlock_leases.released_at is timestamptz');

-- ---------------------------------------------------------------------------
-- The table dlock_lease and the sequence dlock_token_seq
-- ---------------------------------------------------------------------------
SELECT has_table('dlock_lease', 'table dlock_lease exists');
SELECT col_is_pk('dlock_lease', 'name', 'dlock_lease is keyed by name');
SELECT has_sequence('dlock_token_seq', 'sequence dlock_token_seq exists');
SELECT is((SELECT seqtypid::pg_catalog.regtype::text FROM pg_catalog.pg_sequence
            WHERE seqrelid = to_regclass('dlock_token_seq')),
          'bigint', 'dlock_token_seq is a bigint sequence');
SELECT is((SELECT seqincrement FROM pg_catalog.pg_sequence
            WHERE seqrelid = to_regclass('dlock_token_seq')),
          1::bigint, 'dlock_token_seq counts up by 1');
SELECT is((SELECT seqcache FROM pg_catalog.pg_sequence
            WHERE seqrelid = to_regclass('dlock_token_seq')),
          1::bigint, 'dlock_token_seq has CACHE 1 (tokens in order across backends)');
SELECT is((SELECT seqcycle FROM pg_catalog.pg_sequence
            WHERE seqrelid = to_regclass('dlock_token_seq')),
          false, 'dlock_token_seq does not CYCLE (tokens never reused)');

-- ---------------------------------------------------------------------------
-- Comments on every object
-- ---------------------------------------------------------------------------
SELECT ok(COALESCE(pg_catalog.obj_description(e.oid, 'pg_extension'), '') <> '',
          'extension dlock has a comment')
  FROM pg_catalog.pg_extension AS e WHERE e.extname = 'dlock';
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_acquire(text,interval,interval,text,interval,interval)'), 'pg_proc'), '') <> '',
          'function dlock_acquire has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_release(text,bigint)'), 'pg_proc'), '') <> '',
          'function dlock_release has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_renew(text,bigint,interval,interval)'), 'pg_proc'), '') <> '',
          'function dlock_renew has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_check(text,bigint)'), 'pg_proc'), '') <> '',
          'function dlock_check has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_assert(text,bigint)'), 'pg_proc'), '') <> '',
          'function dlock_assert has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_remaining(text,bigint)'), 'pg_proc'), '') <> '',
          'function dlock_remaining has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regprocedure('dlock_fence()'), 'pg_proc'), '') <> '',
          'function dlock_fence has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regclass('dlock_leases'), 'pg_class'), '') <> '',
          'view dlock_leases has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regclass('dlock_lease'), 'pg_class'), '') <> '',
          'table dlock_lease has a comment');
SELECT ok(COALESCE(pg_catalog.obj_description(to_regclass('dlock_token_seq'), 'pg_class'), '') <> '',
          'sequence dlock_token_seq has a comment');

-- Every column, listed by name if it has none (a missing relation is a failure too).
SELECT is(CASE WHEN to_regclass('dlock_leases') IS NULL THEN ARRAY['(view dlock_leases is missing)']
               ELSE ARRAY(SELECT attname::text FROM pg_catalog.pg_attribute
                           WHERE attrelid = to_regclass('dlock_leases')
                             AND attnum > 0 AND NOT attisdropped
                             AND COALESCE(pg_catalog.col_description(attrelid, attnum), '') = ''
                           ORDER BY attnum) END,
          ARRAY[]::text[], 'every column of view dlock_leases has a comment (listed: columns without one)');
SELECT is(CASE WHEN to_regclass('dlock_lease') IS NULL THEN ARRAY['(table dlock_lease is missing)']
               ELSE ARRAY(SELECT attname::text FROM pg_catalog.pg_attribute
                           WHERE attrelid = to_regclass('dlock_lease')
                             AND attnum > 0 AND NOT attisdropped
                             AND COALESCE(pg_catalog.col_description(attrelid, attnum), '') = ''
                           ORDER BY attnum) END,
          ARRAY[]::text[], 'every column of table dlock_lease has a comment (listed: columns without one)');

SELECT * FROM finish();
ROLLBACK;
