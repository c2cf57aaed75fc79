"""Telling a session's open streams that the session ended: by tag, once, each watcher alone."""

from __future__ import annotations

import logging

import pytest

from flask_krm.drafts.backend import session_tag
from flask_krm.drafts.endings import SessionEndings


def test_every_watcher_of_an_ended_session_is_told_once_and_others_are_not() -> None:
    endings = SessionEndings()
    told: list[str] = []
    endings.watch("s1", lambda: told.append("page"))
    endings.watch("s1", lambda: told.append("json"))
    endings.watch("s2", lambda: told.append("other"))
    assert len(endings) == 3
    endings.end(session_tag("s1"))
    assert told == ["page", "json"]
    endings.end(session_tag("s1"))
    assert told == ["page", "json"]
    assert len(endings) == 1


def test_a_session_is_ended_by_its_tag_never_by_its_id() -> None:
    endings = SessionEndings()
    told: list[str] = []
    endings.watch("s1", lambda: told.append("s1"))
    endings.end("s1")
    assert told == []
    endings.end(session_tag("s1"))
    assert told == ["s1"]


def test_a_watcher_that_stopped_watching_is_not_told() -> None:
    endings = SessionEndings()
    told: list[str] = []
    stop = endings.watch("s1", lambda: told.append("stopped"))
    endings.watch("s1", lambda: told.append("kept"))
    stop()
    stop()  # stopping twice is harmless
    assert len(endings) == 1
    endings.end(session_tag("s1"))
    assert told == ["kept"]


def test_the_last_watcher_stopping_forgets_the_session() -> None:
    endings = SessionEndings()
    stop = endings.watch("s1", lambda: None)
    stop()
    assert len(endings) == 0
    assert endings._watchers == {}


def test_one_failing_watcher_never_keeps_the_others_open(caplog: pytest.LogCaptureFixture) -> None:
    endings = SessionEndings()
    told: list[str] = []

    def fails() -> None:
        raise RuntimeError("broken pipe")

    endings.watch("s1", fails)
    endings.watch("s1", lambda: told.append("after"))
    with caplog.at_level(logging.ERROR, logger="flask_krm.drafts"):
        endings.end(session_tag("s1"))
    assert told == ["after"]
    assert [r.getMessage() for r in caplog.records] == ["ending a stream of an ended session failed"]


def test_a_watcher_may_stop_watching_while_it_is_told() -> None:
    endings = SessionEndings()
    stops: list[object] = []
    told: list[str] = []

    def ended() -> None:
        told.append("told")
        stops[0]()  # type: ignore[operator]

    stops.append(endings.watch("s1", ended))
    endings.end(session_tag("s1"))
    assert told == ["told"] and len(endings) == 0
