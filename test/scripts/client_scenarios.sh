#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/client_scenarios.sh: every scenario of docs/clients.md has a
# test in every client that must implement it, and none is skipped (see
# client_scenarios.py). Reads the tree only: no server. Prints TAP.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec /usr/bin/python3 "$here/client_scenarios.py" "$here/../.."
