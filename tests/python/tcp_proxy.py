"""A local TCP proxy for the fault tests: each new client connection goes to the next backend
in turn, skipping backends that refuse connections (a killed or draining replica), as a
Kubernetes Service spreads connections over ready pods. When either side of a connection
closes, both do, so a client sees a backend's death as a broken connection. Does socket I/O on
127.0.0.1, on daemon threads; every connect is bounded.
"""

from __future__ import annotations

import itertools
import socket
import threading


class Proxy:
    """Listens on a free 127.0.0.1 port until `close()`."""

    def __init__(self, backends: list[int]) -> None:
        self.backends = backends
        self.chosen: list[int] = []  # the backend of each accepted connection, in order
        self._turn = itertools.count()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._open: set[socket.socket] = set()
        threading.Thread(target=self._accept, daemon=True).start()

    def _connect(self) -> tuple[socket.socket, int] | None:
        start = next(self._turn)
        for i in range(len(self.backends)):
            port = self.backends[(start + i) % len(self.backends)]
            try:
                return socket.create_connection(("127.0.0.1", port), timeout=2), port
            except OSError:
                continue
        return None

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            connected = self._connect()
            if connected is None:
                client.close()
                continue
            backend, port = connected
            backend.settimeout(None)
            with self._lock:
                self.chosen.append(port)
                self._open.update((client, backend))
            for src, dst in ((client, backend), (backend, client)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for s in self._open:
                s.close()
