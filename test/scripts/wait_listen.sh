#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/wait_listen.sh: a waiting acquire on a connection that also
# LISTENs does not spin under a flood of notifications (issue 24 item 13),
# one suite of "make check".  The work is in wait_listen.py (its docstring
# says what it checks); this wrapper runs it with Debian's /usr/bin/python3
# (python3-psycopg) and cuts it off if it overruns.  About 10 s; prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
limit=${DLOCK_WAIT_LISTEN_TIMEOUT:-120}

if ! "$python" -c 'import psycopg' 2>/dev/null; then
	echo "1..1"
	echo "not ok 1 - $python can import psycopg (Debian package python3-psycopg)"
	exit 1
fi

timeout -k 5 "$limit" "$python" "$here/wait_listen.py"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "not ok 99 - wait_listen.py finished within $limit s"
fi
exit "$rc"
