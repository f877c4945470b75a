# Copyright (c) 2026, the dlock developers
# test/sql_edition/fence/differences.py: where the SQL edition's fence tests
# give another output than the C edition's, each with its reason; every one
# is a row of docs/editions.md.  transform.py applies them to the C
# edition's expected output (rewritten), and refuses a rule whose text is
# not found exactly once, so that a rule never outlives its cause.
#
# SKIP: blocks of a C edition test that test the C edition's own internals;
# each block runs from a line of the test file to another (inclusive).
# EXPECTED: per test, (C edition's text, SQL edition's text) replacements.

SKIP = {
    # The C edition's lease lookup caches the row's address: TRUNCATE
    # dlock_lease under it.  The SQL edition keeps each lease in two tables
    # and has no such cache.
    "fence_cache": [
        ("-- A check reads the lease row where the last lookup of the name found it,",
         "SELECT dlock_release('far', :f3) AS released;"),
    ],
}

EXPECTED = {
    "fence": [
        # PL/pgSQL refuses a trigger function called directly before it runs.
        ("SELECT dlock_fence();\n"
         "ERROR:  function \"dlock_fence\" was not called by trigger manager\n"
         "\\echo :LAST_ERROR_SQLSTATE\n"
         "39P01\n",
         "SELECT dlock_fence();\n"
         "ERROR:  trigger functions can only be called as triggers\n"
         "\\echo :LAST_ERROR_SQLSTATE\n"
         "0A000\n"),
    ],
    "fence_cache": [
        # A declared token is vouched for by the session's role at the time
        # of the write (the C edition: by the role that declared it).
        ("SET LOCAL ROLE regress_dlock_stranger;\n"
         "UPDATE two SET v = 5 WHERE id = 1;\n"
         "RESET ROLE;\n"
         "COMMIT;\n"
         "SELECT id, v FROM two WHERE id = 1;\n"
         " id | v \n"
         "----+---\n"
         "  1 | 5\n",
         "SET LOCAL ROLE regress_dlock_stranger;\n"
         "UPDATE two SET v = 5 WHERE id = 1;\n"
         "ERROR:  permission denied to check lock \"job\"\n"
         "DETAIL:  The lease is held by role \"postgres\"; only that role and its members may vouch for its token.\n"
         "RESET ROLE;\n"
         "ERROR:  current transaction is aborted, commands ignored until end of transaction block\n"
         "COMMIT;\n"
         "SELECT id, v FROM two WHERE id = 1;\n"
         " id | v \n"
         "----+---\n"
         "  1 | 1\n"),
    ],
    "fence_declare": [
        # PREPARE TRANSACTION is refused by PostgreSQL itself: the core
        # touches a temporary table (30_lease.sql, dlock_sql_no_prepare).
        ("PREPARE TRANSACTION 'dlock_regress';\n"
         "ERROR:  cannot prepare a transaction that has used dlock\n"
         "DETAIL:  A prepared transaction would keep a lease's protection across restarts, and its COMMIT PREPARED cannot be made to wait for synchronous standbys.\n"
         "HINT:  Commit the transaction with COMMIT, or prepare only transactions that call no dlock function.\n"
         "SELECT count(*) AS prepared",
         "PREPARE TRANSACTION 'dlock_regress';\n"
         "ERROR:  cannot PREPARE a transaction that has operated on temporary objects\n"
         "SELECT count(*) AS prepared"),
        ("PREPARE TRANSACTION 'dlock_regress';\n"
         "ERROR:  cannot prepare a transaction that has used dlock\n"
         "DETAIL:  A prepared transaction would keep a lease's protection across restarts, and its COMMIT PREPARED cannot be made to wait for synchronous standbys.\n"
         "HINT:  Commit the transaction with COMMIT, or prepare only transactions that call no dlock function.\n"
         "SELECT held FROM",
         "PREPARE TRANSACTION 'dlock_regress';\n"
         "ERROR:  cannot PREPARE a transaction that has operated on temporary objects\n"
         "SELECT held FROM"),
        # In a parallel worker PostgreSQL refuses the core's first write
        # (25000 all the same on 18; 14 and 15 raise XX000: PARALLEL_14).
        ("ERROR:  cannot call dlock functions during a parallel operation\n"
         "DETAIL:  A lock taken by a parallel worker is not held by the leader's transaction, so it would protect nothing.\n"
         "HINT:  Mark functions that call dlock functions PARALLEL UNSAFE.\n"
         "\\echo :LAST_ERROR_SQLSTATE\n"
         "25000\n",
         "ERROR:  cannot assign transaction IDs during a parallel operation\n"
         "\\echo :LAST_ERROR_SQLSTATE\n"
         "25000\n"),
        # A partition move that leaves the token alone: its INSERT half
        # writes the token of the writer its UPDATE checked (the declared
        # one), where the C edition keeps the row's older token; the row
        # then carries t3, so the next move, which writes t3 again, leaves
        # the token unchanged and needs a declaration.
        ("SELECT tableoid::regclass, day, token = :t2 AS old_token_kept FROM ev;\n"
         " tableoid | day | old_token_kept \n"
         "----------+-----+----------------\n"
         " ev_a     |   2 | t\n"
         "(1 row)\n"
         "\n"
         "-- A move that writes the writer's new token needs no declaration.\n"
         "UPDATE ev SET day = 13, token = :t3;\n"
         "SELECT tableoid::regclass, day, token = :t3 AS new_token FROM ev;\n"
         " tableoid | day | new_token \n"
         "----------+-----+-----------\n"
         " ev_b     |  13 | t\n",
         "SELECT tableoid::regclass, day, token = :t2 AS old_token_kept FROM ev;\n"
         " tableoid | day | old_token_kept \n"
         "----------+-----+----------------\n"
         " ev_a     |   2 | f\n"
         "(1 row)\n"
         "\n"
         "-- A move that writes the writer's new token needs no declaration.\n"
         "UPDATE ev SET day = 13, token = :t3;\n"
         "ERROR:  write to relation \"ev_a\" has no fencing token for lock \"job\"\n"
         "DETAIL:  The UPDATE leaves column \"token\" unchanged, and this transaction has declared no token for the lock.\n"
         "HINT:  Call dlock_assert(lock, token) earlier in the transaction to declare the token it writes with.\n"
         "SELECT tableoid::regclass, day, token = :t3 AS new_token FROM ev;\n"
         " tableoid | day | new_token \n"
         "----------+-----+-----------\n"
         " ev_a     |   2 | t\n"),
        # The same under a trigger created the 1.0 way.
        ("SELECT tableoid::regclass, day, token = :t3 AS old_token_kept FROM ev10;\n"
         " tableoid | day | old_token_kept \n"
         "----------+-----+----------------\n"
         " ev10_b   |  11 | t\n",
         "SELECT tableoid::regclass, day, token = :t3 AS old_token_kept FROM ev10;\n"
         " tableoid | day | old_token_kept \n"
         "----------+-----+----------------\n"
         " ev10_b   |  11 | f\n"),
    ],
    "fence_roles": [
        # Delegation: a dlock_assert inside a SECURITY DEFINER function
        # owned by the holder vouches as the session's role, which is not
        # the holder's.
        ("SELECT shop_write(:s1);\n"
         " shop_write \n"
         "------------\n"
         " \n"
         "(1 row)\n"
         "\n"
         "UPDATE lines SET v = v + 100;\n"
         "COMMIT;\n"
         "SELECT id, v FROM lines ORDER BY id;\n"
         " id |  v  \n"
         "----+-----\n"
         " 20 | 111\n"
         " 30 | 111\n",
         "SELECT shop_write(:s1);\n"
         "ERROR:  permission denied to check lock \"shop\"\n"
         "DETAIL:  The lease is held by role \"regress_dlock_app\"; only that role and its members may vouch for its token.\n"
         "UPDATE lines SET v = v + 100;\n"
         "ERROR:  current transaction is aborted, commands ignored until end of transaction block\n"
         "COMMIT;\n"
         "SELECT id, v FROM lines ORDER BY id;\n"
         " id | v \n"
         "----+---\n"
         " 20 | 1\n"
         " 30 | 1\n"),
        # A token written by a referential action: refused as another
        # role's (42501: the session's role updated the referenced table)
        # where the C edition refuses it as not declared (LK001).  The
        # check lock is not taken either way.
        ("UPDATE pin_ref SET token = :p2 WHERE token = :p1;\n"
         "ERROR:  LK001\n"
         "SELECT count(*) AS check_locks",
         "UPDATE pin_ref SET token = :p2 WHERE token = :p1;\n"
         "ERROR:  42501\n"
         "SELECT count(*) AS check_locks"),
        ("ROLLBACK;\n"
         "UPDATE pin_ref SET token = :p2 WHERE token = :p1;\n"
         "ERROR:  LK001\n",
         "ROLLBACK;\n"
         "UPDATE pin_ref SET token = :p2 WHERE token = :p1;\n"
         "ERROR:  42501\n"),
    ],
}

# PostgreSQL 14 and 15 (Debian's 15.20 included) refuse an XID in a parallel
# worker with an internal error (elog, XX000), 18 with 25000 (16 and 17 are
# not tested here): the SQL edition has no way to refuse a parallel
# operation before the core's first write.
PARALLEL_14 = ("ERROR:  cannot assign transaction IDs during a parallel operation\n"
               "\\echo :LAST_ERROR_SQLSTATE\n"
               "25000\n",
               "ERROR:  cannot assign XIDs during a parallel operation\n"
               "\\echo :LAST_ERROR_SQLSTATE\n"
               "XX000\n")


def expected(name, major):
    """The replacements for test name on PostgreSQL major."""
    rules = list(EXPECTED.get(name, []))
    if name == "fence_declare" and major < 18:
        rules.append(PARALLEL_14)
    return rules


# Isolation specs, per spec: (C edition's text, SQL edition's text).
ISOLATION_EXPECTED = {
    "fence_partitions": [
        # The holder's move that leaves the token alone (order E, the one
        # that commits): the moved row gets the token of the writer the
        # UPDATE checked, h's declared one, where the C edition keeps h0's
        # (fence_declare above).
        ("-------+-+-----\n"
         "ev ev_b|1|h0   \n",
         "-------+-+-----\n"
         "ev ev_b|1|h    \n"),
    ],
}

# Isolation specs: a check or a fenced write made while another session's
# hand-over of the expired lease is still uncommitted (n_begin; n_acquire;
# ... n_commit) waits for the hand-over to end in both editions (the SQL
# edition's check of an expired lease waits for a transaction still
# changing the lease row, as the C edition's waits for the name's state
# lock).  A dlock_assert answers at once in the SQL edition: it takes the
# check protection with FOR SHARE SKIP LOCKED and, the row being locked by
# the hand-over, answers on the committed state (LK001), where the C
# edition waits for the hand-over to end.  The answer is the same: the
# lease had expired.  So such a step, which the C edition's expected output
# shows waiting until n_commit, completes before n_commit.
ISOLATION_WAIT_RELEASED_BY = "n_commit"


def isolation_expected(text):
    """The C edition's expected isolation output, with the dlock_assert
    steps that wait for ISOLATION_WAIT_RELEASED_BY completing at once."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if (line.endswith(" <waiting ...>") and line.startswith("step ")
                and "dlock_assert(" in line
                and i + 2 < len(lines)
                and lines[i + 1] == "step %s: COMMIT;" % ISOLATION_WAIT_RELEASED_BY):
            name = line.split(":", 1)[0]
            if lines[i + 2] == name + ": <... completed>":
                j = i + 3
                while j < len(lines) and not lines[j].startswith("step ") \
                        and not lines[j].startswith("starting permutation"):
                    j += 1
                out.append(line[:-len(" <waiting ...>")])
                out += lines[i + 3:j]
                out.append(lines[i + 1])
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)
