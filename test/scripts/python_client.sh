#!/usr/bin/env bash
# Copyright (c) 2026, the dlock developers
# test/scripts/python_client.sh: the Python client in clients/python.
#
# It installs the package offline the two ways its README documents (pip
# --target, and a venv with --system-site-packages; Debian 12's system Python
# refuses a plain pip install, which is checked too), runs mypy --strict on
# the installed package and on examples/fastapi_app.py, then the pytest suite
# against the throwaway cluster in a scratch database of its own, and prints
# one TAP line per pytest test (from pytest's JUnit XML).  The last test
# restarts the server (pg_ctl restart -m fast); this script makes sure it is
# up again before it exits.  Debian's /usr/bin/python3 and its packages only
# (python3-psycopg, -pytest, -mypy, -fastapi, -httpx, -venv, -setuptools,
# -pip); nothing is fetched.  About two minutes.
#
# test/run ("make check") runs it as the unprivileged test user with PGHOST,
# PGPORT, PGUSER and PGDATA set; it exits non-zero on any failure, and when
# no pytest test ran.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
PY=/usr/bin/python3
DB=dlock_python_$$
work=$(mktemp -d "${TMPDIR:-/tmp}/dlock-python.XXXXXX") || exit 1

. "$(cd "$(dirname "$0")/../lib" && pwd)/tap.sh"
# check NAME LOG CMD...: one TAP line for a command; its output on failure.
check() {
	local name=$1 log=$2 t0=$SECONDS
	shift 2
	if "$@" >"$log" 2>&1; then
		echo "# $name: $((SECONDS - t0)) s"
		ok "$name"
	else
		not_ok "$name"
		sed 's/^/#   | /' "$log" | tail -n 60
	fi
}

server_up() { pg_ctl status -D "$PGDATA" >/dev/null 2>&1 && pg_isready -q -t 60; }

cleanup() {
	if [ -n "${PGDATA:-}" ] && ! server_up; then
		pg_ctl start -w -t 120 -D "$PGDATA" -l "$(dirname "$PGDATA")/server.log" >/dev/null 2>&1
	fi
	dropdb --if-exists --force "$DB" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

for m in psycopg pytest mypy fastapi httpx venv setuptools pip wheel; do
	if ! "$PY" -c "import $m" 2>/dev/null; then
		echo "Bail out! $PY cannot import $m (test/run installs the Debian packages)"
		exit 1
	fi
done

# Away from the tree: Python must not take the extension's dlock.so in the
# top directory for the package.  Copies, so that building writes nothing
# into the tree.
cd "$work" || exit 1
cp -r "$top/clients/python" "$work/src" && cp -r "$top/clients/python" "$work/src-venv" ||
	{ echo "Bail out! cannot copy clients/python"; exit 1; }

# --- Install: offline, with Debian's setuptools and pip only ------------------
pipflags=(--no-build-isolation --no-deps --no-index --no-cache-dir --disable-pip-version-check)
check "pip install --target DIR clients/python (offline, no build isolation)" "$work/pip.log" \
	"$PY" -m pip install "${pipflags[@]}" --target "$work/target" "$work/src"
where=$(PYTHONPATH=$work/target "$PY" -c 'import dlock, dlock.aio; print(dlock.__file__)' 2>&1)
if [ "$where" = "$work/target/dlock/__init__.py" ] && [ -f "$work/target/dlock/py.typed" ]; then
	ok "the installed package imports from the target, with py.typed"
else
	not_ok "the installed package imports from the target, with py.typed"
	echo "#   got: $where"
fi

# (--without-pip: the venv uses Debian's pip through the system site
# packages, and skips ensurepip's copy, which is slow and changes nothing.)
# The packaging checks and mypy do not depend on the edition: against the
# SQL edition (python_client_sql) they are TAP skips, run by python_client.
if [ "${DLOCK_EDITION:-c}" = sql ]; then
	for t in "pip install into a venv made with --system-site-packages" \
		"a plain pip install into Debian's Python is refused (externally managed)" \
		"mypy --strict on the installed package and examples/fastapi_app.py"; do
		ok "$t # SKIP edition-neutral: python_client runs it"
	done
else
	check "pip install into a venv made with --system-site-packages" "$work/venv.log" \
		bash -c '"$1" -m venv --system-site-packages --without-pip "$2/venv" &&
			"$2/venv/bin/python" -m pip install "${@:4}" "$3" &&
			"$2/venv/bin/python" -c "import dlock.aio, dlock, sys; sys.exit(0 if dlock.__file__.startswith(\"$2/venv/\") else 1)"' \
		_ "$PY" "$work" "$work/src-venv" "${pipflags[@]}"

	marker=$("$PY" -c 'import os, sysconfig; print(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))')
	if [ -f "$marker" ]; then
		"$PY" -m pip install "${pipflags[@]}" --dry-run "$work/src" >"$work/plain.log" 2>&1
		if [ $? -ne 0 ] && grep -q externally-managed-environment "$work/plain.log"; then
			ok "a plain pip install into Debian's Python is refused (externally managed)"
		else
			not_ok "a plain pip install into Debian's Python is refused (externally managed)"
			sed 's/^/#   | /' "$work/plain.log" | tail -n 20
		fi
	else
		ok "a plain pip install into Debian's Python is refused (externally managed) # SKIP not an externally managed Python"
	fi

	# --- Types -------------------------------------------------------------------
	check "mypy --strict on the installed package and examples/fastapi_app.py" "$work/mypy.log" \
		env MYPYPATH="$work/target" "$PY" -m mypy --strict --cache-dir "$work/mypy-cache" \
		"$work/target/dlock" "$top/examples/fastapi_app.py"

	# --- The pytest suite, against the throwaway cluster ---------------------------
fi

createdb "$DB" || { echo "Bail out! createdb $DB failed"; exit 1; }
. "$top/test/lib/install_dlock.sh"
install_dlock "$DB" ||
	{ echo "Bail out! installing dlock (edition ${DLOCK_EDITION:-c}) failed"; exit 1; }

# The restart test goes last: it restarts the server under everything else.
tests=(test_lease.py test_aio.py test_leader.py test_client_faults.py test_client_interruptions.py test_fastapi_app.py test_edition.py test_fastapi_edition.py test_restart.py)
(
	cd "$work/src/tests" &&
		PYTHONPATH=$work/target DLOCK_TEST_DSN="dbname=$DB" DLOCK_EXAMPLES=$top/examples \
			timeout 1200 "$PY" -m pytest -p no:cacheprovider -o faulthandler_timeout=300 \
			-o junit_family=xunit1 --junitxml="$work/junit.xml" -rA "${tests[@]}"
) >"$work/pytest.log" 2>&1
pytest_rc=$?

# One TAP line per pytest test; a failure shows pytest's report of it.
tap=$("$PY" - "$work/junit.xml" "$n" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET

path, n = sys.argv[1], int(sys.argv[2])
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError) as e:
    print(f"# no JUnit report: {e}")
    cases = []
for case in cases:
    n += 1
    name = f"{case.get('classname', '')}::{case.get('name', '')}".lstrip(":")
    bad = case.find("failure")
    if bad is None:
        bad = case.find("error")
    skipped = case.find("skipped")
    if bad is not None:
        print(f"not ok {n} - {name}")
        text = (bad.get("message") or "") + "\n" + (bad.text or "")
        for line in text.strip().splitlines()[-40:]:
            print(f"#   {line}")
    elif skipped is not None:
        print(f"ok {n} - {name} # SKIP {skipped.get('message', '')}")
    else:
        print(f"ok {n} - {name}")
print(f"count {len(cases)}")
PYEOF
)
echo "$tap" | grep -v '^count '
ran=$(echo "$tap" | sed -n 's/^count //p')
n=$((n + ${ran:-0}))
failed=$((failed + $(echo "$tap" | grep -c '^not ok ')))
if [ "${ran:-0}" -eq 0 ]; then
	not_ok "pytest ran the suite"
	sed 's/^/#   | /' "$work/pytest.log" | tail -n 60
elif [ "$pytest_rc" -ne 0 ] && ! echo "$tap" | grep -q '^not ok '; then
	not_ok "pytest exited with status $pytest_rc"
	sed 's/^/#   | /' "$work/pytest.log" | tail -n 60
fi
if [ "$failed" -gt 0 ]; then
	echo "# pytest's summary:"
	grep -E '^(FAILED|ERROR|=+ .*(passed|failed))' "$work/pytest.log" | sed 's/^/#   /'
fi

if server_up; then
	ok "the server is up after the restart test"
else
	not_ok "the server is up after the restart test"
fi

tap_done
