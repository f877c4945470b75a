# Copyright (c) 2026, the dlock developers
"""dlock.lease(), the blocking API, against a real server."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Any, List

import psycopg
import pytest
from psycopg import pq
from psycopg.rows import dict_row

import dlock
from _proxy import Proxy, wait_for
from conftest import grab, is_held, lease_row

Conn = "psycopg.Connection[Any]"


def test_acquire_is_committed_before_the_block(dsn: str, admin: Conn, name: str) -> None:
    with dlock.lease(dsn, name, ttl=30) as lease:
        row = lease_row(admin, name)
        assert row is not None
        held, token, expires_at = row
        assert held is True and token == lease.token and lease.token > 0
        assert lease.name == name and lease.owner is None
        assert lease.expires_at == expires_at
        assert 25 < lease.remaining() <= 30
        assert not lease.lost and lease.lost_reason is None
    assert not is_held(admin, name, lease.token)
    assert lease.remaining() == 0.0 and not lease.lost


def test_c01_busy(dsn: str, admin: Conn, name: str) -> None:
    with dlock.lease(dsn, name, ttl=30) as first:
        with pytest.raises(dlock.Busy) as info:
            with dlock.lease(dsn, name, ttl=30):
                pytest.fail("entered the block of a busy lease")
        assert info.value.name == name
        started = time.monotonic()
        with pytest.raises(dlock.Busy):
            with dlock.lease(dsn, name, ttl=30, wait=0.5):
                pytest.fail("entered the block of a busy lease")
        assert time.monotonic() - started >= 0.45, "wait was not honoured"
        assert is_held(admin, name, first.token)
    with dlock.lease(dsn, name, ttl=30) as second:
        assert second.token > first.token


def test_c02_wait_gets_the_lease_when_it_is_released(dsn: str, name: str) -> None:
    held = threading.Event()
    tokens: List[int] = []

    def holder() -> None:
        with dlock.lease(dsn, name, ttl=30) as lease:
            tokens.append(lease.token)
            held.set()
            time.sleep(0.5)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(30)
    with dlock.lease(dsn, name, ttl=timedelta(seconds=30), wait=timedelta(seconds=60)) as lease:
        assert lease.token > tokens[0]
    t.join()


@pytest.mark.parametrize("ttl, wait, error", [
    (0, 0, ValueError), (-1, 0, ValueError), (float("nan"), 0, ValueError),
    (timedelta(0), 0, ValueError), (10, -1, ValueError), (True, 0, TypeError),
    ("10", 0, TypeError), (10, "1", TypeError),
])
def test_bad_durations_are_refused(dsn: str, admin: Conn, name: str, ttl: Any, wait: Any,
                                   error: type) -> None:
    with pytest.raises(error):
        with dlock.lease(dsn, name, ttl=ttl, wait=wait):
            pytest.fail("entered the block")
    assert lease_row(admin, name) is None


def test_a_connection_passed_in(dsn: str, admin: Conn, name: str) -> None:
    # Not autocommit, and a row factory of its own: neither may matter.
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        with dlock.lease(conn, name, ttl=30) as lease:
            assert conn.info.transaction_status == pq.TransactionStatus.IDLE, \
                "the acquire was left uncommitted"
            assert is_held(admin, name, lease.token)
            # The application opens a transaction and leaves it open: the
            # release must not go into it (a rollback would undo it).
            conn.execute("SELECT 1")
        assert conn.info.transaction_status == pq.TransactionStatus.INTRANS
        conn.rollback()
        assert lease_row(admin, name)[0] is False  # type: ignore[index]


def test_a_connection_inside_a_transaction_is_refused(dsn: str, admin: Conn, name: str) -> None:
    with psycopg.connect(dsn) as conn:
        conn.execute("SELECT 1")
        with pytest.raises(dlock.Error, match="inside a transaction"):
            with dlock.lease(conn, name, ttl=30):
                pytest.fail("entered the block")
    assert lease_row(admin, name) is None


def test_c03_renewal_across_several_ttls(dsn: str, admin: Conn, name: str) -> None:
    ttl = 2.0
    lost: List[dlock.Lease] = []
    with dlock.lease(dsn, name, ttl=ttl, on_lost=lost.append) as lease:
        first_expiry = lease.expires_at
        end = time.monotonic() + 3.5 * ttl
        checks = 0
        while time.monotonic() < end:
            time.sleep(0.5)
            assert is_held(admin, name, lease.token), f"lease not held after {checks} checks"
            assert grab(admin, name) is None, "another holder got a renewed lease"
            assert 0 < lease.remaining() <= ttl
            checks += 1
        assert not lease.lost and not lost
        assert lease.expires_at > first_expiry + timedelta(seconds=2 * ttl)
    assert not lost
    assert lease_row(admin, name)[0] is False  # type: ignore[index]


def test_c04_overrun_raises_lease_lost(dsn: str, admin: Conn, name: str) -> None:
    lost: List[dlock.Lease] = []
    with pytest.raises(dlock.LeaseLost) as info:
        with dlock.lease(dsn, name, ttl=0.5, renew=False, on_lost=lost.append) as lease:
            time.sleep(0.8)
            assert lease.lost and lease.remaining() == 0.0
            taker = grab(admin, name)
            assert taker is not None and taker > lease.token
    assert info.value.token == lease.token and info.value.name == name
    assert "overran" in info.value.reason
    assert lost == [lease]
    assert is_held(admin, name, taker), "the overrunning holder's exit touched the new lease"


def test_an_exception_in_the_block_keeps_its_own(dsn: str, admin: Conn, name: str) -> None:
    with pytest.raises(ZeroDivisionError):
        with dlock.lease(dsn, name, ttl=0.3, renew=False) as lease:
            time.sleep(0.5)
            1 / 0
    assert lease.lost
    with pytest.raises(KeyError):
        with dlock.lease(dsn, name, ttl=30) as lease:
            raise KeyError("boom")
    assert not lease.lost
    assert lease_row(admin, name)[0] is False, "the lease was not released"  # type: ignore[index]


def test_explicit_release(dsn: str, admin: Conn, name: str) -> None:
    with dlock.lease(dsn, name, ttl=30) as lease:
        lease.release()
        assert lease_row(admin, name)[0] is False  # type: ignore[index]
        lease.release()  # twice: nothing
        assert grab(admin, name) is not None
    assert not lease.lost


def test_c05_killed_renewal_connection_marks_the_lease_lost(proxy: Proxy, admin: Conn,
                                                         name: str) -> None:
    ttl = 1.5
    lost: List[dlock.Lease] = []
    with pytest.raises(dlock.LeaseLost):
        with dlock.lease(proxy.conninfo, name, ttl=ttl, on_lost=lost.append) as lease:
            # The block's connection and the renewer's.
            wait_for(lambda: proxy.accepted >= 2, 30, "the renewer's connection")
            proxy.refuse()
            proxy.cut()
            cut = time.monotonic()
            assert lease.wait_lost(timeout=ttl + 30)
            assert time.monotonic() - cut <= ttl + 3, "lost long after its deadline"
            wait_for(lambda: len(lost) > 0, 30, "on_lost")
            assert lease.lost and lease.remaining() == 0.0
            assert "not renewed before its deadline" in (lease.lost_reason or "")
            time.sleep(0.3)
            assert lost == [lease], "on_lost was not called exactly once"
    # The server lets the next holder in once the lease has expired.
    taker = grab(admin, name, wait="30 s")
    assert taker is not None and taker > lease.token


def test_c05_broken_renewal_connection_is_reopened(proxy: Proxy, admin: Conn, name: str) -> None:
    ttl = 3.0
    lost: List[dlock.Lease] = []
    with dlock.lease(proxy.conninfo, name, ttl=ttl, on_lost=lost.append) as lease:
        wait_for(lambda: proxy.accepted >= 2, 30, "the renewer's connection")
        for _ in range(3):
            proxy.cut()
            time.sleep(ttl / 2)
        time.sleep(ttl)
        assert not lease.lost and not lost
        assert is_held(admin, name, lease.token)
        assert proxy.accepted >= 4, "the renewer did not reconnect"
    # The release went through a new connection too.
    assert lease_row(admin, name)[0] is False  # type: ignore[index]


def test_multi_host_connection_string_fails_over(proxy: Proxy, admin: Conn, name: str) -> None:
    second = Proxy(proxy.target, proxy.port, proxy.dbname, proxy.user)
    try:
        conninfo = (f"host={proxy.dir},{second.dir} port={proxy.port},{proxy.port} "
                    f"dbname={proxy.dbname} user={proxy.user}")
        ttl = 3.0
        with dlock.lease(conninfo, name, ttl=ttl) as lease:
            wait_for(lambda: proxy.accepted >= 2, 30, "the renewer's connection")
            assert second.accepted == 0
            proxy.refuse()  # the first host goes away
            proxy.cut()
            time.sleep(2 * ttl)
            assert not lease.lost
            assert is_held(admin, name, lease.token)
            assert second.accepted >= 1, "the renewer did not fail over"
        assert lease_row(admin, name)[0] is False  # type: ignore[index]
    finally:
        second.close()


def test_c05_a_stalled_network_marks_the_lease_lost_at_its_deadline(proxy: Proxy, admin: Conn,
                                                                 name: str) -> None:
    ttl = 1.5
    lost: List[float] = []
    with pytest.raises(dlock.LeaseLost):
        with dlock.lease(proxy.conninfo, name, ttl=ttl,
                         on_lost=lambda _: lost.append(time.monotonic())) as lease:
            wait_for(lambda: proxy.accepted >= 2, 30, "the renewer's connection")
            proxy.freeze()  # nothing gets through, nothing is closed
            frozen = time.monotonic()
            assert lease.wait_lost(timeout=ttl + 30)
            wait_for(lambda: len(lost) == 1, 30, "on_lost")
            # A renewal that hangs does not hold the loss back.
            assert lost[0] - frozen <= ttl + 3
        # Leaving the block raises LeaseLost without waiting on the network.


def test_c06_fence_declares_the_token(dsn: str, admin: Conn, name: str) -> None:
    admin.execute("DROP TABLE IF EXISTS fenced_py")
    admin.execute("CREATE TABLE fenced_py (k text PRIMARY KEY, v text, token bigint)")
    admin.execute(f"CREATE TRIGGER fence BEFORE INSERT OR UPDATE ON fenced_py FOR EACH ROW "
                  f"EXECUTE FUNCTION dlock_fence('{name}', 'token')")
    with psycopg.connect(dsn) as conn, pytest.raises(dlock.LeaseLost):
        with dlock.lease(dsn, name, ttl=0.5, renew=False) as lease:
            with conn.transaction():
                cur = conn.cursor()
                lease.fence(cur)
                cur.execute("INSERT INTO fenced_py VALUES ('a', 'first', %s)", (lease.token,))
            conn.autocommit = True
            with pytest.raises(dlock.Error, match="needs a transaction"):
                lease.fence(conn.cursor())
            conn.autocommit = False
            time.sleep(0.8)
            taker = grab(admin, name)
            assert taker is not None
            # The fence: the server says the token is stale.
            with pytest.raises(dlock.StaleToken) as info:
                with conn.transaction():
                    lease.fence(conn.cursor())
            assert info.value.sqlstate == "LK001" and info.value.token == lease.token
            assert dlock.is_stale_token(info.value)
            assert lease.lost
            # Fenced writes with the stale token: psycopg's error, recognised.
            with pytest.raises(psycopg.Error) as raw:
                with conn.transaction():
                    conn.execute("UPDATE fenced_py SET v = 'stale', token = %s WHERE k = 'a'",
                                 (lease.token,))
            assert dlock.is_stale_token(raw.value)
            assert not dlock.is_stale_token(ValueError())
            with pytest.raises(dlock.StaleToken):
                with dlock.stale_token_errors():
                    with conn.transaction():
                        conn.execute("INSERT INTO fenced_py VALUES ('b', 'stale', %s)",
                                     (lease.token,))
        # Leaving the block: the lease was lost, LeaseLost.
    assert admin.execute("SELECT k, v FROM fenced_py ORDER BY k").fetchall() == [("a", "first")]


def test_c12_a_missing_extension_says_what_to_do(dsn: str, name: str) -> None:
    # dlock's schema off the search_path looks, from here, exactly like a
    # database without dlock: "function dlock_acquire(...) does not exist".
    with psycopg.connect(dsn, autocommit=True, options="-c search_path=pg_catalog") as conn:
        with pytest.raises(dlock.Error, match="CREATE EXTENSION dlock") as err:
            with dlock.lease(conn, name, ttl=5):
                pass
    assert isinstance(err.value.__cause__, psycopg.errors.UndefinedFunction)


def test_min_hold_keeps_the_name_after_an_early_release(dsn: str, admin: Conn, name: str) -> None:
    # dlock 1.2's minimum hold (ShedLock's lockAtLeastFor): the block ends
    # at once, the release goes through, and the name stays unavailable,
    # to everybody, until acquired_at + min_hold.
    with dlock.lease(dsn, name, ttl=30, min_hold=timedelta(seconds=20)) as lease:
        pass
    assert not is_held(admin, name, lease.token)
    assert grab(admin, name) is None
    row = admin.execute("SELECT min_hold, available_at - acquired_at FROM dlock_leases "
                        "WHERE name = %s", (name,)).fetchone()
    assert row == (timedelta(seconds=20), timedelta(seconds=20))
    with pytest.raises(dlock.Busy):
        with dlock.lease(dsn, name, ttl=30):
            pass


def test_min_hold_is_checked_before_any_statement(dsn: str, name: str) -> None:
    with pytest.raises(ValueError, match="min_hold must not be longer than ttl"):
        dlock.lease(dsn, name, ttl=5, min_hold=6)
    with pytest.raises(ValueError):
        dlock.lease(dsn, name, ttl=5, min_hold=-1)
