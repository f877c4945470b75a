"""test/scripts/collision.py: two lock names that share an advisory-lock key.

dlock keys every name by hash_any() of its bytes (what SQL hashtext() returns
for text of a deterministic collation) and takes its transaction-level
advisory locks on (4475979, hash).  Two different names can therefore share a
lock key.  This test finds a real colliding pair among generated names and
shows what sharing a key costs: B is only ever held up by a transaction that
is open on A at that moment, for that transaction's length, and never by A's
lease itself.

What it checks (one TAP line each):

 1  pg_locks.objid of a name's lock is hashtext(name) as an unsigned 32-bit
    number (objsubid 2), for a sample of names (ASCII, multibyte, 255 bytes,
    quotes and control characters)
 2  a colliding pair A, B exists among the generated names; both lock the
    same key
 3  an open transaction that acquired A: dlock_acquire(B, wait => 0) returns
    NULL at once (a try-lock, it does not block) while it is open, and a
    token right after it commits
 4  the same, with wait > 0: the acquire of B waits, and gets its lease as
    soon as the transaction on A commits (within a poll or two)
 5  the same open transaction on A: dlock_check, dlock_release and dlock_renew
    of B wait for it (like any lock wait: lock_timeout ends them with
    55P03), and finish right after it commits
 6  a committed, unexpired lease on A (no transaction open) does not hold up
    B at all: acquire, check, assert, renew and release of B all finish at
    once, under lock_timeout = 50 ms
 7  an open transaction that checked A (dlock_check, RowShareLock): check,
    renew and release of B are not held up; an acquire that would hand B to
    a new holder is (NULL with wait = 0, waits with wait > 0) until that
    transaction ends
 8  an open transaction that renewed A: check of B is not held up; renew and
    release of B wait for it; acquire of B returns NULL with wait = 0 until
    it ends
 9  an acquire waiting for A (A held, committed) holds up a waiting acquire
    of a free B by at most a few polls, and a wait = 0 acquire of B not at
    all
10  the two leases stay independent: different tokens, a token of A is no
    token of B, releasing A leaves B held
11  nothing is left in pg_locks afterwards

Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the maintenance database);
DLOCK_COLLISION_DB (default dlock_collision, dropped and recreated),
DLOCK_COLLISION_KEEP=1 keeps it.
"""

import os
import sys
import threading
import time

import psycopg
from psycopg import sql

DB = os.environ.get("DLOCK_COLLISION_DB", "dlock_collision")
KEEP = bool(os.environ.get("DLOCK_COLLISION_KEEP"))

CLASS = 4475979
WAITER_CLASS = 4475980
HOLD_S = 0.4            # how long the transaction on A stays open
PROMPT_S = 0.15         # "at once" / "right after": within this much
LOCK_TIMEOUT = "50ms"


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, desc, problems, notes=()):
        self.n += 1
        if problems:
            self.failed += 1
            print(f"not ok {self.n} - {desc}")
            for p in problems[:10]:
                for line in str(p).splitlines() or [""]:
                    print(f"#   {line}")
        else:
            print(f"ok {self.n} - {desc}")
        for note in notes:
            print(f"#   {note}")


def connect(name):
    return psycopg.connect(dbname=DB, autocommit=True, application_name=name)


def one(conn, query, params=()):
    return conn.execute(query, params).fetchone()[0]


class Bg:
    """Run one statement in a thread; remember its result, error and end time."""

    def __init__(self, conn, query, params=()):
        self.conn, self.query, self.params = conn, query, params
        self.result = self.error = self.ended = None
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        try:
            self.result = self.conn.execute(self.query, self.params).fetchone()[0]
        except psycopg.Error as e:
            self.error = e
        self.ended = time.monotonic()

    def done(self):
        return not self.thread.is_alive()

    def join(self, timeout=10):
        self.thread.join(timeout)
        return not self.thread.is_alive()


def timed(conn, query, params=()):
    """(result or None, SQLSTATE or None, seconds)"""
    t = time.monotonic()
    try:
        r = conn.execute(query, params).fetchone()[0]
        return r, None, time.monotonic() - t
    except psycopg.Error as e:
        return None, e.sqlstate, time.monotonic() - t


def u32(h):
    return h & 0xFFFFFFFF


def free(obs, *names):
    """Make the leases free (the observer is superuser and may release any)."""
    for n in names:
        obs.execute("SELECT dlock_release(name, token) FROM dlock_leases "
                    "WHERE name = %s AND held", (n,))


def find_pair(obs):
    t = time.monotonic()
    top = 300000
    while True:
        row = obs.execute(
            "SELECT array_agg(n ORDER BY n), h FROM ("
            "  SELECT 'collide/' || i AS n, hashtext('collide/' || i) AS h"
            "    FROM generate_series(1, %s) AS i) s"
            " GROUP BY h HAVING count(*) > 1 ORDER BY min(n) LIMIT 1", (top,)).fetchone()
        if row is not None or top >= 2400000:
            return (row[0][0], row[0][1], row[1], top, time.monotonic() - t) \
                if row else (None, None, None, top, time.monotonic() - t)
        top *= 2


def run(tap):
    obs = connect("observer")           # superuser, autocommit: looks, never blocks
    s1 = connect("s1")                  # works on A
    s2 = connect("s2")                  # works on B, under lock_timeout
    s3 = connect("s3")                  # waits in the background
    s2.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")

    def my_keys(conn):
        return conn.execute(
            "SELECT DISTINCT objid::bigint, objsubid FROM pg_locks"
            " WHERE locktype = 'advisory' AND classid = %s AND pid = pg_backend_pid()",
            (CLASS,)).fetchall()

    def keys_of(name):
        s1.execute("BEGIN")
        tok = one(s1, "SELECT dlock_acquire(%s, '10 s')", (name,))
        keys = my_keys(s1)
        s1.execute("ROLLBACK")
        return tok, keys

    # 1. objid is hashtext(name) as uint32.
    problems = []
    samples = ["a", "nightly-report", "payout:1", "\u00e9t\u00e9/\u65e5\u672c/\U0001F512",
               "x" * 255, "\u00e9" * 127 + "x", "it's \"quoted\" %s\t\n\x01", "  spaces  "]
    for name in samples:
        tok, keys = keys_of(name)
        h = one(obs, "SELECT hashtext(%s)", (name,))
        if tok is None:
            problems.append(f"acquire of {name!r} returned NULL")
        elif keys != [(u32(h), 2)]:
            problems.append(f"{name!r}: pg_locks shows {keys}, hashtext gives "
                            f"{h} = {u32(h)} unsigned")
    tap.check(f"pg_locks.objid is hashtext(name) as uint32, objsubid 2, "
              f"for {len(samples)} sample names", problems)

    # 2. A colliding pair.
    A, B, h, top, secs = find_pair(obs)
    if A is None:
        tap.check("a colliding pair of names exists",
                  [f"no two of {top} generated names collide"])
        return
    keys = {n: keys_of(n)[1] for n in (A, B)}
    tap.check("a colliding pair exists and both names lock the same key",
              [] if keys[A] == keys[B] == [(u32(h), 2)] else [f"lock keys: {keys}"],
              [f"A = {A!r}, B = {B!r}: hashtext {h} (objid {u32(h)}), "
               f"found among {top} names in {secs:.2f} s"])
    C = "collide/unrelated"             # a control: its own key

    # 3. An open acquire transaction on A; wait = 0 acquires of B.
    problems, notes = [], []
    free(obs, A, B, C)
    s1.execute("BEGIN")
    one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    opened = time.monotonic()
    nulls, slowest = 0, 0.0
    while time.monotonic() - opened < HOLD_S:
        r, err, secs = timed(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
        slowest = max(slowest, secs)
        if err or r is not None:
            problems.append(f"acquire of B while the transaction on A is open: "
                            f"{'SQLSTATE ' + err if err else 'token ' + str(r)}")
            break
        nulls += 1
        time.sleep(0.02)
    tc, err, _ = timed(s2, "SELECT dlock_acquire(%s, '30 s')", (C,))
    if tc is None:
        problems.append(f"control: acquire of the unrelated {C!r} during it: {err or 'NULL'}")
    s1.execute("COMMIT")
    tb, err, secs = timed(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    if tb is None:
        problems.append(f"acquire of B right after A committed: {err or 'NULL'}")
    if slowest > PROMPT_S:
        problems.append(f"a wait = 0 acquire of B took {slowest * 1000:.0f} ms")
    notes.append(f"{nulls} wait = 0 acquires of B returned NULL while the transaction on A "
                 f"was open (slowest {slowest * 1000:.1f} ms; an unrelated name got a "
                 f"token); the first after its COMMIT got token {tb} in "
                 f"{secs * 1000:.1f} ms")
    tap.check("open acquire transaction on A: wait = 0 acquire of B is NULL at once "
              "while it is open, a token right after COMMIT", problems, notes)

    # 4. The same with wait > 0.
    problems, notes = [], []
    free(obs, A, B)
    s1.execute("BEGIN")
    one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    bg = Bg(s3, "SELECT dlock_acquire(%s, '30 s', wait => '5 s')", (B,))
    time.sleep(HOLD_S)
    if bg.done():
        problems.append(f"the waiting acquire of B finished while the transaction on A "
                        f"was open: {bg.result}, {bg.error}")
    s1.execute("COMMIT")
    committed = time.monotonic()
    bg.join()
    if bg.error or bg.result is None:
        problems.append(f"waiting acquire of B: {bg.error or 'NULL'}")
    else:
        lag = bg.ended - committed
        notes.append(f"the waiting acquire of B got token {bg.result} {lag * 1000:.1f} ms "
                     f"after A's COMMIT returned (it had waited "
                     f"{(bg.ended - bg.started) * 1000:.0f} ms)")
        if lag > PROMPT_S:
            problems.append(f"it took {lag * 1000:.0f} ms after the COMMIT")
    tap.check("open acquire transaction on A: a wait > 0 acquire of B succeeds as soon "
              "as it commits", problems, notes)

    # 5. Check, renew and release of B wait for an open acquire transaction on A.
    problems, notes = [], []
    free(obs, A, B)
    tb = one(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    s1.execute("BEGIN")
    one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    for fn, q in (("check", "SELECT dlock_check(%s, %s)"),
                  ("renew", "SELECT dlock_renew(%s, %s, '30 s')"),
                  ("release", "SELECT dlock_release(%s, %s)")):
        r, err, secs = timed(s2, q, (B, tb))
        if err != "55P03":
            problems.append(f"dlock_{fn}(B) under lock_timeout {LOCK_TIMEOUT} while the "
                            f"transaction on A is open: {err or r}")
    bg = Bg(s3, "SELECT dlock_check(%s, %s)", (B, tb))
    time.sleep(HOLD_S)
    if bg.done():
        problems.append(f"a check of B finished while the transaction on A was open: "
                        f"{bg.result}, {bg.error}")
    s1.execute("COMMIT")
    committed = time.monotonic()
    bg.join()
    if bg.error or bg.result is not True:
        problems.append(f"the waiting check of B: {bg.error or bg.result}")
    elif bg.ended - committed > PROMPT_S:
        problems.append(f"the waiting check of B returned "
                        f"{(bg.ended - committed) * 1000:.0f} ms after the COMMIT")
    for fn, q in (("renew", "SELECT dlock_renew(%s, %s, '30 s')"),
                  ("release", "SELECT dlock_release(%s, %s)")):
        r, err, _ = timed(s2, q, (B, tb))
        if err or r is not True:
            problems.append(f"dlock_{fn}(B) after A committed: {err or r}")
    notes.append(f"under lock_timeout = {LOCK_TIMEOUT} check, renew and release of B "
                 f"failed with 55P03 while the acquire transaction on A was open; a "
                 f"waiting check of B returned true "
                 f"{((bg.ended or committed) - committed) * 1000:.1f} ms after its COMMIT")
    tap.check("open acquire transaction on A: check, renew and release of B wait for "
              "it and go through after its COMMIT", problems, notes)

    # 6. A committed lease on A does not hold up B at all.
    problems, notes = [], []
    free(obs, A, B)
    ta = one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    slowest = 0.0
    tb = None
    for fn, q, want in (
            ("acquire", "SELECT dlock_acquire(%s, '30 s')", "token"),
            ("check", "SELECT dlock_check(%s, %s)", True),
            ("assert", "SELECT dlock_assert(%s, %s)::text", ""),
            ("renew", "SELECT dlock_renew(%s, %s, '30 s')", True),
            ("release", "SELECT dlock_release(%s, %s)", True),
            ("acquire", "SELECT dlock_acquire(%s, '30 s', wait => '1 s')", "token"),
            ("release", "SELECT dlock_release(%s, %s)", True)):
        args = (B,) if fn == "acquire" else (B, tb)
        r, err, secs = timed(s2, q, args)
        slowest = max(slowest, secs)
        if want == "token":
            tb = r
            good = err is None and r is not None
        else:
            good = err is None and r == want
        if not good or secs > PROMPT_S:
            problems.append(f"dlock_{fn}(B) with A held: {err or r} in {secs * 1000:.1f} ms")
    if one(obs, "SELECT dlock_check(%s, %s)", (A, ta)) is not True:
        problems.append("A is no longer held")
    tap.check("a committed lease on A does not hold up acquire, check, assert, renew "
              "or release of B", problems,
              [f"with A held (committed, no transaction open): 7 calls on B under "
               f"lock_timeout = {LOCK_TIMEOUT}, slowest {slowest * 1000:.1f} ms"])

    # 7. An open transaction that checked A.
    problems, notes = [], []
    free(obs, A, B)
    ta = one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    tb = one(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    s1.execute("BEGIN")
    if one(s1, "SELECT dlock_check(%s, %s)", (A, ta)) is not True:
        problems.append("check of A was false")
    for fn, q in (("check", "SELECT dlock_check(%s, %s)"),
                  ("renew", "SELECT dlock_renew(%s, %s, '30 s')"),
                  ("release", "SELECT dlock_release(%s, %s)")):
        r, err, secs = timed(s2, q, (B, tb))
        if err or r is not True or secs > PROMPT_S:
            problems.append(f"dlock_{fn}(B) during an open check of A: {err or r} "
                            f"in {secs * 1000:.1f} ms")
    # B is free now: taking it is a hand-over.
    r, err, secs = timed(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    if err or r is not None:
        problems.append(f"wait = 0 acquire of the free B during an open check of A: "
                        f"{err or r} (expected NULL)")
    bg = Bg(s3, "SELECT dlock_acquire(%s, '30 s', wait => '5 s')", (B,))
    time.sleep(HOLD_S)
    if bg.done():
        problems.append(f"a waiting acquire of B finished during the open check of A: "
                        f"{bg.result}, {bg.error}")
    s1.execute("COMMIT")
    committed = time.monotonic()
    bg.join()
    if bg.error or bg.result is None:
        problems.append(f"the waiting acquire of B: {bg.error or 'NULL'}")
    elif bg.ended - committed > PROMPT_S:
        problems.append(f"the waiting acquire of B got B "
                        f"{(bg.ended - committed) * 1000:.0f} ms after the check ended")
    notes.append(f"during an open transaction that checked A: check, renew and release "
                 f"of B went through at once; a wait = 0 acquire of the free B returned "
                 f"NULL; a waiting one got B "
                 f"{((bg.ended or committed) - committed) * 1000:.1f} ms after that "
                 f"transaction ended")
    tap.check("open check transaction on A: check, renew, release of B go through; "
              "a hand-over of B waits for it to end", problems, notes)

    # 8. An open transaction that renewed A.
    problems, notes = [], []
    free(obs, A, B)
    ta = one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    tb = one(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    s1.execute("BEGIN")
    if one(s1, "SELECT dlock_renew(%s, %s, '30 s')", (A, ta)) is not True:
        problems.append("renew of A was false")
    r, err, secs = timed(s2, "SELECT dlock_check(%s, %s)", (B, tb))
    if err or r is not True or secs > PROMPT_S:
        problems.append(f"dlock_check(B) during an open renew of A: {err or r}")
    for fn, q in (("renew", "SELECT dlock_renew(%s, %s, '30 s')"),
                  ("release", "SELECT dlock_release(%s, %s)")):
        r, err, _ = timed(s2, q, (B, tb))
        if err != "55P03":
            problems.append(f"dlock_{fn}(B) during an open renew of A: {err or r} "
                            f"(expected 55P03 under lock_timeout)")
    bg = Bg(s3, "SELECT dlock_release(%s, %s)", (B, tb))
    time.sleep(HOLD_S)
    if bg.done():
        problems.append(f"a release of B finished during the open renew of A: "
                        f"{bg.result}, {bg.error}")
    s1.execute("COMMIT")
    committed = time.monotonic()
    bg.join()
    if bg.error or bg.result is not True:
        problems.append(f"the waiting release of B: {bg.error or bg.result}")
    # B is free now; an open renew of A makes a wait = 0 acquire of B return NULL.
    s1.execute("BEGIN")
    one(s1, "SELECT dlock_renew(%s, %s, '30 s')", (A, ta))
    r, err, _ = timed(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    s1.execute("COMMIT")
    if err or r is not None:
        problems.append(f"wait = 0 acquire of the free B during an open renew of A: "
                        f"{err or r} (expected NULL)")
    r, err, _ = timed(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    if err or r is None:
        problems.append(f"acquire of B after the renew of A committed: {err or 'NULL'}")
    notes.append(f"during an open transaction that renewed A: check of B went through; "
                 f"renew and release of B waited (55P03 under lock_timeout), a waiting "
                 f"release returned true "
                 f"{((bg.ended or committed) - committed) * 1000:.1f} ms after its "
                 f"COMMIT; a wait = 0 acquire of the free B returned NULL")
    tap.check("open renew transaction on A: check of B goes through; renew, release "
              "of B wait for it; acquire of B is NULL until it ends", problems, notes)

    # 9. An acquire waiting for A.
    problems = []
    free(obs, A, B)
    ta = one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    waiter = Bg(s3, "SELECT dlock_acquire(%s, '30 s', wait => '3 s')", (A,))
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if one(obs, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
               "AND classid = %s AND objid = %s::bigint::oid AND granted",
               (WAITER_CLASS, u32(h))) > 0:
            break
        time.sleep(0.01)
    else:
        problems.append("the acquire of A never showed up as a waiter")
    r, err, secs0 = timed(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    if err or r is None or secs0 > PROMPT_S:
        problems.append(f"wait = 0 acquire of B while someone waits for A: {err or r}")
    else:
        one(s2, "SELECT dlock_release(%s, %s)", (B, r))
    r, err, secs1 = timed(s2, "SELECT dlock_acquire(%s, '30 s', wait => '2 s')", (B,))
    if err or r is None or secs1 > PROMPT_S:
        problems.append(f"wait > 0 acquire of the free B while someone waits for A: "
                        f"{err or r} in {secs1 * 1000:.1f} ms")
    if waiter.done():
        problems.append(f"the waiter on A finished early: {waiter.result}, {waiter.error}")
    one(s1, "SELECT dlock_release(%s, %s)", (A, ta))
    released = time.monotonic()
    waiter.join()
    if waiter.error or waiter.result is None:
        problems.append(f"the waiter on A: {waiter.error or 'NULL'}")
    tap.check("an acquire waiting for A holds up acquires of B by a poll at most",
              problems,
              [f"while an acquire waited for A: a wait = 0 acquire of B took "
               f"{secs0 * 1000:.1f} ms, a wait > 0 acquire of the free B "
               f"{secs1 * 1000:.1f} ms (it sees the shared waiter key, queues, and takes "
               f"B at its next poll); the waiter got A "
               f"{((waiter.ended or released) - released) * 1000:.1f} ms after A's "
               f"release"])

    # 10. Independent leases.
    problems = []
    free(obs, A, B)
    ta = one(s1, "SELECT dlock_acquire(%s, '30 s')", (A,))
    tb = one(s2, "SELECT dlock_acquire(%s, '30 s')", (B,))
    if ta is None or tb is None or ta == tb:
        problems.append(f"tokens {ta} and {tb}")
    for n, t, want in ((B, ta, False), (A, tb, False), (A, ta, True), (B, tb, True)):
        if one(obs, "SELECT dlock_check(%s, %s)", (n, t)) is not want:
            problems.append(f"dlock_check({n!r}, {t}) is not {want}")
    if one(s1, "SELECT dlock_release(%s, %s)", (B, ta)) is not False:
        problems.append("A's token released B")
    if one(s1, "SELECT dlock_release(%s, %s)", (A, ta)) is not True:
        problems.append("release of A failed")
    held = dict(obs.execute("SELECT name, held FROM dlock_leases WHERE name IN (%s, %s)",
                            (A, B)).fetchall())
    if held != {A: False, B: True}:
        problems.append(f"after releasing A: {held}")
    if one(s2, "SELECT dlock_acquire(%s, '30 s')", (B,)) is not None:
        problems.append("B was free after A was released")
    one(s2, "SELECT dlock_release(%s, %s)", (B, tb))
    tap.check("the leases of A and B stay independent", problems)

    # 11. Nothing left behind.
    for c in (s1, s2, s3):
        c.close()
    rows = obs.execute("SELECT pid, classid, objid, mode FROM pg_locks "
                       "WHERE locktype = 'advisory' AND classid IN (%s, %s)",
                       (CLASS, WAITER_CLASS)).fetchall()
    tap.check("no dlock advisory locks left in pg_locks", [f"left: {r}" for r in rows])
    obs.close()


def main():
    t0 = time.monotonic()
    tap = Tap()
    print("1..11")
    try:
        with psycopg.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                         .format(sql.Identifier(DB)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
        with connect("setup") as conn:
            conn.execute("CREATE EXTENSION dlock")
        try:
            run(tap)
        except psycopg.Error as e:
            tap.check(f"unexpected error: SQLSTATE {e.sqlstate}: {str(e).strip()}", ["x"])
        for _ in range(tap.n, 11):
            tap.check("not reached", ["an earlier step failed"])
    finally:
        if not KEEP:
            try:
                with psycopg.connect(autocommit=True) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                                 .format(sql.Identifier(DB)))
            except psycopg.Error as e:
                print(f"# could not drop database {DB}: {str(e).strip()}")
    print(f"# {time.monotonic() - t0:.1f} s; "
          f"{'all passed' if not tap.failed else f'{tap.failed} failed'}")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main())
