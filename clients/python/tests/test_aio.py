# Copyright (c) 2026, the dlock developers
"""dlock.aio: the same behaviour as the blocking API, with asyncio."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any, List

import psycopg
import pytest

import dlock
import dlock.aio
from _proxy import Proxy, wait_for
from conftest import grab, is_held, lease_row

Conn = "psycopg.Connection[Any]"


def test_c01_c03_busy_and_renewal_across_several_ttls(dsn: str, admin: Conn, name: str) -> None:
    ttl = 2.0

    async def main() -> None:
        async with dlock.aio.lease(dsn, name, ttl=ttl) as lease:
            assert is_held(admin, name, lease.token)
            with pytest.raises(dlock.Busy):
                async with dlock.aio.lease(dsn, name, ttl=30, wait=0.2):
                    pytest.fail("entered the block of a busy lease")
            first_expiry = lease.expires_at
            end = time.monotonic() + 3.5 * ttl
            while time.monotonic() < end:
                await asyncio.sleep(0.5)
                assert is_held(admin, name, lease.token)
                assert 0 < lease.remaining() <= ttl
            assert not lease.lost
            assert lease.expires_at > first_expiry + timedelta(seconds=2 * ttl)
        assert lease_row(admin, name)[0] is False  # type: ignore[index]

    asyncio.run(main())


def test_a_connection_passed_in_must_be_idle(dsn: str, admin: Conn, name: str) -> None:
    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            await conn.execute("SELECT 1")
            with pytest.raises(dlock.Error, match="inside a transaction"):
                async with dlock.aio.lease(conn, name, ttl=30):
                    pytest.fail("entered the block")
            await conn.rollback()
            async with dlock.aio.lease(conn, name, ttl=30) as lease:
                assert is_held(admin, name, lease.token)
        assert lease_row(admin, name)[0] is False  # type: ignore[index]

    asyncio.run(main())


def test_c04_overrun_raises_lease_lost(dsn: str, admin: Conn, name: str) -> None:
    lost: List[dlock.aio.AsyncLease] = []

    async def main() -> None:
        with pytest.raises(dlock.LeaseLost) as info:
            async with dlock.aio.lease(dsn, name, ttl=0.5, renew=False,
                                       on_lost=lost.append) as lease:
                await asyncio.sleep(0.8)
                assert grab(admin, name) is not None
        assert info.value.token == lease.token and lost == [lease]
        # An exception of the block's own wins over the loss.
        with pytest.raises(ZeroDivisionError):
            async with dlock.aio.lease(dsn, name + "/2", ttl=0.3, renew=False):
                await asyncio.sleep(0.5)
                1 / 0

    asyncio.run(main())


def test_c05_killed_renewal_connection_marks_the_lease_lost(proxy: Proxy, name: str) -> None:
    ttl = 1.5
    lost: List[dlock.aio.AsyncLease] = []

    async def main() -> None:
        with pytest.raises(dlock.LeaseLost):
            async with dlock.aio.lease(proxy.conninfo, name, ttl=ttl,
                                       on_lost=lost.append) as lease:
                while proxy.accepted < 2:
                    await asyncio.sleep(0.02)
                proxy.refuse()
                proxy.cut()
                cut = time.monotonic()
                assert await lease.wait_lost(timeout=ttl + 30)
                assert time.monotonic() - cut <= ttl + 3
                await asyncio.sleep(0.3)
                assert lost == [lease] and lease.lost

    asyncio.run(asyncio.wait_for(main(), 120))


def test_c05_broken_renewal_connection_is_reopened(proxy: Proxy, admin: Conn, name: str) -> None:
    ttl = 3.0

    async def main() -> None:
        async with dlock.aio.lease(proxy.conninfo, name, ttl=ttl) as lease:
            while proxy.accepted < 2:
                await asyncio.sleep(0.02)
            for _ in range(3):
                proxy.cut()
                await asyncio.sleep(ttl / 2)
            await asyncio.sleep(ttl)
            assert not lease.lost and is_held(admin, name, lease.token)
            assert proxy.accepted >= 4
        assert lease_row(admin, name)[0] is False  # type: ignore[index]

    asyncio.run(asyncio.wait_for(main(), 120))


def test_c05_a_stalled_network_marks_the_lease_lost_at_its_deadline(proxy: Proxy, name: str) -> None:
    ttl = 1.5
    lost: List[float] = []

    async def main() -> None:
        with pytest.raises(dlock.LeaseLost):
            async with dlock.aio.lease(proxy.conninfo, name, ttl=ttl,
                                       on_lost=lambda _: lost.append(time.monotonic())) as lease:
                while proxy.accepted < 2:
                    await asyncio.sleep(0.02)
                proxy.freeze()
                frozen = time.monotonic()
                assert await lease.wait_lost(timeout=ttl + 30)
                while not lost:
                    await asyncio.sleep(0.02)
                assert lost[0] - frozen <= ttl + 3

    asyncio.run(asyncio.wait_for(main(), 120))


def test_c06_a_stale_fence_raises_stale_token(dsn: str, admin: Conn, name: str) -> None:
    async def main() -> None:
        async with await psycopg.AsyncConnection.connect(dsn) as conn:
            with pytest.raises(dlock.LeaseLost):
                async with dlock.aio.lease(dsn, name, ttl=0.5, renew=False) as lease:
                    async with conn.transaction():
                        await lease.fence(conn.cursor())
                    await asyncio.sleep(0.8)
                    assert grab(admin, name) is not None
                    with pytest.raises(dlock.StaleToken) as info:
                        async with conn.transaction():
                            await lease.fence(conn.cursor())
                    assert info.value.token == lease.token and lease.lost

    asyncio.run(main())


def test_leader_terms(dsn: str, admin: Conn, name: str) -> None:
    """Two asyncio leaders: one term at a time; closing one hands over."""

    async def main() -> None:
        a = dlock.aio.leader(dsn, name, "a", ttl=1.5)
        b = dlock.aio.leader(dsn, name, "b", ttl=1.5)
        term_a = await a.__anext__()
        assert not term_a.lost and term_a.owner == "a"
        b_next = asyncio.ensure_future(b.__anext__())
        await asyncio.sleep(2.0)  # more than a TTL: a renews, b stays out
        assert not b_next.done() and not term_a.lost
        await a.aclose()  # steps down
        term_b = await asyncio.wait_for(b_next, 30)
        assert term_b.token > term_a.token and term_b.owner == "b"
        assert is_held(admin, name, term_b.token)
        await b.aclose()
        assert lease_row(admin, name)[0] is False  # type: ignore[index]

    asyncio.run(asyncio.wait_for(main(), 120))


def test_min_hold_keeps_the_name_after_an_early_release(dsn: str, admin: Conn, name: str) -> None:
    async def main() -> None:
        async with dlock.aio.lease(dsn, name, ttl=30, min_hold=20) as lease:
            pass
        assert not is_held(admin, name, lease.token)
        assert grab(admin, name) is None
        with pytest.raises(dlock.Busy):
            async with dlock.aio.lease(dsn, name, ttl=30):
                pytest.fail("entered the block inside the minimum hold")
    asyncio.run(main())
