#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/docs.sh: every ```sql and ```sh example of README.md and
# docs/*.md runs, and prints what the doc shows where it shows output; one
# suite of "make check".  The convention is in docs.py's docstring and in
# docs/internals.md; blocks marked <!-- not run --> are listed as skips.
# Needs PGHOST/PGPORT/PGUSER of a server with dlock installed (test/run sets
# them); makes and drops its own database, dlock_docs.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec timeout -k 5 "${DLOCK_DOCS_TIMEOUT:-300}" /usr/bin/python3 "$here/docs.py" "$here/../.."
