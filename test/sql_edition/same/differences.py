# Copyright (c) 2026, the dlock developers
# test/sql_edition/same/differences.py: where the C edition's tests other
# than the fence's (sql/*.sql, test/specs/*.spec; the fence's are
# test/sql_edition/fence) give another output against the SQL edition,
# each with its reason and its row of docs/editions.md.  The shapes are
# fence/differences.py's (transform.py reads this file through
# DLOCK_SQL_DIFFERENCES); a rule whose text is not found exactly once fails
# the run.
#
# NOT_RUN: tests of C-only behaviour, not run, each with its reason (the
# runner prints them).
# SKIP: blocks of a test that test the C edition's internals.
# EXPECTED: per test, (C edition's text, SQL edition's text) replacements.
import importlib.util
import os

_spec = importlib.util.spec_from_file_location(
    "fence_differences", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fence", "differences.py"))
_fence = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fence)

NOT_RUN = {
    # The C edition's reset keeps baselines in dlock_stats_base; the SQL
    # edition's has baselines of its own (dlock_sql_stats_base), tested by
    # test/sql_edition/sql/sql_stats.sql and sql_stats_reset.spec.
    "sql/stats_reset_baseline": "reads the C edition's dlock_stats_base (the SQL edition's baselines: sql_stats.sql, sql_stats_reset.spec)",
    # A forced revoke in the SQL edition waits for an acquire in progress
    # (row locks) where the C edition's sees it in the lock manager and
    # lists it as waited for; neither ends it, and a revoke behind an open
    # renewal raises 55P03 with the edition's own message
    # (docs/editions.md, the revoke rows).
    "specs/revoke_force_scope": "the SQL edition waits for an acquire in progress instead of listing it, and words the 55P03 of an open renewal its own way (docs/editions.md, revoke rows)",
    # The lock key (dlock_lock_key, the secret behind the C edition's
    # advisory-lock keys) exists only in the C edition: the SQL edition
    # takes no advisory lock (docs/editions.md, "no other role reads a
    # token, releases, renews or pins a lease").
    "sql/lock_key_frozen": "the C edition's lock key table (the SQL edition has none: no advisory locks)",
    "sql/lock_key_squat": "the C edition's lock key table and CREATE EXTENSION dlock VERSION '1.1' (the SQL edition has neither)",
    # The C edition's check protection is an advisory lock of the
    # (sub)transaction, which this test reads in pg_locks; the SQL
    # edition's is a FOR SHARE row lock, which pg_locks does not show: its
    # own test of the same promise is test/sql_edition/specs/sql_portal_locks.spec
    # (docs/editions.md, "check protection until the transaction ends").
    "sql/portal_locks": "reads the C edition's advisory locks in pg_locks; the SQL edition's row locks: test/sql_edition/specs/sql_portal_locks.spec",
    # The C edition's update from 1.1 to 1.2 beside the SQL edition: the
    # SQL edition has no version 1.1 and no update script (docs/editions.md,
    # "one dlock per database"; the SQL edition's own refusal beside the C
    # edition: test/scripts/sql_edition_install.sh).
    "sql/edition_guard_update": "CREATE EXTENSION dlock VERSION '1.1' and ALTER EXTENSION dlock UPDATE beside the SQL edition (the SQL edition has no 1.1 and no update script)",
    # The C edition's lease-row cache (lease.c: each backend reads a name's
    # row where it last found it first): an index on dlock_lease.expires_at,
    # a dropped primary key.  The SQL edition has no such cache (the same
    # reason as fence/differences.py's SKIP of fence_cache).
    # Bounded pinning ends the pinning session; the SQL edition ends only
    # sessions the installing role may signal, never a superuser's
    # (docs/editions.md, "who a waiter past the pin grace ends"), and these
    # specs' holder is the test's superuser.  The SQL edition's own test of
    # the pin grace, with sessions of ordinary roles: test/sql_edition/revoke_force.sh.
    "specs/pin_grace": "the holder is a superuser's session, which the SQL edition's waiter never ends (its test: test/sql_edition/revoke_force.sh)",
    "specs/pin_grace_idle": "the holder is a superuser's session, which the SQL edition's waiter never ends (its test: test/sql_edition/revoke_force.sh)",
    # Its wait => 0 steps wait up to 1 ms behind the other session's
    # uncommitted first acquire of the name (docs/editions.md, "wait => 0
    # never waits"); under load the isolation tester then shows
    # interleavings MAY_WAIT cannot list (two steps waiting at once, seen
    # in a CI run on 14).  The answers of the race: sql_acquire_bounds.spec.
    "specs/acquire_race": "its wait => 0 steps may wait 1 ms behind the other session's uncommitted first acquire, and the isolation tester's interleaving then varies (the SQL edition's race: test/sql_edition/specs/sql_acquire_bounds.spec)",
    # The C edition's bounded-pinning specs of its outside review's fixes:
    # their pinners are the isolation tester's superuser sessions and the
    # grace is the setting dlock.pin_grace; the SQL edition's waiter never
    # ends a superuser's session and keeps its grace in dlock_sql_settings
    # (docs/editions.md, "who a waiter past the pin grace ends"; its own
    # test: test/sql_edition/revoke_force.sh).
    "specs/pin_grace_checks": "the holder is a superuser's session, which the SQL edition's waiter never ends (its test: test/sql_edition/revoke_force.sh)",
    "specs/pin_grace_deadline": "the holder is a superuser's session, which the SQL edition's waiter never ends (its test: test/sql_edition/revoke_force.sh)",
    "specs/pin_grace_renewed": "the holder is a superuser's session, which the SQL edition's waiter never ends (its test: test/sql_edition/revoke_force.sh)",
    "specs/pin_grace_released": "the holder is a superuser's session, which the SQL edition's waiter never ends (its test: test/sql_edition/revoke_force.sh)",
    "specs/revoke_force_late": "dlock_revoke(force => true) against the isolation tester's superuser sessions, which the SQL edition never ends (docs/editions.md, \"which sessions dlock_revoke(force => true) ends\"; its test: test/sql_edition/revoke_force.sh)",
    # The C edition's specs of review F4 and F5 of issue 27, as above: the
    # pin grace is the setting dlock.pin_grace (the SQL edition's is in
    # dlock_sql_settings), and the forced revoke ends the isolation
    # tester's superuser sessions, which the SQL edition never ends (run
    # against it, the holder stays idle in its transaction and the
    # teardown waits for it until the suite's timeout).
    "specs/pin_grace_waiting_check": "the grace is the setting dlock.pin_grace, which the SQL edition keeps in dlock_sql_settings (its tests: test/sql_edition/revoke_force.sh; the waiting check: test/sql_edition/specs/sql_check_renewing.spec)",
    "specs/revoke_force_nowait": "dlock_revoke(force => true) against the isolation tester's superuser sessions, which the SQL edition never ends (docs/editions.md, \"which sessions dlock_revoke(force => true) ends\"; its test: test/sql_edition/revoke_force.sh)",
    "specs/stats_reset_wait": "the C edition's dlock_stats_reset() waits for an open renewal; the SQL edition's writes baselines and waits for no lease (docs/editions.md, \"dlock_stats_reset\"; its own test: test/sql_edition/specs/sql_stats_reset.spec)",
    "specs/row_cache": "the C edition's lease-row cache and dlock_lease's columns and keys (the SQL edition has no cache; its expiry is in dlock_expiry)",
}

SKIP = {
    "api": [
        # dlock.max_ttl is the settings table's max_ttl in the SQL edition
        # (docs/editions.md, "settings"; its test: sql_edition_api.sql).
        ("-- dlock.max_ttl caps the ttl.",
         "SELECT dlock_acquire('capped2', '1 day') IS NOT NULL AS default_cap_one_day;"),
        # dlock.max_leases_per_role has no SQL-edition counterpart
        # (docs/editions.md, "dlock.max_leases_per_role").
        ("-- dlock.max_leases_per_role caps the leases one role holds at once.",
         "DROP ROLE regress_dlock_capped;"),
    ],
    "schema": [
        # CREATE EXTENSION dlock SCHEMA, ALTER EXTENSION SET SCHEMA: the
        # psql script form installs into the schema of its -v schema
        # (sql_edition_install installs it so); decoy tables and planted
        # functions in the caller's path: sql_edition_escalate.sql.
        ("-- Installed into a chosen schema; not relocatable.",
         "DROP SCHEMA locks;"),
    ],
}

# REWRITE: per test, (C edition's text, SQL edition's text) replacements
# made in the test and in its expected output alike.
REWRITE = {
    "api": [
        # PL/pgSQL's CONTEXT lines (docs/editions.md, "error context").
        ("SELECT dlock_cleanup(NULL);", "\\set SHOW_CONTEXT never\nSELECT dlock_cleanup(NULL);"),
    ],
    "stats": [
        # PL/pgSQL's CONTEXT lines (docs/editions.md, "error context").
        ("SELECT dlock_stats_reset('');", "\\set SHOW_CONTEXT never\nSELECT dlock_stats_reset('');"),
    ],
    "lease_delays": [
        # The GUC dlock.lock_delay is the settings table's lock_delay
        # (docs/editions.md, "settings" and "minimum hold and lock-delay:
        # where they are kept").
        ("SET dlock.lock_delay = '86401s';", "UPDATE dlock_sql_settings SET lock_delay = '86401s';"),
        ("RESET dlock.lock_delay;", "UPDATE dlock_sql_settings SET lock_delay = '0';"),
    ],
    "errors": [
        # A lease's expiry is in dlock_expiry (docs/editions.md, "the lease
        # table's shape").
        ("  SELECT (SELECT md5(string_agg(format('%s|%s|%s|%s|%s|%s', name, token, owner, role,\n"
         "                                       expires_at, released_at), ',' ORDER BY name))\n"
         "            FROM dlock_lease) AS leases,",
         "  SELECT (SELECT md5(string_agg(format('%s|%s|%s|%s|%s|%s', name, l.token, owner, role,\n"
         "                                       expires_at, released_at), ',' ORDER BY name))\n"
         "            FROM dlock_lease AS l JOIN dlock_expiry USING (name)) AS leases,"),
    ],
}

# ISOLATION_REWRITE: per spec, (C edition's text, SQL edition's text)
# replacements made in the spec and in its expected output alike.
ISOLATION_REWRITE = {
    "waiters": [
        # The second waiter must still wait when the holder commits, and
        # give up then as the queue's head.  The steps between (the view
        # read as two roles, a release) take longer in the SQL edition,
        # whose view reads the lease rows' lockers: with 300 ms its
        # deadline passed before the release on a loaded 2-core machine.
        # As the head it waits polling, not in the lock manager, so the
        # isolation tester waits for it before the next step either way.
        ("wait => '300 ms'", "wait => '1 s'"),
    ],
    "revoke": [
        # The SQL edition's revoke reads the lease row's lockers between
        # its lock waits of 100 ms (docs/editions.md, the revoke rows: a
        # check that comes and goes within 100 ms can be missed); the C
        # edition's sees them in the lock manager.  Here the second
        # session's check stays open 300 ms before the holder commits, so
        # that waited_for counts it in both editions.
        ("step o_write\t{ INSERT INTO ledger VALUES (3, 1); }",
         "step o_write\t{ INSERT INTO ledger SELECT 3, 1 FROM pg_sleep(0.3); }"),
    ],
    "lock_delay": [
        # A lease's expiry is in dlock_expiry, with its lock-delay
        # (docs/editions.md, "the lease table's shape", "minimum hold and
        # lock-delay: where they are kept").
        ("(SELECT expires_at + lock_delay AS at FROM dlock_lease WHERE name = 'job')",
         "(SELECT expires_at + lock_delay AS at FROM dlock_expiry WHERE name = 'job')"),
        # The GUC dlock.lock_delay is the settings table's lock_delay, for
        # every session (docs/editions.md, "settings"); the last
        # permutation sets it, and the teardown drops the edition.
        ("SET dlock.lock_delay = '3s';", "UPDATE dlock_sql_settings SET lock_delay = '3s';"),
    ],
    "min_hold": [
        # The minimum hold is in dlock_expiry (the same rows).
        ("(SELECT acquired_at + min_hold AS at FROM dlock_lease WHERE name = 'job')",
         "(SELECT acquired_at + min_hold AS at FROM dlock_lease JOIN dlock_expiry USING (name) WHERE name = 'job')"),
    ],
}

EXPECTED = {
    "errors": [
        # docs/editions.md, "ttl above the maximum".
        ("SELECT dlock_acquire('x', '1 day 1 s');\n"
         "ERROR:  ttl exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by \"dlock.max_ttl\".\n",
         "SELECT dlock_acquire('x', '1 day 1 s');\n"
         "ERROR:  ttl exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by the column max_ttl of the table dlock_sql_settings.\n"),
        ("SELECT dlock_renew('held', :held_token, '2 days');\n"
         "ERROR:  ttl exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by \"dlock.max_ttl\".\n",
         "SELECT dlock_renew('held', :held_token, '2 days');\n"
         "ERROR:  ttl exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by the column max_ttl of the table dlock_sql_settings.\n"),
        # docs/editions.md, "a check inside a read-only transaction".
        ("SELECT dlock_check('held', :held_token) AS check_in_read_only;\n"
         " check_in_read_only \n"
         "--------------------\n"
         " t\n"
         "(1 row)\n"
         "\n",
         "SELECT dlock_check('held', :held_token) AS check_in_read_only;\n"
         "ERROR:  cannot execute dlock_check() in a read-only transaction\n"),
    ],
    "lease_delays": [
        # docs/editions.md, "lock-delay above the maximum": the hint names
        # the settings table's max_ttl.
        ("SELECT dlock_acquire('d', '10 s', lock_delay => '86401 s');\n"
         "ERROR:  lock_delay exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by \"dlock.max_ttl\".\n",
         "SELECT dlock_acquire('d', '10 s', lock_delay => '86401 s');\n"
         "ERROR:  lock_delay exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by the column max_ttl of the table dlock_sql_settings.\n"),
        ("SELECT dlock_acquire('d', '10 s');\n"
         "ERROR:  lock_delay exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by \"dlock.max_ttl\".\n",
         "SELECT dlock_acquire('d', '10 s');\n"
         "ERROR:  lock_delay exceeds the maximum of 86400 seconds\n"
         "HINT:  The maximum is set by the column max_ttl of the table dlock_sql_settings.\n"),
    ],
    "remaining": [
        # The check protection is a row lock, not an advisory lock: pg_locks
        # shows none (docs/editions.md, "check protection until the
        # transaction ends").
        (" dlock_locks_kept_by_check \n"
         "---------------------------\n"
         "                         1\n",
         " dlock_locks_kept_by_check \n"
         "---------------------------\n"
         "                         0\n"),
    ],
}


def expected(name, major):
    """The replacements for test name on PostgreSQL major."""
    return list(EXPECTED.get(name, []))


# The isolation specs: per spec, (C edition's text, SQL edition's text)
# replacements of its expected output (after isolation_expected below),
# each found exactly once, with the reason above each spec's list.
ISOLATION_EXPECTED = {
    # dlock.max_leases_per_role has no SQL-edition counterpart
# (docs/editions.md, "dlock.max_leases_per_role"): the second lease is
# granted.
    "hardening": [
        ('\n'
         "step s2_b: SET ROLE dlock_iso_quota; SELECT dlock_acquire('quota b', '1 min', '1 min') IS NOT NULL AS b_acquired; <waiting ...>\n"
         'step s1_commit: COMMIT; RESET ROLE;\n',
         '\n'
         "step s2_b: SET ROLE dlock_iso_quota; SELECT dlock_acquire('quota b', '1 min', '1 min') IS NOT NULL AS b_acquired;\n"
         'b_acquired\n'
         '----------\n'
         't         \n'
         '(1 row)\n'
         '\n'
         'step s1_commit: COMMIT; RESET ROLE;\n'),
        ('step s1_commit: COMMIT; RESET ROLE;\n'
         'step s2_b: <... completed>\n'
         'ERROR:  role "dlock_iso_quota" holds too many leases\n'
         'step s2_count: SELECT count(*) FILTER (WHERE held) AS held, count(*) AS names FROM dlock_leases;\n',
         'step s1_commit: COMMIT; RESET ROLE;\n'
         'step s2_count: SELECT count(*) FILTER (WHERE held) AS held, count(*) AS names FROM dlock_leases;\n'),
        ('----+-----\n'
         '   1|    2\n'
         '(1 row)\n',
         '----+-----\n'
         '   2|    3\n'
         '(1 row)\n'),
    ],
    # The check protection is a FOR SHARE row lock, not an advisory lock:
# o_locks, which reads advisory locks in pg_locks, shows none (docs/editions.md,
# "check protection until the transaction ends"; the row locks:
# test/sql_edition/specs/sql_portal_locks.spec).
    "portal_locks": [
        ('\n'
         'check_held|state_held|handover_held\n'
         '----------+----------+-------------\n'
         't         |f         |f            \n'
         '(1 row)\n'
         '\n'
         "step h_check: SELECT dlock_check('job', 1) AS ok;\n",
         '\n'
         'check_held|state_held|handover_held\n'
         '----------+----------+-------------\n'
         'f         |f         |f            \n'
         '(1 row)\n'
         '\n'
         "step h_check: SELECT dlock_check('job', 1) AS ok;\n"),
        ('----------+----------+-------------\n'
         't         |f         |f            \n'
         '(1 row)\n',
         '----------+----------+-------------\n'
         'f         |f         |f            \n'
         '(1 row)\n'),
        ('----------+----------+-------------\n'
         'f         |t         |t            \n'
         '(1 row)\n',
         '----------+----------+-------------\n'
         'f         |f         |f            \n'
         '(1 row)\n'),
        ('----------+----------+-------------\n'
         'f         |t         |f            \n'
         '(1 row)\n',
         '----------+----------+-------------\n'
         'f         |f         |f            \n'
         '(1 row)\n'),
    ],
    # A release or renewal of an expired lease during another session's
# uncommitted hand-over answers false at once (SKIP LOCKED), where the C
# edition waits for the hand-over: the same answer (docs/editions.md, "a
# check, assert or fenced write during another session's uncommitted
# hand-over": the same for dlock_release and dlock_renew).
    "release_expiry": [
        ('\n'
         "step h_release: SELECT dlock_release('job', 1) AS released; <waiting ...>\n"
         'step o_commit: COMMIT;\n'
         'step h_release: <... completed>\n'
         'released\n',
         '\n'
         "step h_release: SELECT dlock_release('job', 1) AS released;\n"
         'released\n'),
        ('(1 row)\n'
         '\n'
         '\n'
         'starting permutation: h_acquire_short o_sleep o_begin o_acquire h_renew o_rollback\n',
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT;\n'
         '\n'
         'starting permutation: h_acquire_short o_sleep o_begin o_acquire h_renew o_rollback\n'),
        ('\n'
         "step h_renew: SELECT dlock_renew('job', 1, '1 min') AS renewed; <waiting ...>\n"
         'step o_rollback: ROLLBACK;\n'
         'step h_renew: <... completed>\n'
         'renewed\n',
         '\n'
         "step h_renew: SELECT dlock_renew('job', 1, '1 min') AS renewed;\n"
         'renewed\n'),
        ('    2\n'
         '(1 row)\n'
         '\n'
         "step h_renew: SELECT dlock_renew('job', 1, '1 min') AS renewed;\n"
         'renewed\n'
         '-------\n'
         'f      \n'
         '(1 row)\n'
         '\n',
         '    2\n'
         '(1 row)\n'
         '\n'
         "step h_renew: SELECT dlock_renew('job', 1, '1 min') AS renewed;\n"
         'renewed\n'
         '-------\n'
         'f      \n'
         '(1 row)\n'
         '\n'
         'step o_rollback: ROLLBACK;\n'),
    ],
    # REPEATABLE READ and SERIALIZABLE (docs/editions.md, "Which calls may
# raise 40001"): a lease whose rows were created after the snapshot makes
# dlock_acquire, dlock_check, dlock_renew and dlock_release raise 40001
# (the C edition decides on the latest committed state); the calls after
# it in the transaction fail with 25P02.  docs/editions.md, "wait => 0
# never waits": two SERIALIZABLE acquirers crossing over two names whose
# first acquires are uncommitted each wait up to 1 ms and get NULL, and
# the second commit fails with SSI's 40001.
    "snapshots": [
        ("step rr_acquire: SELECT dlock_acquire('job', '1 min') AS token;\n"
         'token\n'
         '-----\n'
         '     \n'
         '(1 row)\n'
         '\n'
         "step rr_check: SELECT dlock_check('job', 1) AS checked;\n",
         "step rr_acquire: SELECT dlock_acquire('job', '1 min') AS token;\n"
         'ERROR:  could not serialize access due to concurrent update\n'
         "step rr_check: SELECT dlock_check('job', 1) AS checked;\n"),
        ("step rr_check: SELECT dlock_check('job', 1) AS checked;\n"
         'checked\n'
         '-------\n'
         't      \n'
         '(1 row)\n'
         '\n'
         'step rr_commit: COMMIT;\n',
         "step rr_check: SELECT dlock_check('job', 1) AS checked;\n"
         'ERROR:  current transaction is aborted, commands ignored until end of transaction block\n'
         'step rr_commit: COMMIT;\n'),
        ("step rr_acquire: SELECT dlock_acquire('job', '1 min') AS token;\n"
         'token\n'
         '-----\n'
         '    2\n'
         '(1 row)\n'
         '\n'
         'step rr_commit: COMMIT;\n',
         "step rr_acquire: SELECT dlock_acquire('job', '1 min') AS token;\n"
         'ERROR:  could not serialize access due to concurrent update\n'
         'step rr_commit: COMMIT;\n'),
        ('----+-----+----\n'
         'job |    2|t   \n'
         '(1 row)\n',
         '----+-----+----\n'
         'job |    1|f   \n'
         '(1 row)\n'),
        ("step rr_renew: SELECT dlock_renew('job', 1, '1 min') AS renewed;\n"
         'renewed\n'
         '-------\n'
         't      \n'
         '(1 row)\n'
         '\n'
         "step rr_release: SELECT dlock_release('job', 1) AS released;\n",
         "step rr_renew: SELECT dlock_renew('job', 1, '1 min') AS renewed;\n"
         'ERROR:  could not serialize access due to concurrent update\n'
         "step rr_release: SELECT dlock_release('job', 1) AS released;\n"),
        ("step rr_release: SELECT dlock_release('job', 1) AS released;\n"
         'released\n'
         '--------\n'
         't       \n'
         '(1 row)\n'
         '\n'
         'step rr_commit: COMMIT;\n',
         "step rr_release: SELECT dlock_release('job', 1) AS released;\n"
         'ERROR:  current transaction is aborted, commands ignored until end of transaction block\n'
         'step rr_commit: COMMIT;\n'),
        ('step rr_commit: COMMIT;\n'
         'step o_state: SELECT name, token, held FROM dlock_leases ORDER BY name;\n'
         'name|token|held\n'
         '----+-----+----\n'
         'job |    1|f   \n'
         '(1 row)\n'
         '\n'
         '\n'
         'starting permutation: rr_begin o_begin o_acquire rr_acquire o_commit rr_acquire rr_commit o_state\n',
         'step rr_commit: COMMIT;\n'
         'step o_state: SELECT name, token, held FROM dlock_leases ORDER BY name;\n'
         'name|token|held\n'
         '----+-----+----\n'
         'job |    1|t   \n'
         '(1 row)\n'
         '\n'
         '\n'
         'starting permutation: rr_begin o_begin o_acquire rr_acquire o_commit rr_acquire rr_commit o_state\n'),
        ("step rr_acquire: SELECT dlock_acquire('job', '1 min') AS token;\n"
         'token\n'
         '-----\n'
         '     \n'
         '(1 row)\n'
         '\n'
         'step rr_commit: COMMIT;\n',
         "step rr_acquire: SELECT dlock_acquire('job', '1 min') AS token;\n"
         'ERROR:  could not serialize access due to concurrent update\n'
         'step rr_commit: COMMIT;\n'),
        ('step s1_commit: COMMIT;\n'
         'step s2_commit: COMMIT;\n'
         'step o_state: SELECT name, token, held FROM dlock_leases ORDER BY name;\n'
         'name|token|held\n',
         'step s1_commit: COMMIT;\n'
         'step s2_commit: COMMIT;\n'
         'ERROR:  could not serialize access due to read/write dependencies among transactions\n'
         'step o_state: SELECT name, token, held FROM dlock_leases ORDER BY name;\n'
         'name|token|held\n'),
        ('----+-----+----\n'
         'a   |    1|t   \n'
         'b   |    2|t   \n'
         '(2 rows)\n'
         '\n'
         '\n',
         '----+-----+----\n'
         'a   |    1|t   \n'
         '(1 row)\n'
         '\n'
         '\n'),
        ("step s2_acquire_a: SELECT dlock_acquire('a', '1 min') IS NOT NULL AS s2_got_a;\n"
         's2_got_a\n'
         '--------\n'
         'f       \n'
         '(1 row)\n'
         '\n'
         "step s2_acquire_b: SELECT dlock_acquire('b', '1 min') IS NOT NULL AS s2_got_b;\n",
         "step s2_acquire_a: SELECT dlock_acquire('a', '1 min') IS NOT NULL AS s2_got_a;\n"
         'ERROR:  could not serialize access due to concurrent update\n'
         "step s2_acquire_b: SELECT dlock_acquire('b', '1 min') IS NOT NULL AS s2_got_b;\n"),
        ("step s2_acquire_b: SELECT dlock_acquire('b', '1 min') IS NOT NULL AS s2_got_b;\n"
         's2_got_b\n'
         '--------\n'
         't       \n'
         '(1 row)\n'
         '\n'
         'step s2_commit: COMMIT;\n',
         "step s2_acquire_b: SELECT dlock_acquire('b', '1 min') IS NOT NULL AS s2_got_b;\n"
         'ERROR:  current transaction is aborted, commands ignored until end of transaction block\n'
         'step s2_commit: COMMIT;\n'),
        ('a   |    1|t   \n'
         'b   |    2|t   \n'
         '(2 rows)\n'
         '\n',
         'a   |    1|t   \n'
         '(1 row)\n'
         '\n'),
    ],
    # The quota permutations: dlock.max_leases_per_role has no SQL-edition
# counterpart (docs/editions.md, "dlock.max_leases_per_role"): the second
# lease is granted.
    "wait_bounds": [
        ("step w_quota_0: SET ROLE dlock_iso_bounds; SELECT dlock_acquire('quota b', '1 min') IS NULL AS busy; RESET ROLE;\n"
         'busy\n'
         '----\n'
         't   \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT; RESET ROLE;\n',
         "step w_quota_0: SET ROLE dlock_iso_bounds; SELECT dlock_acquire('quota b', '1 min') IS NULL AS busy; RESET ROLE;\n"
         'busy\n'
         '----\n'
         'f   \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT; RESET ROLE;\n'),
        ('-------+----\n'
         'old    |f   \n'
         'quota a|t   \n'
         '(2 rows)\n'
         '\n'
         '\n'
         'starting permutation: o_begin o_quota w_quota_short s_sleep o_commit s_state\n',
         '-------+----\n'
         'old    |f   \n'
         'quota a|t   \n'
         'quota b|t   \n'
         '(3 rows)\n'
         '\n'
         '\n'
         'starting permutation: o_begin o_quota w_quota_short s_sleep o_commit s_state\n'),
        ('\n'
         "step w_quota_short: SET ROLE dlock_iso_bounds; SELECT dlock_acquire('quota b', '1 min', '300 ms') IS NULL AS busy; RESET ROLE; <waiting ...>\n"
         'step s_sleep: SELECT pg_sleep(2);\n',
         '\n'
         "step w_quota_short: SET ROLE dlock_iso_bounds; SELECT dlock_acquire('quota b', '1 min', '300 ms') IS NULL AS busy; RESET ROLE;\n"
         'busy\n'
         '----\n'
         'f   \n'
         '(1 row)\n'
         '\n'
         'step s_sleep: SELECT pg_sleep(2);\n'),
        ('        \n'
         '(1 row)\n'
         '\n'
         'step w_quota_short: <... completed>\n'
         'busy\n'
         '----\n'
         't   \n'
         '(1 row)\n',
         '        \n'
         '(1 row)\n'),
        ('quota a|t   \n'
         '(2 rows)\n'
         '\n',
         'quota a|t   \n'
         'quota b|t   \n'
         '(3 rows)\n'
         '\n'),
    ],
    # dlock_revoke(force => true) ends only sessions the installing role
# may signal, never a superuser's (docs/editions.md, "which sessions
# dlock_revoke(force => true) ends"): the holder, the test's superuser, is
# not ended (ended 0); its LOCK waits for the operator's transaction, the
# revoke for the holder's check protection, and the deadlock detector ends
# the holder's statement, which waited first; the revoke then goes on.
    "revoke": [
        ('step h_stuck: <... completed>\n'
         'ERROR:  canceling statement due to user request\n'
         'step op_revoke_force: <... completed>\n',
         'step h_stuck: <... completed>\n'
         'ERROR:  deadlock detected\n'
         'step op_revoke_force: <... completed>\n'),
        ('-------------+----------+-----\n'
         '            1|         1|    1\n'
         '(1 row)\n',
         '-------------+----------+-----\n'
         '            1|         1|    0\n'
         '(1 row)\n'),
        # The step rewritten above (ISOLATION_REWRITE, revoke).
        ("step o_write: INSERT INTO ledger VALUES (3, 1);\n",
         "step o_write: INSERT INTO ledger SELECT 3, 1 FROM pg_sleep(0.3);\n"),
    ],
    # A waiter for a name whose first acquire has not committed waits for
# the inserting transaction (the unique index), not in a row lock of
# dlock's: dlock_waiters does not list it (docs/editions.md,
# "dlock_waiters"; "Counters, waiters and cleanup").
    "waiters": [
        ('\n'
         'name|kind   |position|backend|role_shown|state |since_known|no_deadline|lease_known\n'
         '----+-------+--------+-------+----------+------+-----------+-----------+-----------\n'
         '    |waiting|       1|w2     |t         |active|t          |t          |f          \n'
         '(1 row)\n'
         '\n',
         '\n'
         'name|kind|position|backend|role_shown|state|since_known|no_deadline|lease_known\n'
         '----+----+--------+-------+----------+-----+-----------+-----------+-----------\n'
         '(0 rows)\n'
         '\n'),
    ],
    # o_lock_key: the C edition's lock key table, which the SQL edition has
# not (no advisory locks): the LOCK fails and nothing blocks.
    "wait_bounds_relations": [
        ('step o_lock_key: LOCK TABLE dlock_lock_key IN ACCESS EXCLUSIVE MODE;\n'
         "step w_free_0: SELECT dlock_acquire('free', '1 min') IS NULL AS busy;\n",
         'step o_lock_key: LOCK TABLE dlock_lock_key IN ACCESS EXCLUSIVE MODE;\n'
         'ERROR:  relation "dlock_lock_key" does not exist\n'
         "step w_free_0: SELECT dlock_acquire('free', '1 min') IS NULL AS busy;\n"),
        ('ERROR:  relation "dlock_lock_key" does not exist\n'
         "step w_free_0: SELECT dlock_acquire('free', '1 min') IS NULL AS busy;\n"
         'busy\n'
         '----\n'
         't   \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT;\n'
         'step w_locks: SELECT count(*) AS locks_left FROM pg_locks WHERE pid = pg_backend_pid() AND NOT granted;\n',
         'ERROR:  relation "dlock_lock_key" does not exist\n'
         "step w_free_0: SELECT dlock_acquire('free', '1 min') IS NULL AS busy;\n"
         'busy\n'
         '----\n'
         'f   \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT;\n'
         'step w_locks: SELECT count(*) AS locks_left FROM pg_locks WHERE pid = pg_backend_pid() AND NOT granted;\n'),
        ('(1 row)\n'
         '\n'
         'step s_state: SELECT name, held FROM dlock_leases ORDER BY name;\n'
         'name|held\n'
         '----+----\n'
         'free|f   \n'
         'held|t   \n'
         '(2 rows)\n'
         '\n'
         '\n'
         'starting permutation: o_begin o_lock_key w_free_short s_sleep o_commit w_free_long s_state\n',
         '(1 row)\n'
         '\n'
         'step s_state: SELECT name, held FROM dlock_leases ORDER BY name;\n'
         'name|held\n'
         '----+----\n'
         'free|t   \n'
         'held|t   \n'
         '(2 rows)\n'
         '\n'
         '\n'
         'starting permutation: o_begin o_lock_key w_free_short s_sleep o_commit w_free_long s_state\n'),
        ('step o_lock_key: LOCK TABLE dlock_lock_key IN ACCESS EXCLUSIVE MODE;\n'
         "step w_free_short: SELECT dlock_acquire('free', '1 min', '300 ms') IS NULL AS busy; <waiting ...>\n"
         'step s_sleep: SELECT pg_sleep(2);\n',
         'step o_lock_key: LOCK TABLE dlock_lock_key IN ACCESS EXCLUSIVE MODE;\n'
         'ERROR:  relation "dlock_lock_key" does not exist\n'
         "step w_free_short: SELECT dlock_acquire('free', '1 min', '300 ms') IS NULL AS busy;\n"
         'busy\n'
         '----\n'
         'f   \n'
         '(1 row)\n'
         '\n'
         'step s_sleep: SELECT pg_sleep(2);\n'),
        ('(1 row)\n'
         '\n'
         'step s_sleep: SELECT pg_sleep(2);\n'
         'pg_sleep\n'
         '--------\n'
         '        \n'
         '(1 row)\n'
         '\n'
         'step w_free_short: <... completed>\n'
         'busy\n'
         '----\n'
         't   \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT;\n'
         "step w_free_long: SELECT dlock_acquire('free', '1 min', '5 s') IS NOT NULL AS acquired;\n"
         'acquired\n'
         '--------\n'
         't       \n'
         '(1 row)\n'
         '\n'
         'step s_state: SELECT name, held FROM dlock_leases ORDER BY name;\n',
         '(1 row)\n'
         '\n'
         'step s_sleep: SELECT pg_sleep(2);\n'
         'pg_sleep\n'
         '--------\n'
         '        \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT;\n'
         "step w_free_long: SELECT dlock_acquire('free', '1 min', '5 s') IS NOT NULL AS acquired;\n"
         'acquired\n'
         '--------\n'
         't       \n'
         '(1 row)\n'
         '\n'
         'step s_state: SELECT name, held FROM dlock_leases ORDER BY name;\n'),
        ('        \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT;\n'
         "step w_free_long: SELECT dlock_acquire('free', '1 min', '5 s') IS NOT NULL AS acquired;\n"
         'acquired\n'
         '--------\n'
         't       \n'
         '(1 row)\n'
         '\n'
         'step s_state: SELECT name, held FROM dlock_leases ORDER BY name;\n'
         'name|held\n'
         '----+----\n'
         'free|t   \n'
         'held|t   \n',
         '        \n'
         '(1 row)\n'
         '\n'
         'step o_commit: COMMIT;\n'
         "step w_free_long: SELECT dlock_acquire('free', '1 min', '5 s') IS NOT NULL AS acquired;\n"
         'acquired\n'
         '--------\n'
         'f       \n'
         '(1 row)\n'
         '\n'
         'step s_state: SELECT name, held FROM dlock_leases ORDER BY name;\n'
         'name|held\n'
         '----+----\n'
         'free|t   \n'
         'held|t   \n'),
    ],
}


# MAY_WAIT: per spec, the steps (permutation, from 1; step; its run in
# that permutation, from 1) that wait up to 1 ms in the SQL edition where
# the C edition does not wait at all (docs/editions.md, "wait => 0 never
# waits": an acquire behind another transaction's uncommitted first
# acquire of the name, then NULL).  The isolation tester looks 10 ms after
# a step starts; on a loaded machine it may find such a step still in its
# wait (a 1 ms lock_timeout fires late there too), print it as <waiting
# ...> and go on with the next step, printing the result after it.  A spec
# that fails passes if each permutation of its result is the expected one
# with any of these steps shown so (fence/transform.py, isolation-accepts),
# with the same answers, or one of the variants given: where the next step
# is the other transaction's ROLLBACK, the waiting acquire may get the
# name.
# MAY_WAIT variants of wait_bounds_relations (below): the late-bounded
# acquire of 'free' got the name once the operator committed.
_GOT_FREE = [
    ("step w_free_0: <... completed>\nbusy\n----\nt   \n",
     "step w_free_0: <... completed>\nbusy\n----\nf   \n"),
    ("free|f   \n", "free|t   \n"),
]
_FREE_LONG_BUSY = [
    ("acquired\n--------\nt       \n", "acquired\n--------\nf       \n"),
]


MAY_WAIT = {
    # ... and behind a relation lock on dlock's tables, indexes or counter
    # (docs/editions.md, the same row; seen twice in one run at load 8).
    # Where the 1 ms bound itself fires late (a CI run at load 3 to 4 on
    # 14), the other transaction's COMMIT, the next step, releases the
    # relation lock first: the acquire then finds the name free and takes
    # it, as any wait would once the lock is gone (free's lease is
    # expired): busy f, and the lease shows held; in permutation 13 the
    # same session's later acquire of the name without an owner is then
    # busy for its whole 5 s.
    "wait_bounds_relations": [
        (1, "w_held_0", 1),
        (4, "w_free_0", 1, [_GOT_FREE]),
        (5, "w_free_0", 1, [_GOT_FREE]),
        (7, "w_free_0", 1, [_GOT_FREE]),
        (9, "w_free_0", 1, [_GOT_FREE]),
        (11, "w_free_0", 1, [_GOT_FREE]),
        (13, "w_free_0", 1, [_GOT_FREE[:1] + _FREE_LONG_BUSY]),
    ],
    # (seen in a CI run at load 3 to 4: the three parts of .ci/run side by side)
    "wait_bounds": [
        (6, "w_table_0", 1),
    ],
    # (seen in the final CI run of round six, on 18, the three parts of
    # .ci/run side by side: the wait => 0 acquire shown waiting until the
    # holder's COMMIT, with the same answer)
    "portal_locks": [
        (3, "n_acquire_free", 1),
    ],
    "snapshots": [
        (4, "rr_acquire", 1),
        (5, "s2_acquire_a", 1),
        (5, "s1_acquire_b", 1),
    ],
}


# The isolation specs: the fence's rule (a step during another session's
# uncommitted hand-over answers at once).
isolation_expected = _fence.isolation_expected
