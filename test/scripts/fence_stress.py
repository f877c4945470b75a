# Copyright (c) 2026, the dlock developers
"""test/scripts/fence_stress.py: the fencing stress test (see fence_stress.sh).

CLIENTS client processes fight over three lock names with a 150 ms TTL for
SECONDS seconds.  Each one loops: acquire a name (waiting up to 100 ms), then
write a few times, each write in a transaction of its own, then release.
Every write has a shape: "insert" puts a row carrying the token into the
ledger table; the other shapes change the acct table, both guarded by

    dlock_fence('name', 'token', 'column')   (BEFORE INSERT OR UPDATE OR DELETE)

  update         UPDATE that leaves the token alone
  update_token   UPDATE that sets the writer's token
  writeback      UPDATE that writes back the token it read (as an ORM does)
  delete         DELETE
  upsert         INSERT ... ON CONFLICT DO UPDATE, token left alone
  upsert_token   the same with the token in the SET list
  merge          MERGE with WHEN MATCHED THEN DELETE / UPDATE and an INSERT
                 with a NULL token (PostgreSQL 15 and later)

A fresh write declares its token with dlock_assert first (the insert needs
none).  An AFTER trigger on acct records every row it changes, with the
writer's token, in acct_log.  Some holdings go wrong on purpose:

  creep           writes every 5-30 ms until one is rejected: writes race the
                  expiry and the waiters that wake up at it
  stall between   a write or two, a 200-400 ms stall past the lease, then a
                  write of every shape without a declaration (each must be
                  rejected with LK001), a release (must be false)
  stall inside    a fenced insert, the stall inside the open transaction, then
                  COMMIT: accepted, the open check keeps the lease from
                  changing hands meanwhile
  stale inside    the same, but after the stall a write of a random shape,
                  declared at the start: rejected with LK001 "The lease
                  expired." (nobody can have taken over), and the whole
                  transaction rolls back
  drop between    the process kills itself (SIGKILL) while holding the lease
  drop inside     the same, inside a write transaction after its insert; the
                  row must not survive
  pin idle        dlock_check, a fenced insert, then the transaction left idle
                  for 50-1,200 ms, past the lease, then COMMIT: the pin grace
                  is 150 ms (dlock.pin_grace for the database, or
                  dlock_sql_settings.pin_grace), so a waiter may end it (a
                  terminate: a session idle in its transaction ignores a
                  cancel), and takes the lease only after it ended; one that
                  wakes up before that commits, and must commit before the
                  hand-over
  pin running     the same with the transaction running pg_sleep(): a waiter
                  cancels it

While the clients run, a jumper process moves the token counter every 50 to
150 ms: a dlock_rebase(), or a setval() of the counter a little way up
followed by a dlock_rebase() (that jump then finds the counter past every
other bound and leaves it where it is, the case in which jumps before 1.2
set the counter back under tokens the clients had drawn meanwhile).

A revoker process (DLOCK_STRESS_REVOKERS of them) calls dlock_revoke every
100 to 400 ms on a random name, for whatever holds it or for the token
dlock_leases shows, with a wait of 0, 50 or 300 ms, with force or without
(55P03 when its wait runs out: nothing changed).  Any transaction of a
holder may so be ended (57014 after a cancel, or its session terminated):
the client logs it with the writes it took along (uncertain when the
session died in COMMIT), reconnects if need be, and drops that holding.

A killed client is restarted under a new client id.  Every client logs what
it saw (acquisitions, commits, rejections, releases, stalls, disconnects) to a
file of its own.  The ledger records, per row, the server clock after the
fence check and, from a deferred trigger that runs at COMMIT, a commit-order
value and the server clock at commit.  Within one name the commit-order value
is the commit order: a holder's rows commit while its fence check blocks any
hand-over, and the next holder writes only after its acquire committed.

Afterwards it checks, per name, over the ledger and acct_log together:
tokens never go backwards in commit order; every acquisition got a token of
its own over all names, and every token in the ledger belongs to one
acquisition (the jumps did happen); no holder committed a write after
a later holder acquired the lease, or after a revoke of its token returned
(server clock): no stale write committed; the ledger and acct_log hold
exactly the writes the clients saw commit (those of ended transactions
only where the session died in COMMIT); stale writes of every shape were
attempted and all rejected with LK001 ("The lease was released." only for a
revoked token); no revoked token was released with true; leases never
overlapped (a revoke ends one); no SQLSTATE but LK001, apart from
transactions ended by a revoke with force that names the process in its
result or by a waiter once the lease's expiry plus the pin grace had
passed (nobody ends a revoke); nothing else went wrong; and the run did
enough work to mean something (revokes with and without force, revokes that
waited, running pinners cancelled and idle ones terminated by waiters,
pinners that committed after their lease expired).  It prints TAP and its
counts (per shape too), and exits 1 on any failure.  The checks are one
function, verify(); the ledger rules it shares with the PgBouncer test and
the HA harness are in test/lib/ledger.py.

Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (the maintenance database),
DLOCK_STRESS_DB (default dlock_stress, dropped and recreated),
DLOCK_STRESS_CLIENTS (10), DLOCK_STRESS_REVOKERS (1), DLOCK_STRESS_SECONDS
(20), DLOCK_STRESS_SEED, DLOCK_EDITION (c or sql: which pin grace to set),
DLOCK_STRESS_KEEP=1 keeps the database and the client logs.
"""

import json
import logging
import multiprocessing
import multiprocessing.connection
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

import psycopg
from psycopg import sql
from psycopg.rows import dict_row

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import (Tap, duplicate_tokens, ended_explained, ledger_matches,  # noqa: E402
                    ledger_schema, leases_never_overlapped, no_release_of_revoked,
                    no_write_after_later_acquire, no_write_after_revoke,
                    revokes_as_releases, tokens_never_go_back, tokens_unique_across_names,
                    us)

DB = os.environ.get("DLOCK_STRESS_DB", "dlock_stress")
CLIENTS = int(os.environ.get("DLOCK_STRESS_CLIENTS", "10"))
SECONDS = float(os.environ.get("DLOCK_STRESS_SECONDS", "20"))
SEED = int(os.environ.get("DLOCK_STRESS_SEED", str(int(time.time() * 1000) % 1000000)))
KEEP = bool(os.environ.get("DLOCK_STRESS_KEEP"))
REVOKERS = int(os.environ.get("DLOCK_STRESS_REVOKERS", "1"))
EDITION = os.environ.get("DLOCK_EDITION", "c")
MERGE = True                    # the server has MERGE (set in main())

NAMES = ("stress/a", "stress/b", "stress/c")
TTL_MS = 150
WAIT_MS = 100
STALL_S = (0.2, 0.4)            # always longer than the TTL
GRACE_S = 15                    # how long clients may take to stop after SECONDS
PIN_GRACE_MS = 150              # dlock.pin_grace, dlock_sql_settings.pin_grace
PIN_S = (0.05, 1.2)             # how long a pinner keeps its transaction open
REVOKE_PAUSE_S = (0.1, 0.4)     # between two revokes of one revoker

# What a holder does with its lease, and how often.
PLANS = (
    ("normal", 54),
    ("creep", 10),
    ("stall_between", 10),
    ("stall_inside", 4),
    ("stale_inside", 4),
    ("drop_between", 3),
    ("drop_inside", 3),
    ("pin_idle", 6),
    ("pin_running", 5),
)

# Write shapes (see the docstring); MERGE only where it exists (main()).
SHAPES = ["insert", "update", "update_token", "writeback", "delete", "upsert",
          "upsert_token", "merge"]
SLOTS = 12                      # acct rows per name

# The least a run must have done for its verdict to mean anything.
MIN_ACCEPTED = 100             # under load on 2 cores a run makes 150 to 1,000
MIN_HOLDERS_PER_NAME = 20

EXPIRED = "The lease expired."
ROW_NEWER = "The row was written with the newer token"
NO_TOKEN = {
    "The UPDATE leaves column \"token\" unchanged, and this transaction has declared no token for the lock.",
    "Column \"token\" is null, and this transaction has declared no token for the lock.",
    "A DELETE carries no token, and this transaction has declared no token for the lock.",
}
NEWER = "The lock has since been acquired with a newer token."
RELEASED = "The lease was released."     # what a revoked token is told


SCHEMA = ledger_schema() + f"""
-- The other shapes change acct; acct_log records each changed row with the
-- writer's token (stress.writer, set by the client in its transaction).
CREATE TABLE acct (
    name        text NOT NULL,
    slot        integer NOT NULL,
    v           integer NOT NULL,
    token       bigint,
    PRIMARY KEY (name, slot)
);

CREATE TABLE acct_log (
    client      text NOT NULL,
    cseq        integer NOT NULL,
    op          text NOT NULL,
    name        text NOT NULL,
    writer      bigint NOT NULL,
    written_us  bigint NOT NULL DEFAULT {us("clock_timestamp()")}
);

CREATE FUNCTION acct_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO acct_log (client, cseq, op, name, writer)
    VALUES (current_setting('stress.client'), current_setting('stress.cseq')::int,
            TG_OP, CASE TG_OP WHEN 'DELETE' THEN OLD.name ELSE NEW.name END,
            current_setting('stress.writer')::bigint);
    RETURN NULL;
END $$;

CREATE FUNCTION acct_commit_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_commit (client, cseq) VALUES (NEW.client, NEW.cseq)
        ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

CREATE TRIGGER acct_1_fence BEFORE INSERT OR UPDATE OR DELETE ON acct
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('name', 'token', 'column');
CREATE TRIGGER acct_2_audit AFTER INSERT OR UPDATE OR DELETE ON acct
    FOR EACH ROW EXECUTE FUNCTION acct_audit();
CREATE CONSTRAINT TRIGGER acct_log_commit AFTER INSERT ON acct_log
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION acct_commit_stamp();
"""


# ---------------------------------------------------------------------------
# The client processes
# ---------------------------------------------------------------------------

class ClientFailure(Exception):
    """Something a client did not expect; it logs it and exits 3."""


class Ended(Exception):
    """A revoke with force or a waiter past the pin grace ended this
    client's transaction (logged); the client drops its holding."""


def now_us():
    """The client's clock as the server's (the same host): microseconds."""
    return int(time.time() * 1000000)


class Client:
    def __init__(self, slot, incarnation, logdir, deadline, seed):
        self.id = f"c{slot:02d}.{incarnation}"
        self.deadline = deadline
        self.rng = random.Random(seed)
        self.cseq = 0
        self.busy = 0
        self.lost = False               # a write of this holding was rejected
        self.fd = os.open(os.path.join(logdir, self.id + ".log"),
                          os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.conn = None
        self.pid = None
        self.held = (None, None)        # the name and token of the last acquire
        self.plans = [p for p, _ in PLANS]
        self.shapes = SHAPES if MERGE else [x for x in SHAPES if x != "merge"]
        self.weights = [w for _, w in PLANS]

    def log(self, ev, **kw):
        """One event, written through to the file before anything else happens."""
        kw["ev"] = ev
        kw["client"] = self.id
        os.write(self.fd, (json.dumps(kw) + "\n").encode())

    def connect(self):
        self.conn = psycopg.connect(
            dbname=DB, autocommit=True, application_name=self.id,
            options="-c statement_timeout=15s")
        self.pid = self.conn.info.backend_pid

    def run(self):
        self.connect()
        self.log("start", pid=self.pid)
        while time.monotonic() < self.deadline:
            try:
                self.cycle()
            except Ended:
                # The holding is dropped, the lease left to expire.
                if self.conn.closed:
                    self.connect()
                    self.log("reconnect", pid=self.pid)
                elif self.conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    self.conn.execute("ROLLBACK")
        self.log("exit", busy=self.busy)
        self.conn.close()

    def ended_how(self, err):
        """How a revoke or a waiter ended this client's transaction, if that
        is what err says: "cancel" (57014 on a cancel request, the
        transaction rolled back) or "terminate" (the session is gone)."""
        if (isinstance(err, psycopg.errors.QueryCanceled) and
                "user request" in (err.diag.message_primary or "")):
            return "cancel"
        if self.conn.broken or isinstance(err, psycopg.errors.AdminShutdown):
            return "terminate"
        return None

    def end(self, how, name, token, cseqs, at_commit):
        """Log the end of a transaction (with the write transactions it
        took along, uncertain when the session died in COMMIT) and leave
        the holding."""
        self.log("ended", how=how, name=name, token=token, pid=self.pid,
                 at_us=now_us(), cseqs=list(cseqs),
                 uncertain=at_commit and how == "terminate")
        raise Ended()

    def refused(self, err, what, name, token, cseqs=(), at_commit=False):
        """err ended a statement that is no write: an end, or a failure."""
        how = self.ended_how(err)
        if how:
            self.end(how, name, token, cseqs, at_commit)
        self.fail(f"{what} with token {token} on {name}", err)

    def fail(self, what, err=None):
        raise ClientFailure(what if err is None else
                            f"{what}: SQLSTATE {err.sqlstate}: {str(err).strip()}")

    def disconnect(self, where, name, token, cseqs=()):
        """Die while holding the lease: the server sees the socket close."""
        self.log("disconnect", where=where, name=name, token=token,
                 cseqs=list(cseqs), busy=self.busy)
        os.kill(os.getpid(), signal.SIGKILL)

    def stall(self, where, name, token):
        secs = self.rng.uniform(*STALL_S)
        self.log("stall", where=where, name=name, token=token, ms=round(secs * 1000))
        time.sleep(secs)

    def next_cseq(self):
        self.cseq += 1
        return self.cseq

    def insert(self, name, token, cseq):
        self.conn.execute(
            "INSERT INTO ledger (name, token, client, cseq) VALUES (%s, %s, %s, %s)",
            (name, token, self.id, cseq))

    def shape_write(self, shape, name, token, cseq, declare=False):
        """One write of the given shape, declared first if declare; returns
        how many rows it changed."""
        if shape == "insert":
            self.insert(name, token, cseq)
            return 1
        self.conn.execute(
            "SELECT set_config('stress.client', %s, true),"
            "       set_config('stress.cseq', %s, true),"
            "       set_config('stress.writer', %s, true)"
            + (", dlock_assert(%s, %s)" if declare else ""),
            (self.id, str(cseq), str(token)) + ((name, token) if declare else ()))
        slot = self.rng.randrange(SLOTS)
        pick = ("(SELECT slot FROM acct WHERE name = %s ORDER BY random() LIMIT 1)")
        if shape == "update":
            q, a = f"UPDATE acct SET v = v + 1 WHERE name = %s AND slot = {pick}", (name, name)
        elif shape == "update_token":
            q, a = (f"UPDATE acct SET v = v + 1, token = %s WHERE name = %s AND slot = {pick}",
                    (token, name, name))
        elif shape == "writeback":
            row = self.conn.execute(
                "SELECT slot, v, token FROM acct WHERE name = %s ORDER BY random() LIMIT 1",
                (name,)).fetchone()
            if row is None:
                return 0
            q, a = ("UPDATE acct SET v = %s, token = %s WHERE name = %s AND slot = %s",
                    (row[1] + 1, row[2], name, row[0]))
        elif shape == "delete":
            q, a = f"DELETE FROM acct WHERE name = %s AND slot = {pick}", (name, name)
        elif shape in ("upsert", "upsert_token"):
            q = ("INSERT INTO acct (name, slot, v, token) VALUES (%s, %s, 1, %s)"
                 " ON CONFLICT (name, slot) DO UPDATE SET v = acct.v + 1"
                 + (", token = excluded.token" if shape == "upsert_token" else ""))
            a = (name, slot, token)
        elif shape == "merge":
            q = ("MERGE INTO acct a USING (VALUES (%s::text, %s::int)) s(name, slot)"
                 " ON a.name = s.name AND a.slot = s.slot"
                 " WHEN MATCHED AND a.v >= 4 THEN DELETE"
                 " WHEN MATCHED THEN UPDATE SET v = a.v + 1"
                 " WHEN NOT MATCHED THEN INSERT (name, slot, v, token)"
                 " VALUES (s.name, s.slot, 1, NULL)")
            a = (name, slot)
        else:
            raise ValueError(shape)
        return self.conn.execute(q, a).rowcount

    def rejected(self, err, name, token, cseqs, kind, shape="insert", at_commit=False):
        """A write (and everything else in its transaction) was refused, or
        its transaction ended."""
        if err.sqlstate != "LK001":
            self.refused(err, f"{kind} {shape} write", name, token, cseqs, at_commit)
        self.lost = True
        self.log("reject", name=name, token=token, cseqs=list(cseqs), kind=kind,
                 shape=shape, detail=err.diag.message_detail)

    def acquire(self, name):
        try:
            with self.conn.transaction():
                token = self.conn.execute(
                    "SELECT dlock_acquire(%s, %s::interval, %s::interval)",
                    (name, f"{TTL_MS} ms", f"{WAIT_MS} ms")).fetchone()[0]
                if token is None:
                    return None
                seen, acquired_us, expires_us = self.conn.execute(
                    f"SELECT token, {us('acquired_at')}, {us('expires_at')}"
                    " FROM dlock_leases WHERE name = %s", (name,)).fetchone()
        except psycopg.Error as err:
            # A signal meant for the last holding's transaction, late.
            self.refused(err, "acquire", *self.held)
        self.held = (name, token)
        # The token is valid from here on: the acquire has committed.
        self.lost = False
        self.log("acquire", name=name, token=token, seen_token=seen,
                 acquired_us=acquired_us, expires_us=expires_us)
        return token

    def release(self, name, token, after_stall):
        try:
            with self.conn.transaction():
                ok = self.conn.execute("SELECT dlock_release(%s, %s)",
                                       (name, token)).fetchone()[0]
                at_us = self.conn.execute(
                    f"SELECT {us('clock_timestamp()')}").fetchone()[0]
        except psycopg.Error as err:
            self.refused(err, "release", name, token)
        self.log("release", name=name, token=token, ok=ok, at_us=at_us,
                 after_stall=after_stall, lost=self.lost)

    def write(self, name, token, kind, declare=True, shape=None):
        """One fenced write (of a random shape unless given) in a transaction
        of its own, declared first unless declare is false; True if it
        committed."""
        cseq = self.next_cseq()
        shape = shape or self.rng.choice(self.shapes)
        at_commit = False
        try:
            with self.conn.transaction():
                rows = self.shape_write(shape, name, token, cseq, declare)
                at_commit = True
        except psycopg.Error as err:
            self.rejected(err, name, token, [cseq], kind, shape, at_commit)
            return False
        self.log("commit", name=name, token=token, cseq=cseq, kind=kind,
                 shape=shape, rows=rows)
        return True

    def writes(self, name, token, low, high):
        for _ in range(self.rng.randint(low, high)):
            if not self.write(name, token, "fresh"):
                return

    def stall_inside(self, name, token, stale):
        """Declare, insert, stall in the open transaction, then commit, or
        write again with a random shape."""
        c1 = self.next_cseq()
        c2 = self.next_cseq() if stale else None
        shape = self.rng.choice(self.shapes)
        stage = "insert"
        rows = 0
        try:
            with self.conn.transaction():
                self.conn.execute("SELECT dlock_assert(%s, %s)", (name, token))
                self.insert(name, token, c1)
                stage = "stall"
                self.stall("inside", name, token)
                if stale:
                    stage = "stale"
                    rows = self.shape_write(shape, name, token, c2)
                stage = "commit"
        except psycopg.Error as err:
            cseqs = [c1] if c2 is None else [c1, c2]
            if stage == "insert":
                self.rejected(err, name, token, [c1], "fresh")
            elif stage == "stale":
                self.rejected(err, name, token, cseqs, "stale_inside", shape)
            else:
                self.refused(err, f"{stage} of a transaction stalled", name, token,
                             cseqs, stage == "commit")
            return
        self.log("commit", name=name, token=token, cseq=c1,
                 kind="held_open" if not stale else "fresh", shape="insert", rows=1)
        if stale:
            self.log("commit", name=name, token=token, cseq=c2, kind="stale_inside",
                     shape=shape, rows=rows)

    def pin(self, name, token, running):
        """Check, write, and keep the transaction open past the lease
        (idle, or running a statement), then commit: a waiter may end it
        once the lease's expiry plus the pin grace has passed, and takes
        the lease only after it ended."""
        cseq = self.next_cseq()
        secs = self.rng.uniform(*PIN_S)
        stage = "check"
        try:
            with self.conn.transaction():
                if not self.conn.execute("SELECT dlock_check(%s, %s)",
                                         (name, token)).fetchone()[0]:
                    return              # the lease ran out already: no pin
                stage = "insert"
                self.insert(name, token, cseq)
                stage = "pin"
                self.log("pin", name=name, token=token, running=running,
                         ms=round(secs * 1000))
                if running:
                    self.conn.execute("SELECT pg_sleep(%s)", (secs,))
                else:
                    time.sleep(secs)
                stage = "commit"
        except psycopg.Error as err:
            if stage in ("check", "insert") and err.sqlstate == "LK001":
                self.rejected(err, name, token, [cseq], "fresh")
            else:
                self.refused(err, f"{stage} of a pinning transaction", name, token,
                             [cseq] if stage != "check" else [], stage == "commit")
            return
        self.log("commit", name=name, token=token, cseq=cseq, kind="pinned",
                 shape="insert", rows=1, at_us=now_us())

    def cycle(self):
        name = self.rng.choice(NAMES)
        token = self.acquire(name)
        if token is None:
            self.busy += 1
            return
        plan = self.rng.choices(self.plans, self.weights)[0]
        if plan == "normal":
            self.writes(name, token, 1, 3)
            self.release(name, token, after_stall=False)
        elif plan == "creep":
            for _ in range(100):
                if not self.write(name, token, "creep"):
                    break
                time.sleep(self.rng.uniform(0.005, 0.03))
            self.release(name, token, after_stall=False)
        elif plan == "stall_between":
            self.writes(name, token, 1, 2)
            self.stall("between", name, token)
            for shape in self.rng.sample(self.shapes, len(self.shapes)):
                self.write(name, token, "stale", declare=False, shape=shape)
            self.release(name, token, after_stall=True)
        elif plan in ("stall_inside", "stale_inside"):
            self.writes(name, token, 0, 1)
            self.stall_inside(name, token, stale=(plan == "stale_inside"))
            self.release(name, token, after_stall=True)
        elif plan in ("pin_idle", "pin_running"):
            self.writes(name, token, 0, 1)
            self.pin(name, token, running=(plan == "pin_running"))
            self.release(name, token, after_stall=False)
        elif plan == "drop_between":
            self.writes(name, token, 0, 2)
            self.disconnect("between", name, token)
        elif plan == "drop_inside":
            self.writes(name, token, 0, 1)
            cseq = self.next_cseq()
            try:
                self.conn.execute("BEGIN")
                self.insert(name, token, cseq)
            except psycopg.Error as err:
                self.rejected(err, name, token, [cseq], "fresh")
                self.conn.execute("ROLLBACK")
                self.disconnect("between", name, token)
            self.disconnect("inside", name, token, [cseq])


def client_main(slot, incarnation, logdir, deadline, seed):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # psycopg warns on stderr when the ROLLBACK after a terminated session
    # fails; the client logs that end itself.
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    logging.getLogger("psycopg").propagate = False
    client = Client(slot, incarnation, logdir, deadline, seed)
    try:
        client.run()
    except ClientFailure as e:
        client.log("error", what=str(e))
        os._exit(3)
    except BaseException as e:
        client.log("error", what=f"{type(e).__name__}: {str(e).strip()}",
                   trace=traceback.format_exc())
        os._exit(4)
    os._exit(0)


# ---------------------------------------------------------------------------
# The supervisor
# ---------------------------------------------------------------------------

def read_log(path):
    events = []
    with open(path) as f:
        for line in f:
            if line.strip():
                events.append(json.loads(line))
    return events


def jumper_main(logdir, deadline, seed):
    """Jump the token counter until deadline (see the docstring); log how
    many jumps of each kind ran."""
    rng = random.Random(seed)
    counts = {"rebase": 0, "setval": 0}
    path = os.path.join(logdir, "jumper.log")
    try:
        with psycopg.connect(dbname=DB, autocommit=True) as conn:
            while time.monotonic() < deadline:
                if rng.random() < 0.5:
                    conn.execute("SELECT dlock_rebase()")
                    counts["rebase"] += 1
                else:
                    conn.execute("SELECT pg_catalog.setval('dlock_token_seq',"
                                 " (SELECT last_value FROM dlock_token_seq) + 1000000000)")
                    conn.execute("SELECT dlock_rebase()")
                    counts["setval"] += 1
                time.sleep(rng.uniform(0.05, 0.15))
        ev = {"ev": "jumps", **counts}
    except Exception:
        ev = {"ev": "error", "client": "jumper", "what": "the jumper failed",
              "trace": traceback.format_exc()}
    with open(path, "w") as f:
        f.write(json.dumps(ev) + "\n")


def revoke_once(conn, rng, idx):
    """One revoke (see the docstring) as an event: what it revoked, the
    processes it waited for and ended, and the server clock before it was
    called and after it returned (before its commit)."""
    name = rng.choice(NAMES)
    token = None
    if rng.random() < 0.5:
        token = conn.execute("SELECT token FROM dlock_leases WHERE name = %s",
                             (name,)).fetchone()
        token = token[0] if token else None
    wait = rng.choice(("0", "50 ms", "300 ms"))
    force = rng.random() < 0.5
    ev = {"ev": "revoke", "client": f"revoker{idx}", "name": name,
          "token": token, "wait": wait, "force": force}
    try:
        with conn.transaction():
            ev["start_us"] = conn.execute(f"SELECT {us('clock_timestamp()')}").fetchone()[0]
            r = conn.execute("SELECT revoked_token, waited_for, ended"
                             "  FROM dlock_revoke(%s, %s, %s::interval, %s)",
                             (name, token, wait, force)).fetchone()
            at_us = conn.execute(f"SELECT {us('clock_timestamp()')}").fetchone()[0]
        ev.update(revoked_token=r[0], waited_for=r[1], ended=r[2], at_us=at_us)
    except psycopg.errors.LockNotAvailable:
        ev.update(revoked_token=None, waited_for=[], ended=[], busy=True)
    except psycopg.OperationalError as err:
        if not conn.broken:
            raise
        # A revoke holds no check protection: nobody may end it.
        ev = {"ev": "error", "client": f"revoker{idx}",
              "what": f"the session of dlock_revoke({name!r}, {token}, {wait!r}, {force}) "
                      f"was ended: {str(err).strip().splitlines()[0]}"}
    return ev


def revoker_main(idx, logdir, deadline, seed):
    """Revoke leases until deadline, logging each revoke (revoke_once)."""
    rng = random.Random(seed)
    path = os.path.join(logdir, f"revoker{idx}.log")
    events = []
    logging.getLogger("psycopg").addHandler(logging.NullHandler())
    logging.getLogger("psycopg").propagate = False
    try:
        conn = None
        while time.monotonic() < deadline:
            if conn is None or conn.closed:
                conn = psycopg.connect(dbname=DB, autocommit=True,
                                       options="-c statement_timeout=15s")
            time.sleep(rng.uniform(*REVOKE_PAUSE_S))
            events.append(revoke_once(conn, rng, idx))
        conn.close()
    except Exception:
        events.append({"ev": "error", "client": f"revoker{idx}",
                       "what": "the revoker failed", "trace": traceback.format_exc()})
    with open(path, "w") as f:
        for ev in events:
            f.write(json.dumps(ev) + "\n")


def run_clients(logdir):
    """Run CLIENTS slots until SECONDS are over, restarting those that drop."""
    ctx = multiprocessing.get_context("fork")
    start = time.monotonic()
    deadline = start + SECONDS
    hard_deadline = deadline + GRACE_S
    running = {}                    # sentinel -> (process, slot, incarnation)
    incarnations = [0] * CLIENTS
    problems = []
    started = 0

    def spawn(slot):
        nonlocal started
        inc = incarnations[slot]
        seed = SEED * 1000003 + slot * 1009 + inc
        p = ctx.Process(target=client_main, args=(slot, inc, logdir, deadline, seed),
                        daemon=True)
        p.start()
        running[p.sentinel] = (p, slot, inc)
        started += 1

    for slot in range(CLIENTS):
        spawn(slot)
    jumper = ctx.Process(target=jumper_main, args=(logdir, deadline, SEED), daemon=True)
    jumper.start()
    revokers = [ctx.Process(target=revoker_main, args=(i, logdir, deadline, SEED * 7 + i),
                            daemon=True) for i in range(REVOKERS)]
    for p in revokers:
        p.start()

    while running:
        ready = multiprocessing.connection.wait(list(running), timeout=0.5)
        for s in ready:
            p, slot, inc = running.pop(s)
            p.join()
            cid = f"c{slot:02d}.{inc}"
            path = os.path.join(logdir, cid + ".log")
            events = read_log(path) if os.path.exists(path) else []
            last = events[-1] if events else {}
            if p.exitcode == -signal.SIGKILL and last.get("ev") == "disconnect":
                if time.monotonic() < deadline:
                    incarnations[slot] += 1
                    spawn(slot)
            elif p.exitcode != 0 or last.get("ev") != "exit":
                problems.append(f"client {cid} exited with code {p.exitcode}, "
                                f"last event {json.dumps(last)}")
        if time.monotonic() > hard_deadline:
            for p, slot, inc in running.values():
                p.kill()
                p.join()
                problems.append(f"client c{slot:02d}.{inc} still running "
                                f"{GRACE_S} s after the end: killed")
            running.clear()
    jumper.join(max(0.0, hard_deadline - time.monotonic()) + 1)
    if jumper.is_alive():
        jumper.kill()
        jumper.join()
        problems.append("the jumper was still running after the end: killed")
    for i, p in enumerate(revokers):
        p.join(max(0.0, hard_deadline - time.monotonic()) + 1)
        if p.is_alive():
            p.kill()
            p.join()
            problems.append(f"revoker {i} was still running after the end: killed")
    return started, time.monotonic() - start, problems


# ---------------------------------------------------------------------------
# The verdict
# ---------------------------------------------------------------------------

def verify(logdir, rows, logrows, started, elapsed, run_problems):
    """The verdict: rows are the ledger's (the insert shape), logrows
    acct_log's (every row the other shapes changed, with the writer's
    token), both with their commit stamps."""
    events = []
    for fn in sorted(os.listdir(logdir)):
        events.extend(read_log(os.path.join(logdir, fn)))
    by = {}
    for e in events:
        by.setdefault(e["ev"], []).append(e)
    acquires = by.get("acquire", [])
    commits = by.get("commit", [])
    rejects = by.get("reject", [])
    releases = by.get("release", [])
    stalls = by.get("stall", [])
    drops = by.get("disconnect", [])
    errors = by.get("error", [])
    busy = sum(e["busy"] for e in by.get("exit", []) + drops)
    revokes = [e for e in by.get("revoke", []) if not e.get("busy")]
    revokes_busy = [e for e in by.get("revoke", []) if e.get("busy")]
    revoked = [e for e in revokes if e["revoked_token"] is not None]
    revoked_tokens = {e["revoked_token"] for e in revoked}
    ended = by.get("ended", [])
    pins = by.get("pin", [])
    ended_by_revoke_pids = {p for e in revokes for p in e["ended"]}
    ended_by_waiter = [e for e in ended if e["pid"] not in ended_by_revoke_pids]

    dup_tokens = duplicate_tokens(acquires)
    jumps = by.get("jumps", [{}])[0]

    def key(client, cseq):
        return (client, cseq)

    shapes = SHAPES if MERGE else [x for x in SHAPES if x != "merge"]
    committed = {key(e["client"], e["cseq"]): e for e in commits
                 if e.get("shape", "insert") == "insert"}
    acommitted = {key(e["client"], e["cseq"]): e for e in commits
                  if e.get("shape", "insert") != "insert" and e["rows"] > 0}
    # Every committed write, whatever its shape, as (name, token, commit stamps).
    allrows = list(rows) + list(logrows)
    refused = {key(e["client"], c): e for e in rejects for c in e["cseqs"]}
    abandoned = {key(e["client"], c): e for e in drops for c in e["cseqs"]}
    abandoned.update({key(e["client"], c): e for e in ended if not e["uncertain"]
                      for c in e["cseqs"]})
    uncertain = {key(e["client"], c) for e in ended if e["uncertain"] for c in e["cseqs"]}

    stale_kinds = ("stale", "stale_inside")
    stale_rejected = [e for e in rejects if e["kind"] in stale_kinds]
    stale_accepted = [e for e in commits if e["kind"] in stale_kinds and e.get("rows", 1) > 0]
    late_rejected = [e for e in rejects if e["kind"] == "fresh"]
    creep_rejected = [e for e in rejects if e["kind"] == "creep"]

    # Counts.
    names = {n: {"rows": 0, "holders": set(), "acquires": 0} for n in NAMES}
    for r in allrows:
        names[r["name"]]["rows"] += 1
        names[r["name"]]["holders"].add(r["token"])
    for e in acquires:
        names[e["name"]]["acquires"] += 1
    attempts = len(commits) + sum(len(e["cseqs"]) for e in rejects) + len(abandoned)
    print(f"# run: {CLIENTS} clients, {len(NAMES)} names, ttl {TTL_MS} ms, "
          f"wait {WAIT_MS} ms, {elapsed:.1f} s, seed {SEED}")
    print(f"# acquisitions: {len(acquires)} (busy acquire calls: {busy})")
    print(f"# jumps during the load: {jumps.get('rebase', 0)} dlock_rebase(), "
          f"{jumps.get('setval', 0)} setval() up then dlock_rebase()")
    print(f"# writes attempted: {attempts}, accepted: {len(commits)} "
          f"(inside a stalled open transaction: "
          f"{sum(1 for e in commits if e['kind'] == 'held_open')}), "
          f"rows in ledger: {len(rows)}")
    print(f"# stale writes rejected with LK001: {len(stale_rejected)} "
          f"(after a stall between transactions: "
          f"{sum(1 for e in stale_rejected if e['kind'] == 'stale')}, "
          f"after a stall inside the transaction: "
          f"{sum(1 for e in stale_rejected if e['kind'] == 'stale_inside')}), "
          f"stale writes accepted: {len(stale_accepted)}")
    print(f"# writes rejected with LK001 without a stall: {len(creep_rejected)} "
          f"from holders writing until their lease ran out "
          f"({sum(1 for e in commits if e['kind'] == 'creep')} accepted before), "
          f"{len(late_rejected)} from others (lease ran out under load)")
    print(f"# stalls: {len(stalls)} (between transactions: "
          f"{sum(1 for e in stalls if e['where'] == 'between')}, "
          f"inside a transaction: {sum(1 for e in stalls if e['where'] == 'inside')})")
    print(f"# disconnects while holding: {len(drops)} (between transactions: "
          f"{sum(1 for e in drops if e['where'] == 'between')}, "
          f"inside a write transaction: {sum(1 for e in drops if e['where'] == 'inside')}); "
          f"client processes started: {started}")
    print(f"# releases: {len(releases)} (true: {sum(1 for e in releases if e['ok'])}, "
          f"false: {sum(1 for e in releases if not e['ok'])}; "
          f"after a stall: {sum(1 for e in releases if e['after_stall'])}, "
          f"after a rejected write: "
          f"{sum(1 for e in releases if e['lost'] and not e['after_stall'])})")
    expires_of = {e["token"]: e["expires_us"] for e in acquires}
    pinned = [e for e in commits if e["kind"] == "pinned"]
    pinned_late = [r for r in rows
                   if committed.get(key(r["client"], r["cseq"]), {}).get("kind") == "pinned"
                   and r["commit_us"] is not None
                   and r["commit_us"] > expires_of.get(r["token"], r["commit_us"])]
    print(f"# revokes: {len(revokes) + len(revokes_busy)} (revoked a lease: {len(revoked)}, "
          f"with force: {sum(1 for e in revoked if e['force'])}; waited for a "
          f"transaction: {sum(1 for e in revokes if e['waited_for'])}; ended one: "
          f"{sum(1 for e in revokes if e['ended'])}; 55P03: {len(revokes_busy)})")
    print(f"# pinning transactions: {len(pins)} (idle: "
          f"{sum(1 for e in pins if not e['running'])}, running: "
          f"{sum(1 for e in pins if e['running'])}); committed: {len(pinned)} "
          f"({len(pinned_late)} after their lease expired)")
    print(f"# transactions ended: {len(ended)} (by a revoke: "
          f"{len(ended) - len(ended_by_waiter)}, by a waiter past the pin grace: "
          f"{len(ended_by_waiter)} ("
          f"{sum(1 for e in ended_by_waiter if e['how'] == 'terminate')} terminated); cancelled: "
          f"{sum(1 for e in ended if e['how'] == 'cancel')}, terminated: "
          f"{sum(1 for e in ended if e['how'] == 'terminate')}, in COMMIT: "
          f"{sum(1 for e in ended if e['uncertain'])})")
    for n, c in names.items():
        print(f"# name {n}: {c['acquires']} acquisitions, {len(c['holders'])} holders "
              f"wrote {c['rows']} rows (ledger and acct_log)")
    for shape in shapes:
        mine = [e for e in commits if e.get("shape", "insert") == shape]
        print(f"# shape {shape}: {len(mine)} committed ("
              f"{sum(1 for e in mine if e.get('rows', 1) == 0)} changed no row), "
              f"stale attempts rejected: "
              f"{sum(1 for e in stale_rejected if e.get('shape', 'insert') == shape)} "
              f"(inside a declared transaction: "
              f"{sum(1 for e in stale_rejected if e.get('shape', 'insert') == shape and e['kind'] == 'stale_inside')}), "
              f"stale accepted: "
              f"{sum(1 for e in stale_accepted if e.get('shape', 'insert') == shape)}, "
              f"other rejections: "
              f"{sum(1 for e in rejects if e.get('shape', 'insert') == shape and e['kind'] not in stale_kinds)}")

    tap = Tap()
    print("1..9")

    # 1. Tokens in commit order never go backwards.
    problems = tokens_never_go_back(allrows, NAMES)
    tap.check("tokens never go backwards in commit order, for every name", problems)

    # 2. No holder writes after a later holder: every committed row of token T
    # committed (server clock) before any later token T' of the name was
    # acquired; and a transaction that passed the fence kept the lease from
    # changing hands while it stayed open.
    problems = no_write_after_later_acquire(allrows, acquires, NAMES)
    problems += no_write_after_revoke(allrows, revoked)
    for e in rejects:
        if e["kind"] == "stale_inside" and e["detail"] != EXPIRED:
            problems.append(f"{e['name']}: stale insert of token {e['token']} inside its "
                            f"own fenced transaction was told {e['detail']!r}, not "
                            f"{EXPIRED!r}: the lease changed hands while the check was open")
    tap.check("no holder wrote after a later holder took the lease or its token was "
              "revoked (server clock)", problems)

    # 3. The ledger holds exactly the writes the clients saw commit.
    problems = ledger_matches(rows, committed, refused=refused, abandoned=abandoned,
                              uncertain=uncertain, acquires=acquires, what="ledger")
    problems += ledger_matches(logrows, acommitted, refused=refused, abandoned=abandoned,
                               uncertain=uncertain, acquires=acquires, what="acct_log")
    tap.check("every write a client saw commit is in the ledger or acct_log, "
              "and nothing else", problems)

    # 4. Stale writes were attempted, and every one was rejected.
    problems = []
    if not stale_rejected:
        problems.append("no stale write was rejected: the test proved nothing")
    for e in stale_accepted:
        problems.append(f"stale write {e['client']}/{e['cseq']} with token {e['token']} "
                        f"on {e['name']} after a {TTL_MS} ms lease and a stall committed")
    for shape in shapes:
        if not any(e.get("shape", "insert") == shape for e in stale_rejected):
            problems.append(f"no stale {shape} write was rejected: that shape was never tried")
    for e in rejects:
        # (stale_inside rejections must say EXPIRED: checked in 2.)
        if e["kind"] == "stale" and e["detail"] in NO_TOKEN:
            continue            # an undeclared write that carries no new token
        if e["detail"] == RELEASED and e["token"] in revoked_tokens:
            continue            # revoked (in a transaction of its own)
        if (e["kind"] != "stale_inside" and e["detail"] not in (EXPIRED, NEWER) and
                not (e["detail"] or "").startswith(ROW_NEWER)):
            problems.append(f"{e['kind']} write {e['client']}/{e['cseqs']} with token "
                            f"{e['token']} on {e['name']} rejected for {e['detail']!r}")
    for e in releases:
        if e["ok"] and (e["after_stall"] or e["lost"]):
            why = "a stall past the lease" if e["after_stall"] else "a rejected write"
            problems.append(f"release of token {e['token']} on {e['name']} after {why} "
                            f"returned true")
    tap.check(f"stale writes were attempted and rejected with LK001: "
              f"{len(stale_rejected)} rejected, {len(stale_accepted)} accepted", problems)

    # 5. Tokens are unique over all names, while the counter jumped.
    problems = list(dup_tokens) + tokens_unique_across_names(allrows)
    if not jumps.get("rebase") or not jumps.get("setval"):
        problems.append(f"the counter did not jump of both kinds during the load: {jumps}")
    tap.check(f"every acquisition got a token of its own, over all names, while the "
              f"counter jumped {jumps.get('rebase', 0) + jumps.get('setval', 0)} times",
              problems)

    # 6. Leases on one name never overlapped; tokens growing with the
    # server clock.
    problems = []
    for e in acquires:
        if e["seen_token"] != e["token"]:
            problems.append(f"{e['name']}: acquire returned token {e['token']}, "
                            f"dlock_leases showed {e['seen_token']} in the same transaction")
    problems += leases_never_overlapped(acquires, releases + revokes_as_releases(revoked),
                                        NAMES)
    tap.check("leases on one name never overlapped, tokens growing "
              "with the server clock", problems)

    # 7. Nothing else happened.
    problems = list(run_problems)
    for e in errors:
        problems.append(f"client {e['client']}: {e['what']}")
        if "trace" in e:
            problems.extend(e["trace"].rstrip().splitlines()[-3:])
    tap.check("no SQLSTATE but LK001 (or a transaction ended, test 8), every client "
              "stopped as planned", problems)

    # 8. Revokes and pinning: each ended transaction was ended by a revoke
    # with force or by a waiter past the lease's expiry plus the pin grace;
    # a revoked token was never released.
    problems = ended_explained(ended, acquires, revokes, PIN_GRACE_MS * 1000)
    problems += no_release_of_revoked(releases, revoked)
    tap.check(f"every transaction ended ({len(ended)}) was ended by a revoke with force "
              f"that names it or past its lease's expiry plus the {PIN_GRACE_MS} ms pin "
              f"grace; no revoked token released", problems)

    # 9. The run did enough for the verdict to mean something.
    problems = []
    if len(commits) < MIN_ACCEPTED:
        problems.append(f"only {len(commits)} accepted writes (want {MIN_ACCEPTED})")
    for n, c in names.items():
        if len(c["holders"]) < MIN_HOLDERS_PER_NAME:
            problems.append(f"{n}: only {len(c['holders'])} holders wrote "
                            f"(want {MIN_HOLDERS_PER_NAME})")
    for shape in shapes:
        if not any(e.get("shape", "insert") == shape and e.get("rows", 1) > 0
                   for e in commits if e["kind"] not in stale_kinds):
            problems.append(f"no {shape} write changed a row")
    for what, count in (
            ("write rejected as the lease ran out while writing", len(creep_rejected)),
            ("stall between transactions",
             sum(1 for e in stalls if e["where"] == "between")),
            ("stall inside a transaction",
             sum(1 for e in stalls if e["where"] == "inside")),
            ("write committed from a stalled open transaction",
             sum(1 for e in commits if e["kind"] == "held_open")),
            ("disconnect between transactions",
             sum(1 for e in drops if e["where"] == "between")),
            ("disconnect inside a write transaction",
             sum(1 for e in drops if e["where"] == "inside")),
            ("lease revoked", len(revoked) if REVOKERS else None),
            ("lease revoked with force", sum(1 for e in revoked if e["force"]) if REVOKERS else None),
            ("revoke that waited for a transaction",
             sum(1 for e in revokes if e["waited_for"]) if REVOKERS else None),
            ("transaction ended by a revoke", len(ended) - len(ended_by_waiter) if REVOKERS else None),
            ("transaction ended by a waiter past the pin grace", len(ended_by_waiter)),
            ("running pinner cancelled",
             sum(1 for e in ended_by_waiter if e["how"] == "cancel")),
            ("idle pinner terminated",
             sum(1 for e in ended_by_waiter if e["how"] == "terminate")),
            ("pinner that committed after its lease expired", len(pinned_late))):
        # None: not asked for (DLOCK_STRESS_REVOKERS=0 runs no revoker)
        if count == 0:
            problems.append(f"no {what}")
    tap.check(f"the run was busy: {len(commits)} accepted writes, "
              f"{len(acquires)} acquisitions, {len(stalls)} stalls, "
              f"{len(drops)} disconnects, {len(revoked)} revokes, "
              f"{len(pins)} pinning transactions", problems)
    return tap.failed


# ---------------------------------------------------------------------------

def install_dlock():
    """DLOCK_EDITION's dlock in DB (test/lib/install_dlock.sh: CREATE
    EXTENSION dlock, or the SQL edition's psql script)."""
    lib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib", "install_dlock.sh")
    r = subprocess.run(["bash", "-c", '. "$0" && install_dlock "$1"', lib, DB],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise psycopg.Error("install_dlock failed: " + (r.stderr or r.stdout))


def set_pin_grace(conn):
    """A short pin grace for every holder: dlock.pin_grace for the database
    (the C edition), dlock_sql_settings.pin_grace (the SQL edition)."""
    if EDITION == "sql":
        conn.execute(f"UPDATE dlock_sql_settings SET pin_grace = '{PIN_GRACE_MS} ms'")
    else:
        conn.execute(sql.SQL("ALTER DATABASE {} SET dlock.pin_grace = {}").format(
            sql.Identifier(DB), sql.Literal(f"{PIN_GRACE_MS}ms")))


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    t0 = time.monotonic()
    logdir = tempfile.mkdtemp(prefix="dlock-fence-stress.")
    touched = False
    try:
        try:
            with psycopg.connect(autocommit=True) as conn:
                touched = True
                conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                             .format(sql.Identifier(DB)))
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
            install_dlock()
            with psycopg.connect(dbname=DB, autocommit=True) as conn:
                conn.execute(SCHEMA)
                global MERGE
                MERGE = conn.info.server_version >= 150000
                set_pin_grace(conn)
        except psycopg.Error as e:
            print("1..1")
            print(f"not ok 1 - set up database {DB}")
            for line in str(e).strip().splitlines():
                print(f"#   {line.strip()}")
            return 1

        started, elapsed, run_problems = run_clients(logdir)

        with psycopg.connect(dbname=DB, autocommit=True) as conn:
            cur = conn.cursor(row_factory=dict_row)
            rows = cur.execute(
                "SELECT l.name, l.token, l.client, l.cseq, l.written_us,"
                "       c.commit_order, c.commit_us"
                "  FROM ledger l LEFT JOIN ledger_commit c USING (client, cseq)").fetchall()
            logrows = cur.execute(
                "SELECT l.name, l.writer AS token, l.client, l.cseq, l.op, l.written_us,"
                "       c.commit_order, c.commit_us"
                "  FROM acct_log l LEFT JOIN ledger_commit c USING (client, cseq)").fetchall()

        failed = verify(logdir, rows, logrows, started, elapsed, run_problems)
        print(f"# {time.monotonic() - t0:.1f} s in all; "
              f"{'all passed' if not failed else f'{failed} failed'}")
        return 1 if failed else 0
    finally:
        if KEEP:
            print(f"# kept database {DB} and client logs in {logdir}")
        else:
            shutil.rmtree(logdir, ignore_errors=True)
        if not KEEP and touched:
            try:
                with psycopg.connect(autocommit=True) as conn:
                    conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                                 .format(sql.Identifier(DB)))
            except psycopg.Error as e:
                print(f"# could not drop database {DB}: {str(e).strip()}")


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main())
