# Copyright (c) 2026, the dlock developers
"""test/ha/lease_child.py CONNINFO NAME TTL STOPFILE: hold a lease with the
Python client (clients/python) until STOPFILE exists or the lease is lost.

Prints "held TOKEN" once the lease is held, then "released" and exits 0 when
the block ended with the lease still held, or "LeaseLost: ..." and exits 3
when dlock.LeaseLost was raised.  The HA harness runs it across failovers.
"""

import os
import sys
import time

import dlock

conninfo, name, ttl, stopfile = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
sys.stdout.reconfigure(line_buffering=True)
try:
    with dlock.lease(conninfo, name, ttl=ttl) as lease:
        print(f"held {lease.token}")
        while not os.path.exists(stopfile):
            if lease.wait_lost(0.2):
                break
    print("released")
    sys.exit(0)
except dlock.LeaseLost as e:
    print(f"LeaseLost: {e}")
    sys.exit(3)
