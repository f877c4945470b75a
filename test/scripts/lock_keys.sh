#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/lock_keys.sh: lock keys keyed with a secret, one suite of
# "make check".
#
# dlock 1.2 keys a lock name with SipHash-2-4 and the secret in
# dlock_lock_key; this shows the keys in pg_locks, that a name colliding
# with a victim's under the 1.1 hash no longer interferes, and what a forced
# collision costs.  The work is in lock_keys.py (its docstring lists the
# checks); this wrapper runs it with Debian's /usr/bin/python3, which has
# psycopg 3 (python3-psycopg), whatever python3 comes first on PATH, and
# cuts it off if it overruns.
#
# test/run runs it with PGHOST, PGPORT, PGUSER and PGDATABASE set for a
# throwaway cluster; it creates and drops its own databases and roles.  It
# takes about 10 seconds, prints TAP, and exits non-zero on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
limit=${DLOCK_LOCK_KEYS_TIMEOUT:-120}

if ! "$python" -c 'import psycopg' 2>/dev/null; then
	echo "1..1"
	echo "not ok 1 - $python can import psycopg (Debian package python3-psycopg)"
	exit 1
fi

timeout -k 5 "$limit" "$python" "$here/lock_keys.py"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "not ok 99 - lock_keys.py finished within $limit s"
fi
exit "$rc"
