# Copyright (c) 2026, the dlock developers
# test/sql_edition/pgtap/differences.py: the C edition's pgTAP assertions
# (test/pgtap) that fail against the SQL edition, by file and description,
# each with its reason and its row of docs/editions.md.  prove.py reports
# each as a skip; a listed assertion that passes, or that is no longer in
# the file, fails the suite, so that a difference never outlives its cause.
#
# SKIP: per file, (the start of a statement, the number of assertions it
# makes, the reason): statements that would abort the file's transaction
# (they read an object only the C edition has), made pgTAP's skip().
# FAILS: per file, {description: reason} of the assertions that fail.
SKIP = {
    "01_api": [
        # The lock key (C only: the SQL edition takes no advisory lock).
        ("SELECT is((SELECT pg_catalog.count(*) FROM dlock_lock_key", 1,
         "the C edition's lock key table"),
        # Reads the pg_extension row, which the psql script has not: it
        # would make no assertion at all.
        ("SELECT ok(COALESCE(pg_catalog.obj_description(e.oid, 'pg_extension')", 1,
         "no pg_extension row after the psql script (docs/editions.md, pg_extension row)"),
    ],
}

# NOT_RUN: whole files of C-only behaviour, reported as one skip each.
NOT_RUN = {
    # The C edition guards its lease table against DDL (indexes,
    # constraints, triggers, row-level security, rows written by hand)
    # because a superuser may change an extension's table; its checks and
    # messages (relation "dlock_lease" of extension "dlock" must not have
    # triggers) are the library's.  The SQL edition's tables are two
    # (docs/editions.md, "the lease table's shape"), and only their owner
    # may change them (docs/editions.md, "What another role can do";
    # sql_edition_install's escalation attempts).
    "03_hardening": "the C edition's guards against DDL on its lease table (the library's checks and messages)",
}

# REWRITE: per file, (C edition's text, SQL edition's text[, how many
# times it is found, default once]): the same
# assertion on the SQL edition's tables (a lease's expiry and release are
# in dlock_expiry: docs/editions.md, "the lease table's shape").
REWRITE = {
    # The C edition's dlock_import_check_name is the SQL edition's
    # dlock_sql_import_refuse (80_move.sql): the same check of PUBLIC's
    # privilege, on the function the SQL edition has.
    "01_api": [
        ("'dlock_import_check_name(text)', 'EXECUTE')",
         "'dlock_sql_import_refuse()', 'EXECUTE')"),
    ],
    "02_privileges": [
        ("CREATE TEMP TABLE dlock_pgtap_snap AS\n"
         "\tSELECT * FROM dlock_lease WHERE name = 'pgtap 02 shared';",
         "CREATE TEMP TABLE dlock_pgtap_snap AS\n"
         "\tSELECT l.*, e.expires_at, e.released_at FROM dlock_lease AS l JOIN dlock_expiry AS e USING (name)"
         " WHERE name = 'pgtap 02 shared';"),
        ("FROM dlock_lease AS l JOIN dlock_pgtap_snap AS s USING (name)),",
         "FROM (SELECT l.*, e.expires_at, e.released_at FROM dlock_lease AS l JOIN dlock_expiry AS e USING (name)) AS l\n"
         "             JOIN dlock_pgtap_snap AS s USING (name)),", 2),
        ("             FROM dlock_lease WHERE name = 'pgtap 02 future clock'),",
         "             FROM dlock_expiry WHERE name = 'pgtap 02 future clock'),"),
    ],
    "03_hardening": [
        ("CREATE INDEX dlock_pgtap_partial ON dlock_lease (expires_at) WHERE released_at IS NULL;",
         "CREATE INDEX dlock_pgtap_partial ON dlock_expiry (expires_at) WHERE released_at IS NULL;"),
    ],
}

_C_LANG = "the SQL edition's functions are PL/pgSQL and SQL, not C (docs/editions.md, how it is installed)"
_DEFINER = ("the SQL edition's functions are SECURITY DEFINER: they write tables only their owner "
            "may write (docs/editions.md, who the caller is)")
_NO_EXT = "no pg_extension row after the psql script (docs/editions.md, pg_extension row)"
_LOCK_KEY = "the C edition's lock key table (the SQL edition takes no advisory lock)"
_SHAPE = ("dlock_lease has no expires_at or released_at (they are in dlock_expiry: docs/editions.md, "
          "the lease table's shape): 42703 before the privilege check; the write is refused all the same")
_VIEW = ("dlock_leases joins two tables, so PostgreSQL refuses writes through it as not updatable "
         "(55000) before the privilege check (42501); refused all the same")

FAILS = {
    "01_api": {
        "extension dlock is installed": _NO_EXT,
        "extension dlock is not relocatable": _NO_EXT,
        "extension dlock owns exactly its functions, the three tables, the sequence and the views": _NO_EXT,
        "tables dlock_lease and dlock_epoch and sequence dlock_token_seq are dumped by pg_dump "
        "(pg_extension_config_dump)": _NO_EXT + "; the objects are dumped as ordinary ones (docs/editions.md, pg_dump)",
        "table dlock_lock_key (the lock key secret) is not dumped by pg_dump: a restore draws a new one": _LOCK_KEY,
        "dlock_acquire is written in C": _C_LANG,
        "dlock_release is written in C": _C_LANG,
        "dlock_renew is written in C": _C_LANG,
        "dlock_check is written in C": _C_LANG,
        "dlock_remaining is written in C": _C_LANG,
        "dlock_assert is written in C": _C_LANG,
        "dlock_fence is written in C": _C_LANG,
        "dlock_cleanup is written in C": _C_LANG,
        "dlock_release is not security definer": _DEFINER,
        "dlock_check is not security definer": _DEFINER,
        "dlock_remaining is not security definer": _DEFINER,
        "dlock_cleanup is not security definer": _DEFINER,
        "dlock_edition() says c in the C edition": "it says sql (docs/editions.md: dlock_edition())",
        "dlock_import is SECURITY DEFINER": ("the import is a SECURITY INVOKER wrapper around a definer "
                                             "(docs/editions.md, dlock_export(), dlock_import())"),
        "each dlock function has exactly one signature": _NO_EXT + " (the assertion finds the functions by the extension's schema)",
    },
    "02_privileges": {
        "PUBLIC has no privilege on table dlock_lock_key (the lock key secret)": _LOCK_KEY,
        "a plain role has no privilege on table dlock_lock_key": _LOCK_KEY,
        "a plain role cannot read the lock key secret": _LOCK_KEY,
        "a plain role cannot INSERT into dlock_lease": _SHAPE,
        "a plain role cannot UPDATE dlock_lease": _SHAPE,
        "a plain role cannot INSERT through the view dlock_leases": _VIEW,
        "a plain role cannot UPDATE through the view dlock_leases": _VIEW,
        "a plain role cannot DELETE through the view dlock_leases": _VIEW,
    },
}
