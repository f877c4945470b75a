#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/ledger.sh: the self-test of test/lib/ledger.py, the ledger
# rules that fence_stress, the PgBouncer test and the HA harness share.  A
# good ledger must pass every rule, and a ledger broken on purpose, one rule
# at a time, must be flagged by that rule: a checker that cannot fail would
# make those suites prove nothing.  No server needed; prints TAP.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/../lib/ledger.py"
