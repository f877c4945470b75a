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
# The known sequence: two acquisitions, a busy answer, a renewal, a
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

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp)
DATA_SOURCE_NAME="postgresql://$(id -un)@/$db?host=$PGHOST&port=$PGPORT&sslmode=disable" \
	"$exporter" --web.listen-address="127.0.0.1:$port" --disable-default-metrics \
	--disable-settings-metrics --extend.query-path="$top/examples/prometheus/queries.yaml" \
	>"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$log"; psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1' EXIT

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
expect dlock_stats_total_acquisitions 4
expect dlock_stats_total_owner_renewals 2
expect dlock_stats_total_renewals 1
expect dlock_stats_total_releases 1
expect dlock_stats_total_takeovers 1
expect dlock_stats_total_lost 1
expect 'dlock_stats_releases{name="job"}' 1
expect 'dlock_stats_acquisitions{name="leader"}' 1
expect 'dlock_stats_takeovers{name="short"}' 1
expect dlock_leases_held 2
expect dlock_leases_idle 1
expect 'dlock_waiters_backends{kind="waiting"}' 0
expect 'dlock_waiters_backends{kind="pinning"}' 0
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
