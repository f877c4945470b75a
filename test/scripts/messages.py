# Copyright (c) 2026, the dlock developers
"""The messages dlock shows its users, listed for review (TAP output).

Every errmsg, errmsg_plural, errdetail, errdetail_plural and errhint in
src/*.c (string literals joined as the C compiler joins them) is listed,
sorted and without duplicates, and compared with test/scripts/messages.expected:
a change of any message, a new one or a removed one fails this suite until
the list is updated, so that review sees it.  Regenerate the list with

    python3 test/scripts/messages.py --print > test/scripts/messages.expected

Each message is also checked against PostgreSQL's Error Message Style Guide
as far as a program can:
- a primary message starts lowercase and ends without a period;
- a detail or hint is a full sentence: starts uppercase, ends with a period;
- a message is built whole: every %s is inside a quoted name (\\"%s\\"), or a type
  name after "type", never a fragment of the sentence ("permission denied
  to %s lock", "%s must not be null");
- none of the words the guide rules out: unable, illegal, bad, unknown.
- the message is a string literal (errhint("%s", hint) is not reviewable).
errmsg_internal and elog are for cannot-happen errors and are not listed.
The RAISE WARNING and RAISE EXCEPTION of the SQL scripts (dlock--*.sql but
the full script of the version in progress, which the build makes) are
listed the same way, as errmsg, errdetail (USING DETAIL) and errhint (USING
HINT), a PL/pgSQL % written %s and a " written \\" as in C, so that a
message moved between C and PL/pgSQL keeps its line; the update scripts'
NOTICEs, shown once to the operator who runs the update, are not listed.
The plural forms of errmsg_plural and errdetail_plural are listed as
"singular | plural".
"""

import os
import re
import sys

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.abspath(os.path.join(here, "..", ".."))
expected_file = os.path.join(here, "messages.expected")

CALL = re.compile(r"\b(errmsg|errmsg_plural|errdetail|errdetail_plural|errhint)\s*\(")
STRING = re.compile(r'\s*"((?:[^"\\]|\\.)*)"')


def strip_comments(src):
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), src, flags=re.S)


def messages_of(path):
    src = strip_comments(open(path, encoding="utf-8").read())
    found = []
    for m in CALL.finditer(src):
        kind = m.group(1)
        pos = m.end()
        parts = []
        while True:
            s = STRING.match(src, pos)
            if not s:
                break
            parts.append(s.group(1))
            pos = s.end()
        if not parts:
            line = src.count("\n", 0, m.start()) + 1
            found.append((kind.replace("_plural", ""), "<not a string literal>",
                          "%s:%d" % (os.path.relpath(path, top), line)))
            continue
        text = "".join(parts)
        if kind.endswith("_plural"):
            comma = re.match(r"\s*,", src[pos:])
            plural = []
            if comma:
                pos += comma.end()
                while True:
                    s = STRING.match(src, pos)
                    if not s:
                        break
                    plural.append(s.group(1))
                    pos = s.end()
            text += " | " + "".join(plural)
        line = src.count("\n", 0, m.start()) + 1
        found.append((kind.replace("_plural", ""), text, "%s:%d" % (os.path.relpath(path, top), line)))
    return found


RAISE = re.compile(r"\bRAISE\s+(WARNING|EXCEPTION)\s+'", re.I)
SQL_STRING = re.compile(r"'((?:[^']|'')*)'")
USING = re.compile(r"\b(DETAIL|HINT)\s*=\s*(?:pg_catalog\.)?(?:format\s*\(\s*)?'", re.I)


def sql_text(literal, placeholders):
    text = literal.replace("''", "'")
    if placeholders:
        text = re.sub(r"%", "%s", text)
    return text.replace('"', '\\"')


def sql_messages_of(path):
    src = re.sub(r"--[^\n]*", lambda m: " " * len(m.group(0)), open(path, encoding="utf-8").read())
    found = []
    for m in RAISE.finditer(src):
        line = src.count("\n", 0, m.start()) + 1
        where = "%s:%d" % (os.path.relpath(path, top), line)
        msg = SQL_STRING.match(src, m.end() - 1)
        found.append(("errmsg", sql_text(msg.group(1), True), where))
        pos = msg.end()
        # the statement ends at the first semicolon outside a literal
        end = pos
        while end < len(src) and src[end] != ";":
            lit = SQL_STRING.match(src, end)
            end = lit.end() if lit else end + 1
        for u in USING.finditer(src, pos, end):
            lit = SQL_STRING.match(src, u.end() - 1)
            found.append(("err" + u.group(1).lower(), sql_text(lit.group(1), False), where))
    return found


def sql_scripts():
    control = open(os.path.join(top, "dlock.control"), encoding="utf-8").read()
    version = re.search(r"^default_version\s*=\s*'([^']*)'", control, re.M).group(1)
    generated = "dlock--%s.sql" % version
    scripts = [os.path.join(top, f) for f in sorted(os.listdir(top))
               if re.match(r"dlock--.*\.sql$", f) and f != generated]
    # and the files the update script's source includes (the Makefile)
    included = set()
    for f in scripts:
        with open(f, encoding="utf-8") as fh:
            included.update(re.findall(r"^-- @include (\S+)$", fh.read(), re.M))
    return scripts + [os.path.join(top, f) for f in sorted(included)]


def style_problems(kind, text):
    problems = []
    if text == "<not a string literal>":
        return ["the message is not a string literal, so it cannot be reviewed or translated"]
    if kind == "errmsg":
        if re.match(r"[A-Z]", text) and not re.match(r"[A-Z]{2,}|SQL", text):
            problems.append("primary message starts with a capital")
        if text.endswith("."):
            problems.append("primary message ends with a period")
    else:
        if not re.match(r"[A-Z%\"]", text):
            problems.append("%s does not start with a capital" % kind)
        if not text.endswith("."):
            problems.append("%s does not end with a period" % kind)
    for conv in re.finditer(r"%s", text):
        before = text[:conv.start()]
        after = text[conv.end():]
        quoted = before.count('\\"') % 2 == 1
        typename = re.search(r"\btype $", before)
        # A list of process IDs, as PostgreSQL's own "Processes holding
        # the lock: %s." (proc.c).
        pids = re.search(r"\bProcess IDs: $", before)
        if not quoted and not typename and not pids:
            problems.append("%s that is not a quoted name: the message is built from fragments")
            break
    for word in ("unable", "illegal", "bad", "unknown"):
        if re.search(r"\b%s\b" % word, text, re.I):
            problems.append('the word "%s"' % word)
    return problems


def main():
    srcdir = os.path.join(top, "src")
    msgs = []
    for f in sorted(os.listdir(srcdir)):
        if f.endswith(".c"):
            msgs += messages_of(os.path.join(srcdir, f))
    for f in sql_scripts():
        msgs += sql_messages_of(f)
    listing = sorted({"%s: %s" % (k, t) for k, t, _ in msgs})
    if "--print" in sys.argv:
        print("\n".join(listing))
        return 0

    tests = []
    seen = set()
    for kind, text, where in msgs:
        if (kind, text) in seen:
            continue
        seen.add((kind, text))
        probs = style_problems(kind, text)
        tests.append((not probs, "%s %s follows the style guide: %s" % (where, kind, text), probs))
    try:
        expected = [l for l in open(expected_file, encoding="utf-8").read().split("\n") if l]
    except FileNotFoundError:
        expected = []
    diff = ["- " + l for l in expected if l not in listing] + ["+ " + l for l in listing if l not in expected]
    tests.append((not diff, "the %d distinct messages are the reviewed list (test/scripts/messages.expected)" % len(listing),
                  diff))
    print("1..%d" % len(tests))
    failed = 0
    for i, (good, name, why) in enumerate(tests, 1):
        print("%s %d - %s" % ("ok" if good else "not ok", i, name))
        if not good:
            failed += 1
            for w in why:
                print("# " + w)
    return 1 if failed else 0


sys.exit(main())
