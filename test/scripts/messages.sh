#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/messages.sh: every message dlock shows a user follows the
# Error Message Style Guide and is on the reviewed list; one suite of "make
# check".  The work and the rules are in messages.py.  Needs no database.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/messages.py"
