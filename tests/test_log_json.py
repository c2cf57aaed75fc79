"""The JSON-lines log formatter writes the structured fields of a stream's records."""

from __future__ import annotations

import json
import logging
import re

import gevent
import pytest
from flask import Flask

from flask_krm import KrmStream
from flask_krm.log_json import JsonFormatter
from tests.test_stream_view import QUERY, URL, Held


def test_the_json_formatter_writes_the_structured_fields(
    served: tuple[Flask, KrmStream], caplog: pytest.LogCaptureFixture
) -> None:
    app, krm = served
    krm.plug_source("demo", Held(), app)
    client = app.test_client()
    client.get("/login/viewer")
    with caplog.at_level(logging.DEBUG, logger="flask_krm"):
        response = client.get(f"{URL}?{QUERY}", headers={"X-Request-Id": "req-42"}, buffered=False)
        with gevent.Timeout(5):
            next(response.response)
        response.close()
    formatter = JsonFormatter()
    lines = [
        json.loads(formatter.format(r)) for r in caplog.records if getattr(r, "krm_event", "").startswith("stream")
    ]
    assert [line["krm_event"] for line in lines] == ["stream-open", "stream-close"]
    opened, closed = lines
    assert opened["request_id"] == closed["request_id"] == "req-42"
    assert opened["stream_id"] == closed["stream_id"] and re.fullmatch(r"[0-9a-f]{16}", opened["stream_id"])
    assert opened["target"] == "demo" and opened["resource"] == "configmaps" and opened["kind"] == "json"
    assert closed["outcome"] == "client-closed"
    assert opened["level"] == "DEBUG" and opened["logger"] == "flask_krm" and opened["time"].endswith("+00:00")
