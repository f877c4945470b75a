#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/dlock_run_edition.sh: dlock-run finds dlock by its
# dlock_edition() function (issue 26), in either edition, never by
# pg_extension; one suite of "make check".
#
# When dlock's functions are not where dlock-run calls them (SQLSTATE
# 42883), its hint names the schemas that have dlock_edition(), or, in a
# database without dlock, says how to install either edition; with
# --schema it runs.  The C edition (CREATE EXTENSION dlock SCHEMA ...) and
# the SQL edition (its psql script, which makes no pg_extension row) are
# each installed outside search_path.  test/run runs it with PGHOST,
# PGPORT, PGUSER set; it makes and drops its own databases.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/test/lib/tap.sh"
. "$top/test/lib/install_dlock.sh"
RUN=${DLOCK_RUN:-$top/bin/dlock-run}
work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-run-edition.XXXXXX") || exit 1
dbs=(dlock_run_ed_c_$$ dlock_run_ed_sql_$$ dlock_run_ed_none_$$)
trap 'for d in "${dbs[@]}"; do dropdb --if-exists "$d" 2>/dev/null; done; rm -rf "$work"' EXIT

if [ ! -x "$RUN" ]; then
	not_ok "dlock-run is built ($RUN)"
	tap_done
	exit 1
fi
make -C "$top" -s --no-print-directory PG_CONFIG="${PG_CONFIG:-pg_config}" sql-edition >/dev/null 2>&1
for d in "${dbs[@]}"; do createdb "$d" || { not_ok "createdb $d"; tap_done; exit 1; }; done
DLOCK_EDITION=c install_dlock "${dbs[0]}" "c locks" && ok "the C edition in schema \"c locks\"" ||
	not_ok "the C edition in schema \"c locks\""
DLOCK_EDITION=sql install_dlock "${dbs[1]}" "sql locks" && ok "the SQL edition's psql script in schema \"sql locks\"" ||
	not_ok "the SQL edition's psql script in schema \"sql locks\""

# expect DB SCHEMA_HINT DESC: dlock-run without --schema exits 69 and its hint has SCHEMA_HINT
expect() {
	local out rc
	out=$("$RUN" -d "$1" --name ed --ttl 5s -- true 2>&1)
	rc=$?
	if [ "$rc" -eq 69 ] && [[ $out == *"$2"* ]]; then
		ok "$3"
	else
		not_ok "$3" "exit $rc" "$out"
	fi
}
expect "${dbs[0]}" "dlock is installed in schema \"c locks\", which dlock-run did not look in: use --schema." \
	"C edition outside search_path: the hint names its schema"
expect "${dbs[1]}" "dlock is installed in schema \"sql locks\", which dlock-run did not look in: use --schema." \
	"SQL edition (no pg_extension row) outside search_path: the hint names its schema"
expect "${dbs[2]}" "Install the C edition (CREATE EXTENSION dlock) or, on a managed service, the SQL edition" \
	"no dlock in the database: the hint says how to install either edition"
out=$("$RUN" -d "${dbs[0]}" --schema "c locks" --name ed --ttl 5s -- sh -c 'test -n "$DLOCK_TOKEN"' 2>&1)
[ $? -eq 0 ] && ok "--schema \"c locks\" runs the command" || not_ok "--schema \"c locks\" runs the command" "$out"
tap_done
