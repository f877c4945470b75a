#!/usr/bin/env python3
# Copyright (c) 2026, the dlock developers
# test/sql_edition/fence/transform.py: the C edition's fence tests, made to
# run against the SQL edition (see README.md here).
#
#   transform.py regress SRC_SQL SRC_EXPECTED OUT_SQL OUT_EXPECTED
#   transform.py isolation SRC_SPEC OUT_SPEC
#   transform.py isolation-expected SRC_EXPECTED OUT_EXPECTED
#   transform.py installer EDITION_SCRIPT PIN_SQL
#
# regress: the same rewriting of the test file and of its expected output
# (pg_regress echoes every input line, so both carry the same lines):
#   DROP EXTENSION [IF EXISTS] dlock;  ->  \ir sql/dlock_sql_drop.psql
#   CREATE EXTENSION dlock;  ->  \ir sql/dlock_sql_create.psql
#   INSERT INTO dlock_epoch ... ; (the C edition's token pin)
#                            ->  \ir sql/dlock_sql_pin.psql
# and a block that installs an earlier version of the C edition (DROP
# EXTENSION dlock; CREATE EXTENSION dlock VERSION '1.x'; ... up to the next
# CREATE EXTENSION dlock; or the end) is left out: the SQL edition has no
# earlier version, and so are the blocks differences.SKIP names.  The
# expected output then gets differences.EXPECTED's replacements: where the
# SQL edition's output differs, and why.  Each included file starts with \set ECHO none (echoed)
# and ends with \set ECHO all, so the expected output gains that one line.
#
# isolation: CREATE EXTENSION dlock; in a setup block becomes a call of
# dlock_sql_test.install(), which installs the edition as the admin role,
# DROP EXTENSION dlock; one of dlock_sql_test.uninstall(), and the token pin
# one of dlock_sql_test.pin(); installer prints the SQL that makes them.
import os
import re
import sys

# The differences: this directory's, or DLOCK_SQL_DIFFERENCES's (another
# runner's, test/sql_edition/same).
sys.path.insert(0, os.environ.get("DLOCK_SQL_DIFFERENCES") or os.path.dirname(os.path.abspath(__file__)))
import differences  # noqa: E402

INCLUDE_ECHO = "\\set ECHO none"
PIN_START = "INSERT INTO dlock_epoch"
SKIPPED = "-- (SQL edition: a block that installs an earlier C edition is left out)"
SKIPPED_INTERNALS = "-- (SQL edition: a block that tests the C edition's internals is left out)"


def include(name, expected):
    """The line that includes sql/NAME.psql, and in the expected output the
    line of it that psql echoes."""
    return ["\\ir sql/%s.psql" % name] + ([INCLUDE_ECHO] if expected else [])


def rewrite(lines, expected):
    """Rewrite the lines of a test file (expected=False) or of its expected
    output (expected=True) the same way."""
    out = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < n else ""
        if line == "DROP EXTENSION dlock;" and nxt.startswith("CREATE EXTENSION dlock VERSION"):
            j = i + 2
            while j < n and lines[j] != "CREATE EXTENSION dlock;":
                j += 1
            out.append(SKIPPED)
            if j < n:
                out += include("dlock_sql_drop", expected) + include("dlock_sql_create", expected)
            else:
                out.append("")
            i = j + 1
        elif line in ("DROP EXTENSION dlock;", "DROP EXTENSION IF EXISTS dlock;"):
            out += include("dlock_sql_drop", expected)
            i += 1
        elif line == "CREATE EXTENSION dlock;":
            out += include("dlock_sql_create", expected)
            i += 1
        elif line.startswith(PIN_START):
            j = i
            while j < n and not lines[j].rstrip().endswith(";"):
                j += 1
            out += include("dlock_sql_pin", expected)
            i = j + 1
        else:
            out.append(line)
            i += 1
    return out


def skip_blocks(name, sql_lines, exp_lines):
    """Leave out differences.SKIP's blocks: in the test file from its first
    line to its last, in the expected output from its first line to the
    line that follows the last one in the test file (past the last one's
    output)."""
    for first, last in differences.SKIP.get(name, []):
        i = sql_lines.index(first)
        j = sql_lines.index(last, i)
        k = exp_lines.index(first)
        e = exp_lines.index(last, k)
        # Blank lines after the block go with it: pg_regress's output of
        # the last statement ends with one too.
        while j + 1 < len(sql_lines) - 1 and sql_lines[j + 1] == "":
            j += 1
        if j + 1 >= len(sql_lines) - 1:
            m = len(exp_lines) - 1  # to the end, but for the final newline
        else:
            m = exp_lines.index(sql_lines[j + 1], e + 1)
        sql_lines[i:j + 1] = [SKIPPED_INTERNALS]
        exp_lines[k:m] = [SKIPPED_INTERNALS]


def regress(src_sql, src_exp, out_sql, out_exp):
    name = os.path.basename(src_sql)[:-len(".sql")]
    with open(src_sql) as f:
        sql_lines = rewrite(f.read().split("\n"), False)
    with open(src_exp) as f:
        exp_lines = rewrite(f.read().split("\n"), True)
    skip_blocks(name, sql_lines, exp_lines)
    text = "\n".join(sql_lines)
    exp = "\n".join(exp_lines)
    # REWRITE: the same replacement in the test and in its expected output
    # (pg_regress echoes the input), where the C edition's test reads a C
    # edition table that the SQL edition has in another shape.
    for old, new in getattr(differences, "REWRITE", {}).get(name, []):
        if text.count(old) != 1:
            sys.exit("differences.py: %s: a rewrite's text is found %d times, not once:\n%s"
                     % (name, text.count(old), old))
        text = text.replace(old, new)
        exp = exp.replace(old, new)
    for old, new in differences.expected(name, int(os.environ.get("DLOCK_PG_MAJOR", "99"))):
        if exp.count(old) != 1:
            sys.exit("differences.py: %s: a rule's text is found %d times, not once:\n%s"
                     % (name, exp.count(old), old))
        exp = exp.replace(old, new)
    with open(out_sql, "w") as f:
        f.write(text)
    with open(out_exp, "w") as f:
        f.write(exp)


def isolation(src_spec, out_spec):
    """A spec's SQL blocks end at the first "}", so the edition cannot be
    inlined: its setup calls functions that the runner made beforehand
    (installer, below)."""
    with open(src_spec) as f:
        text = f.read()
    text = text.replace("CREATE EXTENSION dlock;", "CALL dlock_sql_test.install();")
    text = text.replace("DROP EXTENSION dlock;", "CALL dlock_sql_test.uninstall();")
    text = re.sub(r"INSERT INTO dlock_epoch[^;]*;", "CALL dlock_sql_test.pin();", text)
    text = isolation_rewrite(os.path.basename(src_spec)[:-len(".spec")], text, True)
    with open(out_spec, "w") as f:
        f.write(text)


def isolation_rewrite(name, text, spec):
    """differences.ISOLATION_REWRITE: the same replacement in a spec and in
    its expected output (which echoes each step's SQL), where the spec
    reads a C-edition table or setting of another shape; each found exactly
    once in the spec."""
    for old, new in getattr(differences, "ISOLATION_REWRITE", {}).get(name, []):
        if spec and text.count(old) != 1:
            sys.exit("differences.py: %s: a rewrite's text is found %d times, not once:\n%s"
                     % (name, text.count(old), old))
        text = text.replace(old, new)
    return text


def installer(script, pin):
    """SQL that makes schema dlock_sql_test with install(), uninstall() and
    pin() for the isolation specs: the superuser's functions; install()
    runs the edition's script as dlock_sql_admin."""
    with open(script) as f:
        edition = f.read()
    with open(pin) as f:
        pin_sql = f.read() or "SELECT 1;"
    for tag in ("$dlock_sql_test_e$", "$dlock_sql_test_f$"):
        assert tag not in edition and tag not in pin_sql
    return ("CREATE SCHEMA dlock_sql_test;\n"
            "CREATE PROCEDURE dlock_sql_test.install() LANGUAGE plpgsql AS $dlock_sql_test_f$\n"
            "BEGIN\n"
            "  GRANT CREATE ON SCHEMA public TO dlock_sql_admin;\n"
            "  PERFORM set_config('client_min_messages', 'warning', true);\n"
            "  PERFORM set_config('role', 'dlock_sql_admin', true);\n"
            "  EXECUTE $dlock_sql_test_e$" + edition + "$dlock_sql_test_e$;\n"
            "  PERFORM set_config('role', 'none', true);\n"
            "  EXECUTE $dlock_sql_test_e$" + EVENT_TRIGGER + "$dlock_sql_test_e$;\n"
            "END $dlock_sql_test_f$;\n"
            "CREATE PROCEDURE dlock_sql_test.uninstall() LANGUAGE plpgsql AS $dlock_sql_test_f$\n"
            "BEGIN\n"
            "  PERFORM set_config('client_min_messages', 'warning', true);\n"
            "  EXECUTE $dlock_sql_test_e$" + DROP + "$dlock_sql_test_e$;\n"
            "END $dlock_sql_test_f$;\n"
            "CREATE PROCEDURE dlock_sql_test.pin() LANGUAGE plpgsql AS $dlock_sql_test_f$\n"
            "BEGIN\n"
            "  EXECUTE $dlock_sql_test_e$" + pin_sql + "$dlock_sql_test_e$;\n"
            "END $dlock_sql_test_f$;\n")


def copies(c_script, sql_file):
    """The view dlock_fenced_tables and the function dlock_fence_ddl are one
    text, src/sql/65_fenced_tables.sql, which the source of the C edition's
    update script includes (make splices it in): no copy of its own."""
    with open(c_script) as f:
        c = f.read()
    with open(sql_file) as f:
        s = f.read()
    ok = "\n-- @include src/sql/65_fenced_tables.sql\n" in c
    for name, start in (("dlock_fenced_tables", "VIEW @extschema@.dlock_fenced_tables AS"),
                        ("dlock_fence_ddl", "CREATE FUNCTION @extschema@.dlock_fence_ddl()")):
        if start in c or start not in s:
            print("%s is not only in src/sql/65_fenced_tables.sql" % name)
            ok = False
    print("copies: %s" % ("one text" if ok else "DIFFERENT"))
    return ok


def spec_steps(text):
    """A spec's steps, name -> (session, SQL as the isolation tester prints
    it: the text between the braces without leading and trailing blanks),
    and its permutations, each a list of step names."""
    text = re.sub(r"#[^\n]*", "", text)
    steps = {}
    session = None
    for m in re.finditer(r"(?m)^\s*(session\s+(\S+)|step\s+(\S+)\s*\{([^}]*)\})", text):
        if m.group(2):
            session = m.group(2)
        else:
            steps[m.group(3).strip('"')] = (session, m.group(4).strip(" \t\r\f"))
    perms = []
    for m in re.finditer(r"(?m)^\s*permutation\b((?:\s+(?!permutation\b)\S+)*)", text):
        perms.append([re.sub(r"\(.*\)$", "", w).strip('"') for w in m.group(1).split()])
    return steps, perms


def shown_waiting(spec_text, expected, perm, name, occurrence):
    """The expected output with the occurrence-th run of step name in
    permutation perm (from 1) seen by the isolation tester as waiting: its
    header ends in <waiting ...>, and its result comes as "<... completed>"
    where the tester looks again: after the next step's output (and after
    the completions of steps that were waiting before it), or before the
    next step when that is of the same session, or at the end."""
    steps, perms = spec_steps(spec_text)
    session, sql = steps[name]
    order = perms[perm - 1]
    at = [i for i, s in enumerate(order) if s == name][occurrence - 1]
    nxt = order[at + 1] if at + 1 < len(order) else None
    parts = expected.split("\nstarting permutation: ")
    block = parts[perm].split("\n")
    header = "step %s: %s" % (name, sql)
    hlines = header.split("\n")
    n = len(hlines)
    starts = [i for i in range(len(block)) if block[i:i + n] == hlines
              and (i + n >= len(block) or not block[i + n].startswith(" <waiting"))]
    i = starts[occurrence - 1]

    def end_of(lines, j):
        while j < len(lines) and not lines[j].startswith("step "):
            j += 1
        return j
    out_end = end_of(block, i + n)
    result = block[i + n:out_end]
    waiting = hlines[:-1] + [hlines[-1] + " <waiting ...>"]
    rest = block[out_end:]
    if nxt is not None and steps[nxt][0] != session:
        # The next step's own lines, then completions printed with it.
        k = len(("step %s: %s" % (nxt, steps[nxt][1])).split("\n"))
        k = end_of(rest, k)
        while k < len(rest) and rest[k].startswith("step ") and rest[k].endswith(": <... completed>"):
            k = end_of(rest, k + 1)
        if k == len(rest) and rest and rest[-1] == "":
            k -= 1  # the newline that ends the permutation's last line
        rest = rest[:k] + ["step %s: <... completed>" % name] + result + rest[k:]
    else:
        rest = ["step %s: <... completed>" % name] + result + rest
    parts[perm] = "\n".join(block[:i] + waiting + rest)
    return "\nstarting permutation: ".join(parts)


def accepts(spec, expected, result):
    """Does result differ from expected only where differences.MAY_WAIT
    allows?  Each permutation of result must be the expected one with any
    of MAY_WAIT's steps of that permutation shown waiting (any subset, in
    the spec's order), each with its answer or one of its variants'."""
    name = os.path.basename(expected)[:-len(".out")]
    with open(spec) as f:
        spec_text = f.read()
    with open(expected) as f:
        exp = f.read()
    with open(result) as f:
        res = f.read()
    sep = "\nstarting permutation: "
    res_parts = res.split(sep)
    exp_parts = exp.split(sep)
    if len(res_parts) != len(exp_parts):
        return False
    spots = getattr(differences, "MAY_WAIT", {}).get(name, [])
    for perm in range(len(exp_parts)):
        if res_parts[perm] == exp_parts[perm]:
            continue
        mine = [s for s in spots if s[0] == perm]
        texts = {exp}
        for spot in mine:
            more = set()
            for t in texts:
                try:
                    shown = shown_waiting(spec_text, t, spot[0], spot[1], spot[2])
                except (IndexError, KeyError, ValueError):
                    sys.exit("differences.py: %s: MAY_WAIT's step %s (permutation %d, run %d) is not in the output"
                             % (name, spot[1], spot[0], spot[2]))
                more.add(shown)
                for variant in (spot[3] if len(spot) > 3 else []):
                    block = shown.split(sep)
                    for old, new in variant:
                        block[perm] = block[perm].replace(old, new, 1)
                    more.add(sep.join(block))
            texts |= more
        if not any(t.split(sep)[perm] == res_parts[perm] for t in texts):
            return False
    return True


def alternatives(spec, expected, outdir, spots):
    """NAME_1.out, NAME_2.out, ...: one alternative expected output per
    spot (permutation, step, occurrence), which pg_isolation_regress
    accepts as well as NAME.out."""
    assert len(spots) <= 9, "pg_regress reads at most nine alternatives"
    name = os.path.basename(expected)[:-len(".out")]
    with open(spec) as f:
        spec_text = f.read()
    with open(expected) as f:
        text = f.read()
    for k, (perm, step, occurrence) in enumerate((spot[:3] for spot in spots), 1):
        try:
            alt = shown_waiting(spec_text, text, perm, step, occurrence)
        except (IndexError, KeyError):
            sys.exit("differences.py: %s: MAY_WAIT's step %s (permutation %d, run %d) is not in the output"
                     % (name, step, perm, occurrence))
        with open(os.path.join(outdir, "%s_%d.out" % (name, k)), "w") as f:
            f.write(alt)


# DROP EXTENSION, for an edition installed into public: every object whose
# name starts with dlock_, and the event trigger.
DROP = """DO $drop$
DECLARE
  stmts text[];
  stmt text;
BEGIN
  -- Every statement is made before the first runs: a CASCADE drops
  -- dependent objects of the edition too, which IF EXISTS then skips.
  SELECT array_agg(x.stmt ORDER BY x.ord) INTO stmts FROM (
    SELECT 1 AS ord, format(CASE c.relkind WHEN 'v' THEN 'DROP VIEW IF EXISTS public.%I CASCADE'
                            WHEN 'S' THEN 'DROP SEQUENCE IF EXISTS public.%I CASCADE'
                            ELSE 'DROP TABLE IF EXISTS public.%I CASCADE' END, c.relname) AS stmt
      FROM pg_class c
     WHERE c.relnamespace = 'public'::regnamespace AND c.relname LIKE 'dlock\\_%'
       AND c.relkind IN ('r', 'v', 'S', 'p')
    UNION ALL
    SELECT 2, format('DROP ROUTINE IF EXISTS public.%I(%s) CASCADE', p.proname, pg_get_function_identity_arguments(p.oid))
      FROM pg_proc p
     WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'dlock\\_%'
    UNION ALL
    SELECT 3, format('DROP TYPE IF EXISTS public.%I CASCADE', t.typname)
      FROM pg_type t
     WHERE t.typnamespace = 'public'::regnamespace AND t.typname LIKE 'dlock\\_%'
       AND t.typrelid = 0 AND t.typelem = 0) AS x;
  DROP EVENT TRIGGER IF EXISTS dlock_fence_ddl;
  FOREACH stmt IN ARRAY coalesce(stmts, '{}') LOOP
    EXECUTE stmt;
  END LOOP;
END $drop$;
"""

# What the script run by a superuser makes and an install by an ordinary
# admin role does not (src/sql/65_fenced_tables.sql): made by the superuser
# that runs the tests, so that the C edition's expected WARNINGs apply.
EVENT_TRIGGER = """DO $et$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_event_trigger WHERE evtname = 'dlock_fence_ddl') THEN
    CREATE EVENT TRIGGER dlock_fence_ddl ON ddl_command_end
      WHEN TAG IN ('CREATE TRIGGER', 'ALTER TABLE', 'CREATE TABLE')
      EXECUTE FUNCTION public.dlock_fence_ddl();
    -- As src/sql/65_fenced_tables.sql comments it.
    COMMENT ON EVENT TRIGGER dlock_fence_ddl IS
      'dlock: warns when DDL leaves a dlock_fence trigger that does not fence its table (see the view dlock_fenced_tables)';
  END IF;
END $et$;
"""

if __name__ == "__main__":
    if sys.argv[1] == "regress":
        regress(*sys.argv[2:6])
    elif sys.argv[1] == "isolation":
        isolation(*sys.argv[2:4])
    elif sys.argv[1] == "isolation-expected":
        name = os.path.basename(sys.argv[2])[:-len(".out")]
        with open(sys.argv[2]) as f:
            text = differences.isolation_expected(isolation_rewrite(name, f.read(), False))
        # A step that reinstalls dlock echoes its SQL as isolation() wrote it.
        text = "\n".join(
            l.replace("DROP EXTENSION dlock;", "CALL dlock_sql_test.uninstall();")
             .replace("CREATE EXTENSION dlock;", "CALL dlock_sql_test.install();")
            if l.startswith("step ") else l for l in text.split("\n"))
        # ISOLATION_EXPECTED: per spec, (C edition's text, SQL edition's
        # text) replacements, each found exactly once.
        for old, new in getattr(differences, "ISOLATION_EXPECTED", {}).get(name, []):
            if text.count(old) != 1:
                sys.exit("differences.py: %s: a rule's text is found %d times, not once:\n%s"
                         % (name, text.count(old), old))
            text = text.replace(old, new)
        with open(sys.argv[3], "w") as f:
            f.write(text)
    elif sys.argv[1] == "isolation-alternatives":
        # SPEC EXPECTED OUTDIR [PERM:STEP:RUN ...]: differences.MAY_WAIT's
        # spots of the spec, or those given.
        name = os.path.basename(sys.argv[3])[:-len(".out")]
        spots = [(int(a.split(":")[0]), a.split(":")[1], int(a.split(":")[2])) for a in sys.argv[5:]] \
            or getattr(differences, "MAY_WAIT", {}).get(name, [])
        alternatives(sys.argv[2], sys.argv[3], sys.argv[4], spots)
    elif sys.argv[1] == "isolation-accepts":
        # SPEC EXPECTED RESULT: exit 0 if MAY_WAIT explains every difference.
        sys.exit(0 if accepts(*sys.argv[2:5]) else 1)
    elif sys.argv[1] == "installer":
        sys.stdout.write(installer(*sys.argv[2:4]))
    elif sys.argv[1] == "event-trigger":
        sys.stdout.write(EVENT_TRIGGER)
    elif sys.argv[1] == "drop":
        sys.stdout.write(DROP)
    elif sys.argv[1] == "not-run":
        # Exit 0 and print the reason if the test is not run (NOT_RUN).
        reason = getattr(differences, "NOT_RUN", {}).get(sys.argv[2])
        if reason is None:
            sys.exit(1)
        print(reason)
    elif sys.argv[1] == "copies":
        sys.exit(0 if copies(*sys.argv[2:4]) else 1)
    else:
        sys.exit("usage: transform.py regress|isolation|event-trigger ...")
