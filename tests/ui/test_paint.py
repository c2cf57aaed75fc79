"""What a page's first paint showed is kept in the session's state of the page, in this process,
never on the persisted page record."""

from __future__ import annotations

from flask_krm.sessions import DraftRegistry, Limits
from flask_krm.ui.page import Page, page_to_json
from flask_krm.ui.paint import Painted, find_painted, painted
from flask_krm.ui.render import EditorModel, StreamStatus


def test_a_paint_is_kept_beside_its_page_for_its_session_only() -> None:
    registry = DraftRegistry()
    drafts = registry.namespace("session", "alice", Limits(1800.0, 3600.0, 4))
    assert find_painted(drafts, "page-1") is None, "nothing painted yet"
    record = painted(drafts, "page-1")
    model = EditorModel(StreamStatus("live"))
    record.editors["krm-000000000000"] = model
    assert painted(drafts, "page-1") is record and find_painted(drafts, "page-1") is record
    assert find_painted(drafts, "page-2") is None
    other = registry.namespace("other-session", "alice", Limits(1800.0, 3600.0, 4))
    assert find_painted(other, "page-1") is None, "another session's page"
    assert isinstance(record, Painted) and record.editors["krm-000000000000"] is model


def test_the_persisted_page_holds_no_paint() -> None:
    page = Page("page-1")
    page.painted["krm-000000000000"] = "digest"
    assert set(page_to_json(page)) == {"id", "components", "painted", "bound", "queries"}
    assert not hasattr(page, "shown_editors") and not hasattr(page, "shown_lists")
