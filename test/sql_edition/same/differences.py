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
}

SKIP = {
    "api": [
        # dlock.max_ttl is the settings table's max_ttl in the SQL edition
        # (docs/editions.md, "settings"; its test: sql_edition_api.sql).
        ("-- dlock.max_ttl caps the ttl.",
         "SELECT dlock_acquire('capped2', '1 day') IS NOT NULL AS default_cap_one_day;"),
        # bug: dlock.max_leases_per_role has no SQL-edition counterpart
        # (docs/editions.md, "settings": the C edition's other GUCs).
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


# The isolation specs: the fence's rule (a step during another session's
# uncommitted hand-over answers at once).
isolation_expected = _fence.isolation_expected
