# Copyright (c) 2026, the dlock developers
"""test/scripts/owner_renewal.py: other roles never make an owner renewal
busy (issue 24 item 4).

The role dlock_or_leader holds the lease "leader" (owner 'me', a ttl of a
minute) and renews it in a loop with dlock_acquire('leader', ttl, owner =>
'me'), as a leader election does.  Meanwhile the role dlock_or_intruder,
which has EXECUTE on everything and no rights on the lease, floods one call
after the other from two sessions, each for DLOCK_OR_SECONDS (default 0.6)
seconds: release, renew, check, assert, remaining, acquire (wait 0 and a
wait, with and without the owner's name) and a fenced INSERT, each with a
wrong token and with the holder's current token.

What it checks (one TAP line per flooded call): every owner renewal during
the flood returned the lease's token, never NULL (1.1 answered NULL to
about half of them while a release by another role held the name's state
lock), and the flood itself ran (its calls answered false, NULL or 42501).

Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the maintenance database);
DLOCK_OR_DB (default dlock_owner_renewal, dropped and recreated).
"""

import os
import sys
import threading
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import Tap  # noqa: E402

DB = os.environ.get("DLOCK_OR_DB", "dlock_owner_renewal")
SECONDS = float(os.environ.get("DLOCK_OR_SECONDS", "0.6"))
LEADER = "dlock_or_leader"
INTRUDER = "dlock_or_intruder"
FLOODERS = 2

# Each flooded call, with %(tok)s for a token: the holder's or a wrong one.
CALLS = [
    ("release, wrong token", "SELECT dlock_release('leader', 1)"),
    ("release, current token", "SELECT dlock_release('leader', %(tok)s)"),
    ("renew, wrong token", "SELECT dlock_renew('leader', 1, '1 min')"),
    ("renew, current token", "SELECT dlock_renew('leader', %(tok)s, '1 min')"),
    ("check, wrong token", "SELECT dlock_check('leader', 1)"),
    ("check, current token", "SELECT dlock_check('leader', %(tok)s)"),
    ("assert, wrong token", "SELECT dlock_assert('leader', 1)"),
    ("assert, current token", "SELECT dlock_assert('leader', %(tok)s)"),
    ("remaining, wrong token", "SELECT dlock_remaining('leader', 1)"),
    ("remaining, current token", "SELECT dlock_remaining('leader', %(tok)s)"),
    ("acquire, wait 0", "SELECT dlock_acquire('leader', '1 min')"),
    ("acquire, wait 0, the owner's name",
     "SELECT dlock_acquire('leader', '1 min', owner => 'me')"),
    ("acquire, wait 50 ms", "SELECT dlock_acquire('leader', '1 min', '50 ms')"),
    ("fenced write, wrong token", "INSERT INTO fenced VALUES (1)"),
    ("fenced write, current token", "INSERT INTO fenced VALUES (%(tok)s)"),
]


def connect(role, app):
    c = psycopg.connect(dbname=DB, autocommit=True, application_name=app)
    c.execute(f'SET ROLE "{role}"')
    return c


def setup():
    with psycopg.connect(autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}"')
        admin.execute(f'CREATE DATABASE "{DB}"')
        for role in (LEADER, INTRUDER):
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')
            admin.execute(f'CREATE ROLE "{role}"')
    with psycopg.connect(dbname=DB, autocommit=True) as c:
        c.execute("CREATE EXTENSION dlock")
        c.execute("CREATE TABLE fenced (token bigint)")
        c.execute("CREATE TRIGGER fenced_fence BEFORE INSERT OR UPDATE OR DELETE ON fenced"
                  " FOR EACH ROW EXECUTE FUNCTION dlock_fence('leader', 'token')")
        c.execute(f'GRANT INSERT ON fenced TO "{INTRUDER}"')


def teardown():
    with psycopg.connect(autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}"')
        for role in (LEADER, INTRUDER):
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')


class Flooder(threading.Thread):
    """Run one call as the intruder in a loop until stop is set."""

    def __init__(self, sql, tok, stop):
        super().__init__(daemon=True)
        self.sql = sql
        self.tok = tok
        self.stop = stop
        self.calls = 0
        self.unexpected = []

    def run(self):
        with connect(INTRUDER, "or-flood") as c:
            while not self.stop.is_set():
                try:
                    c.execute(self.sql, {"tok": self.tok}).fetchone()
                except psycopg.Error as e:
                    # 42501 (another role's lease) and LK001 (a wrong token
                    # asserted) are the answers expected here.
                    if e.sqlstate not in ("42501", "LK001"):
                        self.unexpected.append(f"{e.sqlstate}: {e}")
                self.calls += 1


def flood(tap, owner, tok, desc, sql):
    stop = threading.Event()
    flooders = [Flooder(sql, tok, stop) for _ in range(FLOODERS)]
    for f in flooders:
        f.start()
    renewals = nulls = 0
    others = []
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        got = owner.execute(
            "SELECT dlock_acquire('leader', '1 min', owner => 'me')").fetchone()[0]
        renewals += 1
        if got is None:
            nulls += 1
        elif got != tok:
            others.append(got)
    stop.set()
    for f in flooders:
        f.join(30)
    problems = []
    if nulls:
        problems.append(f"{nulls} of {renewals} owner renewals returned NULL")
    if others:
        problems.append(f"owner renewals returned other tokens: {others[:3]}")
    calls = sum(f.calls for f in flooders)
    if calls == 0 or renewals == 0:
        problems.append(f"the flood did not run: {calls} calls, {renewals} renewals")
    for f in flooders:
        problems.extend(f.unexpected[:3])
    tap.check(f"{desc} by another role: no owner renewal answers NULL",
              problems, notes=[f"{renewals} renewals against {calls} calls"])


def main():
    setup()
    tap = Tap()
    print(f"1..{len(CALLS)}")
    try:
        with connect(LEADER, "or-leader") as owner:
            tok = owner.execute(
                "SELECT dlock_acquire('leader', '1 min', owner => 'me')").fetchone()[0]
            for desc, sql in CALLS:
                flood(tap, owner, tok, desc, sql)
    finally:
        teardown()
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
