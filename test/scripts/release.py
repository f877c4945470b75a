# Copyright (c) 2026, the dlock developers
"""The release files of dlock agree with each other (TAP output).

Checks:
- dlock.control names a default_version; META.json's version and
  provides.dlock.version are that version in SemVer form (1.1 -> 1.1.0);
- META.json is PGXN meta-spec 1.0.0: every required key, license
  "postgresql", provides.dlock.file is an install script of that version,
  prereqs on PostgreSQL, resources;
- CHANGELOG.md has an "Unreleased" section on top, then a dated entry
  "## <version> (YYYY-MM-DD)" for the default version if it is released
  (else for the newest released version: the default version is then the
  one in progress, described under "Unreleased"), and every released
  version has its own entry;
- LICENSE is the PostgreSQL Licence with a copyright line;
- every install script has an update path from 1.0 to the default version
  (dlock--A--B.sql chain), and every released script is byte for byte the
  released file (its SHA-256 is pinned here: released scripts are frozen);
- the full script of a version in progress is the one make generates (its
  first line says so), never a file kept by hand.
"""

import hashlib
import json
import os
import re
import sys

RELEASED = {
    # version: SHA-256 of dlock--<version>.sql as released
    "1.0": "a666ccc9699a61f100f39b76311180df7d5aba8935ad8fcf56fe19706ce215f7",
    "1.1": "aca20309c3f8e3bfc47b239d136f138c3af745f5b03e5326d9caab998dadd182",
}
RELEASED_UPDATES = {
    # update script: SHA-256 as released
    "dlock--1.0--1.1.sql": "afd121191f80db8d60bdf527f62eb83a45ad52231113536d604397c866bb335c",
}

top = sys.argv[1] if len(sys.argv) > 1 else "."
results = []


def ok(cond, name, why=""):
    results.append((bool(cond), name, why))


def read(name):
    with open(os.path.join(top, name), encoding="utf-8") as f:
        return f.read()


def semver(v):
    return v if v.count(".") == 2 else v + ".0"


control = read("dlock.control")
m = re.search(r"^default_version\s*=\s*'([^']+)'", control, re.M)
ok(m, "dlock.control names a default_version")
version = m.group(1) if m else "?"

try:
    meta = json.loads(read("META.json"))
    ok(True, "META.json is valid JSON")
except ValueError as e:
    meta = {}
    ok(False, "META.json is valid JSON", str(e))

for key in ("name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"):
    ok(key in meta, "META.json has the required key %s" % key)
ok(meta.get("meta-spec", {}).get("version") == "1.0.0", "META.json follows meta-spec 1.0.0")
ok(meta.get("name") == "dlock", "META.json names the distribution dlock")
ok(meta.get("license") == "postgresql", "META.json's license is postgresql")
ok(meta.get("version") == semver(version),
   "META.json's version %s is dlock.control's %s" % (meta.get("version"), version))
prov = meta.get("provides", {}).get("dlock", {})
ok(prov.get("version") == semver(version),
   "META.json's provides.dlock.version %s is dlock.control's %s" % (prov.get("version"), version))
ok(prov.get("file") == "dlock--%s.sql" % version and os.path.exists(os.path.join(top, prov.get("file", "-"))),
   "META.json's provides.dlock.file is dlock--%s.sql, and it exists" % version)
ok("PostgreSQL" in meta.get("prereqs", {}).get("runtime", {}).get("requires", {}),
   "META.json has a runtime prerequisite on PostgreSQL")
ok(meta.get("resources"), "META.json lists resources")

# Every other copy of the version: the Python client's, and dlock-run's,
# which bin/Makefile reads from dlock.control at build time.
m = re.search(r'^version = "([^"]+)"', read("clients/python/pyproject.toml"), re.M)
ok(m and m.group(1) == semver(version),
   "clients/python/pyproject.toml's version is dlock.control's %s" % version, m and m.group(1))
m = re.search(r'^__version__ = "([^"]+)"', read("clients/python/src/dlock/__init__.py"), re.M)
ok(m and m.group(1) == semver(version),
   "the Python package's __version__ is dlock.control's %s" % version, m and m.group(1))
ok("dlock.control" in read("bin/Makefile") and "DLOCK_VERSION" in read("bin/Makefile"),
   "dlock-run's version comes from dlock.control")

changelog = read("CHANGELOG.md")
heads = re.findall(r"^## (.*)$", changelog, re.M)
ok(heads and heads[0] == "Unreleased", "CHANGELOG.md starts with an Unreleased section",
   "first heading: %r" % (heads[0] if heads else None))
dated = [h for h in heads if h != "Unreleased"]
newest = version if version in RELEASED else max(RELEASED, key=lambda v: [int(x) for x in v.split(".")])
ok(dated and re.fullmatch(re.escape(newest) + r" \(\d{4}-\d\d-\d\d\)", dated[0]),
   "CHANGELOG.md's latest entry is \"## %s (YYYY-MM-DD)\"%s"
   % (newest, "" if newest == version else " (%s is in progress, under Unreleased)" % version),
   "latest entry: %r" % (dated[0] if dated else None))
for v in sorted(RELEASED):
    ok(any(h == v or h.startswith(v + " (") for h in dated), "CHANGELOG.md has an entry for %s" % v)

lic = read("LICENSE")
ok(lic.startswith("PostgreSQL License"), "LICENSE is the PostgreSQL Licence")
ok(re.search(r"^Copyright \(c\) \d{4}(-\d{4})?, the dlock developers$", lic, re.M),
   "LICENSE has the copyright line")
ok("Permission to use, copy, modify, and distribute this software" in lic,
   "LICENSE has the grant of the PostgreSQL Licence")

scripts = sorted(f for f in os.listdir(top) if re.fullmatch(r"dlock--[0-9.]+(--[0-9.]+)?\.sql", f))
ok("dlock--%s.sql" % version in scripts, "dlock--%s.sql exists" % version)
steps = {}
for f in scripts:
    mm = re.fullmatch(r"dlock--([0-9.]+)--([0-9.]+)\.sql", f)
    if mm:
        steps[mm.group(1)] = mm.group(2)
for v in sorted(RELEASED):
    seen, cur = set(), v
    while cur != version and cur in steps and cur not in seen:
        seen.add(cur)
        cur = steps[cur]
    ok(cur == version, "an update path leads from %s to %s" % (v, version))
    path = os.path.join(top, "dlock--%s.sql" % v)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    ok(digest == RELEASED[v], "dlock--%s.sql is byte for byte as released" % v,
       "sha256 %s, released %s" % (digest, RELEASED[v]))
for f, sha in sorted(RELEASED_UPDATES.items()):
    with open(os.path.join(top, f), "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    ok(digest == sha, "%s is byte for byte as released" % f, "sha256 %s, released %s" % (digest, sha))
if version not in RELEASED:
    with open(os.path.join(top, "dlock--%s.sql" % version), encoding="utf-8") as fh:
        first = fh.readline()
    ok(first.startswith("/* dlock--%s.sql: generated by make from " % version),
       "dlock--%s.sql, the version in progress, is generated by make" % version, "first line: %r" % first)

print("1..%d" % len(results))
failed = 0
for i, (good, name, why) in enumerate(results, 1):
    print("%s %d - %s" % ("ok" if good else "not ok", i, name))
    if not good:
        failed += 1
        if why:
            print("# " + why)
sys.exit(1 if failed else 0)
