# Copyright (c) 2026, the dlock developers
"""test/scripts/wait_listen.py: a waiter that LISTENs does not spin.

A session LISTENs on a channel and then waits in dlock_acquire (wait =>
'30 s') for a lease another session holds; two other sessions send NOTIFY
on that channel, one commit each, as fast as they can for FLOOD_SECONDS.
The waiter's backend gets a signal and a latch set for every one of them
(async.c).  Its CPU time (utime + stime from /proc/<pid>/stat) over the
flood must stay far below what a look at the lease per notification costs
(1.1: 1 to 1.5 s of CPU per 6 to 8 s on PostgreSQL 15), and the acquire
must not look at the lease once per notification.  The bounds are
generous; the figures are printed as TAP comments.

Checks (one TAP line each):
 1  the waiter is the head of the queue, waiting, when the flood starts
 2  the flood sent notifications (at least 3,000)
 3  the waiter used no more CPU than twice what a listener in pg_sleep
    used meanwhile (the signals themselves cost that much; 1.1 also looked
    at the lease for each of them)
 4  after the flood, a release hands the lease to the waiter at once
 5  the acquire read fewer buffers than a third of the notifications
    (EXPLAIN ANALYZE BUFFERS; a look reads at least one, and 1.1 read
    about 0.75 per notification): it did not look at the lease once per
    notification, but about once per 20 ms
 6  the waiter's session then receives the notifications (none is lost)

Environment: PGHOST, PGPORT, PGUSER (a superuser); DLOCK_WAIT_LISTEN_DB
(default dlock_wait_listen, dropped and recreated).
"""

import os
import sys
import threading
import time

import psycopg

DB = os.environ.get("DLOCK_WAIT_LISTEN_DB", "dlock_wait_listen")
FLOOD_SECONDS = 6.0
TICKS = os.sysconf("SC_CLK_TCK")
results = []


def ok(cond, name, why=""):
    results.append((bool(cond), name, why))


def connect(dbname=DB):
    return psycopg.connect(dbname=dbname, autocommit=True)


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime and stime are fields 14, 15.
    return (int(fields[11]) + int(fields[12])) / TICKS


def flood(stop, counts, i):
    with connect() as conn:
        n = 0
        while not stop.is_set():
            conn.execute("NOTIFY dlock_wait_listen_flood")
            n += 1
        counts[i] = n


def main():
    with connect("postgres") as admin:
        admin.execute("DROP DATABASE IF EXISTS %s" % DB)
        admin.execute("CREATE DATABASE %s" % DB)
    with connect() as holder, connect() as waiter, connect() as look, \
            connect() as control:
        holder.execute("CREATE EXTENSION dlock")
        token = holder.execute(
            "SELECT dlock_acquire('flooded', '1 hour')").fetchone()[0]
        pid = waiter.execute("SELECT pg_backend_pid()").fetchone()[0]
        notes = []
        waiter.add_notify_handler(notes.append)
        waiter.execute("LISTEN dlock_wait_listen_flood")
        got = {}

        def wait():
            # EXPLAIN ANALYZE runs the acquire (it commits) and counts the
            # buffers it read: at least one per look at the lease.
            plan = waiter.execute(
                "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON)"
                " SELECT dlock_acquire('flooded', '1 hour', '30 s', 'waiter')"
            ).fetchone()[0]
            got["at"] = time.monotonic()
            got["hits"] = plan[0]["Plan"]["Shared Hit Blocks"]

        t = threading.Thread(target=wait)
        t.start()
        control_pid = control.execute("SELECT pg_backend_pid()").fetchone()[0]
        control.execute("LISTEN dlock_wait_listen_flood")
        c = threading.Thread(target=lambda: control.execute("SELECT pg_sleep(%s)" % (FLOOD_SECONDS + 2)))
        c.start()
        waiting = False
        for _ in range(200):
            waiting = look.execute(
                "SELECT wait_event = 'Extension' FROM pg_stat_activity WHERE pid = %s",
                (pid,)).fetchone()[0]
            if waiting:
                break
            time.sleep(0.05)
        ok(waiting, "the waiter sleeps at the head of the queue")

        stop = threading.Event()
        counts = [0, 0]
        flooders = [threading.Thread(target=flood, args=(stop, counts, i))
                    for i in range(2)]
        before = cpu_seconds(pid)
        control_before = cpu_seconds(control_pid)
        for f in flooders:
            f.start()
        time.sleep(FLOOD_SECONDS)
        stop.set()
        for f in flooders:
            f.join()
        used = cpu_seconds(pid) - before
        control_used = cpu_seconds(control_pid) - control_before
        c.join()
        sent = sum(counts)
        print("# %d notifications in %.0f s; the waiter used %.3f s of CPU,"
              " a listener in pg_sleep %.3f s" % (sent, FLOOD_SECONDS, used,
                                                 control_used))
        ok(sent >= 3000, "the flood sent at least 3,000 notifications",
           "%d sent" % sent)
        ok(used < 2 * control_used + 0.2,
           "the waiter used no more CPU than twice a listener in pg_sleep",
           "%.3f s against %.3f s" % (used, control_used))

        released_at = time.monotonic()
        holder.execute("SELECT dlock_release('flooded', %s)", (token,))
        t.join(30)
        owner = look.execute(
            "SELECT owner FROM dlock_leases WHERE name = 'flooded' AND held"
        ).fetchone()
        ok("at" in got and got["at"] - released_at < 5 and owner == ("waiter",),
           "a release hands the lease to the waiter at once", "got %r" % got)
        hits = got.get("hits", 10 ** 9)
        print("# the waiting acquire read %d buffers" % hits)
        ok(hits < sent / 3,
           "the waiter looked at the lease far less often than once per"
           " notification", "%d buffers for %d notifications" % (hits, sent))
        waiter.execute("SELECT 1")
        ok(len(notes) >= 1, "the waiter's session receives the notifications")
    with connect("postgres") as admin:
        admin.execute("DROP DATABASE %s" % DB)


try:
    main()
except Exception as e:  # report, do not hide
    ok(False, "wait_listen.py ran to the end", repr(e))
print("1..%d" % len(results))
for i, (good, name, why) in enumerate(results, 1):
    print("%sok %d - %s%s" % ("" if good else "not ", i, name,
                              (" # " + why) if why and not good else ""))
sys.exit(0 if all(g for g, _, _ in results) else 1)
