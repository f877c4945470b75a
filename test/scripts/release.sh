#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/release.sh: the release files agree, one suite of "make check".
#
# The work is in release.py (its docstring lists the checks): the version in
# dlock.control, META.json and CHANGELOG.md, META.json as PGXN metadata, the
# licence, the install scripts, and dlock--1.0.sql byte for byte as
# released.  It needs no database.  Prints TAP, exits non-zero on failure.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/release.py" "$here/../.."
