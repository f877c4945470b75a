#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/fuzz.sh: generated bad and odd inputs for every dlock function,
# one suite of "make check".
#
# At least 10,000 calls of dlock_acquire, dlock_release, dlock_renew,
# dlock_check, dlock_assert, dlock_cleanup and the dlock_fence() trigger,
# with random UTF-8 names of 0 to 300 bytes, intervals sent in binary up to
# their limits, owners up to 1 MB, NULLs.  No crash, no XX000, only the
# documented SQLSTATEs, and a failing call leaves the lease table, the
# token sequence and the fenced tables unchanged.  The work is in fuzz.py
# (its docstring lists the inputs and the checks); this wrapper runs it with
# Debian's /usr/bin/python3, which has psycopg 3 (python3-psycopg), whatever
# python3 comes first on PATH, and cuts it off if it overruns.
#
# test/run runs it with PGHOST, PGPORT, PGUSER and PGDATABASE set for a
# throwaway cluster (and PGDATA, to find its server log); it creates and
# drops its own database, dlock_fuzz.  It takes about 20 seconds, prints TAP,
# and exits non-zero on any failure.  DLOCK_FUZZ_SEED=N repeats a run;
# DLOCK_FUZZ_CALLS changes its length.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=/usr/bin/python3
limit=${DLOCK_FUZZ_TIMEOUT:-240}

if ! "$python" -c 'import psycopg' 2>/dev/null; then
	echo "1..1"
	echo "not ok 1 - $python can import psycopg (Debian package python3-psycopg)"
	exit 1
fi

timeout -k 5 "$limit" "$python" "$here/fuzz.py"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	echo "not ok 99 - fuzz.py finished within $limit s"
fi
exit "$rc"
