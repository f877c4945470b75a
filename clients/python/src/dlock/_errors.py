# Copyright (c) 2026, the dlock developers
"""dlock's exceptions, and the helpers that recognise a stale fencing token."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

import psycopg

#: The SQLSTATE that dlock_assert() and the dlock_fence() trigger raise when
#: a token no longer holds its lease ("stale fencing token").
STALE_TOKEN_SQLSTATE = "LK001"


class Error(Exception):
    """Base class of every exception dlock raises itself."""


class Busy(Error):
    """Somebody else holds the lease, and it stayed busy for ``wait``."""

    def __init__(self, name: str, wait: float) -> None:
        super().__init__(f'lease "{name}" is busy (waited {wait:g} s)')
        self.name = name
        self.wait = wait


class LeaseLost(Error):
    """The lease is no longer ours: it expired, or another holder took it.

    Raised when a ``with dlock.lease(...)`` block is left after its lease was
    lost (unless the block is already raising an exception of its own), and
    by ``Lease.release()`` when the server says the token no longer held it:
    the critical section overran its lease, and another holder may have run
    meanwhile.
    """

    def __init__(self, name: str, token: int, reason: str) -> None:
        super().__init__(f'lease "{name}" (token {token}) lost: {reason}')
        self.name = name
        self.token = token
        self.reason = reason


class StaleToken(Error):
    """The server refused a token that no longer holds its lease (LK001).

    ``__cause__`` is the ``psycopg.Error`` the server raised.  The
    transaction it happened in is aborted: roll it back, and write nothing
    more under this lease.
    """

    sqlstate = STALE_TOKEN_SQLSTATE

    def __init__(self, message: str, name: Optional[str] = None,
                 token: Optional[int] = None) -> None:
        super().__init__(message)
        self.name = name
        self.token = token


def is_stale_token(exc: BaseException) -> bool:
    """True if ``exc`` says a fencing token was stale.

    That is a ``dlock.StaleToken``, or a ``psycopg.Error`` with SQLSTATE
    LK001, as raised by a write that a ``dlock_fence()`` trigger refused, or
    an exception caused by either.
    """
    seen = 0
    e: Optional[BaseException] = exc
    while e is not None and seen < 16:
        if isinstance(e, StaleToken):
            return True
        if isinstance(e, psycopg.Error) and e.sqlstate == STALE_TOKEN_SQLSTATE:
            return True
        e = e.__cause__
        seen += 1
    return False


def stale_token_from(exc: psycopg.Error, name: Optional[str] = None,
                     token: Optional[int] = None) -> StaleToken:
    """A StaleToken carrying the server's message (and its DETAIL)."""
    diag = exc.diag
    message = diag.message_primary or str(exc)
    if diag.message_detail:
        message = f"{message}: {diag.message_detail}"
    return StaleToken(message, name, token)


@contextmanager
def stale_token_errors() -> Iterator[None]:
    """Turn a psycopg error with SQLSTATE LK001 into ``dlock.StaleToken``.

    Wrap fenced writes with it (it works around ``await`` too)::

        with dlock.stale_token_errors():
            cur.execute("INSERT INTO report ...")

    Other exceptions pass through unchanged.
    """
    try:
        yield
    except psycopg.Error as e:
        if e.sqlstate == STALE_TOKEN_SQLSTATE:
            raise stale_token_from(e) from e
        raise
