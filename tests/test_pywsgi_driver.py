"""Under gevent's pywsgi the stream's chunks after the first are written to the client's socket by
the server driver (:mod:`flask_krm.pywsgi_driver`): the bytes on the wire must be exactly what
pywsgi would have written, framed as HTTP/1.1 chunks or, for an HTTP/1.0 client, raw; behind a
middleware, over TLS or with ``KRM_SERVER_DRIVER = False``, pywsgi writes them all.

The hub needs a gevent-patched process and this one is not patched, so the scenario runs in a child
process (``tests/probes/direct_write.py``).
"""

from __future__ import annotations

import pytest

from flask_krm.pywsgi_driver import send
from flask_krm.sse import decode_events
from tests.probes.harness import run_probe


def _dechunk(body: bytes) -> bytes:
    """The payload of an HTTP/1.1 chunked body; every complete chunk must be well formed."""
    out = b""
    while body:
        size_line, crlf, rest = body.partition(b"\r\n")
        if not crlf:
            break  # the last chunk's head had not arrived yet
        size = int(size_line, 16)
        assert size > 0, "no empty chunk (it would end the response)"
        if len(rest) < size + 2:
            break  # the last chunk had not fully arrived yet
        assert rest[size : size + 2] == b"\r\n", "each chunk ends with CRLF"
        out += rest[:size]
        body = rest[size + 2 :]
    return out


def test_directly_written_chunks_are_what_the_server_would_have_written() -> None:
    seen = run_probe("direct_write", timeout=180)
    changes = seen["changes"]
    assert seen["direct_sends"] > 0, "the chunks after the first went straight to the socket"
    assert seen["sends_with_middleware_or_tls"] == 0, "a middleware, TLS or the driver off: pywsgi writes"
    assert seen["collector_policy_without_the_driver"] is False, "the collector is left alone without it"
    assert seen["collector_policy_with_the_driver"] is True, "its first stream turns the policy on"
    bodies = {}
    for version, stream in seen["streams"].items():
        head, _, body = stream.encode().partition(b"\r\n\r\n")
        lines = head.decode().lower().split("\r\n")
        assert lines[0].endswith("200 ok")
        chunked = "transfer-encoding: chunked" in lines
        assert chunked == (version != "HTTP/1.0")
        bodies[version] = _dechunk(body) if chunked else body
    # the same events, numbered from 1 on each connection: the same bytes
    assert bodies["HTTP/1.1"] == bodies["HTTP/1.0"] == bodies["middleware"] == bodies["tls"] == bodies["driver off"]
    events = decode_events(bodies["HTTP/1.1"])
    assert [event["seq"] for event in events] == list(range(1, len(events) + 1))
    types = [event["type"] for event in events]
    synced = types.index("synced")
    assert types[0] == "reset" and types[synced + 1 :] == ["modified"] * changes
    probes = [event["object"]["data"]["probe"] for event in events[synced + 1 :]]
    assert probes == [f"v{n}" for n in range(changes)]


def test_a_write_larger_than_the_socket_buffer_waits_for_the_reader_and_sends_everything() -> None:
    import gevent
    import gevent.socket

    writer, reader = gevent.socket.socketpair()
    parts = (b"head\r\n", bytes(range(256)) * 20_000, b"\r\n")  # several socket buffers
    data = b"".join(parts)

    def read_all() -> bytes:
        received = bytearray()
        while len(received) < len(data):
            received += reader.recv(65536)
        return bytes(received)

    reading = gevent.spawn(read_all)
    try:
        assert send(writer.fileno(), parts) == len(data)
        assert reading.get(timeout=30) == data
    finally:
        writer.close()
        reader.close()


def test_a_write_the_reader_never_takes_times_out_with_the_sockets_timeout() -> None:
    import gevent.socket

    writer, reader = gevent.socket.socketpair()
    try:
        with pytest.raises(TimeoutError):
            send(writer.fileno(), (b"x" * 10_000_000,), 0.2)
    finally:
        writer.close()
        reader.close()
