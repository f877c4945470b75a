# Copyright (c) 2026, the dlock developers
"""Fixtures for the dlock client's tests: a real database, never a mock.

DLOCK_TEST_DSN names a scratch database where dlock is installed
(test/scripts/python_client.sh creates one on the throwaway cluster of
"make check").  Every test uses lock names of its own.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator, Optional

import psycopg
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _proxy import Proxy  # noqa: E402


def _dsn() -> str:
    dsn = os.environ.get("DLOCK_TEST_DSN")
    if not dsn:
        pytest.exit("DLOCK_TEST_DSN must name a scratch database with dlock installed", 2)
    return dsn


@pytest.fixture
def dsn() -> str:
    return _dsn()


@pytest.fixture
def admin() -> Iterator["psycopg.Connection[Any]"]:
    """A separate autocommit connection that looks at (and competes for) leases."""
    with psycopg.connect(_dsn(), autocommit=True) as conn:
        yield conn


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    return f"py:{request.node.nodeid}"


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    """A Unix-socket proxy in front of the server, to cut or freeze connections."""
    with psycopg.connect(_dsn()) as conn:
        host, port, dbname, user = conn.info.host, conn.info.port, conn.info.dbname, conn.info.user
    assert host.startswith("/"), "the tests reach the server through a Unix socket"
    p = Proxy(os.path.join(host, f".s.PGSQL.{port}"), port, dbname, user)
    try:
        yield p
    finally:
        p.close()


def lease_row(conn: "psycopg.Connection[Any]", name: str) -> Optional[tuple[Any, ...]]:
    """(held, token, expires_at) of a lock name, or None."""
    return conn.execute("SELECT held, token, expires_at FROM dlock_leases WHERE name = %s",
                        (name,)).fetchone()


def is_held(conn: "psycopg.Connection[Any]", name: str, token: int) -> bool:
    row = lease_row(conn, name)
    return row is not None and row[0] is True and row[1] == token


def grab(conn: "psycopg.Connection[Any]", name: str, ttl: str = "30 s",
         wait: str = "0") -> Optional[int]:
    """Another holder's acquire: its token, or None when busy."""
    row = conn.execute("SELECT dlock_acquire(%s, %s, %s)", (name, ttl, wait)).fetchone()
    assert row is not None
    token: Optional[int] = row[0]
    return token
