# Copyright (c) 2026, the dlock developers
"""Finding dlock, in either edition (issue 26): by dlock_edition(), never
by pg_extension (the SQL edition's psql script makes no extension row)."""

from __future__ import annotations

import os
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo
import pytest

import dlock


def test_the_edition_is_the_one_installed(admin: "psycopg.Connection[Any]") -> None:
    # test/scripts/python_client.sh installs DLOCK_EDITION's dlock (c by default)
    row = admin.execute("SELECT dlock_edition()").fetchone()
    assert row is not None and row[0] == os.environ.get("DLOCK_EDITION", "c")


def test_dlock_off_search_path_is_found_by_its_edition_function(dsn: str, name: str) -> None:
    # The schema is named by the catalog's dlock_edition(), and the hint
    # for a missing dlock stays.
    with psycopg.connect(dsn, autocommit=True, options="-c search_path=pg_catalog") as conn:
        with pytest.raises(dlock.Error, match="CREATE EXTENSION dlock") as err:
            with dlock.lease(conn, name, ttl=5):
                pass
    assert "dlock is installed in schema public: put it on search_path" in str(err.value)
    assert isinstance(err.value.__cause__, psycopg.errors.UndefinedFunction)


def test_a_database_without_dlock_names_no_schema(admin: "psycopg.Connection[Any]", dsn: str,
                                                  name: str) -> None:
    db = "dlock_py_no_dlock"
    admin.execute(f"DROP DATABASE IF EXISTS {db}")
    admin.execute(f"CREATE DATABASE {db}")
    try:
        other = make_conninfo(dsn, dbname=db)
        with pytest.raises(dlock.Error, match="CREATE EXTENSION dlock") as err:
            with dlock.lease(other, name, ttl=5):
                pass
        assert "is installed in schema" not in str(err.value)
        assert "SQL edition" in str(err.value)
    finally:
        admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
