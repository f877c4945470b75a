# Copyright (c) 2026, the dlock developers
"""Every client scenario of docs/clients.md has a test in every client, not skipped.

docs/clients.md's table between <!-- scenarios --> and <!-- /scenarios -->
lists the IDs (C01, C02, ...) and, per client, "yes" when the client must
implement the scenario.  The tests carry the ID in their name:

- Python: ``def test_c01_...`` in clients/python/tests/test_*.py (several IDs:
  ``test_c01_c03_...``), and ``def c09_...`` in test/scripts/pgbouncer_client.py
  (the PgBouncer suite runs the Python client there);
- Go: ``func TestC01...(t *testing.T)`` in clients/go/**/*_test.go;
- Node: ``test("C01 ...")`` (or ``it``) in clients/node/test/**/*.ts.

A test counts as skipped when it is marked so: Python ``@pytest.mark.skip``,
``skipif``, ``xfail`` or a ``pytest.skip(`` in its body; Go a ``t.Skip``,
``t.SkipNow`` or ``t.Skipf`` in its body; Node ``test.skip``, ``test.todo``,
a ``skip``/``todo`` option, or ``t.skip(``/``t.todo(`` in its body.  One TAP
line per (ID, client): fails when a "yes" has no test, or only skipped ones.
A client whose directory is absent from the tree is a TAP skip per ID, so
the count shows it.  The last lines check the check: on copies of the tree
with a test renamed away, or marked skipped, it must fail.

Usage: client_scenarios.py [TOP]
"""

import os
import re
import shutil
import sys
import tempfile

CLIENTS = ("Python", "Go", "Node")


def scenarios(top):
    """{ID: (text, {client: required})} from docs/clients.md."""
    with open(os.path.join(top, "docs", "clients.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- scenarios -->\n(.*?)<!-- /scenarios -->", text, re.S)
    if not m:
        raise SystemExit("Bail out! docs/clients.md has no <!-- scenarios --> table")
    rows = [r for r in m.group(1).splitlines() if r.startswith("|")]
    head = [c.strip() for c in rows[0].strip("|").split("|")]
    out = {}
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        if len(cells) != len(head) or not re.fullmatch(r"C\d\d", cells[0]):
            raise SystemExit(f"Bail out! docs/clients.md: a malformed scenario row: {row}")
        need = {c: cells[head.index(c)] == "yes" for c in CLIENTS}
        out[cells[0]] = (cells[1], need)
    return out


def files(root, pattern, skip_dirs=("node_modules", "dist", "vendor")):
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in skip_dirs)
        for n in sorted(names):
            if re.fullmatch(pattern, n):
                yield os.path.join(d, n)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def python_tests(top):
    """[(ids, label, skipped)] of the Python client."""
    found = []
    tests = os.path.join(top, "clients", "python", "tests")
    where = [(p, r"test_((?:c\d\d_)+)\w*") for p in files(tests, r"test_.*\.py")]
    bouncer = os.path.join(top, "test", "scripts", "pgbouncer_client.py")
    if os.path.exists(bouncer):
        where.append((bouncer, r"((?:c\d\d_)+)\w*"))
    for path, name_re in where:
        lines = read(path).split("\n")
        for i, line in enumerate(lines):
            m = re.match(r"def (" + name_re + r")\(", line)
            if not m:
                continue
            ids = ["C" + x for x in re.findall(r"c(\d\d)_", m.group(2))]
            j = i - 1
            marks = []
            while j >= 0 and (lines[j].startswith("@") or lines[j].startswith(" ")
                              or lines[j].startswith(")")):
                marks.append(lines[j])
                j -= 1
            body = []
            for k in range(i + 1, len(lines)):
                if lines[k] and not lines[k][0].isspace() and not lines[k].startswith(")"):
                    break
                body.append(lines[k])
            decorated = any(re.search(r"mark\.(skip|skipif|xfail)\b", x) for x in marks)
            skipped = decorated or any("pytest.skip(" in x for x in body)
            found.append((ids, f"{os.path.relpath(path, top)}::{m.group(1)}", skipped))
    return found


def go_tests(top):
    found = []
    for path in files(os.path.join(top, "clients", "go"), r".*_test\.go"):
        text = read(path)
        for m in re.finditer(r"^func (Test((?:C\d\d)+)\w*)\(t \*testing\.T\) \{\n(.*?)^\}", text,
                             re.S | re.M):
            ids = re.findall(r"C\d\d", m.group(2))
            skipped = re.search(r"\.(Skip|SkipNow|Skipf)\(", m.group(3)) is not None
            found.append((ids, f"{os.path.relpath(path, top)}:{m.group(1)}", skipped))
    return found


NODE_TEST = re.compile(r"\b(?:test|it)(\.skip|\.todo|\.only)?\(\s*([\"'`])(C\d\d)\b")


def node_tests(top):
    found = []
    for path in files(os.path.join(top, "clients", "node", "test"), r".*\.[cm]?[jt]s"):
        text = read(path)
        hits = list(NODE_TEST.finditer(text))
        for n, m in enumerate(hits):
            end = hits[n + 1].start() if n + 1 < len(hits) else len(text)
            span = text[m.end():end]
            skipped = (m.group(1) in (".skip", ".todo")
                       or re.search(r"\b(skip|todo)\s*:\s*(?!false\b)", span) is not None
                       or re.search(r"\bt\.(skip|todo)\(", span) is not None)
            line = text.count("\n", 0, m.start()) + 1
            found.append(([m.group(3)], f"{os.path.relpath(path, top)}:{line}", skipped))
    return found


FINDERS = {"Python": (python_tests, os.path.join("clients", "python")),
           "Go": (go_tests, os.path.join("clients", "go")),
           "Node": (node_tests, os.path.join("clients", "node"))}


def check(top):
    """[(ok, description, diagnostics, skip_reason)], one per (ID, client)."""
    table = scenarios(top)
    results = []
    for client in CLIENTS:
        finder, where = FINDERS[client]
        present = os.path.isdir(os.path.join(top, where))
        tests = finder(top) if present else []
        for ident, (text, need) in table.items():
            if not need[client]:
                continue
            desc = f"{ident} {client}: {text[:60]}"
            if not present:
                results.append((True, desc, [], f"{where} is not in this tree"))
                continue
            mine = [t for t in tests if ident in t[0]]
            running = [t for t in mine if not t[2]]
            diag = []
            if not mine:
                diag.append(f"no {client} test carries {ident} in its name")
            elif not running:
                diag += [f"skipped: {t[1]}" for t in mine]
            else:
                desc += " (" + ", ".join(t[1].split("/")[-1] for t in running[:3]) + ")"
            results.append((not diag, desc, diag, None))
        for t in tests:
            unknown = [i for i in t[0] if i not in table]
            if unknown:
                results.append((False, f"{client} test {t[1]} names a known scenario",
                                [f"{', '.join(unknown)} is not in docs/clients.md"], None))
    return results


def self_test(top):
    """The check fails on a copy of the tree with a Go test renamed away, or
    with every test of one scenario marked skipped in a client."""
    go = (os.path.join("clients", "go"), r".*_test\.go")
    py = (os.path.join("clients", "python", "tests"), r"test_.*\.py")
    node = (os.path.join("clients", "node", "test"), r".*\.[cm]?[jt]s")
    cases = [
        ("a Go test renamed away", go, lambda s: s.replace("func TestC03", "func TestRenewal")),
        ("a Go test skipped", go,
         lambda s: s.replace("func TestC02Wait(t *testing.T) {\n",
                             "func TestC02Wait(t *testing.T) {\n\tt.Skip(\"no\")\n")),
        ("the Python tests of C12 skipped", py,
         lambda s: re.sub(r"\ndef test_c12_", "\n@pytest.mark.skip\ndef test_c12_", s)),
        ("the Node tests of C12 skipped", node,
         lambda s: re.sub(r"\b(test|it)\((\s*[\"'`]C12\b)", r"\1.skip(\2", s)),
    ]
    out = []
    for what, (where, pattern), mutate in cases:
        if not os.path.isdir(os.path.join(top, where)):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            for part in ("docs", "clients", os.path.join("test", "scripts")):
                src = os.path.join(top, part)
                if os.path.isdir(src):
                    shutil.copytree(src, os.path.join(tmp, part), symlinks=True,
                                    ignore=shutil.ignore_patterns("node_modules", "dist",
                                                                  "__pycache__"))
            changed = False
            for path in files(os.path.join(tmp, where), pattern):
                before = read(path)
                after = mutate(before)
                if after != before:
                    changed = True
                    with open(path, "w", encoding="utf-8") as f:
                        f.write(after)
            failed = [r for r in check(tmp) if not r[0]]
            out.append((changed and bool(failed), f"the check fails with {what} ({where})",
                        [r[1] for r in failed][:2] or ["the check passed"]))
    return out


def main():
    top = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                          os.path.join(os.path.dirname(__file__), "..", ".."))
    results = check(top)
    results += [(ok, d, diag, None) for ok, d, diag in self_test(top)]
    bad = 0
    for n, (ok, desc, diag, skip) in enumerate(results, 1):
        if skip:
            print(f"ok {n} - {desc} # SKIP {skip}")
        elif ok:
            print(f"ok {n} - {desc}")
        else:
            bad += 1
            print(f"not ok {n} - {desc}")
            for line in diag:
                print(f"#   {line}")
    print(f"1..{len(results)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
