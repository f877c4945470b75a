# Copyright (c) 2026, the dlock developers
"""examples/fastapi_app.py, driven by FastAPI's TestClient against the real
database.  Each TestClient is a replica: an app with an event loop of its own."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import threading
import time
from typing import Any, Dict, Iterator, List, Optional, Tuple

import psycopg
import pytest
from fastapi.testclient import TestClient
from httpx import Response

from _proxy import Proxy, wait_for

# The repository's examples/, or where DLOCK_EXAMPLES says (the test script
# runs a copy of these tests).
sys.path.insert(0, os.environ.get("DLOCK_EXAMPLES") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
import fastapi_app  # noqa: E402

Conn = "psycopg.Connection[Any]"
URL = "/jobs/nightly-report"


class HoldingProxy(Proxy):
    """The loopback proxy, and a message from the client containing ``hold(...)``'s
    bytes is kept back (a network that holds it) until ``deliver()``; with
    ``cut=True`` the client's side of that connection is broken at once."""

    def __init__(self, *args: Any) -> None:
        self.trigger: Optional[bytes] = None
        self.cut_client = False
        self.held: List[Tuple[socket.socket, bytes]] = []
        self.seen = threading.Event()
        super().__init__(*args)

    def hold(self, trigger: bytes, cut: bool = False) -> None:
        self.trigger, self.cut_client = trigger, cut

    def deliver(self) -> None:
        held, self.held = self.held, []
        for upstream, data in held:
            try:
                upstream.sendall(data)
            except OSError:  # the backend is gone
                pass

    def _intercept(self, src: socket.socket, dst: socket.socket, data: bytes) -> str:
        try:
            from_client = src.getsockname() == self.path
        except OSError:
            return "stop"
        if from_client and self.trigger is not None and self.trigger in data:
            self.trigger = None
            self.held.append((dst, data))
            self.seen.set()
            if self.cut_client:
                src.shutdown(socket.SHUT_RDWR)
                return "stop"  # the backend's side stays open, its COMMIT not yet sent
            return "held"
        return "forward"


@pytest.fixture
def holding(proxy: Proxy) -> Iterator[HoldingProxy]:
    p = HoldingProxy(proxy.target, proxy.port + 1, proxy.dbname, proxy.user)
    try:
        yield p
    finally:
        p.close()


def lease_state(admin: Conn) -> Any:
    return admin.execute("SELECT held, token FROM dlock_leases WHERE name = %s",
                         (fastapi_app.JOB,)).fetchone()


def post_in_thread(client: TestClient, out: Dict[str, Response]) -> threading.Thread:
    def run() -> None:
        out["response"] = client.post(URL)
    t = threading.Thread(target=run)
    t.start()
    return t


def test_c13_two_concurrent_requests_give_one_200_and_one_409(dsn: str, admin: Conn) -> None:
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
    admin.execute("DROP TABLE IF EXISTS report, report_run")
    errors: List[BaseException] = []
    statuses: List[int] = []
    barrier = threading.Barrier(4)

    async def quick_job() -> str:
        return "first report"

    def worker() -> None:
        barrier.wait()
        try:
            with TestClient(fastapi_app.create_app(dsn, job=quick_job)) as client:
                statuses.append(client.post(URL).status_code)  # the tables, at once
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert 200 in statuses and set(statuses) <= {200, 409}, statuses
    triggers = admin.execute("SELECT tgrelid::regclass::text, tgname FROM pg_trigger"
                             " WHERE tgrelid IN ('report'::regclass, 'report_run'::regclass)"
                             " ORDER BY 1, 2").fetchall()
    assert triggers == [("report", "report_fence"), ("report", "report_fence_truncate"),
                        ("report_run", "report_run_fence"),
                        ("report_run", "report_run_fence_truncate")]


def test_the_database_down_when_the_app_starts_answers_503_until_it_is_back(
        proxy: Any) -> None:
    async def quick_job() -> str:
        return "after the outage"

    proxy.refuse()
    with TestClient(fastapi_app.create_app(proxy.conninfo, job=quick_job)) as client:
        down = client.post(URL)
        proxy.listen()
        up = client.post(URL)
    assert down.status_code == 503, down.text
    assert "Retry-After" in down.headers
    assert up.status_code == 200, up.text


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
        else:  # a session that wrote nothing, and ended
            async with await psycopg.AsyncConnection.connect(
                    conninfo, application_name=run.session) as conn:
                run.pid = conn.info.backend_pid
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


def report_token(admin: Conn) -> Optional[int]:
    row = admin.execute("SELECT token FROM report WHERE job = 'nightly-report'").fetchone()
    return None if row is None else int(row[0])


def test_a_commit_held_by_the_network_cannot_land_after_the_answer(
        holding: HoldingProxy, admin: Conn) -> None:
    async def arming_job() -> str:
        holding.hold(b"COMMIT", cut=True)  # the write's COMMIT: held, its client cut
        return "held commit"

    with TestClient(fastapi_app.create_app(holding.conninfo, ttl=30, job=arming_job)) as client:
        answer = client.post(URL)
    assert holding.seen.is_set()
    token = lease_state(admin)[1]
    holding.deliver()  # the network lets the COMMIT through, after the answer
    time.sleep(1)
    assert answer.status_code == 503, answer.text
    assert "asking again is safe" in answer.json()["detail"]
    assert report_token(admin) != token, "the COMMIT landed after 'nothing was stored'"
    assert admin.execute("SELECT 1 FROM report_run WHERE token = %s", (token,)).fetchone() is None


def test_a_commit_whose_answer_was_lost_is_found_after_a_later_run_overwrote_it(
        dsn: str, admin: Conn, monkeypatch: Any) -> None:
    real = fastapi_app.write_report

    async def committed_then_overtaken(conninfo: str, lease: Any, body: str, run: Any) -> None:
        await real(conninfo, lease, body, run)
        # Before this run looks its COMMIT up, another replica runs the job
        # and overwrites the report.
        admin.execute("SELECT dlock_release(%s, %s)", (fastapi_app.JOB, lease.token))
        with admin.transaction():
            later = admin.execute("SELECT dlock_acquire(%s, '30 s')",
                                  (fastapi_app.JOB,)).fetchone()[0]
            admin.execute("SELECT dlock_assert(%s, %s)", (fastapi_app.JOB, later))
            admin.execute(fastapi_app.WRITE_SQL, (fastapi_app.JOB, later, "later report"))
        admin.execute("SELECT dlock_release(%s, %s)", (fastapi_app.JOB, later))
        run.phase = "committing"
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    async def quick_job() -> str:
        return "committed, then overwritten"

    monkeypatch.setattr(fastapi_app, "write_report", committed_then_overtaken)
    with TestClient(fastapi_app.create_app(dsn, ttl=30, job=quick_job)) as client:
        answer = client.post(URL)
    assert answer.status_code == 200, answer.text
    assert answer.json()["report"] == "committed, then overwritten"
    assert report_token(admin) != answer.json()["token"]


@pytest.mark.parametrize("held", [b"dlock_assert", b"COMMIT"])
def test_a_black_holed_write_answers_503_in_bounded_time(
        holding: HoldingProxy, admin: Conn, held: bytes) -> None:
    async def arming_job() -> str:
        holding.hold(held)  # the fence or the COMMIT never reaches the server
        return "black-holed report"

    out: Dict[str, Response] = {}
    with TestClient(fastapi_app.create_app(holding.conninfo, ttl=2, job=arming_job)) as client:
        started = time.monotonic()
        t = post_in_thread(client, out)
        try:
            t.join(40)
            took = time.monotonic() - started
        finally:
            holding.cut()  # unblocks a request that hangs
            t.join(60)
        token = lease_state(admin)[1]
        holding.deliver()
        time.sleep(1)
        assert took < 40, "no answer in 40 s"
    answer = out["response"]
    assert holding.seen.is_set()
    assert answer.status_code == 503, answer.text
    assert "Retry-After" in answer.headers
    assert report_token(admin) != token


def test_a_lost_commit_whose_session_lives_on_answers_outcome_unknown(
        holding: HoldingProxy, admin: Conn, monkeypatch: Any) -> None:
    # The writing session cannot be ended (as if pg_terminate_backend were not
    # allowed): the lookup would not be conclusive, so it is not trusted.
    monkeypatch.setattr(fastapi_app, "TERMINATE_SQL", "SELECT %s::int, %s::text", raising=False)
    monkeypatch.setattr(fastapi_app, "SETTLE_TIMEOUT", 1.0, raising=False)

    async def arming_job() -> str:
        holding.hold(b"COMMIT", cut=True)
        return "held commit"

    with TestClient(fastapi_app.create_app(holding.conninfo, ttl=30, job=arming_job)) as client:
        answer = client.post(URL)
    assert holding.seen.is_set()
    holding.deliver()
    assert answer.status_code == 503, answer.text
    detail = answer.json()["detail"]
    assert "outcome unknown, check before retrying" in detail and "safe" not in detail, detail
    assert "Retry-After" in answer.headers
