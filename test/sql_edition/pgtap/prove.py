#!/usr/bin/env python3
# Copyright (c) 2026, the dlock developers
# test/sql_edition/pgtap/prove.py: the C edition's pgTAP files
# (test/pgtap/*.sql) against the SQL edition, one TAP stream.
#
#   prove.py rewrite SRC OUT INSTALL_PSQL   the file, its CREATE EXTENSION
#                                           dlock made an \i of INSTALL_PSQL
#   prove.py judge NAME OUTPUT              the file's TAP output, judged
#                                           against differences.py
#
# judge prints one line per assertion: "ok" where it passes and is not a
# listed difference; "ok ... # skip difference: REASON" where it fails and
# differences.py lists it (with its reason and its row of
# docs/editions.md); "not ok" where it fails unlisted, where a listed one
# passes (the difference no longer exists: remove it), where a listed
# description is not in the file's output, or where the file ran fewer
# assertions than it planned.  Numbers are counted across files (stdin of
# the counter file COUNTER).
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import differences  # noqa: E402


def quote(s):
    return "'" + s.replace("'", "''") + "'"


def rewrite(src, out, install):
    with open(src) as f:
        text = f.read()
    if text.count("CREATE EXTENSION dlock;\n") != 1:
        sys.exit("prove.py: %s: CREATE EXTENSION dlock; is not found once" % src)
    text = text.replace("CREATE EXTENSION dlock;\n", "\\ir %s\n" % install)
    # differences.REWRITE: the same test on the SQL edition's tables.
    for rule in getattr(differences, "REWRITE", {}).get(os.path.basename(src)[:-len(".sql")], []):
        old, new, times = (rule + (1,))[:3]
        if text.count(old) != times:
            sys.exit("prove.py: %s: a REWRITE's text is not found once: %s" % (src, old))
        text = text.replace(old, new)
    # differences.SKIP: statements that would abort the file's transaction
    # against the SQL edition (they read a C-edition object): each becomes
    # pgTAP's skip() of as many assertions, with its reason.
    name = os.path.basename(src)[:-len(".sql")]
    for start, count, reason in differences.SKIP.get(name, []):
        i = text.find("\n" + start)
        if i < 0 or text.find("\n" + start, i + 1) >= 0:
            sys.exit("prove.py: %s: a SKIP's statement is not found once: %s" % (name, start))
        j = text.index(";\n", i + 1)
        text = text[:i + 1] + "SELECT skip(%s, %d);" % (quote("difference: " + reason), count) + text[j + 1:]
    with open(out, "w") as f:
        f.write(text)


def judge(name, output, counter):
    listed = dict(differences.FAILS.get(name, {}))
    with open(output) as f:
        lines = f.read().split("\n")
    plan = None
    ran = 0
    n = int(open(counter).read() or 0) if os.path.exists(counter) else 0
    bad = 0
    for line in lines:
        m = re.match(r"^1\.\.(\d+)$", line.strip())
        if m:
            plan = int(m.group(1))
            continue
        m = re.match(r"^(not ok|ok) \d+(.*)$", line.strip())
        if not m:
            continue
        ran += 1
        n += 1
        passed = m.group(1) == "ok"
        desc = re.sub(r"^ - ", "", m.group(2).strip() and m.group(2)).strip()
        if passed and re.match(r"^# skip", desc, re.I):
            print("ok %d - %s: %s" % (n, name, desc))  # the file's own skip
            continue
        reason = listed.pop(desc, None)
        if reason is None:
            print("%s %d - %s: %s" % ("ok" if passed else "not ok", n, name, desc))
            bad += not passed
        elif passed:
            print("not ok %d - %s: %s (listed as a difference, but passes: remove it from differences.py)" % (n, name, desc))
            bad += 1
        else:
            print("ok %d - %s: %s # skip difference: %s" % (n, name, desc, reason))
    for desc in listed:
        n += 1
        print("not ok %d - %s: a listed difference is not in the output: %s" % (n, name, desc))
        bad += 1
    if plan is None or ran != plan:
        n += 1
        print("not ok %d - %s: planned %s assertions, ran %d" % (n, name, plan, ran))
        bad += 1
        sys.stdout.write("".join("#   %s\n" % l for l in lines if l.strip() and not re.match(r"^\s*(not )?ok \d+", l))[-4000:])
    with open(counter, "w") as f:
        f.write(str(n))
    return bad == 0


if __name__ == "__main__":
    if sys.argv[1] == "rewrite":
        rewrite(*sys.argv[2:5])
    elif sys.argv[1] == "not-run":
        # A file differences.NOT_RUN lists: one skip line, exit 0.
        reason = getattr(differences, "NOT_RUN", {}).get(sys.argv[2])
        if reason is None:
            sys.exit(1)
        counter = sys.argv[3]
        n = int(open(counter).read() or 0) + 1 if os.path.exists(counter) else 1
        with open(counter, "w") as f:
            f.write(str(n))
        print("ok %d - %s # skip difference: not run: %s" % (n, sys.argv[2], reason))
    elif sys.argv[1] == "judge":
        sys.exit(0 if judge(*sys.argv[2:5]) else 1)
    else:
        sys.exit("usage: prove.py rewrite|judge ...")
