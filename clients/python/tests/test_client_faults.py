# Copyright (c) 2026, the dlock developers
"""The client under the faults of issue 25: forks, a cancelled renewer, a
black-holed release, two threads releasing, owner labels shared by two
contexts, a suspended machine."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
import time
from typing import Any, List

import psycopg
import pytest

import dlock
import dlock.aio
from dlock import _core
from _proxy import Proxy
from conftest import grab, is_held, lease_row

Conn = "psycopg.Connection[Any]"
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.parametrize("mode", ["fork", "mp"])
def test_a_forked_child_leaves_the_parents_lease_alone(dsn: str, name: str, mode: str) -> None:
    out = subprocess.run([sys.executable, os.path.join(HERE, "fork_child.py"), dsn, name, mode],
                         capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    # child exit status 0, still held with the same token, not lost, block ended cleanly
    assert out.stdout.split() == ["0", "True", "True", "False", "ok"], out.stdout + out.stderr


def test_a_cancelled_renewer_loses_the_lease(dsn: str, admin: Conn, name: str) -> None:
    lost: List[Any] = []
    name = f"{name}:{os.getpid()}:{time.time()}"

    async def main() -> None:
        with pytest.raises(dlock.LeaseLost):
            async with dlock.aio.lease(dsn, name, ttl=30, on_lost=lost.append) as lease:
                me = asyncio.current_task()
                for task in asyncio.all_tasks():
                    if task is not me:
                        task.cancel()  # the renewer among them
                await asyncio.sleep(0.5)
                assert lease.lost and "cancelled" in (lease.lost_reason or "")
                assert lost == [lease]

    asyncio.run(main())


def _leave_black_holed(proxy: Proxy, sync: bool, caplog: pytest.LogCaptureFixture) -> float:
    ttl = 3.0
    caplog.set_level(logging.WARNING, logger="dlock")

    async def amain() -> float:
        async with dlock.aio.lease(proxy.conninfo, f"bh-aio-{os.getpid()}", ttl=ttl) as lease:
            proxy.freeze()
            started = time.monotonic()
        assert not lease.lost
        return time.monotonic() - started

    if not sync:
        return asyncio.run(amain())
    with dlock.lease(proxy.conninfo, f"bh-sync-{os.getpid()}", ttl=ttl) as lease:
        proxy.freeze()
        started = time.monotonic()
    assert not lease.lost
    return time.monotonic() - started


@pytest.mark.parametrize("sync", [True, False])
def test_c07_leaving_the_block_while_black_holed_is_bounded(proxy: Proxy, sync: bool,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    took: List[float] = []
    t = threading.Thread(target=lambda: took.append(_leave_black_holed(proxy, sync, caplog)),
                         daemon=True)
    t.start()
    t.join(20)
    proxy.thaw()
    assert took, "leaving the block still waits on the black hole after 20 s"
    # at most min(5, max(1, time left < 3 s)) for the release, plus slack
    assert took[0] < 6, f"leaving the block took {took[0]:.1f} s"
    assert any("expires by itself" in r.getMessage() for r in caplog.records)


def test_a_connection_passed_in_that_prepares_is_warned_about_once(
        dsn: str, name: str, caplog: pytest.LogCaptureFixture) -> None:
    from dlock import _drive
    caplog.set_level(logging.WARNING, logger="dlock")
    _drive._warned_prepare = False
    for _ in range(2):
        with psycopg.connect(dsn, autocommit=True) as conn:
            with dlock.lease(conn, name, ttl=30):
                pass
    assert sum("prepare_threshold" in r.getMessage() for r in caplog.records) == 1
    with psycopg.connect(dsn, autocommit=True, prepare_threshold=None) as conn:
        caplog.clear()
        with dlock.lease(conn, name, ttl=30) as lease:
            assert lease._ex.conn is conn  # type: ignore[attr-defined]
    assert not caplog.records


def test_c08_two_threads_releasing_at_once(dsn: str, admin: Conn, name: str) -> None:
    for round_ in range(10):
        with psycopg.connect(dsn, autocommit=True) as conn:
            lease = dlock.lease(conn, name, ttl=30).__enter__()
            barrier = threading.Barrier(2)
            errors: List[BaseException] = []

            def release() -> None:
                barrier.wait()
                try:
                    lease.release()
                except BaseException as e:
                    errors.append(e)

            threads = [threading.Thread(target=release) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert errors == [], f"round {round_}: {errors!r}"
            assert not lease.lost
            assert lease_row(admin, name)[0] is False  # type: ignore[index]
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_one_owner_label_in_two_contexts_never_shares_a_lease(dsn: str, admin: Conn,
                                                               name: str) -> None:
    with dlock.lease(dsn, name, ttl=30, owner="host-a") as first:
        with pytest.raises(dlock.Busy):
            with dlock.lease(dsn, name, ttl=30, owner="host-a"):
                pytest.fail("a second context with the same owner label got the lease")
        assert is_held(admin, name, first.token)
        assert first.owner == "host-a"
        assert first.owner_id is not None and first.owner_id.startswith(f"host-a:{os.getpid()}:")
        row = admin.execute("SELECT owner FROM dlock_leases WHERE name = %s", (name,)).fetchone()
        assert row == (first.owner_id,)


def test_a_suspended_machine_finds_its_lease_lost_on_resume(dsn: str, name: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    real = _core.now
    name = f"{name}:{os.getpid()}:{time.time()}"
    with pytest.raises(dlock.LeaseLost):
        with dlock.lease(dsn, name, ttl=30) as lease:
            assert not lease.lost
            # The machine sleeps for a minute: the clock of the deadlines counts it.
            monkeypatch.setattr(_core, "now", lambda: real() + 60)
            assert lease.lost and lease.remaining() == 0.0
            deadline = time.monotonic() + 20
            while lease.lost_reason is None or "deadline" not in lease.lost_reason:
                assert time.monotonic() < deadline
                time.sleep(0.05)


def test_two_leaders_with_one_owner_label_are_not_both_elected(dsn: str, admin: Conn,
                                                               name: str) -> None:
    with dlock.leader(dsn, name, owner="host-a", ttl=5, retry=0.2) as a:
        term = next(a)
        b = dlock.leader(dsn, name, owner="host-a", ttl=5, retry=0.2)
        got: List[Any] = []

        def campaign() -> None:
            try:
                got.append(next(b))
            except StopIteration:
                pass

        t = threading.Thread(target=campaign, daemon=True)
        t.start()
        t.join(2)
        b.stop()
        t.join(10)
        assert got == [], "a second leader with the same owner label was elected"
        row = admin.execute("SELECT owner, token FROM dlock_leases WHERE name = %s",
                            (name,)).fetchone()
        assert row == (term.owner_id, term.token)
        assert term.owner_id is not None and term.owner_id.startswith("host-a:")


def test_c08_two_tasks_releasing_at_once(dsn: str, admin: Conn, name: str) -> None:
    async def main() -> None:
        for _ in range(5):
            async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
                lease = await dlock.aio.lease(conn, name, ttl=30).__aenter__()
                results = await asyncio.gather(lease.release(), lease.release(),
                                               return_exceptions=True)
                assert results == [None, None]
                assert not lease.lost
                assert lease_row(admin, name)[0] is False  # type: ignore[index]

    asyncio.run(main())


def test_c07_a_black_holed_release_on_a_connection_passed_in_discards_it(
        proxy: Proxy, caplog: pytest.LogCaptureFixture) -> None:
    conn = psycopg.connect(proxy.conninfo, autocommit=True, prepare_threshold=None)
    done: List[float] = []

    def leave() -> None:
        with dlock.lease(conn, f"bh-user-{os.getpid()}", ttl=3):
            proxy.freeze()
            started = time.monotonic()
        done.append(time.monotonic() - started)

    t = threading.Thread(target=leave, daemon=True)
    t.start()
    t.join(20)
    proxy.thaw()
    assert done and done[0] < 6, done
    with pytest.raises(psycopg.OperationalError):
        conn.execute("SELECT 1")  # shut down: never used again
    conn.close()
