#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/events.sh: what lease events (dlock.events) cost, run by "make
# bench" (from run.sh) or by hand (PGHOST/PGPORT/PGUSER set, a superuser,
# dlock installable).  The cluster must be durable (fsync on, the default
# synchronous_commit): that is where the cost is, since PostgreSQL
# serializes the commits of notifying transactions across their WAL flush.
#
# pgbench, one acquire + release pair per transaction (two commits, each
# with an event when they are on), every client on a name of its own so
# that nobody waits for a lease; dlock.events off and on alternating (ALTER
# DATABASE ... SET, so every pgbench session starts with it), ROUNDS rounds.
# One listener session LISTENs on dlock throughout and counts what it gets:
# the "on" runs must have sent exactly two events per pair, the "off" runs
# none.  Prints the medians in pairs per second and the ratio on / off.
#
# Environment: DLOCK_BENCH_SECONDS (per run, default 5), DLOCK_BENCH_ROUNDS
# (default 3), DLOCK_BENCH_CLIENTS (default 8), DLOCK_BENCH_QUICK=1 (1 s, 1
# round).
set -uo pipefail

T=${DLOCK_BENCH_SECONDS:-5}
ROUNDS=${DLOCK_BENCH_ROUNDS:-3}
C=${DLOCK_BENCH_CLIENTS:-8}
if [ -n "${DLOCK_BENCH_QUICK:-}" ]; then
	T=1 ROUNDS=1
fi
DB=dlock_bench_events
work=$(mktemp -d)
listener_pid=

q() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -At "$@"; }

cleanup() {
	[ -n "$listener_pid" ] && kill "$listener_pid" 2>/dev/null
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

psql -X -q -d postgres -c "SET client_min_messages = warning" \
	-c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" || exit 1
q -c "CREATE EXTENSION dlock" || exit 1
fsync=$(q -c "SHOW fsync")
sync_commit=$(q -c "SHOW synchronous_commit")

cat >"$work/pair.sql" <<'SCRIPT'
SELECT dlock_acquire('bench/events/' || :client_id, '1 min') AS tok \gset
SELECT dlock_release('bench/events/' || :client_id, :tok);
SCRIPT

# The listener: counts the events until the payload "stop".
/usr/bin/python3 - "$DB" "$work/received" <<'LISTENER' &
import sys
import psycopg
conn = psycopg.connect(dbname=sys.argv[1], autocommit=True)
conn.execute("LISTEN dlock")
open(sys.argv[2] + ".ready", "w").close()
count = 0
for n in conn.notifies():
    if n.payload == "stop":
        break
    count += 1
with open(sys.argv[2], "w") as f:
    f.write(f"{count}\n")
LISTENER
listener_pid=$!
for _ in $(seq 100); do
	[ -e "$work/received.ready" ] && break
	sleep 0.1
done
[ -e "$work/received.ready" ] || { echo "the listener did not start" >&2; exit 1; }

echo "pgbench: $C clients, ${T}s per run, $ROUNDS rounds, fsync $fsync, synchronous_commit $sync_commit"
results=$work/results.tsv
for round in $(seq "$ROUNDS"); do
	for events in off on; do
		q -c "ALTER DATABASE $DB SET dlock.events = $events" || exit 1
		out=$(pgbench -n -M prepared -c "$C" -j 2 -T "$T" -f "$work/pair.sql" "$DB" 2>&1)
		tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
		pairs=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
		if [ -z "$tps" ] || [ -z "$pairs" ] || grep -q 'ERROR' <<<"$out"; then
			echo "pgbench failed with dlock.events = $events:" >&2
			echo "$out" >&2
			exit 1
		fi
		printf '%s\t%s\t%s\n' "$events" "$tps" "$pairs" >>"$results"
		printf '  round %d  events %-3s %10.0f pairs/s\n' "$round" "$events" "$tps"
	done
done
q -c "ALTER DATABASE $DB RESET dlock.events" -c "SELECT pg_notify('dlock', 'stop')" >/dev/null || exit 1
wait "$listener_pid"
listener_pid=

/usr/bin/python3 - "$results" "$work/received" <<'REPORT'
import statistics, sys
runs = {"off": [], "on": []}
pairs_on = 0
for line in open(sys.argv[1]):
    events, tps, pairs = line.split()
    runs[events].append(float(tps))
    if events == "on":
        pairs_on += int(pairs)
received = int(open(sys.argv[2]).read())
off, on = statistics.median(runs["off"]), statistics.median(runs["on"])
print(f"medians: events off {off:.0f} pairs/s, events on {on:.0f} pairs/s")
print(f"  on / off   {on / off:5.2f}x")
ok = received == 2 * pairs_on
print(f"  the listener received {received} events for {pairs_on} pairs with events on "
      f"(two each): {'right' if ok else 'WRONG'}")
sys.exit(0 if ok else 1)
REPORT
