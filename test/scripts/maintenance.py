# Copyright (c) 2026, the dlock developers
"""test/scripts/maintenance.py: maintenance and DDL under load (issue 13).

Four clients acquire, check, renew and release leases on 16 names while a
fifth session runs VACUUM FULL, CLUSTER, REINDEX and REINDEX CONCURRENTLY of
the lease table in a loop, for DLOCK_MAINT_SECONDS (default 12) seconds.
Then the same clients run under a TRUNCATE loop, and an acquire waits while
DROP EXTENSION removes dlock under it.

What it checks (one TAP line each):

 1  the maintenance loop ran VACUUM FULL, CLUSTER and REINDEX at least 3
    times each while the clients worked, and the clients made progress
 2  no client got an error (1.0: 23505, "tuple concurrently deleted",
    "attempted to delete invisible tuple")
 3  one row per name (read with a sequential scan, not the index)
 4  no lost lease: every lease a client holds at the end (a ttl of a
    minute, never released) is still held with its token
 5  tokens only rise: every new token a client saw for a name is above the
    one before it
 6  TRUNCATE under load: no client error other than a lease that vanished
    (release or renew false), and tokens after a TRUNCATE are above every
    token before it
 7  DROP EXTENSION while an acquire waits: the waiter ends with SQLSTATE
    55000 (never XX000), and its backend goes on serving queries

Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the maintenance database);
DLOCK_MAINT_DB (default dlock_maint, dropped and recreated).
"""

import os
import random
import sys
import threading
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import Tap  # noqa: E402

DB = os.environ.get("DLOCK_MAINT_DB", "dlock_maint")
SECONDS = float(os.environ.get("DLOCK_MAINT_SECONDS", "12"))
CLIENTS = 4
NAMES = [f"maint/{i}" for i in range(16)]


def connect(app):
    return psycopg.connect(dbname=DB, autocommit=True, application_name=app)


def sqlstate(e):
    return getattr(e, "sqlstate", None) or "?????"


class Client(threading.Thread):
    """Acquire, check, renew, release in a loop; keep a few leases for good."""

    def __init__(self, cid, stop, allow_vanish=False):
        super().__init__(daemon=True)
        self.cid = cid
        self.stop = stop
        self.allow_vanish = allow_vanish
        self.errors = []
        self.kept = {}          # name -> token, held for a minute, never released
        self.last = {}          # name -> last new token seen
        self.order = []         # (name, previous, new) where new <= previous
        self.ops = 0
        self.rng = random.Random(cid)

    def run(self):
        try:
            conn = connect(f"maint-client-{self.cid}")
        except psycopg.Error as e:
            self.errors.append(f"connect: {e}")
            return
        while not self.stop.is_set():
            name = self.rng.choice(NAMES)
            try:
                self.round(conn, name)
                self.ops += 1
            except psycopg.Error as e:
                self.errors.append(f"{sqlstate(e)}: {str(e).strip()}")
                if conn.broken:
                    return
        conn.close()

    def round(self, conn, name):
        if name in self.kept:
            ok = conn.execute("SELECT dlock_check(%s, %s)", (name, self.kept[name])).fetchone()[0]
            if not ok and not self.allow_vanish:
                self.errors.append(f"kept lease {name} token {self.kept[name]} lost")
            return
        keep = self.rng.random() < 0.02
        ttl = "1 min" if keep else "2 s"
        in_xact = self.rng.random() < 0.5
        if in_xact:
            with conn.transaction():
                tok = self.acquire(conn, name, ttl)
                if tok is not None:
                    conn.execute("SELECT dlock_check(%s, %s)", (name, tok))
                    conn.execute("SELECT dlock_renew(%s, %s, %s)", (name, tok, ttl))
        else:
            tok = self.acquire(conn, name, ttl)
            if tok is not None:
                conn.execute("SELECT dlock_check(%s, %s)", (name, tok))
                conn.execute("SELECT dlock_renew(%s, %s, %s)", (name, tok, ttl))
        if tok is None:
            return
        if keep:
            self.kept[name] = tok
            return
        released = conn.execute("SELECT dlock_release(%s, %s)", (name, tok)).fetchone()[0]
        if not released and not self.allow_vanish:
            self.errors.append(f"release of {name} token {tok} returned false")

    def acquire(self, conn, name, ttl):
        tok = conn.execute("SELECT dlock_acquire(%s, %s)", (name, ttl)).fetchone()[0]
        if tok is not None:
            prev = self.last.get(name)
            if prev is not None and tok <= prev:
                self.order.append((name, prev, tok))
            self.last[name] = tok
        return tok


def run_clients(seconds, maint_sql, allow_vanish=False):
    stop = threading.Event()
    clients = [Client(i, stop, allow_vanish) for i in range(CLIENTS)]
    for c in clients:
        c.start()
    counts = {s: 0 for s in maint_sql}
    maint_errors = []
    deadline = time.monotonic() + seconds
    with connect("maint-loop") as m:
        while time.monotonic() < deadline:
            for s in maint_sql:
                try:
                    m.execute(s)
                    counts[s] += 1
                except psycopg.Error as e:
                    maint_errors.append(f"{s}: {sqlstate(e)} {str(e).strip()}")
                time.sleep(0.05)
    stop.set()
    for c in clients:
        c.join(30)
    return clients, counts, maint_errors


def main():
    tap = Tap()
    print("1..7")
    with psycopg.connect(autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}"')
        admin.execute(f'CREATE DATABASE "{DB}"')
    with connect("maint-setup") as c:
        c.execute("CREATE EXTENSION dlock")

    maint = ["VACUUM FULL dlock_lease",
             "CLUSTER dlock_lease USING dlock_lease_pkey",
             "REINDEX TABLE dlock_lease",
             "REINDEX TABLE CONCURRENTLY dlock_lease"]
    clients, counts, maint_errors = run_clients(SECONDS, maint)
    ops = sum(c.ops for c in clients)
    problems = [f"{s}: {n} runs" for s, n in counts.items() if n < 3] + maint_errors
    if ops < 100:
        problems.append(f"only {ops} client rounds")
    tap.check(f"{SECONDS:g} s, {CLIENTS} clients, {ops} rounds, maintenance "
              + ", ".join(f"{n}x {s.split(' dlock')[0]}" for s, n in counts.items()), problems)
    tap.check("no client error under VACUUM FULL, CLUSTER and REINDEX",
              [f"client {c.cid}: {e}" for c in clients for e in c.errors])

    with connect("maint-verify") as v:
        v.execute("SET enable_indexscan = off")
        v.execute("SET enable_bitmapscan = off")
        dups = v.execute("SELECT name, count(*) FROM dlock_lease GROUP BY name "
                         "HAVING count(*) > 1").fetchall()
        tap.check("one row per name (sequential scan)", [f"{n}: {k} rows" for n, k in dups])
        lost = []
        for c in clients:
            for name, tok in c.kept.items():
                ok = v.execute("SELECT dlock_check(%s, %s)", (name, tok)).fetchone()[0]
                if not ok:
                    lost.append(f"{name} token {tok}")
        tap.check(f"no lost lease ({sum(len(c.kept) for c in clients)} kept leases still held)", lost)
        tap.check("tokens only rise per name",
                  [f"{n}: {p} then {t}" for c in clients for n, p, t in c.order])
        before = v.execute("SELECT last_value FROM dlock_token_seq").fetchone()[0]

    # TRUNCATE under load: leases vanish, but nothing breaks and tokens rise.
    clients, counts, maint_errors = run_clients(4, ["TRUNCATE dlock_lease"], allow_vanish=True)
    problems = maint_errors + [f"client {c.cid}: {e}" for c in clients for e in c.errors]
    with connect("maint-verify") as v:
        low = v.execute("SELECT min(token) FROM dlock_lease").fetchone()[0]
        tok = v.execute("SELECT dlock_acquire('after truncate', '1 min')").fetchone()[0]
    seen = [t for c in clients for t in c.last.values()]
    if counts["TRUNCATE dlock_lease"] < 3:
        problems.append(f"only {counts['TRUNCATE dlock_lease']} TRUNCATEs")
    if tok is None or tok <= before or (seen and tok <= max(seen)):
        problems.append(f"token after TRUNCATE {tok} not above {before} / {max(seen, default=0)}")
    if low is not None and low <= 0:
        problems.append(f"token {low} in the table")
    tap.check(f"TRUNCATE under load ({counts['TRUNCATE dlock_lease']} runs): no error, tokens rise",
              problems)

    # DROP EXTENSION while an acquire waits.
    problems = []
    holder = connect("maint-holder")
    holder.execute("SELECT dlock_acquire('dropped', '1 min')")
    holder.close()
    waiter = connect("maint-waiter")
    result = {}

    def wait():
        try:
            waiter.execute("SELECT dlock_acquire('dropped', '1 min', '20 s')")
            result["state"] = "no error"
        except psycopg.Error as e:
            result["state"] = sqlstate(e)
            result["msg"] = str(e).strip()

    t = threading.Thread(target=wait, daemon=True)
    t.start()
    time.sleep(0.5)
    with connect("maint-dropper") as d:
        d.execute("DROP EXTENSION dlock")
    t.join(25)
    if result.get("state") != "55000":
        problems.append(f"waiter ended with {result}")
    try:
        if waiter.execute("SELECT 1").fetchone()[0] != 1:
            problems.append("the waiter's backend answered wrong")
    except psycopg.Error as e:
        problems.append(f"the waiter's backend is gone: {e}")
    waiter.close()
    tap.check("DROP EXTENSION while an acquire waits: 55000, the backend survives", problems)

    with psycopg.connect(autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{DB}"')
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
