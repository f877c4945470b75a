# Copyright (c) 2026, the dlock developers
"""examples/fastapi_app.py, driven by FastAPI's TestClient against the real
database.  Each TestClient is a replica: an app with an event loop of its own."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from typing import Any, Dict, List

import psycopg
from fastapi.testclient import TestClient
from httpx import Response

from _proxy import wait_for

# The repository's examples/, or where DLOCK_EXAMPLES says (the test script
# runs a copy of these tests).
sys.path.insert(0, os.environ.get("DLOCK_EXAMPLES") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
import fastapi_app  # noqa: E402

Conn = "psycopg.Connection[Any]"
URL = "/jobs/nightly-report"


def lease_state(admin: Conn) -> Any:
    return admin.execute("SELECT held, token FROM dlock_leases WHERE name = %s",
                         (fastapi_app.JOB,)).fetchone()


def post_in_thread(client: TestClient, out: Dict[str, Response]) -> threading.Thread:
    def run() -> None:
        out["response"] = client.post(URL)
    t = threading.Thread(target=run)
    t.start()
    return t


def test_two_concurrent_requests_give_one_200_and_one_409(dsn: str, admin: Conn) -> None:
    gate = threading.Event()
    ran: List[int] = []

    async def gated_job() -> str:
        ran.append(1)
        await asyncio.to_thread(gate.wait, 60)  # the loop (and the renewer) keep running
        return "gated report"

    with TestClient(fastapi_app.create_app(dsn, ttl=2, job=gated_job)) as a, \
            TestClient(fastapi_app.create_app(dsn, ttl=2, job=gated_job)) as b:
        out_a: Dict[str, Response] = {}
        out_b: Dict[str, Response] = {}
        ta, tb = post_in_thread(a, out_a), post_in_thread(b, out_b)
        try:
            wait_for(lambda: "response" in out_a or "response" in out_b, 60, "the first answer")
            first = out_a.get("response") or out_b.get("response")
            assert first is not None and first.status_code == 409
            assert first.json() == {"detail": "nightly-report is already running"}
            time.sleep(3)  # past the TTL: the running job's lease is renewed
            assert lease_state(admin)[0] is True
        finally:
            gate.set()
            ta.join(60)
            tb.join(60)
    statuses = sorted([out_a["response"].status_code, out_b["response"].status_code])
    assert statuses == [200, 409]
    ok = out_a["response"] if out_a["response"].status_code == 200 else out_b["response"]
    body = ok.json()
    assert body["job"] == "nightly-report" and body["report"] == "gated report"
    assert ran == [1], "the job ran twice"
    assert admin.execute("SELECT token, body FROM report WHERE job = 'nightly-report'"
                         ).fetchone() == (body["token"], "gated report")
    assert lease_state(admin)[0] is False


def test_a_stalled_run_taken_over_is_refused_and_reports_the_loss(dsn: str, admin: Conn) -> None:
    stalled = threading.Event()
    wake = threading.Event()

    async def stalling_job() -> str:
        stalled.set()
        wake.wait(60)  # blocks the replica's whole event loop, renewer included
        return "stale report"

    async def quick_job() -> str:
        return "fresh report"

    with TestClient(fastapi_app.create_app(dsn, ttl=1, job=stalling_job)) as a, \
            TestClient(fastapi_app.create_app(dsn, ttl=30, job=quick_job)) as b:
        out_a: Dict[str, Response] = {}
        ta = post_in_thread(a, out_a)
        try:
            assert stalled.wait(60)
            held, stale_token = lease_state(admin)
            assert held is True
            wait_for(lambda: lease_state(admin)[0] is False, 60,
                     "the stalled run's lease to expire")
            # Another replica takes the job over and stores its report.
            fresh = b.post(URL)
            assert fresh.status_code == 200, fresh.text
            assert fresh.json()["token"] > stale_token
        finally:
            # The stalled run wakes up: its write is refused, its request says so.
            wake.set()
            ta.join(60)
    stale = out_a["response"]
    assert stale.status_code == 503, stale.text
    assert "lost its lease" in stale.json()["detail"]
    assert admin.execute("SELECT token, body FROM report WHERE job = 'nightly-report'"
                         ).fetchone() == (fresh.json()["token"], "fresh report")


def test_several_workers_start_at_once(dsn: str, admin: Conn) -> None:
    admin.execute("DROP TABLE IF EXISTS report")
    errors: List[BaseException] = []
    barrier = threading.Barrier(4)

    def worker() -> None:
        barrier.wait()
        try:
            with TestClient(fastapi_app.create_app(dsn)):
                pass
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    triggers = admin.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = 'report'::regclass "
                             "ORDER BY 1").fetchall()
    assert triggers == [("report_fence",), ("report_fence_truncate",)]


def test_the_database_out_of_reach_answers_503_with_retry_after(proxy: Any) -> None:
    with TestClient(fastapi_app.create_app(proxy.conninfo)) as client:
        proxy.refuse()
        proxy.cut()
        started = time.monotonic()
        answer = client.post(URL)
        assert time.monotonic() - started < 15
    assert answer.status_code == 503, answer.text
    assert "Retry-After" in answer.headers


def test_a_loss_noticed_after_the_write_committed_answers_200(dsn: str, admin: Conn,
                                                             monkeypatch: Any) -> None:
    real = fastapi_app.write_report

    async def write_then_stall(*args: Any) -> None:
        await real(*args)
        time.sleep(2.5)  # the loop (and the renewer) stall past the 1 s ttl

    async def quick_job() -> str:
        return "stored before the stall"

    monkeypatch.setattr(fastapi_app, "write_report", write_then_stall)
    with TestClient(fastapi_app.create_app(dsn, ttl=1, job=quick_job)) as client:
        answer = client.post(URL)
    assert answer.status_code == 200, answer.text
    token = answer.json()["token"]
    assert admin.execute("SELECT token, body FROM report WHERE job = 'nightly-report'"
                         ).fetchone() == (token, "stored before the stall")


def test_a_commit_whose_answer_was_lost_is_looked_up_by_token(dsn: str, admin: Conn,
                                                             monkeypatch: Any) -> None:
    real = fastapi_app.write_report
    commit = {"really": True}

    async def answer_lost(conninfo: str, lease: Any, body: str, run: Any) -> None:
        if commit["really"]:
            await real(conninfo, lease, body, run)
        run.phase = "committing"
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    async def quick_job() -> str:
        return "committed, answer lost"

    monkeypatch.setattr(fastapi_app, "write_report", answer_lost)
    with TestClient(fastapi_app.create_app(dsn, ttl=30, job=quick_job)) as client:
        found = client.post(URL)
        commit["really"] = False
        missing = client.post(URL)
    assert found.status_code == 200, found.text
    assert missing.status_code == 503, missing.text
    assert "asking again is safe" in missing.json()["detail"]


def test_the_database_black_holed_answers_503_in_bounded_time(proxy: Any) -> None:
    with TestClient(fastapi_app.create_app(proxy.conninfo)) as client:
        proxy.freeze()
        try:
            started = time.monotonic()
            answer = client.post(URL)
            took = time.monotonic() - started
        finally:
            proxy.thaw()
    assert answer.status_code == 503, answer.text
    assert "Retry-After" in answer.headers
    assert took < 20, f"the request took {took:.1f} s"


def test_uvicorn_with_three_workers(dsn: str, admin: Conn) -> None:
    import socket
    import subprocess
    import urllib.request

    admin.execute("DROP TABLE IF EXISTS report")
    examples = os.path.dirname(os.path.abspath(fastapi_app.__file__))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, DLOCK_DSN=dsn, PYTHONPATH=os.pathsep.join(sys.path))
    server = subprocess.Popen([sys.executable, "-m", "uvicorn", "fastapi_app:app",
                               "--port", str(port), "--workers", "3"], cwd=examples, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        answer = None
        while time.monotonic() < deadline and answer is None:
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}{URL}", method="POST")
                with urllib.request.urlopen(req, timeout=30) as r:
                    answer = (r.status, r.read())
            except OSError:
                time.sleep(0.2)
        assert answer is not None and answer[0] == 200, answer
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    assert "Traceback" not in out and "UniqueViolation" not in out, out
    assert out.count("Application startup complete") == 3, out
    fenced = admin.execute("SELECT tgname, tgtype FROM pg_trigger"
                           " WHERE tgrelid = 'report'::regclass ORDER BY 1").fetchall()
    # BEFORE INSERT OR UPDATE OR DELETE, row (2|4|8|16 = 31); BEFORE TRUNCATE (32|2 = 34)
    assert fenced == [("report_fence", 31), ("report_fence_truncate", 34)], fenced
