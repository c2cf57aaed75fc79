"""What a page's first paint showed of each live component, kept in this process beside the page.

A page's channel starts from what the page shows: a list's rows (:class:`ShownList`) and an
editor's model (:class:`~flask_krm.ui.render.EditorModel`). They are kept in the session's state of
the page (:meth:`flask_krm.sessions.SessionDrafts.page_state`), not on the persisted
:class:`~flask_krm.ui.page.Page` record: they are objects of this process, and another worker opening
the page's channel starts from the page's digests of what it painted (``Page.painted``) instead.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from .page import PAGE_STATE_PREFIX

if t.TYPE_CHECKING:
    from ..sessions import SessionDrafts
    from .list_updates import ShownList
    from .render import EditorModel

PAINTED_KEY: t.Final = "painted"


@dataclass(eq=False)
class Painted:
    """What one page's first paint showed, by component id."""

    lists: dict[str, ShownList] = field(default_factory=dict)
    editors: dict[str, EditorModel] = field(default_factory=dict)


def painted(drafts: SessionDrafts, page_id: str) -> Painted:
    """What the page ``page_id`` painted, to be filled in while it renders."""
    state = drafts.page_state((PAGE_STATE_PREFIX, page_id))
    held = state.get(PAINTED_KEY)
    if not isinstance(held, Painted):
        held = state[PAINTED_KEY] = Painted()
    return held


def find_painted(drafts: SessionDrafts, page_id: str) -> Painted | None:
    """What the page ``page_id`` painted in this process, or ``None`` (painted by another worker, or forgotten)."""
    state = drafts.find_page_state((PAGE_STATE_PREFIX, page_id))
    held = state.get(PAINTED_KEY) if state is not None else None
    return held if isinstance(held, Painted) else None


__all__ = ["Painted", "find_painted", "painted"]
