#!/usr/bin/python3
# Copyright (c) 2026, the dlock developers
"""POST /jobs/nightly-report on dlock: one run at a time, across every replica.

The endpoint that used to take a Redis ``SET NX EX`` lock, with "keep shorter
than TTL or renew" in a comment, becomes one ``async with``: the lease is
renewed in the background for as long as the job runs, and the report is
written through a fenced table, so a replica that stalled past its lease
(a GC pause, a frozen VM) cannot overwrite the report of the run that took
over from it.

Run any number of replicas against one database where dlock is installed,
from the examples/ directory, with the client importable (Debian's
python3-uvicorn has no ``uvicorn`` command):

    cd examples
    PYTHONPATH=../clients/python/src DLOCK_DSN="dbname=app" \
        python3 -m uvicorn fastapi_app:app --port 8000 --workers 3
    curl -X POST localhost:8000/jobs/nightly-report

The tables and their fence triggers are created at each worker's first
request, under an advisory lock, however many workers start at once; with
the database down, the workers start anyway and answer 503 with
``Retry-After`` until it is back.

Answers (the job runs inside the request):

- 200 ``{"job": "nightly-report", "token": N, "report": "..."}``: this run
  held the lease with fencing token N from start to end, and its report is
  stored.
- 409 ``{"detail": "nightly-report is already running"}``: another run holds
  the lease, in this replica or another one.  Nothing was done.
- 503 ``{"detail": "nightly-report lost its lease ..."}``: the fenced write
  of this run was refused, or never made (it stalled, or the database was
  out of reach, for longer than the TTL); another run may have taken over.
  Nothing of this run was stored; asking again is safe.
- 503 ``{"detail": "... outcome unknown, check before retrying"}`` with
  ``Retry-After``: the write's COMMIT got no answer, and whether it committed
  could not be told (see below).  Look for the run's token in ``report_run``
  before asking again.
- 503 ``{"detail": "nightly-report: dlock is not installed ..."}``: the
  database has no dlock (of either edition, found by ``dlock_edition()``) on
  the connection's search_path; nothing was done.
- 503 with ``Retry-After`` (``... asking again is safe``): the database is
  down or out of reach; nothing of this run was stored.  The connect is
  bounded (5 s), and so is the write: the lease's remaining time plus 5 s,
  after which its connection is shut down.

The answer is decided by the write: once the fenced transaction committed,
the answer is 200, even if the lease is found lost afterwards (a slow
renewal, a release that got no answer).  When the COMMIT was sent and its
answer lost (a broken connection, or none within the bound), the run is
looked up, on a new connection, in ``report_run``: one row per run that
stored its report, written in the same fenced transaction and never
overwritten (``report`` holds only the latest run's report, so it cannot
say whether an earlier run committed).  The lookup is trusted only once
the writing session has ended, since a COMMIT held up in the network could
still land after it: the writing backend's pid, recorded before the write,
is ended with ``pg_terminate_backend()`` (allowed on a session of the same
role), and the lookup waits, at most 10 s, until that pid is gone from
``pg_stat_activity``.  Otherwise the answer is "outcome unknown".
``report_run`` grows by one row per run; delete old rows, under the lease
(it is fenced), if that matters.

Liveness: when the database restarts while a run holds the lease, that
run's request fails (503), but its lease, stored in a table, outlives the
restart until its TTL ends (the release could not reach the server): until
then every replica answers 409 "already running" although nothing runs.
Choose the TTL with that wait in mind.

A job longer than an HTTP client will wait belongs in a worker, with the
same lease; the shape of the code does not change.
"""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any, Awaitable, Callable, Optional

import psycopg
from psycopg.conninfo import make_conninfo
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

import dlock
import dlock.aio

JOB = "nightly-report"

# The lock name is the row's job; the dlock_fence() trigger refuses a row
# whose token does not hold that lease (SQLSTATE LK001), so a stale run can
# neither insert nor overwrite a report.  report holds the latest report of
# each job (the next run overwrites it); report_run keeps one row per run that
# stored its report, written in the same fenced transaction and never
# overwritten, so "did run N commit?" has an answer after later runs too.
# dlock is found by dlock_edition() (either edition has it; the SQL edition
# installed by its psql script has no pg_extension row): without it on
# search_path, the first statement fails and the answer says so.
SETUP_SQL = """
SELECT dlock_edition();
SELECT pg_advisory_xact_lock(hashtext('dlock examples/fastapi_app.py setup'));
CREATE TABLE IF NOT EXISTS report (
    job        text        PRIMARY KEY,
    token      bigint      NOT NULL,
    body       text        NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE TRIGGER report_fence BEFORE INSERT OR UPDATE OR DELETE ON report
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token', 'column');
CREATE OR REPLACE TRIGGER report_fence_truncate BEFORE TRUNCATE ON report
    FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('nightly-report');
CREATE TABLE IF NOT EXISTS report_run (
    job        text        NOT NULL,
    token      bigint      NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (job, token)
);
CREATE OR REPLACE TRIGGER report_run_fence BEFORE INSERT OR UPDATE OR DELETE ON report_run
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token', 'column');
CREATE OR REPLACE TRIGGER report_run_fence_truncate BEFORE TRUNCATE ON report_run
    FOR EACH STATEMENT EXECUTE FUNCTION dlock_fence('nightly-report');
"""

WRITE_SQL = """
INSERT INTO report (job, token, body) VALUES (%s, %s, %s)
ON CONFLICT (job) DO UPDATE
    SET token = excluded.token, body = excluded.body, written_at = clock_timestamp()
"""
RUN_SQL = "INSERT INTO report_run (job, token) VALUES (%s, %s)"
FIND_SQL = "SELECT 1 FROM report_run WHERE job = %s AND token = %s"

# The writing session ended: its transaction committed or rolled back, for good.
TERMINATE_SQL = """
SELECT pg_terminate_backend(pid) FROM pg_stat_activity
 WHERE pid = %s AND application_name = %s
"""
GONE_SQL = """
SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = %s AND application_name = %s)
"""

CONNECT_TIMEOUT = 5  # seconds: the database down or black-holed answers 503
RETRY_AFTER = "5"
WRITE_MARGIN = 5.0  # seconds past the lease's remaining time the write may take
SETTLE_TIMEOUT = 10.0  # seconds to end the writing session and look the run up

Job = Callable[[], Awaitable[str]]


class Run:
    """How far one request's write got: "not written", "committing" (the
    COMMIT was sent, its answer not yet read), "stored"; and the writing
    session (its backend's pid and application_name), to end it when the
    outcome is unknown."""

    def __init__(self, token: int) -> None:
        self.token = token
        self.phase = "not written"
        self.pid: Optional[int] = None
        self.conn: "Optional[psycopg.AsyncConnection[Any]]" = None
        self.session = f"{JOB} run {token}"  # application_name of the write


class Unreachable(Exception):
    """The database cannot be reached now (answered 503 with Retry-After)."""


class NotInstalled(Exception):
    """dlock is not installed in the database, or not on search_path (503)."""


class WriteTimeout(Exception):
    """The fenced write got no answer in time; its connection was shut down."""


def break_connection(conn: "psycopg.AsyncConnection[Any]") -> None:
    """Shut the connection's socket down: a statement waiting on it fails."""
    try:
        with socket.socket(fileno=os.dup(conn.pgconn.socket)) as s:
            s.shutdown(socket.SHUT_RDWR)
    except Exception:  # closed already
        pass


async def write_report(conninfo: str, lease: dlock.aio.AsyncLease, body: str, run: Run) -> None:
    """The fenced write, in a transaction of its own."""
    async with await psycopg.AsyncConnection.connect(
            conninfo, prepare_threshold=None, application_name=run.session) as conn:
        run.conn, run.pid = conn, conn.info.backend_pid
        async with conn.transaction():
            await lease.fence(conn.cursor())  # StaleToken if it was lost
            await conn.execute(WRITE_SQL, (JOB, lease.token, body))
            await conn.execute(RUN_SQL, (JOB, lease.token))
            run.phase = "committing"  # leaving the block sends COMMIT
        run.phase = "stored"


class Report(BaseModel):
    """The 200 answer: the run's fencing token and its report."""

    job: str
    token: int
    report: str


async def build_report() -> str:
    """The slow part: queries, calls to other services, rendering."""
    await asyncio.sleep(2)
    return "all figures reconciled"


def create_app(conninfo: str, *, ttl: float = 30.0, job: Job = build_report) -> FastAPI:
    """One replica.  ``ttl`` is how long a stalled run can keep others out."""
    app = FastAPI(title="nightly report, on dlock")

    bounded = make_conninfo(conninfo, connect_timeout=CONNECT_TIMEOUT)
    setup_lock = asyncio.Lock()
    set_up = False

    async def connect() -> "psycopg.AsyncConnection[Any]":
        return await asyncio.wait_for(psycopg.AsyncConnection.connect(
            bounded, autocommit=True, prepare_threshold=None), CONNECT_TIMEOUT)

    async def setup() -> None:
        """The tables, once per worker, at its first request (the database
        may be down when the workers start)."""
        nonlocal set_up
        async with setup_lock:
            if set_up:
                return
            try:
                async with await connect() as conn:
                    async with conn.transaction():  # the advisory lock until COMMIT
                        await asyncio.wait_for(conn.execute(SETUP_SQL), CONNECT_TIMEOUT)
            except psycopg.errors.UndefinedFunction as e:
                raise NotInstalled(e) from None
            except (psycopg.OperationalError, OSError, asyncio.TimeoutError) as e:
                raise Unreachable(e) from None
            set_up = True

    async def settled(run: Run) -> Optional[bool]:
        """Did the run's report commit?  The writing session is ended first
        (pg_terminate_backend: allowed on a session of one's own role), so
        that a COMMIT still on its way cannot land after the answer; the
        lookup is conclusive only once that session is gone.  None when that
        cannot be told within SETTLE_TIMEOUT."""
        if run.pid is None:
            return None
        loop = asyncio.get_running_loop()
        end = loop.time() + SETTLE_TIMEOUT
        session = (run.pid, run.session)
        try:
            async with await connect() as conn:
                await asyncio.wait_for(conn.execute(TERMINATE_SQL, session), end - loop.time())
                while True:
                    cur = await asyncio.wait_for(conn.execute(GONE_SQL, session),
                                                 end - loop.time())
                    row = await cur.fetchone()
                    if row is not None and row[0]:
                        break
                    if loop.time() + 0.05 >= end:
                        return None
                    await asyncio.sleep(0.05)
                cur = await asyncio.wait_for(conn.execute(FIND_SQL, (JOB, run.token)),
                                             end - loop.time())
                return await cur.fetchone() is not None
        except (psycopg.Error, OSError, asyncio.TimeoutError):
            return None

    async def bounded_write(lease: dlock.aio.AsyncLease, body: str, run: Run) -> None:
        """write_report, given the lease's remaining time plus WRITE_MARGIN:
        past that (a black-holed fence or COMMIT), its connection is shut down
        and WriteTimeout raised."""
        task = asyncio.ensure_future(write_report(bounded, lease, body, run))
        bound = lease.remaining() + WRITE_MARGIN
        done, _ = await asyncio.wait({task}, timeout=bound)
        if task in done:
            task.result()
            return
        if run.conn is not None:
            break_connection(run.conn)  # the ROLLBACK on the way out fails at once
        task.cancel()
        await asyncio.wait({task}, timeout=CONNECT_TIMEOUT)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: the timeout is what is reported
        raise WriteTimeout(f"no answer to the write in {bound:.3g} s")

    @app.post("/jobs/nightly-report", response_model=Report)
    async def nightly_report() -> Report:
        try:
            await setup()
        except Unreachable as e:
            raise HTTPException(503, f"{JOB}: the database is out of reach ({e}); "
                                     "asking again is safe",
                                headers={"Retry-After": RETRY_AFTER}) from None
        except NotInstalled as e:
            raise HTTPException(503, f"{JOB}: dlock is not installed in this database, or its "
                                     "schema is not on search_path ({e}): install it (CREATE "
                                     "EXTENSION dlock, or the SQL edition: docs/editions.md); "
                                     "nothing was done") from None
        run = Run(0)
        body = ""
        try:
            async with dlock.aio.lease(bounded, JOB, ttl=ttl) as lease:
                run = Run(lease.token)
                body = await job()
                await bounded_write(lease, body, run)
        except dlock.Busy:
            raise HTTPException(409, f"{JOB} is already running") from None
        except (dlock.LeaseLost, dlock.StaleToken, psycopg.Error, OSError, WriteTimeout) as e:
            # A COMMIT sent and not answered, or a write cut short while its
            # session may live on: ask the database, once that session ended.
            if run.phase == "committing" or (isinstance(e, WriteTimeout) and run.pid is not None):
                found = await settled(run)
                if found is None:
                    raise HTTPException(
                        503, f"{JOB}: run {run.token}'s outcome unknown, check before retrying "
                             f"(its COMMIT got no answer, {e}, and its session could not be "
                             "ended and looked up)", headers={"Retry-After": RETRY_AFTER}
                    ) from None
                run.phase = "stored" if found else "not written"
            if run.phase != "stored":
                if isinstance(e, (dlock.LeaseLost, dlock.StaleToken)) or dlock.is_stale_token(e):
                    raise HTTPException(
                        503, f"{JOB} lost its lease before its report was stored; another run "
                             f"may have taken over, and nothing of this one was stored ({e}); "
                             "asking again is safe") from None
                if isinstance(e, (psycopg.OperationalError, OSError, WriteTimeout)):
                    raise HTTPException(
                        503, f"{JOB}: the database is out of reach, nothing of this run was "
                             f"stored ({e}); asking again is safe",
                        headers={"Retry-After": RETRY_AFTER}) from None
                raise  # a bug: 500
            # Stored under a valid lease: the loss came after the write.
        return Report(job=JOB, token=run.token, report=body)

    return app


if os.environ.get("DLOCK_DSN") is not None:
    app = create_app(os.environ["DLOCK_DSN"])
