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

The table and its fence triggers are created once, under an advisory lock,
however many workers start at once.

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
- 503 ``{"detail": "... outcome unknown, check before retrying"}``: the
  connection broke during the COMMIT and the report could not be looked up.
- 503 with ``Retry-After``: the database is down or out of reach (the
  connect is bounded).

The answer is decided by the write: once the fenced transaction committed,
the answer is 200, even if the lease is found lost afterwards (a slow
renewal, a release that got no answer).

A job longer than an HTTP client will wait belongs in a worker, with the
same lease; the shape of the code does not change.
"""

from __future__ import annotations

import asyncio
import os
from typing import Awaitable, Callable, Optional

import psycopg
from psycopg.conninfo import make_conninfo
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

import dlock
import dlock.aio

JOB = "nightly-report"

# The lock name is the row's job; the dlock_fence() trigger refuses a row
# whose token does not hold that lease (SQLSTATE LK001), so a stale run can
# neither insert nor overwrite a report.
SETUP_SQL = """
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
"""

FIND_SQL = "SELECT 1 FROM report WHERE job = %s AND token = %s"

CONNECT_TIMEOUT = 5  # seconds: the database down or black-holed answers 503
RETRY_AFTER = "5"


WRITE_SQL = """
INSERT INTO report (job, token, body) VALUES (%s, %s, %s)
ON CONFLICT (job) DO UPDATE
    SET token = excluded.token, body = excluded.body, written_at = clock_timestamp()
"""

Job = Callable[[], Awaitable[str]]


class Run:
    """How far one request's write got: "not written", "committing" (the
    COMMIT was sent, its answer not yet read), "stored"."""

    def __init__(self) -> None:
        self.phase = "not written"


async def write_report(conninfo: str, lease: dlock.aio.AsyncLease, body: str, run: Run) -> None:
    """The fenced write, in a transaction of its own."""
    async with await psycopg.AsyncConnection.connect(conninfo, prepare_threshold=None) as conn:
        async with conn.transaction():
            await lease.fence(conn.cursor())  # StaleToken if it was lost
            await conn.execute(WRITE_SQL, (JOB, lease.token, body))
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

    @app.on_event("startup")
    async def setup() -> None:
        async with await psycopg.AsyncConnection.connect(bounded) as conn:
            async with conn.transaction():  # the advisory lock until COMMIT
                await conn.execute(SETUP_SQL)

    async def stored(token: int) -> Optional[bool]:
        """Is the report of token stored?  None when that cannot be told."""
        try:
            async with await asyncio.wait_for(psycopg.AsyncConnection.connect(
                    bounded, autocommit=True, prepare_threshold=None), CONNECT_TIMEOUT) as conn:
                cur = await asyncio.wait_for(conn.execute(FIND_SQL, (JOB, token)),
                                             CONNECT_TIMEOUT)
                return await cur.fetchone() is not None
        except (psycopg.Error, OSError, asyncio.TimeoutError):
            return None

    @app.post("/jobs/nightly-report", response_model=Report)
    async def nightly_report() -> Report:
        run = Run()
        token = 0
        body = ""
        try:
            async with dlock.aio.lease(bounded, JOB, ttl=ttl) as lease:
                token = lease.token
                body = await job()
                await write_report(bounded, lease, body, run)
        except dlock.Busy:
            raise HTTPException(409, f"{JOB} is already running") from None
        except (dlock.LeaseLost, dlock.StaleToken, psycopg.Error, OSError) as e:
            if run.phase == "committing":  # the COMMIT's answer was lost
                found = await stored(token)
                if found is None:
                    raise HTTPException(
                        503, f"{JOB}: the outcome of run {token} is unknown (the connection "
                             "broke during COMMIT); check before retrying") from None
                run.phase = "stored" if found else "not written"
            if run.phase != "stored":
                if isinstance(e, (dlock.LeaseLost, dlock.StaleToken)) or dlock.is_stale_token(e):
                    raise HTTPException(
                        503, f"{JOB} lost its lease before its report was stored; another run "
                             f"may have taken over, and nothing of this one was stored ({e}); "
                             "asking again is safe") from None
                if isinstance(e, (psycopg.OperationalError, OSError)):
                    raise HTTPException(
                        503, f"{JOB}: the database is out of reach, nothing of this run was "
                             f"stored ({e}); asking again is safe",
                        headers={"Retry-After": RETRY_AFTER}) from None
                raise  # a bug: 500
            # Stored under a valid lease: the loss came after the write.
        return Report(job=JOB, token=token, report=body)

    return app


if os.environ.get("DLOCK_DSN") is not None:
    app = create_app(os.environ["DLOCK_DSN"])
