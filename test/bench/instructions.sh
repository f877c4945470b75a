#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/instructions.sh: the cells of the speed targets counted in
# instructions per transaction rather than in transactions per second, so
# that the figures do not move with the load of a shared machine (the
# pgbench ratios of run.sh move by up to 20% between runs on a virtual
# machine).  Same method as fence_instructions.sh: a scratch cluster runs
# the statements in single-user mode (postgres --single) under valgrind's
# callgrind, startup taken out by counting 200 and 1,200 runs and dividing
# the difference by 1,000.  Prepared statements, as pgbench -M prepared.
#
#   dlock_pair   EXECUTE acquire(n); EXECUTE release(n)  (two transactions)
#   hand_pair    the hand-written SQL lease, same shape (run.sh's scripts)
#   floor_pair   two one-row UPDATE transactions (run.sh's "floor")
#   dlock_busy   a dlock_acquire of a name held elsewhere
#   adv_busy     a pg_try_advisory_lock that fails (a prepared transaction
#                holds the lock)
#   select       SELECT $1: what any statement costs
#
# Server instructions only: the client, the socket and the kernel's share
# (half of the CPU in run.sh's cells) are not counted.  In single-user mode
# no HOT pruning happens (dlock and the hand lease alike then update their
# indexes), so the pair figures overstate the writes of both.
#
# Needs valgrind; prints a line and exits 0 without it.  As root, the
# cluster runs as the user postgres.  Usage: PG_CONFIG=... bash
# test/bench/instructions.sh [case...] (dlock installed into that
# PostgreSQL).
set -uo pipefail

. "$(dirname "$0")/callgrind.sh"
single >"$work/setup.log" 2>&1 <<'SETUP'
CREATE EXTENSION dlock;
CREATE TABLE hand_lease (name text PRIMARY KEY, token bigint NOT NULL, owner text, expires_at timestamptz NOT NULL);
CREATE SEQUENCE hand_token_seq;
INSERT INTO hand_lease SELECT 'pre' || i, i, NULL, now() - interval '1 s' FROM generate_series(1, 1000) i;
INSERT INTO hand_lease VALUES ('busy', nextval('hand_token_seq'), NULL, now() + interval '1 day');
SELECT count(dlock_acquire('pre' || i, '1 ms')) FROM generate_series(1, 1000) i;
SELECT dlock_acquire('busy', '1 day');
CREATE TABLE floor_pair (id int PRIMARY KEY, v int NOT NULL);
INSERT INTO floor_pair SELECT i, 0 FROM generate_series(1, 1000) i;
VACUUM ANALYZE hand_lease;
VACUUM ANALYZE dlock_lease;
VACUUM ANALYZE floor_pair;
BEGIN;
SELECT pg_advisory_xact_lock(1, 999999);
PREPARE TRANSACTION 'holder';
SETUP
grep -q ERROR "$work/setup.log" && { grep -m3 ERROR "$work/setup.log" >&2; exit 1; }

# (Single-user mode: one statement per line.)  The release's token: the one the acquire just drew (currval of the
# counter; no jump happens in a history that already jumped at setup).
declare -A prep=(
	[dlock_pair]="PREPARE a(int) AS SELECT dlock_acquire('pre' || \$1, '1 min');
PREPARE r(int) AS SELECT dlock_release('pre' || \$1, currval('dlock_token_seq'));"
	[hand_pair]="PREPARE a(int) AS WITH t AS (INSERT INTO hand_lease AS l (name, token, expires_at) VALUES ('pre' || \$1, nextval('hand_token_seq'), clock_timestamp() + interval '1 min') ON CONFLICT (name) DO UPDATE SET token = excluded.token, owner = excluded.owner, expires_at = excluded.expires_at WHERE l.expires_at <= clock_timestamp() RETURNING token) SELECT coalesce(max(token), 0) AS tok FROM t;
PREPARE r(int) AS UPDATE hand_lease SET expires_at = clock_timestamp() WHERE name = 'pre' || \$1 AND token = currval('hand_token_seq');"
	[floor_pair]="PREPARE a(int) AS UPDATE floor_pair SET v = v + 1 WHERE id = \$1;
PREPARE r(int) AS UPDATE floor_pair SET v = v + 1 WHERE id = \$1;"
	[dlock_busy]="PREPARE a(int) AS SELECT dlock_acquire('busy', '1 min') IS NULL AS busy;"
	[adv_busy]="PREPARE a(int) AS SELECT NOT pg_try_advisory_lock(1, 999999) AS busy;"
	[select]="PREPARE a(int) AS SELECT \$1;"
)
count() {
	local who=$1 n=$2 i k total
	{
		echo "${prep[$who]}"
		for ((i = 0; i < n; i++)); do
			k=$((i * 7919 % 1000 + 1))
			echo "EXECUTE a($k);"
			case $who in *_pair) echo "EXECUTE r($k);" ;; esac
		done
	} >"$work/in.sql"
	total=$(collected) || return 1
	# A busy case that got the lock measured the wrong thing.
	if [ "${who%_busy}" != "$who" ] && grep -q 'busy = "f"' "$work/out.log"; then
		echo "$who: the lock was free" >&2
		return 1
	fi
	echo "$total"
}

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(dlock_pair hand_pair floor_pair dlock_busy adv_busy select)
declare -A k
echo "instructions per pair or attempt (callgrind, postgres --single, prepared):"
for who in "${cases[@]}"; do
	a=$(count "$who" 200) && b=$(count "$who" 1200) || exit 1
	k[$who]=$(per_run "$a" "$b")
	printf '  %-11s %7.1fk\n' "$who" "${k[$who]}"
done
if [ -n "${k[dlock_pair]:-}" ] && [ -n "${k[hand_pair]:-}" ]; then
	awk -v d="${k[dlock_pair]}" -v h="${k[hand_pair]}" -v f="${k[floor_pair]:-0}" 'BEGIN {
		printf "  hand / dlock pair %.2fx", h / d
		if (f > 0) printf "; hand / floor %.2fx", h / f
		printf "\n" }'
fi
if [ -n "${k[dlock_busy]:-}" ] && [ -n "${k[adv_busy]:-}" ]; then
	awk -v d="${k[dlock_busy]}" -v a="${k[adv_busy]}" 'BEGIN { printf "  failed try-lock / busy acquire %.2fx\n", a / d }'
fi
