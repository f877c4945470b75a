#!/usr/bin/python3
# Copyright (c) 2026, the dlock developers
"""A job runner that holds a dlock lease while it works, with psycopg 3.

This is what dlock-run does for a shell command, done from inside an
application, where the writes themselves can be fenced.  Every replica may
start the same job at the same moment; one holder at a time works through
its steps:

1. acquire  dlock_acquire(name, ttl, wait) in a transaction of its own: the
            token is valid once that transaction has committed.  NULL means
            somebody else holds the lease: exit 75.
2. work     each step does its slow part outside the database, then writes
            its result in ONE transaction that begins with
            dlock_assert(name, token).  If the lease was lost meanwhile
            (this process stalled, the network was slow, somebody took the
            lease over), the server refuses the transaction with SQLSTATE
            LK001 and nothing of it commits: exit 70.
3. renew    between steps, once a third of the TTL has passed since the
            last renewal; false means the lease is lost: exit 70.
4. release  at the end; false means the job overran its lease: exit 70.

The results go to an append-only table, job_result (created by --setup),
one row per step with the token that wrote it.

Usage:
    worker.py --setup
    worker.py [--job NAME] [--ttl SECONDS] [--wait SECONDS] [--steps N]
              [--step-seconds S] [--owner TEXT] [--dsn CONNINFO]

The connection comes from the libpq environment (PGHOST, PGDATABASE,
PGSERVICE, ...) or --dsn.  The dlock functions are found through the
connection's search_path.

Exit status: 0 done; 75 busy; 70 lease lost (the job stopped, its last step
was not written); 1 any other error.  The same numbers as dlock-run's.
"""

import argparse
import os
import sys
import time
from datetime import timedelta

import psycopg

EXIT_BUSY = 75
EXIT_LOST = 70

# The SQLSTATE dlock_assert and the dlock_fence() trigger raise for a stale token.
STALE_TOKEN = "LK001"

SETUP_SQL = """
CREATE TABLE IF NOT EXISTS job_result (
    job        text        NOT NULL,
    step       int         NOT NULL,
    token      bigint      NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    result     text
)
"""


class LeaseLost(Exception):
    """The lease is no longer ours: stop, and write nothing more."""


def log(message):
    print(f"worker[{os.getpid()}]: {message}", flush=True)


def acquire(conn, job, ttl, wait, owner):
    """Take the lease; its token, or None when it stays busy for wait."""
    # autocommit: this statement is a transaction of its own, committed on
    # return, so the token is valid from here on.
    row = conn.execute(
        "SELECT dlock_acquire(%s, %s, %s, %s)",
        (job, timedelta(seconds=ttl), timedelta(seconds=wait), owner),
    ).fetchone()
    return row[0]


def renew(conn, job, token, ttl):
    """Extend the lease; False if it is no longer held by token."""
    row = conn.execute(
        "SELECT dlock_renew(%s, %s, %s)", (job, token, timedelta(seconds=ttl))
    ).fetchone()
    return row[0]


def release(conn, job, token):
    """Give the lease back; False if it had expired or changed hands."""
    row = conn.execute("SELECT dlock_release(%s, %s)", (job, token)).fetchone()
    return row[0]


def do_work(step, seconds):
    """The slow part of a step, outside the database (an API call, a file)."""
    time.sleep(seconds)
    return f"step {step} done"


def write_step(conn, job, token, step, result):
    """Write a step's result, fenced: all of it commits under our lease, or none."""
    try:
        with conn.transaction():
            # Checks the token, and keeps the lease from changing hands
            # until this transaction ends.
            conn.execute("SELECT dlock_assert(%s, %s)", (job, token))
            conn.execute(
                "INSERT INTO job_result (job, step, token, result)"
                " VALUES (%s, %s, %s, %s)",
                (job, step, token, result),
            )
    except psycopg.Error as e:
        if e.sqlstate == STALE_TOKEN:
            detail = f" ({e.diag.message_detail})" if e.diag.message_detail else ""
            raise LeaseLost(f"{e.diag.message_primary}{detail}") from None
        raise


def run_job(conn, args):
    token = acquire(conn, args.job, args.ttl, args.wait, args.owner)
    if token is None:
        log(f"job {args.job!r} is busy: somebody else holds its lease")
        return EXIT_BUSY
    log(f"acquired {args.job!r} with token {token}")

    renew_every = args.ttl / 3
    renewed_at = time.monotonic()
    try:
        for step in range(1, args.steps + 1):
            if time.monotonic() - renewed_at >= renew_every:
                sent = time.monotonic()
                if not renew(conn, args.job, token, args.ttl):
                    raise LeaseLost("renewal refused: the lease expired or was taken over")
                renewed_at = sent
            result = do_work(step, args.step_seconds)
            write_step(conn, args.job, token, step, result)
            log(f"step {step} written with token {token}")
    except LeaseLost as e:
        log(f"lease on {args.job!r} lost, stopping: {e}")
        return EXIT_LOST
    except BaseException:
        # Anything else: give the lease back so another replica can retry
        # at once (it would also expire on its own), then fail.
        try:
            release(conn, args.job, token)
        except psycopg.Error:
            pass
        raise

    if not release(conn, args.job, token):
        log(f"job {args.job!r} overran its lease (token {token})")
        return EXIT_LOST
    log(f"released {args.job!r} (token {token})")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Run a job under a dlock lease, one replica at a time.")
    parser.add_argument("--dsn", default="",
                        help="libpq connection string (default: the environment)")
    parser.add_argument("--setup", action="store_true",
                        help="create the job_result table, then exit")
    parser.add_argument("--job", default="nightly-report", help="the job (and lock) name")
    parser.add_argument("--ttl", type=float, default=30.0, help="lease length, in seconds")
    parser.add_argument("--wait", type=float, default=0.0,
                        help="wait this long for a busy lease, in seconds")
    parser.add_argument("--steps", type=int, default=3, help="number of steps")
    parser.add_argument("--step-seconds", type=float, default=1.0,
                        help="how long the slow part of a step takes")
    parser.add_argument("--owner", default=None, help="owner label for the lease")
    args = parser.parse_args(argv)

    try:
        with psycopg.connect(args.dsn, autocommit=True,
                             application_name="dlock-worker") as conn:
            if args.setup:
                conn.execute(SETUP_SQL)
                return 0
            return run_job(conn, args)
    except psycopg.Error as e:
        print(f"worker[{os.getpid()}]: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
