#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/sql_edition.sh: the SQL edition of dlock side by side with the C
# edition, the hand-written SQL lease and advisory locks (issue 26 item 6),
# run by "make bench" (from run.sh) or by hand (PGHOST/PGPORT/PGUSER set, a
# superuser, both editions installable: "CREATE EXTENSION dlock" and
# "CREATE EXTENSION dlock_sql").
#
# One run, contenders alternating within every cell, ROUNDS rounds; medians
# and the ratios issue 26 states its targets in:
#   durable pairs   8 clients, acquire + release of one of 10^3 free names
#                   at random, each its own durable transaction (fsync on);
#                   target: SQL edition >= 0.9 x the hand-written SQL lease
#   busy            8 clients, acquire of a name held elsewhere (wait 0);
#                   target: SQL edition >= 0.5 x a failed pg_try_advisory_lock
#   hand-over       one waiter (wait 10 s) on one held name, the holder
#                   releases: client clock from the return of the committed
#                   release to the return of the waiter's acquire;
#                   target: SQL edition median <= 5 ms
# Each edition lives in a database of its own (a database has at most one
# dlock); the hand-written lease and the advisory locks are in the C one's.
#
# Environment: DLOCK_BENCH_SECONDS (per pgbench run, default 5),
# DLOCK_BENCH_ROUNDS (default 3), DLOCK_BENCH_CLIENTS (default 8),
# DLOCK_BENCH_QUICK=1 (1 s runs, 1 round, 20 hand-overs: a smoke test).
# Exit status 1 if a target is missed.
set -uo pipefail

T=${DLOCK_BENCH_SECONDS:-5}
ROUNDS=${DLOCK_BENCH_ROUNDS:-3}
C=${DLOCK_BENCH_CLIENTS:-8}
HANDOVERS=200
if [ -n "${DLOCK_BENCH_QUICK:-}" ]; then
	T=1 ROUNDS=1 HANDOVERS=20
fi
NAMES=1000
DBC=dlock_bench_edition_c
DBS=dlock_bench_edition_sql
work=$(mktemp -d)
results=$work/results.tsv
holder_pid=

cleanup() {
	exec 9>&- 2>/dev/null
	[ -n "$holder_pid" ] && kill "$holder_pid" 2>/dev/null
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DBC WITH (FORCE)" \
		-c "DROP DATABASE IF EXISTS $DBS WITH (FORCE)" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

q() { local db=$1; shift; psql -X -q -v ON_ERROR_STOP=1 -d "$db" -At "$@"; }

psql -X -q -d postgres -c "SET client_min_messages = warning" \
	-c "DROP DATABASE IF EXISTS $DBC WITH (FORCE)" -c "CREATE DATABASE $DBC" \
	-c "DROP DATABASE IF EXISTS $DBS WITH (FORCE)" -c "CREATE DATABASE $DBS" || exit 1
if ! q "$DBS" -c "CREATE EXTENSION dlock_sql" >/dev/null; then
	echo "  the SQL edition is not installed here (make install puts dlock_sql beside dlock)" >&2
	exit 1
fi
# Both editions get their names through their own API: 10^3 free names,
# each acquired and released once.
for db in "$DBC" "$DBS"; do
	[ "$db" = "$DBC" ] && q "$db" -c "CREATE EXTENSION dlock"
	q "$db" >/dev/null <<-EOF || exit 1
		SELECT count(dlock_release('pre' || i, dlock_acquire('pre' || i, '1 min')))
		  FROM generate_series(1, $NAMES) AS i;
		SELECT dlock_acquire('busy', '1 day');
		VACUUM ANALYZE;
	EOF
done
q "$DBC" >/dev/null <<EOF || exit 1
CREATE TABLE hand_lease (name text PRIMARY KEY, token bigint NOT NULL,
                         owner text, expires_at timestamptz NOT NULL);
CREATE SEQUENCE hand_token_seq;
INSERT INTO hand_lease SELECT 'pre' || i, i, NULL, now() - interval '1 s'
  FROM generate_series(1, $NAMES) AS i;
INSERT INTO hand_lease VALUES ('busy', nextval('hand_token_seq'), NULL, now() + interval '1 day');
VACUUM ANALYZE hand_lease;
CHECKPOINT;
EOF

# ---------------------------------------------------------------- scripts
mk() { cat >"$work/$1.sql"; }
# The same script for both editions: one API.
mk edition_free <<'EOF'
\set n random(1, :names)
SELECT coalesce(dlock_acquire('pre' || :n, '1 min'), 0) AS tok \gset
\if :tok > 0
SELECT dlock_release('pre' || :n, :tok);
\endif
EOF
mk hand_free <<'EOF'
\set n random(1, :names)
WITH t AS (
  INSERT INTO hand_lease AS l (name, token, expires_at)
  VALUES ('pre' || :n, nextval('hand_token_seq'), clock_timestamp() + interval '1 min')
  ON CONFLICT (name) DO UPDATE SET token = excluded.token, owner = excluded.owner,
                                   expires_at = excluded.expires_at
   WHERE l.expires_at <= clock_timestamp()
  RETURNING token)
SELECT coalesce(max(token), 0) AS tok FROM t \gset
\if :tok > 0
UPDATE hand_lease SET expires_at = clock_timestamp() WHERE name = 'pre' || :n AND token = :tok;
\endif
EOF
mk adv_free <<'EOF'
\set n random(1, :names)
SELECT pg_try_advisory_lock(1, :n)::int AS got \gset
\if :got = 1
SELECT pg_advisory_unlock(1, :n);
\endif
EOF
mk edition_busy <<'EOF'
SELECT dlock_acquire('busy', '1 min');
EOF
mk adv_busy <<'EOF'
SELECT pg_try_advisory_lock(1, 999999);
EOF

# The advisory lock of the busy case is held by a session that sits idle
# (psql reading a pipe that stays open), not by a running statement, which
# would hold back the xmin horizon for the whole run.
mkfifo "$work/holder"
psql -X -q -d "$DBC" <"$work/holder" >/dev/null 2>&1 &
holder_pid=$!
exec 9>"$work/holder"
echo "SELECT pg_advisory_lock(1, 999999);" >&9
for _ in $(seq 100); do
	[ "$(q "$DBC" -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 999999 AND granted")" = 1 ] && break
	sleep 0.1
done

# run CASE WHO: one pgbench run, a line of results.
run() {
	local scen=$1 who=$2 db=$DBC script out tps lat
	case $who in
		sql) db=$DBS script=edition_$scen ;;
		c) script=edition_$scen ;;
		*) script=${who}_$scen ;;
	esac
	out=$(pgbench -n -M prepared -c "$C" -j 2 -T "$T" -D names="$NAMES" \
		-f "$work/$script.sql" "$db" 2>&1)
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
	lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
	if [ -z "$tps" ]; then
		echo "pgbench failed for $who $scen:" >&2
		echo "$out" >&2
		exit 1
	fi
	printf '%s\t%s\t%s\t%s\n' "$scen" "$who" "$tps" "$lat" >>"$results"
	printf '  %-6s %-5s %10.0f tps  %7.3f ms\n' "$scen" "$who" "$tps" "$lat"
}

echo "pgbench: $C clients, ${T}s per run, $ROUNDS rounds, contenders alternating, fsync on"
echo "  case   who          tps   latency"
for round in $(seq "$ROUNDS"); do
	for who in sql c hand adv; do
		run free "$who"
	done
	for who in sql c adv; do
		run busy "$who"
	done
done

echo
echo "hand-over after a committed release, $HANDOVERS per edition, alternating:"
/usr/bin/python3 - "$DBS" "$DBC" "$HANDOVERS" "$work/handover.tsv" <<'EOF' || exit 1
import sys, threading, time
import psycopg

dbs, dbc, n, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def connect(db):
    return psycopg.connect(dbname=db, autocommit=True)

class Edition:
    def __init__(self, db):
        self.holder, self.waiter, self.obs = connect(db), connect(db), connect(db)
        self.pid = self.waiter.execute("SELECT pg_backend_pid()").fetchone()[0]

    def waiting(self):
        """The waiter's acquire is running and waits (a lock, a latch, a sleep)."""
        stop = time.monotonic() + 10
        while time.monotonic() < stop:
            if self.obs.execute(
                    "SELECT state = 'active' AND wait_event IS NOT NULL"
                    "  AND query LIKE 'SELECT dlock_acquire%%' FROM pg_stat_activity WHERE pid = %s",
                    (self.pid,)).fetchone()[0]:
                return
            time.sleep(0.001)
        raise RuntimeError("the waiter did not start waiting")

    def handover(self, name):
        tok = self.holder.execute("SELECT dlock_acquire(%s, '1 min')", (name,)).fetchone()[0]
        got = {}

        def wait():
            got["token"] = self.waiter.execute(
                "SELECT dlock_acquire(%s, '1 min', '10 s')", (name,)).fetchone()[0]
            got["t"] = time.perf_counter()

        th = threading.Thread(target=wait)
        th.start()
        self.waiting()
        time.sleep(0.02)        # well inside the wait, wherever a poller is
        assert self.holder.execute("SELECT dlock_release(%s, %s)", (name, tok)).fetchone()[0]
        released = time.perf_counter()
        th.join()
        if got.get("token") is None or got["token"] <= tok:
            raise RuntimeError("the waiter did not get the lease")
        self.waiter.execute("SELECT dlock_release(%s, %s)", (name, got["token"]))
        return (got["t"] - released) * 1000.0

eds = {"sql": Edition(dbs), "c": Edition(dbc)}
with open(out, "w") as f:
    for i in range(n):
        for who, ed in eds.items():
            f.write(f"{who}\t{ed.handover(f'h{i}')}\n")
EOF

# ---------------------------------------------------------------- report
/usr/bin/python3 - "$results" "$work/handover.tsv" <<'EOF'
import statistics, sys
med = {}
for line in open(sys.argv[1]):
    scen, who, tps, lat = line.rstrip("\n").split("\t")
    med.setdefault((scen, who), []).append(float(tps))
ho = {}
for line in open(sys.argv[2]):
    who, ms = line.split("\t")
    ho.setdefault(who, []).append(float(ms))
def tps(scen, who):
    return statistics.median(med[(scen, who)])
def pct(v, p):
    v = sorted(v)
    return v[max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))]

print()
print("medians (transactions/s; a transaction is one acquire+release pair, or one")
print("failed attempt in the busy case), 10^3 names, fsync on:")
print(f"  {'case':22} {'SQL ed.':>10} {'C ed.':>10} {'hand SQL':>10} {'advisory':>10}")
print(f"  {'durable pairs':22} " + " ".join(f"{tps('free', w):10.0f}" for w in ("sql", "c", "hand", "adv")))
print(f"  {'busy (try fails)':22} {tps('busy', 'sql'):10.0f} {tps('busy', 'c'):10.0f} {'':>10} {tps('busy', 'adv'):10.0f}")
print("hand-over after a committed release, client clock (ms):")
for who, label in (("sql", "SQL edition"), ("c", "C edition")):
    v = ho[who]
    print(f"  {label:12} n={len(v)}  median {statistics.median(v):.2f}  p90 {pct(v, 90):.2f}"
          f"  p99 {pct(v, 99):.2f}  max {max(v):.2f}")

checks = []
def check(label, value, target, unit="x", at_most=False):
    ok = value <= target if at_most else value >= target
    checks.append(ok)
    print(f"  {label:58} {value:7.2f}{unit}  (target {'<=' if at_most else '>='} {target}{unit})  {'met' if ok else 'MISSED'}")
print()
print("ratios (issue 26 item 6):")
check("durable pairs/s, SQL edition / hand SQL", tps("free", "sql") / tps("free", "hand"), 0.9)
check("busy, SQL edition / failed pg_try_advisory_lock", tps("busy", "sql") / tps("busy", "adv"), 0.5)
check("hand-over after a release, SQL edition median", statistics.median(ho["sql"]), 5, " ms", at_most=True)
print(f"  {'for comparison: durable pairs/s, C edition / hand SQL':58} {tps('free', 'c') / tps('free', 'hand'):7.2f}x")
print(f"  {'for comparison: busy, C edition / failed try':58} {tps('busy', 'c') / tps('busy', 'adv'):7.2f}x")
print(f"  {'SQL edition / C edition, durable pairs':58} {tps('free', 'sql') / tps('free', 'c'):7.2f}x")
print(f"  {'SQL edition / C edition, busy':58} {tps('busy', 'sql') / tps('busy', 'c'):7.2f}x")
print(f"\n{sum(checks)} of {len(checks)} SQL edition targets met")
sys.exit(0 if all(checks) else 1)
EOF
