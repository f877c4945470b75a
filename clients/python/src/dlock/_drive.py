# Copyright (c) 2026, the dlock developers
"""Run the generators of dlock._core with psycopg, blocking or with asyncio."""

from __future__ import annotations

import asyncio
import functools
import math
import os
import socket
import threading
import weakref
from typing import Any, List, Optional, Tuple

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo
from psycopg.rows import tuple_row

from . import _core
from ._core import Execute, OnCursor, Op, Row, Sleep, Step, T, log
from ._errors import Error

Results = List[Tuple[Row, float]]

# Every executor alive, so that a forked child can let go of their
# connections without a word to the server (see _forget_in_child).
_executors: "weakref.WeakSet[Any]" = weakref.WeakSet()
_warned_prepare = False


def _forget_in_child() -> None:
    """After fork, in the child: the connections are the parent's.  Close
    our copy of each socket (the parent's session goes on: no Terminate is
    sent, which PQfinish would do) and never use them again.  psycopg's
    pq wrapper does not PQfinish a connection collected in another process
    than the one that made it."""
    for ex in list(_executors):
        ex.forget()


os.register_at_fork(after_in_child=_forget_in_child)


def connect_kwargs(timeout: Optional[float] = None) -> "dict[str, Any]":
    """How the client opens its own connections: autocommit, and never a
    server-side prepared statement (a transaction pooler such as PgBouncer
    would bind them to another client's session)."""
    kw: "dict[str, Any]" = {"autocommit": True, "prepare_threshold": None}
    if timeout is not None:
        kw["connect_timeout"] = max(1, math.ceil(timeout))
    return kw


def check_prepare(conn: "psycopg.Connection[Any] | psycopg.AsyncConnection[Any]") -> None:
    """Warn once about a connection passed in that prepares statements."""
    global _warned_prepare
    if conn.prepare_threshold is not None and not _warned_prepare:
        _warned_prepare = True
        log.warning("the connection passed to dlock has prepare_threshold=%r: behind a "
                    "transaction pooler (PgBouncer in transaction mode) its prepared "
                    "statements break; create it with prepare_threshold=None there",
                    conn.prepare_threshold)


def shut_down(conn: "psycopg.Connection[Any] | psycopg.AsyncConnection[Any]") -> None:
    """Break a connection from any thread: whoever waits on it wakes up with
    an error, and it is never usable again (a black hole cannot be waited
    out, and a connection left in the middle of a statement cannot be
    reused)."""
    try:
        fd = conn.pgconn.socket
        with socket.socket(fileno=os.dup(fd)) as s:
            s.shutdown(socket.SHUT_RDWR)
    except Exception:  # closed already
        pass


def _close_fd_in_child(
        conn: "Optional[psycopg.Connection[Any] | psycopg.AsyncConnection[Any]]") -> None:
    if conn is None:
        return
    try:
        os.close(conn.pgconn.socket)
    except Exception:
        pass


def conninfo_of(conn: "psycopg.Connection[Any] | psycopg.AsyncConnection[Any]") -> str:
    """A connection string for another connection like ``conn`` (same
    hosts, database and role; the password too, which ``info.dsn`` omits)."""
    dsn = conn.info.dsn
    password = conn.info.password
    return make_conninfo(dsn, password=password) if password else dsn


def run_sync(step: Step[T], ex: "SyncExecutor") -> T:
    """Drive a step to its end; failures of an operation are thrown into it."""
    value: Any = None
    error: Optional[Exception] = None
    try:
        while True:
            try:
                op = step.throw(error) if error is not None else step.send(value)
            except StopIteration as stop:
                result: T = stop.value
                return result
            value, error = None, None
            try:
                value = ex.perform(op)
            except Exception as e:
                error = e
    finally:
        step.close()


async def run_async(step: Step[T], ex: "AsyncExecutor") -> T:
    """The same as run_sync, for asyncio."""
    value: Any = None
    error: Optional[Exception] = None
    try:
        while True:
            try:
                op = step.throw(error) if error is not None else step.send(value)
            except StopIteration as stop:
                result: T = stop.value
                return result
            value, error = None, None
            try:
                value = await ex.perform(op)
            except Exception as e:
                error = e
    finally:
        step.close()


def _run_statements(conn: "psycopg.Connection[Any]", op: Execute) -> Results:
    out: Results = []
    with conn.transaction():
        with conn.cursor(row_factory=tuple_row) as cur:
            for sql, params in op.statements:
                sent = _core.now()
                cur.execute(sql, params, prepare=False)
                out.append((cur.fetchone(), sent))
    return out


async def _arun_statements(conn: "psycopg.AsyncConnection[Any]", op: Execute) -> Results:
    out: Results = []
    async with conn.transaction():
        async with conn.cursor(row_factory=tuple_row) as cur:
            for sql, params in op.statements:
                sent = _core.now()
                await cur.execute(sql, params, prepare=False)
                out.append((await cur.fetchone(), sent))
    return out


def _bounded(conn: "psycopg.Connection[Any]", op: Execute) -> Results:
    """Run op on conn; past op.timeout, shut the connection down and raise
    TimeoutError (a blocking psycopg call has no deadline of its own)."""
    if op.timeout is None:
        return _run_statements(conn, op)
    fired = False
    lock = threading.Lock()
    done = False

    def abort() -> None:
        nonlocal fired
        with lock:
            if not done:
                fired = True
                shut_down(conn)

    timer = threading.Timer(max(0.0, op.timeout), abort)
    timer.daemon = True
    timer.start()
    try:
        return _run_statements(conn, op)
    except psycopg.Error:
        if fired:
            raise TimeoutError(f"no answer from the server in {op.timeout:.3g} s") from None
        raise
    finally:
        with lock:
            done = True
        timer.cancel()


class SyncExecutor:
    """Performs operations on a blocking connection: the caller's, or one
    opened (and reopened after a failure) from ``conninfo``.  Only in the
    process that made it."""

    def __init__(self, conn: "Optional[psycopg.Connection[Any]]", conninfo: str,
                 stop: Optional[threading.Event] = None) -> None:
        self.conn = conn
        self.conninfo = conninfo
        self.owned = conn is None
        self.stop = stop if stop is not None else threading.Event()
        self.pid = os.getpid()
        # One operation at a time on the connection (two threads releasing).
        self.lock = threading.RLock()
        if conn is not None:
            check_prepare(conn)
        _executors.add(self)

    def forget(self) -> None:
        """In a forked child: drop the parent's connection, sending nothing."""
        conn, self.conn = self.conn, None
        if self.owned:
            _close_fd_in_child(conn)

    def perform(self, op: Op) -> Any:
        if os.getpid() != self.pid:
            raise Error("a dlock connection cannot be used in a forked child")
        if isinstance(op, Execute):
            with self.lock:
                return self._execute(op)
        if isinstance(op, OnCursor):
            op.cursor.execute(op.sql, op.params, prepare=False)
            return None
        return self.stop.wait(op.seconds)

    def _execute(self, op: Execute) -> Results:
        if self.owned:
            if self.conn is None or self.conn.closed:
                self.conn = psycopg.connect(self.conninfo, **connect_kwargs(op.timeout))
            try:
                return _bounded(self.conn, op)
            except (psycopg.OperationalError, TimeoutError):
                self.close()  # reopened by the next statement
                raise
        conn = self.conn
        if (conn is None or conn.closed or conn.broken
                or conn.info.transaction_status != pq.TransactionStatus.IDLE):
            # The application's connection is gone, or it left a transaction
            # open there (or failed in one): never commit a lease statement
            # inside the application's transaction.
            with psycopg.connect(self.conninfo, **connect_kwargs(op.timeout)) as other:
                return _bounded(other, op)
        try:
            return _bounded(conn, op)
        except TimeoutError:
            self.conn = None  # shut down: never used again
            raise

    def close(self) -> None:
        if os.getpid() != self.pid:
            self.conn = None
            return
        if self.owned and self.conn is not None:
            conn, self.conn = self.conn, None
            conn.close()


class AsyncExecutor:
    """The same as SyncExecutor, on an asyncio connection.  An ``Execute``
    with a timeout is abandoned when it runs out (or, for the renewer's, when
    ``stop`` is set), and its connection discarded: the renewer never waits
    on a network that does not answer, nor keeps the block from ending."""

    def __init__(self, conn: "Optional[psycopg.AsyncConnection[Any]]", conninfo: str,
                 stop: Optional[asyncio.Event] = None, *, abandon_on_stop: bool = False) -> None:
        self.conn = conn
        self.abandon_on_stop = abandon_on_stop
        self.conninfo = conninfo
        self.owned = conn is None
        self.stop = stop if stop is not None else asyncio.Event()
        self.pid = os.getpid()
        # The application's connection while a statement of ours runs on it.
        self.in_use: "Optional[psycopg.AsyncConnection[Any]]" = None
        if conn is not None:
            check_prepare(conn)
        _executors.add(self)

    def forget(self) -> None:
        """In a forked child: drop the parent's connection, sending nothing."""
        conn, self.conn = self.conn, None
        if self.owned:
            _close_fd_in_child(conn)

    async def perform(self, op: Op) -> Any:
        if os.getpid() != self.pid:
            raise Error("a dlock connection cannot be used in a forked child")
        if isinstance(op, Execute):
            if op.timeout is None:
                return await self._execute(op)
            return await self._execute_bounded(op, op.timeout)
        if isinstance(op, OnCursor):
            await op.cursor.execute(op.sql, op.params, prepare=False)
            return None
        return await self._sleep(op)

    async def _execute_bounded(self, op: Execute, timeout: float) -> Results:
        task = asyncio.ensure_future(self._execute(op))
        waiting: "set[asyncio.Future[Any]]" = {task}
        stopper: "Optional[asyncio.Future[Any]]" = None
        if self.abandon_on_stop:
            stopper = asyncio.ensure_future(self.stop.wait())
            waiting.add(stopper)
        # Timed on the clock that counts a suspend, in slices of a second
        # (asyncio's own timeouts run on the monotonic clock).
        end = _core.now() + max(0.0, timeout)
        try:
            while not any(f.done() for f in waiting) and (left := end - _core.now()) > 0:
                await asyncio.wait(waiting, timeout=min(left, 1.0),
                                   return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled (or interrupted) while it runs
            self._abandon(task)
            raise
        finally:
            if stopper is not None and not stopper.done():
                stopper.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        self._abandon(task)
        if self.abandon_on_stop and self.stop.is_set():
            raise TimeoutError("stopped")
        raise TimeoutError(f"no answer from the server in {timeout:.3g} s")

    def _abandon(self, task: "asyncio.Future[Results]") -> None:
        """Give up on a statement in flight, without waiting for it.

        The application's connection, when the statement runs on it, is
        shut down (never used again: it would be left in the middle of a
        statement) and the statement's task runs on until it fails on the
        closed socket, which leaves the connection ``broken``: a pool
        discards it.  Our own connection is closed by the cancelled task
        (the next statement opens another)."""
        if task.done():
            if not task.cancelled():
                task.exception()  # retrieved: what matters is in the lease's state
            return
        theirs = self.in_use
        if theirs is not None:
            self.conn = None
            shut_down(theirs)
            task.add_done_callback(functools.partial(_retrieve, conn=theirs))
        else:
            if self.owned:
                self.conn = None  # the cancelled task closes it; the next statement reconnects
            task.cancel()

    async def _sleep(self, op: Sleep) -> bool:
        if self.stop.is_set():
            return True
        try:
            await asyncio.wait_for(self.stop.wait(), op.seconds)
        except asyncio.TimeoutError:
            return False
        return True

    async def _execute(self, op: Execute) -> Results:
        if self.owned:
            current = self.conn
            if current is None or current.closed:
                current = await psycopg.AsyncConnection.connect(
                    self.conninfo, **connect_kwargs(op.timeout))
                self.conn = current
            assert current is not None
            try:
                return await _arun_statements(current, op)
            except (psycopg.OperationalError, asyncio.CancelledError):
                if self.conn is current:
                    self.conn = None  # reopened by the next statement
                try:
                    await current.close()
                except BaseException:  # a connection cut mid-query
                    pass
                raise
        conn = self.conn
        if (conn is None or conn.closed or conn.broken
                or conn.info.transaction_status != pq.TransactionStatus.IDLE):
            async with await psycopg.AsyncConnection.connect(
                    self.conninfo, **connect_kwargs(op.timeout)) as other:
                return await _arun_statements(other, op)
        self.in_use = conn
        try:
            return await _arun_statements(conn, op)
        finally:
            self.in_use = None

    async def close(self) -> None:
        if os.getpid() != self.pid:
            self.conn = None
            return
        if self.owned and self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                await conn.close()
            except BaseException:  # a connection cut mid-query
                pass


def _retrieve(task: "asyncio.Future[Any]", conn: "psycopg.AsyncConnection[Any]") -> None:
    """A done callback of an abandoned statement on a connection that was
    shut down: retrieve its failure, and let libpq see the closed socket
    (the statement may have finished from what was read already), so that
    the connection says ``broken``.  Its socket is no longer watched by
    the event loop by then."""
    if not task.cancelled():
        task.exception()
    try:
        conn.pgconn.consume_input()
    except Exception:  # the end of the stream: the connection is BAD now
        pass


async def renew_until_stopped(lease: _core.LeaseBase, conninfo: str, stop: asyncio.Event) -> None:
    """The renewer: dlock.aio runs it as a task, dlock in a thread of its own
    (with its own event loop), on a connection of its own.  However it ends,
    other than by ``stop`` (the block ending), the lease is marked lost:
    never left silently unrenewed (see watch_renewer for a cancelled task)."""
    ex = AsyncExecutor(None, conninfo, stop, abandon_on_stop=True)
    try:
        await run_async(_core.renew_loop(lease), ex)
    except Exception as e:  # a bug; never leave the lease silently unrenewed
        log.exception('renewer of lease "%s" failed', lease.name)
        lease._mark_lost(f"the renewer failed: {e!r}")
    finally:
        await ex.close()


def watch_renewer(lease: _core.LeaseBase, task: "asyncio.Task[None]", stop: asyncio.Event) -> None:
    """A renewer task cancelled by anything but the block ending (even
    before it ran) marks the lease lost."""
    def done(t: "asyncio.Task[None]") -> None:
        if t.cancelled() and not stop.is_set():
            lease._mark_lost("the renewer task was cancelled")

    task.add_done_callback(done)


class RenewerThread:
    """renew_until_stopped() in a daemon thread, for the blocking API."""

    def __init__(self, lease: _core.LeaseBase, conninfo: str) -> None:
        self._lease = lease
        self._conninfo = conninfo
        self._ready = threading.Event()
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._thread = threading.Thread(target=self._main, daemon=True,
                                        name=f"dlock-renewer {lease.name}")

    def start(self) -> None:
        self._thread.start()
        self._ready.wait()

    def _main(self) -> None:
        asyncio.run(self._amain())

    async def _amain(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._ready.set()
        await renew_until_stopped(self._lease, self._conninfo, self._stop)

    def stop(self) -> None:
        """Stop renewing and wait for the thread (at most until the lease's
        deadline, if a renewal is in flight)."""
        if self._thread.ident is None:
            return
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None:
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop has finished already
                pass
        if self._thread is not threading.current_thread():  # not from on_lost
            self._thread.join()
