#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/reference.sh: docs/reference.md's table of functions is what
# the catalog says (reference.py), one suite of "make check".  Needs
# PGHOST/PGPORT/PGUSER of a server with dlock installed (test/run sets
# them); makes and drops its own database, dlock_reference.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec timeout -k 5 "${DLOCK_REFERENCE_TIMEOUT:-60}" /usr/bin/python3 "$here/reference.py" "$here/../.."
