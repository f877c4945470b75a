#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/sql_edition_install.sh: the SQL edition's three install forms
# (issue 26), one suite of "make check".
#
# 1. The forms carry one script: the text embedded in the psql script
#    (dist/dlock_sql--V.psql) and in the pg_tle installer
#    (dist/dlock_sql-pgtle--V.sql) is byte for byte the trusted extension's
#    script, and so is the file "make install" put on the server.
# 2. On test/run's server: CREATE EXTENSION dlock refuses (55000) where the
#    SQL edition is (script or trusted extension), and dlock_sql where the
#    C edition is.
# 3. The installs of a managed service's admin role: on a server of its own
#    made from a copy of PG_CONFIG's installation without dlock's C library
#    and control file (only the SQL edition's files), as a role that owns
#    its databases, has CREATE on them, is no superuser, is no member of
#    pg_write_server_files or pg_execute_server_program, with
#    pg_control_system() and pg_control_checkpoint() revoked from PUBLIC:
#    the psql script into a schema of its choice; a second run refuses
#    (55000) and changes nothing; CREATE EXTENSION dlock_sql (trusted) by
#    that role; each refuses where the other is.
# 4. No escalation through the trusted extension installed with superuser =
#    true, whose objects belong to the bootstrap superuser: see
#    sql_edition_escalate.sql.
#
# test/run runs it with PG_CONFIG, PGHOST, PGPORT and PGUSER set; it starts
# and stops its own server (a socket directory of its own, the same port).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
. "$top/test/lib/tap.sh"
pg_config=${PG_CONFIG:-pg_config}
version=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$top/dlock.control")

work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-sql-edition.XXXXXX") || exit 1
main_host=${PGHOST:-}
server_started=
cleanup() {
	[ -n "$server_started" ] && "$ibin/pg_ctl" -D "$work/data" -m immediate -w stop >/dev/null 2>&1
	if [ "$failed" -eq 0 ]; then rm -rf "$work"; else echo "# kept $work"; fi
}
trap cleanup EXIT

# --- 1. one script, three forms ---------------------------------------------
if make -C "$top" -s --no-print-directory PG_CONFIG="$pg_config" sql-edition >"$work/make.log" 2>&1; then
	ok "make sql-edition builds the three forms"
else
	not_ok "make sql-edition builds the three forms" "$(cat "$work/make.log")"
fi
ext_script=$top/dlock_sql--$version.sql
extract() { # FILE OPEN CLOSE: the text between the first OPEN and the last CLOSE
	/usr/bin/python3 - "$@" <<-'EOF'
		import sys
		data = open(sys.argv[1], 'rb').read()
		i = data.index(sys.argv[2].encode()) + len(sys.argv[2])
		j = data.rindex(sys.argv[3].encode())
		sys.stdout.buffer.write(data[i:j])
	EOF
}
extract "$top/dist/dlock_sql--$version.psql" 'EXECUTE pg_catalog.replace($_dlock_sql_$' \
	"\$_dlock_sql_\$, '@extschema@'" >"$work/from-psql.sql" 2>/dev/null
extract "$top/dist/dlock_sql-pgtle--$version.sql" "'dlock_sql', '$version', " '$_pgtle_$);' \
	>"$work/from-pgtle.sql" 2>/dev/null
# the pg_tle call: the description, then the script dollar-quoted
sed -i "1s/^'[^']*', \\\$_pgtle_\\\$//" "$work/from-pgtle.sql"
for form in psql pgtle; do
	if [ -s "$ext_script" ] && cmp -s "$ext_script" "$work/from-$form.sql"; then
		ok "the $form form embeds the trusted extension's script byte for byte"
	else
		not_ok "the $form form embeds the trusted extension's script byte for byte" \
			"$(cmp "$ext_script" "$work/from-$form.sql" 2>&1)"
	fi
done
installed=$("$pg_config" --sharedir)/extension/dlock_sql--$version.sql
if cmp -s "$ext_script" "$installed"; then
	ok "make install put the same script on the server ($installed)"
else
	not_ok "make install put the same script on the server ($installed)"
fi
if grep -q "pgtle.install_extension('dlock_sql', '$version'" "$top/dist/dlock_sql-pgtle--$version.sql" &&
	grep -q "^trusted = true" "$top/dlock_sql.control" &&
	grep -q "^default_version = '$version'" "$top/dlock_sql.control"; then
	ok "the installer and dlock_sql.control carry version $version of dlock.control"
else
	not_ok "the installer and dlock_sql.control carry version $version of dlock.control"
fi

# --- 2. the C edition refuses where the SQL edition is, and the other way -----
# (on test/run's server, which has both editions' files)
both=dlock_sql_edition_both_$$
main_psql() { PGHOST=$main_host psql -X -q -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "$@"; }
if main_psql -d postgres -c "CREATE DATABASE $both" &&
	main_psql -d "$both" -v schema="s q" -f "$top/dist/dlock_sql--$version.psql"; then
	out=$(main_psql -d "$both" -c 'CREATE EXTENSION dlock' 2>&1)
	if [[ $out == *"55000"*'cannot install dlock: a dlock is installed in schema "s q"'* ]]; then
		ok "CREATE EXTENSION dlock refuses (55000) where the SQL edition's script installed dlock, naming its schema"
	else
		not_ok "CREATE EXTENSION dlock refuses (55000) where the SQL edition's script installed dlock, naming its schema" "$out"
	fi
	out=$(main_psql -d "$both" -c 'DROP SCHEMA "s q" CASCADE' -c 'CREATE EXTENSION dlock_sql' -c 'CREATE EXTENSION dlock' 2>&1)
	if [[ $out == *"55000"*'cannot install dlock: extension "dlock_sql" is installed in schema "public"'* ]]; then
		ok "CREATE EXTENSION dlock refuses (55000) where the trusted extension dlock_sql is, naming it"
	else
		not_ok "CREATE EXTENSION dlock refuses (55000) where the trusted extension dlock_sql is, naming it" "$out"
	fi
	out=$(main_psql -d "$both" -c 'DROP EXTENSION dlock_sql' -c 'CREATE EXTENSION dlock' -c 'CREATE EXTENSION dlock_sql' 2>&1)
	if [[ $out == *"55000"*'cannot install dlock: extension "dlock" is installed in schema "public"'* ]]; then
		ok "CREATE EXTENSION dlock_sql refuses (55000) where the C edition is, naming it"
	else
		not_ok "CREATE EXTENSION dlock_sql refuses (55000) where the C edition is, naming it" "$out"
	fi
	# Two installs at once: the second waits for the first's commit, then
	# refuses (without the guard's lock it saw nothing uncommitted and made a
	# second copy).
	main_psql -d "$both" -c 'DROP EXTENSION dlock' >/dev/null 2>&1
	mkfifo "$work/first.in"
	main_psql -d "$both" <"$work/first.in" >"$work/first.out" 2>&1 &
	first=$!
	exec {to_first}>"$work/first.in"
	echo "BEGIN; CREATE EXTENSION dlock_sql;" >&"$to_first"
	sleep 2
	main_psql -d "$both" -v schema=second -f "$top/dist/dlock_sql--$version.psql" >"$work/second.out" 2>&1 &
	second=$!
	sleep 1
	echo "COMMIT;" >&"$to_first"
	exec {to_first}>&-
	wait "$first" "$second"
	out=$(cat "$work/second.out")
	line=$(cat "$work/first.out")
	copies=$(main_psql -d "$both" -At -c "SELECT count(*) FROM pg_proc WHERE proname = 'dlock_edition'" 2>&1)
	if [ -z "$line" ] && [ "$copies" = 1 ] &&
		[[ $out == *"55000"*'cannot install dlock: extension "dlock_sql" is installed in schema "public"'* ]]; then
		ok "two installs at once: the second waits for the first, then refuses (55000); one copy"
	else
		not_ok "two installs at once: the second waits for the first, then refuses (55000); one copy" \
			"first: $line; copies: $copies; second: $out"
	fi
else
	not_ok "a database with the SQL edition on test/run's server"
fi
main_psql -d postgres -c "DROP DATABASE IF EXISTS $both" >/dev/null 2>&1

# --- 3. a server without dlock's library ------------------------------------
# A copy of the installation: the programs, the loadable modules but
# dlock's, the share directory but dlock's control file and scripts.  It
# is laid out as the original below their common prefix, so that the
# programs find their share and lib directories relative to themselves.
bindir=$("$pg_config" --bindir)
inst=$work/inst
. "$top/test/lib/pg_copy.sh"
copy_installation_without_dlock "$pg_config" "$inst"
# The same script as a trusted extension with superuser = true (dlock_sql
# has superuser = false, so its script runs as the installing role): then
# PostgreSQL runs it as the bootstrap superuser, which owns its objects,
# and its SECURITY DEFINER functions run as a superuser.  Section 4 tries
# to escalate through that copy.
sed -e 's/^superuser = false$/superuser = true/' "$ishare/extension/dlock_sql.control" \
	>"$ishare/extension/dlock_sql_superuser.control"
cp "$ishare/extension/dlock_sql--$version.sql" "$ishare/extension/dlock_sql_superuser--$version.sql"
if [ ! -e "$ilib/dlock.so" ] && [ ! -e "$ishare/extension/dlock.control" ] &&
	[ -e "$ishare/extension/dlock_sql.control" ] && [ -x "$ibin/postgres" ]; then
	ok "a copy of the installation without dlock's library and control file, with dlock_sql's files"
else
	not_ok "a copy of the installation without dlock's library and control file, with dlock_sql's files"
fi

if start_copy_server "$work" -E UTF8 --locale=C.UTF-8; then
	server_started=1
	ok "the server without dlock's library starts"
else
	not_ok "the server without dlock's library starts" "$(tail -n 20 "$work/server.log")"
	tap_done
	exit 1
fi
export PGHOST=$sock
unset PGDATABASE
# (pg_catalog alone on search_path: the traps below are in public)
su_sql() { PGOPTIONS='-c search_path=pg_catalog' "$ibin/psql" -X -A -t -q -v ON_ERROR_STOP=1 -d "${2:-postgres}" -c "$1"; }
admin_sql() { PGOPTIONS='-c search_path=pg_catalog' "$ibin/psql" -X -A -t -q -v ON_ERROR_STOP=1 -U admin -d "$2" -c "$1"; }
# The managed service's admin role, and what it may not do.
# (function privileges are per database: revoked in template1, so in
# every database made from it)
su_sql "CREATE ROLE admin LOGIN NOSUPERUSER CREATEROLE" >/dev/null &&
	su_sql "REVOKE EXECUTE ON FUNCTION pg_catalog.pg_control_system() FROM PUBLIC;
	REVOKE EXECUTE ON FUNCTION pg_catalog.pg_control_checkpoint() FROM PUBLIC" template1 >/dev/null ||
	{ not_ok "the admin role"; tap_done; exit 1; }
for db in app app2 app3; do
	su_sql "CREATE DATABASE $db OWNER admin" && su_sql "ALTER SCHEMA public OWNER TO admin" "$db" ||
		{ not_ok "database $db"; tap_done; exit 1; }
done
facts=$(admin_sql "SELECT r.rolsuper, pg_catalog.pg_has_role('admin', 'pg_write_server_files', 'member'),
	pg_catalog.pg_has_role('admin', 'pg_execute_server_program', 'member'),
	pg_catalog.has_database_privilege('app', 'CREATE'),
	pg_catalog.has_function_privilege('pg_catalog.pg_control_system()', 'EXECUTE'),
	pg_catalog.has_function_privilege('pg_catalog.pg_control_checkpoint()', 'EXECUTE'),
	(SELECT pg_catalog.count(*) FROM pg_catalog.pg_available_extensions WHERE name = 'dlock'),
	(SELECT pg_catalog.count(*) FROM pg_catalog.pg_available_extensions WHERE name = 'dlock_sql')
	FROM pg_catalog.pg_roles r WHERE r.rolname = 'admin'" app)
if [ "$facts" = "f|f|f|t|f|f|0|1" ]; then
	ok "the admin role: no superuser, no server files, CREATE on its database, pg_control_* revoked; only dlock_sql available"
else
	not_ok "the admin role: no superuser, no server files, CREATE on its database, pg_control_* revoked; only dlock_sql available" "got $facts"
fi
state=$(admin_sql "CREATE EXTENSION dlock" app 2>&1)
case $state in
	*'extension "dlock" is not available'* | *'could not open extension control file'*) ok "CREATE EXTENSION dlock fails: the C edition is not on this server" ;;
	*) not_ok "CREATE EXTENSION dlock fails: the C edition is not on this server" "$state" ;;
esac

# The psql script, into a schema of the admin's choice.
schema='Lock s-é;1'
qschema='"Lock s-é;1"'
psql_script=$top/dist/dlock_sql--$version.psql
objects="SELECT pg_catalog.count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '$schema'
	UNION ALL SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = '$schema'"
if out=$("$ibin/psql" -X -q -U admin -d app -v schema="$schema" -f "$psql_script" 2>&1); then
	ok "the psql script installs as the admin role into schema $qschema"
else
	not_ok "the psql script installs as the admin role into schema $qschema" "$out"
fi
got=$(admin_sql "SELECT $qschema.dlock_edition(), (SELECT pg_catalog.count(*) FROM pg_catalog.pg_proc p
	WHERE p.pronamespace = '$qschema'::regnamespace AND p.proowner <> 'admin'::regrole),
	(SELECT pg_catalog.count(*) FROM pg_catalog.pg_extension WHERE extname LIKE 'dlock%')" app 2>&1)
if [ "$got" = "sql|0|0" ]; then
	ok "dlock_edition() says sql; every function belongs to the admin role; no pg_extension row"
else
	not_ok "dlock_edition() says sql; every function belongs to the admin role; no pg_extension row" "got $got"
fi
before=$(admin_sql "$objects" app | tr '\n' ' ')
out=$("$ibin/psql" -X -q -U admin -d app -v schema="$schema" -v VERBOSITY=verbose -f "$psql_script" 2>&1)
rc=$?
after=$(admin_sql "$objects" app | tr '\n' ' ')
if [ "$rc" -ne 0 ] && [[ $out == *"55000"*"cannot install dlock"*"$schema"* ]] && [ "$before" = "$after" ]; then
	ok "running the psql script again refuses (55000, naming schema $qschema) and changes nothing"
else
	not_ok "running the psql script again refuses (55000, naming schema $qschema) and changes nothing" \
		"exit $rc, objects $before -> $after" "$out"
fi
out=$("$ibin/psql" -X -q -U admin -d app -v schema=other -v VERBOSITY=verbose -f "$psql_script" 2>&1)
if [[ $out == *"55000"*"cannot install dlock"*"$schema"* ]] &&
	[ "$(admin_sql "SELECT pg_catalog.count(*) FROM pg_catalog.pg_namespace WHERE nspname = 'other'" app)" = 0 ]; then
	ok "the psql script into another schema refuses too, and leaves no schema behind"
else
	not_ok "the psql script into another schema refuses too, and leaves no schema behind" "$out"
fi
out=$("$ibin/psql" -X -q -U admin -d app -v VERBOSITY=verbose -c 'CREATE SCHEMA x' -c 'CREATE EXTENSION dlock_sql SCHEMA x' 2>&1)
if [[ $out == *"55000"*"cannot install dlock"*"$schema"* ]]; then
	ok "CREATE EXTENSION dlock_sql refuses where the psql script installed dlock"
else
	not_ok "CREATE EXTENSION dlock_sql refuses where the psql script installed dlock" "$out"
fi

# The trusted extension, created by the admin role.
ext_schema='ext sch;é'
if out=$("$ibin/psql" -X -q -U admin -d app2 -v ON_ERROR_STOP=1 -c "CREATE SCHEMA \"$ext_schema\"" \
	-c "CREATE EXTENSION dlock_sql SCHEMA \"$ext_schema\"" 2>&1); then
	ok "CREATE EXTENSION dlock_sql (trusted) by the admin role"
else
	not_ok "CREATE EXTENSION dlock_sql (trusted) by the admin role" "$out"
fi
got=$(admin_sql "SELECT \"$ext_schema\".dlock_edition(), e.extowner::regrole, e.extversion
	FROM pg_catalog.pg_extension e WHERE e.extname = 'dlock_sql'" app2 2>&1)
if [ "$got" = "sql|admin|$version" ]; then
	ok "the extension belongs to the admin role, version $version, dlock_edition() says sql"
else
	not_ok "the extension belongs to the admin role, version $version, dlock_edition() says sql" "got $got"
fi
out=$("$ibin/psql" -X -q -U admin -d app2 -v schema=s2 -v VERBOSITY=verbose -f "$psql_script" 2>&1)
if [[ $out == *"55000"*'extension "dlock_sql"'*"$ext_schema"* ]]; then
	ok "the psql script refuses where the trusted extension is, naming it"
else
	not_ok "the psql script refuses where the trusted extension is, naming it" "$out"
fi
out=$("$ibin/psql" -X -q -U admin -d app2 -c "CREATE EXTENSION dlock_sql SCHEMA public" 2>&1)
if [[ $out == *"already exists"* ]]; then
	ok "a second CREATE EXTENSION dlock_sql is refused"
else
	not_ok "a second CREATE EXTENSION dlock_sql is refused" "$out"
fi

# --- 4. escalation through the trusted extension -----------------------------
# dlock_sql_superuser (the same script, superuser = true): its objects
# belong to the bootstrap superuser.  The admin role prepares traps in app3
# (before and after the install), then calls every function of the
# extension; a positive control (an unpinned SECURITY DEFINER function of
# the superuser's) shows that the traps do catch an escalation.
esc=$here/sql_edition_escalate.sql
"$ibin/psql" -X -q -U admin -d app3 -v ON_ERROR_STOP=1 -v phase=before -f "$esc" >"$work/esc-before.log" 2>&1 ||
	not_ok "the traps before the install" "$(tail -n 20 "$work/esc-before.log")"
esc_schema='odd sch;-é'
if out=$("$ibin/psql" -X -q -U admin -d app3 -v ON_ERROR_STOP=1 \
	-c "SET search_path = public, pg_catalog" -c "CREATE EXTENSION dlock_sql_superuser SCHEMA \"$esc_schema\"" 2>&1) &&
	[ "$(su_sql "SELECT p.proowner::regrole FROM pg_proc p WHERE p.proname = 'dlock_acquire'" app3)" = "$PGUSER" ]; then
	ok "CREATE EXTENSION dlock_sql_superuser, by the admin role, into a schema it filled with traps: the bootstrap superuser owns the functions"
else
	not_ok "CREATE EXTENSION dlock_sql_superuser, by the admin role, into a schema it filled with traps: the bootstrap superuser owns the functions" "$out"
fi
"$ibin/psql" -X -q -U admin -d app3 -v ON_ERROR_STOP=1 -v phase=after -v target="$esc_schema" -f "$esc" \
	>"$work/esc-after.log" 2>&1 || not_ok "the escalation attempts ran" "$(tail -n 20 "$work/esc-after.log")"
escalated="SELECT coalesce(string_agg(DISTINCT fn || ' as ' || who, '; '), '') FROM public.trap_log t
	JOIN pg_roles r ON r.rolname = t.who WHERE r.rolsuper"
called=$(su_sql "SELECT count(*) FROM public.esc_calls" app3)
definers=$(su_sql "SELECT count(*) FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
	JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'dlock_sql_superuser' WHERE p.prosecdef" app3)
got=$(su_sql "$escalated" app3)
super=$(su_sql "SELECT rolsuper FROM pg_roles WHERE rolname = 'admin'")
if [ "$called" -gt 0 ] && [ -z "$got" ] && [ "$super" = f ]; then
	ok "no trap ran as a superuser in $called calls of the extension's functions ($definers SECURITY DEFINER); admin is no superuser"
else
	not_ok "no trap ran as a superuser in $called calls of the extension's functions ($definers SECURITY DEFINER); admin is no superuser" \
		"traps run as superuser: $got" "admin superuser: $super"
fi
# The control: an unpinned SECURITY DEFINER function of a superuser's,
# called the same way, is caught.
su_sql "CREATE FUNCTION public.control_definer(x text) RETURNS text LANGUAGE plpgsql SECURITY DEFINER
	AS \$\$BEGIN RETURN upper(x); END\$\$;
	GRANT EXECUTE ON FUNCTION public.control_definer(text) TO admin" app3 >/dev/null
"$ibin/psql" -X -q -U admin -d app3 -v ON_ERROR_STOP=1 -v phase=control -f "$esc" \
	>"$work/esc-control.log" 2>&1 || not_ok "the control ran" "$(tail -n 20 "$work/esc-control.log")"
control=$(su_sql "$escalated" app3)
if [ -n "$control" ] && [ "$control" != "$got" ]; then
	ok "the traps catch an unpinned SECURITY DEFINER function of a superuser's (the control: $control)"
else
	not_ok "the traps catch an unpinned SECURITY DEFINER function of a superuser's (the control)" \
		"$(tail -n 20 "$work/esc-control.log")"
fi

tap_done
