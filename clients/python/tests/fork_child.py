# Copyright (c) 2026, the dlock developers
"""test_client_faults.py's forking process: fork_child.py DSN NAME MODE.

It holds a lease (ttl 2 s) and forks inside the block: MODE "fork" with
os.fork(), the child leaving the block with sys.exit(0) (its __exit__ runs,
the interpreter exits normally, objects are collected); MODE "mp" with
multiprocessing's fork start method, the child calling release() and
fence() on the inherited lease.  Then the parent works on past the ttl and
prints one line: child's exit status, held, same token, lease.lost, and
how the block ended.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from typing import Any

import psycopg

import dlock


def mp_child(lease: dlock.Lease, dsn: str) -> None:
    lease.release()  # does nothing here
    assert lease.lost and lease.remaining() == 0.0, "the child does not hold the lease"
    with psycopg.connect(dsn) as conn:
        try:
            lease.fence(conn.cursor())
        except dlock.Error:
            pass
        else:
            sys.exit(3)


def main() -> None:
    dsn, name, mode = sys.argv[1:4]
    ended = "ok"
    status: Any = None
    try:
        with dlock.lease(dsn, name, ttl=2) as lease:
            token = lease.token
            if mode == "fork":
                pid = os.fork()
                if pid == 0:
                    sys.exit(0)  # the child leaves the block
                status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            else:
                p = multiprocessing.get_context("fork").Process(target=mp_child, args=(lease, dsn))
                p.start()
                p.join(60)
                status = p.exitcode
            time.sleep(3)  # past the ttl: the parent's renewer goes on
            with psycopg.connect(dsn) as conn:
                row = conn.execute("SELECT held, token FROM dlock_leases WHERE name = %s",
                                   (name,)).fetchone()
            assert row is not None
            held, same, lost = row[0], row[1] == token, lease.lost
    except Exception as e:
        ended = type(e).__name__
    print(status, held, same, lost, ended, flush=True)


if __name__ == "__main__":
    main()
