# Copyright (c) 2026, the dlock developers
"""docs/reference.md's table of functions is the catalog's (TAP output).

The rows between `<!-- catalog: functions -->` and `<!-- /catalog -->` in
docs/reference.md must be exactly what test/lib/functions.sql prints for a
fresh install (signature with argument names and defaults, result,
volatility, parallel safety, security, who may call): one test per function
of either side, so a function added without its row, a row left for a
function that is gone, or a changed default or label fails.

`reference.py TOP --update` rewrites the table from the catalog instead
(for a maintainer who added a function; review the diff).
"""

import os
import re
import subprocess
import sys

args = [a for a in sys.argv[1:] if a != "--update"]
update = "--update" in sys.argv[1:]
top = os.path.abspath(args[0] if args else ".")
db = "dlock_reference"


def psql(*args, dbname="postgres"):
    env = dict(os.environ, PGOPTIONS="-c client_min_messages=warning")
    return subprocess.run(["psql", "-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1", "-d", dbname] + list(args),
                          check=True, text=True, stdout=subprocess.PIPE, env=env).stdout


def key(row):
    """A row's function name (dlock overloads none)."""
    m = re.match(r"\| `([a-z_]+)\(", row)
    return m.group(1) if m else row


psql("-c", "DROP DATABASE IF EXISTS %s" % db, "-c", "CREATE DATABASE %s" % db)
try:
    psql("-c", "CREATE EXTENSION dlock", dbname=db)
    catalog = [r for r in psql("-f", os.path.join(top, "test/lib/functions.sql"), dbname=db).splitlines() if r]
finally:
    psql("-c", "DROP DATABASE IF EXISTS %s" % db)

with open(os.path.join(top, "docs/reference.md"), encoding="utf-8") as f:
    text = f.read()
m = re.search(r"<!-- catalog: functions -->\n(.*?)<!-- /catalog -->", text, re.S)
if update and m:
    head = [r for r in m.group(1).splitlines() if r and not r.startswith("| `")]
    body = "\n".join(head + catalog) + "\n"
    with open(os.path.join(top, "docs/reference.md"), "w", encoding="utf-8") as f:
        f.write(text[:m.start(1)] + body + text[m.end(1):])
    sys.exit(0)
documented = []
if m:
    documented = [r for r in m.group(1).splitlines() if r.startswith("| `")]

results = [(bool(m), "docs/reference.md has the table of functions", "")]
docs = {key(r): r for r in documented}
cat = {key(r): r for r in catalog}
for k in sorted(set(docs) | set(cat)):
    name = k
    if k not in docs:
        results.append((False, "%s is in docs/reference.md's table" % name, cat[k]))
    elif k not in cat:
        results.append((False, "%s, in docs/reference.md's table, exists" % name, docs[k]))
    else:
        results.append((docs[k] == cat[k], "docs/reference.md describes %s as the catalog does" % name,
                        "docs:    %s\ncatalog: %s" % (docs[k], cat[k])))

print("1..%d" % len(results))
failed = 0
for i, (good, name, why) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if good else "not ok", i, name))
    if not good:
        failed += 1
        for line in why.splitlines():
            print("# " + line)
sys.exit(1 if failed else 0)
