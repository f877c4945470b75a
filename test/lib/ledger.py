# Copyright (c) 2026, the dlock developers
"""test/lib/ledger.py: the ledger rules, written once.

The fencing stress test (test/scripts/fence_stress.py), the PgBouncer test
(test/scripts/pgbouncer_client.py) and the HA harness (test/ha/harness.py)
all run clients that take leases and write fenced rows into a ledger table,
log what they saw, and then hold the ledger against the logs.  The rules are
the same everywhere, and live here; each function returns a list of
problems (strings), empty when the rule holds, and Tap turns them into TAP.

The shapes the functions take:

  acquire   dict: name, token, client; acquired_us and expires_us (server
            clock, microseconds) for the timing rules; begin and end (the
            client's CLOCK_MONOTONIC, seconds, before the call and after the
            commit) for acquire_order
  release   dict: token, ok, at_us (server clock)
  revoke    dict: name, force, revoked_token (None: nothing revoked), ended
            (the process ids it ended), start_us and at_us (server clock,
            before dlock_revoke was called, and after it returned, before
            its commit)
  ended     dict: name, token, pid, at_us (the client's clock, after it saw
            its transaction end): a transaction of a holder that a revoke
            with force or a waiter past the pin grace ended
  row       dict: name, token, client, cseq, and commit_order (a value drawn
            at COMMIT: within one name, the commit order), commit_us and
            optionally written_us (server clock)
  key       (client, cseq): one write transaction of one client

Run as a script it checks itself: every rule must pass a good ledger and
flag a ledger that breaks it (test/scripts/ledger.sh).
"""

import json
import sys
import time


def us(expr):
    """SQL for a timestamptz as integer microseconds since the epoch: the
    clock the ledgers are stamped with."""
    return f"(extract(epoch FROM {expr}) * 1000000)::bigint"


def ledger_schema(extra_columns=""):
    """The SQL of the ledger the stress test and the HA harness write: a
    ledger table of fenced writes (the lock name from a column, the writer's
    token, the client and its sequence number, the time written) and, by a
    deferred trigger, the commit order and time of each row in
    ledger_commit.  extra_columns: more column definitions for ledger, each
    ending with a comma."""
    return f"""
-- Drawn at COMMIT, by the deferred trigger below.
CREATE SEQUENCE ledger_commit_order CACHE 1;

CREATE TABLE ledger (
    name        text NOT NULL,
    token       bigint NOT NULL,
    client      text NOT NULL,
    cseq        integer NOT NULL,{extra_columns}
    written_us  bigint,
    PRIMARY KEY (client, cseq)
);

CREATE TABLE ledger_commit (
    client       text NOT NULL,
    cseq         integer NOT NULL,
    commit_order bigint NOT NULL DEFAULT nextval('ledger_commit_order'),
    commit_us    bigint NOT NULL DEFAULT {us("clock_timestamp()")},
    PRIMARY KEY (client, cseq)
);

CREATE FUNCTION ledger_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.written_us := {us("clock_timestamp()")};
    RETURN NEW;
END $$;

CREATE FUNCTION ledger_commit_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_commit (client, cseq) VALUES (NEW.client, NEW.cseq);
    RETURN NULL;
END $$;

-- BEFORE triggers fire in name order: the fence first, then the stamp.
CREATE TRIGGER ledger_1_fence BEFORE INSERT OR UPDATE OR DELETE ON ledger
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('name', 'token', 'column');
CREATE TRIGGER ledger_2_stamp BEFORE INSERT ON ledger
    FOR EACH ROW EXECUTE FUNCTION ledger_stamp();
CREATE CONSTRAINT TRIGGER ledger_3_commit AFTER INSERT ON ledger
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_commit_stamp();
"""


def one(conn, query, params=()):
    """The first column of the first row of query (a psycopg connection)."""
    return conn.execute(query, params).fetchone()[0]


def timed(conn, query, params=()):
    """(result or None, SQLSTATE or None, seconds) of query: the lock-key
    suites time how long another name's call is held up."""
    import psycopg  # only the suites that run SQL have it loaded anyway

    t = time.monotonic()
    try:
        r = conn.execute(query, params).fetchone()[0]
        return r, None, time.monotonic() - t
    except psycopg.Error as e:
        return None, e.sqlstate, time.monotonic() - t


class Tap:
    """TAP lines for a list of checks; failed counts the "not ok" ones.  A
    check with skip prints "ok N - desc # SKIP skip" and does not fail."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def check(self, desc, problems, notes=(), skip=None):
        self.n += 1
        if skip:
            print(f"ok {self.n} - {desc} # SKIP {skip}")
            sys.stdout.flush()
            return True
        if problems:
            self.failed += 1
            print(f"not ok {self.n} - {desc}")
            for p in problems[:8]:
                for line in str(p).splitlines() or [""]:
                    print(f"#   {line}")
            if len(problems) > 8:
                print(f"#   ... and {len(problems) - 8} more")
        else:
            print(f"ok {self.n} - {desc}")
        for n in notes:
            print(f"#   {n}")
        sys.stdout.flush()
        return not problems


def duplicate_tokens(acquires):
    """No token was handed out twice (tokens come from one counter)."""
    seen = {}
    problems = []
    for e in acquires:
        if e["token"] in seen:
            problems.append(f"token {e['token']} handed out twice: "
                            f"{json.dumps(seen[e['token']])} and {json.dumps(e)}")
        seen[e["token"]] = e
    return problems


def tokens_unique_across_names(rows):
    """Every token in the ledger belongs to one acquisition: all rows that
    carry it have one name and one client (tokens are unique over all
    names, not only rising per name)."""
    owner = {}
    problems = []
    for r in rows:
        k = (r["name"], r["client"])
        first = owner.setdefault(r["token"], (k, r))
        if first[0] != k:
            problems.append(f"token {r['token']} is carried by rows of two acquisitions: "
                            f"{first[0][0]} ({first[0][1]}/{first[1]['cseq']}) and "
                            f"{k[0]} ({k[1]}/{r['cseq']})")
    return problems


def tokens_never_go_back(rows, names):
    """Per name, tokens never go backwards in commit order."""
    problems = []
    for n in names:
        seq = sorted((r for r in rows if r["name"] == n),
                     key=lambda r: (r["commit_order"] is None, r["commit_order"] or 0))
        prev = None
        for r in seq:
            if r["commit_order"] is None:
                problems.append(f"{n}: row {r['client']}/{r['cseq']} has no commit stamp")
                continue
            if prev is not None and r["token"] < prev["token"]:
                problems.append(
                    f"{n}: token {r['token']} ({r['client']}/{r['cseq']}) committed "
                    f"after token {prev['token']} ({prev['client']}/{prev['cseq']})")
            prev = r
    return problems


def no_write_after_later_acquire(rows, acquires, names):
    """Per name, every row of token T committed (server clock) before any
    higher token of the name was acquired."""
    problems = []
    for n in names:
        end_of = {}
        for r in rows:
            if r["name"] == n and r.get("commit_us") is not None:
                end_of[r["token"]] = max(end_of.get(r["token"], 0), r["commit_us"],
                                         r.get("written_us") or 0)
        acq = sorted((e for e in acquires if e["name"] == n), key=lambda e: e["token"])
        row_tokens = sorted(end_of)
        i = 0
        latest = None           # (end, token): the last commit of any lower token
        for e in acq:
            while i < len(row_tokens) and row_tokens[i] < e["token"]:
                t = row_tokens[i]
                if latest is None or end_of[t] > latest[0]:
                    latest = (end_of[t], t)
                i += 1
            if latest is not None and latest[0] >= e["acquired_us"]:
                problems.append(
                    f"{n}: token {latest[1]} committed a write "
                    f"{(latest[0] - e['acquired_us']) / 1000:.3f} ms after token "
                    f"{e['token']} acquired the lease")
    return problems


def ledger_matches(rows, committed, refused=(), abandoned=(), uncertain=(),
                   acquires=(), what="ledger"):
    """The ledger holds every write a client saw commit, with its name and
    token, and nothing a client saw refused or abandoned; writes whose
    outcome the client could not know (uncertain: the connection broke
    during COMMIT) may be there or not.  rows may hold several rows of one
    key (an audit log); with acquires, every row must carry a token its
    client acquired for its name."""
    by_key = {}
    for r in rows:
        by_key.setdefault((r["client"], r["cseq"]), []).append(r)
    problems = []
    for k, e in committed.items():
        got = by_key.get(k)
        if not got:
            problems.append(f"committed write {k[0]}/{k[1]} (token {e['token']}, "
                            f"{e['name']}) is missing from the {what}")
        elif any((r["name"], r["token"]) != (e["name"], e["token"]) for r in got):
            problems.append(f"write {k[0]}/{k[1]} is in the {what} as "
                            f"{got[0]['name']}/{got[0]['token']}, committed as "
                            f"{e['name']}/{e['token']}")
    refused, abandoned, uncertain = set(refused), set(abandoned), set(uncertain)
    for k, got in by_key.items():
        if k in committed or k in uncertain:
            continue
        why = ("rejected with LK001" if k in refused else
               "abandoned by a disconnect" if k in abandoned else "never seen to commit")
        problems.append(f"{what} row {k[0]}/{k[1]} (token {got[0]['token']}, "
                        f"{got[0]['name']}) was {why}")
    if acquires:
        by_token = {e["token"]: e for e in acquires}
        for r in rows:
            a = by_token.get(r["token"])
            if a is None or (a["name"], a["client"]) != (r["name"], r["client"]):
                problems.append(f"{what} row {r['client']}/{r['cseq']} carries token "
                                f"{r['token']} on {r['name']}, which that client never "
                                f"acquired for that name")
    return problems


def leases_never_overlapped(acquires, releases, names):
    """Per name, a token was acquired (server clock) only after the lease of
    the token before it ended: expired, or released (a true release)."""
    release_of = {e["token"]: e for e in releases}
    problems = []
    for n in names:
        acq = sorted((e for e in acquires if e["name"] == n), key=lambda e: e["token"])
        for prev, cur in zip(acq, acq[1:]):
            free_at = prev["expires_us"]
            rel = release_of.get(prev["token"])
            if rel is not None and rel["ok"]:
                free_at = min(free_at, rel["at_us"])
            if cur["acquired_us"] <= prev["acquired_us"]:
                problems.append(f"{n}: token {cur['token']} acquired before the lower "
                                f"token {prev['token']}")
            elif cur["acquired_us"] < free_at:
                problems.append(f"{n}: token {cur['token']} acquired "
                                f"{(free_at - cur['acquired_us']) / 1000:.3f} ms before "
                                f"the lease of token {prev['token']} ended")
    return problems


def no_write_after_revoke(rows, revokes):
    """Every row of a revoked token committed before the revoke returned:
    a revoke returns only once every transaction that vouched for the
    token has ended, and afterwards the token is stale."""
    revoked_at = {}
    for e in revokes:
        if e.get("revoked_token") is not None:
            t = e["revoked_token"]
            revoked_at[t] = min(revoked_at.get(t, e["at_us"]), e["at_us"])
    problems = []
    for r in rows:
        at = revoked_at.get(r["token"])
        end = max(r.get("commit_us") or 0, r.get("written_us") or 0)
        if at is not None and end >= at:
            problems.append(f"{r['name']}: row {r['client']}/{r['cseq']} of token {r['token']} "
                            f"committed {(end - at) / 1000:.3f} ms after the revoke of that "
                            f"token returned")
    return problems


def revokes_as_releases(revokes):
    """The revokes that ended a lease, as true releases at the time the
    revoke returned (for leases_never_overlapped: put them after the
    releases, so that they win over a later false release of the token)."""
    return [{"token": e["revoked_token"], "ok": True, "at_us": e["at_us"]}
            for e in revokes if e.get("revoked_token") is not None]


def no_release_of_revoked(releases, revokes):
    """A revoked token was never released with true: a revoke of a released
    lease revokes nothing, and a revoked token is stale for release."""
    revoked = {e["revoked_token"] for e in revokes if e.get("revoked_token") is not None}
    return [f"token {e['token']} was revoked, and its release returned true"
            for e in releases if e["ok"] and e["token"] in revoked]


def ended_explained(ended, acquires, revokes, grace_us):
    """Every holder's transaction that was ended (cancelled or terminated)
    was ended by a revoke with force that names its process in its result,
    or by a waiter once its lease had expired at least grace_us before."""
    named = {pid for e in revokes for pid in e.get("ended") or ()}
    by_token = {e["token"]: e for e in acquires}
    problems = []
    for e in ended:
        if e["pid"] in named:
            continue
        a = by_token.get(e["token"])
        if a is not None and e["at_us"] >= a["expires_us"] + grace_us:
            continue
        left = ("its lease of token unknown" if a is None else
                f"{(a['expires_us'] + grace_us - e['at_us']) / 1000:.3f} ms before its "
                f"lease's expiry plus the pin grace")
        problems.append(f"{e['name']}: the transaction of process {e['pid']} holding token "
                        f"{e['token']} was ended ({e.get('how')}) by no revoke that names "
                        f"it, {left}")
    return problems


def acquire_order(acquires):
    """An acquire that began after another had returned got a higher token
    (over all names: tokens come from one counter).  begin and end are the
    clients' CLOCK_MONOTONIC, the same clock for every process of a host."""
    problems = []
    ends = sorted(acquires, key=lambda e: e["end"])
    best = None                 # the highest token of the acquires ended so far
    i = 0
    for e in sorted(acquires, key=lambda e: e["begin"]):
        while i < len(ends) and ends[i]["end"] < e["begin"]:
            if best is None or ends[i]["token"] > best["token"]:
                best = ends[i]
            i += 1
        if best is not None and e["token"] <= best["token"]:
            problems.append(f"token {e['token']} ({e['name']}, {e['client']}) came from "
                            f"an acquire that began after the acquire of token "
                            f"{best['token']} ({best['name']}, {best['client']}) returned")
    return problems


def one_leader_at_a_time(acks, leaders):
    """Acknowledged writes came from one server at a time, in the order the
    DCS named leaders: acks are (time, server) of every acknowledged write,
    leaders the servers the DCS named, in order.  The servers of the writes,
    in acknowledgement order, must form runs that follow leaders (a run per
    leader at most, none out of order).  Returns (problems, the runs)."""
    runs = []
    for _, server in sorted(acks):
        if not runs or runs[-1] != server:
            runs.append(server)
    problems = []
    i = 0
    for server in runs:
        while i < len(leaders) and leaders[i] != server:
            i += 1
        if i == len(leaders):
            problems.append(f"acknowledged writes came from servers in the order {runs}, "
                            f"the DCS named leaders in the order {list(leaders)}")
            break
        i += 1
    return problems, runs


# ---------------------------------------------------------------------------
# Self-test: a good ledger passes every rule, and each broken one is caught.
# ---------------------------------------------------------------------------

def _good():
    """Two holders of one name, one after the other, one write each."""
    acquires = [
        {"name": "n", "token": 10, "client": "a", "acquired_us": 1000, "expires_us": 2000,
         "begin": 1.0, "end": 1.1},
        {"name": "n", "token": 11, "client": "b", "acquired_us": 2500, "expires_us": 3500,
         "begin": 1.2, "end": 1.3},
    ]
    releases = [{"token": 10, "ok": True, "at_us": 1500}]
    rows = [
        {"name": "n", "token": 10, "client": "a", "cseq": 1, "commit_order": 1,
         "commit_us": 1200, "written_us": 1100},
        {"name": "n", "token": 11, "client": "b", "cseq": 1, "commit_order": 2,
         "commit_us": 2600, "written_us": 2550},
    ]
    committed = {("a", 1): {"name": "n", "token": 10}, ("b", 1): {"name": "n", "token": 11}}
    return acquires, releases, rows, committed


def _rules(acquires, releases, rows, committed, refused=(), uncertain=()):
    return {
        "duplicate_tokens": duplicate_tokens(acquires),
        "tokens_unique_across_names": tokens_unique_across_names(rows),
        "tokens_never_go_back": tokens_never_go_back(rows, ["n"]),
        "no_write_after_later_acquire": no_write_after_later_acquire(rows, acquires, ["n"]),
        "ledger_matches": ledger_matches(rows, committed, refused=refused,
                                         uncertain=uncertain, acquires=acquires),
        "leases_never_overlapped": leases_never_overlapped(acquires, releases, ["n"]),
        "acquire_order": acquire_order(acquires),
    }


def selftest():
    """Prints TAP; returns the number of failures."""
    tap = Tap()
    print("1..17")
    good = _rules(*_good())
    tap.check("a good ledger passes every rule",
              [f"{r}: {p}" for r, ps in good.items() for p in ps])

    def broken(rule, desc, mutate):
        a, rel, rows, com = _good()
        extra = mutate(a, rel, rows, com) or {}
        got = _rules(a, rel, rows, com, **extra)
        problems = []
        if not got[rule]:
            problems.append(f"{rule} did not flag it")
        tap.check(f"{rule} catches {desc}", problems)

    def dup(a, rel, rows, com):
        a[1]["token"] = 10
    broken("duplicate_tokens", "a token handed out twice", dup)

    def shared(a, rel, rows, com):
        rows[1]["name"], rows[1]["token"] = "m", 10
    broken("tokens_unique_across_names", "one token on rows of two names", shared)

    def back(a, rel, rows, com):
        rows[0]["commit_order"], rows[1]["commit_order"] = 2, 1
    broken("tokens_never_go_back", "a lower token committed after a higher one", back)

    def late(a, rel, rows, com):
        rows[0]["commit_us"] = 2600
    broken("no_write_after_later_acquire", "a write committed after a later acquire", late)

    def lost(a, rel, rows, com):
        del rows[1]
    broken("ledger_matches", "a committed write missing", lost)

    def refused_there(a, rel, rows, com):
        del com[("b", 1)]
        return {"refused": [("b", 1)]}
    broken("ledger_matches", "a refused write in the ledger", refused_there)

    def overlap(a, rel, rows, com):
        rel.clear()
        a[1]["acquired_us"] = 1800
    broken("leases_never_overlapped", "a lease taken before the last one ended", overlap)

    def order(a, rel, rows, com):
        a[1]["token"], a[0]["token"] = 9, 10
        rows[1]["token"] = 9
        com[("b", 1)]["token"] = 9
    broken("acquire_order", "a later acquire with a lower token", order)

    # Revokes and ended transactions: token 11 revoked at 3000, after its
    # row committed; one transaction ended by that revoke, one by a waiter
    # (token 10, 500 us past its expiry, the grace being 400).
    def revoke_rules(rows, releases, revokes, ended):
        acquires = _good()[0]
        return {
            "no_write_after_revoke": no_write_after_revoke(rows, revokes),
            "leases_never_overlapped": leases_never_overlapped(
                acquires + [{"name": "n", "token": 12, "client": "c", "acquired_us": 3100,
                             "expires_us": 4100}],
                releases + revokes_as_releases(revokes), ["n"]),
            "no_release_of_revoked": no_release_of_revoked(releases, revokes),
            "ended_explained": ended_explained(ended, acquires, revokes, 400),
        }

    def revoke_good():
        rows = _good()[2]
        releases = [{"token": 10, "ok": True, "at_us": 1500},
                    {"token": 11, "ok": False, "at_us": 3050}]
        revokes = [{"name": "n", "revoked_token": 11, "ended": [7], "at_us": 3000,
                    "force": True, "start_us": 2800},
                   {"name": "n", "revoked_token": None, "ended": [], "at_us": 3020,
                    "force": False, "start_us": 3010}]
        ended = [{"name": "n", "token": 11, "pid": 7, "at_us": 2900, "how": "cancel"},
                 {"name": "n", "token": 10, "pid": 8, "at_us": 2500, "how": "terminate"}]
        return rows, releases, revokes, ended

    tap.check("a good ledger with revokes and ended transactions passes every rule",
              [f"{r}: {p}" for r, ps in revoke_rules(*revoke_good()).items() for p in ps])

    def revoke_broken(rule, desc, mutate):
        case = revoke_good()
        mutate(*case)
        tap.check(f"{rule} catches {desc}",
                  [] if revoke_rules(*case)[rule] else [f"{rule} did not flag it"])

    def after_revoke(rows, rel, rev, end):
        rev[0]["at_us"] = 2600
    revoke_broken("no_write_after_revoke", "a write committed as its token was revoked",
                  after_revoke)

    def taken_early(rows, rel, rev, end):
        rev[0]["at_us"] = 3200
    revoke_broken("leases_never_overlapped", "a lease taken before its revoke returned",
                  taken_early)

    def released_too(rows, rel, rev, end):
        rel[1]["ok"] = True
    revoke_broken("no_release_of_revoked", "a revoked token released with true",
                  released_too)

    def early_end(rows, rel, rev, end):
        end[1]["at_us"] = 2300
    revoke_broken("ended_explained", "a transaction ended before the pin grace", early_end)

    def unnamed_end(rows, rel, rev, end):
        end[0]["pid"] = 9
    revoke_broken("ended_explained", "a transaction ended by no revoke", unnamed_end)

    acks = [(1.0, "a"), (2.0, "a"), (3.0, "b"), (4.0, "b"), (5.0, "a")]
    tap.check("one_leader_at_a_time passes writes that follow the leaders",
              one_leader_at_a_time(acks, ["a", "b", "a"])[0])
    tap.check("one_leader_at_a_time catches two servers acknowledging at once",
              [] if one_leader_at_a_time(acks[:3] + [(3.5, "a")] + acks[3:4],
                                         ["a", "b"])[0]
              else ["one_leader_at_a_time did not flag it"])
    return tap.failed


if __name__ == "__main__":
    sys.exit(1 if selftest() else 0)
