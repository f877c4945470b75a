#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/pgbouncer.sh: dlock behind PgBouncer in transaction pooling
# mode, one suite of "make check".
#
# Starts a PgBouncer of its own (Debian's /usr/sbin/pgbouncer, as the test
# user, in a mktemp directory: 127.0.0.1 on a free port, auth_type = trust,
# pool_mode = transaction, 2 server connections) in front of the throwaway
# cluster, and runs pgbouncer_client.py: at least 20 clients acquire, write
# through a dlock_fence() trigger and release, all through the pooler; some
# stall past their lease.  Its docstring lists the checks.  PgBouncer is
# stopped on exit, whatever happens.
#
# test/run runs it with PGHOST (a socket directory), PGPORT, PGUSER and
# PGDATABASE set for a throwaway cluster; it creates and drops its own
# database, dlock_pgbouncer.  It takes about 15 seconds, prints TAP, and
# exits non-zero on any failure.  DLOCK_PGB_* variables tune it (see
# pgbouncer_client.py); DLOCK_PGB_KEEP=1 keeps the directory and the database.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
pgbouncer=${PGBOUNCER:-/usr/sbin/pgbouncer}
limit=${DLOCK_PGB_TIMEOUT:-58}
db=${DLOCK_PGB_DB:-dlock_pgbouncer}

bail() {
	echo "1..1"
	echo "not ok 1 - $1"
	shift
	local line
	for line in "$@"; do
		printf '#   %s\n' "$line"
	done
	exit 1
}

"$python" -c 'import psycopg' 2>/dev/null ||
	bail "$python can import psycopg (Debian package python3-psycopg)"
[ -x "$pgbouncer" ] || bail "$pgbouncer is installed (Debian package pgbouncer)"
case ${PGHOST:-} in
	/*) ;;
	*) bail "PGHOST is a socket directory (it is '${PGHOST:-}')" ;;
esac

work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-pgbouncer.XXXXXX") || bail "mktemp failed"
pgb_pid=

stop_pgbouncer() {
	if [ -n "$pgb_pid" ] && kill -0 "$pgb_pid" 2>/dev/null; then
		kill -TERM "$pgb_pid" 2>/dev/null
		local i
		for i in $(seq 50); do
			kill -0 "$pgb_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pgb_pid" 2>/dev/null
		wait "$pgb_pid" 2>/dev/null
	fi
	pgb_pid=
}

cleanup() {
	stop_pgbouncer
	if [ -n "${DLOCK_PGB_KEEP:-}" ]; then
		echo "# kept $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

# A free port on 127.0.0.1 (the kernel picks it; PgBouncer binds it a moment later).
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') ||
	bail "no free port"
user=${PGUSER:-$(id -un)}

printf '"%s" ""\n' "$user" >"$work/userlist.txt"
cat >"$work/pgbouncer.ini" <<EOF
[databases]
$db = host=$PGHOST port=$PGPORT dbname=$db

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $work/userlist.txt
admin_users = $user
pool_mode = transaction
default_pool_size = 2
min_pool_size = 0
reserve_pool_size = 0
max_db_connections = 2
max_client_conn = 100
server_reset_query =
logfile = $work/pgbouncer.log
pidfile = $work/pgbouncer.pid
EOF

"$pgbouncer" "$work/pgbouncer.ini" >"$work/pgbouncer.out" 2>&1 &
pgb_pid=$!

# Ready when the admin console answers.
ready=
for _ in $(seq 100); do
	kill -0 "$pgb_pid" 2>/dev/null || break
	if psql -X -q -h 127.0.0.1 -p "$port" -U "$user" -d pgbouncer -c 'SHOW VERSION' >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.1
done
if [ -z "$ready" ]; then
	mapfile -t log < <(tail -n 20 "$work/pgbouncer.out" "$work/pgbouncer.log" 2>/dev/null)
	bail "PgBouncer started on 127.0.0.1:$port" "${log[@]}"
fi

DLOCK_PGB_HOST=127.0.0.1 DLOCK_PGB_PORT=$port DLOCK_PGB_DB=$db \
	timeout -k 5 "$limit" "$python" "$here/pgbouncer_client.py"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "not ok 99 - pgbouncer_client.py finished within $limit s"
fi
if ! kill -0 "$pgb_pid" 2>/dev/null; then
	echo "# PgBouncer died during the run; its log:"
	tail -n 20 "$work/pgbouncer.log" | sed 's/^/#   /'
	rc=1
fi
errors=$(grep -c -E ' (ERROR|FATAL|WARNING) ' "$work/pgbouncer.log")
echo "# PgBouncer log: $errors ERROR/FATAL/WARNING lines"
[ "$errors" -gt 0 ] && grep -E ' (ERROR|FATAL|WARNING) ' "$work/pgbouncer.log" | head -n 5 | sed 's/^/#   /'
exit "$rc"
