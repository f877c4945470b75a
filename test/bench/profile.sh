#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/bench/profile.sh: where the busy path spends its time.  8 pgbench
# clients call dlock_acquire on a name held elsewhere; perf samples their
# backends (cpu-clock, user space) and this prints the share of the
# backends' CPU spent inside dlock_acquire and inside its one index lookup
# (LeaseFetch), against the backend's main loop (PostgresMain) and the
# statement's execution (PortalRun).
# Needs perf (Debian's linux-perf); prints a line and exits 0 without it.
set -uo pipefail

if ! command -v perf >/dev/null; then
	echo "  perf is not installed: no profile"
	exit 0
fi
DB=dlock_profile
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
q() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -At "$@"; }

psql -X -q -d postgres -c "SET client_min_messages = warning" \
	-c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" || exit 1
q -c "CREATE EXTENSION dlock" -c "SELECT dlock_acquire('busy', '1 day')" >/dev/null || exit 1
echo "SELECT dlock_acquire('busy', '1 min');" >"$work/busy.sql"

pgbench -n -M prepared -c 8 -j 2 -T 8 -f "$work/busy.sql" "$DB" >"$work/pgbench.out" 2>&1 &
bench=$!
sleep 2
pids=$(psql -X -At -d postgres -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity
                                    WHERE datname = '$DB' AND application_name = 'pgbench'")
if [ -z "$pids" ] || ! perf record -q -e cpu-clock -g -p "$pids" -o "$work/perf.data" -- sleep 4 \
	>/dev/null 2>"$work/perf.err"; then
	echo "  perf could not sample the backends: $(head -1 "$work/perf.err")"
	wait "$bench"
	exit 0
fi
wait "$bench"

perf report -i "$work/perf.data" --children --sort symbol -g none --percent-limit 0.01 \
	2>/dev/null >"$work/report.txt"
share() { awk -v f="$1" '$3 == "[.]" && $4 == f { print $1; exit }' "$work/report.txt"; }
echo "  busy path, $(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$work/pgbench.out" | cut -d. -f1) calls/s;" \
	"share of the backends' user CPU (perf, cpu-clock):"
for f in PostgresMain PortalRun dlock_acquire LeaseFetch systable_beginscan systable_getnext \
	table_open LockAcquireExtended CommitTransactionCommand; do
	printf '    %-28s %s\n' "$f" "$(share "$f")"
done
psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)"
