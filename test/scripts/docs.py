# Copyright (c) 2026, the dlock developers
"""Run every SQL and shell example of README.md and docs/*.md (TAP output).

The convention (also in docs/internals.md, "The examples in the docs are
tested"):

- A fenced block opened with ```sql or ```sh is an example and is run.
  Blocks in other languages (```text, ```output, plain ```) are not.
- A block directly below a line `<!-- not run: REASON -->` is skipped (the
  HA recipe, operator procedures, commands that need root or other
  machines); the test lists every skipped block as a TAP skip with its
  reason.  A bare `<!-- not run -->`, with no reason, fails.
- A ```sql or ```sh block may be followed (blank lines between are allowed)
  by an ```output block: what the example prints.  The run must print
  exactly that, line by line, trailing blanks ignored; a line that is only
  `...` in the shown output matches any number of lines.  SQL output is
  psql's default aligned format, run with psql -X -q, so command tags are
  not shown; errors appear as psql prints them (`ERROR:  ...`, `DETAIL:`).
- Without an output block, an SQL block must raise no error and a shell
  block must exit 0.
- Each file runs in a scratch database of its own, dlock_docs, with dlock
  installed, made before and dropped after.  Its blocks run in order in
  one psql session, so psql variables (`\\gset`) and session settings carry
  from one block to the next; shell blocks run from that session with
  `\\!` (bash -e, from the top of the source tree, PGDATABASE set to the
  scratch database).
"""

import os
import re
import subprocess
import sys
import tempfile

top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
db = "dlock_docs"
FENCE = re.compile(r"^(\s*)```\s*([A-Za-z0-9_-]*)\s*$")


def blocks_of(path):
    """Yield (line, lang, text, skip, expected) for the fenced blocks of a file."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    found = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        start = i
        j = i + 1
        body = []
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        mark = re.fullmatch(r"<!-- not run(?::\s*(.*?))?\s*-->", lines[start - 1].strip()) if start > 0 else None
        skip = (mark.group(1) or "") if mark else None
        found.append([start + 1, lang, "\n".join(body), skip, None])
        i = j + 1
    # attach output blocks to the example above them
    result = []
    for k, b in enumerate(found):
        if b[1] == "output":
            continue
        if k + 1 < len(found) and found[k + 1][1] == "output":
            b[4] = found[k + 1][2]
        result.append(b)
    return [b for b in result if b[1] in ("sql", "sh")]


def psql_cmd(dbname):
    return ["stdbuf", "-oL", "-eL", "psql", "-X", "-q", "-P", "pager=off", "-d", dbname]


def admin(sql):
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c",
                    "SET client_min_messages = warning", "-c", sql],
                   check=True, stdout=subprocess.DEVNULL)


def matches(expected, actual):
    exp = [l.rstrip() for l in expected.strip("\n").split("\n")]
    act = [l.rstrip() for l in actual.strip("\n").split("\n")] if actual.strip() else []
    if exp == [""]:
        exp = []

    def m(i, j):
        if i == len(exp):
            return j == len(act)
        if exp[i] == "...":
            return any(m(i + 1, k) for k in range(j, len(act) + 1))
        return j < len(act) and exp[i] == act[j] and m(i + 1, j + 1)

    return m(0, 0)


def run_file(path, tmp, tests):
    blocks = blocks_of(path)
    rel = os.path.relpath(path, top)
    todo = [b for b in blocks if b[3] is None]
    for b in blocks:
        if b[3] == "":
            tests.append((False, "%s:%d %s block is marked not run with a reason" % (rel, b[0], b[1]),
                          "write <!-- not run: REASON -->"))
        elif b[3] is not None:
            tests.append(("skip", "%s:%d %s block" % (rel, b[0], b[1]), "not run: " + b[3]))
    if not todo:
        return
    admin("DROP DATABASE IF EXISTS %s" % db)
    admin("CREATE DATABASE %s" % db)
    try:
        subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db, "-c",
                        "CREATE EXTENSION dlock"], check=True, stdout=subprocess.DEVNULL)
        script = []
        for n, b in enumerate(todo):
            script.append("\\echo '@@dlock-docs %d@@'" % n)
            if b[1] == "sql":
                script.append(b[2])
                script.append("")
            else:
                f = os.path.join(tmp, "block%d.sh" % n)
                with open(f, "w") as fh:
                    fh.write("set -e -o pipefail\n" + b[2] + "\n")
                script.append("\\! cd '%s' && PGDATABASE=%s bash '%s' 2>&1; echo \"@@rc $?@@\"" % (top, db, f))
        script.append("\\echo '@@dlock-docs end@@'")
        env = dict(os.environ, PGDATABASE=db, PAGER="cat", PSQL_PAGER="cat")
        out = subprocess.run(psql_cmd(db), input="\n".join(script) + "\n", text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                             timeout=600).stdout
    finally:
        admin("DROP DATABASE IF EXISTS %s" % db)
    out = re.sub(r"(?m)^psql:[^\n]*?:\d+: ", "", out)
    parts = re.split(r"(?m)^@@dlock-docs (\d+|end)@@\n", out)
    got = {}
    for k in range(1, len(parts) - 1, 2):
        if parts[k] != "end":
            got[int(parts[k])] = parts[k + 1]
    for n, b in enumerate(todo):
        name = "%s:%d %s block" % (rel, b[0], b[1])
        text = got.get(n)
        if text is None:
            tests.append((False, name, "no output: the run stopped before it\n" + out[-2000:]))
            continue
        rc = 0
        if b[1] == "sh":
            m = re.search(r"@@rc (\d+)@@\n?\Z", text)
            rc = int(m.group(1)) if m else -1
            text = re.sub(r"@@rc \d+@@\n?\Z", "", text)
        if b[4] is not None:
            good = matches(b[4], text)
            why = "shown:\n%s\nprinted:\n%s" % (b[4].strip("\n"), text.strip("\n"))
            tests.append((good, name + " prints what the doc shows", why))
        elif b[1] == "sql":
            good = not re.search(r"(?m)^(ERROR|FATAL|PANIC):", text)
            tests.append((good, name + " runs without error", text.strip("\n")))
        else:
            tests.append((rc == 0, name + " exits 0", "exit status %d\n%s" % (rc, text.strip("\n"))))


def main():
    files = [os.path.join(top, "README.md")]
    d = os.path.join(top, "docs")
    if os.path.isdir(d):
        files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".md"))
    tests = []
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)
        for f in files:
            run_file(f, tmp, tests)
    print("1..%d" % len(tests))
    failed = 0
    for i, (good, name, why) in enumerate(tests, 1):
        if good == "skip":
            print("ok %d - %s # skip %s" % (i, name, why))
            continue
        print("%s %d - %s" % ("ok" if good else "not ok", i, name))
        if not good:
            failed += 1
            for line in why.split("\n"):
                print("# " + line)
    skipped = sum(1 for t in tests if t[0] == "skip")
    print("# %d blocks run, %d not run (marked <!-- not run: REASON -->)" % (len(tests) - skipped, skipped))
    sys.exit(1 if failed else 0)


main()
