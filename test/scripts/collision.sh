#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/collision.sh: 64-bit lock keys, one suite of "make check".
#
# dlock locks a name on a 64-bit hash in its own key space (objsubid 17484);
# this shows the key in pg_locks, that 20,000 names share none, and that
# two names sharing 1.0's 32-bit key no longer hold each other up.  The work
# is in collision.py (its docstring lists the checks); this wrapper runs it
# with Debian's /usr/bin/python3, which has psycopg 3 (python3-psycopg),
# whatever python3 comes first on PATH, and cuts it off if it overruns.
#
# test/run runs it with PGHOST, PGPORT, PGUSER and PGDATABASE set for a
# throwaway cluster; it creates and drops its own database, dlock_collision.
# It takes about 5 seconds, prints TAP, and exits non-zero on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
limit=${DLOCK_COLLISION_TIMEOUT:-50}

if ! "$python" -c 'import psycopg' 2>/dev/null; then
	echo "1..1"
	echo "not ok 1 - $python can import psycopg (Debian package python3-psycopg)"
	exit 1
fi

timeout -k 5 "$limit" "$python" "$here/collision.py"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "not ok 99 - collision.py finished within $limit s"
fi
exit "$rc"
