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
#   DROP EXTENSION dlock;    ->  \ir sql/dlock_sql_drop.psql
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
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
        elif line == "DROP EXTENSION dlock;":
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
    exp = "\n".join(exp_lines)
    for old, new in differences.expected(name, int(os.environ.get("DLOCK_PG_MAJOR", "99"))):
        if exp.count(old) != 1:
            sys.exit("differences.py: %s: a rule's text is found %d times, not once:\n%s"
                     % (name, exp.count(old), old))
        exp = exp.replace(old, new)
    with open(out_sql, "w") as f:
        f.write("\n".join(sql_lines))
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
    with open(out_spec, "w") as f:
        f.write(text)


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
  END IF;
END $et$;
"""

if __name__ == "__main__":
    if sys.argv[1] == "regress":
        regress(*sys.argv[2:6])
    elif sys.argv[1] == "isolation":
        isolation(*sys.argv[2:4])
    elif sys.argv[1] == "isolation-expected":
        with open(sys.argv[2]) as f:
            text = f.read()
        with open(sys.argv[3], "w") as f:
            f.write(differences.isolation_expected(text))
    elif sys.argv[1] == "installer":
        sys.stdout.write(installer(*sys.argv[2:4]))
    elif sys.argv[1] == "event-trigger":
        sys.stdout.write(EVENT_TRIGGER)
    elif sys.argv[1] == "drop":
        sys.stdout.write(DROP)
    elif sys.argv[1] == "copies":
        sys.exit(0 if copies(*sys.argv[2:4]) else 1)
    else:
        sys.exit("usage: transform.py regress|isolation|event-trigger ...")
