"""A real ``redis-server`` (Debian's package) for the tests: own port, own temporary directory.

``scripts/bootstrap`` installs the package; a test that needs Redis starts its own server with
:class:`RedisServer` (never the machine's, never a fake) and stops it afterwards.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` on 127.0.0.1 with nothing persisted to disk (unless ``persist``).

    :param persist: keep an append-only file, so a restart (:meth:`restart`) finds the data again.
    """

    def __init__(self, *, persist: bool = True) -> None:
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        if not Path(binary).exists():
            raise RuntimeError(
                "redis-server is not installed: run scripts/bootstrap (it installs Debian's redis-server)"
            )
        self.binary = binary
        self.port = free_port()
        self.persist = persist
        self.dir = Path(tempfile.mkdtemp(prefix="krm-redis-"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5.0)

    def start(self) -> RedisServer:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.dir)]
        args += ["--save", "", "--daemonize", "no", "--logfile", str(self.dir / "redis.log")]
        args += ["--appendonly", "yes" if self.persist else "no", "--appendfsync", "always"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            try:
                if self.client().ping():
                    return self
            except redis.exceptions.RedisError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}: {self._log_tail()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5.0)
        self.process = None

    def restart(self, down_for: float = 0.0) -> None:
        """Stop the server, wait ``down_for`` seconds, start it again on the same port."""
        self.stop()
        time.sleep(down_for)
        self.start()

    def keys_and_values(self) -> bytes:
        """Every key with its whole value, as bytes (strings, hashes, sets, lists, sorted sets)."""
        client = self.client()
        out = []
        for key in client.scan_iter(count=1000):
            kind = client.type(key)
            out.append(key)
            if kind == b"string":
                out.append(client.get(key) or b"")
            elif kind == b"hash":
                for field, value in client.hgetall(key).items():
                    out += [field, value]
            elif kind == b"set":
                out += list(client.smembers(key))
            elif kind == b"list":
                out += list(client.lrange(key, 0, -1))
            elif kind == b"zset":
                out += [member for member, _ in client.zrange(key, 0, -1, withscores=True)]
            else:
                out.append(kind)
        return b"\n".join(out)

    def _log_tail(self) -> str:
        try:
            return (self.dir / "redis.log").read_text()[-2000:]
        except OSError:
            return "(no log)"

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()
