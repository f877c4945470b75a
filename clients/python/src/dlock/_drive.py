# Copyright (c) 2026, the dlock developers
"""Run the generators of dlock._core with psycopg, blocking or with asyncio."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, List, Optional, Tuple

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo
from psycopg.rows import tuple_row

from . import _core
from ._core import Execute, OnCursor, Op, Row, Sleep, Step, T, log

Results = List[Tuple[Row, float]]


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
                sent = time.monotonic()
                cur.execute(sql, params)
                out.append((cur.fetchone(), sent))
    return out


async def _arun_statements(conn: "psycopg.AsyncConnection[Any]", op: Execute) -> Results:
    out: Results = []
    async with conn.transaction():
        async with conn.cursor(row_factory=tuple_row) as cur:
            for sql, params in op.statements:
                sent = time.monotonic()
                await cur.execute(sql, params)
                out.append((await cur.fetchone(), sent))
    return out


class SyncExecutor:
    """Performs operations on a blocking connection: the caller's, or one
    opened (and reopened after a failure) from ``conninfo``."""

    def __init__(self, conn: "Optional[psycopg.Connection[Any]]", conninfo: str,
                 stop: Optional[threading.Event] = None) -> None:
        self.conn = conn
        self.conninfo = conninfo
        self.owned = conn is None
        self.stop = stop if stop is not None else threading.Event()

    def perform(self, op: Op) -> Any:
        if isinstance(op, Execute):
            return self._execute(op)
        if isinstance(op, OnCursor):
            op.cursor.execute(op.sql, op.params)
            return None
        return self.stop.wait(op.seconds)

    def _execute(self, op: Execute) -> Results:
        if self.owned:
            if self.conn is None or self.conn.closed:
                self.conn = psycopg.connect(self.conninfo, autocommit=True)
            try:
                return _run_statements(self.conn, op)
            except psycopg.OperationalError:
                self.close()  # reopened by the next statement
                raise
        conn = self.conn
        assert conn is not None
        if conn.closed or conn.broken or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            # The application's connection is gone, or it left a transaction
            # open there (or failed in one): never commit a lease statement
            # inside the application's transaction.
            with psycopg.connect(self.conninfo, autocommit=True) as other:
                return _run_statements(other, op)
        return _run_statements(conn, op)

    def close(self) -> None:
        if self.owned and self.conn is not None:
            conn, self.conn = self.conn, None
            conn.close()


class AsyncExecutor:
    """The same as SyncExecutor, on an asyncio connection.  An ``Execute``
    with a timeout is abandoned when it runs out, and its connection closed:
    the renewer never waits on a network that does not answer."""

    def __init__(self, conn: "Optional[psycopg.AsyncConnection[Any]]", conninfo: str,
                 stop: Optional[asyncio.Event] = None) -> None:
        self.conn = conn
        self.conninfo = conninfo
        self.owned = conn is None
        self.stop = stop if stop is not None else asyncio.Event()

    async def perform(self, op: Op) -> Any:
        if isinstance(op, Execute):
            if op.timeout is None:
                return await self._execute(op)
            try:
                return await asyncio.wait_for(self._execute(op), op.timeout)
            except asyncio.TimeoutError:
                await self.close()
                raise TimeoutError(f"no answer from the server in {op.timeout:.3g} s") from None
        if isinstance(op, OnCursor):
            await op.cursor.execute(op.sql, op.params)
            return None
        return await self._sleep(op)

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
            if self.conn is None or self.conn.closed:
                self.conn = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
            try:
                return await _arun_statements(self.conn, op)
            except (psycopg.OperationalError, asyncio.CancelledError):
                await self.close()  # reopened by the next statement
                raise
        conn = self.conn
        assert conn is not None
        if conn.closed or conn.broken or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            async with await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True) as other:
                return await _arun_statements(other, op)
        return await _arun_statements(conn, op)

    async def close(self) -> None:
        if self.owned and self.conn is not None:
            conn, self.conn = self.conn, None
            try:
                await conn.close()
            except Exception:  # a connection cut mid-query
                pass


async def renew_until_stopped(lease: _core.LeaseBase, conninfo: str, stop: asyncio.Event) -> None:
    """The renewer: dlock.aio runs it as a task, dlock in a thread of its own
    (with its own event loop), on a connection of its own."""
    ex = AsyncExecutor(None, conninfo, stop)
    try:
        await run_async(_core.renew_loop(lease), ex)
    except Exception as e:  # a bug; never leave the lease silently unrenewed
        log.exception('renewer of lease "%s" failed', lease.name)
        lease._mark_lost(f"the renewer failed: {e!r}")
    finally:
        await ex.close()


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
