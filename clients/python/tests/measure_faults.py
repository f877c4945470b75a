# Copyright (c) 2026, the dlock developers
"""Figures for the README's failure model: measure_faults.py DSN.

Prints how long the blocking client takes, on each fault, to tell the
application (on_lost) or to leave the block, with ttl 3 s:
- network black-holed: from the freeze to on_lost (the deadline);
- leaving the block while black-holed: from the freeze to the block's end
  (ttl 3 s, then 30 s: the release waits at most 5 s);
- renewer cancelled (dlock.aio): from the cancel to on_lost;
- machine suspended past the deadline (faked: the boot-time clock jumps
  100 s), ttl 30 s: from the resume to on_lost;
- acquire black-holed after the connect: from the acquire to dlock.Error;
- release cancelled (dlock.aio, asyncio.wait_for 0.3 s) while black-holed:
  from the cancel to the lease no longer looking held;
- forked child leaving the block: how long its __exit__ takes.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

import psycopg

import dlock
import dlock.aio
from dlock import _core
from _proxy import Proxy


def proxy_for(dsn: str) -> Proxy:
    with psycopg.connect(dsn) as conn:
        host, port, db, user = conn.info.host, conn.info.port, conn.info.dbname, conn.info.user
    return Proxy(os.path.join(host, f".s.PGSQL.{port}"), port, db, user)


def black_hole_to_on_lost(dsn: str) -> float:
    p = proxy_for(dsn)
    lost = threading.Event()
    try:
        with dlock.lease(p.conninfo, f"measure-bh-{os.getpid()}", ttl=3,
                         on_lost=lambda _: lost.set()) as lease:
            time.sleep(0.2)
            p.freeze()
            t0 = time.monotonic()
            lost.wait(30)
            took = time.monotonic() - t0
            p.thaw()
            del lease
    except dlock.LeaseLost:
        pass
    p.close()
    return took


def black_hole_leave(dsn: str, ttl: float = 3) -> float:
    p = proxy_for(dsn)
    with dlock.lease(p.conninfo, f"measure-leave-{ttl}-{os.getpid()}", ttl=ttl):
        p.freeze()
        t0 = time.monotonic()
    took = time.monotonic() - t0
    p.close()
    return took


def cancelled_renewer(dsn: str) -> float:
    took = [float("nan")]

    async def main() -> None:
        lost = asyncio.Event()
        try:
            async with dlock.aio.lease(dsn, f"measure-cancel-{os.getpid()}", ttl=3,
                                       on_lost=lambda _: lost.set()) as lease:
                t0 = time.monotonic()
                assert lease._renewer is not None
                lease._renewer.cancel()
                await asyncio.wait_for(lost.wait(), 30)
                took[0] = time.monotonic() - t0
        except dlock.LeaseLost:
            pass

    asyncio.run(main())
    return took[0]

def suspend_to_on_lost(dsn: str) -> float:
    real = _core.now
    lost = threading.Event()
    took = float("nan")
    try:
        with dlock.lease(dsn, f"measure-suspend-{os.getpid()}", ttl=30,
                         on_lost=lambda _: lost.set()):
            time.sleep(0.5)
            _core.now = lambda: real() + 100
            t0 = time.monotonic()
            lost.wait(60)
            took = time.monotonic() - t0
    except dlock.LeaseLost:
        pass
    finally:
        _core.now = real
    return took


def black_hole_acquire(dsn: str) -> float:
    p = proxy_for(dsn)
    conn = psycopg.connect(p.conninfo, autocommit=True, prepare_threshold=None)
    p.freeze()
    t0 = time.monotonic()
    try:
        with dlock.lease(conn, f"measure-acquire-{os.getpid()}", ttl=30):
            pass
    except dlock.Error:
        pass
    took = time.monotonic() - t0
    p.close()
    conn.close()
    return took


def cancelled_release(dsn: str) -> float:
    p = proxy_for(dsn)
    took = [float("nan")]

    async def run() -> None:
        async with dlock.aio.lease(p.conninfo, f"measure-crel-{os.getpid()}", ttl=30) as lease:
            p.freeze()
            t0 = time.monotonic()
            try:
                await asyncio.wait_for(lease.release(), 0.3)
            except asyncio.TimeoutError:
                t0 = time.monotonic()
            while lease.remaining() > 0:
                await asyncio.sleep(0.001)
            took[0] = time.monotonic() - t0

    asyncio.run(run())
    p.close()
    return took[0]


def main() -> None:
    dsn = sys.argv[1]
    print(f"black hole -> on_lost (ttl 3 s):            {black_hole_to_on_lost(dsn):.2f} s")
    print(f"black hole -> block left (ttl 3 s):         {black_hole_leave(dsn):.2f} s")
    print(f"black hole -> block left (ttl 30 s):        {black_hole_leave(dsn, 30):.2f} s")
    print(f"renewer cancelled -> on_lost:               {cancelled_renewer(dsn) * 1000:.1f} ms")
    print(f"suspend -> on_lost (ttl 30 s):              {suspend_to_on_lost(dsn):.2f} s")
    print(f"acquire black-holed -> dlock.Error:         {black_hole_acquire(dsn):.2f} s")
    print(f"release cancelled -> not held (dlock.aio):  {cancelled_release(dsn) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
