# Copyright (c) 2026, the dlock developers
"""dlock: PostgreSQL lease locks with fencing tokens, from Python.

    with dlock.lease("dbname=app", "nightly-report", ttl=60) as lease:
        run_the_report(lease)          # renewed in the background

See the README beside this package for the failure model; ``dlock.aio`` has
the same API for asyncio.
"""

from ._errors import (STALE_TOKEN_SQLSTATE, Busy, Error, LeaseLost, StaleToken, is_stale_token,
                      stale_token_errors)
from ._sync import Leader, Lease, LeaseContext, lease, leader

__version__ = "1.2.0"

__all__ = [
    "lease", "Lease", "LeaseContext", "leader", "Leader",
    "Error", "Busy", "LeaseLost", "StaleToken", "STALE_TOKEN_SQLSTATE",
    "is_stale_token", "stale_token_errors",
]
