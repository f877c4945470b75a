#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/fence_stress.sh: the fencing stress test, one suite of "make check".
#
# At least 8 client processes fight over 3 lock names with a 150 ms TTL; some
# stall past their lease, some disconnect while holding; every write goes
# through the dlock_fence() trigger, in every statement shape (INSERT with a
# token, UPDATE with and without the token column, DELETE, upsert, MERGE);
# some keep a checked transaction open past their lease (idle or running),
# which a waiter ends after a 150 ms pin grace, and a revoker calls
# dlock_revoke (with and without force) on the names meanwhile.
# Afterwards the ledger and the audit log are checked against what the
# clients saw.  The work is in fence_stress.py (its
# docstring says what it checks); this wrapper runs it with Debian's
# /usr/bin/python3, which has psycopg 3 (python3-psycopg), whatever python3
# comes first on PATH, and cuts it off if it overruns.
#
# test/run runs it with PGHOST, PGPORT, PGUSER and PGDATABASE set for a
# throwaway cluster; it creates and drops its own database, dlock_stress.  It
# takes about 25 seconds, prints TAP and its counts, and exits non-zero on any
# failure.  DLOCK_STRESS_* variables tune it (see fence_stress.py).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
limit=${DLOCK_STRESS_TIMEOUT:-58}

if ! "$python" -c 'import psycopg' 2>/dev/null; then
	echo "1..1"
	echo "not ok 1 - $python can import psycopg (Debian package python3-psycopg)"
	exit 1
fi

timeout -k 5 "$limit" "$python" "$here/fence_stress.py"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "not ok 1 - fence_stress.py finished within $limit s"
fi
exit "$rc"
