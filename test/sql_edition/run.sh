#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
#
# test/sql_edition/run.sh: the SQL edition's own regress and isolation tests
# (issue 26), against a scratch cluster or a running server.
#
#   PG_CONFIG=/path/to/pg_config test/sql_edition/run.sh [regress] [isolation] [tokens] [operators]
#
# With no suite named, regress, isolation and operators run.  operators is
# revoke_force.sh, revoke_pinning.sh and revoke_pinners.sh (dlock_revoke
# ending sessions, bounded pinning never ending a revoker, and who counts
# as a pinner; a few seconds each) and, after
# every other suite named, the specs of last/ (sql_pinners_ambiguous: it
# leaves the MultiXact counter where no later test could use it).  tokens is
# token_unique.sh (a minute; the scratch cluster then runs under
# libfaketime, Debian package faketime, so that it can step the server's
# clock back).  Environment:
#   PG_CONFIG     the PostgreSQL to test with (its bindir and pgxs are used)
#   PGPORT        port of the scratch cluster, or of the running server
#   DLOCK_SQL_EXISTING=1  use the server already running on PGPORT (PGHOST,
#                 PGUSER: a superuser) instead of making a scratch cluster;
#                 it needs autovacuum off for the XID counts of
#                 sql_subxacts.spec to be exact
#   DLOCK_KEEP=1  keep the scratch directory of a passing run (a failing run
#                 always keeps it, with its server stopped)
#
# What it does: makes the roles dlock_owner (owns the database, not a
# superuser: what a managed service's admin role has), alice and bob; revokes
# pg_control_system() from PUBLIC; creates the database dlock_sql_test owned
# by dlock_owner; installs the edition there, as dlock_owner, into the
# schema dlock, from src/sql/NN_*.sql in one transaction (the generated psql
# form does the same in one DO block); then runs pg_regress and
# pg_isolation_regress with --use-existing as the superuser.  A failure
# keeps the output directory (printed) with regression.diffs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
pg_config=${PG_CONFIG:-pg_config}
bindir=$("$pg_config" --bindir)
pgxs=$(dirname "$(dirname "$(dirname "$("$pg_config" --pgxs)")")")
export PGPORT=${PGPORT:-55540}
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(regress isolation operators)

out=$(mktemp -d "${TMPDIR:-/tmp}/dlock_sql_edition.XXXXXX")
chmod 777 "$out"
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

if [ -z "${DLOCK_SQL_EXISTING:-}" ]; then
	export PGHOST=$out PGUSER=postgres
	[ "$(id -u)" = 0 ] || PGUSER=$(id -un)
	as_pg "$bindir/initdb" -D "$out/data" -A trust -U "$PGUSER" >"$out/initdb.log"
	cat >>"$out/data/postgresql.conf" <<-EOF
		port = $PGPORT
		unix_socket_directories = '$out'
		listen_addresses = ''
		fsync = off
		autovacuum = off
		max_prepared_transactions = 2
	EOF
	preload=()
	if [[ " ${suites[*]} " == *" tokens "* ]]; then
		lib=$(ls /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 2>/dev/null | head -1 || true)
		[ -n "$lib" ] || { echo "run.sh: tokens needs libfaketime (Debian package faketime)" >&2; exit 2; }
		echo '+0' >"$out/faketime.rc"
		chmod 666 "$out/faketime.rc"
		preload=(env LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$out/faketime.rc" FAKETIME_NO_CACHE=1)
		export DLOCK_SQL_FAKETIME=$out/faketime.rc
	fi
	as_pg "${preload[@]}" "$bindir/pg_ctl" -D "$out/data" -l "$out/server.log" -w start >/dev/null
	trap 'as_pg "$bindir/pg_ctl" -D "$out/data" -m immediate stop >/dev/null 2>&1 || true' EXIT
fi

psql=("$bindir/psql" -X -q -v ON_ERROR_STOP=1)
PGOPTIONS="-c client_min_messages=warning" "${psql[@]}" -d postgres <<-'EOF'
	DROP DATABASE IF EXISTS dlock_sql_test;
	DO $$BEGIN
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dlock_owner') THEN CREATE ROLE dlock_owner LOGIN; END IF;
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'alice') THEN CREATE ROLE alice LOGIN; END IF;
		IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bob') THEN CREATE ROLE bob LOGIN; END IF;
	END$$;
	CREATE DATABASE dlock_sql_test OWNER dlock_owner;
EOF
# Function privileges are per database: revoke where the edition runs.
"${psql[@]}" -d dlock_sql_test -c 'REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC'
{
	echo 'CREATE SCHEMA dlock;'
	echo 'GRANT USAGE ON SCHEMA dlock TO PUBLIC;'
	echo 'SET search_path = dlock, pg_temp;'
	for f in $(printf '%s\n' "$top"/src/sql/[0-9][0-9]_*.sql | LC_ALL=C sort); do
		sed 's/@extschema@/dlock/g' "$f"
	done
} | "${psql[@]}" -1 -U dlock_owner -d dlock_sql_test -o /dev/null

status=0
for suite in "${suites[@]}"; do
	case $suite in
	regress)
		tests=$(cd "$here/sql" && ls *.sql | sed 's/\.sql$//')
		"$pgxs/src/test/regress/pg_regress" --use-existing --dbname=dlock_sql_test \
			--bindir="$bindir" --inputdir="$here" --outputdir="$out/regress" \
			$tests || status=1 ;;
	isolation)
		tests=$(cd "$here/specs" && ls *.spec | sed 's/\.spec$//')
		"$pgxs/src/test/isolation/pg_isolation_regress" --use-existing --dbname=dlock_sql_test \
			--bindir="$bindir" --inputdir="$here" --outputdir="$out/isolation" \
			$tests || status=1 ;;
	tokens)
		PATH=$bindir:$PATH bash "$here/token_unique.sh" || status=1 ;;
	operators)
		PATH=$bindir:$PATH bash "$here/revoke_force.sh" || status=1
		PATH=$bindir:$PATH bash "$here/revoke_pinning.sh" || status=1
		PATH=$bindir:$PATH bash "$here/revoke_pinners.sh" || status=1
		last=1 ;;
	*) echo "run.sh: unknown suite $suite (regress, isolation, tokens, operators)" >&2; exit 2 ;;
	esac
done
# operators' specs in last/ run after every other suite: they push the
# MultiXact counter into the range of the XIDs in use, which no later test
# of the cluster's pinners or waiters could then tell apart.
if [ -n "${last:-}" ]; then
	tests=$(cd "$here/last/specs" && ls *.spec | sed 's/\.spec$//')
	"$pgxs/src/test/isolation/pg_isolation_regress" --use-existing --dbname=dlock_sql_test \
		--bindir="$bindir" --inputdir="$here/last" --outputdir="$out/last" \
		$tests || status=1
fi
if [ $status = 0 ]; then
	# A passing run leaves nothing behind (DLOCK_KEEP=1 keeps it).
	if [ -z "${DLOCK_SQL_EXISTING:-}" ]; then
		as_pg "$bindir/pg_ctl" -D "$out/data" -m immediate stop >/dev/null 2>&1 || true
		trap - EXIT
	fi
	[ -n "${DLOCK_KEEP:-}" ] || rm -rf "$out"
	echo "sql_edition: all passed"
else
	echo "sql_edition: failures; see $out/*/regression.diffs" >&2
	trap - EXIT
	[ -z "${DLOCK_SQL_EXISTING:-}" ] && as_pg "$bindir/pg_ctl" -D "$out/data" -m immediate stop >/dev/null 2>&1
fi
exit $status
