# Copyright (c) 2026, the dlock developers
"""dlock for asyncio: ``async with dlock.aio.lease(...) as lease``.

The same API and the same logic as the blocking one (``dlock._core``), run
with ``psycopg.AsyncConnection``; the renewer is an asyncio task on a
connection of its own.  ``on_lost`` is called in the event loop: keep it
short (set an event, cancel a task).
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from types import TracebackType
from typing import Any, AsyncIterator, Callable, Optional, Type, Union

import psycopg

from . import _core
from ._drive import (AsyncExecutor, connect_kwargs, conninfo_of, renew_until_stopped, run_async,
                     watch_renewer)
from ._errors import Busy, Error, LeaseLost, StaleToken, is_stale_token, stale_token_errors

__all__ = ["AsyncLease", "AsyncLeader", "lease", "leader",
           "Error", "Busy", "LeaseLost", "StaleToken", "is_stale_token", "stale_token_errors"]

Seconds = Union[int, float, timedelta]


class AsyncLease(_core.LeaseBase):
    """A held lease (see ``dlock.Lease``); ``fence``, ``release`` and
    ``wait_lost`` are coroutines."""

    def __init__(self, name: str, ttl: float, owner: Optional[str],
                 on_lost: Optional[Callable[["AsyncLease"], object]], executor: AsyncExecutor,
                 *, reacquire: bool = False, owner_id: Optional[str] = None) -> None:
        super().__init__(name, ttl, owner, on_lost, reacquire=reacquire, owner_id=owner_id)
        self._ex = executor
        self._changed = asyncio.Event()
        self._renewer: Optional["asyncio.Task[None]"] = None
        self._renewer_stop = asyncio.Event()
        self._finishing = asyncio.Lock()  # one release at a time

    def _notify(self) -> None:
        self._changed.set()

    def _start_renewer(self, conninfo: str) -> None:
        self._renewer = asyncio.get_running_loop().create_task(
            renew_until_stopped(self, conninfo, self._renewer_stop),
            name=f"dlock-renewer {self.name}")
        watch_renewer(self, self._renewer, self._renewer_stop)

    async def _stop_renewer(self) -> None:
        self._renewer_stop.set()
        task = self._renewer
        if task is not None and task is not asyncio.current_task():
            # Whatever ended it (a cancellation too) is in the lease's state
            # already; only our own cancellation propagates from here.
            await asyncio.wait({task})
            if not task.cancelled():
                task.exception()  # retrieved: logged by the renewer

    async def fence(self, cursor: "psycopg.AsyncCursor[Any]") -> None:
        """Declare the token in the cursor's transaction (see ``dlock.Lease.fence``)."""
        conn = cursor.connection
        await run_async(_core.fence(self, cursor, conn.autocommit, conn.info.transaction_status),
                        self._ex)

    async def release(self) -> None:
        """Stop renewing and give the lease back now (see ``dlock.Lease.release``).

        Cancelled half way (``asyncio.wait_for``, a task group), it leaves the
        lease released, never held (it expires by itself at its deadline
        unless the release got through), shuts down a connection passed in
        that it was using, and lets the ``CancelledError`` through."""
        await self._finish(propagating=False)

    async def _finish(self, propagating: bool) -> None:
        if self._foreign():
            return  # a forked child: the lease and its connections are the parent's
        async with self._finishing:
            try:
                await self._stop_renewer()
                await run_async(_core.release(self, propagating), self._ex)
            except BaseException as e:
                # Cancelled (asyncio.wait_for, a task group) or failed half
                # way: never left looking held; the statement in flight was
                # abandoned, and a connection of the application's with it
                # shut down.
                _core.release_interrupted(self, e)
                raise

    async def wait_lost(self, timeout: Optional[float] = None) -> bool:
        """Wait until the lease is lost (True), released, or timeout passes (False)."""
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
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), max(pause, 0.0))
            except asyncio.TimeoutError:
                pass


class AsyncLeaseContext:
    """What ``dlock.aio.lease()`` returns: ``async with`` it to hold the lease."""

    def __init__(self, target: "Union[str, psycopg.AsyncConnection[Any]]", name: str,
                 ttl: Seconds, wait: Seconds, owner: Optional[str], renew: bool,
                 on_lost: Optional[Callable[[AsyncLease], object]],
                 min_hold: Optional[Seconds] = None) -> None:
        self._target = target
        self._name = name
        self._ttl = _core.seconds(ttl, "ttl", zero_ok=False)
        self._wait = _core.seconds(wait, "wait", zero_ok=True)
        self._min_hold = _core.min_hold_seconds(min_hold, self._ttl)
        self._owner = owner
        self._renew = renew
        self._on_lost = on_lost
        self._lease: Optional[AsyncLease] = None

    async def __aenter__(self) -> AsyncLease:
        if self._lease is not None:
            raise RuntimeError("a dlock.aio.lease() context cannot be entered twice")
        target = self._target
        if isinstance(target, str):
            conninfo = target
            ex = AsyncExecutor(await psycopg.AsyncConnection.connect(target, **connect_kwargs()),
                               conninfo)
            ex.owned = True
        elif isinstance(target, psycopg.AsyncConnection):
            _core.check_idle(target.info.transaction_status)
            conninfo = conninfo_of(target)
            ex = AsyncExecutor(target, conninfo)
        else:
            raise TypeError("dlock.aio.lease() takes a connection string or a "
                            f"psycopg.AsyncConnection, not {type(target).__name__}")
        lease = AsyncLease(self._name, self._ttl, self._owner, self._on_lost, ex)
        try:
            await run_async(_core.acquire(lease, self._wait, self._min_hold), ex)
            if self._renew:
                lease._start_renewer(conninfo)
        except BaseException:
            if lease.token:
                await lease._finish(propagating=True)
            await ex.close()
            raise
        self._lease = lease
        return lease

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        lease = self._lease
        assert lease is not None
        try:
            await lease._finish(propagating=exc_type is not None)
        finally:
            await lease._ex.close()


def lease(conninfo_or_connection: "Union[str, psycopg.AsyncConnection[Any]]", name: str,
          ttl: Seconds, *, wait: Seconds = 0, owner: Optional[str] = None, renew: bool = True,
          on_lost: Optional[Callable[[AsyncLease], object]] = None,
          min_hold: Optional[Seconds] = None) -> AsyncLeaseContext:
    """``async with dlock.aio.lease(...) as lease``: see ``dlock.lease``."""
    return AsyncLeaseContext(conninfo_or_connection, name, ttl, wait, owner, renew, on_lost,
                             min_hold)


class AsyncLeader:
    """The leader-election loop as an async iterator of terms (see
    ``dlock.Leader``): ``async for term in dlock.aio.leader(...)``."""

    def __init__(self, conninfo: str, name: str, owner: str, ttl: Seconds, *,
                 retry: Optional[Seconds] = None,
                 on_lost: Optional[Callable[[AsyncLease], object]] = None) -> None:
        self._conninfo = conninfo
        self._name = name
        self._owner = owner
        self._ttl, self._retry = _core.leader_timing(owner, ttl, retry)
        # One owner string for every term of this loop: a term lost on the
        # client's side while the server still holds it is won back at once.
        self._owner_id = _core.make_owner_id(owner)
        self._on_lost = on_lost
        self._stop = asyncio.Event()
        self._ex = AsyncExecutor(None, conninfo, self._stop)
        self._term: Optional[AsyncLease] = None
        self._closed = False

    @property
    def term(self) -> Optional[AsyncLease]:
        return self._term

    def __aiter__(self) -> AsyncIterator[AsyncLease]:
        return self

    async def __anext__(self) -> AsyncLease:
        if self._closed or self._stop.is_set():
            await self.aclose()
            raise StopAsyncIteration
        if await self._end_term() and await run_async(_core.pause(self._retry), self._ex):
            await self.aclose()
            raise StopAsyncIteration
        term = AsyncLease(self._name, self._ttl, self._owner, self._on_lost, self._ex,
                          reacquire=True, owner_id=self._owner_id)
        if not await run_async(_core.campaign(term, self._retry), self._ex):
            await self.aclose()
            raise StopAsyncIteration
        term._start_renewer(self._conninfo)
        self._term = term
        return term

    async def _end_term(self) -> bool:
        term = self._term
        if term is None or term._ended:
            if term is not None:
                await term._stop_renewer()
            return False
        try:
            await term._finish(propagating=True)
        finally:
            self._term = None
        return True

    def stop(self) -> None:
        """Ask the loop to end; the iterating task releases."""
        self._stop.set()

    async def aclose(self) -> None:
        """Release the term held, if any, and end the iteration."""
        self._stop.set()
        if not self._closed:
            self._closed = True
            try:
                await self._end_term()
            finally:
                await self._ex.close()

    async def __aenter__(self) -> "AsyncLeader":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.aclose()


def leader(conninfo: str, name: str, owner: str, ttl: Seconds, *,
           retry: Optional[Seconds] = None,
           on_lost: Optional[Callable[[AsyncLease], object]] = None) -> AsyncLeader:
    """``async for term in dlock.aio.leader(...)``: see ``dlock.leader``."""
    return AsyncLeader(conninfo, name, owner, ttl, retry=retry, on_lost=on_lost)
