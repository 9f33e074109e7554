"""Host IPC endpoints for the `host_ipc` attack class: in a folder, a service on a Unix
stream socket (`svc.sock`) that records what each client sends, a Unix datagram socket
(`dgram.sock`) and a FIFO (`fifo`) whose reader is waiting. `collect()` returns what reached
them since the last call; `remove()` takes the socket files and the FIFO away again and
gives the folder back its times (the suite compares folders' times too).

Standard library only: imported by the supervisor inside the attack jail."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

NAMES = ("svc.sock", "dgram.sock", "fifo")


class Endpoints:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        st = os.stat(folder)
        self.times = (st.st_atime_ns, st.st_mtime_ns)
        self.received: list[str] = []
        self.lock = threading.Lock()
        self.stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.stream.bind(str(folder / "svc.sock"))
        self.stream.listen(16)
        self.dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.dgram.bind(str(folder / "dgram.sock"))
        self.dgram.setblocking(False)
        os.mkfifo(folder / "fifo", 0o666)
        # Held open without blocking: a writer's open never waits, its bytes stay readable.
        self.fifo = os.open(folder / "fifo", os.O_RDONLY | os.O_NONBLOCK)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.stream.accept()
            except OSError:
                return  # closed
            conn.settimeout(1)
            data = b""
            with contextlib.suppress(OSError):
                while len(data) < 4096 and (chunk := conn.recv(4096)):
                    data += chunk
            with self.lock:  # recorded before the client can see the close and end
                self.received.append(f"{self.folder}/svc.sock connect {data[:60]!r}")
            conn.close()

    def collect(self) -> list[str]:
        while True:
            try:
                got = self.dgram.recv(4096)
            except OSError:
                break
            with self.lock:
                self.received.append(f"{self.folder}/dgram.sock datagram {got[:60]!r}")
        with contextlib.suppress(OSError):
            data = os.read(self.fifo, 4096)
            if data:
                with self.lock:
                    self.received.append(f"{self.folder}/fifo write {data[:60]!r}")
        with self.lock:
            found, self.received = self.received, []
        return found

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            self.stream.shutdown(socket.SHUT_RDWR)
        self.stream.close()
        self.thread.join(timeout=5)
        self.dgram.close()
        os.close(self.fifo)
        for name in NAMES:
            with contextlib.suppress(OSError):
                (self.folder / name).unlink()
        os.utime(self.folder, ns=self.times)
