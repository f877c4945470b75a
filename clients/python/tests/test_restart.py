# Copyright (c) 2026, the dlock developers
"""A lease across a server restart (pg_ctl restart -m fast): the renewer
reconnects and renews before the deadline; the lease is never lost.

Restarts the server of DLOCK_TEST_DSN, found by PGDATA: run it last.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from typing import Any, Dict

import psycopg
import pytest

import dlock
import dlock.aio
from conftest import is_held, lease_row


def restart_server() -> None:
    pgdata = os.environ["PGDATA"]
    log = os.path.join(os.path.dirname(os.path.abspath(pgdata)), "server.log")
    subprocess.run(["pg_ctl", "restart", "-D", pgdata, "-w", "-m", "fast", "-t", "120",
                    "-l", log], check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180)


@pytest.mark.skipif(not os.environ.get("PGDATA"), reason="needs PGDATA to restart the server")
def test_a_lease_across_a_server_restart(dsn: str, name: str) -> None:
    ttl = 20.0
    aio_state: Dict[str, Any] = {}
    aio_held = threading.Event()
    aio_go = threading.Event()

    async def aio_holder() -> None:
        async with dlock.aio.lease(dsn, name + "/aio", ttl=ttl) as lease:
            aio_state["lease"] = lease
            aio_held.set()
            while not aio_go.is_set():
                await asyncio.sleep(0.05)
            aio_state["lost"] = lease.lost

    def run_aio() -> None:
        try:
            asyncio.run(aio_holder())
        except BaseException as e:
            aio_state["error"] = e

    t = threading.Thread(target=run_aio)
    t.start()
    try:
        with dlock.lease(dsn, name, ttl=ttl) as lease:
            assert aio_held.wait(60), aio_state.get("error")
            alease = aio_state["lease"]
            before, abefore = lease.expires_at, alease.expires_at
            restart_server()
            # Both renewers reconnect and renew.
            end = time.monotonic() + ttl / 2
            while (lease.expires_at <= before or alease.expires_at <= abefore) \
                    and time.monotonic() < end:
                time.sleep(0.1)
            assert lease.expires_at > before, "the blocking renewer did not renew after the restart"
            assert alease.expires_at > abefore, "the asyncio renewer did not renew after the restart"
            assert not lease.lost and not alease.lost
            with psycopg.connect(dsn, autocommit=True) as admin:
                assert is_held(admin, name, lease.token)
                assert is_held(admin, name + "/aio", alease.token)
            aio_go.set()
        # Released through a new connection: the block's own died in the restart.
    finally:
        aio_go.set()
        t.join()
    assert "error" not in aio_state, aio_state.get("error")
    assert aio_state["lost"] is False
    with psycopg.connect(dsn, autocommit=True) as admin:
        assert lease_row(admin, name)[0] is False  # type: ignore[index]
        assert lease_row(admin, name + "/aio")[0] is False  # type: ignore[index]
