#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/example_worker.sh: examples/worker.py, the job-runner pattern
# from an application (acquire, fenced writes, renew, release), with psycopg.
#
# test/run ("make check") runs this as the unprivileged test user, in the
# scratch copy of the repository, with PGHOST, PGPORT, PGUSER and PGDATABASE
# set for a throwaway cluster.  It uses Debian's /usr/bin/python3 and
# python3-psycopg (python3 on PATH may be another Python without psycopg).
# It creates and drops its own database, prints TAP, takes about 10 seconds,
# and exits non-zero on any failure.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
WORKER=$top/examples/worker.py
if ! "$PY" -c 'import psycopg' 2>/dev/null; then
	echo "Bail out! $PY cannot import psycopg (install python3-psycopg)"
	exit 1
fi

DB=dlock_worker_$$
work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-worker-test.XXXXXX") || exit 1
pids=()

cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	wait 2>/dev/null
	dropdb --if-exists --force "$DB" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

. "$(cd "$(dirname "$0")/../lib" && pwd)/tap.sh"
is() {
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got:  '$1'" "want: '$2'"; fi
}
# diag FILE...: show files as TAP comments.
diag() { cat "$@" 2>/dev/null | sed 's/^/#   | /'; true; }

q() { psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$DB" "$@"; }

# worker OUT ARGS...: run the worker in the background; its pid in $bg.
worker() {
	local out=$1
	shift
	"$PY" "$WORKER" "$@" >"$out" 2>&1 &
	bg=$!
	pids+=("$bg")
}

# reap PID: wait for it; its exit status in $rc.
reap() {
	wait "$1"
	rc=$?
}

# await_held JOB SECONDS: wait until the job's lease is held.
await_held() {
	local tenths=$(($2 * 10))
	until [ "$(q -c "SELECT count(*) FROM dlock_leases WHERE name = '$1' AND held")" = 1 ]; do
		((tenths-- > 0)) || return 1
		sleep 0.1
	done
}

createdb "$DB" || { echo "Bail out! createdb $DB failed"; exit 1; }
. "$top/test/lib/install_dlock.sh"
install_dlock "$DB" || { echo "Bail out! installing dlock (edition ${DLOCK_EDITION:-c}) failed"; exit 1; }
export PGDATABASE=$DB

"$PY" "$WORKER" --setup
is "$?" 0 "worker.py --setup creates its table"

# --- Two workers at once, both willing to wait: one after the other --------
worker "$work/a.out" --job serial --ttl 5 --wait 10 --steps 3 --step-seconds 0.2
a=$bg
worker "$work/b.out" --job serial --ttl 5 --wait 10 --steps 3 --step-seconds 0.2
b=$bg
reap "$a"
rca=$rc
reap "$b"
is "$rca$rc" 00 "two workers on one job both finish"
is "$(q -c "SELECT count(*) || ' rows, ' || count(DISTINCT token) || ' tokens' FROM job_result WHERE job = 'serial'")" \
	"6 rows, 2 tokens" "each wrote its three steps under its own token"
overlap=$(q -c "
	WITH span AS (
		SELECT token, min(written_at) AS first, max(written_at) AS last
		  FROM job_result WHERE job = 'serial' GROUP BY token)
	SELECT count(*) FROM span s1 JOIN span s2
	    ON s1.token < s2.token AND s2.first < s1.last")
is "$overlap" 0 "their writes did not interleave: the second began after the first ended"
if grep -q "released 'serial'" "$work/a.out" && grep -q "released 'serial'" "$work/b.out"; then
	ok "both released the lease"
else
	not_ok "both released the lease"
	diag "$work/a.out" "$work/b.out"
fi

# --- Busy --------------------------------------------------------------------
worker "$work/c.out" --job busy --ttl 5 --steps 2 --step-seconds 1
c=$bg
await_held busy 10
"$PY" "$WORKER" --job busy --ttl 5 --steps 1 --step-seconds 0 >"$work/d.out" 2>&1
is "$?" 75 "a second worker without --wait: busy, exit 75"
reap "$c"
is "$rc" 0 "the holder finishes"
is "$(q -c "SELECT count(DISTINCT token) FROM job_result WHERE job = 'busy'")" 1 \
	"only the holder wrote"

# --- Renewal: a job longer than its TTL keeps its lease -----------------------
# The job runs 5 s, long enough that the second worker (whose Python start-up
# alone can take more than a second on a loaded machine) meets it still held.
worker "$work/e.out" --job long --ttl 1 --steps 20 --step-seconds 0.25
e=$bg
await_held long 10
sleep 1.2
"$PY" "$WORKER" --job long --ttl 5 --steps 1 --step-seconds 0 >"$work/f.out" 2>&1
is "$?" 75 "past its first TTL, the renewed lease is still busy for others"
reap "$e"
is "$rc" 0 "a job longer than its TTL finishes, renewing as it goes"
is "$(q -c "SELECT count(*) FROM job_result WHERE job = 'long'")" 20 "all its steps were written"

# --- Fencing: a holder that stalls past its lease is refused -----------------
# The slow worker's step takes 1.5 s with a 1 s lease; a second worker takes
# the expired lease over and finishes; the slow one's write is then refused.
worker "$work/slow.out" --job fenced --ttl 1 --steps 2 --step-seconds 1.5
slow=$bg
await_held fenced 10
worker "$work/fast.out" --job fenced --ttl 5 --wait 5 --steps 2 --step-seconds 0.1
fast=$bg
reap "$fast"
rcf=$rc
reap "$slow"
rcs=$rc
is "$rcf" 0 "the worker that took over finishes"
is "$rcs" 70 "the stalled worker stops with exit 70"
if grep -q "stale fencing token" "$work/slow.out"; then
	ok "the stalled worker was refused with a stale fencing token (LK001)"
else
	not_ok "the stalled worker was refused with a stale fencing token (LK001)"
	diag "$work/slow.out"
fi
slow_token=$(sed -n "s/.*acquired 'fenced' with token \([0-9]*\).*/\1/p" "$work/slow.out")
fast_token=$(sed -n "s/.*acquired 'fenced' with token \([0-9]*\).*/\1/p" "$work/fast.out")
is "$(q -c "SELECT count(*) FROM job_result WHERE job = 'fenced' AND token = ${slow_token:-0}")" 0 \
	"nothing the stalled worker wrote committed"
is "$(q -c "SELECT count(*) FROM job_result WHERE job = 'fenced' AND token = ${fast_token:-0}")" 2 \
	"the new holder's steps are all there"
is "$([ "${fast_token:-0}" -gt "${slow_token:-0}" ] && echo yes)" yes "the new holder's token is the higher one"

tap_done
