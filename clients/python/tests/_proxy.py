# Copyright (c) 2026, the dlock developers
"""A Unix-socket proxy in front of PostgreSQL that a test can cut or freeze.

``conninfo`` reaches the server through it.  ``cut()`` breaks every
connection made so far (as a killed backend or a broken network does),
``refuse()`` makes new connections fail at once, ``freeze()`` keeps the
connections open but forwards nothing (a partition: statements hang).
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time


class Proxy:
    def __init__(self, target: str, port: int, dbname: str, user: str) -> None:
        self.target = target
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="dlock-proxy-")
        self.path = os.path.join(self.dir, f".s.PGSQL.{port}")
        self.dbname = dbname
        self.user = user
        self.conninfo = f"host={self.dir} port={port} dbname={dbname} user={user}"
        self.accepted = 0
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._frozen = threading.Event()
        self._closed = False
        self._listener: socket.socket | None = None
        self.listen()

    def listen(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(self.path)
        s.listen(16)
        s.settimeout(0.05)
        self._listener = s
        threading.Thread(target=self._accept, args=(s,), daemon=True).start()

    def _accept(self, s: socket.socket) -> None:
        while self._listener is s:
            try:
                client, _ = s.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            client.settimeout(None)
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks += [client, upstream]
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                break
            if not data:
                break
            verdict = self._intercept(src, dst, data)
            if verdict == "held":
                continue
            if verdict == "stop":
                return
            while self._frozen.is_set() and not self._closed:
                time.sleep(0.01)
            try:
                dst.sendall(data)
            except OSError:
                break
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _intercept(self, src: socket.socket, dst: socket.socket, data: bytes) -> str:
        """What to do with a chunk before it is forwarded: "forward" it,
        "held" (the subclass kept it; read on), or "stop" this direction
        without shutting either socket down.  A subclass overrides it."""
        return "forward"

    def refuse(self) -> None:
        """New connections fail at once (the socket file is gone)."""
        s, self._listener = self._listener, None
        if s is not None:
            s.close()
            os.unlink(self.path)

    def cut(self) -> None:
        """Break every connection made so far."""
        with self._lock:
            socks, self._socks = self._socks, []
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def freeze(self) -> None:
        self._frozen.set()

    def thaw(self) -> None:
        self._frozen.clear()

    def close(self) -> None:
        self._closed = True
        self.thaw()
        self.refuse()
        self.cut()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(predicate: "object", timeout: float, what: str) -> None:
    """Poll predicate() until true; fail the test after timeout seconds."""
    assert callable(predicate)
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)
