#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/run.sh: dlock side by side with the hand-written SQL lease and
# advisory locks, run by "make bench" against a throwaway durable cluster
# (or by hand: PGHOST/PGPORT/PGUSER set, dlock installable).
#
# One run, contenders alternating within every cell, ROUNDS rounds; medians
# and the ratios the performance targets are stated in.  Then the waiting
# benchmark (wait.py), the churn/bloat benchmark (bloat.sh), the cost of
# the fence trigger (fence.sh) and the SQL edition side by side with the C
# edition (sql_edition.sh; DLOCK_BENCH_ONLY=sql_edition runs it alone).
#
# Environment: DLOCK_BENCH_SECONDS (per pgbench run, default 5),
# DLOCK_BENCH_ROUNDS (default 3), DLOCK_BENCH_CLIENTS (default 8),
# DLOCK_BENCH_QUICK=1 (1 s runs, 1 round, 10^4 names at most: a smoke test),
# DLOCK_BENCH_ONLY=ratios (only the 10^3-name cases the targets are stated
# in, without the waiting, profile and churn benchmarks: for a before/after
# comparison of two builds), DLOCK_BENCH_ONLY=instructions (only the
# instruction counts of instructions.sh and fence_instructions.sh, which
# load does not move; they also end a full run).
#
# Contenders: dlock, the hand-written SQL lease, advisory locks, and for the
# uncontended pairs "floor": two one-row UPDATE transactions, the least that
# an acquire and a release that both commit durably can cost; its ratio to
# the hand-written lease is the most any lease can reach here.
#
# Durability columns: "durable" is the default configuration, "cpu" the same
# with fsync = off (CPU-bound: what a transaction costs when flushes are
# free), "async" the caller's synchronous_commit = off.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# DLOCK_BENCH_ONLY=fence: only the cost of the fence trigger (fence.sh).
if [ "${DLOCK_BENCH_ONLY:-}" = fence ]; then
	exec bash "$here/fence.sh"
fi
# DLOCK_BENCH_ONLY=wait: only the waiting benchmark (wait.py).
if [ "${DLOCK_BENCH_ONLY:-}" = wait ]; then
	exec /usr/bin/python3 "$here/wait.py" ${DLOCK_BENCH_QUICK:+--quick}
fi
# DLOCK_BENCH_ONLY=instructions: only the instruction counts (valgrind).
if [ "${DLOCK_BENCH_ONLY:-}" = instructions ]; then
	bash "$here/instructions.sh" && bash "$here/fence_instructions.sh"
	exit
fi
# DLOCK_BENCH_ONLY=events: only the cost of lease events (events.sh).
if [ "${DLOCK_BENCH_ONLY:-}" = events ]; then
	exec bash "$here/events.sh"
fi
# DLOCK_BENCH_ONLY=sql_edition: only the SQL edition side by side (sql_edition.sh).
if [ "${DLOCK_BENCH_ONLY:-}" = sql_edition ]; then
	exec bash "$here/sql_edition.sh"
fi
T=${DLOCK_BENCH_SECONDS:-5}
ROUNDS=${DLOCK_BENCH_ROUNDS:-3}
C=${DLOCK_BENCH_CLIENTS:-8}
SIZES="1000 100000 1000000"
if [ -n "${DLOCK_BENCH_QUICK:-}" ]; then
	T=1 ROUNDS=1 SIZES="1000 10000"
fi
if [ "${DLOCK_BENCH_ONLY:-}" = ratios ]; then
	SIZES=1000
fi
DB=dlock_bench
work=$(mktemp -d)
results=$work/results.tsv
holder_pid=

cleanup() {
	exec 9>&- 2>/dev/null
	[ -n "$holder_pid" ] && kill "$holder_pid" 2>/dev/null
	set_fsync on
	rm -rf "$work"
}

# fsync is a server-wide setting that a reload changes.
set_fsync() {
	psql -X -q -d postgres -c "ALTER SYSTEM SET fsync = $1" -c "SELECT pg_reload_conf()" >/dev/null
	sleep 0.2
}
trap cleanup EXIT

q() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -At "$@"; }

psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" || exit 1
q <<'EOF' || exit 1
CREATE EXTENSION dlock;
-- The hand-written SQL lease users compare dlock with.
CREATE TABLE hand_lease (name text PRIMARY KEY, token bigint NOT NULL,
                         owner text, expires_at timestamptz NOT NULL);
CREATE SEQUENCE hand_token_seq;
-- The floor: what any lease costs at least, an acquire and a release being
-- two transactions that each write one row.
CREATE TABLE floor_pair (id int PRIMARY KEY, v int NOT NULL);
EOF

# ---------------------------------------------------------------- scripts
mk() { cat >"$work/$1.sql"; }

# Uncontended: each pair takes one of the NAMES existing (free) names at
# random, so clients rarely meet on a name or on a page.  A name taken by
# another client at that moment is busy: the try fails, no release follows.
mk dlock_free <<'EOF'
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
mk floor_free <<'EOF'
\set n random(1, :names)
UPDATE floor_pair SET v = v + 1 WHERE id = :n;
UPDATE floor_pair SET v = v + 1 WHERE id = :n;
EOF
mk adv_free <<'EOF'
\set n random(1, :names)
SELECT pg_try_advisory_lock(1, :n)::int AS got \gset
\if :got = 1
SELECT pg_advisory_unlock(1, :n);
\endif
EOF

# Contended: all clients on one name; a pair only when the try succeeds.
mk dlock_hot <<'EOF'
SELECT coalesce(dlock_acquire('hot', '1 min'), 0) AS tok \gset
\if :tok > 0
SELECT dlock_release('hot', :tok);
\endif
EOF
mk hand_hot <<'EOF'
WITH t AS (
  INSERT INTO hand_lease AS l (name, token, expires_at)
  VALUES ('hot', nextval('hand_token_seq'), clock_timestamp() + interval '1 min')
  ON CONFLICT (name) DO UPDATE SET token = excluded.token, owner = excluded.owner,
                                   expires_at = excluded.expires_at
   WHERE l.expires_at <= clock_timestamp()
  RETURNING token)
SELECT coalesce(max(token), 0) AS tok FROM t \gset
\if :tok > 0
UPDATE hand_lease SET expires_at = clock_timestamp() WHERE name = 'hot' AND token = :tok;
\endif
EOF
mk adv_hot <<'EOF'
SELECT pg_try_advisory_lock(1, 0)::int AS got \gset
\if :got = 1
SELECT pg_advisory_unlock(1, 0);
\endif
EOF

# The busy path: the name is held elsewhere, the try fails.
mk dlock_busy <<'EOF'
SELECT dlock_acquire('busy', '1 min');
EOF
mk hand_busy <<'EOF'
INSERT INTO hand_lease AS l (name, token, expires_at)
VALUES ('busy', nextval('hand_token_seq'), clock_timestamp() + interval '1 min')
ON CONFLICT (name) DO UPDATE SET token = excluded.token, owner = excluded.owner,
                                 expires_at = excluded.expires_at
 WHERE l.expires_at <= clock_timestamp()
RETURNING token;
EOF
mk adv_busy <<'EOF'
SELECT pg_try_advisory_lock(1, 999999);
EOF

# The busy names are held for the whole run: a dlock lease, a hand lease
# row, and a session that keeps the advisory lock.  That session sits idle
# (psql reading a pipe that stays open), not in a running statement: a
# statement that runs for the whole benchmark would hold back the xmin
# horizon, so that no update of any contender could be pruned or stay HOT.
q -c "SELECT dlock_acquire('busy', '1 day')" >/dev/null
q -c "INSERT INTO hand_lease VALUES ('busy', nextval('hand_token_seq'), NULL, now() + interval '1 day')"
mkfifo "$work/holder"
psql -X -q -d "$DB" <"$work/holder" >/dev/null 2>&1 &
holder_pid=$!
exec 9>"$work/holder"
echo "SELECT pg_advisory_lock(1, 999999);" >&9
for _ in $(seq 100); do
	[ "$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 999999 AND granted")" = 1 ] && break
	sleep 0.1
done

populate() {
	local n=$1
	q >/dev/null <<-EOF
		TRUNCATE floor_pair;
		INSERT INTO floor_pair SELECT i, 0 FROM generate_series(1, $n) i;
		TRUNCATE hand_lease;
		INSERT INTO hand_lease SELECT 'pre' || i, i, NULL, now() - interval '1 s' FROM generate_series(1, $n) i;
		INSERT INTO hand_lease VALUES ('busy', nextval('hand_token_seq'), NULL, now() + interval '1 day');
		TRUNCATE dlock_lease;
		INSERT INTO dlock_lease (name, token, owner, role, acquired_at, expires_at,
		                         released_at, role_oid, role_system_identifier)
		  SELECT 'pre' || i, nextval('dlock_token_seq'), NULL, current_user,
		         now() - interval '1 min', now() - interval '1 s', now() - interval '1 s',
		         (SELECT oid FROM pg_roles WHERE rolname = current_user),
		         (SELECT system_identifier FROM pg_control_system())
		    FROM generate_series(1, $n) i;
		SELECT dlock_acquire('busy', '1 day');
	EOF
	q -c "VACUUM ANALYZE hand_lease" -c "VACUUM ANALYZE dlock_lease" -c "VACUUM ANALYZE floor_pair" -c "CHECKPOINT"
}

# WAL flushes so far: pg_stat_wal.wal_sync, in pg_stat_io from 18 on.
wal_syncs() {
	if [ "$(q -c "SHOW server_version_num")" -ge 180000 ]; then
		q -c "SELECT coalesce(sum(fsyncs), 0) FROM pg_stat_io WHERE object = 'wal'"
	else
		q -c "SELECT wal_sync FROM pg_stat_wal"
	fi
}

# run SIZE SCENARIO DURABILITY CONTENDER
run() {
	local size=$1 scen=$2 dur=$3 who=$4 opts="" out tps lat syncs0 syncs1 spt
	[ "$dur" = async ] && opts="-c synchronous_commit=off"
	[ "$dur" = cpu ] && set_fsync off
	syncs0=$(wal_syncs)
	out=$(PGOPTIONS="$opts" pgbench -n -M prepared -c "$C" -j 2 -T "$T" -D names="$size" \
		-f "$work/${who}_$scen.sql" "$DB" 2>&1)
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
	lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' <<<"$out")
	[ "$dur" = cpu ] && set_fsync on
	if [ -z "$tps" ]; then
		echo "pgbench failed for $who $scen $dur:" >&2
		echo "$out" >&2
		exit 1
	fi
	# WAL flushes (fdatasync) per transaction: where a durable lease spends
	# its time.  Backends report their statistics within a second.
	sleep 1.1
	syncs1=$(wal_syncs)
	spt=$(awk -v a="$syncs0" -v b="$syncs1" -v t="$tps" -v s="$T" 'BEGIN { printf "%.3f", (b - a) / (t * s) }')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$size" "$scen" "$dur" "$who" "$tps" "$lat" "$spt" >>"$results"
	printf '  %-8s %-5s %-7s %-6s %10.0f tps  %7.3f ms  %6.3f WAL flushes/txn\n' "$size" "$scen" "$dur" "$who" "$tps" "$lat" "$spt"
}

echo "pgbench: $C clients, ${T}s per run, $ROUNDS rounds, contenders alternating"
echo "  names    case  commit  who           tps   latency"
for size in $SIZES; do
	populate "$size"
	for round in $(seq "$ROUNDS"); do
		if [ "${DLOCK_BENCH_ONLY:-}" = ratios ]; then
			for cell in free:durable:dlock free:durable:hand free:durable:floor \
				free:cpu:dlock free:cpu:hand free:cpu:floor \
				busy:durable:dlock busy:durable:adv; do
				IFS=: read -r scen dur who <<<"$cell"
				run "$size" "$scen" "$dur" "$who"
			done
		elif [ "$size" = 1000 ]; then
			for scen in free hot busy; do
				for dur in durable cpu async; do
					for who in dlock hand adv $([ "$scen" = free ] && echo floor); do
						run "$size" "$scen" "$dur" "$who"
					done
				done
			done
		else
			for who in dlock hand; do
				run "$size" free async "$who"
			done
		fi
	done
done

# ---------------------------------------------------------------- report
python3_bin=/usr/bin/python3
"$python3_bin" - "$results" <<'EOF'
import statistics, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])]
med = {}
flushes = {}
for size, scen, dur, who, tps, lat, spt in rows:
    med.setdefault((size, scen, dur, who), []).append((float(tps), float(lat)))
    flushes.setdefault((size, scen, dur, who), []).append(float(spt))
def tps(size, scen, dur, who):
    if (size, scen, dur, who) not in med:
        return float("nan")
    return statistics.median(t for t, _ in med[(size, scen, dur, who)])
def lat(size, scen, dur, who):
    return statistics.median(l for _, l in med[(size, scen, dur, who)])

print()
print("medians (transactions/s; a transaction is one acquire+release pair,")
print("or one attempt in the contended and busy cases), 10^3 names:")
print(f"  {'case':32} {'dlock':>10} {'hand SQL':>10} {'advisory':>10} {'floor':>10}")
for scen, label in (("free", "uncontended"), ("hot", "contended, one name"), ("busy", "busy (try fails)")):
    for dur in ("durable", "cpu", "async"):
        print(f"  {label + ', ' + dur:32} " +
              " ".join(f"{tps('1000', scen, dur, w):10.0f}" for w in ("dlock", "hand", "adv", "floor")))

print()
print("WAL flushes per transaction (pg_stat_wal.wal_sync; pg_stat_io from 18), uncontended, 10^3 names:")
for dur in ("durable", "cpu", "async"):
    print(f"  {dur:8} " + "  ".join(f"{w} {statistics.median(flushes[('1000', 'free', dur, w)]):.2f}"
                                  for w in ("dlock", "hand", "adv") if ('1000', 'free', dur, w) in flushes))

checks = []
def check(name, value, target):
    ok = value >= target
    checks.append(ok)
    print(f"  {name:62} {value:6.2f}x  (target >= {target}x)  {'met' if ok else 'MISSED'}")

print()
print("ratios:")
check("durable pairs/s, dlock / hand SQL", tps("1000", "free", "durable", "dlock") / tps("1000", "free", "durable", "hand"), 1.0)
# CPU-bound, the target is stated against the floor (below), the least any
# lease whose acquire and release both commit can cost.
if ("1000", "free", "cpu", "floor") in med:
    check("CPU-bound (fsync=off) pairs/s, dlock / floor", tps("1000", "free", "cpu", "dlock") / tps("1000", "free", "cpu", "floor"), 0.9)
check("busy path, dlock / failed pg_try_advisory_lock", tps("1000", "busy", "durable", "dlock") / tps("1000", "busy", "durable", "adv"), 0.9)
# The floor: two one-row UPDATE transactions per pair, the least any lease
# with a durable acquire and release costs.  Its ratio to the hand-written
# lease is the most a lease can reach in this benchmark.
for dur, label in (("durable", "durable"), ("cpu", "CPU-bound (fsync=off)")):
    if ("1000", "free", dur, "floor") in med:
        print(f"  {'ceiling, ' + label + ': two one-row UPDATEs / hand SQL':62} "
              f"{tps('1000', 'free', dur, 'floor') / tps('1000', 'free', dur, 'hand'):6.2f}x  "
              f"(dlock / floor {tps('1000', 'free', dur, 'dlock') / tps('1000', 'free', dur, 'floor'):.2f}x)")
# For information: synchronous_commit=off cannot make dlock's commits
# asynchronous (tokens must survive a crash), so it is no target.
if ("1000", "free", "async", "dlock") in med:
    print(f"  {'synchronous_commit=off pairs/s, dlock / hand SQL (no target)':62} "
          f"{tps('1000', 'free', 'async', 'dlock') / tps('1000', 'free', 'async', 'hand'):6.2f}x")
sizes = sorted({int(r[0]) for r in rows})
for big in sizes[1:]:
    r = lat(str(big), "free", "async", "dlock") / lat("1000", "free", "async", "dlock")
    ok = r <= 1.2
    checks.append(ok)
    print(f"  {'dlock pair latency, 10^%d names / 10^3 names' % len(str(big)[1:]):62} {r:6.2f}x  (target <= 1.2x)  {'met' if ok else 'MISSED'}")
print(f"\n{sum(checks)} of {len(checks)} targets met")
EOF

if [ "${DLOCK_BENCH_ONLY:-}" = ratios ]; then
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
	exit 0
fi

echo
echo "waiting (test/bench/wait.py):"
/usr/bin/python3 "$here/wait.py" ${DLOCK_BENCH_QUICK:+--quick}

echo
echo "profile of the busy path (test/bench/profile.sh):"
bash "$here/profile.sh"

echo
echo "churn (test/bench/bloat.sh):"
bash "$here/bloat.sh"

echo
echo "fencing cost (test/bench/fence.sh):"
bash "$here/fence.sh"

echo
echo "lease events cost (test/bench/events.sh):"
bash "$here/events.sh"

echo
echo "the SQL edition side by side (test/bench/sql_edition.sh):"
bash "$here/sql_edition.sh"

echo
echo "instruction counts (test/bench/instructions.sh, fence_instructions.sh):"
bash "$here/instructions.sh"
bash "$here/fence_instructions.sh"

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
