#!/usr/bin/python3
# Copyright (c) 2026, the dlock developers
"""Waiting for a lease: hand-over latency, CPU use of a waiter, fairness.

Run by "make bench" (test/bench/run.sh) against a throwaway cluster, or by
hand against any database where "CREATE EXTENSION dlock" works:

    PGHOST=... PGPORT=... /usr/bin/python3 test/bench/wait.py [--quick]

It prints, with the targets of the issue that asked for them:
  1. latency from a release to the waiter holding the lease (>= 200 hand-overs)
  2. latency from the expiry of an unreleased lease to the waiter holding it
  3. CPU used by a backend that waits 2 s
  4. fairness: 8 waiters on one hot name for 30 s
Latencies are measured on the server's clock (released_at / expires_at of
the old lease against acquired_at of the new one), so client scheduling
does not blur them.  Exit status 1 if a target is missed.
"""

import os
import statistics
import sys
import threading
import time

import psycopg

QUICK = "--quick" in sys.argv
DB = "dlock_bench_wait"


def connect(dbname=None):
    conn = psycopg.connect(dbname=dbname or os.environ.get("PGDATABASE", "postgres"),
                           autocommit=True)
    return conn


def pct(values, p):
    values = sorted(values)
    k = max(0, min(len(values) - 1, int(round(p / 100.0 * len(values) + 0.5)) - 1))
    return values[k]


def setup():
    with connect() as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {DB}")
    with connect(DB) as c:
        c.execute("CREATE EXTENSION dlock")


def measure_release(n):
    """Latency from the release to the waiter's acquisition, server clock."""
    holder = connect(DB)
    waiter = connect(DB)
    lat = []
    for i in range(n):
        name = f"r{i}"
        tok = holder.execute("SELECT dlock_acquire(%s, '1 min')", (name,)).fetchone()[0]
        result = {}

        def wait():
            result["row"] = waiter.execute(
                "SELECT dlock_acquire(%s, '1 min', '10 s')", (name,)).fetchone()

        th = threading.Thread(target=wait)
        th.start()
        time.sleep(0.005 + (i % 7) * 0.001)
        released_at = holder.execute(
            "SELECT dlock_release(%s, %s), clock_timestamp()", (name, tok)).fetchone()[1]
        th.join()
        assert result["row"][0] is not None and result["row"][0] > tok, "waiter did not get the lease"
        acquired_at = holder.execute(
            "SELECT acquired_at FROM dlock_leases WHERE name = %s", (name,)).fetchone()[0]
        lat.append((acquired_at - released_at).total_seconds() * 1000.0)
    holder.close()
    waiter.close()
    return lat


def measure_expiry(n, ttl_ms=40):
    """Latency from the expiry of an unreleased lease to the waiter holding it."""
    holder = connect(DB)
    waiter = connect(DB)
    lat = []
    for i in range(n):
        name = f"e{i}"
        tok = holder.execute("SELECT dlock_acquire(%s, %s::interval)",
                             (name, f"{ttl_ms} ms")).fetchone()[0]
        expires_at = holder.execute(
            "SELECT expires_at FROM dlock_leases WHERE name = %s", (name,)).fetchone()[0]
        got = waiter.execute("SELECT dlock_acquire(%s, '1 min', '10 s')", (name,)).fetchone()[0]
        assert got is not None and got > tok, "waiter did not get the lease"
        acquired_at = holder.execute(
            "SELECT acquired_at FROM dlock_leases WHERE name = %s", (name,)).fetchone()[0]
        lat.append((acquired_at - expires_at).total_seconds() * 1000.0)
    holder.close()
    waiter.close()
    return lat


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])     # utime + stime


def measure_waiter_cpu(seconds=2.0):
    holder = connect(DB)
    waiter = connect(DB)
    holder.execute("SELECT dlock_acquire('cpu', '1 min')")
    pid = waiter.execute("SELECT pg_backend_pid()").fetchone()[0]
    hz = os.sysconf(os.sysconf_names["SC_CLK_TCK"])
    before = cpu_ticks(pid)
    t0 = time.monotonic()
    got = waiter.execute("SELECT dlock_acquire('cpu', '1 min', %s::interval)",
                         (f"{seconds} s",)).fetchone()[0]
    elapsed = time.monotonic() - t0
    after = cpu_ticks(pid)
    assert got is None
    holder.close()
    waiter.close()
    return 100.0 * (after - before) / hz / elapsed, elapsed


def measure_fairness(clients=8, seconds=30.0, hold_ms=5):
    stop = time.monotonic() + seconds
    stats = [dict(n=0, waits=[]) for _ in range(clients)]
    errors = []

    def worker(k):
        try:
            conn = connect(DB)
            while time.monotonic() < stop:
                t0 = time.monotonic()
                tok = conn.execute("SELECT dlock_acquire('hot', '10 s', '20 s')").fetchone()[0]
                if tok is None:
                    continue
                stats[k]["waits"].append((time.monotonic() - t0) * 1000.0)
                stats[k]["n"] += 1
                time.sleep(hold_ms / 1000.0)
                ok = conn.execute("SELECT dlock_release('hot', %s)", (tok,)).fetchone()[0]
                assert ok
            conn.close()
        except Exception as e:    # report, don't hang
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(errors[0])
    return stats


def main():
    setup()
    failures = []
    n = 60 if QUICK else 250

    lat = measure_release(n)
    med, p99 = statistics.median(lat), pct(lat, 99)
    print(f"hand-over after release: n={len(lat)}  median {med:.2f} ms  p90 {pct(lat, 90):.2f} ms"
          f"  p99 {p99:.2f} ms  max {max(lat):.2f} ms   (target: median <= 10 ms, p99 <= 50 ms)")
    if med > 10 or p99 > 50:
        failures.append("hand-over after release")

    lat = measure_expiry(n)
    med, p99 = statistics.median(lat), pct(lat, 99)
    print(f"hand-over after expiry:  n={len(lat)}  median {med:.2f} ms  p90 {pct(lat, 90):.2f} ms"
          f"  p99 {p99:.2f} ms  max {max(lat):.2f} ms   (target: median <= 10 ms)")
    if med > 10:
        failures.append("hand-over after expiry")

    cpu, elapsed = measure_waiter_cpu(2.0)
    print(f"waiter CPU: {cpu:.2f}% of one core over a {elapsed:.2f} s wait   (target: < 5%)")
    if cpu >= 5:
        failures.append("waiter CPU")

    secs = 5.0 if QUICK else 30.0
    stats = measure_fairness(8, secs)
    all_waits = [w for s in stats for w in s["waits"]]
    med = statistics.median(all_waits)
    longest = max(all_waits)
    print(f"fairness: 8 waiters on one name for {secs:.0f} s, hold 5 ms each time")
    for k, s in enumerate(stats):
        w = s["waits"]
        print(f"  waiter {k}: {s['n']:5d} acquisitions, median wait {statistics.median(w):7.2f} ms,"
              f" longest {max(w):8.2f} ms")
    counts = [s["n"] for s in stats]
    print(f"  acquisitions min/max {min(counts)}/{max(counts)}; longest wait {longest:.1f} ms"
          f" = {longest / med:.1f} x the median wait ({med:.1f} ms)")
    if min(counts) == 0 or min(counts) < 0.25 * max(counts):
        failures.append("fairness")

    with connect() as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
    if failures:
        print("missed: " + ", ".join(failures))
        return 1
    print("all waiting targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
