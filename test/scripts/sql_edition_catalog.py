# Copyright (c) 2026, the dlock developers
"""The two editions have one API: their catalogs compared (issue 26 item 1).

Installs the C edition (CREATE EXTENSION dlock SCHEMA dlock) and the SQL
edition (its psql script, dist/dlock_sql--V.psql, into schema dlock) into two
scratch databases, describes each with test/lib/edition_catalog.sql (every
function's signature with argument names and defaults, result, kind,
volatility, parallel safety, strictness, PUBLIC's EXECUTE and comment;
every view's columns, PUBLIC's SELECT and comment) and compares them, fact
by fact.  Each difference must match a line of test/edition_differences.txt
("- GLOB": a fact only the C edition has, "+ GLOB": only the SQL edition),
one test per difference; a line of that file that matches no difference
fails too, so the list stays the true one.  TAP output.
"""

import fnmatch
import os
import subprocess
import sys

top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
version = None
with open(os.path.join(top, "dlock.control"), encoding="utf-8") as f:
    for line in f:
        if line.startswith("default_version"):
            version = line.split("'")[1]
script = os.path.join(top, "dist", "dlock_sql--%s.psql" % version)
dbs = {"c": "dlock_edition_c", "sql": "dlock_edition_sql"}
n = 0
failed = 0


def tap(ok, desc, *diag):
    global n, failed
    n += 1
    if not ok:
        failed += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, desc))
    for d in diag:
        for line in str(d).splitlines():
            print("#   " + line)


def psql(*args, dbname="postgres"):
    env = dict(os.environ, PGOPTIONS="-c client_min_messages=warning")
    return subprocess.run(["psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", dbname] + list(args),
                          text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)


def facts(db):
    r = psql("-f", os.path.join(top, "test/lib/edition_catalog.sql"), dbname=db)
    return [l for l in r.stdout.splitlines() if l and not l.startswith("SET")] if r.returncode == 0 else None


allowed = []
with open(os.path.join(top, "test/edition_differences.txt"), encoding="utf-8") as f:
    for raw in f:
        line = raw.rstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        sign, _, glob = line.partition(" ")
        if sign not in ("-", "+") or not glob:
            tap(False, "test/edition_differences.txt: a line is '- GLOB' or '+ GLOB'", line)
            continue
        allowed.append((sign, glob, line))

for db in dbs.values():
    psql("-c", "DROP DATABASE IF EXISTS %s" % db)
    psql("-c", "CREATE DATABASE %s" % db)
try:
    r = psql("-c", "CREATE SCHEMA dlock", "-c", "CREATE EXTENSION dlock SCHEMA dlock", dbname=dbs["c"])
    tap(r.returncode == 0, "the C edition installs into schema dlock", r.stdout)
    r = psql("-v", "schema=dlock", "-f", script, dbname=dbs["sql"])
    tap(r.returncode == 0, "the SQL edition's psql script installs into schema dlock", r.stdout)
    c, s = facts(dbs["c"]), facts(dbs["sql"])
    tap(bool(c) and bool(s) and any(l.startswith("function|dlock.dlock_acquire(") for l in c),
        "both editions described (test/lib/edition_catalog.sql)")
    c, s = c or [], s or []
finally:
    for db in dbs.values():
        psql("-c", "DROP DATABASE IF EXISTS %s" % db)

diffs = ["- " + l for l in sorted(set(c) - set(s))] + ["+ " + l for l in sorted(set(s) - set(c))]
used = set()
unlisted = []
for d in diffs:
    hits = [a for a in allowed if d[0] == a[0] and fnmatch.fnmatchcase(d[2:], a[1])]
    used.update(a[2] for a in hits)
    if not hits:
        unlisted.append(d)
tap(not unlisted, "every difference between the editions' catalogs is listed in test/edition_differences.txt "
    "(%d differences, %d unlisted)" % (len(diffs), len(unlisted)), *unlisted)
stale = [a[2] for a in allowed if a[2] not in used]
tap(not stale, "every line of test/edition_differences.txt matches a difference", *stale)
print("1..%d" % n)
sys.exit(1 if failed else 0)
