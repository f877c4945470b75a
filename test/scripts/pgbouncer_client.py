# Copyright (c) 2026, the dlock developers
"""test/scripts/pgbouncer_client.py: dlock through PgBouncer, transaction pooling.

Run by pgbouncer.sh, which starts the PgBouncer (pool_mode = transaction,
2 server connections) and passes its address in DLOCK_PGB_HOST and
DLOCK_PGB_PORT.  CLIENTS client threads, each with a connection of its own
to the PgBouncer, loop for SECONDS seconds over NAMES lock names:

    acquire (ttl TTL_MS, wait 0 or a little)  - one transaction
    fenced writes: rows carrying the token go into the name's ledger table,
    whose trigger is dlock_fence('<name>', 'token'); some in a transaction
    each, some two to a transaction
    release

Some holdings go wrong on purpose: "stall between" stalls past the lease
between two writes (the late write must fail with LK001, the release must
return false); "stall inside" stalls inside an open write transaction, then
writes again (LK001 "The lease expired.", the whole transaction rolls back:
nobody could take the lease over meanwhile).  The server connections are
shared, so a holder's acquire, writes and release usually run on different
server backends.

A monitor on a direct connection (not through PgBouncer) samples pg_locks and
pg_stat_activity all along: an advisory lock held by a backend that has been
idle, outside any transaction, since before the sample is a session-level
lock (or a leaked one).  It starts with a self-test: a session-level
pg_advisory_lock planted on a direct connection must be seen.

Checks (TAP): tokens never go backwards in commit order, per name; no holder
committed a write after a later holder acquired the name (server clock); the
ledgers hold exactly the writes the clients saw commit; stale writes were
attempted and every one rejected with LK001; leases never overlapped; only
LK001 errors; the clients really went through 2 shared server connections;
no session-level advisory lock was ever seen; no dlock advisory lock is left
in pg_locks afterwards (direct connection), nor any other advisory lock; the
run did enough work to mean something; and the dlock Python client
(clients/python) holds leases through the pooler, renewed past psycopg's
prepare_threshold, without a failed renewal (see c09_dlock_client).  The ledger
rules are shared with
fence_stress and the HA harness: test/lib/ledger.py.

Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (direct, the maintenance
database); DLOCK_PGB_HOST, DLOCK_PGB_PORT (the PgBouncer); DLOCK_PGB_DB
(dlock_pgbouncer, dropped and recreated), DLOCK_PGB_CLIENTS (24),
DLOCK_PGB_SECONDS (12), DLOCK_PGB_SEED, DLOCK_PGB_KEEP=1 keeps the database.
"""

import os
import random
import sys
import threading
import time
import traceback

import psycopg
from psycopg import sql

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import (Tap, duplicate_tokens, ledger_matches,  # noqa: E402
                    leases_never_overlapped, no_write_after_later_acquire,
                    tokens_never_go_back, us)

DB = os.environ.get("DLOCK_PGB_DB", "dlock_pgbouncer")
PGB_HOST = os.environ.get("DLOCK_PGB_HOST", "127.0.0.1")
PGB_PORT = int(os.environ.get("DLOCK_PGB_PORT", "6432"))
CLIENTS = int(os.environ.get("DLOCK_PGB_CLIENTS", "24"))
SECONDS = float(os.environ.get("DLOCK_PGB_SECONDS", "12"))
SEED = int(os.environ.get("DLOCK_PGB_SEED", str(int(time.time() * 1000) % 1000000)))
KEEP = bool(os.environ.get("DLOCK_PGB_KEEP"))

NAMES = ("pgb/a", "pgb/b", "pgb/c", "pgb/d")
TTL_MS = 500
STALL_S = (0.6, 0.75)           # always longer than the TTL
SERVER_CONNECTIONS = 2
CLASSES = (17484, 17485)

PLANS = (("normal", 84), ("stall_between", 12), ("stall_inside", 4))

MIN_CLIENTS = 20
MIN_ACCEPTED = 300
MIN_HOLDERS_PER_NAME = 20

EXPIRED = "The lease expired."
NEWER = "The lock has since been acquired with a newer token."


def schema():
    parts = [f"""
CREATE EXTENSION dlock;
CREATE SEQUENCE ledger_commit_order CACHE 1;
CREATE TABLE ledger_commit (
    name         text NOT NULL,
    client       text NOT NULL,
    cseq         integer NOT NULL,
    commit_order bigint NOT NULL DEFAULT nextval('ledger_commit_order'),
    commit_us    bigint NOT NULL DEFAULT {us("clock_timestamp()")},
    PRIMARY KEY (client, cseq)
);
CREATE FUNCTION ledger_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.written_us := {us("clock_timestamp()")};
    RETURN NEW;
END $$;
CREATE FUNCTION ledger_commit_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_commit (name, client, cseq) VALUES (TG_ARGV[0], NEW.client, NEW.cseq);
    RETURN NULL;
END $$;
ALTER DATABASE {DB} SET statement_timeout = '20s';

-- One round trip, one transaction: the acquire and what it wrote.
CREATE FUNCTION acquire(name text, ttl interval, wait interval,
                        OUT token bigint, OUT seen_token bigint, OUT acquired_us bigint,
                        OUT expires_us bigint, OUT pid integer)
LANGUAGE plpgsql AS $$
BEGIN
    token := dlock_acquire(name, ttl, wait);
    pid := pg_backend_pid();
    IF token IS NOT NULL THEN
        SELECT l.token, {us("l.acquired_at")}, {us("l.expires_at")}
          INTO seen_token, acquired_us, expires_us
          FROM dlock_leases l WHERE l.name = acquire.name;
    END IF;
END $$;
"""]
    for i, name in enumerate(NAMES):
        parts.append(f"""
CREATE TABLE ledger_{i} (
    token       bigint NOT NULL,
    client      text NOT NULL,
    cseq        integer NOT NULL,
    written_us  bigint,
    PRIMARY KEY (client, cseq)
);
-- BEFORE triggers fire in name order: the fence first, then the stamp.
CREATE TRIGGER t1_fence BEFORE INSERT OR UPDATE ON ledger_{i}
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('{name}', 'token');
CREATE TRIGGER t2_stamp BEFORE INSERT ON ledger_{i}
    FOR EACH ROW EXECUTE FUNCTION ledger_stamp();
CREATE CONSTRAINT TRIGGER t3_commit AFTER INSERT ON ledger_{i}
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_commit_stamp('{name}');
""")
    return "".join(parts)


def direct(app):
    return psycopg.connect(dbname=DB, autocommit=True, application_name=app)


def pooled(app):
    # PgBouncer 1.18 in transaction mode cannot carry server-side prepared
    # statements from one transaction to the next: psycopg must not prepare.
    return psycopg.connect(host=PGB_HOST, port=PGB_PORT, dbname=DB, autocommit=True,
                           application_name=app, prepare_threshold=None,
                           connect_timeout=10)


# ---------------------------------------------------------------------------
# Clients
# ---------------------------------------------------------------------------

class Client:
    def __init__(self, slot, deadline, events, lock):
        self.id = f"c{slot:02d}"
        self.rng = random.Random(SEED * 1009 + slot)
        self.deadline = deadline
        self.events = events
        self.elock = lock
        self.cseq = 0
        self.busy = 0
        self.lost = False
        self.conn = None

    def log(self, ev, **kw):
        kw["ev"] = ev
        kw["client"] = self.id
        with self.elock:
            self.events.append(kw)

    def run(self):
        try:
            self.conn = pooled(self.id)
            self.log("start")
            while time.monotonic() < self.deadline:
                self.cycle()
            self.log("exit", busy=self.busy)
            self.conn.close()
        except psycopg.Error as e:
            self.log("error", what=f"SQLSTATE {e.sqlstate}: {str(e).strip()}",
                     trace=traceback.format_exc())
        except BaseException as e:
            self.log("error", what=f"{type(e).__name__}: {e}", trace=traceback.format_exc())

    def next_cseq(self):
        self.cseq += 1
        return self.cseq

    def insert(self, name, token, cseq):
        self.conn.execute(f"INSERT INTO ledger_{NAMES.index(name)} (token, client, cseq)"
                          " VALUES (%s, %s, %s)", (token, self.id, cseq))

    def rejected(self, err, name, token, cseqs, kind):
        if err.sqlstate != "LK001":
            raise err
        self.lost = True
        self.log("reject", name=name, token=token, cseqs=list(cseqs), kind=kind,
                 detail=err.diag.message_detail)

    def acquire(self, name):
        # A waiting acquire keeps its server connection for the whole wait:
        # wait a little, and seldom.
        wait = self.rng.choice(("0",) * 6 + ("5 ms", "20 ms"))
        token, seen, acquired_us, expires_us, pid = self.conn.execute(
            "SELECT * FROM acquire(%s, %s::interval, %s::interval)",
            (name, f"{TTL_MS} ms", wait)).fetchone()
        if token is None:
            return None
        self.lost = False
        self.log("acquire", name=name, token=token, seen_token=seen, pid=pid,
                 acquired_us=acquired_us, expires_us=expires_us)
        return token

    def release(self, name, token, after_stall):
        ok, at_us, pid = self.conn.execute(
            f"SELECT dlock_release(%s, %s), {us('clock_timestamp()')}, pg_backend_pid()",
            (name, token)).fetchone()
        self.log("release", name=name, token=token, ok=ok, at_us=at_us, pid=pid,
                 after_stall=after_stall, lost=self.lost)

    def write(self, name, token, kind, rows=1):
        """rows fenced inserts in one transaction; True if it committed."""
        cseqs = [self.next_cseq() for _ in range(rows)]
        try:
            if rows == 1:
                self.insert(name, token, cseqs[0])
            elif self.rng.random() < 0.5:
                # One statement, one transaction.
                self.conn.execute(
                    f"INSERT INTO ledger_{NAMES.index(name)} (token, client, cseq)"
                    " SELECT %s, %s, c FROM unnest(%s::int[]) AS c", (token, self.id, cseqs))
            else:
                with self.conn.transaction():
                    for c in cseqs:
                        self.insert(name, token, c)
        except psycopg.Error as err:
            self.rejected(err, name, token, cseqs, kind)
            return False
        for c in cseqs:
            self.log("commit", name=name, token=token, cseq=c, kind=kind)
        return True

    def stall(self, where, name, token):
        secs = self.rng.uniform(*STALL_S)
        self.log("stall", where=where, name=name, token=token, ms=round(secs * 1000))
        time.sleep(secs)

    def cycle(self):
        name = self.rng.choice(NAMES)
        token = self.acquire(name)
        if token is None:
            self.busy += 1
            time.sleep(self.rng.uniform(0.01, 0.04))
            return
        plan = self.rng.choices([p for p, _ in PLANS], [w for _, w in PLANS])[0]
        if plan == "normal":
            for _ in range(self.rng.randint(1, 3)):
                if not self.write(name, token, "fresh", rows=self.rng.choice((1, 1, 2))):
                    break
            self.release(name, token, after_stall=False)
        elif plan == "stall_between":
            self.write(name, token, "fresh")
            self.stall("between", name, token)
            self.write(name, token, "stale")
            self.release(name, token, after_stall=True)
        else:
            c1, c2 = self.next_cseq(), self.next_cseq()
            stage = "insert"
            try:
                with self.conn.transaction():
                    self.insert(name, token, c1)
                    stage = "stall"
                    self.stall("inside", name, token)
                    stage = "stale"
                    self.insert(name, token, c2)
                    stage = "commit"
            except psycopg.Error as err:
                if stage == "insert":
                    self.rejected(err, name, token, [c1], "fresh")
                elif stage == "stale":
                    self.rejected(err, name, token, [c1, c2], "stale_inside")
                else:
                    raise
            else:
                self.log("commit", name=name, token=token, cseq=c1, kind="fresh")
                self.log("commit", name=name, token=token, cseq=c2, kind="stale_inside")
            self.release(name, token, after_stall=True)


# ---------------------------------------------------------------------------
# The monitor: session-level advisory locks, server backends in use
# ---------------------------------------------------------------------------

class Monitor:
    def __init__(self):
        self.conn = direct("dlock-pgb-monitor")
        self.mypid = self.conn.info.backend_pid
        self.samples = 0
        self.locks_seen = 0
        self.idle_holders = []          # (pid, classid, objid, mode, state_change)
        self.max_backends = 0
        self.backend_pids = set()
        self.stop = threading.Event()
        self.failure = None

    def sample(self, exclude=()):
        c = self.conn
        with c.transaction():
            t0 = c.execute("SELECT clock_timestamp()").fetchone()[0]
            locks = c.execute(
                "SELECT pid, classid, objid, objsubid, mode FROM pg_locks"
                " WHERE locktype = 'advisory' AND granted"
                "   AND database = (SELECT oid FROM pg_database"
                "                    WHERE datname = current_database())").fetchall()
            # Read after pg_locks: the activity snapshot is taken at its first
            # use in this transaction.
            act = {r[0]: r[1:] for r in c.execute(
                "SELECT pid, state, state_change FROM pg_stat_activity"
                " WHERE datname = current_database() AND backend_type = 'client backend'"
            ).fetchall()}
        bes = [p for p in act if p != self.mypid and p not in exclude]
        self.max_backends = max(self.max_backends, len(bes))
        self.backend_pids.update(bes)
        self.samples += 1
        self.locks_seen += len(locks)
        found = []
        for pid, classid, objid, objsubid, mode in locks:
            st = act.get(pid)
            # Idle outside a transaction since before t0, through the lock
            # sample: the lock outlived its transaction.
            if st and st[0] == "idle" and st[1] is not None and st[1] < t0:
                found.append((pid, classid, objid, objsubid, mode, str(st[1])))
        return found

    def run(self):
        try:
            while not self.stop.is_set():
                self.idle_holders.extend(self.sample())
                time.sleep(0.02)
        except BaseException as e:
            self.failure = f"{type(e).__name__}: {e}"


# ---------------------------------------------------------------------------
# The verdict
# ---------------------------------------------------------------------------

def verify(tap, events, rows, mon, selftest, leftover, leftover_all, stats, elapsed):
    by = {}
    for e in events:
        by.setdefault(e["ev"], []).append(e)
    acquires = by.get("acquire", [])
    commits = by.get("commit", [])
    rejects = by.get("reject", [])
    releases = by.get("release", [])
    stalls = by.get("stall", [])
    errors = by.get("error", [])
    starts = by.get("start", [])
    busy = sum(e["busy"] for e in by.get("exit", []))

    acq_by_token = {e["token"]: e for e in acquires}
    dup = duplicate_tokens(acquires)
    committed = {(e["client"], e["cseq"]): e for e in commits}
    refused = {(e["client"], c) for e in rejects for c in e["cseqs"]}
    stale_kinds = ("stale", "stale_inside")
    stale_rejected = [e for e in rejects if e["kind"] in stale_kinds]
    stale_accepted = [e for e in commits if e["kind"] in stale_kinds]
    late = [e for e in rejects if e["kind"] == "fresh"]
    pids = {e["pid"] for e in acquires} | {e["pid"] for e in releases}
    crossed = sum(1 for e in releases
                  if e["token"] in acq_by_token and acq_by_token[e["token"]]["pid"] != e["pid"])

    print(f"# run: {len(starts)} clients through PgBouncer (transaction pooling, "
          f"{SERVER_CONNECTIONS} server connections), {len(NAMES)} names, ttl {TTL_MS} ms, "
          f"{elapsed:.1f} s, seed {SEED}")
    print(f"# acquisitions: {len(acquires)} (busy: {busy}); releases: {len(releases)} "
          f"(true {sum(1 for e in releases if e['ok'])}, false "
          f"{sum(1 for e in releases if not e['ok'])}); released on another server "
          f"backend than the acquire: {crossed}")
    print(f"# fenced writes accepted: {len(commits)} (rows in the ledgers: {len(rows)}); "
          f"rejected with LK001: {sum(len(e['cseqs']) for e in rejects)} rows in "
          f"{len(rejects)} transactions (stale after a stall between transactions: "
          f"{sum(1 for e in stale_rejected if e['kind'] == 'stale')}, inside: "
          f"{sum(1 for e in stale_rejected if e['kind'] == 'stale_inside')}; "
          f"late without a stall: {len(late)}); stale writes accepted: {len(stale_accepted)}")
    print(f"# stalls: {len(stalls)}; server backends seen by the clients: {sorted(pids)}; "
          f"by the monitor: at most {mon.max_backends} at once, "
          f"{len(mon.backend_pids)} in all")
    print(f"# monitor: {mon.samples} samples of pg_locks, {mon.locks_seen} advisory locks "
          f"seen held inside transactions, {len(mon.idle_holders)} held by idle backends")
    if stats:
        print(f"# PgBouncer SHOW STATS: {stats}")

    # 1. Tokens never go backwards in commit order.
    problems = tokens_never_go_back(rows, NAMES)
    tap.check("fencing: tokens never go backwards in commit order, for every name", problems)

    # 2. No accepted row from a holder after a later holder began.
    problems = no_write_after_later_acquire(rows, acquires, NAMES)
    for e in rejects:
        if e["kind"] == "stale_inside" and e["detail"] != EXPIRED:
            problems.append(f"stale write inside an open fenced transaction was told "
                            f"{e['detail']!r}: the lease changed hands while it was open")
    tap.check("fencing: no accepted write from a holder after a later holder acquired "
              "the name (server clock)", problems)

    # 3. Ledgers = the writes the clients saw commit.
    problems = ledger_matches(rows, committed, refused=refused, acquires=acquires,
                              what="ledger")
    tap.check("the ledgers hold exactly the writes the clients saw commit", problems)

    # 4. Stale writes were attempted and rejected.
    problems = []
    if not stale_rejected:
        problems.append("no stale write was rejected: the test proved nothing")
    for e in stale_accepted:
        problems.append(f"stale write {e['client']}/{e['cseq']} token {e['token']} committed")
    for e in rejects:
        if e["kind"] != "stale_inside" and e["detail"] not in (EXPIRED, NEWER):
            problems.append(f"write rejected for {e['detail']!r}")
    for e in releases:
        if e["ok"] and (e["after_stall"] or e["lost"]):
            problems.append(f"release of token {e['token']} after a stall or a rejected "
                            f"write returned true")
    tap.check(f"fencing violations: 0; stale writes rejected with LK001: "
              f"{len(stale_rejected)}, accepted: {len(stale_accepted)}", problems)

    # 5. Leases never overlapped.
    problems = list(dup)
    for e in acquires:
        if e["seen_token"] != e["token"]:
            problems.append(f"acquire returned {e['token']}, dlock_leases showed "
                            f"{e['seen_token']} in the same transaction")
    problems += leases_never_overlapped(acquires, releases, NAMES)
    tap.check("leases on one name never overlapped; tokens unique", problems)

    # 6. Nothing else went wrong.
    problems = []
    for e in errors:
        problems.append(f"client {e['client']}: {e['what']}")
        problems.extend(e.get("trace", "").rstrip().splitlines()[-2:])
    if mon.failure:
        problems.append(f"monitor: {mon.failure}")
    tap.check("no SQLSTATE but LK001, no client failed", problems)

    # 7. The pool really was 2 shared server connections.
    problems = []
    if len(starts) < MIN_CLIENTS:
        problems.append(f"only {len(starts)} clients ran (want {MIN_CLIENTS})")
    if len(pids) > SERVER_CONNECTIONS:
        problems.append(f"the clients ran on {len(pids)} server backends: {sorted(pids)}")
    if mon.max_backends > SERVER_CONNECTIONS:
        problems.append(f"the monitor saw {mon.max_backends} server backends at once")
    if crossed == 0:
        problems.append("no lease was ever released on another server backend than "
                        "the one that acquired it")
    tap.check(f"{len(starts)} clients shared {len(pids)} server connections; "
              f"{crossed} leases released on another backend than their acquire", problems)

    # 8. No session-level advisory locks.
    problems = []
    if not selftest:
        problems.append("self-test: a planted session-level pg_advisory_lock on an idle "
                        "connection was not detected; the check below proves nothing")
    for pid, classid, objid, objsubid, mode, since in mon.idle_holders[:20]:
        problems.append(f"backend {pid}, idle since {since}, held advisory lock "
                        f"({classid}, {objid}, {objsubid}) {mode}")
    if mon.samples < 20:
        problems.append(f"only {mon.samples} samples")
    tap.check(f"no session-level advisory locks: none held by an idle backend in "
              f"{mon.samples} samples (self-test detected a planted one)", problems)

    # 9. Nothing left afterwards.
    problems = [f"left in pg_locks: {r}" for r in leftover]
    problems += [f"other advisory lock left: {r}" for r in leftover_all]
    tap.check("no dlock advisory locks (objsubid 17484, 17485) left in pg_locks "
              "afterwards, nor any other advisory lock in the database", problems)

    # 10. Busy enough.
    problems = []
    if len(commits) < MIN_ACCEPTED:
        problems.append(f"only {len(commits)} accepted writes (want {MIN_ACCEPTED})")
    for n in NAMES:
        holders = {r["token"] for r in rows if r["name"] == n}
        if len(holders) < MIN_HOLDERS_PER_NAME:
            problems.append(f"{n}: only {len(holders)} holders wrote")
    for what, count in (("stall between transactions",
                         sum(1 for e in stalls if e["where"] == "between")),
                        ("stall inside a transaction",
                         sum(1 for e in stalls if e["where"] == "inside"))):
        if count == 0:
            problems.append(f"no {what}")
    tap.check(f"the run was busy: {len(acquires)} acquisitions, {len(commits)} accepted "
              f"writes, {len(stalls)} stalls", problems)


def pgbouncer_stats():
    try:
        with psycopg.connect(host=PGB_HOST, port=PGB_PORT, dbname="pgbouncer",
                             autocommit=True) as c:
            cur = psycopg.ClientCursor(c)
            cur.execute("SHOW STATS")
            cols = [d.name for d in cur.description]
            for row in cur.fetchall():
                r = dict(zip(cols, row))
                if r.get("database") == DB:
                    return (f"{r.get('total_xact_count')} transactions, "
                            f"{r.get('total_query_count')} queries, "
                            f"total wait for a server "
                            f"{float(r.get('total_wait_time') or 0) / 1e6:.1f} s")
    except psycopg.Error as e:
        return f"(not available: {str(e).strip()})"
    return None


def c09_dlock_client(tap):
    """Issue 25 item 9: the Python client (clients/python) through the pooler.

    Leases with a ttl of 0.6 s held for 3 s each (about 15 renewals, past
    psycopg's prepare_threshold of 5), some on the client's own connections,
    some on a connection passed in with prepare_threshold=None: no renewal
    may fail, no lease be lost, every release must succeed."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "clients", "python", "src"))
    import logging
    import dlock

    failures = []
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    log = logging.getLogger("dlock")
    log.addHandler(Keep(level=logging.INFO))
    log.setLevel(logging.INFO)
    conninfo = f"host={PGB_HOST} port={PGB_PORT} dbname={DB}"

    def one(i):
        try:
            if i % 2:
                with psycopg.connect(conninfo, autocommit=True, prepare_threshold=None) as conn:
                    with dlock.lease(conn, f"pgb/client/{i}", ttl=0.6) as lease:
                        time.sleep(3)
            else:
                with dlock.lease(conninfo, f"pgb/client/{i}", ttl=0.6) as lease:
                    time.sleep(3)
            if lease.lost:
                failures.append(f"lease {i} lost: {lease.lost_reason}")
        except Exception as e:
            failures.append(f"lease {i}: {type(e).__name__}: {str(e).strip()}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    failures += [m for m in records if "failed" in m or "lost" in m]
    tap.check("C09: the dlock Python client renews and releases through PgBouncer in transaction "
              "mode (its connections never prepare statements)", failures)


def main():
    t0 = time.monotonic()
    tap = Tap()
    print("1..11")
    touched = False
    try:
        try:
            with psycopg.connect(autocommit=True) as conn:
                touched = True
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(DB)))
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
            with direct("setup") as conn:
                conn.execute(schema())
            # The pooler reaches the database.
            with pooled("probe") as conn:
                conn.execute("SELECT 1")
        except psycopg.Error as e:
            tap.check(f"set up database {DB} and reach it through PgBouncer "
                      f"{PGB_HOST}:{PGB_PORT}", [str(e).strip()])
            for _ in range(tap.n, 11):
                tap.check("not reached", ["set-up failed"])
            return 1

        mon = Monitor()
        # Self-test: a session-level lock on an idle direct connection is seen.
        plant = direct("dlock-pgb-plant")
        plant.execute("SELECT pg_advisory_lock(4475979, 12345)")
        time.sleep(0.05)
        found = mon.sample(exclude=())
        selftest = any(r[0] == plant.info.backend_pid and r[2] == 12345 for r in found)
        plant.execute("SELECT pg_advisory_unlock(4475979, 12345)")
        plant.close()
        mon.max_backends = 0
        mon.backend_pids.clear()
        mon.samples = mon.locks_seen = 0
        mthread = threading.Thread(target=mon.run, daemon=True)
        mthread.start()

        events = []
        elock = threading.Lock()
        start = time.monotonic()
        deadline = start + SECONDS
        clients = [Client(i, deadline, events, elock) for i in range(CLIENTS)]
        threads = [threading.Thread(target=c.run, daemon=True) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(1.0, deadline + 20 - time.monotonic()))
        for c, t in zip(clients, threads):
            if t.is_alive():
                events.append({"ev": "error", "client": c.id, "what": "still running"})
        elapsed = time.monotonic() - start
        mon.stop.set()
        mthread.join(5)

        stats = pgbouncer_stats()
        # Afterwards, on the server directly.  The PgBouncer keeps its server
        # connections open: they must hold nothing.
        with direct("dlock-pgb-final") as conn:
            leftover = conn.execute(
                "SELECT pid, classid, objid, objsubid, mode, granted FROM pg_locks"
                " WHERE locktype = 'advisory' AND objsubid IN (%s, %s)", CLASSES).fetchall()
            leftover_all = conn.execute(
                "SELECT pid, classid, objid, objsubid, mode, granted FROM pg_locks"
                " WHERE locktype = 'advisory' AND objsubid NOT IN (%s, %s)"
                "   AND database = (SELECT oid FROM pg_database WHERE datname = %s)",
                CLASSES + (DB,)).fetchall()
            rows = []
            for i, n in enumerate(NAMES):
                for r in conn.execute(
                        f"SELECT l.token, l.client, l.cseq, c.commit_order, c.commit_us"
                        f"  FROM ledger_{i} l JOIN ledger_commit c USING (client, cseq)"
                        f" WHERE c.name = %s", (n,)).fetchall():
                    rows.append(dict(name=n, token=r[0], client=r[1], cseq=r[2],
                                     commit_order=r[3], commit_us=r[4]))
            orphans = sum(conn.execute(f"SELECT count(*) FROM ledger_{i}").fetchone()[0]
                          for i in range(len(NAMES)))
            if orphans != len(rows):
                events.append({"ev": "error", "client": "-",
                               "what": f"{orphans} ledger rows, {len(rows)} with a commit stamp"})
        mon.conn.close()

        verify(tap, events, rows, mon, selftest, leftover, leftover_all, stats, elapsed)
        c09_dlock_client(tap)
        print(f"# {time.monotonic() - t0:.1f} s in all; "
              f"{'all passed' if not tap.failed else f'{tap.failed} failed'}")
        return 1 if tap.failed else 0
    except Exception as e:
        tap.check(f"the test ran: {type(e).__name__}: {e}",
                  traceback.format_exc().rstrip().splitlines()[-6:])
        return 1
    finally:
        if touched and not KEEP:
            # Close PgBouncer's server connections before the database goes.
            try:
                with psycopg.connect(host=PGB_HOST, port=PGB_PORT, dbname="pgbouncer",
                                     autocommit=True) as c:
                    psycopg.ClientCursor(c).execute(f"KILL {DB}")
            except psycopg.Error:
                pass
            try:
                with psycopg.connect(autocommit=True) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                                 .format(sql.Identifier(DB)))
            except psycopg.Error as e:
                print(f"# could not drop database {DB}: {str(e).strip()}")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main())
