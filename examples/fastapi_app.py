#!/usr/bin/python3
# Copyright (c) 2026, the dlock developers
"""POST /jobs/nightly-report on dlock: one run at a time, across every replica.

The endpoint that used to take a Redis ``SET NX EX`` lock, with "keep shorter
than TTL or renew" in a comment, becomes one ``async with``: the lease is
renewed in the background for as long as the job runs, and the report is
written through a fenced table, so a replica that stalled past its lease
(a GC pause, a frozen VM) cannot overwrite the report of the run that took
over from it.

Run any number of replicas against one database where dlock is installed:

    DLOCK_DSN="dbname=app" uvicorn fastapi_app:app --port 8000

Answers (the job runs inside the request):

- 200 ``{"job": "nightly-report", "token": N, "report": "..."}``: this run
  held the lease with fencing token N from start to end, and its report is
  stored.
- 409 ``{"detail": "nightly-report is already running"}``: another run holds
  the lease, in this replica or another one.  Nothing was done.
- 503 ``{"detail": "nightly-report lost its lease ..."}``: this run lost its
  lease before it could store its report (it stalled, or the database was
  out of reach, for longer than the TTL); another run may have taken over.
  Nothing of this run was stored; asking again is safe.

A job longer than an HTTP client will wait belongs in a worker, with the
same lease; the shape of the code does not change.
"""

from __future__ import annotations

import asyncio
import os
from typing import Awaitable, Callable

import psycopg
from fastapi import FastAPI, HTTPException
from pydantic import BaseModel

import dlock
import dlock.aio

JOB = "nightly-report"

# The lock name is the row's job; the dlock_fence() trigger refuses a row
# whose token does not hold that lease (SQLSTATE LK001), so a stale run can
# neither insert nor overwrite a report.
SETUP_SQL = """
CREATE TABLE IF NOT EXISTS report (
    job        text        PRIMARY KEY,
    token      bigint      NOT NULL,
    body       text        NOT NULL,
    written_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE OR REPLACE TRIGGER report_fence BEFORE INSERT OR UPDATE ON report
    FOR EACH ROW EXECUTE FUNCTION dlock_fence('job', 'token', 'column');
"""

WRITE_SQL = """
INSERT INTO report (job, token, body) VALUES (%s, %s, %s)
ON CONFLICT (job) DO UPDATE
    SET token = excluded.token, body = excluded.body, written_at = clock_timestamp()
"""

Job = Callable[[], Awaitable[str]]


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

    @app.on_event("startup")
    async def setup() -> None:
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            await conn.execute(SETUP_SQL)

    @app.post("/jobs/nightly-report", response_model=Report)
    async def nightly_report() -> Report:
        try:
            async with dlock.aio.lease(conninfo, JOB, ttl=ttl) as lease:
                body = await job()
                async with await psycopg.AsyncConnection.connect(conninfo) as conn:
                    async with conn.transaction():
                        await lease.fence(conn.cursor())  # StaleToken if it was lost
                        await conn.execute(WRITE_SQL, (JOB, lease.token, body))
        except dlock.Busy:
            raise HTTPException(409, f"{JOB} is already running") from None
        except (dlock.LeaseLost, dlock.StaleToken) as e:
            raise HTTPException(
                503, f"{JOB} lost its lease before its report was stored; another run may "
                     f"have taken over, and nothing of this one was stored ({e})") from None
        return Report(job=JOB, token=lease.token, report=body)

    return app


if os.environ.get("DLOCK_DSN") is not None:
    app = create_app(os.environ["DLOCK_DSN"])
