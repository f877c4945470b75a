# Copyright (c) 2026, the dlock developers
"""test/ha/harness.py: dlock on a Patroni + etcd cluster, forced failovers
under a fenced load (make ha-check; docs/ha.md has the figures).

It starts one etcd member (v2 API) and three Patroni members running the
PostgreSQL of PG_CONFIG with dlock installed, on local ports, in a scratch
directory, as the user running it (never root), then:

  phase 1, synchronous_mode: true.  CLIENTS client processes reach the
  primary through a libpq multi-host string (target_session_attrs=read-write)
  and take 1 s leases on 3 names, renew, release, stall past their lease,
  drop their connections, and write fenced rows (dlock_fence trigger) into a
  ledger, while three failovers are forced: SIGKILL of the primary's
  postmaster, "patronictl switchover", and a stall (SIGSTOP of the primary's
  Patroni and of every process of its PostgreSQL past the leader TTL, then
  SIGCONT).  Then the rules of test/lib/ledger.py are checked on the final
  leader's ledger, and one leader at a time.

  phase 2, synchronous_mode: false, maximum_lag_on_failover raised.  The
  walsenders are stopped (SIGSTOP) for a few seconds so that the replicas
  certainly lag, then the primary is killed (its whole process group,
  SIGKILL).  Every token handed out after the failover must be above every
  token handed out before it, and the acknowledged writes that were lost are
  counted (some must be, or the phase tested nothing).

  clients: dlock-run and the Python client (clients/python) hold a lease
  with the multi-host string across a switchover, and keep it when the new
  primary is up within the TTL; with the TTL shorter than the switchover,
  they fail closed (exit 70, dlock.LeaseLost).

It prints TAP, its figures as comments, and last "N passed, N failed"; it
exits 1 on any failure.  Everything it starts runs in process groups it
records; it kills them (and only them) and removes the scratch directory at
the end, and checks that no process of the scratch directory is left.

Environment: PG_CONFIG (default Debian's 15), DLOCK_HA_PORT (58000: it uses
PORT+1..PORT+2 for etcd, PORT+10..12 for PostgreSQL, PORT+20..22 for the
Patroni REST API), DLOCK_HA_CLIENTS (12), DLOCK_HA_KEEP=1 keeps the scratch
directory, DLOCK_HA_SKIP (phase1 phase2 clients: parts not to run),
DLOCK_HA_SEED.
"""

import json
import logging
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request

import psycopg

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ledger  # noqa: E402

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
PG_CONFIG = os.environ.get("PG_CONFIG") or "/usr/lib/postgresql/15/bin/pg_config"
BASE = int(os.environ.get("DLOCK_HA_PORT", "58000"))
CLIENTS = int(os.environ.get("DLOCK_HA_CLIENTS", "12"))
KEEP = bool(os.environ.get("DLOCK_HA_KEEP"))
SKIP = os.environ.get("DLOCK_HA_SKIP", "").split()
SEED = int(os.environ.get("DLOCK_HA_SEED", str(int(time.time() * 1000) % 1000000)))

SCOPE = "dlock-ha"
MEMBERS = ("pg1", "pg2", "pg3")
ETCD_PORT, ETCD_PEER = BASE + 1, BASE + 2
PG_PORT = {m: BASE + 10 + i for i, m in enumerate(MEMBERS)}
REST_PORT = {m: BASE + 20 + i for i, m in enumerate(MEMBERS)}
DB = "ha"

# Patroni's timing, tuned down so that a failover takes seconds: the leader
# key lives TTL seconds; each member runs its loop every LOOP_WAIT seconds;
# DCS and PostgreSQL calls are retried RETRY_TIMEOUT seconds (loop_wait +
# 2 * retry_timeout must stay within the TTL).
TTL, LOOP_WAIT, RETRY_TIMEOUT = 8, 1, 3

NAMES = ("ha/a", "ha/b", "ha/c")
LEASE_TTL = 1.0                 # seconds
WAIT = 0.2
STALL_S = (1.2, 1.6)            # a client's stall: always past its lease
PLANS = (("normal", 64), ("renew", 14), ("stall", 12), ("drop", 10))
LOAD_BEFORE = 4                 # seconds of load before each failover

CONNINFO = (f"host={','.join('127.0.0.1' for _ in MEMBERS)} "
            f"port={','.join(str(PG_PORT[m]) for m in MEMBERS)} "
            f"dbname={DB} target_session_attrs=read-write connect_timeout=2")

EXPIRED = "The lease expired."
NEWER = "The lock has since been acquired with a newer token."


SCHEMA = "CREATE EXTENSION dlock;\n" + ledger.ledger_schema("\n    phase       integer NOT NULL,") + f"""
-- A counter per name, written without changing its token: such a write
-- needs dlock_assert first (docs/fencing.md).
CREATE TABLE acct (name text PRIMARY KEY, v bigint NOT NULL, token bigint);
CREATE TRIGGER acct_fence BEFORE INSERT OR UPDATE OR DELETE ON acct
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('name', 'token', 'column');
"""


def say(msg):
    print(f"# {msg}", flush=True)


# ---------------------------------------------------------------------------
# The cluster
# ---------------------------------------------------------------------------

class Cluster:
    """One etcd member and three Patroni members under one scratch directory;
    every process it starts leads a process group of its own, recorded here."""

    def __init__(self, scratch):
        self.dir = scratch
        self.bindir = subprocess.check_output([PG_CONFIG, "--bindir"], text=True).strip()
        self.procs = {}                 # label -> Popen
        self.user = subprocess.check_output(["id", "-un"], text=True).strip()
        self.env = {"PATH": f"{self.bindir}:/usr/local/bin:/usr/bin:/bin",
                    "HOME": scratch, "LANG": "C.UTF-8", "PGCONNECT_TIMEOUT": "2"}

    def spawn(self, label, argv):
        log = open(os.path.join(self.dir, f"{label}.log"), "ab")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                             env=self.env, start_new_session=True)
        log.close()
        self.procs[label] = p
        return p

    def start_etcd(self):
        self.spawn("etcd", [
            "etcd", "--name", "e1", "--data-dir", os.path.join(self.dir, "etcd"),
            "--listen-client-urls", f"http://127.0.0.1:{ETCD_PORT}",
            "--advertise-client-urls", f"http://127.0.0.1:{ETCD_PORT}",
            "--listen-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{ETCD_PEER}",
            "--initial-cluster", f"e1=http://127.0.0.1:{ETCD_PEER}",
            "--enable-v2=true"])
        wait_for(lambda: http_get(f"http://127.0.0.1:{ETCD_PORT}/health"), 30,
                 "etcd to answer")

    def config(self, m):
        return os.path.join(self.dir, f"{m}.yml")

    def write_config(self, m):
        """Patroni's configuration (JSON is YAML); bootstrap.dcs is read by
        whichever member initialises the cluster."""
        home = os.path.join(self.dir, m)
        os.makedirs(home, exist_ok=True)
        conf = {
            "scope": SCOPE,
            "name": m,
            "restapi": {"listen": f"127.0.0.1:{REST_PORT[m]}",
                        "connect_address": f"127.0.0.1:{REST_PORT[m]}"},
            "etcd": {"host": f"127.0.0.1:{ETCD_PORT}"},
            "bootstrap": {
                "dcs": {
                    "ttl": TTL, "loop_wait": LOOP_WAIT, "retry_timeout": RETRY_TIMEOUT,
                    "maximum_lag_on_failover": 1048576,
                    "synchronous_mode": True,
                    # Fail over at once when the primary's PostgreSQL dies,
                    # instead of restarting it in place.
                    "primary_start_timeout": 0,
                    "postgresql": {
                        "use_pg_rewind": True,
                        "remove_data_directory_on_rewind_failure": True,
                        "remove_data_directory_on_diverged_timelines": True,
                        "use_slots": True,
                        "parameters": {
                            "wal_log_hints": "on",
                            "fsync": "off",
                            "max_connections": 100,
                            "wal_keep_size": "128MB",
                        },
                    },
                },
                "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
                "pg_hba": ["local all all trust",
                           "host all all 127.0.0.1/32 trust",
                           "host replication all 127.0.0.1/32 trust"],
            },
            "postgresql": {
                "listen": f"127.0.0.1:{PG_PORT[m]}",
                "connect_address": f"127.0.0.1:{PG_PORT[m]}",
                "data_dir": os.path.join(home, "data"),
                "bin_dir": self.bindir,
                "pgpass": os.path.join(home, "pgpass"),
                "authentication": {
                    "superuser": {"username": self.user, "password": "x"},
                    "replication": {"username": "replicator", "password": "x"},
                    "rewind": {"username": self.user, "password": "x"},
                },
                "parameters": {"unix_socket_directories": home},
            },
            "tags": {"nofailover": False, "noloadbalance": False,
                     "clonefrom": False, "nosync": False},
        }
        with open(self.config(m), "w") as f:
            json.dump(conf, f, indent=1)

    def start_member(self, m):
        self.write_config(m)
        self.spawn(m, ["patroni", self.config(m)])

    def postmaster(self, m):
        """The postmaster's PID (it leads its PostgreSQL's process group:
        Patroni starts it in a session of its own), or None."""
        try:
            with open(os.path.join(self.dir, m, "data", "postmaster.pid")) as f:
                pid = int(f.readline())
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError):
            return None

    def members(self):
        """Patroni's view of the cluster, from the first member that answers."""
        for m in MEMBERS:
            got = http_get(f"http://127.0.0.1:{REST_PORT[m]}/cluster", timeout=1)
            if got:
                try:
                    return json.loads(got)["members"]
                except (ValueError, KeyError):
                    pass
        return []

    def leader(self):
        """The member holding the leader key in etcd, or None."""
        got = http_get(f"http://127.0.0.1:{ETCD_PORT}/v2/keys/service/{SCOPE}/leader",
                       timeout=1)
        if got:
            try:
                return json.loads(got)["node"]["value"]
            except (ValueError, KeyError):
                pass
        return None

    def healthy(self, sync):
        """Three members running, one leader accepting writes, the others
        replicas (one of them synchronous when sync)."""
        ms = self.members()
        if len(ms) != 3 or any(x.get("state") not in ("running", "streaming") for x in ms):
            return False
        roles = sorted(x.get("role") for x in ms)
        leader = self.leader()
        if leader is None or not any(x["name"] == leader and x["role"] == "leader" for x in ms):
            return False
        if sync and "sync_standby" not in roles:
            return False
        if not sync and "sync_standby" in roles:
            return False
        try:
            with psycopg.connect(CONNINFO.replace(f"dbname={DB}", "dbname=postgres"),
                                 autocommit=True) as c:
                lag_ok = c.execute(
                    "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'"
                ).fetchone()[0] == 2
            return lag_ok
        except psycopg.Error:
            return False

    def wait_healthy(self, sync, limit=120):
        return wait_for(lambda: self.healthy(sync), limit,
                        f"the cluster to be healthy ({'sync' if sync else 'async'})")

    def patronictl(self, *args):
        return subprocess.run(["patronictl", "-c", self.config(MEMBERS[0]), *args],
                              env=self.env, cwd=self.dir, capture_output=True, text=True,
                              timeout=90)

    def signal_member(self, m, sig, postgres=True, patroni=True):
        """Signal a member's Patroni (its process group) and every process
        of its PostgreSQL (the postmaster and its children)."""
        if patroni:
            os.killpg(self.procs[m].pid, sig)
        pm = self.postmaster(m) if postgres else None
        if pm is not None:
            signal_postgres(pm, sig)
        return pm

    def teardown(self):
        """Stop everything this harness started, by process group: Patroni
        members first (SIGTERM stops their PostgreSQL), then anything left,
        etcd last."""
        pms = {m: self.postmaster(m) for m in MEMBERS}
        for m in MEMBERS:
            p = self.procs.get(m)
            if p is not None and p.poll() is None:
                for sig in (signal.SIGCONT, signal.SIGTERM):
                    try:
                        os.killpg(p.pid, sig)
                    except OSError:
                        pass
        deadline = time.monotonic() + 20
        for m in MEMBERS:
            p = self.procs.get(m)
            if p is not None:
                try:
                    p.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
        for m in MEMBERS:
            for pid in {pms[m], self.postmaster(m)}:
                if pid is not None:
                    signal_postgres(pid, signal.SIGKILL)
        for label, p in self.procs.items():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()

    def leftovers(self):
        """Processes whose command line names the scratch directory."""
        left = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read()
            except OSError:
                continue
            if self.dir in cmd or f"HOME={self.dir}".encode() in env:
                left.append((int(pid), cmd.strip()[:120]))
        return left


def children(pid):
    """The PIDs whose parent is pid."""
    kids = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    st = f.read()
                if int(st[st.rindex(")") + 2:].split()[1]) == pid:
                    kids.append(int(d))
            except (OSError, ValueError):
                pass
    return kids


def signal_postgres(pm, sig):
    """Signal a postmaster and its children (backends, walsenders, ...).
    Patroni starts the postmaster in a session of its own, but a postmaster
    it restarted after pg_rewind need not lead a process group: signal the
    processes one by one.  Stopped first, the postmaster can start none."""
    for pid in [pm] + children(pm):
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def http_get(url, timeout=2):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode()
    except Exception:
        return None


def wait_for(cond, limit, what):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if cond():
                return True
        except Exception:
            pass
        time.sleep(0.25)
    raise HarnessError(f"timed out after {limit} s waiting for {what}")


class HarnessError(Exception):
    pass


# ---------------------------------------------------------------------------
# The clients
# ---------------------------------------------------------------------------

class Client:
    """One client process: leases and fenced writes through the multi-host
    string; every event goes to its own log file, written through."""

    def __init__(self, slot, phase, logdir, halt, seed):
        self.id = f"p{phase}c{slot:02d}"
        self.phase = phase
        self.halt = halt
        self.rng = random.Random(seed)
        self.cseq = 0
        self.conn = None
        self.fd = os.open(os.path.join(logdir, self.id + ".log"),
                          os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def log(self, ev, **kw):
        kw["ev"] = ev
        kw["client"] = self.id
        kw["t"] = time.monotonic()
        os.write(self.fd, (json.dumps(kw) + "\n").encode())

    def connect(self):
        while not self.halt.is_set():
            t0 = time.monotonic()
            try:
                self.conn = psycopg.connect(CONNINFO, autocommit=True,
                                            application_name=self.id)
                self.log("connect", port=self.conn.info.port,
                         waited=round(time.monotonic() - t0, 3))
                return True
            except psycopg.OperationalError:
                time.sleep(0.1)
        return False

    def broken(self, what, **kw):
        """The connection broke (a failover): say where, and start over."""
        self.log("broken", what=what, **kw)
        try:
            self.conn.close()
        except Exception:
            pass
        self.conn = None

    def run(self):
        self.log("start")
        while not self.halt.is_set():
            if self.conn is None and not self.connect():
                break
            try:
                self.cycle()
            except psycopg.OperationalError as e:
                self.broken("cycle", error=str(e).strip()[:200])
        self.log("exit")
        if self.conn is not None:
            self.conn.close()

    def acquire(self, name):
        begin = time.monotonic()
        try:
            with self.conn.transaction():
                token = self.conn.execute(
                    "SELECT dlock_acquire(%s, %s::interval, %s::interval)",
                    (name, f"{LEASE_TTL} s", f"{WAIT} s")).fetchone()[0]
                if token is None:
                    return None
                acquired_us, expires_us = self.conn.execute(
                    f"SELECT {ledger.us('acquired_at')}, {ledger.us('expires_at')}"
                    " FROM dlock_leases WHERE name = %s", (name,)).fetchone()
        except psycopg.OperationalError as e:
            self.broken("acquire", name=name, error=str(e).strip()[:200])
            return None
        self.log("acquire", name=name, token=token, acquired_us=acquired_us,
                 expires_us=expires_us, begin=begin, end=time.monotonic(),
                 port=self.conn.info.port)
        return token

    def write(self, name, token, kind, declare=True):
        """One fenced write transaction: a ledger row carrying the token,
        and now and then a counter update that leaves the token alone
        (declared with dlock_assert first).  True if it committed."""
        self.cseq += 1
        cseq = self.cseq
        stage = "body"
        sent = time.monotonic()
        try:
            with self.conn.transaction():
                if declare and self.rng.random() < 0.3:
                    self.conn.execute("SELECT dlock_assert(%s, %s)", (name, token))
                    self.conn.execute(
                        "INSERT INTO acct VALUES (%s, 1, %s)"
                        " ON CONFLICT (name) DO UPDATE SET v = acct.v + 1", (name, token))
                self.conn.execute(
                    "INSERT INTO ledger (name, token, client, cseq, phase)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (name, token, self.id, cseq, self.phase))
                stage = "commit"
        except psycopg.OperationalError as e:
            # Broken before COMMIT: it cannot have committed; during: unknown.
            self.log("uncertain" if stage == "commit" else "aborted", name=name,
                     token=token, cseqs=[cseq], kind=kind)
            self.broken("write", error=str(e).strip()[:200])
            raise LostConnection()
        except psycopg.Error as e:
            if e.sqlstate != "LK001":
                self.log("error", what=f"{kind} write: SQLSTATE {e.sqlstate}: "
                         f"{str(e).strip()[:300]}")
            self.log("reject", name=name, token=token, cseqs=[cseq], kind=kind,
                     detail=e.diag.message_detail, sqlstate=e.sqlstate)
            return False
        self.log("commit", name=name, token=token, cseq=cseq, kind=kind, sent=sent,
                 port=self.conn.info.port)
        return True

    def release(self, name, token, after_stall):
        try:
            ok = self.conn.execute("SELECT dlock_release(%s, %s)", (name, token)).fetchone()[0]
        except psycopg.OperationalError as e:
            self.broken("release", error=str(e).strip()[:200])
            raise LostConnection()
        self.log("release", name=name, token=token, ok=ok, after_stall=after_stall)

    def cycle(self):
        name = self.rng.choice(NAMES)
        token = self.acquire(name)
        if token is None:
            return
        plan = self.rng.choices([p for p, _ in PLANS], [w for _, w in PLANS])[0]
        try:
            if plan == "normal":
                for _ in range(self.rng.randint(1, 3)):
                    if not self.write(name, token, "fresh"):
                        break
                self.release(name, token, False)
            elif plan == "renew":
                self.write(name, token, "fresh")
                try:
                    ok = self.conn.execute("SELECT dlock_renew(%s, %s, %s::interval)",
                                           (name, token, f"{LEASE_TTL} s")).fetchone()[0]
                except psycopg.OperationalError as e:
                    self.broken("renew", error=str(e).strip()[:200])
                    return
                self.log("renew", name=name, token=token, ok=ok)
                if ok:
                    self.write(name, token, "fresh")
                self.release(name, token, False)
            elif plan == "stall":
                self.write(name, token, "fresh")
                secs = self.rng.uniform(*STALL_S)
                self.log("stall", name=name, token=token, ms=round(secs * 1000))
                time.sleep(secs)
                self.write(name, token, "stale", declare=False)
                self.release(name, token, True)
            elif plan == "drop":
                self.write(name, token, "fresh")
                self.log("drop", name=name, token=token)
                self.conn.close()
                self.conn = None
        except LostConnection:
            pass


class LostConnection(Exception):
    pass


def client_main(slot, phase, logdir, halt, seed):
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # psycopg warns on stderr when a rollback finds the connection gone:
    # expected here, and logged as "broken" by the client.
    logging.getLogger("psycopg").setLevel(logging.ERROR)
    c = Client(slot, phase, logdir, halt, seed)
    try:
        c.run()
    except BaseException as e:
        c.log("error", what=f"{type(e).__name__}: {str(e).strip()[:300]}",
              trace=traceback.format_exc()[-1500:])
        os._exit(4)
    os._exit(0)


class Load:
    """CLIENTS client processes of one phase, until stop()."""

    def __init__(self, phase, logdir):
        self.phase = phase
        self.logdir = logdir
        self.procs = []

    def start(self):
        ctx = multiprocessing.get_context("fork")
        self.halt = ctx.Event()
        for slot in range(CLIENTS):
            p = ctx.Process(target=client_main,
                            args=(slot, self.phase, self.logdir, self.halt,
                                  SEED * 1009 + self.phase * 101 + slot), daemon=True)
            p.start()
            self.procs.append(p)

    def stop(self, grace=30):
        """Tell the clients to stop after their current cycle; kill those
        that do not within grace seconds."""
        self.halt.set()
        end = time.monotonic() + grace
        for p in self.procs:
            p.join(max(0.1, end - time.monotonic()))
        problems = []
        for p in self.procs:
            if p.is_alive():
                p.kill()
                p.join()
                problems.append(f"client process {p.pid} still running: killed")
            elif p.exitcode != 0:
                problems.append(f"client process {p.pid} exited with code {p.exitcode}")
        return problems

    def events(self):
        ev = []
        for fn in sorted(os.listdir(self.logdir)):
            if fn.startswith(f"p{self.phase}c"):
                with open(os.path.join(self.logdir, fn)) as f:
                    ev.extend(json.loads(line) for line in f if line.strip())
        return ev


class LeaderWatch(threading.Thread):
    """Samples the leader key every 0.1 s: the DCS's leaders in order."""

    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.seen = []                  # (monotonic time, leader)
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            leader = self.cluster.leader()
            if leader is not None and (not self.seen or self.seen[-1][1] != leader):
                self.seen.append((time.monotonic(), leader))
            self.halt.wait(0.1)


# ---------------------------------------------------------------------------
# Failovers
# ---------------------------------------------------------------------------

def new_leader(cluster, old, limit=60):
    wait_for(lambda: cluster.leader() not in (None, old), limit,
             f"a leader other than {old}")
    return cluster.leader()


def fail_kill(cluster, group=False):
    """SIGKILL of the primary's postmaster (group: of all of its processes)."""
    old = cluster.leader()
    pm = cluster.postmaster(old)
    t = time.monotonic()
    if group:
        signal_postgres(pm, signal.SIGKILL)
    else:
        os.kill(pm, signal.SIGKILL)
    new = new_leader(cluster, old)
    return {"kind": "kill" if not group else "kill (whole group)", "old": old,
            "new": new, "t": t, "dcs_s": time.monotonic() - t}


def fail_switchover(cluster):
    """patronictl switchover to the synchronous standby (or a replica)."""
    old = cluster.leader()
    ms = [m for m in cluster.members() if m["name"] != old]
    syncs = [m["name"] for m in ms if m["role"] == "sync_standby"]
    cand = syncs[0] if syncs else ms[0]["name"]
    t = time.monotonic()
    r = cluster.patronictl("switchover", SCOPE, "--leader", old, "--candidate", cand,
                           "--force")
    if r.returncode != 0:
        raise HarnessError(f"patronictl switchover failed: {r.stdout} {r.stderr}")
    new = new_leader(cluster, old)
    return {"kind": "switchover", "old": old, "new": new, "t": t,
            "dcs_s": time.monotonic() - t}


def fail_stall(cluster):
    """SIGSTOP of the primary's Patroni and PostgreSQL past the leader TTL."""
    old = cluster.leader()
    t = time.monotonic()
    cluster.signal_member(old, signal.SIGSTOP)
    try:
        new = new_leader(cluster, old, limit=TTL + 30)
        dcs = time.monotonic() - t
        time.sleep(2)
    finally:
        cluster.signal_member(old, signal.SIGCONT)
    return {"kind": "stall", "old": old, "new": new, "t": t, "dcs_s": dcs,
            "stopped_s": time.monotonic() - t}


def window(commits, t, until):
    """The unavailability window of a failover forced at t: the longest time
    without an acknowledged write between the last one before t and the
    next failover (until)."""
    acks = sorted(e["t"] for e in commits if t - 10 <= e["t"] < until)
    before = [x for x in acks if x <= t]
    after = [x for x in acks if x > t]
    if not after:
        return None
    gap, prev = 0.0, before[-1] if before else t
    for x in after:
        gap = max(gap, x - prev)
        prev = x
    return gap


# ---------------------------------------------------------------------------
# Reading the ledger and checking it
# ---------------------------------------------------------------------------

def read_ledger(phase):
    with psycopg.connect(CONNINFO, autocommit=True) as c:
        c.row_factory = psycopg.rows.dict_row
        return c.execute(
            "SELECT l.name, l.token, l.client, l.cseq, l.written_us,"
            "       c.commit_order, c.commit_us"
            "  FROM ledger l LEFT JOIN ledger_commit c USING (client, cseq)"
            " WHERE l.phase = %s", (phase,)).fetchall()


def by_ev(events):
    by = {}
    for e in events:
        by.setdefault(e["ev"], []).append(e)
    return by


def keys(evs):
    return {(e["client"], c) for e in evs for c in e["cseqs"]}


def check_phase1(tap, load, failovers, leaders, run_problems):
    """The checks of phase 1, on the final leader's ledger and the clients'
    logs: the figures first, then one TAP line per rule (long, but a list)."""
    events = load.events()
    by = by_ev(events)
    acquires, commits = by.get("acquire", []), by.get("commit", [])
    rejects, uncertain = by.get("reject", []), by.get("uncertain", [])
    aborted, errors = by.get("aborted", []), by.get("error", [])
    rows = read_ledger(1)
    committed = {(e["client"], e["cseq"]): e for e in commits}
    stale = [e for e in rejects if e["kind"] == "stale"]
    stale_ok = [e for e in commits if e["kind"] == "stale"]
    elapsed = max(e["t"] for e in events) - min(e["t"] for e in events)
    say(f"phase 1: {CLIENTS} clients, {elapsed:.1f} s, {len(acquires)} leases, "
        f"{len(commits)} acknowledged writes ({len(commits) / elapsed:.1f}/s), "
        f"{len(rows)} ledger rows, {len(rejects)} rejected with LK001 "
        f"({len(stale)} stale after a stall), {len(uncertain)} with an unknown "
        f"outcome (connection lost at COMMIT), {len(aborted)} cut off before COMMIT, "
        f"{len(by.get('broken', []))} broken connections, {len(by.get('drop', []))} "
        f"dropped on purpose, {len(by.get('renew', []))} renewals, "
        f"{len(by.get('stall', []))} stalls")
    for f, nxt in zip(failovers, failovers[1:] + [None]):
        w = window(commits, f["t"], nxt["t"] if nxt else float("inf"))
        f["window"] = w
        say(f"failover {f['kind']}: {f['old']} -> {f['new']}, new leader key after "
            f"{f['dcs_s']:.1f} s, no acknowledged write for "
            f"{'?' if w is None else f'{w:.1f}'} s")
    tap.check("phase 1: every write a client saw commit is in the final leader's "
              "ledger, nothing a client saw refused",
              ledger.ledger_matches(rows, committed, refused=keys(rejects),
                                    abandoned=keys(aborted), uncertain=keys(uncertain),
                                    acquires=acquires))
    tap.check("phase 1: per name, tokens never go back in ledger order",
              ledger.tokens_never_go_back(rows, NAMES))
    tap.check("phase 1: no write accepted after a higher token of its name was acquired",
              ledger.no_write_after_later_acquire(rows, acquires, NAMES))
    tap.check("phase 1: no token handed out twice", ledger.duplicate_tokens(acquires))
    tap.check("phase 1: an acquire that began after another returned got a higher token",
              ledger.acquire_order(acquires))
    problems, order = ledger.one_leader_at_a_time(
        [(e["t"], e["port"]) for e in commits], [PG_PORT[m] for _, m in leaders])
    tap.check(f"phase 1: one leader at a time (writes acknowledged by ports {order}, "
              f"DCS leaders {[m for _, m in leaders]})", problems)
    problems = list(run_problems)
    problems += [f"client {e['client']}: {e['what']}" for e in errors]
    problems += [f"stale write of token {e['token']} on {e['name']} committed"
                 for e in stale_ok]
    problems += [f"{e['kind']} write rejected for {e['detail']!r}" for e in rejects
                 if e["detail"] not in (EXPIRED, NEWER)]
    kinds = {f["kind"] for f in failovers}
    for k in ("kill", "switchover", "stall"):
        if k not in kinds:
            problems.append(f"no {k} failover")
    if len(commits) < 300:
        problems.append(f"only {len(commits)} acknowledged writes")
    if not stale:
        problems.append("no stale write was rejected")
    for f in failovers:
        if f.get("window") is None:
            problems.append(f"no write acknowledged after the {f['kind']} failover")
    tap.check(f"phase 1: the load ran through {len(failovers)} failovers "
              f"({', '.join(f['kind'] for f in failovers)}), stale writes rejected, "
              f"only LK001 errors", problems)


def check_phase2(tap, load, failover, run_problems):
    events = load.events()
    by = by_ev(events)
    acquires, commits = by.get("acquire", []), by.get("commit", [])
    uncertain = by.get("uncertain", [])
    rows = read_ledger(2)
    t = failover["t"]
    before = [e for e in acquires if e["end"] < t]
    after = [e for e in acquires if e["begin"] > t]
    in_ledger = {(r["client"], r["cseq"]) for r in rows}
    lost = [e for e in commits if (e["client"], e["cseq"]) not in in_ledger]
    lost_tokens = {e["token"] for e in lost}
    elapsed = max(e["t"] for e in events) - min(e["t"] for e in events)
    w = window(commits, t, float("inf"))
    failover["window"] = w
    say(f"phase 2: {len(acquires)} leases ({len(before)} before the failover, "
        f"{len(after)} after), {len(commits)} acknowledged writes "
        f"({len(commits) / elapsed:.1f}/s), {len(rows)} ledger rows, lost: "
        f"{len(lost)} acknowledged writes of {len(lost_tokens)} leases; {len(uncertain)} "
        f"with an unknown outcome")
    say(f"failover {failover['kind']} with lagging replicas: {failover['old']} -> "
        f"{failover['new']}, new leader key after {failover['dcs_s']:.1f} s, no "
        f"acknowledged write for {'?' if w is None else f'{w:.1f}'} s; lag at the kill: "
        f"{failover.get('lag')}")
    problems = []
    if before and after:
        hi = max(before, key=lambda e: e["token"])
        lo = min(after, key=lambda e: e["token"])
        if lo["token"] <= hi["token"]:
            problems.append(f"token {lo['token']} handed out after the failover, not above "
                            f"token {hi['token']} handed out before it")
        say(f"highest token before the failover {hi['token']}, lowest after {lo['token']}")
    else:
        problems.append(f"{len(before)} acquires before the failover, {len(after)} after")
    tap.check("phase 2: every token handed out after the failover is above every token "
              "handed out before it", problems)
    tap.check("phase 2: no token handed out twice", ledger.duplicate_tokens(acquires))
    problems = list(run_problems)
    problems += [f"client {e['client']}: {e['what']}" for e in by.get("error", [])]
    if not lost:
        problems.append("no acknowledged write was lost: the replicas did not lag, "
                        "the phase tested nothing")
    tap.check(f"phase 2: acknowledged writes lost with the asynchronous failover: "
              f"{len(lost)} (some must be)", problems)


# ---------------------------------------------------------------------------
# The phases
# ---------------------------------------------------------------------------

def phase1(tap, cluster, logdir):
    """Synchronous mode: the load, three failovers of different kinds, each
    once the cluster is healthy again (a synchronous standby to fail over
    to), then the checks."""
    leaders = LeaderWatch(cluster)
    leaders.start()
    load = Load(1, logdir)
    load.start()
    failovers = []
    problems = []
    try:
        for kind in ("kill", "switchover", "stall"):
            time.sleep(LOAD_BEFORE)
            say(f"phase 1: forcing a {kind} failover (leader {cluster.leader()})")
            f = {"kill": fail_kill, "switchover": fail_switchover,
                 "stall": fail_stall}[kind](cluster)
            failovers.append(f)
            cluster.wait_healthy(sync=True)
            say(f"phase 1: {kind}: healthy again after {time.monotonic() - f['t']:.1f} s "
                f"(new leader {f['new']})")
            f["healthy_s"] = time.monotonic() - f["t"]
        time.sleep(LOAD_BEFORE)
    finally:
        problems += load.stop()
        leaders.halt.set()
        leaders.join()
    check_phase1(tap, load, failovers, leaders.seen, problems)
    return failovers


def phase2(tap, cluster, logdir):
    """Asynchronous: lagging replicas made certain, the primary killed."""
    r = cluster.patronictl("edit-config", SCOPE, "--force",
                           "--set", "synchronous_mode=false",
                           "--set", "maximum_lag_on_failover=1073741824")
    if r.returncode != 0:
        raise HarnessError(f"patronictl edit-config failed: {r.stdout} {r.stderr}")
    cluster.wait_healthy(sync=False)
    wait_for(lambda: psycopg.connect(CONNINFO, autocommit=True).execute(
        "SHOW synchronous_standby_names").fetchone()[0] == "", 30,
        "synchronous_standby_names to be empty")
    load = Load(2, logdir)
    load.start()
    problems = []
    try:
        time.sleep(LOAD_BEFORE)
        old = cluster.leader()
        with psycopg.connect(f"host=127.0.0.1 port={PG_PORT[old]} dbname={DB}",
                             autocommit=True) as c:
            walsenders = [r[0] for r in c.execute(
                "SELECT pid FROM pg_stat_replication").fetchall()]
        say(f"phase 2: stopping the walsenders of {old} ({len(walsenders)})")
        for pid in walsenders:
            os.kill(pid, signal.SIGSTOP)
        time.sleep(3)
        with psycopg.connect(f"host=127.0.0.1 port={PG_PORT[old]} dbname={DB}",
                             autocommit=True) as c:
            lag = c.execute(
                "SELECT max(pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn))::bigint"
                "  FROM pg_stat_replication").fetchone()[0]
        say(f"phase 2: replicas {lag} bytes behind; killing {old}")
        f = fail_kill(cluster, group=True)
        f["lag"] = lag
        cluster.wait_healthy(sync=False)
        f["healthy_s"] = time.monotonic() - f["t"]
        time.sleep(LOAD_BEFORE)
    finally:
        problems += load.stop()
    check_phase2(tap, load, f, problems)
    return f


def start_holders(cluster, tag, ttl, stopfile):
    """dlock-run and the Python client, each holding a lease of its own with
    the multi-host string until stopfile exists."""
    env = dict(cluster.env, PYTHONPATH=os.path.join(TOP, "clients", "python", "src"))
    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.Popen(
        [os.path.join(cluster.bindir, "dlock-run"), "-d", CONNINFO, f"--name=ha/run-{tag}",
         f"--ttl={ttl}s", "--", "sh", "-c",
         f"while [ ! -e '{stopfile}' ]; do sleep 0.1; done"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True)
    py = subprocess.Popen(
        [sys.executable, os.path.join(here, "lease_child.py"), CONNINFO, f"ha/py-{tag}",
         str(ttl), stopfile],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        start_new_session=True)
    cluster.procs[f"dlock-run-{tag}"] = run
    cluster.procs[f"lease-{tag}"] = py
    names = (f"ha/run-{tag}", f"ha/py-{tag}")

    def held():
        with psycopg.connect(CONNINFO, autocommit=True) as c:
            return c.execute("SELECT count(*) FROM dlock_leases WHERE name = ANY(%s)"
                             " AND expires_at > clock_timestamp()",
                             (list(names),)).fetchone()[0] == 2
    wait_for(held, 30, f"dlock-run and the Python client to hold ha/*-{tag}")
    with psycopg.connect(CONNINFO, autocommit=True) as c:
        tokens = dict(c.execute("SELECT name, token FROM dlock_leases WHERE name = ANY(%s)",
                                (list(names),)).fetchall())
    return run, py, tokens


def finish_holders(run, py, limit=60):
    out = {}
    for label, p in (("dlock-run", run), ("python", py)):
        try:
            text, _ = p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            text, _ = p.communicate()
        out[label] = (p.returncode, text.strip().splitlines())
    return out


def clients_failover(tap, cluster):
    """dlock-run and the Python client with a multi-host string: through a
    switchover with a 30 s lease (the new primary is up within it: both keep
    their lease, renew it on the new primary and release it there), then
    through a stall of the primary with a 3 s lease (no primary within the
    TTL: both fail closed, dlock-run with exit 70, the client with
    dlock.LeaseLost)."""
    stop = os.path.join(cluster.dir, "stop-keep")
    run, py, tokens = start_holders(cluster, "keep", 30, stop)
    t = time.monotonic()
    try:
        f = fail_switchover(cluster)
        cluster.wait_healthy(sync=True)
        time.sleep(1)
        with psycopg.connect(CONNINFO, autocommit=True) as c:
            after = dict(c.execute(
                "SELECT name, token FROM dlock_leases WHERE name = ANY(%s)"
                " AND expires_at > clock_timestamp() + interval '20 s'",
                (list(tokens),)).fetchall())
            port = c.info.port
    finally:
        open(stop, "w").close()
    out = finish_holders(run, py)
    say(f"clients: switchover {f['old']} -> {f['new']} in {time.monotonic() - t:.1f} s with "
        f"30 s leases; dlock-run: exit {out['dlock-run'][0]} {out['dlock-run'][1][-2:]}; "
        f"python: exit {out['python'][0]} {out['python'][1][-2:]}")
    problems = []
    if port != PG_PORT[f["new"]]:
        problems.append(f"the new primary is {f['new']}, the multi-host string reached {port}")
    if after != tokens:
        problems.append(f"leases renewed on the new primary: {after}, held before: {tokens}")
    if out["dlock-run"][0] != 0:
        problems.append(f"dlock-run exited {out['dlock-run'][0]}: {out['dlock-run'][1][-3:]}")
    tap.check("dlock-run keeps its 30 s lease through a switchover and renews it on the "
              "new primary (exit 0)", problems)
    problems = []
    if after != tokens:
        problems.append(f"leases renewed on the new primary: {after}, held before: {tokens}")
    if out["python"][0] != 0 or "released" not in out["python"][1]:
        problems.append(f"python exited {out['python'][0]}: {out['python'][1][-3:]}")
    tap.check("the Python client keeps its 30 s lease through a switchover "
              "(no LeaseLost, released)", problems)

    stop = os.path.join(cluster.dir, "stop-lose")
    run, py, tokens = start_holders(cluster, "lose", 3, stop)
    try:
        f = fail_stall(cluster)
        cluster.wait_healthy(sync=True)
    finally:
        open(stop, "w").close()
    out = finish_holders(run, py)
    say(f"clients: stall {f['old']} -> {f['new']} (leader key after {f['dcs_s']:.1f} s) "
        f"with 3 s leases; dlock-run: exit {out['dlock-run'][0]} "
        f"{out['dlock-run'][1][-1:]}; python: exit {out['python'][0]} {out['python'][1][-1:]}")
    tap.check("dlock-run fails closed (exit 70) when no primary is up within its 3 s lease",
              [] if out["dlock-run"][0] == 70 else
              [f"dlock-run exited {out['dlock-run'][0]}: {out['dlock-run'][1][-3:]}"])
    tap.check("the Python client fails closed (dlock.LeaseLost) when no primary is up "
              "within its 3 s lease",
              [] if out["python"][0] == 3 and any(x.startswith("LeaseLost")
                                                  for x in out["python"][1]) else
              [f"python exited {out['python'][0]}: {out['python'][1][-3:]}"])


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    t_start = time.monotonic()
    if os.geteuid() == 0:
        print("test/ha/harness.py: run it as an unprivileged user (test/run ha-check does)",
              file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="dlock-ha.")
    os.chmod(scratch, 0o700)
    cluster = Cluster(scratch)
    tap = ledger.Tap()
    done = False
    try:
        run(tap, cluster, t_start)
        done = True
    finally:
        # Also on SIGTERM (a timeout): tear down, count, say what happened.
        if not done:
            tap.check("the harness ran to its end", ["interrupted"])
        rc = finish(tap, cluster, t_start)
    return rc


def run(tap, cluster, t_start):
    """Start the cluster, then the phases; every check goes to tap."""
    scratch = cluster.dir
    failovers = []
    pg = subprocess.check_output([PG_CONFIG, "--version"], text=True).strip()
    patroni = subprocess.run(["patroni", "--version"], capture_output=True,
                             text=True).stdout.strip()
    say(f"scratch directory {scratch}; {pg} ({PG_CONFIG}); {patroni}; seed {SEED}")
    try:
        cluster.start_etcd()
        cluster.start_member(MEMBERS[0])
        wait_for(lambda: cluster.leader() == MEMBERS[0], 90, "pg1 to bootstrap")
        for m in MEMBERS[1:]:
            cluster.start_member(m)
        cluster.wait_healthy(sync=True, limit=120)
        with psycopg.connect(CONNINFO.replace(f"dbname={DB}", "dbname=postgres"),
                             autocommit=True) as c:
            c.execute(f"CREATE DATABASE {DB}")
        with psycopg.connect(CONNINFO, autocommit=True) as c:
            c.execute(SCHEMA)
        tap.check(f"a cluster of etcd and three Patroni members is up in "
                  f"{time.monotonic() - t_start:.0f} s, synchronous", [])
    except Exception as e:
        tap.check("the cluster starts", [f"{type(e).__name__}: {e}"] +
                  traceback.format_exc().splitlines()[-4:])
        return
    logdir = os.path.join(scratch, "clients")
    os.makedirs(logdir)
    for part, fn in (("phase1", lambda: failovers.extend(phase1(tap, cluster, logdir))),
                     ("clients", lambda: clients_failover(tap, cluster)),
                     ("phase2", lambda: failovers.append(phase2(tap, cluster, logdir)))):
        if part in SKIP:
            say(f"skipped: {part}")
            continue
        t0 = time.monotonic()
        try:
            fn()
        except Exception as e:
            tap.check(f"{part} ran", [f"{type(e).__name__}: {e}"] +
                      traceback.format_exc().splitlines()[-6:])
        say(f"{part}: {time.monotonic() - t0:.0f} s")
    for f in failovers:
        w = f.get("window")
        say(f"figure: {f['kind']}: leader {f['old']} -> {f['new']}; leader key moved after "
            f"{f['dcs_s']:.1f} s; writes unavailable "
            f"{'?' if w is None else f'{w:.1f}'} s; cluster healthy again after "
            f"{f.get('healthy_s', 0):.1f} s")


def finish(tap, cluster, t_start):
    cluster.teardown()
    time.sleep(0.5)
    left = cluster.leftovers()
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    tap.check("torn down: no process of the scratch directory is left",
              [f"pid {p}: {c}" for p, c in left])
    if KEEP or tap.failed:
        say(f"scratch directory kept: {cluster.dir}" if KEEP else
            f"logs of the failed run: {cluster.dir} (removed: set DLOCK_HA_KEEP=1 to keep)")
    if not KEEP:
        if tap.failed:
            for name in ("pg1.log", "pg2.log", "pg3.log"):
                p = os.path.join(cluster.dir, name)
                if os.path.exists(p):
                    with open(p, errors="replace") as f:
                        tail = f.readlines()[-15:]
                    for line in tail:
                        print(f"#   {name}: {line.rstrip()}")
        shutil.rmtree(cluster.dir, ignore_errors=True)
    print(f"1..{tap.n}")
    say(f"{time.monotonic() - t_start:.0f} s in all")
    print(f"{tap.n - tap.failed} passed, {tap.failed} failed")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main())
