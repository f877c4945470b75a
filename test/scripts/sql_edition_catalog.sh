#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/sql_edition_catalog.sh: the C and SQL editions' catalogs
# compared (sql_edition_catalog.py, with Debian's /usr/bin/python3), one
# suite of "make check".  It needs the SQL edition's psql script (make
# sql-edition, which it runs) and the C edition installed on the server.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
if ! make -C "$top" -s --no-print-directory PG_CONFIG="${PG_CONFIG:-pg_config}" sql-edition >/dev/null 2>&1; then
	echo "1..1"
	echo "not ok 1 - make sql-edition"
	exit 1
fi
timeout -k 5 120 /usr/bin/python3 "$here/sql_edition_catalog.py" "$top"
