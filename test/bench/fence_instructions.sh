#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/fence_instructions.sh: what the fence costs, counted in
# instructions per transaction rather than in transactions per second, so
# that the figures do not move with the load of a shared machine.
#
# A scratch cluster (initdb in a temporary directory, nothing else touched)
# runs the statements of test/bench/fence.sh in single-user mode (postgres
# --single) under valgrind's callgrind; each statement is one transaction.
# Startup is taken out by counting 200 and 1,200 transactions and dividing
# the difference by 1,000.  Needs valgrind; prints a line and exits 0
# without it.  As root, the cluster runs as the user postgres.
#
#   plain    UPDATE plain SET v = v + 1 WHERE id = ...
#   select1  SELECT 1; UPDATE plain ...        (the cost of a second statement)
#   assert   SELECT dlock_assert(...); UPDATE plain ...  (the declaration)
#   fenced   SELECT dlock_assert(...); UPDATE fenced ... (declaration + trigger)
#   check    UPDATE plain ... AND dlock_check(...)
#   floor    SELECT 1; UPDATE noop ...  (a BEFORE UPDATE trigger doing no work)
#
# Usage: PG_CONFIG=... bash test/bench/fence_instructions.sh (dlock installed
# into that PostgreSQL).
set -uo pipefail

. "$(dirname "$0")/callgrind.sh"
single >"$work/setup.log" 2>&1 <<SETUP
CREATE EXTENSION dlock;
CREATE TABLE fenced (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER fenced_fence BEFORE INSERT OR UPDATE OR DELETE ON fenced FOR EACH ROW EXECUTE FUNCTION dlock_fence('bench', 'token');
CREATE TABLE plain (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TABLE noop (id int PRIMARY KEY, v int NOT NULL, token bigint);
CREATE TRIGGER noop_trigger BEFORE UPDATE ON noop FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger();
COPY (SELECT dlock_acquire('bench', '1 day')) TO '$work/token';
INSERT INTO fenced SELECT i, 0, (SELECT token FROM dlock_leases WHERE name = 'bench') FROM generate_series(1, 1000) i;
INSERT INTO plain SELECT * FROM fenced;
INSERT INTO noop SELECT * FROM fenced;
VACUUM ANALYZE noop;
VACUUM ANALYZE fenced;
VACUUM ANALYZE plain;
SETUP
tok=$(cat "$work/token" 2>/dev/null)
[ -n "$tok" ] || { cat "$work/setup.log" >&2; exit 1; }

declare -A stmt=(
	[plain]="UPDATE plain SET v = v + 1 WHERE id = %d;"
	[select1]="SELECT 1; UPDATE plain SET v = v + 1 WHERE id = %d;"
	[assert]="SELECT dlock_assert('bench', $tok); UPDATE plain SET v = v + 1 WHERE id = %d;"
	[fenced]="SELECT dlock_assert('bench', $tok); UPDATE fenced SET v = v + 1 WHERE id = %d;"
	[floor]="SELECT 1; UPDATE noop SET v = v + 1 WHERE id = %d;"
	[check]="UPDATE plain SET v = v + 1 WHERE id = %d AND dlock_check('bench', $tok);"
)
count() {
	local who=$1 n=$2 i
	for ((i = 0; i < n; i++)); do
		printf "${stmt[$who]}\n" $((i * 7919 % 1000 + 1))
	done >"$work/in.sql"
	collected
}

echo "instructions per transaction (callgrind, postgres --single, fsync off):"
for who in plain select1 assert fenced check floor; do
	a=$(count "$who" 200) && b=$(count "$who" 1200) || exit 1
	printf '  %-8s %6.1fk\n' "$who" "$(per_run "$a" "$b")"
done
