#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/bloat.sh: no bloat under churn.  PAIRS acquire/release pairs
# (default 10^6) over 1,000 names, 8 clients; the lease table and its index
# must stay within 2x of their size after the first 10^4 pairs.  Prints the
# sizes, the share of HOT updates, and "met" or "MISSED".
set -uo pipefail

PAIRS=${DLOCK_BLOAT_PAIRS:-1000000}
[ -n "${DLOCK_BENCH_QUICK:-}" ] && PAIRS=100000
C=8
DB=dlock_bloat
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

q() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -At "$@"; }

psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" || exit 1
q -c "CREATE EXTENSION dlock" || exit 1

cat >"$work/churn.sql" <<'SQL'
\set n random(1, 1000)
SELECT coalesce(dlock_acquire('b' || :n, '1 min'), 0) AS tok \gset
\if :tok > 0
SELECT dlock_release('b' || :n, :tok);
\endif
SQL

sizes() {
	q -c "SELECT pg_relation_size('dlock_lease'), pg_indexes_size('dlock_lease')"
}
churn() {
	pgbench -n -M prepared -c "$C" -j 2 -t "$(($1 / C))" -f "$work/churn.sql" "$DB" |
		sed -n 's/^tps = \([0-9.]*\) .*/\1/p'
}

start=$(q -c "SELECT coalesce(max(token), 0) FROM dlock_leases")
tps1=$(churn 10000)
IFS='|' read -r heap1 idx1 <<<"$(sizes)"
tps2=$(churn $((PAIRS - 10000)))
IFS='|' read -r heap2 idx2 <<<"$(sizes)"
granted=$(q -c "SELECT max(token) - $start FROM dlock_leases")
hot=$(q -c "SELECT round(100.0 * n_tup_hot_upd / greatest(n_tup_upd, 1), 1) FROM pg_stat_user_tables WHERE relname = 'dlock_lease'")

echo "  $PAIRS attempts over 1,000 names, $C clients; $granted acquisitions granted; ${tps1%.*}/${tps2%.*} attempts/s"
echo "  after 10^4 pairs: table $((heap1 / 1024)) kB, index $((idx1 / 1024)) kB"
echo "  after all pairs:  table $((heap2 / 1024)) kB, index $((idx2 / 1024)) kB; ${hot}% of updates were HOT"
ratio=$(/usr/bin/python3 -c "print(f'{max($heap2 / $heap1, $idx2 / $idx1):.2f}')")
if /usr/bin/python3 -c "import sys; sys.exit(0 if $heap2 <= 2 * $heap1 and $idx2 <= 2 * $idx1 else 1)"; then
	echo "  growth ${ratio}x (target <= 2x): met"
else
	echo "  growth ${ratio}x (target <= 2x): MISSED"
fi
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
