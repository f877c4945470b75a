#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/owner_renewal.sh: calls by other roles never make an owner
# renewal answer NULL (issue 24 item 4); one suite of "make check".  The work
# is in owner_renewal.py (its docstring lists the checks); this wrapper runs
# it with Debian's /usr/bin/python3, which has psycopg 3 (python3-psycopg),
# and cuts it off if it overruns.  It takes about 10 seconds and prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
limit=${DLOCK_OR_TIMEOUT:-90}

if ! "$python" -c 'import psycopg' 2>/dev/null; then
	echo "1..1"
	echo "not ok 1 - $python can import psycopg (Debian package python3-psycopg)"
	exit 1
fi

timeout -k 5 "$limit" "$python" "$here/owner_renewal.py"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "not ok 99 - owner_renewal.py finished within $limit s"
fi
exit "$rc"
