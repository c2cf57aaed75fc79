"""Finding an element in rendered markup, the way a test applies a page channel's partials.

For :class:`~flask_krm.testing.pytest_plugin.LivePage`, which keeps each component's body as markup
and applies the channel's ``<hx-partial>`` elements to it as the browser would: an element is found
by its id (:func:`element_span`), reading tags (comments and the text of ``<textarea>``,
``<script>``... skipped). Not used to serve pages.
"""

from __future__ import annotations

import re
import typing as t
from collections.abc import Iterator
from dataclasses import dataclass

_TAG: t.Final = re.compile(
    r"<!--.*?-->|<(/?)([A-Za-z][A-Za-z0-9-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>",
    re.S,
)
_MAYBE_ID: t.Final = re.compile(r"\sid\s*=", re.I)
_ATTRIBUTE: t.Final = re.compile(r"""\s*([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_SELECTABLE_ID: t.Final = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
"""The ids a ``#id`` selector names as they are."""
_VOID: t.Final = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_RAW_TEXT: t.Final = frozenset({"script", "style", "textarea", "title"})


@dataclass(frozen=True, slots=True)
class _Tag:
    """A start or end tag of an element in markup."""

    start: int
    end: int
    name: str
    closing: bool
    attributes: str
    empty: bool
    """A start tag without content or end tag (``<input>``, ``<br/>``)."""


def _tags(markup: str) -> Iterator[_Tag]:
    """The tags of ``markup`` in order (comments and the text of ``<textarea>``, ``<script>``...
    skipped; such an element's text without its end tag ends the tags there)."""
    at = 0
    while (found := _TAG.search(markup, at)) is not None:
        at = found.end()
        name = (found.group(2) or "").lower()
        if not name:  # a comment
            continue
        attributes = found.group(3) or ""
        closing = bool(found.group(1))
        empty = not closing and (name in _VOID or attributes.rstrip().endswith("/"))
        yield _Tag(found.start(), at, name, closing, attributes, empty)
        if name in _RAW_TEXT and not closing:  # its text holds no tags: go to its end tag
            end = re.compile(rf"</{name}[\s/>]", re.I).search(markup, at)
            if end is None:
                return
            at = end.start()


def element_span(markup: str, element_id: str) -> tuple[int, int] | None:
    """Where the element ``id="element_id"`` starts and ends (after its end tag) in ``markup``, or
    ``None`` when there is none (or it does not end)."""
    start, depth = -1, 0
    for tag in _tags(markup):
        if start < 0:
            if not tag.closing and _id_of(tag.attributes) == element_id:
                if tag.empty:
                    return tag.start, tag.end
                start = tag.start
            continue
        if tag.closing:
            if depth == 0:
                return start, tag.end
            depth -= 1
        elif not tag.empty:
            depth += 1
    return None


def _id_of(attributes: str) -> str | None:
    """The id in a start tag's ``attributes`` if it makes a block (see :data:`_SELECTABLE_ID`)."""
    if _MAYBE_ID.search(attributes) is None:
        return None
    for attribute in _ATTRIBUTE.finditer(attributes.rstrip("/ \t\n")):
        if attribute.group(1).lower() == "id":
            value = next((group for group in attribute.groups()[1:] if group is not None), "")
            return value if _SELECTABLE_ID.fullmatch(value) else None
    return None


__all__ = ["element_span"]
