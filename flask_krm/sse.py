"""Server-Sent Events: response headers, framing, heartbeats, coalescing, and a decoder.

Writing:

* :data:`HEADERS` for every stream response, refusals included (a browser ``EventSource`` cannot
  read a non-200 body, so a refusal is a 200 carrying one terminal ``error`` event).
  ``Connection: keep-alive`` is deliberately absent: it is a hop-by-hop header a WSGI application
  must not set.
* One protocol event per frame, ``data: <compact JSON>\\n\\n``; never ``id:`` lines (neither ``seq``
  nor a uid is a resume token), ``event:`` or ``retry:``. :class:`FrameSequencer` numbers a
  connection's events from 1 and writes nothing after a terminal error.
* :data:`HEARTBEAT` (a comment, ignored by consumers) every :data:`DEFAULT_HEARTBEAT_INTERVAL`
  seconds unless configured otherwise.
* :func:`coalesce` joins frames that are already queued into one write: the per-write cost (socket
  write, greenlet switch) dominates, not the JSON.
* :func:`released` hands a chunk to the server and, when it is large, makes the server let go of
  it: a WSGI server keeps the last chunk it wrote until the next one comes, which for a stream
  that then idles is its whole snapshot, for as long as it stays open.

Reading: :class:`SSEDecoder` turns bytes, in chunks of any size, into messages; :class:`EventDecoder`
into protocol event mappings.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

from .events import PROTOCOL_VERSION, Event, StreamError, encode_body, frame

__all__ = [
    "CONTENT_TYPE",
    "HEADERS",
    "HEARTBEAT",
    "DEFAULT_HEARTBEAT_INTERVAL",
    "heartbeat_interval",
    "comment",
    "message",
    "coalesce",
    "released",
    "FrameSequencer",
    "SSEMessage",
    "SSEDecoder",
    "EventDecoder",
    "decode_events",
]

CONTENT_TYPE: Final = "text/event-stream"
HEADERS: Final[tuple[tuple[str, str], ...]] = (
    ("Content-Type", CONTENT_TYPE),
    ("X-KRM-Stream-Protocol", str(PROTOCOL_VERSION)),
    ("Cache-Control", "no-store"),
    ("X-Accel-Buffering", "no"),
)
"""Headers of every stream response, in this order."""

HEARTBEAT: Final = b": heartbeat\n\n"
DEFAULT_HEARTBEAT_INTERVAL: Final = 20.0
"""Seconds; under the 30-60 s idle timeouts of common proxies."""


RELEASE_AFTER: Final = 8192
"""Chunks at least this long are followed by an empty one (see :func:`released`)."""


def released(chunk: bytes) -> Iterator[bytes]:
    """Yield ``chunk``; when it is large, then an empty chunk, so that the server's reference to it
    goes (servers skip empty chunks, PEP 3333) and only the stream's small state stays in memory
    while it idles."""
    large = len(chunk) >= RELEASE_AFTER
    yield chunk
    if large:
        del chunk
        yield b""


def heartbeat_interval(seconds: float | None) -> float:
    """The interval to use: ``seconds`` when positive, else :data:`DEFAULT_HEARTBEAT_INTERVAL`."""
    if seconds is None or isinstance(seconds, bool) or not seconds > 0:
        return DEFAULT_HEARTBEAT_INTERVAL
    return float(seconds)


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def comment(text: str) -> bytes:
    """A comment frame; each line of ``text`` (CRLF, CR or LF) becomes one ``:`` line."""
    return "".join(f": {line}\n" if line else ":\n" for line in _lines(text)).encode() + b"\n"


def message(data: str, event: str | None = None) -> bytes:
    """A frame carrying ``data`` (each line one ``data:`` line) and optionally an ``event:`` name.

    The v1 JSON stream never names events (use :func:`flask_krm.events.frame` there); named
    messages are for other streams, such as HTML fragments. Raises ``ValueError`` for an event name
    containing a line break.
    """
    head = ""
    if event is not None:
        if "\n" in event or "\r" in event:
            raise ValueError("an SSE event name cannot contain a line break")
        head = f"event: {event}\n"
    body = "".join(f"data: {line}\n" if line else "data:\n" for line in _lines(data))
    return (head + body + "\n").encode()


def coalesce(frames: Iterable[bytes], max_bytes: int | None = None) -> bytes:
    """Join already-encoded frames into one write.

    With ``max_bytes``, stop taking frames once the total reaches it (a frame is never split, and
    at least one is taken); ``frames`` is consumed lazily, so pass a generator that drains a queue
    and the frames not taken stay queued.
    """
    if max_bytes is None:
        return b"".join(frames)
    parts: list[bytes] = []
    size = 0
    for data in frames:
        parts.append(data)
        size += len(data)
        if size >= max_bytes:
            break
    return b"".join(parts)


class FrameSequencer:
    """Numbers one connection's events (``seq`` from 1) and frames them.

    After a terminal error it is :attr:`closed` and frames nothing more (returns ``b""``).
    """

    __slots__ = ("seq", "closed")

    def __init__(self) -> None:
        self.seq = 0
        self.closed = False

    def frame(self, event: Event, body: bytes | None = None) -> bytes:
        """The frame for ``event``; ``body`` is its shared :func:`~flask_krm.events.encode_body`."""
        if self.closed:
            return b""
        self.seq += 1
        if isinstance(event, StreamError) and event.terminal:
            self.closed = True
        return frame(self.seq, encode_body(event) if body is None else body)


# ------------------------------------------------------------------------------- decoding --


@dataclass(frozen=True, slots=True)
class SSEMessage:
    """One dispatched SSE message: its data lines joined by ``\\n`` and its ``event:`` name."""

    data: str
    event: str | None = None


class SSEDecoder:
    """An incremental SSE parser (the EventSource algorithm, minus ``id`` and ``retry``).

    Buffers partial input, decodes UTF-8 across chunk boundaries, normalizes CRLF and lone CR (a CR
    at the end of a chunk waits for a possible LF), ignores comment lines and unknown fields, strips
    one space after a field's colon, joins ``data`` lines with ``\\n``; a blank line dispatches. A
    frame that never completes yields nothing.
    """

    __slots__ = ("_utf8", "_buffer", "_pending_cr", "_data", "_event", "_started")

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ""
        self._pending_cr = False
        self._data: list[str] = []
        self._event: str | None = None
        self._started = False

    def feed(self, chunk: bytes | str) -> list[SSEMessage]:
        """The messages completed by ``chunk``."""
        text = self._utf8.decode(chunk) if isinstance(chunk, bytes) else chunk
        if not self._started and text:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._pending_cr:
            text = "\r" + text
            self._pending_cr = False
        if text.endswith("\r"):
            self._pending_cr = True
            text = text[:-1]
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        *lines, self._buffer = (self._buffer + text).split("\n")
        out: list[SSEMessage] = []
        for line in lines:
            self._line(line, out)
        return out

    def close(self) -> list[SSEMessage]:
        """The end of the stream: a CR still waiting for an LF ends its line; an incomplete frame
        is dropped. The decoder can be fed again afterwards, as a fresh stream."""
        out: list[SSEMessage] = []
        if self._pending_cr:
            self._pending_cr = False
            *lines, self._buffer = (self._buffer + "\n").split("\n")
            for line in lines:
                self._line(line, out)
        self._buffer = ""
        self._data = []
        self._event = None
        self._started = False
        self._utf8.reset()
        return out

    def _line(self, line: str, out: list[SSEMessage]) -> None:
        if not line:
            if self._data:
                out.append(SSEMessage("\n".join(self._data), self._event))
            self._data = []
            self._event = None
            return
        if line.startswith(":"):
            return
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value


class EventDecoder:
    """Protocol events from SSE bytes: each message's data parsed as a JSON object.

    A message whose data is not a JSON object is skipped, as the reference client does.
    """

    __slots__ = ("_sse",)

    def __init__(self) -> None:
        self._sse = SSEDecoder()

    def feed(self, chunk: bytes | str) -> list[dict[str, Any]]:
        """The events completed by ``chunk``."""
        return self._parse(self._sse.feed(chunk))

    def close(self) -> list[dict[str, Any]]:
        """The end of the stream (see :meth:`SSEDecoder.close`)."""
        return self._parse(self._sse.close())

    @staticmethod
    def _parse(messages: list[SSEMessage]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for msg in messages:
            try:
                value = json.loads(msg.data)
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
        return out


def decode_events(data: bytes | str) -> list[dict[str, Any]]:
    """Every complete protocol event in ``data`` (a whole stream)."""
    decoder = EventDecoder()
    return decoder.feed(data) + decoder.close()
