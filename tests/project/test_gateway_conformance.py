"""The conformance corpus' gateway half: every fixture's watch script, through the real engine.

One test case per fixture whose ``suites`` include ``gateway`` (a new fixture file is a new case):
the emitted events equal the fixture's ``events``, and the SSE bytes equal ``sse/<id>.sse``.
"""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.events import to_json
from flask_krm.sse import decode_events
from flask_krm.upstream.scripted import ScriptedFixture
from tests.corpus import bodies, fixture_params, golden_sse

# The keys a fixture event may carry; an unknown one fails loudly instead of being ignored.
EVENT_KEYS = {"type", "body", "redacted", "identity", "code", "terminal"}


def expected_event(fixture: dict[str, Any], event: dict[str, Any], golden: dict[str, Any]) -> dict[str, Any]:
    """The wire mapping (without ``seq``) the fixture's event stands for."""
    assert set(event) <= EVENT_KEYS, f"fixture event has unknown keys {set(event) - EVENT_KEYS}"
    kind = event["type"]
    if kind == "reset":
        out: dict[str, Any] = {"type": "reset"}
        if fixture["scope"].get("target"):
            out["target"] = fixture["scope"]["target"]
        return {**out, "scope": fixture["scope"], "projection": fixture["projection"]}
    if kind in ("added", "modified"):
        return {"type": kind, "object": bodies()[event["body"]], "redacted": event.get("redacted", [])}
    if kind == "deleted":
        return {"type": "deleted", "identity": event["identity"]}
    if kind == "synced":
        return {"type": "synced"}
    assert kind == "error", f"unknown fixture event type {kind!r}"
    # The fixture leaves the message open; the golden bytes fix it.
    return {
        "type": "error",
        "code": event["code"],
        "message": golden["message"],
        "terminal": event["terminal"],
    }


@pytest.mark.parametrize("fixture", fixture_params("gateway"))
def test_events_equal_the_fixture(fixture: dict[str, Any]) -> None:
    played = ScriptedFixture.load(fixture, bodies())
    emitted = [to_json(event) for connection in played.events() for event in connection]
    golden = decode_events(golden_sse(fixture["id"]))
    assert len(golden) == len(fixture["events"]), "the golden and the fixture disagree"
    expected = [expected_event(fixture, e, g) for e, g in zip(fixture["events"], golden)]
    assert emitted == expected


@pytest.mark.parametrize("fixture", fixture_params("gateway"))
def test_bytes_equal_the_golden(fixture: dict[str, Any]) -> None:
    played = ScriptedFixture.load(fixture, bodies())
    assert played.render() == golden_sse(fixture["id"])


@pytest.mark.parametrize("fixture", fixture_params("gateway"))
def test_each_connection_starts_at_seq_1_with_a_reset(fixture: dict[str, Any]) -> None:
    played = ScriptedFixture.load(fixture, bodies())
    disconnects = sum(1 for step in fixture["watch"] if step["op"] == "disconnect")
    assert len(played.connections) == disconnects + 1
    for connection in played.render().split(b": connection ")[1:]:
        frames = decode_events(connection)
        assert frames[0]["seq"] == 1 and frames[0]["type"] == "reset"
        assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
