# Copyright (c) 2026, the dlock developers
"""The client interrupted (issue 25, second review): a release cancelled
half way, a suspend noticed at once, an acquire that gets no answer."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, Dict, List

import psycopg
import pytest

import dlock
import dlock.aio
from dlock import _core
from _proxy import Proxy, wait_for
from conftest import grab

Conn = "psycopg.Connection[Any]"


@pytest.fixture
def name(name: str) -> str:
    """A name of this run's: the leases left behind here expire by themselves."""
    return f"{name}:{os.getpid()}:{time.time()}"


def _not_held(lease: Any) -> bool:
    """Lost or released: never the state of a lease still held."""
    return bool(lease._ended) and lease.remaining() == 0.0 and not repr(lease).endswith(" held>")


def test_a_cancelled_release_never_leaves_the_lease_held(proxy: Proxy, dsn: str, admin: Conn,
                                                        name: str) -> None:
    async def frozen() -> None:
        async with dlock.aio.lease(proxy.conninfo, name + "/frozen", ttl=30) as lease:
            proxy.freeze()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(lease.release(), timeout=0.3)
            assert _not_held(lease), repr(lease)
        proxy.thaw()

    async def racing() -> int:
        # Cancelled at every point of the release: whatever the server did,
        # the lease object never says held once the release was cut short.
        interrupted = 0
        for i in range(30):
            n = f"{name}/{i}"
            async with dlock.aio.lease(dsn, n, ttl=30) as lease:
                try:
                    await asyncio.wait_for(lease.release(), timeout=0.0005 + i * 0.0004)
                    continue
                except asyncio.TimeoutError:
                    interrupted += 1
                assert _not_held(lease), f"round {i}: {lease!r} remaining {lease.remaining()}"
                if grab(admin, n) is not None:  # released on the server after all
                    assert not lease.lost and lease.remaining() == 0.0
        return interrupted

    asyncio.run(frozen())
    assert asyncio.run(racing()) > 0, "no release was interrupted: nothing tested"


def test_a_cancelled_exit_shuts_down_the_connection_passed_in(proxy: Proxy, dsn: str,
                                                             name: str) -> None:
    async def frozen() -> None:
        conn = await psycopg.AsyncConnection.connect(proxy.conninfo, autocommit=True,
                                                     prepare_threshold=None)
        ctx = dlock.aio.lease(conn, name, ttl=30)
        lease = await ctx.__aenter__()
        proxy.freeze()
        task = asyncio.ensure_future(ctx.__aexit__(None, None, None))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert _not_held(lease), repr(lease)
        end = time.monotonic() + 10
        while not conn.broken:  # shut down, as after a release without an answer
            assert time.monotonic() < end, f"still {conn.info.transaction_status.name}"
            await asyncio.sleep(0.05)
        proxy.thaw()
        await conn.close()

    async def racing() -> Dict[str, int]:
        seen: Dict[str, int] = {}
        for i in range(40):
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True,
                                                             prepare_threshold=None) as conn:
                ctx = dlock.aio.lease(conn, f"{name}/{i}", ttl=30)
                lease = await ctx.__aenter__()
                task = asyncio.ensure_future(ctx.__aexit__(None, None, None))
                await asyncio.sleep(i * 0.0003)
                task.cancel()
                try:
                    await task
                    continue
                except asyncio.CancelledError:
                    pass
                await asyncio.sleep(0.2)
                assert _not_held(lease), f"round {i}: {lease!r}"
                if conn.broken:
                    seen["shut down"] = seen.get("shut down", 0) + 1
                else:  # cancelled while no statement of ours ran on it: usable
                    assert conn.info.transaction_status.name == "IDLE", f"round {i}"
                    await conn.execute("SELECT 1")
                    seen["idle"] = seen.get("idle", 0) + 1
        return seen

    asyncio.run(frozen())
    assert asyncio.run(racing()), "no exit was cancelled: nothing tested"


@pytest.mark.parametrize("sync", [True, False])
def test_a_suspend_is_reported_soon_after_resume(dsn: str, name: str, sync: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # ttl 60: the next renewal tick comes 20 s after the acquire; the loss
    # must be reported well before it (within a second or two of resume).
    real = _core.now
    seen: Dict[str, float] = {}
    resumed: List[float] = []

    def suspend() -> None:
        monkeypatch.setattr(_core, "now", lambda: real() + 100)
        resumed.append(time.monotonic())

    def on_lost(_: Any) -> None:
        seen.setdefault("on_lost", time.monotonic())

    if sync:
        with pytest.raises(dlock.LeaseLost):
            with dlock.lease(dsn, name, ttl=60, on_lost=on_lost) as lease:
                def waiter() -> None:
                    if lease.wait_lost(timeout=30):
                        seen["wait_lost"] = time.monotonic()
                t = threading.Thread(target=waiter, daemon=True)
                t.start()
                time.sleep(0.5)
                suspend()
                t.join(30)
    else:
        async def main() -> None:
            with pytest.raises(dlock.LeaseLost):
                async with dlock.aio.lease(dsn, name, ttl=60, on_lost=on_lost) as lease:
                    async def waiter() -> None:
                        if await lease.wait_lost(timeout=30):
                            seen["wait_lost"] = time.monotonic()
                    t = asyncio.ensure_future(waiter())
                    await asyncio.sleep(0.5)
                    suspend()
                    await asyncio.wait_for(t, 30)
        asyncio.run(main())
    after = {k: v - resumed[0] for k, v in seen.items()}
    assert set(after) == {"on_lost", "wait_lost"}, after
    assert max(after.values()) < 5, f"reported {after} s after resume"


def _acquire_black_holed(proxy: Proxy, name: str, sync: bool) -> BaseException:
    if sync:
        conn = psycopg.connect(proxy.conninfo, autocommit=True, prepare_threshold=None)
        proxy.freeze()
        try:
            with dlock.lease(conn, name, ttl=30):
                pytest.fail("entered the block")
        except BaseException as e:
            return e
        finally:
            conn.close()
        raise AssertionError("unreachable")

    async def main() -> BaseException:
        conn = await psycopg.AsyncConnection.connect(proxy.conninfo, autocommit=True,
                                                     prepare_threshold=None)
        proxy.freeze()
        try:
            async with dlock.aio.lease(conn, name, ttl=30):
                pytest.fail("entered the block")
        except BaseException as e:
            return e
        finally:
            end = time.monotonic() + 5
            while not conn.broken:  # shut down: never used again
                assert time.monotonic() < end, repr(conn)
                await asyncio.sleep(0.05)
            await conn.close()
        raise AssertionError("unreachable")
    return asyncio.run(main())


@pytest.mark.parametrize("sync", [True, False])
def test_an_acquire_without_an_answer_is_bounded(proxy: Proxy, name: str, sync: bool) -> None:
    got: List[BaseException] = []
    started = time.monotonic()
    t = threading.Thread(target=lambda: got.append(_acquire_black_holed(proxy, name, sync)),
                         daemon=True)
    t.start()
    t.join(30)
    took = time.monotonic() - started
    proxy.thaw()
    assert got, "the acquire still waits on the black hole after 30 s"
    # wait (0) + the 5 s margin, plus slack
    assert took < 15, f"the acquire gave up after {took:.1f} s"
    assert isinstance(got[0], dlock.Error), repr(got[0])
    assert isinstance(got[0].__cause__, TimeoutError), repr(got[0].__cause__)
    assert "expires by itself" in str(got[0])
    wait_for(lambda: not t.is_alive(), 5, "the thread")
