#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/fence.sh: what the dlock_fence trigger costs, run by "make bench"
# (from run.sh) or by hand (PGHOST/PGPORT/PGUSER set, a superuser, dlock
# installable).
#
# pgbench, one transaction per run of each script, contenders alternating:
#   fenced   SELECT dlock_assert(...) \; UPDATE fenced ... (one declaration and
#            one single-row UPDATE through the trigger, one round trip)
#   plain    the same UPDATE on a table without the trigger
#   check    UPDATE plain ... WHERE ... AND dlock_check(...) (the guarded
#            statement: the protection without the trigger)
#   floor    SELECT 1 \; UPDATE noop ... (a second statement, and a BEFORE
#            UPDATE row trigger in C that does no work: PostgreSQL's own
#            suppress_redundant_updates_trigger): what any fence with a
#            declaration statement and a row trigger costs at least
# All three in simple query mode (a compound statement cannot be prepared).
# fsync is switched off for the run (ALTER SYSTEM, reset at the end), so that
# the CPU cost shows rather than the disk's.  Prints the medians and the
# ratios; the target is fenced >= 0.85 x plain.
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
DB=dlock_bench_fence
ROWS=1000
work=$(mktemp -d)

q() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -At "$@"; }

cleanup() {
	psql -X -q -d postgres -c "ALTER SYSTEM RESET fsync" -c "SELECT pg_reload_conf()" >/dev/null 2>&1
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

psql -X -q -d postgres -c "SET client_min_messages = warning" \
	-c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" || exit 1
psql -X -q -d postgres -c "ALTER SYSTEM SET fsync = off" -c "SELECT pg_reload_conf()" >/dev/null || exit 1
cat >"$work/setup.sql" <<SETUP
CREATE EXTENSION dlock;
CREATE TABLE fenced (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER fenced_fence BEFORE INSERT OR UPDATE OR DELETE ON fenced
  FOR EACH ROW EXECUTE FUNCTION dlock_fence('bench', 'token');
CREATE TABLE plain (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TABLE noop (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER noop_trigger BEFORE UPDATE ON noop
  FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();
SELECT dlock_acquire('bench', '1 day') AS tok \gset
INSERT INTO fenced SELECT i, 0, :tok FROM generate_series(1, $ROWS) i;
INSERT INTO plain SELECT i, 0, :tok FROM generate_series(1, $ROWS) i;
INSERT INTO noop SELECT i, 0, :tok FROM generate_series(1, $ROWS) i;
VACUUM ANALYZE noop;
VACUUM ANALYZE fenced;
VACUUM ANALYZE plain;
SELECT :tok;
SETUP
tok=$(q -f "$work/setup.sql") || exit 1

cat >"$work/fenced.sql" <<'SCRIPT'
\set id random(1, :rows)
SELECT dlock_assert('bench', :tok) \; UPDATE fenced SET v = v + 1 WHERE id = :id;
SCRIPT
cat >"$work/plain.sql" <<'SCRIPT'
\set id random(1, :rows)
UPDATE plain SET v = v + 1 WHERE id = :id;
SCRIPT
cat >"$work/floor.sql" <<'SCRIPT'
\set id random(1, :rows)
SELECT 1 \; UPDATE noop SET v = v + 1 WHERE id = :id;
SCRIPT
cat >"$work/check.sql" <<'SCRIPT'
\set id random(1, :rows)
UPDATE plain SET v = v + 1 WHERE id = :id AND dlock_check('bench', :tok);
SCRIPT

echo "pgbench: $C clients, ${T}s per run, $ROUNDS rounds, fsync off, $ROWS rows"
results=$work/results.tsv
for round in $(seq "$ROUNDS"); do
	for who in fenced plain check floor; do
		out=$(pgbench -n -M simple -c "$C" -j 2 -T "$T" -D rows="$ROWS" -D tok="$tok" \
			-f "$work/$who.sql" "$DB" 2>&1)
		tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
		if [ -z "$tps" ] || grep -q 'ERROR' <<<"$out"; then
			echo "pgbench failed for $who:" >&2
			echo "$out" >&2
			exit 1
		fi
		printf '%s\t%s\n' "$who" "$tps" >>"$results"
		printf '  round %d  %-7s %10.0f tps\n' "$round" "$who" "$tps"
	done
done
# The fenced runs must have changed rows: the trigger let the holder in.
changed=$(q -c "SELECT sum(v) FROM fenced")
[ "${changed:-0}" -gt 0 ] || { echo "no fenced UPDATE changed a row" >&2; exit 1; }

/usr/bin/python3 - "$results" <<'REPORT'
import statistics, sys
tps = {}
for line in open(sys.argv[1]):
    who, t = line.split()
    tps.setdefault(who, []).append(float(t))
m = {w: statistics.median(v) for w, v in tps.items()}
print(f"medians: fenced {m['fenced']:.0f}, plain {m['plain']:.0f}, check {m['check']:.0f}, floor {m['floor']:.0f} tps")
r = m["fenced"] / m["plain"]
print(f"  fenced / plain   {r:5.2f}x  (target >= 0.85x: the trigger costs at most 15%)  "
      f"{'met' if r >= 0.85 else 'MISSED'}")
print(f"  check / plain    {m['check'] / m['plain']:5.2f}x")
print(f"  fenced / check   {m['fenced'] / m['check']:5.2f}x")
print(f"  ceiling: floor / plain {m['floor'] / m['plain']:5.2f}x  (the most a fence with a declaration "
      f"statement and a row trigger can reach); fenced / floor {m['fenced'] / m['floor']:5.2f}x")
REPORT
