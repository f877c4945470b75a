# Copyright (c) 2026, the dlock developers
"""test/scripts/events.py: lease events on LISTEN dlock (issue 16, item 5).

A listener session LISTENs on dlock; after each step a control session
sends a sentinel NOTIFY, and the listener reads everything up to it: since
notifications arrive in commit order, that is exactly what the step's
committed transactions sent, with no sleeping and guessing.  Payloads are
parsed as JSON and compared with the tokens the calls returned.

What it checks (one TAP line each):

 1  dlock.events is off by default: acquire and release send nothing
 2  ALTER DATABASE ... SET dlock.events = on by a superuser takes effect in
    a new session of an ordinary role, although dlock's library is loaded
    only by that session's first dlock call
 3  acquire of a never-acquired name: {"lock", "event": "acquired",
    "token", "owner"} with the returned token, exactly these keys
 4  an owner renewal (acquire by the same owner) sends nothing
 5  dlock_renew sends nothing
 6  a true dlock_release sends "released" with the token and owner; a
    false one (stale token) sends nothing
 7  acquire of a released name sends "acquired"; an anonymous lease has
    no "owner" key
 8  a lease that expires without a takeover sends nothing; the next
    acquire sends "taken_over" with the new token; a busy acquire sends
    nothing
 9  events are sent at commit: nothing while the transaction is open, then
    its events in order
10  a rolled-back transaction sends nothing (acquire, release)
11  a rolled-back subtransaction sends nothing; the rest of its
    transaction, and a released savepoint's events, are sent
12  an ordinary role cannot SET dlock.events once dlock is loaded (42501)
13  ... nor turn it on with SET before dlock is loaded (placeholder): no
    event is sent and the setting reads off
14  ... nor with ALTER ROLE ... SET for itself: refused, or without effect
15  ALTER ROLE ... SET dlock.events = on by a superuser takes effect in a
    new session of that role, and not for another role
16  escaping: names and owners with quotes, backslashes, control
    characters, DEL and non-ASCII text come back byte for byte from the
    parsed JSON
17  the worst case, a 255-byte name and a 255-byte owner of control
    characters (each escaped as \\u00XX), is sent whole, within NOTIFY's
    8000-byte limit
18  in a SQL_ASCII database, a name and an owner with bytes of 0x80 and
    above make valid JSON (each such byte escaped as \\u00XX), and read
    back as the characters whose numbers are the bytes

Environment: PGHOST, PGPORT, PGUSER (a superuser); DLOCK_EVENTS_DB
(default dlock_events, dropped and recreated).
"""

import json
import os
import sys
import time

import psycopg
from psycopg import sql

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import Tap, one  # noqa: E402  (the TAP lines of every Python suite)

DB = os.environ.get("DLOCK_EVENTS_DB", "dlock_events")
APP = "regress_dlock_events_app"
OTHER = "regress_dlock_events_other"
KEYS_ANON = ["lock", "event", "token"]


def connect(user=None, db=DB):
    kw = {"dbname": db, "autocommit": True}
    if user:
        kw["user"] = user
    return psycopg.connect(**kw)


def sqlstate(conn, query, params=None):
    try:
        conn.execute(query, params)
    except psycopg.Error as e:
        return e.sqlstate
    return None


class Listener:
    """LISTEN dlock; read(ctl) returns what was committed before now."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.conn = connect()
        self.got = []
        self.conn.add_notify_handler(self.got.append)
        self.conn.execute("LISTEN dlock")
        self.n = 0

    def read(self):
        """[(payload, parsed JSON or the error)] sent before the sentinel."""
        self.n += 1
        tag = f"sentinel {self.n}"
        self.ctl.execute("SELECT pg_notify('dlock', %s)", [tag])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            # Notifications reach the client at the end of a transaction.
            self.conn.execute("SELECT 1")
            for i, n in enumerate(self.got):
                if n.payload == tag:
                    out = []
                    for m in self.got[:i]:
                        try:
                            out.append((m.payload, json.loads(m.payload)))
                        except ValueError as e:
                            out.append((m.payload, e))
                    del self.got[: i + 1]
                    return out
            time.sleep(0.02)
        raise TimeoutError(f"{tag} never arrived")


def expect(events, wanted):
    """Problems: events differ from wanted, a list of dicts in order (with
    the exact keys and key order of the payload)."""
    problems = []
    if len(events) != len(wanted):
        problems.append(f"{len(events)} events, wanted {len(wanted)}")
    for (payload, got), want in zip(events, wanted):
        if isinstance(got, Exception):
            problems.append(f"not JSON: {payload!r}: {got}")
        elif not isinstance(got, dict) or list(got.items()) != list(want.items()):
            problems.append(f"got {payload!r}, wanted {json.dumps(want)}")
    for payload, _ in events[len(wanted):]:
        problems.append(f"unexpected: {payload!r}")
    return problems


def ev(lock, event, token, owner=None):
    d = {"lock": lock, "event": event, "token": token}
    if owner is not None:
        d["owner"] = owner
    return d


def sql_ascii_events(admin):
    """Problems with the events of a SQL_ASCII database (check 18)."""
    db = DB + "_sql_ascii"
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(db)))
    admin.execute(sql.SQL("CREATE DATABASE {} ENCODING 'SQL_ASCII' TEMPLATE template0 "
                          "LC_COLLATE 'C' LC_CTYPE 'C'").format(sql.Identifier(db)))
    p = []
    try:
        with connect(db=db) as c, connect(db=db) as lis:
            got = []
            lis.add_notify_handler(got.append)
            lis.execute("LISTEN dlock")
            c.execute("CREATE EXTENSION dlock")
            c.execute("SET dlock.events = on")
            # The name: caf, then the UTF-8 bytes of e-acute, then 0xff, a
            # byte that is UTF-8 nowhere; the owner: a Latin-1 e-acute.
            t = one(c, "SELECT dlock_acquire(convert_from('\\x636166c3a9ff'::bytea, 'SQL_ASCII'),"
                       " '1 min', owner => convert_from('\\xe9'::bytea, 'SQL_ASCII'))")
            c.execute("NOTIFY dlock, 'sentinel'")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not any(n.payload == "sentinel" for n in got):
                lis.execute("SELECT 1")
                time.sleep(0.02)
            events = [n.payload for n in got if n.payload != "sentinel"]
            want = {"lock": "caf\u00c3\u00a9\u00ff", "event": "acquired", "token": t,
                    "owner": "\u00e9"}
            if len(events) != 1:
                p.append(f"{len(events)} events: {events!r}")
            else:
                try:
                    if json.loads(events[0]) != want:
                        p.append(f"got {events[0]!r}, wanted {json.dumps(want)}")
                except ValueError as e:
                    p.append(f"not JSON: {events[0]!r}: {e}")
    except (psycopg.Error, UnicodeError) as e:
        p.append(f"{type(e).__name__}: {e}")
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
    return p


def main():
    tap = Tap()
    admin = connect(db="postgres")
    admin.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DB)))
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
    for role in (APP, OTHER):
        admin.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))

    ctl = connect()
    ctl.execute("CREATE EXTENSION dlock")
    lis = Listener(ctl)

    # 1. Off by default.
    c = connect(APP)
    t = one(c, "SELECT dlock_acquire('ev/off', '1 min', owner => 'w')")
    one(c, "SELECT dlock_release('ev/off', %s)", [t])
    setting = one(c, "SELECT current_setting('dlock.events')")
    p = expect(lis.read(), [])
    if setting != "off":
        p.append(f"dlock.events is {setting!r} by default")
    tap.check("dlock.events is off by default: acquire and release send nothing", p)
    c.close()

    # 2. ALTER DATABASE ... SET, in a new session of an ordinary role.
    ctl.execute(sql.SQL("ALTER DATABASE {} SET dlock.events = on").format(sql.Identifier(DB)))
    c = connect(APP)
    loaded = one(c, "SELECT count(*) FROM pg_settings WHERE name = 'dlock.max_ttl'")
    t1 = one(c, "SELECT dlock_acquire('ev/a', '1 min', owner => 'w1')")
    setting = one(c, "SELECT current_setting('dlock.events')")
    superuser = one(c, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    events = lis.read()
    p = []
    if loaded != 0:
        p.append("dlock was already loaded before the first call")
    if superuser:
        p.append("the session's role is a superuser")
    if setting != "on":
        p.append(f"dlock.events is {setting!r}")
    if not events:
        p.append("no event")
    tap.check("ALTER DATABASE SET dlock.events = on takes effect in an ordinary role's new session, "
              "dlock loaded at its first call", p)

    # 3. acquired, for a never-acquired name.
    tap.check("acquire of a new name sends acquired, with the returned token and the owner",
              expect(events, [ev("ev/a", "acquired", t1, "w1")]))

    # 4. An owner renewal sends nothing.
    again = one(c, "SELECT dlock_acquire('ev/a', '1 min', owner => 'w1')")
    p = expect(lis.read(), [])
    if again != t1:
        p.append(f"owner renewal returned {again}, not {t1}")
    tap.check("an owner renewal sends nothing", p)

    # 5. dlock_renew sends nothing.
    renewed = one(c, "SELECT dlock_renew('ev/a', %s, '1 min')", [t1])
    p = expect(lis.read(), [])
    if renewed is not True:
        p.append("dlock_renew returned false")
    tap.check("dlock_renew sends nothing", p)

    # 6. released, only for a true release.
    rel = one(c, "SELECT dlock_release('ev/a', %s)", [t1])
    stale = one(c, "SELECT dlock_release('ev/a', %s)", [t1])
    p = expect(lis.read(), [ev("ev/a", "released", t1, "w1")])
    if rel is not True or stale is not False:
        p.append(f"release gave {rel}, then {stale}")
    tap.check("a true release sends released with token and owner; a false one nothing", p)

    # 7. acquired, for a released name; anonymous: no owner key.
    t2 = one(c, "SELECT dlock_acquire('ev/a', '1 min')")
    events = lis.read()
    p = expect(events, [ev("ev/a", "acquired", t2)])
    if t2 <= t1:
        p.append("the new token is not above the old one")
    if events and isinstance(events[0][1], dict) and list(events[0][1]) != KEYS_ANON:
        p.append(f"keys {list(events[0][1])}")
    tap.check("acquire of a released name sends acquired; an anonymous lease has no owner key", p)
    one(c, "SELECT dlock_release('ev/a', %s)", [t2])
    lis.read()

    # 8. Expiry without takeover: nothing; then taken_over.
    t3 = one(c, "SELECT dlock_acquire('ev/b', '100 ms', owner => 'old')")
    p = expect(lis.read(), [ev("ev/b", "acquired", t3, "old")])
    time.sleep(0.3)
    p += expect(lis.read(), [])
    c2 = connect(APP)
    t4 = one(c2, "SELECT dlock_acquire('ev/b', '1 min', owner => 'new')")
    busy = one(c, "SELECT dlock_acquire('ev/b', '1 min', owner => 'old')")
    p += expect(lis.read(), [ev("ev/b", "taken_over", t4, "new")])
    if busy is not None:
        p.append("the old owner got the lease back")
    tap.check("an expiry without takeover sends nothing; the takeover sends taken_over; "
              "a busy acquire nothing", p)

    # 9. At commit, in order.
    c.execute("BEGIN")
    t5 = one(c, "SELECT dlock_acquire('ev/c', '1 min')")
    p = expect(lis.read(), [])
    one(c, "SELECT dlock_release('ev/c', %s)", [t5])
    t6 = one(c, "SELECT dlock_acquire('ev/c', '1 min', owner => 'x')")
    p += expect(lis.read(), [])
    c.execute("COMMIT")
    p += expect(lis.read(), [ev("ev/c", "acquired", t5), ev("ev/c", "released", t5),
                             ev("ev/c", "acquired", t6, "x")])
    tap.check("events are sent at commit, in order, nothing before", p)

    # 10. Rollback.
    c.execute("BEGIN")
    one(c, "SELECT dlock_acquire('ev/d', '1 min')")
    one(c, "SELECT dlock_release('ev/c', %s)", [t6])
    c.execute("ROLLBACK")
    p = expect(lis.read(), [])
    still = one(c, "SELECT dlock_check('ev/c', %s)", [t6])
    if not still:
        p.append("the rolled-back release freed the lease")
    tap.check("a rolled-back transaction sends nothing", p)

    # 11. Subtransactions.
    c.execute("BEGIN")
    c.execute("SAVEPOINT a")
    one(c, "SELECT dlock_acquire('ev/sub1', '1 min')")
    c.execute("ROLLBACK TO SAVEPOINT a")
    c.execute("SAVEPOINT b")
    t7 = one(c, "SELECT dlock_acquire('ev/sub2', '1 min')")
    c.execute("RELEASE SAVEPOINT b")
    # An error caught by PL/pgSQL rolls its subtransaction back too.
    c.execute("""DO $$
        BEGIN
            PERFORM dlock_acquire('ev/sub3', '1 min');
            RAISE division_by_zero;
        EXCEPTION WHEN division_by_zero THEN NULL;
        END $$""")
    t8 = one(c, "SELECT dlock_acquire('ev/sub4', '1 min')")
    c.execute("COMMIT")
    tap.check("a rolled-back subtransaction sends nothing; the rest of the transaction is sent",
              expect(lis.read(), [ev("ev/sub2", "acquired", t7), ev("ev/sub4", "acquired", t8)]))
    c.close()
    c2.close()

    # 12. No SET by an ordinary role once dlock is loaded.
    c = connect(APP)
    one(c, "SELECT dlock_remaining('ev/none', 1)")  # loads dlock
    p = []
    for v in ("off", "on"):
        st = sqlstate(c, f"SET dlock.events = {v}")
        if st != "42501":
            p.append(f"SET dlock.events = {v}: SQLSTATE {st}, wanted 42501")
    st = sqlstate(c, "SELECT set_config('dlock.events', 'off', false)")
    if st != "42501":
        p.append(f"set_config: SQLSTATE {st}, wanted 42501")
    tap.check("an ordinary role cannot SET dlock.events once dlock is loaded (42501)", p)
    c.close()

    # 13. ... nor before: the placeholder's value is dropped at load.
    ctl.execute(sql.SQL("ALTER DATABASE {} RESET dlock.events").format(sql.Identifier(DB)))
    c = connect(APP)
    p = []
    st = sqlstate(c, "SET dlock.events = on")
    if st not in (None, "42501"):
        p.append(f"SET before loading: SQLSTATE {st}")
    t9 = one(c, "SELECT dlock_acquire('ev/e', '1 min')")
    setting = one(c, "SELECT current_setting('dlock.events')")
    one(c, "SELECT dlock_release('ev/e', %s)", [t9])
    p += expect(lis.read(), [])
    if setting != "off":
        p.append(f"dlock.events reads {setting!r} after loading")
    tap.check("an ordinary role cannot turn events on with SET before dlock is loaded", p)
    c.close()

    # 14. ... nor with ALTER ROLE ... SET for itself.
    c = connect(APP)
    st = sqlstate(c, sql.SQL("ALTER ROLE {} SET dlock.events = on").format(sql.Identifier(APP)))
    c.close()
    c = connect(APP)
    p = []
    if st not in (None, "42501"):
        p.append(f"ALTER ROLE SET: SQLSTATE {st}")
    t10 = one(c, "SELECT dlock_acquire('ev/f', '1 min')")
    setting = one(c, "SELECT current_setting('dlock.events')")
    one(c, "SELECT dlock_release('ev/f', %s)", [t10])
    p += expect(lis.read(), [])
    if setting != "off":
        p.append(f"dlock.events reads {setting!r}")
    tap.check(f"an ordinary role cannot turn events on with ALTER ROLE SET "
              f"({'refused' if st else 'accepted, without effect'})", p)
    c.close()
    ctl.execute(sql.SQL("ALTER ROLE {} RESET ALL").format(sql.Identifier(APP)))

    # 15. ALTER ROLE ... SET by a superuser: that role only.
    ctl.execute(sql.SQL("ALTER ROLE {} SET dlock.events = on").format(sql.Identifier(APP)))
    c = connect(APP)
    o = connect(OTHER)
    t11 = one(c, "SELECT dlock_acquire('ev/g', '1 min')")
    t12 = one(o, "SELECT dlock_acquire('ev/h', '1 min')")
    tap.check("ALTER ROLE SET dlock.events = on by a superuser: that role's new sessions send "
              "events, another role's do not",
              expect(lis.read(), [ev("ev/g", "acquired", t11)]))
    one(o, "SELECT dlock_release('ev/h', %s)", [t12])
    o.close()
    c.close()
    ctl.execute(sql.SQL("ALTER ROLE {} RESET dlock.events").format(sql.Identifier(APP)))

    # 16. Escaping, in a superuser's session.
    ctl.execute("SET dlock.events = on")
    names = [
        ('say "hi"', 'own"er'),
        ("back\\slash\\", "\\"),
        ("line\nfeed\ttab\rret\bbs\ffeed", "\x01\x1f"),
        ("del\x7f", "x"),
        ("caf\u00e9 \u65e5\u672c \U0001F512", "\u00fc\u00f1\u00ee"),
        ("{\"lock\": \"fake\"}", "}, \"event\": \"released"),
        ("'; NOTIFY dlock, 'x", "--"),
    ]
    wanted = []
    for name, owner in names:
        t = one(ctl, "SELECT dlock_acquire(%s, '1 min', owner => %s)", [name, owner])
        one(ctl, "SELECT dlock_release(%s, %s)", [name, t])
        wanted += [ev(name, "acquired", t, owner), ev(name, "released", t, owner)]
    tap.check("names and owners with quotes, backslashes, control characters and non-ASCII "
              "come back exactly from the JSON", expect(lis.read(), wanted))

    # 17. The worst case for the payload's size.
    # Control characters without a short escape (\b \t \n \f \r).
    controls = [chr(c) for c in range(1, 32) if c not in (8, 9, 10, 12, 13)]
    name = "".join(controls[i % len(controls)] for i in range(255))
    owner = "\x1f" * 255
    t = one(ctl, "SELECT dlock_acquire(%s, '1 min', owner => %s)", [name, owner])
    events = lis.read()
    p = expect(events, [ev(name, "acquired", t, owner)])
    size = len(events[0][0].encode()) if events else 0
    if size <= 6 * 510:
        p.append(f"payload of {size} bytes: not every byte was escaped")
    if size >= 8000:
        p.append(f"payload of {size} bytes")
    tap.check(f"a 255-byte name and owner of control characters: one payload of {size} bytes "
              "(limit 8000), parsed back exactly", p)

    # 18. A SQL_ASCII database: bytes of 0x80 and above are escaped too.
    tap.check("in a SQL_ASCII database a name and owner with bytes of 0x80 and above "
              "make valid JSON, each byte read back as the character of its number",
              sql_ascii_events(admin))

    lis.conn.close()
    ctl.close()
    admin.execute(sql.SQL("DROP DATABASE {}").format(sql.Identifier(DB)))
    for role in (APP, OTHER):
        admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))
    admin.close()
    print(f"1..{tap.n}")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main())
