#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
#
# test/sql_edition/wait_figures.sh: the SQL edition's waiting figures
# (issue 26, docs/editions.md), against a database where the edition is
# installed in schema dlock (test/sql_edition/run.sh makes one; run this
# with PGHOST/PGPORT/PGDATABASE pointing at it, as a superuser, on the
# same machine: it reads /proc for CPU time).
#
#   1. hand-over: a holder releases while another session waits; the delay
#      from the release's commit to the waiter's acquisition (the
#      acquired_at it wrote), N times; prints the median and the 90th
#      percentile.
#   2. CPU: W waiters on one held name for S seconds; prints the CPU time
#      their backends used, as a share of one core.
# Not a test: figures, printed.  N, W, S from the environment (50, 200, 5).
set -euo pipefail
n=${N:-50}
w=${W:-200}
s=${S:-5}
psql=(psql -X -q -At -v ON_ERROR_STOP=1)

"${psql[@]}" -c "SELECT dlock.dlock_release(name, token) FROM dlock.dlock_leases WHERE held AND name LIKE 'figures-%'" >/dev/null
delays=()
for i in $(seq 1 "$n"); do
	t=$("${psql[@]}" -c "SELECT dlock.dlock_acquire('figures-handover', '1 min')")
	"${psql[@]}" -c "SELECT dlock.dlock_acquire('figures-handover', '1 min', '10 s')" >/dev/null &
	waiter=$!
	sleep 0.0$((RANDOM % 50 + 20))
	# The clock at the release (its commit follows at once, fsync or not).
	released=$("${psql[@]}" -c "SELECT extract(epoch FROM clock_timestamp())
								 FROM dlock.dlock_release('figures-handover', $t)")
	wait $waiter
	d=$("${psql[@]}" -c "SELECT round((extract(epoch FROM acquired_at) - $released) * 1000, 2)
						   FROM dlock.dlock_lease WHERE name = 'figures-handover'")
	delays+=("$d")
	t=$("${psql[@]}" -c "SELECT token FROM dlock.dlock_leases WHERE name = 'figures-handover'")
	"${psql[@]}" -c "SELECT dlock.dlock_release('figures-handover', $t)" >/dev/null
done
printf '%s\n' "${delays[@]}" | sort -n | awk '{a[NR]=$1} END {
	printf "hand-over after a release, %d times: median %.2f ms, 90th percentile %.2f ms\n",
		NR, a[int((NR+1)/2)], a[int(NR*0.9)]}'

# CPU of W waiters on one held name.
t=$("${psql[@]}" -c "SELECT dlock.dlock_acquire('figures-cpu', '10 min')")
pids=()
for i in $(seq 1 "$w"); do
	"${psql[@]}" -c "SELECT dlock.dlock_acquire('figures-cpu', '1 min', '$((s + 20)) s')" >/dev/null &
	pids+=($!)
done
sleep 3
backends=$("${psql[@]}" -c "SELECT pid FROM pg_stat_activity WHERE query LIKE '%''figures-cpu'', ''1 min''%' AND pid <> pg_backend_pid()")
ticks() { local sum=0; for p in $backends; do
	[ -r /proc/$p/stat ] && sum=$((sum + $(awk '{print $14 + $15}' /proc/$p/stat))); done; echo $sum; }
hz=$(getconf CLK_TCK)
t0=$(ticks); sleep "$s"; t1=$(ticks)
echo "$(echo "$backends" | wc -w) waiters on one held name for $s s: $(awk -v d=$((t1 - t0)) -v hz="$hz" -v s="$s" 'BEGIN {printf "%.2f", 100 * d / hz / s}')% of one core"
"${psql[@]}" -c "SELECT dlock.dlock_release('figures-cpu', $t)" >/dev/null
wait "${pids[@]}" 2>/dev/null || true
