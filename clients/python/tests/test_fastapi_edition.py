# Copyright (c) 2026, the dlock developers
"""examples/fastapi_app.py finds dlock by dlock_edition() (issue 26): in a
database without it on search_path, a request is answered 503 with the
install hint, and nothing is created."""

from __future__ import annotations

import os
import sys
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
from fastapi.testclient import TestClient

sys.path.insert(0, os.environ.get("DLOCK_EXAMPLES") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "examples"))
import fastapi_app  # noqa: E402

URL = "/jobs/nightly-report"


def test_no_dlock_on_search_path_answers_503_with_the_hint(dsn: str,
                                                            admin: "psycopg.Connection[Any]") -> None:
    before = admin.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'report%'").fetchone()
    off_path = make_conninfo(dsn, options="-c search_path=nowhere")
    with TestClient(fastapi_app.create_app(off_path)) as client:
        r = client.post(URL)
    assert r.status_code == 503
    assert "dlock is not installed" in r.json()["detail"]
    assert "CREATE EXTENSION dlock" in r.json()["detail"]
    after = admin.execute("SELECT count(*) FROM pg_class WHERE relname LIKE 'report%'").fetchone()
    assert before == after
