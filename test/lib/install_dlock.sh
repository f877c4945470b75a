# Copyright (c) 2026, the dlock developers
# test/lib/install_dlock.sh: install the edition of dlock a suite runs
# against.  Source it ('. "$top/test/lib/install_dlock.sh"'); it defines
#   install_dlock DB [SCHEMA]
# which installs DLOCK_EDITION's dlock into database DB (in SCHEMA, made if
# missing; default: public), with psql on PATH and the server's PG*
# settings: "c" (the default) runs CREATE EXTENSION dlock, "sql" the SQL
# edition's psql script (dist/dlock_sql--V.psql, made by make sql-edition,
# which test/run runs), as an application team on a managed service would.
# The suites that call it run against either edition (test/README.md).

install_dlock() {
	local db=$1 schema=${2:-} lib top version
	lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	top=$(dirname "$(dirname "$lib")")
	case ${DLOCK_EDITION:-c} in
		sql)
			version=$(sed -n "s/^default_version[[:space:]]*=[[:space:]]*'\([^']*\)'.*/\1/p" "$top/dlock.control")
			psql -X -q -v ON_ERROR_STOP=1 -d "$db" -v schema="${schema:-public}" \
				-f "$top/dist/dlock_sql--$version.psql" >/dev/null
			;;
		c)
			if [ -n "$schema" ]; then
				psql -X -q -v ON_ERROR_STOP=1 -d "$db" -v schema="$schema" <<-'SQL'
					CREATE SCHEMA IF NOT EXISTS :"schema";
					CREATE EXTENSION dlock SCHEMA :"schema";
				SQL
			else
				psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "CREATE EXTENSION dlock"
			fi
			;;
		*)
			echo "install_dlock: DLOCK_EDITION is c or sql, not ${DLOCK_EDITION}" >&2
			return 1
			;;
	esac
}
