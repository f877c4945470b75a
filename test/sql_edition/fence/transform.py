#!/usr/bin/env python3
# Copyright (c) 2026, the dlock developers
# test/sql_edition/fence/transform.py: the C edition's fence tests, made to
# run against the SQL edition (see README.md here).
#
#   transform.py regress SRC_SQL SRC_EXPECTED OUT_SQL OUT_EXPECTED
#   transform.py isolation SRC_SPEC OUT_SPEC EDITION_SCRIPT
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
# earlier version.  Each included file starts with \set ECHO none (echoed)
# and ends with \set ECHO all, so the expected output gains that one line.
#
# isolation: CREATE EXTENSION dlock; in a setup block becomes the edition's
# script inline (installed by the admin role), DROP EXTENSION dlock; drops
# its schema, and the token pin becomes the SQL edition's.
import re
import sys

INCLUDE_ECHO = "\\set ECHO none"
PIN_START = "INSERT INTO dlock_epoch"
SKIPPED = "-- (SQL edition: a block that installs an earlier C edition is left out)"


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


def regress(src_sql, src_exp, out_sql, out_exp):
    for src, dst, exp in ((src_sql, out_sql, False), (src_exp, out_exp, True)):
        with open(src) as f:
            lines = f.read().split("\n")
        with open(dst, "w") as f:
            f.write("\n".join(rewrite(lines, exp)))


def isolation(src_spec, out_spec, script, pin):
    with open(src_spec) as f:
        text = f.read()
    with open(script) as f:
        edition = f.read()
    with open(pin) as f:
        pin_sql = f.read()
    create = ("SET client_min_messages = warning;\n"
              "GRANT CREATE ON SCHEMA public TO dlock_sql_admin;\n"
              "SET ROLE dlock_sql_admin;\n" + edition +
              "\nRESET ROLE;\n" + EVENT_TRIGGER + "RESET client_min_messages;\n")
    text = text.replace("CREATE EXTENSION dlock;", create)
    text = text.replace("DROP EXTENSION dlock;",
                        "SET client_min_messages = warning;\n" + DROP + "RESET client_min_messages;\n")
    text = re.sub(r"INSERT INTO dlock_epoch[^;]*;", lambda m: pin_sql, text)
    with open(out_spec, "w") as f:
        f.write(text)


def copies(c_script, sql_file):
    """The view dlock_fenced_tables and the function dlock_fence_ddl of
    src/sql/65_fenced_tables.sql are the C edition's, verbatim."""
    with open(c_script) as f:
        c = f.read()
    with open(sql_file) as f:
        s = f.read()
    ok = True
    for start, end in (("CREATE OR REPLACE VIEW @extschema@.dlock_fenced_tables AS",
                        "COMMENT ON COLUMN @extschema@.dlock_fenced_tables.not_fencing IS"),
                       ("CREATE FUNCTION @extschema@.dlock_fence_ddl()",
                        "COMMENT ON FUNCTION @extschema@.dlock_fence_ddl() IS")):
        a = c[c.index(start):c.index(end)]
        a = a.replace("CREATE OR REPLACE VIEW", "CREATE VIEW")
        bstart = start.replace("CREATE OR REPLACE VIEW", "CREATE VIEW")
        b = s[s.index(bstart):s.index(end)] if bstart in s and end in s else ""
        if a != b:
            print("src/sql/65_fenced_tables.sql: %s differs from the C edition's" % start.split()[-2])
            ok = False
    print("copies: %s" % ("the same" if ok else "DIFFERENT"))
    return ok


# DROP EXTENSION, for an edition installed into public: every object whose
# name starts with dlock_, and the event trigger.
DROP = """DO $drop$
DECLARE o record;
BEGIN
  DROP EVENT TRIGGER IF EXISTS dlock_fence_ddl;
  FOR o IN SELECT c.oid::regclass AS what, c.relkind FROM pg_class c
            WHERE c.relnamespace = 'public'::regnamespace AND c.relname LIKE 'dlock\\_%'
              AND c.relkind IN ('r', 'v', 'S', 'p') LOOP
    EXECUTE format(CASE o.relkind WHEN 'v' THEN 'DROP VIEW IF EXISTS %s CASCADE'
                   WHEN 'S' THEN 'DROP SEQUENCE IF EXISTS %s CASCADE'
                   ELSE 'DROP TABLE IF EXISTS %s CASCADE' END, o.what);
  END LOOP;
  FOR o IN SELECT p.oid::regprocedure AS what FROM pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'dlock\\_%' LOOP
    EXECUTE format('DROP ROUTINE IF EXISTS %s CASCADE', o.what);
  END LOOP;
  FOR o IN SELECT t.oid::regtype AS what FROM pg_type t
            WHERE t.typnamespace = 'public'::regnamespace AND t.typname LIKE 'dlock\\_%'
              AND t.typrelid = 0 AND t.typelem = 0 LOOP
    EXECUTE format('DROP TYPE IF EXISTS %s CASCADE', o.what);
  END LOOP;
END $drop$;
"""

# What the trusted extension has and a script installed by an ordinary
# admin role has not (src/sql/65_fenced_tables.sql): made by the superuser
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
        isolation(*sys.argv[2:6])
    elif sys.argv[1] == "event-trigger":
        sys.stdout.write(EVENT_TRIGGER)
    elif sys.argv[1] == "drop":
        sys.stdout.write(DROP)
    elif sys.argv[1] == "copies":
        sys.exit(0 if copies(*sys.argv[2:4]) else 1)
    else:
        sys.exit("usage: transform.py regress|isolation|event-trigger ...")
