#!/usr/bin/env python3
# Copyright (c) 2026, the dlock developers
# test/sql_edition/same/rules.py EXPECTED RESULTS: print the
# (C edition's text, SQL edition's text) rules that turn an expected output
# (the runner's rewritten one, in a scratch directory kept with DLOCK_KEEP=1)
# into the results the SQL edition gave, each with just enough context to
# be found exactly once, as differences.py's EXPECTED and
# ISOLATION_EXPECTED take them.  A tool for whoever updates differences.py
# after a change in src/sql: every rule still needs its reason written
# above it, and a rule is only right if the SQL edition's answer is.
import difflib
import sys


def rules(exp, res):
    a, b = exp.split("\n"), res.split("\n")
    t = list(a)
    delta = 0
    out = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(0):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        s1, s2 = i1 + delta, i2 + delta
        c = 1
        while True:
            lo, hi = max(0, s1 - c), min(len(t), s2 + c)
            old = "\n".join(t[lo:hi]) + ("\n" if hi < len(t) else "")
            if "\n".join(t).count(old) == 1 or c > 60:
                break
            c += 1
        newlines = t[lo:s1] + b[j1:j2] + t[s2:hi]
        out.append((old, "\n".join(newlines) + ("\n" if hi < len(t) else "")))
        t[lo:hi] = newlines
        delta += (j2 - j1) - (i2 - i1)
    return out


def literal(s, indent):
    lines = s.split("\n")
    parts = [repr(line + "\n") for line in lines[:-1]] + ([repr(lines[-1])] if lines[-1] else [])
    return ("\n" + indent).join(parts)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        exp = f.read()
    with open(sys.argv[2]) as f:
        res = f.read()
    found = rules(exp, res)
    check = exp
    for old, new in found:
        if check.count(old) != 1:
            sys.exit("rules.py: a rule's text is not unique; write this one by hand:\n" + old)
        check = check.replace(old, new)
    if check != res:
        sys.exit("rules.py: the rules do not give the results; write them by hand")
    for old, new in found:
        print("        (" + literal(old, "         ") + ",")
        print("         " + literal(new, "         ") + "),")
