#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/sql_edition_guard.sh: at most one dlock per database, also
# against the C edition's 1.0 and 1.1 scripts (issue 26, review finding):
# those are released and frozen and check nothing, so CREATE EXTENSION dlock
# VERSION '1.0' or '1.1' beside the SQL edition made a second lease store.
# One suite of "make check".
#
# 1. On test/run's server (the 1.2 C library, both editions' files): beside
#    the SQL edition, installed by the psql script as a role that is no
#    superuser (so without its event triggers), by the psql script as a
#    superuser, and as the extension dlock_sql, CREATE EXTENSION dlock
#    VERSION '1.0', '1.1' and '1.2' each refuse with 55000, naming the
#    installed one, and leave no extension dlock: the library refuses when
#    the script loads it (src/dlock.c).  The other order: beside dlock 1.0,
#    1.1 and 1.2, the psql script and CREATE EXTENSION dlock_sql refuse.
# 2. On a server whose C edition is 1.1 (a copy of PG_CONFIG's installation
#    with the 1.1 library that test/run builds, and the released scripts):
#    the SQL edition's event trigger dlock_sql_guard, there when a
#    superuser installed it, refuses CREATE EXTENSION dlock VERSION '1.0'
#    and '1.1' (55000) beside the psql script's install and beside
#    dlock_sql; other extensions pass.
#
# test/run runs it with PG_CONFIG, PGHOST, PGPORT and PGUSER (a superuser)
# set; section 2 starts and stops a server of its own on the same port,
# with a socket directory of its own.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/test/lib/tap.sh"
pg_config=${PG_CONFIG:-pg_config}
version=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$top/dlock.control")
bindir=$("$pg_config" --bindir)

work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-edition-guard.XXXXXX") || exit 1
chmod 755 "$work"
ibin=
server_started=
cleanup() {
	[ -n "$server_started" ] && "$ibin/pg_ctl" -D "$work/data" -m immediate -w stop >/dev/null 2>&1
	if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "# kept $work"; fi
}
trap cleanup EXIT

make -C "$top" -s --no-print-directory PG_CONFIG="$pg_config" sql-edition >"$work/make.log" 2>&1 ||
	{ not_ok "make sql-edition" "$(cat "$work/make.log")"; tap_done; exit 1; }
psql_script=$top/dist/dlock_sql--$version.psql
refused='cannot install dlock:'

# --- 1. the 1.2 C library refuses ------------------------------------------
db=dlock_edition_guard_$$
admin=dlock_guard_admin
q() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "$@"; }
qa() { "$bindir/psql" -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
fresh_db() {
	q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
		-c "CREATE DATABASE $db OWNER $admin" >/dev/null
}
q -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
	-c "DROP ROLE IF EXISTS $admin" -c "CREATE ROLE $admin LOGIN NOSUPERUSER" >/dev/null ||
	{ not_ok "the role $admin"; tap_done; exit 1; }

# try_versions FORM WANT: each version of the C edition refuses, naming WANT.
try_versions() {
	local v out left
	for v in 1.0 1.1 1.2; do
		out=$(q -d "$db" -c "CREATE SCHEMA IF NOT EXISTS c_edition" \
			-c "CREATE EXTENSION dlock VERSION '$v' SCHEMA c_edition" 2>&1)
		left=$(qa -d "$db" -c "SELECT count(*) FROM pg_extension WHERE extname = 'dlock'")
		if [[ $out == *"55000"*"$refused $2"* ]] && [ "$left" = 0 ]; then
			ok "beside $1, CREATE EXTENSION dlock VERSION '$v' refuses (55000), naming it"
		else
			not_ok "beside $1, CREATE EXTENSION dlock VERSION '$v' refuses (55000), naming it" \
				"extensions dlock: $left" "$out"
		fi
	done
}

fresh_db
if out=$("$bindir/psql" -X -q -U "$admin" -d "$db" -v schema="s q" -f "$psql_script" 2>&1) &&
	[ "$(qa -d "$db" -c "SELECT count(*) FROM pg_event_trigger")" = 0 ]; then
	try_versions "the psql script's install by a role that is no superuser (no event trigger)" \
		'a dlock is installed in schema "s q"'
else
	not_ok "the psql script installs as $admin, without event triggers" "$out"
fi
fresh_db
if out=$(q -d "$db" -v schema="s q" -f "$psql_script" 2>&1); then
	try_versions "the psql script's install by a superuser" 'a dlock is installed in schema "s q"'
else
	not_ok "the psql script installs as a superuser" "$out"
fi
fresh_db
if out=$(q -d "$db" -c 'CREATE SCHEMA "e s"' -c 'CREATE EXTENSION dlock_sql SCHEMA "e s"' 2>&1); then
	try_versions "the extension dlock_sql" 'extension "dlock_sql" is installed in schema "e s"'
else
	not_ok "CREATE EXTENSION dlock_sql" "$out"
fi

# The other order: the SQL edition refuses beside every version.
for v in 1.0 1.1 1.2; do
	fresh_db
	if ! out=$(q -d "$db" -c "CREATE EXTENSION dlock VERSION '$v'" 2>&1); then
		not_ok "CREATE EXTENSION dlock VERSION '$v'" "$out"
		continue
	fi
	out=$(q -d "$db" -v schema=s -f "$psql_script" 2>&1)
	out2=$(q -d "$db" -c "CREATE SCHEMA e" -c "CREATE EXTENSION dlock_sql SCHEMA e" 2>&1)
	left=$(qa -d "$db" -c "SELECT count(*) FROM pg_proc WHERE proname = 'dlock_edition'")
	if [[ $out == *"55000"*"$refused"*'extension "dlock"'* ]] &&
		[[ $out2 == *"55000"*"$refused"*'extension "dlock"'* ]] &&
		[ "$left" = "$([ "$v" = 1.2 ] && echo 1 || echo 0)" ]; then
		ok "beside dlock $v, the psql script and CREATE EXTENSION dlock_sql refuse (55000), naming it"
	else
		not_ok "beside dlock $v, the psql script and CREATE EXTENSION dlock_sql refuse (55000), naming it" \
			"dlock_edition(): $left" "$out" "$out2"
	fi
done
q -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP ROLE IF EXISTS $admin" >/dev/null 2>&1

# --- 2. a C edition older than 1.2: the SQL edition's event trigger ---------
# A copy of the installation, laid out as the original below their common
# prefix (the programs find their share and lib directories relative to
# themselves), with the 1.1 release of the C edition in place of dlock's:
# its library (test/run builds it into tmp_dlock-1.1) and the released
# scripts, which check nothing.  Without that library, an old "dlock" of
# the same kind (no guard; no library: its one function is SQL).
inst=$work/inst
. "$top/test/lib/pg_copy.sh"
copy_installation_without_dlock "$pg_config" "$inst"
old_so=$top/tmp_dlock-1.1/dlock.so
if [ -s "$old_so" ]; then
	old_versions="1.0 1.1"
	old_what="the 1.1 release's library and scripts"
	cp "$old_so" "$ilib/dlock.so"
	cp "$top/dlock--1.0.sql" "$top/dlock--1.1.sql" "$top/dlock--1.0--1.1.sql" "$ishare/extension/"
	sed "s/^default_version = .*/default_version = '1.1'/" "$top/dlock.control" >"$ishare/extension/dlock.control"
else
	old_versions=1.1
	old_what="an old dlock without a library (no 1.1 library in tmp_dlock-1.1)"
	cat >"$ishare/extension/dlock.control" <<-'EOF'
		comment = 'an older C edition of dlock, as far as its install script goes'
		default_version = '1.1'
		relocatable = false
		superuser = true
	EOF
	cat >"$ishare/extension/dlock--1.1.sql" <<-'EOF'
		CREATE TABLE @extschema@.dlock_lease (name text PRIMARY KEY, token bigint NOT NULL);
		CREATE FUNCTION @extschema@.dlock_edition() RETURNS text LANGUAGE sql AS $$SELECT 'c'::text$$;
	EOF
fi
cat >"$ishare/extension/unrelated.control" <<-'EOF'
	comment = 'another extension'
	default_version = '1.0'
	relocatable = true
EOF
echo 'CREATE FUNCTION unrelated() RETURNS int LANGUAGE sql AS $$SELECT 1$$;' \
	>"$ishare/extension/unrelated--1.0.sql"
if start_copy_server "$work"; then
	server_started=1
else
	not_ok "the server without dlock's library starts" "$(tail -n 20 "$work/server.log")"
	tap_done
	exit 1
fi
oq() { PGHOST=$sock "$ibin/psql" -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "$@"; }
oqa() { PGHOST=$sock "$ibin/psql" -X -A -t -q -v ON_ERROR_STOP=1 "$@"; }
out=$(oq -d postgres -c "CREATE DATABASE alone" 2>&1 && oq -d alone -c "CREATE EXTENSION dlock" 2>&1 &&
	oqa -d alone -c "SELECT extversion FROM pg_extension WHERE extname = 'dlock'" 2>&1)
if [ "$out" = 1.1 ]; then
	ok "$old_what: dlock 1.1 installs alone"
else
	not_ok "$old_what: dlock 1.1 installs alone" "$out"
fi
# old_refused FORM WANT DB
old_refused() {
	local v out left
	for v in $old_versions; do
		out=$(oq -d "$3" -c "CREATE EXTENSION dlock VERSION '$v'" 2>&1)
		left=$(oqa -d "$3" -c "SELECT count(*) FROM pg_extension WHERE extname = 'dlock'")
		if [[ $out == *"55000"*"$refused $2"* ]] && [ "$left" = 0 ]; then
			ok "beside $1, the old CREATE EXTENSION dlock VERSION '$v' refuses (55000, the event trigger), naming it"
		else
			not_ok "beside $1, the old CREATE EXTENSION dlock VERSION '$v' refuses (55000, the event trigger), naming it" \
				"extensions dlock: $left" "$out"
		fi
	done
}
if oq -d postgres -c "CREATE DATABASE script" >/dev/null &&
	out=$(oq -d script -v schema="s q" -f "$psql_script" 2>&1); then
	old_refused "the psql script's install by a superuser" 'a dlock is installed in schema "s q"' script
else
	not_ok "the psql script installs on the old server" "$out"
fi
if oq -d postgres -c "CREATE DATABASE ext" >/dev/null &&
	out=$(oq -d ext -c 'CREATE SCHEMA "e s"' -c 'CREATE EXTENSION dlock_sql SCHEMA "e s"' 2>&1); then
	old_refused "the extension dlock_sql" 'extension "dlock_sql" is installed in schema "e s"' ext
else
	not_ok "CREATE EXTENSION dlock_sql on the old server" "$out"
fi
# Other extensions are not held back.
out=$(oq -d ext -c "CREATE TABLE t (x int)" -c "CREATE EXTENSION unrelated" 2>&1)
if [ -z "$out" ] && [ "$(oqa -d ext -c "SELECT unrelated()")" = 1 ]; then
	ok "other DDL and CREATE EXTENSION of another extension pass beside the SQL edition"
else
	not_ok "other DDL and CREATE EXTENSION of another extension pass beside the SQL edition" "$out"
fi

tap_done
