"""SSE: headers, framing, heartbeats, coalescing and the decoder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from flask_krm.events import (
    RESYNC_REQUIRED,
    Reset,
    StreamError,
    Synced,
    encode_body,
    frame,
    from_json,
    to_json,
)
from flask_krm.sse import (
    DEFAULT_HEARTBEAT_INTERVAL,
    HEADERS,
    HEARTBEAT,
    RELEASE_AFTER,
    EventDecoder,
    FrameSequencer,
    SSEDecoder,
    SSEMessage,
    coalesce,
    comment,
    decode_events,
    heartbeat_interval,
    message,
    released,
)
from flask_krm.upstream.scripted import ScriptedFixture
from tests.corpus import CORPUS, bodies, fixture_params, golden_sse

# --------------------------------------------------------------------------------- writing --


def test_response_headers() -> None:
    assert dict(HEADERS) == {
        "Content-Type": "text/event-stream",
        "X-KRM-Stream-Protocol": "1",
        "Cache-Control": "no-store",
        "X-Accel-Buffering": "no",
    }
    assert "connection" not in {name.lower() for name, _ in HEADERS}  # hop-by-hop: not a WSGI app's


def test_the_header_names_the_published_protocol_version() -> None:
    published = json.loads((CORPUS / "protocol.json").read_text())["protocolVersion"]
    assert dict(HEADERS)["X-KRM-Stream-Protocol"] == str(published)


def test_heartbeat() -> None:
    assert HEARTBEAT == b": heartbeat\n\n" == comment("heartbeat")
    assert DEFAULT_HEARTBEAT_INTERVAL == 20.0
    for value in (None, 0, -5, 0.0, True, float("nan")):
        assert heartbeat_interval(value) == 20.0  # type: ignore[arg-type]
    assert heartbeat_interval(2.5) == 2.5 and heartbeat_interval(1) == 1.0


def test_a_large_chunk_is_followed_by_an_empty_one_and_not_held() -> None:
    large = b"x" * RELEASE_AFTER
    assert list(released(HEARTBEAT)) == [HEARTBEAT]
    assert list(released(large)) == [large, b""]
    chunks = released(b"y" * RELEASE_AFTER)
    next(chunks)
    next(chunks)
    assert chunks.gi_frame is not None and "chunk" not in chunks.gi_frame.f_locals, "suspended without the chunk"


def test_comments_frame_every_line() -> None:
    assert comment("connection 1") == b": connection 1\n\n"
    assert comment("a\r\nb\rc\nd") == b": a\n: b\n: c\n: d\n\n"
    assert comment("a\n\nb") == b": a\n:\n: b\n\n"


def test_messages_frame_every_line() -> None:
    assert message("x") == b"data: x\n\n"
    assert message("<div>\r\n  a\r</div>\n", event="fragment") == (
        b"event: fragment\ndata: <div>\ndata:   a\ndata: </div>\ndata:\n\n"
    )
    with pytest.raises(ValueError):
        message("x", event="a\nb")
    assert SSEDecoder().feed(message("<div>\r\n  a\r</div>", event="fragment")) == [
        SSEMessage("<div>\n  a\n</div>", "fragment")
    ]


def test_coalesce_joins_frames_into_one_write() -> None:
    frames = [frame(n, encode_body(Synced())) for n in range(1, 4)]
    assert coalesce(frames) == b"".join(frames)
    assert coalesce([]) == b""


def test_coalesce_takes_lazily_up_to_a_budget() -> None:
    taken: list[int] = []

    def queued() -> Iterator[bytes]:
        for n in range(1, 100):
            taken.append(n)
            yield frame(n, encode_body(Synced()))

    chunk = coalesce(queued(), max_bytes=60)
    assert [e["seq"] for e in decode_events(chunk)] == [1, 2]
    assert taken == [1, 2]  # the rest stay queued
    assert coalesce(iter([b"x" * 100, b"y"]), max_bytes=10) == b"x" * 100  # a frame is never split


def test_the_sequencer_numbers_from_1_and_stops_after_a_terminal_error() -> None:
    sequencer = FrameSequencer()
    reset = Reset(scope={"target": "", "version": "v1", "resource": "configmaps"}, projection="krm-full/v1")
    assert sequencer.frame(reset).startswith(b'data: {"seq":1,"type":"reset",')
    assert sequencer.frame(RESYNC_REQUIRED).startswith(b'data: {"seq":2,"type":"error"')
    shared = encode_body(Synced())
    assert sequencer.frame(Synced(), shared) == b'data: {"seq":3,"type":"synced"}\n\n'
    assert not sequencer.closed
    assert sequencer.frame(StreamError("FORBIDDEN", "no", True)).startswith(b'data: {"seq":4,')
    assert sequencer.closed
    assert sequencer.frame(Synced()) == b"" and sequencer.seq == 4


@pytest.mark.parametrize("fixture", fixture_params("gateway"))
def test_no_id_event_or_retry_lines_are_ever_written(fixture: dict[str, Any]) -> None:
    rendered = ScriptedFixture.load(fixture, bodies()).render()
    for line in rendered.split(b"\n"):
        assert line == b"" or line.startswith((b"data: ", b": ")), line


# ---------------------------------------------------------------------------------- decoding --


@pytest.mark.parametrize("fixture", fixture_params("gateway"))
def test_every_golden_decodes_the_same_one_byte_at_a_time(fixture: dict[str, Any]) -> None:
    data = golden_sse(fixture["id"])
    decoder = EventDecoder()
    one_by_one = [event for i in range(len(data)) for event in decoder.feed(data[i : i + 1])]
    assert one_by_one == decode_events(data)
    assert len(one_by_one) == len(fixture["events"])
    for event in one_by_one:
        assert to_json(from_json(event)) == {k: v for k, v in event.items() if k != "seq"}


def test_crlf_and_cr_are_line_ends_even_split_across_chunks() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n\r") == []
    assert decoder.feed(b"\ndata: b\r\r") == [SSEMessage("a")]
    assert decoder.feed(b"") == []  # the last CR may still be the start of a CR LF
    assert decoder.close() == [SSEMessage("b")]  # at the end of the stream it is a line end
    lone_crs = SSEDecoder()
    assert lone_crs.feed(b"data: x\rdata: y\r\r") == []
    assert lone_crs.close() == [SSEMessage("x\ny")]
    assert SSEDecoder().feed(b"data: x\r\ndata: y\r\n\r\n") == [SSEMessage("x\ny")]


def test_a_cr_at_the_end_of_a_chunk_waits_for_its_lf() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r") == []
    assert decoder.feed(b"\n") == []  # the CR LF was one line end, not two
    assert decoder.feed(b"\r\n") == [SSEMessage("a")]


def test_comments_heartbeats_and_unknown_fields_are_not_events() -> None:
    data = b": heartbeat\n\n:x\nid: 7\nretry: 10\nfoo: bar\ndata:  two spaces\ndata\n\n"
    assert SSEDecoder().feed(data) == [SSEMessage(" two spaces\n")]
    assert SSEDecoder().feed(HEARTBEAT * 3) == []


def test_an_incomplete_frame_yields_nothing() -> None:
    decoder = EventDecoder()
    assert decoder.feed(b'data: {"seq":1,"type":"synced"}\n') == []
    assert decoder.close() == []
    truncated = SSEDecoder()
    assert truncated.feed(b'data: {"seq":1,"type":"sync') == [] and truncated.close() == []


def test_a_frame_that_is_not_a_json_object_is_skipped() -> None:
    data = b'data: {not json\n\ndata: [1]\n\ndata: {"seq":2,"type":"synced"}\n\n'
    assert decode_events(data) == [{"seq": 2, "type": "synced"}]


def test_utf8_split_across_chunks_and_a_leading_bom() -> None:
    encoded = "\ufeffdata: é€😀\n\n".encode()
    decoder = SSEDecoder()
    out = [m for i in range(len(encoded)) for m in decoder.feed(encoded[i : i + 1])]
    assert out == [SSEMessage("é€😀")]
    assert SSEDecoder().feed("data: text in\n\n") == [SSEMessage("text in")]
