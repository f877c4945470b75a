# Copyright (c) 2026, the dlock developers
"""test/scripts/lock_keys.py: lock keys keyed with a secret (issue 24, item 3).

Up to 1.1 a name's lock key was hash_any_extended(name, 0): anyone could
solve for a name whose key is a victim's (test/lib/lookup3_collide.py does
it) and, through the shared key, keep the victim's free lease from being
acquired, delay its renewals or pin it.  From 1.2 on the key is SipHash-2-4
of the name with the 128-bit secret in dlock_lock_key (src/locktag.c).

What it checks (one TAP line each):

 1  this test's SipHash-2-4 (test/lib/siphash24.py) reproduces the 64
    reference vectors
 2  pg_locks shows a name's key as the high/low 32 bits of SipHash-2-4 of
    the name with the database's secret (read as superuser), objsubid
    17484, for sample names (ASCII, multibyte, 255 bytes, odd characters)
 3  the keys of chosen names predict nothing: the same names get other keys
    in another database, a key is not the 1.1 function's, and DROP and
    CREATE EXTENSION draws a new secret
 4  a name that collides with 'payouts' under the 1.1 hash (solved here) no
    longer interferes: the free 'payouts' is acquired at once by its victim
    role while the attacker role waits in the queue of its own colliding
    lease
 5  ... the victim's renewal (dlock_renew, and an owner renewal through
    dlock_acquire) is not delayed while the attacker's transaction that
    released its colliding lease is open
 6  ... an idle dlock_check of the colliding name does not pin 'payouts': a
    hand-over of the released 'payouts' goes through at once
 7  an accidental collision, forced with the test-only setting
    dlock.developer_key_bits = 0 (every name one key), costs only what
    docs/security.md says: the leases stay apart (own tokens and answers),
    and a call on one name waits for an open transaction that changed the
    other (a wait => 0 acquire answers NULL), no longer than that
 8  a plain role cannot set dlock.developer_key_bits
 9  nothing is left in pg_locks

DLOCK_LOCK_KEYS_VERSION=1.1 creates the extension at 1.1 (names keyed the
1.1 way, as before the update): checks 2 to 6 then fail, which shows they
can.  Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the maintenance
database).  Databases dlock_lock_keys{,_2,_3} and roles dlock_keys_victim
and dlock_keys_attacker are made and dropped.
"""

import os
import sys
import threading
import time

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import Tap, one, timed  # noqa: E402
from lookup3_collide import collide, hash_extended  # noqa: E402
import siphash24  # noqa: E402

DB, DB2, DB3 = "dlock_lock_keys", "dlock_lock_keys_2", "dlock_lock_keys_3"
VICTIM, ATTACKER = "dlock_keys_victim", "dlock_keys_attacker"
VERSION = os.environ.get("DLOCK_LOCK_KEYS_VERSION", "")
PROMPT_S = 1.0
CHECKS = 9
SAMPLES = ["a", "payouts", "nightly-report", "\u00e9t\u00e9/\u65e5\u672c/\U0001F512",
           "x" * 255, "\u00e9" * 127 + "x", "it's \"quoted\" %s\t\n\x01", "12345678"]


def connect(db, user=None, name="lock_keys"):
    kw = {"user": user} if user else {}
    return psycopg.connect(dbname=db, autocommit=True, application_name=name, **kw)


def secret_of(conn):
    return bytes(one(conn, "SELECT secret FROM dlock_lock_key"))


def key_of(conn, name):
    """(classid, objid) of name's lock key, as pg_locks shows it."""
    conn.execute("BEGIN")
    try:
        tok = one(conn, "SELECT dlock_acquire(%s, '10 s')", (name,))
        rows = conn.execute(
            "SELECT DISTINCT classid::bigint, objid::bigint, objsubid FROM pg_locks"
            " WHERE locktype = 'advisory' AND pid = pg_backend_pid()").fetchall()
    finally:
        conn.execute("ROLLBACK")
    if tok is None or len(rows) != 1 or rows[0][2] != 17484:
        return None
    return rows[0][0] << 32 | rows[0][1]


def check_keys(tap, admin, admin2):
    problems = []
    try:
        secret = secret_of(admin)
    except psycopg.Error as e:
        tap.check("pg_locks shows SipHash-2-4 of the name with the secret", [f"no secret: {e}"])
        tap.check("keys of chosen names predict nothing", ["no secret"])
        return None
    for name in SAMPLES:
        got = key_of(admin, name)
        want = siphash24.siphash24(secret, name.encode())
        if got != want:
            problems.append(f"{name!r}: pg_locks shows {got}, want {want}")
    tap.check(f"pg_locks shows SipHash-2-4 of the name with the secret, "
              f"objsubid 17484, for {len(SAMPLES)} sample names", problems)

    problems = []
    for name in SAMPLES:
        k1, k2 = key_of(admin, name), key_of(admin2, name)
        if k1 is None or k1 == k2:
            problems.append(f"{name!r}: key {k1} here, {k2} in {DB2}")
        if k1 == hash_extended(name.encode()):
            problems.append(f"{name!r}: key {k1} is the 1.1 function's")
    before = key_of(admin, "fresh-name")
    try:
        old = secret_of(admin)
        admin.execute("DROP EXTENSION dlock")
        admin.execute(f"CREATE EXTENSION dlock{VERSION and ' VERSION ' + repr(VERSION)}")
        if secret_of(admin) == old:
            problems.append("DROP and CREATE EXTENSION kept the secret")
    except psycopg.Error as e:
        problems.append(f"secret: {e}")
    if key_of(admin, "fresh-name") == before:
        problems.append("DROP and CREATE EXTENSION kept the key of a name")
    tap.check("keys of chosen names predict nothing: another database, the 1.1 "
              "function and a re-created extension give other keys", problems)
    return True


def wait_until(conn, query, params=(), limit=10.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if one(conn, query, params):
            return True
        time.sleep(0.02)
    return False


def check_attack(tap, admin):
    # Two victims' names, each with a name of the same 1.1 key, solved here.
    forged = {t: collide(t) for t in ("payouts", "ledger")}
    notes = [f"{f!r} has the 1.1 key of {t!r}: "
             f"{one(admin, 'SELECT hashtextextended(%s, 0) = hashtextextended(%s, 0)', (t, f))}"
             for t, f in forged.items()]
    victim, victim2 = connect(DB, VICTIM), connect(DB, VICTIM)
    a1, a2 = connect(DB, ATTACKER), connect(DB, ATTACKER, "waiter")
    for c in (victim, victim2, a1):
        c.execute("SET lock_timeout = '3s'")
    ltok = one(victim, "SELECT dlock_acquire('ledger', '1 min', '0', 'pod-1')")
    ftok = {f: one(a1, "SELECT dlock_acquire(%s, '1 min')", (f,)) for f in forged.values()}

    # 4. The attacker holds its forged name and waits for it in its queue.
    f = forged["payouts"]
    waiter = threading.Thread(target=timed, args=(a2, "SELECT dlock_acquire(%s, '1 min', '20 s')",
                                                  (f,)))
    waiter.start()
    queued = wait_until(admin, "SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                               " WHERE a.application_name = 'waiter' AND l.objsubid = 17485 AND l.granted")
    r, err, secs = timed(victim, "SELECT dlock_acquire('payouts', '1 min')")
    problems = [] if queued else ["the attacker's waiter never queued"]
    if err or r is None or secs > PROMPT_S:
        problems.append(f"acquire of the free 'payouts': {r} {err} after {secs:.3f} s")
    tap.check("a free name is acquired while another role waits on a name with its 1.1 key",
              problems, notes)

    # 5. The attacker's open transaction changed its forged lease.
    f = forged["ledger"]
    problems = []
    a1.execute("BEGIN")
    one(a1, "SELECT dlock_renew(%s, %s, '1 min')", (f, ftok[f]))
    r, err, secs = timed(victim, "SELECT dlock_renew('ledger', %s, '1 min')", (ltok,))
    if err or r is not True or secs > PROMPT_S:
        problems.append(f"renew: {r} {err} after {secs:.3f} s")
    r, err, secs = timed(victim, "SELECT dlock_acquire('ledger', '1 min', '0', 'pod-1')")
    if err or r is None or r != ltok or secs > PROMPT_S:
        problems.append(f"owner renewal: {r} {err} after {secs:.3f} s")
    tap.check("renewals are not delayed by another role's open transaction on a name "
              "with the 1.1 key", problems)
    a1.execute("ROLLBACK")

    # 6. An idle check of the forged name pins nothing else.
    problems = []
    a1.execute("BEGIN")
    one(a1, "SELECT dlock_check(%s, %s)", (f, ftok[f]))
    if one(victim, "SELECT dlock_release('ledger', %s)", (ltok,)):
        r, err, secs = timed(victim2, "SELECT dlock_acquire('ledger', '1 min')")
        if err or r is None or secs > PROMPT_S:
            problems.append(f"hand-over: {r} {err} after {secs:.3f} s")
    else:
        problems.append("the victim's release failed")
    tap.check("an idle check of a name with the 1.1 key does not hold back a hand-over",
              problems)
    a1.execute("ROLLBACK")
    for f, t in ftok.items():
        a1.execute("SELECT dlock_release(%s, %s)", (f, t))
    waiter.join()
    for c in (victim, victim2, a1, a2):
        c.close()


def check_forced(tap, admin):
    problems = []
    admin.execute(f'ALTER DATABASE "{DB3}" SET dlock.developer_key_bits = 0')
    s1, s2 = connect(DB3), connect(DB3)
    s2.execute("SET lock_timeout = '300ms'")
    kp, kq = key_of(s1, "p"), key_of(s2, "q")
    if kp is None or kp != kq:
        problems.append(f"the names do not share a key: {kp} {kq}")
    tp = one(s1, "SELECT dlock_acquire('p', '1 min')")
    tq = one(s2, "SELECT dlock_acquire('q', '1 min')")
    if tp is None or tq is None or tp == tq:
        problems.append(f"both leases held with tokens of their own: {tp} {tq}")
    for q, params, want in [("SELECT dlock_check('p', %s)", (tq,), False),
                            ("SELECT dlock_check('q', %s)", (tq,), True),
                            ("SELECT dlock_renew('p', %s, '1 min')", (tq,), False)]:
        r, err, _ = timed(s2, q, params)
        if r is not want:
            problems.append(f"{q % params}: {r} {err}, want {want}")
    s1.execute("BEGIN")
    one(s1, "SELECT dlock_renew('p', %s, '1 min')", (tp,))
    r, err, _ = timed(s2, "SELECT dlock_renew('q', %s, '1 min')", (tq,))
    if err != "55P03":
        problems.append(f"renew of q during p's open renewal: {r} {err}, want a wait (55P03)")
    r, err, _ = timed(s2, "SELECT dlock_acquire('free', '1 min')")
    if r is not None or err:
        problems.append(f"wait => 0 acquire of a free name meanwhile: {r} {err}, want NULL")
    r, err, _ = timed(s2, "SELECT dlock_check('q', %s)", (tq,))
    if r is not True:
        problems.append(f"check of q during p's open renewal: {r} {err}, want true at once")
    s1.execute("COMMIT")
    s1.execute("BEGIN")
    one(s1, "SELECT dlock_acquire('p2', '1 min')")
    r, err, _ = timed(s2, "SELECT dlock_check('q', %s)", (tq,))
    if err != "55P03":
        problems.append(f"check of q during an open acquire of p2: {r} {err}, want a wait (55P03)")
    s1.execute("ROLLBACK")
    s3 = connect(DB3, name="forced-waiter")
    waiter = threading.Thread(target=timed, args=(s3, "SELECT dlock_acquire('p', '1 min', '2 s')"))
    waiter.start()
    if not wait_until(s2, "SELECT count(*) > 0 FROM pg_locks l JOIN pg_stat_activity a USING (pid)"
                          " WHERE a.application_name = 'forced-waiter' AND l.objsubid = 17485"
                          " AND l.granted"):
        problems.append("the waiter for p never queued")
    r, err, _ = timed(s2, "SELECT dlock_acquire('free', '1 min')")
    if r is not None or err:
        problems.append(f"wait => 0 acquire of a free name while p has a waiter: {r} {err}, want NULL")
    waiter.join()
    s3.close()
    r, err, secs = timed(s2, "SELECT dlock_renew('q', %s, '1 min')", (tq,))
    if r is not True or secs > PROMPT_S:
        problems.append(f"renew of q after p's commit: {r} {err} after {secs:.3f} s")
    r, err, secs = timed(s2, "SELECT dlock_acquire('free', '1 min') IS NOT NULL")
    if r is not True:
        problems.append(f"acquire of the free name after p's commit: {r} {err}")
    for c, n, t in ((s1, "p", tp), (s2, "q", tq)):
        if t is not None and one(c, "SELECT dlock_release(%s, %s)", (n, t)) is not True:
            problems.append(f"release of {n}")
    tap.check("a forced collision keeps the leases apart and delays the other name "
              "only while a transaction that changed one is open", problems)
    s1.close()
    s2.close()

    # Before the library is loaded the setting is a placeholder anyone may
    # set; loading the library then keeps the default (with a WARNING).
    problems = []
    with connect(DB, VICTIM) as plain, connect(DB) as c:
        plain.execute("SELECT set_config('dlock.developer_key_bits', '0', false)")
        secret = secret_of(c) if not VERSION else None
        got = key_of(plain, "plain")
        if secret and got != siphash24.siphash24(secret, b"plain"):
            problems.append(f"set before loading: the key is {got}")
        r, err, _ = timed(plain, "SELECT set_config('dlock.developer_key_bits', '0', false)")
        if err != "42501":
            problems.append(f"set after loading: {r} {err}, want 42501")
    tap.check("a plain role cannot set dlock.developer_key_bits", problems)


def main():
    tap = Tap()
    print(f"1..{CHECKS}")
    problems = siphash24.vector_problems()
    tap.check("SipHash-2-4 of this test reproduces the 64 reference vectors", problems)
    admin = psycopg.connect(autocommit=True)
    try:
        for db in (DB, DB2, DB3):
            admin.execute(f'DROP DATABASE IF EXISTS "{db}"')
        for r in (VICTIM, ATTACKER):
            admin.execute(f'DROP ROLE IF EXISTS "{r}"')
            admin.execute(f'CREATE ROLE "{r}" LOGIN')
        for db in (DB, DB2, DB3):
            admin.execute(f'CREATE DATABASE "{db}"')
            with connect(db) as c:
                c.execute(f"CREATE EXTENSION dlock{VERSION and ' VERSION ' + repr(VERSION)}")
        with connect(DB) as c1, connect(DB2) as c2:
            check_keys(tap, c1, c2)
        check_attack(tap, admin)
        check_forced(tap, admin)
        left = one(admin, "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'"
                          " AND objsubid IN (17484, 17485, 17486, 17487)")
        tap.check("no dlock lock left in pg_locks", [f"{left} left"] if left else [])
    except Exception as e:  # a broken step must not hide the remaining lines
        print(f"# {type(e).__name__}: {e}")
    finally:
        for db in (DB, DB2, DB3):
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        for r in (VICTIM, ATTACKER):
            admin.execute(f'DROP ROLE IF EXISTS "{r}"')
        admin.close()
    while tap.n < CHECKS:
        tap.check("not reached", ["an earlier step failed"])
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
