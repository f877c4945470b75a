#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/prometheus.sh: examples/prometheus/queries.yaml works with
# Debian's postgres_exporter (issue 27 item 2), one suite of "make check".
# It makes a scratch database, runs a known sequence of dlock calls,
# starts the exporter on loopback against it with the query file, scrapes
# /metrics and checks the dlock series and their values.  About 5 s;
# prints TAP.  Needs the Debian package prometheus-postgres-exporter.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
exporter=/usr/bin/prometheus-postgres-exporter
db=dlock_prometheus
n=0
failed=0

ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then echo "ok $n - $2"; else echo "not ok $n - $2"; failed=$((failed + 1)); fi
}

if [ ! -x "$exporter" ]; then
	echo "1..1"
	echo "not ok 1 - $exporter exists (Debian package prometheus-postgres-exporter)"
	exit 1
fi

q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }
psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
	-c "CREATE DATABASE $db" || exit 1
# The known sequence (and the pinned lease below: a fifth acquisition): two acquisitions, a busy answer, a renewal, a
# release, two owner renewals, a takeover of an expired lease.
q >/dev/null <<'SQL' || exit 1
CREATE EXTENSION dlock;
SELECT dlock_acquire('job', '1 min') AS t \gset
SELECT dlock_acquire('job', '1 min');
SELECT dlock_renew('job', :t, '1 min');
SELECT dlock_release('job', :t);
SELECT dlock_acquire('leader', '1 min', owner => 'pod-1');
SELECT dlock_acquire('leader', '1 min', owner => 'pod-1');
SELECT dlock_acquire('leader', '1 min', owner => 'pod-1');
SELECT dlock_acquire('short', '10 ms');
SELECT pg_sleep(0.05);
SELECT dlock_acquire('short', '1 min');
SQL
shared=$(q -c "SELECT count(*) > 0 FROM dlock_stats_shared() WHERE name IS NULL")

# The exporter's role: a plain login role in pg_monitor, as
# docs/operations.md says; without pg_read_all_stats's privileges it would
# not see since for another role's pinning transaction, and the pinning
# alert would never fire.  A pinner of another role, app: a lease that
# expired while a transaction that checked it stays open.
psql -X -q -d postgres >/dev/null <<'SQL' || exit 1
SET client_min_messages = warning;
DROP ROLE IF EXISTS dlock_prom_exporter;
DROP ROLE IF EXISTS dlock_prom_app;
CREATE ROLE dlock_prom_exporter LOGIN IN ROLE pg_monitor;
CREATE ROLE dlock_prom_app LOGIN;
SQL
q >/dev/null -c "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO dlock_prom_app" || exit 1
pin_token=$(psql -X -A -t -q -U dlock_prom_app -d "$db" -c "SELECT dlock_acquire('pinned', '300 ms')") || exit 1
fifo=$(mktemp -u)
mkfifo "$fifo"
psql -X -A -t -q -U dlock_prom_app -d "$db" <"$fifo" >/dev/null 2>&1 &
pinner=$!
exec 9>"$fifo"
echo "BEGIN; SELECT dlock_check('pinned', $pin_token);" >&9
for _ in $(seq 1 100); do
	[ "$(q -c "SELECT count(*) FROM dlock_waiters WHERE kind = 'pinning' AND name = 'pinned'")" = 1 ] && break
	sleep 0.1
done
q -c "SELECT pg_sleep(1.2)" >/dev/null

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
DATA_SOURCE_NAME="postgresql://dlock_prom_exporter@/$db?host=$PGHOST&port=$PGPORT&sslmode=disable" \
	"$exporter" --web.listen-address="127.0.0.1:$port" --disable-default-metrics \
	--disable-settings-metrics --extend.query-path="$top/examples/prometheus/queries.yaml" \
	>"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exec 9>&-; wait "$pinner" 2>/dev/null; rm -f "$log" "$fifo"; psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS dlock_prom_exporter" -c "DROP ROLE IF EXISTS dlock_prom_app" >/dev/null 2>&1' EXIT

metrics=
for _ in $(seq 1 100); do
	metrics=$(/usr/bin/python3 -c "import urllib.request, sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=5).read().decode())" 2>/dev/null) &&
		grep -q '^dlock_stats_total_acquisitions' <<<"$metrics" && break
	sleep 0.1
done
grep -q '^dlock_stats_total_acquisitions' <<<"$metrics"
ok $? "the exporter serves dlock series on 127.0.0.1:$port"

# value SERIES: the value of one series (a metric name with its labels,
# but the server label the exporter adds to every series of a query file).
value() {
	sed -e 's/server="[^"]*",\{0,1\}//' -e 's/,}/}/' -e 's/{}//' <<<"$metrics" |
		awk -v s="$1" '$1 == s { print $2 }'
}
expect() {
	local got
	got=$(value "$1")
	[ "$got" = "$2" ]
	ok $? "$1 is $2 (got '${got}')"
}
expect dlock_stats_total_acquisitions 5
expect dlock_stats_total_owner_renewals 2
expect dlock_stats_total_renewals 1
expect dlock_stats_total_releases 1
expect dlock_stats_total_takeovers 1
expect dlock_stats_total_lost 1
expect 'dlock_stats_releases{name="job"}' 1
expect 'dlock_stats_acquisitions{name="leader"}' 1
expect 'dlock_stats_takeovers{name="short"}' 1
expect dlock_leases_held 2
expect dlock_leases_idle 2
expect 'dlock_waiters_backends{kind="waiting"}' 0
expect 'dlock_waiters_backends{kind="pinning"}' 1
# The pinning transaction began over a second ago: the exporter's role
# sees since (pg_monitor), so DlockLeasePinned can fire.
oldest=$(value 'dlock_waiters_oldest_seconds{kind="pinning"}')
/usr/bin/python3 -c "import sys; sys.exit(0 if float('${oldest:-0}') >= 1 else 1)" 2>/dev/null
ok $? "dlock_waiters_oldest_seconds{kind=\"pinning\"} is at least 1 for the exporter's role (got '${oldest}')"
if [ "$shared" = t ]; then
	expect dlock_stats_total_busy 1
	expect 'dlock_stats_busy{name="job"}' 1
else
	# Without shared_preload_libraries the shared counters are NULL: NaN.
	expect dlock_stats_total_busy NaN
	expect 'dlock_stats_busy{name="job"}' NaN
fi
grep -q '^# TYPE dlock_stats_total_acquisitions counter' <<<"$metrics"
ok $? "dlock_stats_total_acquisitions is a counter"
if [ "$failed" -ne 0 ]; then
	echo "# exporter log:"
	sed 's/^/# /' "$log"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
