#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# A million distinct names never exhaust the shared lock table: dlock's
# advisory locks are transaction-scoped, so acquisitions spread over many
# transactions leave nothing behind, however many names they take.
#
# 10^6 acquisitions of distinct names, 100 per transaction, in one session
# (a procedure that commits after each batch); then every lease is held, no
# dlock lock is left in pg_locks, and the lock table has room to spare.
# Prints TAP.
set -uo pipefail

N=${DLOCK_MILLION_NAMES:-1000000}
DB=dlock_million
q() { psql -X -q -v ON_ERROR_STOP=1 -d "$DB" -At "$@"; }

fail=0
echo "1..4"
psql -X -q -d postgres -c "SET client_min_messages = warning" \
	-c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB" >/dev/null || {
	echo "not ok 1 - set-up"
	exit 1
}
q -c "CREATE EXTENSION dlock"

start=$(date +%s)
if q <<EOF; then
CREATE PROCEDURE take(n int) LANGUAGE plpgsql AS \$\$
DECLARE
  got bigint;
BEGIN
  FOR b IN 0 .. n / 100 - 1 LOOP
    SELECT count(dlock_acquire('m/' || (b * 100 + i), '1 hour')) INTO got
      FROM generate_series(1, 100) AS i;
    IF got <> 100 THEN
      RAISE EXCEPTION 'batch % got % leases', b, got;
    END IF;
    COMMIT;
  END LOOP;
END \$\$;
CALL take($N);
EOF
	echo "ok 1 - $N distinct names acquired in $((N / 100)) transactions, no error ($(($(date +%s) - start)) s)"
else
	echo "not ok 1 - $N distinct names acquired in $((N / 100)) transactions"; fail=1
fi

held=$(q -c "SELECT count(*) FROM dlock_leases WHERE held AND name LIKE 'm/%'")
if [ "$held" = "$N" ]; then
	echo "ok 2 - all $N leases are held"
else
	echo "not ok 2 - all $N leases are held (got $held)"; fail=1
fi

locks=$(q -c "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid IN (17484, 17485)")
if [ "$locks" = 0 ]; then
	echo "ok 3 - no dlock lock left in pg_locks"
else
	echo "not ok 3 - no dlock lock left in pg_locks (got $locks)"; fail=1
fi

# The lock table still takes a full transaction's worth of new locks.
if q -c "SELECT count(pg_advisory_xact_lock(42, i)) FROM generate_series(1, 1000) i" >/dev/null; then
	echo "ok 4 - the shared lock table still has room: 1,000 more locks in one transaction"
else
	echo "not ok 4 - the shared lock table still has room"; fail=1
fi

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null
exit $fail
