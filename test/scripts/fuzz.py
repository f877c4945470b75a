# Copyright (c) 2026, the dlock developers
"""test/scripts/fuzz.py: throw generated bad and odd inputs at every dlock function.

Run by fuzz.sh.  CALLS calls (default 12,000) in batches, each call its own
statement on one connection, of:

    dlock_acquire(name, ttl, wait, owner)   (also with the defaults, by name)
    dlock_release(name, token)
    dlock_renew(name, token, ttl)
    dlock_check(name, token)
    dlock_remaining(name, token)
    dlock_assert(name, token)
    dlock_cleanup(older_than, max_rows)     (also with the defaults)
    the dlock_fence() trigger, through INSERTs and UPDATEs on fenced tables:
      lock name from a text, a varchar column, a partitioned table whose
      partitions have their own column order, fixed odd names, and
      misconfigured triggers

with generated arguments:

  names    valid UTF-8 without NUL, 0 to 300 bytes: ASCII, control
           characters, quotes and format directives, 2-, 3- and 4-byte
           characters (noncharacters, BOM, RTL marks, U+10FFFF), exact
           straddles of the 255-byte limit by a multibyte character, the
           leases the test keeps in known states; NULL.  A few calls send
           bytes that are not UTF-8 (or contain NUL) in binary format:
           PostgreSQL rejects those (22021) before dlock sees them.
  intervals  sent in binary, so every (months, days, microseconds) triple
           reaches the function exactly: 0, +-1 us, the dlock.max_ttl
           boundary +-1 us and '1 day', months or days or microseconds alone
           up to their int32/int64 limits, mixed signs that nearly cancel
           (so the net length is small but adding the parts to a timestamp
           overflows), random triples; NULL.  A few are text literals that
           PostgreSQL may reject while parsing them (22007, 22008, 22015),
           before dlock is called.
  owners   NULL, the owner of a held lease, 1 to 255 bytes, the 255/256
           straddle, empty, and 256 bytes to 1 MB.
  tokens   the current tokens of held leases and their neighbours, 0, -1,
           the int64 limits, random; NULL.
  max_rows 0, -1, 1, the int32 limits, random; NULL.

Calls run in autocommit, in READ ONLY, REPEATABLE READ and SERIALIZABLE
transactions, as superuser and as an ordinary role, under lock_timeout or
statement_timeout, with dlock.max_ttl from 1 s to its maximum, in several
time zones.

Checks:
  - no crash: the connection is the same backend after every batch, the
    postmaster did not restart, SELECT 1 works; the server log (if found
    beside $PGDATA) has no crash
  - no XX000 (internal error), nothing in classes XX or 58
  - only documented SQLSTATEs: the README's Errors table (22004, 22023,
    25006, 42501, LK001, 55P03, 57014) and, for misconfigured fence
    triggers, its dlock_fence section (42703, 42804, 39P01); plus what
    PostgreSQL raises before dlock is reached (22021 for bad encoding,
    22007/22008/22015 for an interval literal it cannot parse, checked on
    the literal alone; 42501 for dlock_cleanup by a role without EXECUTE)
  - where the outcome follows from the arguments alone (NULLs, lengths,
    read-only transactions, a wait's sign, a ttl's real length), the
    SQLSTATE is the one the README gives.  A ttl is valid when its real
    length, clock_timestamp() + ttl on the server's calendar (the session's
    time zone) minus clock_timestamp(), is above 0 and at most
    dlock.max_ttl (plus an hour for a ttl with days or months), and its
    nominal length is at most dlock.max_ttl (the observer computes it; "Time and tokens" in the
    README: months and days are added as timestamptz + interval does); one
    that cannot be added to the current time at all must get 22023 too
  - a refused ttl is refused for the right reason: "must be positive" only
    if its real length is not, "exceeds the maximum" only if it does
  - a failing call leaves the lease table, the token sequence and the
    fenced tables exactly as they were, and so do calls that report
    "nothing done" (acquire NULL, release or renew false, check, assert,
    cleanup returning 0); a fenced write leaves the lease table alone.
    Fingerprint: md5 of the visible row versions (ctid, xmin: any committed
    insert, update or delete changes them), the sequence's last_value and
    is_called, read by a second (superuser) connection after every call
  - invariants after every batch: tokens of the lease rows are unique and
    at most the sequence's last value, expires_at > acquired_at

Environment: PGHOST, PGPORT, PGUSER, PGDATABASE (maintenance database),
PGDATA (to find the server log, optional); DLOCK_FUZZ_DB (dlock_fuzz,
dropped and recreated), DLOCK_FUZZ_CALLS (12000), DLOCK_FUZZ_SEED,
DLOCK_FUZZ_KEEP=1 keeps the database.
"""

import math
import os
import random
import re
import struct
import sys
import time
import traceback

import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ledger import Tap  # noqa: E402

DB = os.environ.get("DLOCK_FUZZ_DB", "dlock_fuzz")
CALLS = int(os.environ.get("DLOCK_FUZZ_CALLS", "12000"))
# A fixed seed by default, so that make check runs the same inputs every
# time; DLOCK_FUZZ_SEED=random (or a number) explores others.
_seed = os.environ.get("DLOCK_FUZZ_SEED", "20261129")
SEED = int(time.time() * 1000) % 1000000 if _seed == "random" else int(_seed)
KEEP = bool(os.environ.get("DLOCK_FUZZ_KEEP"))
BATCH = 200

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1
USECS_PER_DAY = 86400 * 10**6
# PostgreSQL 17 and later store infinite intervals as these two triples
# (months, days, microseconds); before 17 they are ordinary, finite values.
IV_INFINITY = (INT32_MAX, INT32_MAX, INT64_MAX)
IV_MINUS_INFINITY = (INT32_MIN, INT32_MIN, INT64_MIN)
# Set from server_version_num once connected: does the server have them?
HAS_INFINITE_INTERVALS = False
MONTH_US = 30 * USECS_PER_DAY

DOCUMENTED = {"22004", "22023", "25006", "42501", "LK001", "55P03", "57014"}
FENCE_SETUP = {"42703", "42804", "39P01"}
LITERAL = {"22007", "22008", "22015"}
ENCODING = {"22021"}

OWNER = "fuzz-owner"
# Leases kept in known states; reset before every batch.
HOT = [
    ("hot/anon", "anon"),
    ("hot/owned", "owned"),
    ("hot/released", "released"),
    ("hot/expired", "expired"),
    ("hot/never", "never"),
    ("\u00e9" * 127 + "x", "anon"),                                  # 255 bytes
    ("it's \"q\" %s %n\t\x01 \u00fcn\u00ef \U0001F512 \u202e", "owned"),
    ("hot/other-role", "other"),
]
HOT_NAMES = [n for n, _ in HOT]


# ---------------------------------------------------------------------------
# Values sent exactly as generated
# ---------------------------------------------------------------------------

class Iv:
    """An interval as PostgreSQL stores it: months, days, microseconds."""
    __slots__ = ("m", "d", "t")

    def __init__(self, m, d, t):
        self.m, self.d, self.t = m, d, t

    def infinite(self):
        return HAS_INFINITE_INTERVALS and \
            (self.m, self.d, self.t) in (IV_INFINITY, IV_MINUS_INFINITY)

    def approx(self):
        # What dlock computes for a wait or older_than: exact microseconds,
        # a day as 24 hours and a month as 30 days.
        return self.t + self.d * USECS_PER_DAY + self.m * 30 * USECS_PER_DAY

    def __repr__(self):
        return f"Iv(m={self.m}, d={self.d}, us={self.t})"


class IvDumper(Dumper):
    format = Format.BINARY
    oid = 1186                  # interval

    def dump(self, obj):
        return struct.pack(">qii", obj.t, obj.d, obj.m)


class Lit:
    """An interval as a text literal, parsed by PostgreSQL."""
    __slots__ = ("s",)

    def __init__(self, s):
        self.s = s

    def __repr__(self):
        return f"Lit({self.s!r})"


class LitDumper(Dumper):
    format = Format.TEXT
    oid = 1186

    def dump(self, obj):
        return obj.s.encode()


class Raw:
    """Bytes sent as a binary text value, unchecked by the client."""
    __slots__ = ("b",)

    def __init__(self, b):
        self.b = b

    def __repr__(self):
        return f"Raw({self.b[:40]!r}{'...' if len(self.b) > 40 else ''})"


class RawDumper(Dumper):
    format = Format.BINARY
    oid = 25                    # text

    def dump(self, obj):
        return obj.b


def adapt(conn):
    conn.adapters.register_dumper(Iv, IvDumper)
    conn.adapters.register_dumper(Lit, LitDumper)
    conn.adapters.register_dumper(Raw, RawDumper)


def blen(v):
    return len(v.encode()) if isinstance(v, str) else len(v.b)


def show(v):
    if isinstance(v, str):
        b = len(v.encode())
        return repr(v[:24]) + (f"...({b} bytes)" if b > 24 else "")
    return repr(v)


# ---------------------------------------------------------------------------
# Generators
# ---------------------------------------------------------------------------

# Code point ranges by UTF-8 length (no NUL, no surrogates), and characters
# that have bitten someone: quotes, format directives, zero-width and
# right-to-left marks, BOM, replacement character, noncharacters.
POOLS = [(1, 0x20, 0x7e), (1, 0x01, 0x1f), (1, 0x7f, 0x7f),
         (2, 0x80, 0x7ff), (3, 0x800, 0xd7ff), (3, 0xe000, 0xffff),
         (4, 0x10000, 0x10ffff)]
SPECIAL = ("'\"\\%$;{}*/-_:. \t\n\r\u00e9\u00df\u200b\u202e\ufeff\ufffd\ufffe\uffff"
           "\U0001F512\U0010FFFF\U0001D11E")
FITTING = {k: ([p for p in POOLS if p[0] <= k],
           [c for c in SPECIAL if len(c.encode()) <= k]) for k in (1, 2, 3, 4)}


class Gen:
    def __init__(self, rng):
        self.r = rng
        self.tokens = []            # tokens handed out during the run
        self.hot_tokens = {}        # name -> current token
        self.huge_owners = 0
        self.month_days = None      # months -> the days they span from now

    # -- text -------------------------------------------------------------
    def char(self, maxbytes):
        r = self.r
        pools, special = FITTING[min(maxbytes, 4)]
        if r.random() < 0.3:
            return r.choice(special)
        _, lo, hi = r.choice(pools)
        return chr(r.randint(lo, hi))

    def text_of(self, nbytes):
        """Valid UTF-8 of exactly nbytes bytes, without NUL."""
        if nbytes > 4096:
            chunk = self.text_of(1024)
            s = chunk * (nbytes // len(chunk.encode()))
            return s + "a" * (nbytes - len(s.encode()))
        out, n = [], 0
        while n < nbytes:
            c = self.char(nbytes - n)
            out.append(c)
            n += len(c.encode())
        return "".join(out)

    def straddle(self, limit):
        """A multibyte character across the limit, or ending exactly on it."""
        r = self.r
        k = r.choice((2, 3, 4))
        total = limit + r.choice((0, 1, k - 1)) if k > 1 else limit
        total = max(total, k)
        ch = {2: "\u00e9", 3: "\u65e5", 4: "\U0001F512"}[k]
        head = r.choice(("a", "\u00e9", "\u65e5"))
        hb = len(head.encode())
        count = (total - k) // hb
        s = head * count
        s += "a" * (total - k - len(s.encode()))
        return s + ch

    def name(self, hot_share=0.4):
        r = self.r
        x = r.random()
        if x < 0.03:
            return None
        if x < 0.03 + hot_share:
            n = r.choice(HOT_NAMES)
            if r.random() < 0.15:       # a near miss
                n = r.choice((n + " ", n.upper(), n[:-1] or "x", " " + n,
                              n.replace("\u00e9", "e\u0301")))
            return n
        y = r.random()
        if y < 0.15:
            return self.straddle(255)
        if y < 0.3:
            return self.text_of(r.choice((0, 1, 2, 3, 4, 253, 254, 255, 256, 257, 300)))
        return self.text_of(r.randint(0, 300))

    def owner(self):
        r = self.r
        x = r.random()
        if x < 0.4:
            return None
        if x < 0.55:
            return OWNER
        if x < 0.6:
            return ""
        if x < 0.7:
            return self.straddle(255)
        if x < 0.75 and self.huge_owners < 60:
            self.huge_owners += 1
            return self.text_of(int(256 * (4096 ** r.random())))   # 256 B .. 1 MB
        if x < 0.77:
            return "a" * r.choice((255, 256, 1 << 20))
        return self.text_of(r.randint(1, 255))

    # -- tokens ----------------------------------------------------------
    def token(self):
        r = self.r
        x = r.random()
        if x < 0.05:
            return None
        if x < 0.45 and self.hot_tokens:
            t = r.choice(list(self.hot_tokens.values()))
            return t + r.choice((0, 0, 0, 1, -1))
        if x < 0.6 and self.tokens:
            return r.choice(self.tokens[-50:])
        return r.choice((0, 1, -1, INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1,
                         r.randint(INT64_MIN, INT64_MAX), r.randint(1, 10**6)))

    def max_rows(self):
        r = self.r
        return r.choice((None, 0, -1, 1, 2, 1000, INT32_MAX, INT32_MIN,
                         r.randint(INT32_MIN, INT32_MAX), r.randint(1, 100)))

    # -- intervals --------------------------------------------------------
    def lit(self):
        return Lit(self.r.choice((
            "1 day", "10 seconds", "1.5 s", "00:00:00.000001", "-1 us", "0", "@ 1 hour ago",
            "P1Y2M3DT4H5M6S", "PT0.000001S", "1 mon -29 days", "infinity", "-infinity",
            "forever", "", "1 fortnight", "1e400 seconds", "178956971 years",
            "-178956971 years", "2147483648 days", "2562047789 hours",
            "9223372036854775807 microseconds", "-9223372036854775808 microseconds",
            "5965232 years 4 months -2147483640 days", "1 day 1 microsecond",
            "86400 seconds", "86400.000001 seconds", "23:59:59.999999",
            "  1   day  ", "1 DAY", "1 day ago ago")))

    def interval(self, kind, max_ttl):
        """kind: 'ttl', 'wait' or 'older'."""
        r = self.r
        x = r.random()
        if x < 0.04:
            return None
        if x < 0.08:
            return self.lit()
        M = max_ttl * 10**6
        if kind == "wait" and r.random() < 0.6:
            return r.choice((Iv(0, 0, 0), Iv(0, 0, 0), Iv(0, 0, 1), Iv(0, 0, 1000),
                             Iv(0, 0, 5000), Iv(0, 0, -1), Iv(0, 0, r.randint(0, 20000))))
        if kind == "ttl" and r.random() < 0.35:
            return r.choice((
                Iv(0, 0, r.randint(1, 10**7)), Iv(0, 0, r.randint(1, M)),
                Iv(0, 0, M), Iv(0, 0, M + 1), Iv(0, 0, M - 1), Iv(0, 1, 0),
                Iv(0, 1, 1), Iv(0, 1, -1), Iv(0, 0, USECS_PER_DAY),
                Iv(0, 0, USECS_PER_DAY + 1), Iv(0, 0, 1), Iv(0, 0, 0), Iv(0, 0, -1),
                Iv(0, M // USECS_PER_DAY, M % USECS_PER_DAY),
                Iv(0, M // USECS_PER_DAY, M % USECS_PER_DAY + 1),
                Iv(1, 0, 0), Iv(1, -29, 0), Iv(-1, 31, 0), Iv(0, 0, r.randint(-M, 2 * M))))
        y = r.random()
        if y < 0.15:                    # one part alone, anywhere in its range
            part = r.randrange(3)
            if part == 0:
                return Iv(self.big32(), 0, 0)
            if part == 1:
                return Iv(0, self.big32(), 0)
            return Iv(0, 0, self.big64())
        if y < 0.45:                    # parts that nearly cancel
            return self.cancelling(M)
        if y < 0.55 and self.month_days:
            # Months against the days they really span from now: a short
            # ttl on the calendar, far from its 30-day-month estimate.
            m = r.choice((1, -1)) * int(10 ** (6.5 * r.random()))
            days = self.month_days(m)
            if days is not None:
                net = r.choice((1, M // 2, M, M + 1, -1, USECS_PER_DAY // 2))
                return Iv(m, -days + net // USECS_PER_DAY, net % USECS_PER_DAY)
        if y < 0.6:                     # infinite from 17 on, extreme before
            return Iv(*r.choice((IV_INFINITY, IV_MINUS_INFINITY)))
        if y < 0.7:                     # the limits
            return Iv(r.choice((INT32_MIN, INT32_MAX, 0, -1, 1)),
                      r.choice((INT32_MIN, INT32_MAX, 0, -1, 1)),
                      r.choice((INT64_MIN, INT64_MAX, 0, -1, 1)))
        return Iv(self.big32(), self.big32(), self.big64())

    def big32(self):
        r = self.r
        v = int(2 ** (31 * r.random()))
        v = min(v, INT32_MAX)
        return -v if r.random() < 0.5 else v

    def big64(self):
        r = self.r
        v = int(2 ** (63 * r.random()))
        v = min(v, INT64_MAX)
        return -v if r.random() < 0.5 else v

    def cancelling(self, M):
        """Big parts of opposite signs whose sum is near zero or near max_ttl."""
        r = self.r
        net = r.choice((0, 1, -1, M, M + 1, r.randint(-M, 2 * M), USECS_PER_DAY))
        which = r.randrange(3)
        for _ in range(20):
            if which == 0:              # months against days (+ time)
                m = self.big32()
                d = -m * 30 + r.randint(-3, 3)
                if INT32_MIN <= d <= INT32_MAX:
                    t = net - (m * 30 + d) * USECS_PER_DAY
                    if INT64_MIN <= t <= INT64_MAX:
                        return Iv(m, d, t)
                    return Iv(m, d, r.randint(-USECS_PER_DAY, USECS_PER_DAY))
            elif which == 1:            # days against time
                d = self.big32()
                t = net - d * USECS_PER_DAY
                if INT64_MIN <= t <= INT64_MAX:
                    return Iv(0, d, t)
            else:                       # months against time
                m = self.big32()
                t = net - m * MONTH_US
                if INT64_MIN <= t <= INT64_MAX:
                    return Iv(m, 0, t)
            which = r.randrange(3)
        return Iv(0, 0, net)

    def raw(self):
        r = self.r
        return Raw(r.choice((b"ab\xff", b"\xc3", b"a\x00b", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                             b"\xc0\xaf", b"\x00", b"hot/anon\x00x", b"\xe2\x82")))


# ---------------------------------------------------------------------------
# What the README says must happen, where the arguments alone decide it
# ---------------------------------------------------------------------------

class Expect:
    """Possible outcomes: SQLSTATEs and 'ok'.  exact: decided by the arguments."""

    def __init__(self):
        self.codes = set()
        self.done = False
        self.ttl_real = None        # the ttl's real length in microseconds, if known
        self.ttl_nominal = None     # its nominal length (24-hour days, 30-day months)

    def add(self, *codes):
        if not self.done:
            self.codes.update(codes)

    def must(self, code):
        if not self.done:
            self.codes.add(code)
            self.done = True


def pre_dlock(args, parse_errors):
    """A SQLSTATE PostgreSQL raises before dlock runs, or None."""
    for a in args:
        if isinstance(a, Raw):
            return "22021"
        if isinstance(a, Lit) and parse_errors.get(a.s):
            return parse_errors[a.s]
    return None


def exp_name(e, v):
    if v is None:
        e.must("22004")
    elif isinstance(v, str) and (blen(v) == 0 or blen(v) > 255):
        e.must("22023")


def exp_token(e, v):
    if v is None:
        e.must("22004")


def exp_fence_token(e, v):
    """A NULL token in a fenced row, with no declared token: LK001 (1.1)."""
    if v is None:
        e.must("LK001")


def exp_ttl(e, v, ctx):
    """A ttl is valid if it can be added to clock_timestamp() on the
    server's calendar, its real length (that sum minus clock_timestamp()) is
    above 0 and at most dlock.max_ttl (plus an hour with days or months),
    and its nominal length (24-hour days, 30-day months) is above 0 and at
    most dlock.max_ttl; otherwise 22023."""
    if e.done:
        return                      # decided by an earlier argument
    if v is None:
        e.must("22004")
        return
    if isinstance(v, Iv) and v.infinite():
        e.must("22023")             # "ttl must be finite" (17+)
        return
    if isinstance(v, Iv) and v.m == 0 and (ctx.tz == "UTC" or v.d == 0) and \
            (v.d == 0 or v.t == 0 or (v.d > 0) == (v.t > 0)):
        real = v.t + v.d * USECS_PER_DAY
    else:
        real = ctx.calendar(v)      # None: the server cannot add it to now
    if isinstance(v, Iv):
        nominal = v.approx()
    else:
        # A literal's nominal length from its parts as the server parses
        # them (its real length differs: "1 mon -29 days" is 1 day nominal,
        # 2 days of calendar from a 31-day month).
        nominal = ctx.nominal(v)
        if nominal is None:
            nominal = real
    e.ttl_real = real
    e.ttl_nominal = nominal
    # The real length is bounded too (1.1): by dlock.max_ttl, plus an hour
    # for a ttl with days or months (a day may last 25 hours).
    limit = ctx.max_ttl * 10**6
    if isinstance(v, Iv):
        slack = 3600 * 10**6 if (v.m or v.d) else 0
    else:
        slack = None                # parts unknown: either answer near the limit
    hard = limit + (slack if slack is not None else 3600 * 10**6)
    if real is None or real <= 0 or nominal is None or nominal <= 0 or \
            nominal > limit or real > hard:
        e.must("22023")
    elif slack is None and real > limit:
        e.add("22023")


def exp_duration(e, v):
    """wait and older_than: negative and (17+) infinite ones are refused,
    counting a day as 24 hours and a month as 30 days, exactly."""
    if v is None:
        e.must("22004")
    elif isinstance(v, Iv) and v.infinite():
        e.must("22023")
    elif isinstance(v, Lit):
        e.add("22023")
    elif v.approx() < 0:
        e.must("22023")


def exp_owner(e, v):
    if isinstance(v, str) and (blen(v) == 0 or blen(v) > 255):
        e.must("22023")


def exp_readonly(e, ctx):
    if ctx.txn == "ro":
        e.must("25006")


def waits(v):
    return v is None or not isinstance(v, Iv) or v.approx() > 0


# ---------------------------------------------------------------------------
# The calls
# ---------------------------------------------------------------------------

class Call:
    __slots__ = ("fn", "query", "args", "expect", "nochange_if", "may_wait")

    def __init__(self, fn, query, args, expect, nochange_if, may_wait=False):
        self.fn, self.query, self.args = fn, query, args
        self.expect, self.nochange_if, self.may_wait = expect, nochange_if, may_wait


FENCE_COL_TABLES = ("fz_col_text", "fz_col_varchar", "fz_part")
# Tables whose trigger names its lock: fz_fixed_K for some of the known names.
FENCE_FIXED = [(f"fz_fixed_{k}", HOT_NAMES[i]) for k, i in enumerate((0, 1, 5, 6))]
FENCE_FIXED_TABLES = [t for t, _ in FENCE_FIXED]
# table -> (the trigger's arguments, or AFTER / STATEMENT for a trigger of the
# wrong kind; what an insert must raise)
FENCE_BAD = {
    "fz_bad_nocol": ("'hot/anon', 'nosuch'", "42703"),
    "fz_bad_tokentype": ("'hot/anon', 'token4'", "42804"),
    "fz_bad_nametype": ("'nameint', 'token', 'column'", "42804"),
    "fz_bad_noname": ("'nosuch', 'token', 'column'", "42703"),
    "fz_bad_onearg": ("'hot/anon'", "22023"),
    "fz_bad_fourargs": ("'hot/anon', 'token', 'name', 'x'", "22023"),
    "fz_bad_kind": ("'hot/anon', 'token', 'sideways'", "22023"),
    "fz_bad_longname": ("'" + "n" * 256 + "', 'token'", "22023"),
    "fz_bad_emptyname": ("'', 'token'", "22023"),
    "fz_bad_after": ("AFTER", "39P01"),
    "fz_bad_statement": ("STATEMENT", "39P01"),
}


def make_call(g, ctx, parse_errors):
    r = g.r
    fn = r.choices(("acquire", "release", "renew", "check", "assert", "remaining", "cleanup",
                    "fence"),
                   (30, 12, 12, 12, 12, 8, 5, 17))[0]
    e = Expect()
    if fn == "acquire":
        name = g.raw() if r.random() < 0.01 else g.name(0.25)
        ttl = g.interval("ttl", ctx.max_ttl)
        wait = g.interval("wait", ctx.max_ttl)
        owner = g.owner()
        form = r.random()
        if form < 0.1:
            q, args, wait, owner = "SELECT dlock_acquire(%s, %s)", (name, ttl), Iv(0, 0, 0), None
        elif form < 0.2:
            q, args, owner = "SELECT dlock_acquire(%s, %s, %s)", (name, ttl, wait), None
        elif form < 0.3:
            q, args, wait = "SELECT dlock_acquire(%s, %s, owner => %s)", (name, ttl, owner), \
                Iv(0, 0, 0)
        else:
            q, args = "SELECT dlock_acquire(%s, %s, %s, %s)", (name, ttl, wait, owner)
        pre = pre_dlock(args, parse_errors)
        if pre:
            e.must(pre)
        exp_name(e, name)
        exp_ttl(e, ttl, ctx)
        exp_duration(e, wait)
        exp_owner(e, owner)
        exp_readonly(e, ctx)
        e.add("ok")
        return Call(fn, q, args, e, (None,), may_wait=waits(wait))
    if fn in ("release", "check", "assert", "remaining"):
        name = g.raw() if r.random() < 0.01 else g.name(0.6)
        token = g.token()
        q = {"release": "SELECT dlock_release(%s, %s::bigint)",
             "check": "SELECT dlock_check(%s, %s::bigint)",
             "assert": "SELECT dlock_assert(%s, %s::bigint)::text",
             "remaining": "SELECT dlock_remaining(%s, %s::bigint) IS NOT NULL"}[fn]
        pre = pre_dlock((name,), parse_errors)
        if pre:
            e.must(pre)
        exp_name(e, name)
        exp_token(e, token)
        if fn == "release":
            exp_readonly(e, ctx)
        if ctx.role:
            e.add("42501")          # 1.1: another role's right token, checked too
        if fn == "assert":
            e.add("LK001")
        e.add("ok")
        nochange = (False,) if fn == "release" else (True, False, "")
        return Call(fn, q, (name, token), e, nochange)
    if fn == "renew":
        name = g.raw() if r.random() < 0.01 else g.name(0.6)
        token = g.token()
        ttl = g.interval("ttl", ctx.max_ttl)
        q = "SELECT dlock_renew(%s, %s::bigint, %s)"
        pre = pre_dlock((name, ttl), parse_errors)
        if pre:
            e.must(pre)
        exp_name(e, name)
        exp_token(e, token)
        exp_ttl(e, ttl, ctx)
        exp_readonly(e, ctx)
        if ctx.role:
            e.add("42501")
        e.add("ok")
        return Call(fn, q, (name, token, ttl), e, (False,))
    if fn == "cleanup":
        older = g.interval("older", ctx.max_ttl)
        rows = g.max_rows()
        form = r.random()
        if form < 0.1:
            q, args, older, rows = "SELECT dlock_cleanup()", (), Iv(0, 1, 0), 1000
        elif form < 0.2:
            q, args, rows = "SELECT dlock_cleanup(%s)", (older,), 1000
        else:
            q, args = "SELECT dlock_cleanup(%s, %s::int4)", (older, rows)
        pre = pre_dlock(args, parse_errors)
        if pre:
            e.must(pre)
        if ctx.role:
            e.must("42501")         # EXECUTE is revoked from PUBLIC
        exp_duration(e, older)
        if rows is None:
            e.must("22004")
        elif rows < 1:
            e.must("22023")
        exp_readonly(e, ctx)
        e.add("ok")
        return Call(fn, q, args, e, (0,))
    # The fence trigger.
    token = g.token()
    x = r.random()
    if x < 0.55:
        table = r.choice(FENCE_COL_TABLES)
        name = g.raw() if r.random() < 0.01 else g.name(0.6)
        if r.random() < 0.8:
            if table == "fz_part":
                q = "INSERT INTO fz_part (lockname, token, k) VALUES (%s, %s::bigint, %s)"
                args = (name, token, r.randint(0, 1))
            else:
                q = f"INSERT INTO {table} (lockname, token) VALUES (%s, %s::bigint)"
                args = (name, token)
        else:
            q = f"UPDATE {table} SET lockname = %s, token = %s::bigint WHERE seed"
            args = (name, token)
        pre = pre_dlock((name,), parse_errors)
        if pre:
            e.must(pre)
        exp_readonly(e, ctx)
        exp_name(e, name)
        exp_fence_token(e, token)
        if ctx.role:
            e.add("42501")          # 1.1: the fence is a check
        e.add("LK001", "ok")
    elif x < 0.85:
        table, _ = r.choice(FENCE_FIXED)
        if r.random() < 0.8:
            q, args = f"INSERT INTO {table} (token) VALUES (%s::bigint)", (token,)
        else:
            q, args = f"UPDATE {table} SET token = %s::bigint WHERE seed", (token,)
        exp_readonly(e, ctx)
        exp_fence_token(e, token)
        if ctx.role:
            e.add("42501")          # 1.1: the fence is a check
        e.add("LK001", "ok")
    else:
        table = r.choice(list(FENCE_BAD))
        _, code = FENCE_BAD[table]
        q = (f"INSERT INTO {table} (lockname, token, token4, nameint)"
             " VALUES ('hot/anon', %s::bigint, 1, 1)")
        args = (token,)
        exp_readonly(e, ctx)
        e.must(code)                # the trigger is checked before any row
    return Call("fence", q, args, e, ())


# ---------------------------------------------------------------------------
# The database
# ---------------------------------------------------------------------------

def schema():
    parts = ["""
CREATE EXTENSION dlock;

CREATE TABLE fz_col_text (lockname text, token bigint, seed boolean NOT NULL DEFAULT false);
CREATE TABLE fz_col_varchar (lockname varchar, token bigint, seed boolean NOT NULL DEFAULT false);
CREATE TRIGGER fence BEFORE INSERT OR UPDATE ON fz_col_text
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('lockname', 'token', 'column');
CREATE TRIGGER fence BEFORE INSERT OR UPDATE ON fz_col_varchar
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('lockname', 'token', 'column');

CREATE TABLE fz_part (lockname text, token bigint, k int NOT NULL,
                      seed boolean NOT NULL DEFAULT false) PARTITION BY LIST (k);
CREATE TABLE fz_part_0 (seed boolean NOT NULL DEFAULT false, k int NOT NULL,
                        token bigint, lockname text);
ALTER TABLE fz_part ATTACH PARTITION fz_part_0 FOR VALUES IN (0);
CREATE TABLE fz_part_1 PARTITION OF fz_part FOR VALUES IN (1);
CREATE TRIGGER fence BEFORE INSERT OR UPDATE ON fz_part
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('lockname', 'token', 'column');
"""]
    for i, (table, name) in enumerate(FENCE_FIXED):
        lit = "'" + name.replace("'", "''") + "'"
        parts.append(f"""
CREATE TABLE fz_fixed_{i} (token bigint, seed boolean NOT NULL DEFAULT false);
CREATE TRIGGER fence BEFORE INSERT OR UPDATE ON fz_fixed_{i}
    FOR EACH ROW EXECUTE FUNCTION dlock_fence({lit}, 'token');
""")
    for table, (targs, _) in FENCE_BAD.items():
        parts.append(f"CREATE TABLE {table} "
                     "(lockname text, token bigint, token4 int, nameint int);\n")
        if targs == "AFTER":
            parts.append(f"CREATE TRIGGER fence AFTER INSERT ON {table} FOR EACH ROW "
                         f"EXECUTE FUNCTION dlock_fence('hot/anon', 'token');\n")
        elif targs == "STATEMENT":
            parts.append(f"CREATE TRIGGER fence BEFORE INSERT ON {table} FOR EACH STATEMENT "
                         f"EXECUTE FUNCTION dlock_fence('hot/anon', 'token');\n")
        else:
            parts.append(f"CREATE TRIGGER fence BEFORE INSERT OR UPDATE ON {table} FOR EACH ROW "
                         f"EXECUTE FUNCTION dlock_fence({targs});\n")
    parts.append("""
GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO dlock_fuzz_other;

-- What a failing call must leave unchanged: the row versions visible now
-- (any committed insert, update or delete changes them) and the sequence.
CREATE FUNCTION fz_fingerprint(OUT leases text, OUT fenced text) LANGUAGE sql AS $$
SELECT md5(coalesce((SELECT string_agg(ctid::text || xmin::text, ',' ORDER BY ctid)
                       FROM dlock_lease), ''))
    || ' ' || (SELECT last_value || ':' || is_called FROM dlock_token_seq),
    md5(coalesce((SELECT string_agg(t, ',' ORDER BY t) FROM (
           SELECT tableoid::regclass || ctid::text || xmin::text FROM fz_col_text UNION ALL
           SELECT tableoid::regclass || ctid::text || xmin::text FROM fz_col_varchar UNION ALL
           SELECT tableoid::regclass || ctid::text || xmin::text FROM fz_part UNION ALL
           SELECT tableoid::regclass || ctid::text || xmin::text FROM fz_fixed_0 UNION ALL
           SELECT tableoid::regclass || ctid::text || xmin::text FROM fz_fixed_1 UNION ALL
           SELECT tableoid::regclass || ctid::text || xmin::text FROM fz_fixed_2 UNION ALL
           SELECT tableoid::regclass || ctid::text || xmin::text FROM fz_fixed_3) AS f(t)), ''))
$$;
""")
    return "".join(parts)


class Ctx:
    def __init__(self):
        self.calendar = None
        self.nominal = None
        self.txn = "auto"
        self.role = False
        self.max_ttl = 86400
        self.tz = "UTC"
        self.timeout = "lock"

    def __repr__(self):
        return (f"txn={self.txn} role={'dlock_fuzz_other' if self.role else 'superuser'} "
                f"max_ttl={self.max_ttl}s tz={self.tz} timeout={self.timeout}")


def reset(obs, g):
    """Put the known leases back in their states; drop everything else."""
    with obs.transaction():
        obs.execute("SET LOCAL session_replication_role = replica")
        obs.execute("DELETE FROM dlock_lease WHERE name <> ALL(%s)", (HOT_NAMES,))
        for t in ("fz_col_text", "fz_col_varchar", "fz_part") + tuple(FENCE_FIXED_TABLES):
            obs.execute(f"TRUNCATE {t}")
    for name, state in HOT:
        obs.execute("SELECT dlock_release(name, token) FROM dlock_leases "
                    "WHERE name = %s AND held", (name,))
        if state == "never":
            obs.execute("DELETE FROM dlock_lease WHERE name = %s", (name,))
        elif state == "anon":
            obs.execute("SELECT dlock_acquire(%s, '1 hour')", (name,))
        elif state == "owned":
            obs.execute("SELECT dlock_acquire(%s, '1 hour', '0', %s)", (name, OWNER))
        elif state == "released":
            t = obs.execute("SELECT dlock_acquire(%s, '1 hour')", (name,)).fetchone()[0]
            obs.execute("SELECT dlock_release(%s, %s)", (name, t))
        elif state == "expired":
            obs.execute("SELECT dlock_acquire(%s, '1 microsecond')", (name,))
        elif state == "other":
            with obs.transaction():
                obs.execute("SET LOCAL ROLE dlock_fuzz_other")
                obs.execute("SELECT dlock_acquire(%s, '1 hour', '0', %s)", (name, OWNER))
    g.hot_tokens = dict(obs.execute(
        "SELECT name, token FROM dlock_lease WHERE name = ANY(%s)", (HOT_NAMES,)).fetchall())
    with obs.transaction():
        obs.execute("SET LOCAL session_replication_role = replica")
        hot = g.hot_tokens.get(HOT_NAMES[0], 0)
        for t in ("fz_col_text", "fz_col_varchar"):
            obs.execute(f"INSERT INTO {t} (lockname, token, seed) VALUES (%s, %s, true)",
                        (HOT_NAMES[0], hot))
        obs.execute("INSERT INTO fz_part (lockname, token, k, seed) VALUES (%s, %s, 0, true)",
                    (HOT_NAMES[0], hot))
        for t, n in FENCE_FIXED:
            obs.execute(f"INSERT INTO {t} (token, seed) VALUES (%s, true)",
                        (g.hot_tokens.get(n, 0),))


def set_context(conn, ctx, r):
    ctx.txn = "auto"
    ctx.role = r.random() < 0.15
    ctx.max_ttl = r.choice((86400, 86400, 1, 60, 3600, 31536000, INT32_MAX))
    ctx.tz = r.choice(("UTC", "UTC", "UTC", "America/New_York", "Australia/Lord_Howe",
                       "Pacific/Kiritimati"))
    ctx.timeout = "statement" if r.random() < 0.15 else "lock"
    conn.execute("RESET ROLE")
    conn.execute(f"SET dlock.max_ttl = {ctx.max_ttl}")
    conn.execute(sql.SQL("SET timezone = {}").format(sql.Literal(ctx.tz)))
    if ctx.timeout == "lock":
        conn.execute("SET lock_timeout = '10ms'")
        conn.execute("SET statement_timeout = '5s'")
    else:
        conn.execute("SET lock_timeout = 0")
        conn.execute("SET statement_timeout = '25ms'")
    if ctx.role:
        conn.execute("SET ROLE dlock_fuzz_other")


# ---------------------------------------------------------------------------
# Running it
# ---------------------------------------------------------------------------

class Crash(Exception):
    pass


class Run:
    def __init__(self, conn, obs, g, parse_errors):
        self.conn, self.obs, self.g = conn, obs, g
        self.parse_errors = parse_errors
        self.calls = 0
        self.by_fn = {}
        self.codes = {}
        self.problems = {"crash": [], "internal": [], "undocumented": [], "expect": [],
                         "reason": [],
                         "changed": [], "invariant": []}
        self.failed_calls = 0
        self.unchanged_ok = 0
        self.mutating_ok = 0
        self.pre_dlock = 0
        self.fp = None
        self.undoc_codes = {}

    def fingerprint(self):
        return tuple(self.obs.execute("SELECT * FROM fz_fingerprint()").fetchone())

    def one(self, call, ctx):
        conn = self.conn
        err = None
        result = None
        try:
            if ctx.txn == "auto":
                cur = conn.execute(call.query, call.args)
                result = cur.fetchone()[0] if cur.description else "ok"
            else:
                conn.execute({"ro": "BEGIN READ ONLY",
                              "rr": "BEGIN ISOLATION LEVEL REPEATABLE READ",
                              "ser": "BEGIN ISOLATION LEVEL SERIALIZABLE"}[ctx.txn])
                try:
                    cur = conn.execute(call.query, call.args)
                    result = cur.fetchone()[0] if cur.description else "ok"
                    conn.execute("COMMIT")
                except psycopg.Error:
                    if not conn.closed:
                        conn.execute("ROLLBACK")
                    raise
        except psycopg.Error as e:
            if conn.closed or conn.broken or isinstance(e, psycopg.OperationalError) \
                    and e.sqlstate is None:
                raise Crash(f"{call.fn}: {type(e).__name__}: {str(e).strip()}")
            err = e
        return result, err

    def check(self, call, ctx):
        self.calls += 1
        self.by_fn[call.fn] = self.by_fn.get(call.fn, 0) + 1
        before = self.fp
        result, err = self.one(call, ctx)
        after = self.fingerprint()
        self.fp = after
        code = "ok" if err is None else err.sqlstate or f"client-side {type(err).__name__}"
        self.codes[code] = self.codes.get(code, 0) + 1
        where = (f"{call.query[:50]} ({', '.join(show(a) for a in call.args)}) [{ctx}]")
        msg = f" -> {code}: {str(err).strip().splitlines()[0]}" if err is not None else \
            f" -> {result!r}"
        undocumented = False
        if err is not None:
            self.failed_calls += 1
            if code in ("XX000",) or code[:2] in ("XX", "58"):
                self.problems["internal"].append(where + msg)
            allowed = DOCUMENTED | (FENCE_SETUP if call.fn == "fence" else set())
            if any(isinstance(a, Raw) for a in call.args):
                allowed = allowed | ENCODING
            for a in call.args:
                if isinstance(a, Lit) and self.parse_errors.get(a.s):
                    allowed = allowed | {self.parse_errors[a.s]}
            if code not in allowed:
                undocumented = True
                self.problems["undocumented"].append(where + msg)
                self.undoc_codes[code] = self.undoc_codes.get(code, 0) + 1
            if code in ENCODING or code in LITERAL:
                self.pre_dlock += 1
            if after != before:
                self.problems["changed"].append(where + msg)
        else:
            if call.fn == "acquire" and isinstance(result, int):
                self.g.tokens.append(result)
            if call.fn == "fence" and after[0] != before[0]:
                self.problems["changed"].append(where + msg + " (a fenced write changed "
                                                "the lease table)")
            if result in call.nochange_if:
                self.unchanged_ok += 1
                if after != before:
                    self.problems["changed"].append(where + msg + " (a no-op result)")
            else:
                self.mutating_ok += 1
        # The reason a ttl was refused, when it was right to refuse it.
        if code == "22023" and call.expect.ttl_real is not None and \
                code in call.expect.codes:
            text = str(err)
            real = call.expect.ttl_real
            nominal = call.expect.ttl_nominal
            positive = real > 0 and nominal is not None and nominal > 0
            if (text.startswith("ttl must be positive") and positive) or \
                    (text.startswith("ttl exceeds") and not positive):
                self.problems["reason"].append(
                    where + msg + f" (but the ttl's real length is {real} us)")
        # The README's answer, where the arguments decide it (an undocumented
        # SQLSTATE is reported above, once).
        timeouts = {"55P03"} if ctx.timeout == "lock" else {"57014"}
        if code not in call.expect.codes and not undocumented and not (
                call.may_wait and call.fn == "acquire" and code in timeouts) and not (
                ctx.timeout == "statement" and code == "57014"):
            self.problems["expect"].append(
                where + msg + f" (expected one of {sorted(call.expect.codes)}" +
                (f"; the ttl's real length is {call.expect.ttl_real} us, "
                 f"dlock.max_ttl {ctx.max_ttl} s)" if call.expect.ttl_real is not None
                 else ")"))

    def health(self, pid, started):
        try:
            if self.conn.execute("SELECT pg_backend_pid()").fetchone()[0] != pid:
                raise Crash("the fuzz connection is served by another backend")
            if self.obs.execute("SELECT 1").fetchone()[0] != 1:
                raise Crash("SELECT 1 failed")
            if self.obs.execute("SELECT pg_postmaster_start_time()").fetchone()[0] != started:
                raise Crash("the postmaster restarted")
        except psycopg.Error as e:
            raise Crash(f"health check: {str(e).strip()}")
        bad = self.obs.execute("""
            SELECT count(*) FILTER (WHERE token > (SELECT last_value FROM dlock_token_seq)),
                   count(*) FILTER (WHERE expires_at <= acquired_at),
                   count(*) - count(DISTINCT token)
              FROM dlock_lease""").fetchone()
        if any(bad):
            self.problems["invariant"].append(
                f"lease rows: {bad[0]} with a token above the sequence, {bad[1]} expiring "
                f"before they were acquired, {bad[2]} sharing a token")


def server_log():
    pgdata = os.environ.get("PGDATA")
    if not pgdata:
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(pgdata)), "server.log")
    return path if os.path.isfile(path) else None


def main():
    t0 = time.monotonic()
    tap = Tap()
    print("1..9")
    rng = random.Random(SEED)
    g = Gen(rng)
    log = server_log()
    log_from = os.path.getsize(log) if log else 0
    touched = False
    run = None
    crash = None
    try:
        try:
            with psycopg.connect(autocommit=True) as c:
                touched = True
                c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                          .format(sql.Identifier(DB)))
                c.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DB)))
                c.execute("DROP ROLE IF EXISTS dlock_fuzz_other")
                c.execute("CREATE ROLE dlock_fuzz_other NOLOGIN")
            with psycopg.connect(dbname=DB, autocommit=True) as c:
                c.execute(schema())
            obs = psycopg.connect(dbname=DB, autocommit=True, application_name="fuzz-observer")
            conn = psycopg.connect(dbname=DB, autocommit=True, application_name="fuzz",
                                   prepare_threshold=None)
            adapt(obs)
            adapt(conn)
            global HAS_INFINITE_INTERVALS
            HAS_INFINITE_INTERVALS = obs.execute(
                "SELECT current_setting('server_version_num')::int >= 170000").fetchone()[0]
            print(f"# infinite intervals: {'yes (17+)' if HAS_INFINITE_INTERVALS else 'no'}")
            # Which literals PostgreSQL itself rejects, and with what.
            parse_errors = {}
            for lit in set(g.lit().s for _ in range(2000)):
                try:
                    obs.execute("SELECT %s::interval::text", (Lit(lit),))
                    parse_errors[lit] = None
                except psycopg.Error as e:
                    parse_errors[lit] = e.sqlstate
            bad_lits = {k: v for k, v in parse_errors.items() if v}
            if any(v not in LITERAL for v in bad_lits.values()):
                print(f"# literals rejected with other codes: {bad_lits}")
        except psycopg.Error as e:
            tap.check(f"set up database {DB}", [str(e).strip()])
            return 1

        pid = conn.info.backend_pid
        started = obs.execute("SELECT pg_postmaster_start_time()").fetchone()[0]
        run = Run(conn, obs, g, parse_errors)
        ctx = Ctx()

        def calendar(v):
            # None when the sum is out of range, or (17+) infinite.
            try:
                x = obs.execute(
                    "SELECT (extract(epoch FROM t + %s) - extract(epoch FROM t))"
                    "       * 1000000 FROM (SELECT clock_timestamp() AS t) AS s",
                    (v,)).fetchone()[0]
            except psycopg.Error:
                return None
            return int(x) if x is not None and math.isfinite(x) else None
        ctx.calendar = calendar

        def nominal(v):
            # months, days and microseconds of an interval literal, as 24-hour
            # days and 30-day months; None if it is infinite or unparseable.
            try:
                m, d, t = obs.execute(
                    "SELECT extract(year FROM i) * 12 + extract(month FROM i),"
                    "       extract(day FROM i),"
                    "       (extract(hour FROM i) * 3600 + extract(minute FROM i) * 60)"
                    "       * 1000000 + extract(microseconds FROM i)"
                    "  FROM (SELECT %s::interval AS i) AS s", (v,)).fetchone()
            except psycopg.Error:
                return None
            if not all(x is not None and math.isfinite(x) for x in (m, d, t)):
                return None
            return Iv(int(m), int(d), int(t)).approx()
        ctx.nominal = nominal

        def month_days(m):
            try:
                return int(obs.execute(
                    "SELECT (extract(epoch FROM t + make_interval(months => %s))"
                    "        - extract(epoch FROM t)) / 86400"
                    "  FROM (SELECT date_trunc('day', clock_timestamp()) AS t) AS s",
                    (m,)).fetchone()[0])
            except psycopg.Error:
                return None
        g.month_days = month_days
        contexts = {}
        try:
            while run.calls < CALLS:
                set_context(conn, ctx, rng)
                obs.execute(sql.SQL("SET timezone = {}").format(sql.Literal(ctx.tz)))
                reset(obs, g)
                run.fp = run.fingerprint()
                for _ in range(min(BATCH, CALLS - run.calls)):
                    ctx.txn = rng.choices(("auto", "ro", "rr", "ser"), (70, 10, 10, 10))[0]
                    key = f"{ctx.txn}{'/role' if ctx.role else ''}"
                    contexts[key] = contexts.get(key, 0) + 1
                    run.check(make_call(g, ctx, parse_errors), ctx)
                run.health(pid, started)
        except Crash as e:
            crash = str(e)
        elapsed = time.monotonic() - t0

        p = run.problems
        print(f"# {run.calls} calls in {elapsed:.1f} s, seed {SEED}: " +
              ", ".join(f"{k} {v}" for k, v in sorted(run.by_fn.items())))
        print("# outcomes: " + ", ".join(f"{k} {v}" for k, v in
                                         sorted(run.codes.items(), key=lambda kv: -kv[1])))
        print(f"# failed calls: {run.failed_calls} (rejected by PostgreSQL before dlock: "
              f"{run.pre_dlock}); successful calls that changed nothing: "
              f"{run.unchanged_ok}, that changed state: {run.mutating_ok}")
        print("# contexts: " + ", ".join(f"{k} {v}" for k, v in sorted(contexts.items())))
        print(f"# owners of 256 bytes to 1 MB: {g.huge_owners}")

        tap.check("no crash: same backend after every batch, postmaster never restarted, "
                  "SELECT 1 works", [crash] if crash else [])
        tap.check("no internal error (XX000, class XX or 58)", p["internal"])
        tap.check("only documented SQLSTATEs" +
                  (f" (undocumented: {run.undoc_codes})" if run.undoc_codes else ""),
                  p["undocumented"])
        tap.check("the SQLSTATE the README gives where the arguments decide it",
                  p["expect"])
        tap.check("a refused ttl is refused for the right reason (not positive, or above "
                  "dlock.max_ttl, by its real length on the calendar)", p["reason"])
        tap.check(f"{run.failed_calls} failed calls left the lease table, the token "
                  f"sequence and the fenced tables unchanged, and so did "
                  f"{run.unchanged_ok} calls that did nothing", p["changed"])
        tap.check("lease invariants hold after every batch", p["invariant"])
        problems = []
        if run.calls < 10000:
            problems.append(f"only {run.calls} calls")
        for fn in ("acquire", "release", "renew", "check", "assert", "remaining", "cleanup",
                   "fence"):
            if run.by_fn.get(fn, 0) < 100:
                problems.append(f"only {run.by_fn.get(fn, 0)} calls of {fn}")
        for code in ("22004", "22023", "25006", "42501", "LK001", "ok"):
            if run.codes.get(code, 0) == 0:
                problems.append(f"no call ended with {code}")
        tap.check(f"at least 10,000 calls, every function, every documented input "
                  f"error: {run.calls} calls", problems)
        if log:
            with open(log, "rb") as f:
                f.seek(log_from)
                text = f.read().decode("utf-8", "replace")
            bad = [ln for ln in text.splitlines()
                   if re.search(r"terminated by signal|was terminated|TRAP:|PANIC:|"
                                r"exited with exit code|server process .* was", ln)]
            tap.check(f"the server log ({len(text.splitlines())} new lines) shows no "
                      f"crashed backend", bad)
        else:
            tap.check("the server log shows no crashed backend", [],
                      skip="no server.log beside $PGDATA")
        print(f"# {time.monotonic() - t0:.1f} s in all; "
              f"{'all passed' if not tap.failed else f'{tap.failed} failed'}")
        return 1 if tap.failed else 0
    except Exception as e:
        tap.check(f"the test ran: {type(e).__name__}: {e}",
                  traceback.format_exc().rstrip().splitlines()[-6:])
        return 1
    finally:
        if touched and not KEEP:
            # After a crash the server may still be recovering: retry a while.
            for attempt in range(30):
                try:
                    with psycopg.connect(autocommit=True) as c:
                        c.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                                  .format(sql.Identifier(DB)))
                        c.execute("DROP ROLE IF EXISTS dlock_fuzz_other")
                    break
                except psycopg.Error as e:
                    if attempt == 29:
                        print(f"# could not drop database {DB}: {str(e).strip()}")
                    time.sleep(0.5)


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    sys.exit(main())
