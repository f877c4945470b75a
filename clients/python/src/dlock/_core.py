# Copyright (c) 2026, the dlock developers
"""The logic of a lease, shared by dlock (threads) and dlock.aio (asyncio).

Nothing here does I/O.  Every operation (acquire, renew, release, fence, the
leader's campaign) is a generator that yields what it needs done and gets
the result sent back:

- ``Execute``: statements in one transaction on the lease's own connection
  (committed when the step returns); the first row of each, with the
  time (``now()``) at which it was sent;
- ``OnCursor``: one statement on the caller's cursor, in the caller's
  transaction;
- ``Sleep``: a pause that ends early, with True, when the lease's owner asks
  the loop to stop.

``dlock._drive`` runs these generators with psycopg's ``Connection`` or
``AsyncConnection``.  A failed operation is thrown back into the generator,
so the decisions (what is busy, what is lost, when to retry, when to give
up) are written once, here.
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Generator, Optional, Tuple, TypeVar, Union

import psycopg
from psycopg import pq

from ._errors import Busy, Error, LeaseLost, STALE_TOKEN_SQLSTATE, stale_token_from

log = logging.getLogger("dlock")


def _boottime() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


# The clock of every deadline: one that counts the time a suspended machine
# (a laptop's lid, a paused VM) was asleep, so that a lease whose time ran
# out meanwhile is lost on resume.  now() stops during a suspend
# on Linux; CLOCK_BOOTTIME does not.  Elsewhere, monotonic().
now: Callable[[], float] = _boottime if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic

# The longest owner label: the server takes 255 bytes, and the client adds
# ":<pid>:<12 hex digits>" to it (see make_owner_id).
OWNER_MAX_BYTES = 200


def make_owner_id(owner: Optional[str]) -> Optional[str]:
    """The owner string sent to the server for a label: ``<owner>:<pid>:<random>``.

    Two processes, or two contexts of one process, with the same label never
    send the same string, so the server never takes one for the other (its
    owner renewal would hand both the same lease and token)."""
    if owner is None:
        return None
    if not isinstance(owner, str) or not owner:
        raise ValueError("owner must be a non-empty string or None")
    if len(owner.encode()) > OWNER_MAX_BYTES:
        raise ValueError(f"owner must be at most {OWNER_MAX_BYTES} bytes")
    return f"{owner}:{os.getpid()}:{secrets.token_hex(6)}"

T = TypeVar("T")
Params = Tuple[Any, ...]
Row = Optional[Tuple[Any, ...]]


@dataclass(frozen=True)
class Execute:
    """Run statements in one transaction on the lease's connection.

    Sends back a list of ``(first row or None, now() when sent)``.  With a
    timeout (seconds) the executor gives up with ``TimeoutError`` and
    discards the connection (closed, or shut down when it is the
    application's: it is never used again).
    """

    statements: Tuple[Tuple[str, Params], ...]
    timeout: Optional[float] = None


@dataclass(frozen=True)
class OnCursor:
    """Run one statement on the caller's cursor, in the caller's transaction."""

    cursor: Any
    sql: str
    params: Params


@dataclass(frozen=True)
class Sleep:
    """Pause; sends back True if asked to stop meanwhile (or before)."""

    seconds: float


Op = Union[Execute, OnCursor, Sleep]
Step = Generator[Op, Any, T]

# The functions are found through the connection's search_path.
ACQUIRE_SQL = "SELECT dlock_acquire(%s, %s, %s, %s)"
# With a minimum hold (dlock 1.2): released earlier, the name stays
# unavailable until acquired_at + min_hold.
ACQUIRE_MIN_HOLD_SQL = "SELECT dlock_acquire(%s, %s, %s, %s, min_hold => %s)"
RENEW_SQL = "SELECT dlock_renew(%s, %s, %s)"
RELEASE_SQL = "SELECT dlock_release(%s, %s)"
ASSERT_SQL = "SELECT dlock_assert(%s, %s)"
# Read in the transaction that acquired or renewed, after it: the expiry the
# server just set, and the server's clock now, to count the time left with a
# clock of its own (now(), never the client's wall clock).
EXPIRY_SQL = "SELECT expires_at, clock_timestamp() FROM dlock_leases WHERE name = %s"


def seconds(value: Union[int, float, timedelta], what: str, *, zero_ok: bool) -> float:
    """Seconds (int or float) or a timedelta, as a float; checked."""
    if isinstance(value, timedelta):
        s = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        s = float(value)
    else:
        raise TypeError(f"{what} must be seconds (int or float) or a datetime.timedelta, "
                        f"not {type(value).__name__}")
    if not math.isfinite(s) or s < 0 or (s == 0 and not zero_ok):
        raise ValueError(f"{what} must be {'zero or more' if zero_ok else 'more than zero'} "
                         f"seconds and finite, not {value!r}")
    return s



def leader_timing(owner: str, ttl: Union[int, float, timedelta],
                  retry: Optional[Union[int, float, timedelta]]) -> Tuple[float, float]:
    """A leader's checked (ttl, retry) in seconds: retry defaults to a third
    of the ttl.  A leader needs an owner label of its own."""
    if not owner:
        raise ValueError("a leader needs an owner label of its own (e.g. the host name)")
    t = seconds(ttl, "ttl", zero_ok=False)
    return t, (t / 3 if retry is None else seconds(retry, "retry", zero_ok=False))

def check_idle(status: pq.TransactionStatus) -> None:
    """A connection handed to dlock.lease must not be inside a transaction."""
    if status != pq.TransactionStatus.IDLE:
        raise Error("the connection passed to dlock.lease() is inside a transaction "
                    f"({status.name}): the acquire must commit before the block runs; "
                    "commit or roll back first, or pass a connection string")


class LeaseBase:
    """The state of one lease, shared by ``dlock.Lease`` and ``dlock.aio.AsyncLease``.

    Thread-safe: the renewer updates it from its own thread (or task).  It
    belongs to the process that created it: in a forked child it is lost,
    and releasing it there does nothing (see ``foreign``).
    """

    name: str
    owner: Optional[str]
    owner_id: Optional[str]
    token: int
    expires_at: datetime

    def __init__(self, name: str, ttl: float, owner: Optional[str],
                 on_lost: Optional[Callable[[Any], object]], *, reacquire: bool = False,
                 owner_id: Optional[str] = None) -> None:
        self.name = name
        self.owner = owner
        # What the server sees: the label, this process and a random part.
        self.owner_id = owner_id if owner_id is not None else make_owner_id(owner)
        self._pid = os.getpid()
        self.token = 0
        self._ttl = ttl
        self._on_lost = on_lost
        # Leader terms renew by acquiring again with their owner (the
        # leader-election loop); plain leases with dlock_renew.
        self._reacquire = reacquire
        self._lock = threading.Lock()
        self._sent = 0.0  # now() when the last confirmation was sent
        self._deadline = 0.0  # now() until which the lease surely holds
        self._lost_reason: Optional[str] = None
        self._ended = False  # released or lost: no more statements for it

    # --- what the application reads -------------------------------------

    @property
    def ttl(self) -> timedelta:
        """The lease's time to live, as given."""
        return timedelta(seconds=self._ttl)

    def _foreign(self) -> bool:
        """True in a process other than the one that acquired the lease (a
        forked child): there the lease is not held, and nothing is sent."""
        return os.getpid() != self._pid

    @property
    def lost(self) -> bool:
        """True once the lease is known to be lost, or its deadline has passed.

        The deadline is the last expiry the server confirmed, counted on a
        clock that also counts a suspended machine, from when that
        confirmation was asked for; the server's lease ends no earlier.
        False after a clean release.  Always True in a forked child.
        """
        if self._foreign():
            return True
        with self._lock:
            if self._lost_reason is not None:
                return True
            return not self._ended and now() >= self._deadline

    @property
    def lost_reason(self) -> Optional[str]:
        """Why the lease was lost, or None."""
        if self._foreign():
            return (f"the lease belongs to process {self._pid}; this process "
                    f"({os.getpid()}) is a fork of it")
        with self._lock:
            if self._lost_reason is None and not self._ended and now() >= self._deadline:
                return "not renewed before its deadline"
            return self._lost_reason

    def remaining(self) -> float:
        """Seconds the lease is sure to be held for, from the last confirmed
        expiry; 0.0 when lost or released."""
        if self._foreign():
            return 0.0
        with self._lock:
            if self._ended or self._lost_reason is not None:
                return 0.0
            return max(0.0, self._deadline - now())

    def __repr__(self) -> str:
        state = "lost" if self.lost else ("released" if self._ended else "held")
        return f"<{type(self).__name__} {self.name!r} token={self.token} {state}>"

    # --- what the operations below change --------------------------------

    def _confirm(self, token: int, expiry: Row, sent: float) -> None:
        """The server confirmed token until expiry (read at now() ~sent)."""
        if expiry is None:
            raise Error(f'lease "{self.name}" is missing from dlock_leases after it was granted')
        expires_at, server_now = expiry
        left = (expires_at - server_now).total_seconds()
        with self._lock:
            self.token = token
            self.expires_at = expires_at
            self._sent = sent
            self._deadline = sent + left

    def _mark_lost(self, reason: str) -> bool:
        """Mark the lease lost; the first time, tell the application."""
        with self._lock:
            if self._ended:  # lost already, or released cleanly
                return False
            self._lost_reason = reason
            self._ended = True
        log.warning('lease "%s" (token %d) lost: %s', self.name, self.token, reason)
        self._notify()
        if self._on_lost is not None:
            try:
                self._on_lost(self)
            except Exception:
                log.exception('on_lost callback of lease "%s" failed', self.name)
        return True

    def _mark_released(self) -> None:
        with self._lock:
            self._ended = True
        self._notify()

    def _notify(self) -> None:
        """Wake whoever waits in wait_lost(); set by each flavour."""

    def _lost_error(self) -> LeaseLost:
        return LeaseLost(self.name, self.token, self.lost_reason or "lost")


# --- the operations -------------------------------------------------------

# How much longer than its ``wait`` an acquire may take before the client
# gives up on it (a network that swallows packets after the connect).
ACQUIRE_MARGIN = 5.0


def min_hold_seconds(min_hold: "Optional[Union[int, float, timedelta]]", ttl: float) -> Optional[float]:
    """A lease's minimum hold in seconds, None for none; at most its ttl."""
    if min_hold is None:
        return None
    s = seconds(min_hold, "min_hold", zero_ok=True)
    if s > ttl:
        raise ValueError(f"min_hold must not be longer than ttl ({ttl!r} s), not {min_hold!r}")
    return s if s > 0 else None


def acquire_budget(wait: float) -> float:
    return wait + ACQUIRE_MARGIN


def acquire(lease: LeaseBase, wait: float, min_hold: Optional[float] = None) -> Step[None]:
    """Take the lease (committed when this returns); Busy if it stays held.

    Bounded by acquire_budget(wait): without an answer by then the
    connection is discarded and dlock.Error is raised (its ``__cause__`` a
    TimeoutError).  The acquire may have committed meanwhile: that lease
    is nobody's, and expires by itself at its ttl."""
    try:
        yield from _acquire(lease, wait, min_hold)
    except TimeoutError as e:
        budget = acquire_budget(wait)
        log.warning('acquire of lease "%s" got no answer in %.3g s: its connection is '
                    'dropped; if the acquire committed meanwhile, the lease stays busy until '
                    'it expires by itself at its ttl (%.3g s)', lease.name, budget, lease._ttl)
        raise Error(f'acquire of lease "{lease.name}" got no answer from the server in '
                    f'{budget:.3g} s (if it committed, the lease expires by itself at its '
                    f'ttl)') from e


def _acquire(lease: LeaseBase, wait: float, min_hold: Optional[float] = None) -> Step[None]:
    """acquire(), raising TimeoutError when it gets no answer in time."""
    args: Tuple[Any, ...] = (lease.name, timedelta(seconds=lease._ttl), timedelta(seconds=wait),
                             lease.owner_id)
    sql = ACQUIRE_SQL
    if min_hold is not None:
        sql, args = ACQUIRE_MIN_HOLD_SQL, args + (timedelta(seconds=min_hold),)
    try:
        results = yield Execute((
            (sql, args),
            (EXPIRY_SQL, (lease.name,)),
        ), timeout=acquire_budget(wait))
    except psycopg.errors.UndefinedFunction as e:
        if _NOT_INSTALLED_HINT not in _describe(e):
            raise
        where = yield from _dlock_schemas()
        found = f"; dlock is installed in schema {where}: put it on search_path" if where else ""
        raise Error(_describe(e) + found) from e
    (row, _), (expiry, sent) = results
    token = None if row is None else row[0]
    if token is None:
        raise Busy(lease.name, wait)
    lease._confirm(int(token), expiry, sent)
    log.debug('acquired lease "%s" with token %d', lease.name, token)


def _renewal(lease: LeaseBase) -> Tuple[Tuple[str, Params], ...]:
    ttl = timedelta(seconds=lease._ttl)
    first: Tuple[str, Params]
    if lease._reacquire:
        first = (ACQUIRE_SQL, (lease.name, ttl, timedelta(0), lease.owner_id))
    else:
        first = (RENEW_SQL, (lease.name, lease.token, ttl))
    return (first, (EXPIRY_SQL, (lease.name,)))


def _renewed(lease: LeaseBase, row: Row) -> bool:
    value = None if row is None else row[0]
    if lease._reacquire:
        # The same token back: our owner still holds it.  NULL: somebody
        # else does.  Another token: it expired and we started a new term.
        return value is not None and int(value) == lease.token
    return value is True


# What a missing extension looks like from here: "function dlock_acquire(...)
# does not exist" (SQLSTATE 42883), in a database without dlock or with its
# schema off the search_path.
_NOT_INSTALLED_HINT = ("dlock is not installed in this database, or its schema is not on "
                       "search_path: a superuser runs CREATE EXTENSION dlock (on a managed "
                       "service, its admin installs the SQL edition: docs/editions.md), and "
                       "ordinary roles need USAGE on its schema (README, Install)")

# Where dlock is, by its dlock_edition() function: either edition has one
# (the SQL edition's psql script makes no pg_extension row to look for).
EDITION_SCHEMAS_SQL = ("SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname), ', ' "
                       "ORDER BY n.nspname) FROM pg_catalog.pg_proc p "
                       "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace "
                       "WHERE p.proname OPERATOR(pg_catalog.=) 'dlock_edition' "
                       "AND p.pronargs OPERATOR(pg_catalog.=) 0")


def _dlock_schemas() -> Step[Optional[str]]:
    """The schemas that hold a dlock (quoted, comma-separated), or None:
    the hint for a dlock that is installed but not on search_path."""
    try:
        results = yield Execute(((EDITION_SCHEMAS_SQL, ()),), timeout=ACQUIRE_MARGIN)
    except (psycopg.Error, TimeoutError):
        return None
    ((row, _),) = results
    return None if row is None or row[0] is None else str(row[0])


def _describe(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    out = f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")
    if isinstance(e, psycopg.errors.UndefinedFunction) and "dlock_" in out:
        out += f" ({_NOT_INSTALLED_HINT})"
    return out


def _stopped(lease: LeaseBase) -> None:
    """Asked to stop: a lease past its deadline by then is lost all the same."""
    if now() >= lease._deadline:
        lease._mark_lost("not renewed before its deadline")


def renew_loop(lease: LeaseBase) -> Step[None]:
    """Renew at a third of the TTL until asked to stop, or until lost.

    A renewal that cannot get through (broken connection, failover, no
    answer) is retried on a new connection until the deadline; then, or on
    a renewal the server refuses, the lease is marked lost.
    """
    every = lease._ttl / 3
    retry = min(max(lease._ttl / 10, 0.02), 1.0)
    while True:
        # In slices of at most `retry` (1 s), each checking the deadline on
        # the clock that counts a suspend: the sleep itself is timed on the
        # monotonic clock, which stops while the machine sleeps.
        while (pause := lease._sent + every - now()) > 0 and now() < lease._deadline:
            if (yield Sleep(min(pause, retry))):
                return _stopped(lease)
        why = ("no answer from the server" if now() < lease._deadline else
               "the renewer did not run in time: a suspended machine, or a stalled process")
        while True:
            left = lease._deadline - now()
            if left <= 0:
                lease._mark_lost(f"not renewed before its deadline ({why})")
                return
            try:
                results = yield Execute(_renewal(lease), timeout=left)
            except (psycopg.Error, OSError) as e:
                why = _describe(e)
                log.info('renewal of lease "%s" failed, retrying: %s', lease.name, why)
                pause = min(retry, max(0.0, lease._deadline - now()))
                if (yield Sleep(pause)):
                    return _stopped(lease)
                continue
            (row, _), (expiry, sent) = results
            if not _renewed(lease, row):
                lease._mark_lost("renewal refused: the lease expired or was taken over")
                return
            lease._confirm(lease.token, expiry, sent)
            log.debug('renewed lease "%s" (token %d)', lease.name, lease.token)
            break


# How long leaving the block may wait for the release: at most this, and
# at least RELEASE_MIN (else the time left on the lease, which expires by
# itself if the release never arrives).
RELEASE_MAX = 5.0
RELEASE_MIN = 1.0


def release_budget(lease: LeaseBase) -> float:
    return min(RELEASE_MAX, max(RELEASE_MIN, lease._deadline - now()))


def release(lease: LeaseBase, propagating: bool) -> Step[None]:
    """Give the lease back.  Raise LeaseLost if it was lost or the server
    says it no longer held it, unless an exception is already propagating.

    Bounded by release_budget(): a release that gets no answer in time is
    given up (its connection discarded), and the lease expires by itself
    at its deadline; that is not a loss.  In a forked child: nothing."""
    if lease._foreign() or (lease._ended and lease._lost_reason is None):
        return  # not ours to release, or released already
    if lease._lost_reason is None:
        end = now() + release_budget(lease)
        statements = ((RELEASE_SQL, (lease.name, lease.token)),)
        try:
            try:
                results = yield Execute(statements, timeout=end - now())
            except psycopg.OperationalError as e:
                # The connection broke (a restart, a failover, a cut): once
                # more on a new one.  Had the first attempt committed, this
                # one says false, and the caller hears LeaseLost: never the
                # other way round.
                log.info('release of lease "%s" failed, retrying: %s', lease.name, _describe(e))
                if end - now() <= 0:
                    raise TimeoutError("no time left for the release") from e
                results = yield Execute(statements, timeout=end - now())
        except TimeoutError as e:
            log.warning('release of lease "%s" (token %d) got no answer (%s): its connection '
                        'is dropped, and the lease expires by itself at its deadline, '
                        '%s on the server\'s clock', lease.name, lease.token, e,
                        getattr(lease, "expires_at", "unknown"))
            lease._mark_released()
            return
        except Exception:
            if not propagating:
                raise
            log.exception('release of lease "%s" failed (it will expire on its own)', lease.name)
            return
        row = results[0][0]
        if row is not None and row[0] is True:
            lease._mark_released()
            log.debug('released lease "%s" (token %d)', lease.name, lease.token)
            return
        lease._mark_lost("release refused: the lease expired or changed hands before the "
                         "block ended (the critical section overran its lease)")
    if not propagating:
        raise lease._lost_error()


def release_interrupted(lease: LeaseBase, error: BaseException) -> None:
    """A release (or the end of a block) interrupted by ``error``: a
    cancellation, KeyboardInterrupt, a failure.  Whether the server
    released the lease is not known; the lease is never left looking held
    (nothing renews it any more): it ends here, as a release without an
    answer does, and expires by itself at its deadline."""
    if lease._ended:
        return
    log.warning('release of lease "%s" (token %d) was interrupted (%s): the lease is no '
                'longer renewed, and unless the release got through it expires by itself at '
                'its deadline, %s on the server\'s clock', lease.name, lease.token,
                _describe(error) if str(error) else type(error).__name__,
                getattr(lease, "expires_at", "unknown"))
    lease._mark_released()


def check_fence_cursor(autocommit: bool, status: pq.TransactionStatus) -> None:
    if autocommit and status == pq.TransactionStatus.IDLE:
        raise Error("Lease.fence() needs a transaction: on an autocommit connection, "
                    "call it inside conn.transaction(), with the fenced writes")


def fence(lease: LeaseBase, cursor: Any, autocommit: bool, status: pq.TransactionStatus) -> Step[None]:
    """Declare the lease's token in the cursor's transaction (dlock_assert)."""
    if lease._foreign():
        raise Error(f'lease "{lease.name}" belongs to process {lease._pid}, not to this '
                    "forked child: it cannot fence writes here")
    check_fence_cursor(autocommit, status)
    try:
        yield OnCursor(cursor, ASSERT_SQL, (lease.name, lease.token))
    except psycopg.Error as e:
        if e.sqlstate != STALE_TOKEN_SQLSTATE:
            raise
        lease._mark_lost("the server refused its token as stale")
        raise stale_token_from(e, lease.name, lease.token) from e


def pause(seconds: float) -> Step[bool]:
    """Sleep; True if asked to stop."""
    stopped = yield Sleep(seconds)
    return bool(stopped)


def campaign(lease: LeaseBase, retry: float) -> Step[bool]:
    """Acquire with the lease's owner until elected (True) or stopped (False).

    Busy and connection failures alike are retried every ``retry`` seconds.
    """
    while True:
        try:
            yield from _acquire(lease, 0.0)
            return True
        except Busy:
            pass
        except (psycopg.Error, OSError) as e:  # TimeoutError too
            log.info('campaign for "%s" failed, retrying: %s', lease.name, _describe(e))
        if (yield Sleep(retry)):
            return False
