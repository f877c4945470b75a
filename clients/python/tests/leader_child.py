# Copyright (c) 2026, the dlock developers
"""A replica in the leader test: campaigns, says when it gains and loses."""

import sys

import dlock

dsn, name, owner = sys.argv[1:4]
with dlock.leader(dsn, name, owner, ttl=1.5) as election:
    for term in election:
        print(f"elected {term.token}", flush=True)
        term.wait_lost()
        print(f"deposed {term.token}", flush=True)
