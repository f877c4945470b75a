# Copyright (c) 2026, the dlock developers
"""test/scripts/collision.py: lock keys of 64 bits (issue 13, finding 1).

1.0 locked a name on (4475979, hashtext(name)): 32 bits, so two names shared
a key by the birthday bound at tens of thousands of names, and an open
transaction on one held up the other.  From 1.1 on, a name's key has 64
bits, split over classid and objid, with objsubid 17484 (the waiters' key:
17485), which no SQL function reaches; from 1.2 on it is SipHash-2-4 of the
name with the database's secret (src/locktag.c; lock_keys.sh tests the
secret itself).

What it checks (one TAP line each):

 1  pg_locks shows a name's lock as classid/objid = the high/low 32 bits of
    SipHash-2-4 of the name with the secret in dlock_lock_key, objsubid
    17484, for a sample of names (ASCII, multibyte, 255 bytes, quotes and
    control characters)
 2  among 20,000 generated names, no two share a 64-bit key (computed here
    with the secret), while among 300,000 pairs sharing the 32-bit hashtext
    exist
 3  two names A, B with the same 32-bit hashtext (1.0's key) are
    independent: while a transaction that acquired A stays open,
    acquire, check, renew and release of B all finish at once under
    lock_timeout = 50 ms, also an acquire of B with a wait
 4  nothing is left in pg_locks afterwards

Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the maintenance database);
DLOCK_COLLISION_DB (default dlock_collision, dropped and recreated).
"""

import os
import sys
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import Tap, one, timed  # noqa: E402
from siphash24 import siphash24  # noqa: E402

DB = os.environ.get("DLOCK_COLLISION_DB", "dlock_collision")
PROMPT_S = 0.15
NAMES = 300000
KEYED_NAMES = 20000


def connect(name):
    return psycopg.connect(dbname=DB, autocommit=True, application_name=name)


def run(tap):
    obs = connect("observer")
    s1 = connect("s1")
    s2 = connect("s2")
    s2.execute("SET lock_timeout = '50ms'")

    def keys_of(name):
        s1.execute("BEGIN")
        tok = one(s1, "SELECT dlock_acquire(%s, '10 s')", (name,))
        keys = s1.execute(
            "SELECT DISTINCT classid::bigint, objid::bigint, objsubid FROM pg_locks"
            " WHERE locktype = 'advisory' AND pid = pg_backend_pid()").fetchall()
        s1.execute("ROLLBACK")
        return tok, keys

    # 1. The key is SipHash-2-4 in classid/objid, objsubid 17484.
    problems = []
    secret = bytes(one(obs, "SELECT secret FROM dlock_lock_key"))
    samples = ["a", "nightly-report", "payout:1", "\u00e9t\u00e9/\u65e5\u672c/\U0001F512",
               "x" * 255, "\u00e9" * 127 + "x", "it's \"quoted\" %s\t\n\x01", "  spaces  "]
    for name in samples:
        tok, keys = keys_of(name)
        h = siphash24(secret, name.encode())
        want = [(h >> 32, h & 0xFFFFFFFF, 17484)]
        if tok is None:
            problems.append(f"acquire of {name!r} returned NULL")
        elif keys != want:
            problems.append(f"{name!r}: pg_locks shows {keys}, want {want}")
    tap.check(f"the lock key is SipHash-2-4 of the name with the secret, objsubid 17484, "
              f"for {len(samples)} sample names", problems)

    # 2. No 64-bit collision among the keyed names; 32-bit ones exist.
    t = time.monotonic()
    keys = [siphash24(secret, b"collide/%d" % i) for i in range(1, KEYED_NAMES + 1)]
    c64 = len(keys) - len(set(keys))
    pair = obs.execute(
        "SELECT array_agg(n ORDER BY n) FROM ("
        "  SELECT 'collide/' || i AS n, hashtext('collide/' || i) AS h"
        "    FROM generate_series(1, %s) AS i) s"
        " GROUP BY h HAVING count(*) > 1 ORDER BY min(n) LIMIT 1", (NAMES,)).fetchone()
    secs = time.monotonic() - t
    problems = []
    if c64:
        problems.append(f"{c64} 64-bit keys shared")
    if pair is None:
        problems.append("no 32-bit hashtext pair among them (the test needs one)")
    tap.check(f"no two of {KEYED_NAMES} names share a 64-bit key", problems,
              [f"{secs:.1f} s; 1.0's 32-bit key is shared by {pair[0][:2] if pair else None}"])
    if pair is None:
        return
    A, B = pair[0][0], pair[0][1]

    # 3. A and B, which shared 1.0's key, are independent.
    problems = []
    btok = one(s2, "SELECT dlock_acquire(%s, '1 min')", (B,))
    s1.execute("BEGIN")
    atok = one(s1, "SELECT dlock_acquire(%s, '1 min')", (A,))
    one(s1, "SELECT dlock_check(%s, %s)", (A, atok))
    steps = [
        ("check B", "SELECT dlock_check(%s, %s)", (B, btok), True),
        ("renew B", "SELECT dlock_renew(%s, %s, '1 min')", (B, btok), True),
        ("release B", "SELECT dlock_release(%s, %s)", (B, btok), True),
        ("acquire B", "SELECT dlock_acquire(%s, '1 min') IS NOT NULL", (B,), True),
    ]
    for what, q, params, want in steps:
        r, err, secs = timed(s2, q, params)
        if err or r != want or secs > PROMPT_S:
            problems.append(f"{what}: {r} {err} after {secs:.3f} s")
    r, err, secs = timed(s2, "SELECT dlock_acquire(%s, '1 min', '2 s') IS NOT NULL",
                         (B + "/free",))
    if err or r is not True or secs > PROMPT_S:
        problems.append(f"waiting acquire of another name: {r} {err} after {secs:.3f} s")
    s1.execute("COMMIT")
    tap.check(f"{A!r} and {B!r} (one 32-bit hashtext) do not hold each other up",
              problems)

    # 4. Nothing left.
    left = one(obs, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                    " AND objsubid IN (17484, 17485, 17486, 17487)")
    tap.check("no dlock lock left in pg_locks", [f"{left} left"] if left else [])


def main():
    tap = Tap()
    print("1..4")
    with psycopg.connect(autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}"')
        admin.execute(f'CREATE DATABASE "{DB}"')
    with connect("setup") as c:
        c.execute("CREATE EXTENSION dlock")
    try:
        run(tap)
    finally:
        with psycopg.connect(autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
    while tap.n < 4:
        tap.check("not reached", ["an earlier step failed"])
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
