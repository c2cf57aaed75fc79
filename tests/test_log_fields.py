"""Structured log fields: a request id a client sent is used only when it cannot forge a line."""

from __future__ import annotations

import logging
import re

import gevent
import pytest
from flask import Flask

from flask_krm import KrmStream
from tests.test_stream_view import QUERY, URL, Held


def test_a_forged_request_id_is_replaced(served: tuple[Flask, KrmStream], caplog: pytest.LogCaptureFixture) -> None:
    app, krm = served
    krm.plug_source("demo", Held(), app)
    client = app.test_client()
    client.get("/login/viewer")
    with caplog.at_level(logging.DEBUG, logger="flask_krm"):
        response = client.get(f"{URL}?{QUERY}", headers={"X-Request-Id": "a b;forged=1"}, buffered=False)
        with gevent.Timeout(5):
            next(response.response)
        response.close()
    ids = {r.request_id for r in caplog.records if hasattr(r, "request_id")}  # type: ignore[attr-defined]
    assert len(ids) == 1 and re.fullmatch(r"[0-9a-f]{16}", ids.pop())
