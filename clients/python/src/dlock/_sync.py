# Copyright (c) 2026, the dlock developers
"""The blocking API: dlock.lease(), dlock.Lease, dlock.leader()."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from types import TracebackType
from typing import Any, Callable, Iterator, Optional, Type, Union

import psycopg

from . import _core
from ._drive import RenewerThread, SyncExecutor, connect_kwargs, conninfo_of, run_sync

Seconds = Union[int, float, timedelta]


class Lease(_core.LeaseBase):
    """A held lease, as yielded by ``dlock.lease()`` and ``dlock.leader()``.

    Attributes: ``name``, ``token`` (the fencing token), ``owner`` (the
    label given), ``owner_id`` (what the server sees: the label, the process
    id and a random part), ``expires_at`` (the server's expiry, as last
    confirmed), ``lost``, ``lost_reason``; methods ``remaining()``,
    ``fence(cursor)``, ``release()`` and ``wait_lost(timeout)``.  Thread-safe.
    It belongs to the process that acquired it: in a forked child it is
    lost, ``release()`` does nothing and ``fence()`` raises ``dlock.Error``.
    """

    def __init__(self, name: str, ttl: float, owner: Optional[str],
                 on_lost: Optional[Callable[["Lease"], object]], executor: SyncExecutor,
                 *, reacquire: bool = False, owner_id: Optional[str] = None) -> None:
        super().__init__(name, ttl, owner, on_lost, reacquire=reacquire, owner_id=owner_id)
        self._ex = executor
        self._changed = threading.Event()
        self._renewer: Optional[RenewerThread] = None
        # One release at a time: a second thread waits for the first, then
        # finds the lease released (or lost) and does what a second call does.
        self._finishing = threading.RLock()

    def _notify(self) -> None:
        self._changed.set()

    def _start_renewer(self, conninfo: str) -> None:
        self._renewer = RenewerThread(self, conninfo)
        self._renewer.start()

    def _stop_renewer(self) -> None:
        if self._renewer is not None:
            self._renewer.stop()

    def fence(self, cursor: "psycopg.Cursor[Any]") -> None:
        """Declare this lease's token in the cursor's transaction.

        Runs ``dlock_assert(name, token)``: fenced writes later in the same
        transaction carry the token, and the lease cannot change hands until
        the transaction ends.  Raises ``dlock.StaleToken`` (and marks the
        lease lost) when the server says the token is stale; the transaction
        is then aborted.
        """
        conn = cursor.connection
        run_sync(_core.fence(self, cursor, conn.autocommit, conn.info.transaction_status), self._ex)

    def release(self) -> None:
        """Stop renewing and give the lease back now.

        Raises ``dlock.LeaseLost`` if the lease was lost, or the server says
        it no longer held it.  Releasing twice, or from two threads at once,
        releases once.  Waits at most min(5 s, max(1 s, the time left)): a
        release without an answer by then is given up, its connection
        discarded, and the lease expires by itself (no ``LeaseLost``).
        """
        self._finish(propagating=False)

    def _finish(self, propagating: bool) -> None:
        if self._foreign():
            return  # a forked child: the lease and its connections are the parent's
        with self._finishing:
            try:
                self._stop_renewer()
                run_sync(_core.release(self, propagating), self._ex)
            except BaseException as e:  # KeyboardInterrupt, a failure: never left held
                _core.release_interrupted(self, e)
                raise

    def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Block until the lease is lost (True), released, or timeout passes
        (False)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.lost:
                return True
            if self._ended:
                return False
            # At most a second at a time: a suspend is noticed on resume.
            pause = min(self.remaining() + 0.001, 1.0)
            if end is not None:
                if time.monotonic() >= end:
                    return False
                pause = min(pause, end - time.monotonic())
            self._changed.wait(max(pause, 0.0))


class LeaseContext:
    """What ``dlock.lease()`` returns: ``with`` it to hold the lease."""

    def __init__(self, target: "Union[str, psycopg.Connection[Any]]", name: str, ttl: Seconds,
                 wait: Seconds, owner: Optional[str], renew: bool,
                 on_lost: Optional[Callable[[Lease], object]],
                 min_hold: Optional[Seconds] = None) -> None:
        self._target = target
        self._name = name
        self._ttl = _core.seconds(ttl, "ttl", zero_ok=False)
        self._wait = _core.seconds(wait, "wait", zero_ok=True)
        self._min_hold = _core.min_hold_seconds(min_hold, self._ttl)
        self._owner = owner
        self._renew = renew
        self._on_lost = on_lost
        self._lease: Optional[Lease] = None

    def __enter__(self) -> Lease:
        if self._lease is not None:
            raise RuntimeError("a dlock.lease() context cannot be entered twice")
        target = self._target
        if isinstance(target, str):
            conninfo = target
            ex = SyncExecutor(psycopg.connect(target, **connect_kwargs()), conninfo)
            ex.owned = True
        elif isinstance(target, psycopg.Connection):
            _core.check_idle(target.info.transaction_status)
            conninfo = conninfo_of(target)
            ex = SyncExecutor(target, conninfo)
        else:
            raise TypeError("dlock.lease() takes a connection string or a psycopg.Connection "
                            f"(for an AsyncConnection use dlock.aio.lease), not {type(target).__name__}")
        lease = Lease(self._name, self._ttl, self._owner, self._on_lost, ex)
        try:
            run_sync(_core.acquire(lease, self._wait, self._min_hold), ex)
            if self._renew:
                lease._start_renewer(conninfo)
        except BaseException:
            if lease.token:
                lease._finish(propagating=True)
            ex.close()
            raise
        self._lease = lease
        return lease

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        lease = self._lease
        assert lease is not None
        try:
            lease._finish(propagating=exc_type is not None)
        finally:
            lease._ex.close()  # does nothing in a forked child


def lease(conninfo_or_connection: "Union[str, psycopg.Connection[Any]]", name: str, ttl: Seconds,
          *, wait: Seconds = 0, owner: Optional[str] = None, renew: bool = True,
          on_lost: Optional[Callable[[Lease], object]] = None,
          min_hold: Optional[Seconds] = None) -> LeaseContext:
    """Hold the lease ``name`` for the ``with`` block; yields a ``Lease``.

    ``ttl`` and ``wait`` are seconds (int or float) or ``timedelta``s.  Raises
    ``dlock.Busy`` if somebody else still holds the lease after ``wait``.  The
    acquire is committed before the block runs; without an answer from the
    server in ``wait`` + 5 s it is given up with ``dlock.Error`` (the
    connection discarded; had it committed, that lease expires at its ttl).  A connection passed in must
    be idle (not inside a transaction); a connection string gets a
    connection of its own, closed at the end.

    With ``renew=True`` a background thread renews the lease at a third of
    its TTL, on its own connection.  If a renewal is refused, or none gets
    through before the lease's deadline, the lease is marked lost and
    ``on_lost(lease)`` is called once (from the renewer's thread: keep it
    short).  Leaving the block releases the lease, and raises
    ``dlock.LeaseLost`` if it was lost or the release was refused, unless the
    block is raising an exception of its own.

    ``min_hold`` (seconds or ``timedelta``, at most ``ttl``; dlock 1.2):
    released earlier, the name stays unavailable to everybody until
    ``acquired_at + min_hold`` (ShedLock's ``lockAtLeastFor``), so a job that
    finished quickly on one replica is not run again on another at once.

    ``owner`` labels the holder (``dlock_leases.owner`` starts with it); the
    server is sent ``<owner>:<pid>:<random>``, new for every context, so two
    contexts never share a lease.  The client's statements are never
    prepared on the server; behind a transaction pooler, create a connection
    you pass in with ``prepare_threshold=None``.
    """
    return LeaseContext(conninfo_or_connection, name, ttl, wait, owner, renew, on_lost, min_hold)


class Leader:
    """The leader-election loop, as an iterator of terms.

    Each ``next()`` campaigns (``dlock_acquire(name, ttl, 0, owner)`` every
    ``retry`` seconds) until this process is elected, and returns the term: a
    ``Lease`` renewed in the background by acquiring again with the same
    owner.  The term tells when leadership is lost (``lost``,
    ``wait_lost()``, ``on_lost``).  Asking for the next term while the
    current one is still held steps down (releases it) first.  ``close()``
    (or leaving the ``with`` block) releases the term held, if any, and
    ends the iteration; ``stop()`` may be called from another thread.
    """

    def __init__(self, conninfo: str, name: str, owner: str, ttl: Seconds, *,
                 retry: Optional[Seconds] = None,
                 on_lost: Optional[Callable[[Lease], object]] = None) -> None:
        self._conninfo = conninfo
        self._name = name
        self._owner = owner
        self._ttl, self._retry = _core.leader_timing(owner, ttl, retry)
        # One owner string for every term of this loop: a term lost on the
        # client's side while the server still holds it is won back at once.
        self._owner_id = _core.make_owner_id(owner)
        self._on_lost = on_lost
        self._stop = threading.Event()
        self._ex = SyncExecutor(None, conninfo, self._stop)
        self._term: Optional[Lease] = None
        self._closed = False

    @property
    def term(self) -> Optional[Lease]:
        """The current (or last) term, or None."""
        return self._term

    def __iter__(self) -> Iterator[Lease]:
        return self

    def __next__(self) -> Lease:
        if self._closed or self._stop.is_set():
            self.close()
            raise StopIteration
        if self._end_term() and run_sync(_core.pause(self._retry), self._ex):
            self.close()
            raise StopIteration
        term = Lease(self._name, self._ttl, self._owner, self._on_lost, self._ex, reacquire=True,
                     owner_id=self._owner_id)
        if not run_sync(_core.campaign(term, self._retry), self._ex):
            self.close()
            raise StopIteration
        term._start_renewer(self._conninfo)
        self._term = term
        return term

    def _end_term(self) -> bool:
        """Release the current term if it is still held; True if it was."""
        term = self._term
        if term is None or term._ended:
            if term is not None:
                term._stop_renewer()
            return False
        try:
            term._finish(propagating=True)
        finally:
            self._term = None
        return True

    def stop(self) -> None:
        """Ask the loop to end (thread-safe); the iterating thread releases."""
        self._stop.set()

    def close(self) -> None:
        """Release the term held, if any, and end the iteration."""
        self._stop.set()
        if not self._closed:
            self._closed = True
            try:
                self._end_term()
            finally:
                self._ex.close()

    def __enter__(self) -> "Leader":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()


def leader(conninfo: str, name: str, owner: str, ttl: Seconds, *,
           retry: Optional[Seconds] = None,
           on_lost: Optional[Callable[[Lease], object]] = None) -> Leader:
    """Campaign for leadership of ``name`` as ``owner``; iterate over the
    terms won.  See ``Leader``."""
    return Leader(conninfo, name, owner, ttl, retry=retry, on_lost=on_lost)
