#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/installcheck.sh: "make installcheck" leaves a database that
# uses dlock alone, one suite of "make check".
#
# A database, dlock_app, uses dlock: a held lease with an owner, a released
# one, a table fenced with the held one.  The suites "make installcheck"
# runs against a server (pg_regress, the isolation tester, pgTAP; the Perl
# TAP suites make clusters of their own) then run with PGDATABASE naming
# dlock_app, which refuses connections meanwhile: no suite may try one.
# Afterwards dlock_app has the same objects (test/catalog.sql
# plus every relation and function), the same leases, and the held lease
# still works; the suites' own scratch databases are gone or are the
# documented pg_regress ones.  Prints TAP, exits non-zero on failure.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
db=dlock_app
log=$(mktemp)
n=0
failed=0
trap 'rm -f "$log"' EXIT

ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}
q() { psql -X -A -t -q -v ON_ERROR_STOP=1 -d "$db" "$@"; }

psql -X -q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
	-c "CREATE DATABASE $db" || exit 1
q >/dev/null <<'SQL' || exit 1
CREATE EXTENSION dlock;
SELECT dlock_acquire('app/leader', '1 hour', '0', 'pod-1');
SELECT dlock_release('app/gone', dlock_acquire('app/gone', '1 hour'));
CREATE TABLE payout (order_id int PRIMARY KEY, token bigint);
CREATE TRIGGER payout_fence BEFORE INSERT OR UPDATE ON payout
	FOR EACH ROW EXECUTE FUNCTION dlock_fence('app/leader', 'token');
INSERT INTO payout SELECT 1, token FROM dlock_leases WHERE name = 'app/leader';
SQL
token=$(q -c "SELECT token FROM dlock_leases WHERE name = 'app/leader'")

snapshot() {
	q -f "$top/test/catalog.sql"
	q <<'SQL'
SET timezone = 'UTC';
SELECT 'lease', name, owner, token, acquired_at, expires_at, released_at, role FROM dlock_lease ORDER BY name;
SELECT 'row', * FROM payout ORDER BY order_id;
SELECT 'relation', c.oid::regclass, c.relkind FROM pg_class c
 WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace, 'pg_toast'::regnamespace)
 ORDER BY 2::text;
SELECT 'function', p.oid::regprocedure FROM pg_proc p
 WHERE p.pronamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)
 ORDER BY 2::text;
SELECT 'extension', extname, extversion FROM pg_extension ORDER BY 2;
SQL
}
before=$(snapshot)

# While the suites run, dlock_app refuses every connection, a superuser's
# too: a suite that ran anything in PGDATABASE would fail to connect.
psql -X -q -d postgres -c "ALTER DATABASE $db ALLOW_CONNECTIONS false" || exit 1
PGDATABASE=$db make -C "$top" --no-print-directory PG_CONFIG="${PG_CONFIG:-pg_config}" \
	installcheck-regress installcheck-isolation installcheck-pgtap >"$log" 2>&1
rc=$?
ran=$(grep -cE '\.\.\. ok( |$)|^ok [0-9]+|^ *ok [0-9]+' "$log")
[ "$ran" -gt 0 ]
ok $? "the installcheck suites ran with PGDATABASE=$db ($ran tests passed, make exit status $rc)"
if [ "$ran" -eq 0 ]; then
	sed 's/^/# /' "$log" | tail -n 30
fi

refused=$(grep -c "database \"$db\" is not currently accepting connections" "$log")
[ "$refused" -eq 0 ]
ok $? "no suite tried to connect to $db ($refused attempts)"
psql -X -q -d postgres -c "ALTER DATABASE $db ALLOW_CONNECTIONS true" || exit 1

after=$(snapshot)
[ "$before" = "$after" ]
ok $? "$db has the same objects, leases and rows after the suites"
if [ "$before" != "$after" ]; then
	diff <(echo "$before") <(echo "$after") | sed 's/^/# /'
fi

[ "$(q -c "SELECT dlock_check('app/leader', $token)")" = t ]
ok $? "the held lease is still vouched for with its token"
[ "$(q -c "SELECT dlock_acquire('app/leader', '1 hour', '0', 'pod-1')")" = "$token" ]
ok $? "its owner renews it and keeps its token"
q -c "INSERT INTO payout VALUES (2, $token)" >/dev/null 2>&1
ok $? "the holder writes through the fence"

left=$(psql -X -A -t -q -d postgres -c "SELECT string_agg(datname, ',' ORDER BY datname) FROM pg_database WHERE datname LIKE 'dlock_pgtap%'")
[ -z "$left" ]
ok $? "the pgTAP scratch database is dropped${left:+ (left: $left)}"

psql -X -q -d postgres -c "DROP DATABASE $db"
echo "1..$n"
[ "$failed" -eq 0 ]
