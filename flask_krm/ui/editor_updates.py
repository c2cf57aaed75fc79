"""Live updates of one editor on one page, block by block.

An editor's body (``krm/editor_body.html``) is cut into *blocks*: the outermost elements with an
``id`` (each top-level field of ``krm/_fields.html`` with its conflict panel, the stream state, the
conflict announcement, the YAML tab's source, its conflict list and "Your changes"), found by
descending through the elements without one (``.krm-fields``...). The rest is the body's
*skeleton*: the body with each block cut out, so a body is exactly its skeleton and its blocks.

The page keeps what it shows of each editor (:class:`ShownEditor`: a digest of the skeleton and
one per block). After a change the page channel renders the body and asks
:class:`EditorUpdates` what to send: each block whose digest changed, replacing its element by id
(``outerMorph``, so a focused field in it keeps its value, caret and focus). The whole body is sent
instead when the skeleton changed (a field added or removed, a new item, a new conflict outside the
fields, the object gone or the stream ended...), when the body cannot be cut (a host template with
unbalanced markup), and when only the page's edit count changed.

Every block sent after field edits through the page carries the edit count on its root element
(``data-krm-edits``), as the whole body carries it in its marker: ``krm.js`` lets a field take a
render only if it was made after the field's last accepted edit.
"""

from __future__ import annotations

import hashlib
import re
import typing as t
from dataclasses import dataclass

from markupsafe import Markup

from ..htmx import edits_marker, partial
from .page import Component
from .render import body_partial

_TAG: t.Final = re.compile(
    r"<!--.*?-->|<(/?)([A-Za-z][A-Za-z0-9-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>",
    re.S,
)
_ID: t.Final = re.compile(r"""\sid\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+))""")
_VOID: t.Final = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_RAW_TEXT: t.Final = frozenset({"script", "style", "textarea", "title"})


@dataclass(frozen=True, slots=True)
class Blocks:
    """A body cut into its skeleton and its blocks (element id, markup), in document order."""

    skeleton: str
    blocks: tuple[tuple[str, str], ...]


def cut_blocks(body: str) -> Blocks | None:
    """``body`` cut into its skeleton and blocks, or ``None`` when its markup does not nest
    (then it can only be sent whole)."""
    skeleton: list[str] = []
    blocks: list[tuple[str, str]] = []
    stack: list[str] = []
    block_start = block_depth = -1
    block_id = ""
    copied = 0
    at = 0
    while True:
        found = _TAG.search(body, at)
        if found is None:
            break
        at = found.end()
        name = (found.group(2) or "").lower()
        if not name:  # a comment
            continue
        if found.group(1):  # an end tag
            if not stack or stack[-1] != name:
                return None
            stack.pop()
            if len(stack) == block_depth:
                blocks.append((block_id, body[block_start:at]))
                skeleton.append(body[copied:block_start] + f"\x00{block_id}\x00")
                copied, block_start, block_depth = at, -1, -1
            continue
        attributes = found.group(3)
        id_match = _ID.search(attributes) if block_depth < 0 else None
        if name in _VOID or attributes.rstrip().endswith("/"):  # no content, no end tag
            if id_match is not None:
                blocks.append((_value(id_match), found.group()))
                skeleton.append(body[copied : found.start()] + f"\x00{_value(id_match)}\x00")
                copied = at
            continue
        if id_match is not None:
            block_id, block_start, block_depth = _value(id_match), found.start(), len(stack)
        stack.append(name)
        if name in _RAW_TEXT:  # its text holds no tags: go to its end tag
            end = re.compile(rf"</{name}[\s/>]", re.I).search(body, at)
            if end is None:
                return None
            at = end.start()
    if stack:
        return None
    skeleton.append(body[copied:])
    return Blocks("".join(skeleton), tuple(blocks))


def _value(id_match: re.Match[str]) -> str:
    return next(group for group in id_match.groups() if group is not None)


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


@dataclass(frozen=True, slots=True)
class ShownEditor:
    """What a page shows of one editor: a digest of its body's skeleton, one per block (element
    id, digest) in order, and the page's edit count the body was rendered with."""

    skeleton: str
    blocks: tuple[tuple[str, str], ...]
    edits: int


def shown_editor(body: str, edits: int = 0) -> ShownEditor:
    """What a page rendered with ``body`` shows (kept on the page, so its channel starts from it)."""
    return _shown(body, cut_blocks(body), edits)


def _shown(body: str, cut: Blocks | None, edits: int) -> ShownEditor:
    if cut is None:
        return ShownEditor(_digest(body), (), edits)
    return ShownEditor(_digest(cut.skeleton), tuple((name, _digest(block)) for name, block in cut.blocks), edits)


def with_edits(block: str, edits: int) -> Markup:
    """``block`` (one element) with the page's edit count on its root element."""
    name_end = re.match(r"<[A-Za-z][A-Za-z0-9-]*", block)
    assert name_end is not None
    return Markup(f'{block[: name_end.end()]} data-krm-edits="{edits}"{block[name_end.end() :]}')


class EditorUpdates:
    """One editor followed by one page channel: what to send after each render of its body."""

    def __init__(self, component: Component, shown: ShownEditor | None) -> None:
        self.component = component
        self.shown = shown

    def changes(self, body: Markup, edits: int) -> list[str]:
        """The partials bringing the page from what it shows to ``body`` (rendered with the
        page's edit count ``edits``), or ``[]`` when it shows that already."""
        cut = cut_blocks(body)
        shown, now = self.shown, _shown(body, cut, edits)
        self.shown = now
        if shown == now:
            return []
        if (
            cut is None
            or shown is None
            or shown.skeleton != now.skeleton
            or [name for name, _ in shown.blocks] != [name for name, _ in now.blocks]
        ):
            return [self._whole(body, edits)]
        changed = [
            (name, block)
            for (name, block), (_, old), (_, new) in zip(cut.blocks, shown.blocks, now.blocks, strict=True)
            if old != new
        ]
        if not changed:  # only the edit count moved: the whole body lets every field take it
            return [self._whole(body, edits)]
        return [
            partial(name, with_edits(block, edits) if edits else Markup(block), swap="outerMorph")
            for name, block in changed
        ]

    def _whole(self, body: Markup, edits: int) -> str:
        return body_partial(self.component, body + edits_marker(edits) if edits else body)


__all__ = ["Blocks", "EditorUpdates", "ShownEditor", "cut_blocks", "shown_editor", "with_edits"]
