"""The stream response: made as the application's response class, its body is the chunks themselves
for any server but gevent's pywsgi (whose driver is pinned by ``test_pywsgi_driver.py``), its close
releases the stream, and ``KRM_SERVER_DRIVER`` is read when the response is made."""

from __future__ import annotations

from pathlib import Path

import pytest
from flask import Flask, Response

from flask_krm.sse_response import SSEResponse, sse_response

HEADERS = [("Content-Type", "text/event-stream")]


class HostResponse(Response):
    """A host's own response class."""


def test_the_body_is_the_chunks_and_its_close_releases_the_stream(tmp_path: Path) -> None:
    app = Flask("host", instance_path=str(tmp_path))
    app.response_class = HostResponse
    released: list[bool] = []
    with app.test_request_context():
        for driver in (True, False):
            app.config["KRM_SERVER_DRIVER"] = driver
            response = sse_response(iter([b"a", b"", b"b"]), HEADERS, lambda driver=driver: released.append(driver))
            assert isinstance(response, HostResponse) and isinstance(response, SSEResponse)
            body = response.get_app_iter({"REQUEST_METHOD": "GET"})
            assert list(body) == [b"a", b"", b"b"]  # iterated here, not by pywsgi: untouched
            body.close()  # type: ignore[attr-defined]
    assert released == [True, False]


def test_a_server_driver_setting_that_is_not_a_flag_is_refused_naming_the_key(tmp_path: Path) -> None:
    app = Flask("host", instance_path=str(tmp_path))
    app.config["KRM_SERVER_DRIVER"] = "off"
    with app.test_request_context(), pytest.raises(ValueError, match="KRM_SERVER_DRIVER must be True or False"):
        sse_response(iter([]), HEADERS, lambda: None)
