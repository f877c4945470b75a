# Copyright (c) 2026, the dlock developers
"""dlock.leader(): the leader-election loop, in one process and in two."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from typing import Any, List, Optional, Tuple

import psycopg
import pytest

import dlock
from conftest import is_held, lease_row

Conn = "psycopg.Connection[Any]"
HERE = os.path.dirname(os.path.abspath(__file__))


def test_leader_iterator_steps_down_and_closes(dsn: str, admin: Conn, name: str) -> None:
    with dlock.leader(dsn, name, "me", ttl=1.5, retry=0.1) as election:
        first = next(election)
        assert first.owner == "me" and is_held(admin, name, first.token)
        time.sleep(2.0)  # renewed by acquiring again as "me": same token
        assert not first.lost and is_held(admin, name, first.token)
        second = next(election)  # steps down, then campaigns again
        assert first.lost is False and first.remaining() == 0.0
        assert second.token > first.token
    assert election.term is None
    assert lease_row(admin, name)[0] is False  # type: ignore[index]
    with pytest.raises(ValueError):
        dlock.leader(dsn, name, "", ttl=1)


def test_c10_leader_loses_a_term_taken_over(dsn: str, admin: Conn, name: str) -> None:
    lost: List[dlock.Lease] = []
    with dlock.leader(dsn, name, "me", ttl=1.5, on_lost=lost.append) as election:
        term = next(election)
        # An operator (or a bug) frees the lease, and somebody else takes it.
        admin.execute("SELECT dlock_release(%s, %s)", (name, term.token))
        other = admin.execute("SELECT dlock_acquire(%s, '30 s', '0', 'other')",
                              (name,)).fetchone()
        assert other is not None and other[0] > term.token
        assert term.wait_lost(timeout=30)
        assert lost == [term] and "refused" in (term.lost_reason or "")


class Replica:
    """A leader_child.py process and the lines it printed."""

    def __init__(self, dsn: str, name: str, owner: str) -> None:
        self.owner = owner
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "leader_child.py"), dsn, name, owner],
            stdout=subprocess.PIPE, text=True)
        self.lines: "queue.Queue[Tuple[str, int]]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            what, token = line.split()
            self.lines.put((what, int(token)))

    def next(self, timeout: float) -> Optional[Tuple[str, int]]:
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait()


def test_c10_two_competing_processes(dsn: str, admin: Conn, name: str) -> None:
    a, b = Replica(dsn, name, "a"), Replica(dsn, name, "b")
    try:
        # One of them is elected; the other stays out while it holds.
        deadline = time.monotonic() + 60
        first: Optional[Tuple[Replica, int]] = None
        while first is None and time.monotonic() < deadline:
            for r in (a, b):
                line = r.next(0.1)
                if line is not None:
                    assert line[0] == "elected", line
                    first = (r, line[1])
                    break
        assert first is not None, "nobody was elected"
        leader, token = first
        follower = b if leader is a else a
        assert follower.next(3.0) is None, "two leaders at once"
        assert is_held(admin, name, token)

        # The leader stalls (SIGSTOP) past its lease: the follower takes over.
        leader.proc.send_signal(signal.SIGSTOP)
        line = follower.next(60)
        assert line is not None and line[0] == "elected" and line[1] > token
        new_token = line[1]
        assert is_held(admin, name, new_token)

        # The stalled leader wakes up and is told at once that it lost.
        leader.proc.send_signal(signal.SIGCONT)
        line = leader.next(30)
        assert line == ("deposed", token)
        assert leader.next(3.0) is None, "the old leader came back while the new one holds"

        # The new leader dies: the old one is elected again, with a higher token.
        follower.proc.kill()
        line = leader.next(60)
        assert line is not None and line[0] == "elected" and line[1] > new_token
    finally:
        a.kill()
        b.kill()
