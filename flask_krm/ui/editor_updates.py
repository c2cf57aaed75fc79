"""Live updates of one editor on one page, element by element.

An editor's body (``krm/editor_body.html``) is cut into *blocks*: its elements with an ``id`` (each
field of ``krm/_fields.html`` and its group, entry, row, control and conflict panel; the stream
state; the conflict announcement; the YAML tab's source, its conflict list and "Your changes").
Blocks nest: a block's *own* markup is its markup with each inner block cut out, leaving a
placeholder naming it, and the body's *skeleton* is the body with each outermost block cut out.

The page keeps what it shows of each editor (:class:`ShownEditor`: a digest of the skeleton, and of
each block's own markup). After a change the page channel renders the body and asks
:class:`EditorUpdates` what to send: each outermost block whose own markup changed (a block whose own
markup is unchanged is looked into), replacing its element by id (``outerMorph``, so a focused field
keeps its value, caret and focus). So a colleague's new value sends that field's control; a new
conflict, that field with its panel; a new key or item, the map or list it went into. The whole body
is sent instead when the skeleton changed (a top-level field added or removed, the object gone, the
stream ended...), when the body cannot be cut (a host template with markup that does not nest), when
the changed blocks are most of the body, and when only the page's edit count changed.

Every block sent after field edits through the page carries the edit count on its root element
(``data-krm-edits``), as the whole body carries it in its marker: ``krm.js`` lets a field take a
render only if it was made after the field's last accepted edit.
"""

from __future__ import annotations

import functools
import hashlib
import re
import typing as t
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass

from markupsafe import Markup

from ..htmx import edits_marker, partial
from .page import Component, Page
from .render import body_partial

_TAG: t.Final = re.compile(
    r"<!--.*?-->|<(/?)([A-Za-z][A-Za-z0-9-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>",
    re.S,
)
_MAYBE_ID: t.Final = re.compile(r"\sid\s*=", re.I)
_ATTRIBUTE: t.Final = re.compile(r"""\s*([^\s"'=<>/]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_BLOCK_ID: t.Final = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
"""The ids that make a block: those a ``#id`` selector names as they are."""
_VOID: t.Final = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
)
_RAW_TEXT: t.Final = frozenset({"script", "style", "textarea", "title"})
BODIES_KEPT: t.Final = 32
"""How many bodies :func:`read_body` keeps read."""
MESSAGES_KEPT: t.Final = 64
"""How many messages :class:`EditorUpdates` keeps made (see :data:`_MESSAGES`)."""


@dataclass(frozen=True, slots=True)
class Block:
    """One element with an id: its markup, its *own* markup (each inner block cut out, leaving a
    placeholder naming it) and its inner blocks, in document order."""

    id: str
    markup: str
    own: str
    inner: tuple[Block, ...]


@dataclass(frozen=True, slots=True)
class Blocks:
    """A body cut into its skeleton (each outermost block cut out) and its outermost blocks."""

    skeleton: str
    blocks: tuple[Block, ...]


@dataclass(slots=True)
class _Open:
    """A block being read: where it starts, its own markup so far and its inner blocks."""

    id: str
    start: int
    copied: int
    own: list[str]
    inner: list[Block]


def _placeholder(block_id: str) -> str:
    return f"\x00{block_id}\x00"


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


def cut_blocks(body: str) -> Blocks | None:
    """``body`` cut into blocks, or ``None`` when its markup does not nest or an id is there twice
    (then it can only be sent whole)."""
    if "\x00" in body:  # the placeholders' character: a body holding it is never cut
        return None
    seen: set[str] = set()
    top = _Open("", 0, 0, [], [])
    frames = [top]
    elements: list[tuple[str, bool]] = []  # open elements: name, whether it starts a block
    for tag in _tags(body):
        if tag.closing:
            if not elements or elements[-1][0] != tag.name:
                return None
            if elements.pop()[1]:
                _close(frames, body, tag.end)
            continue
        block_id = _id_of(tag.attributes)
        if block_id is not None:
            if block_id in seen:
                return None
            seen.add(block_id)
            parent = frames[-1]
            parent.own.append(body[parent.copied : tag.start] + _placeholder(block_id))
            frames.append(_Open(block_id, tag.start, tag.start, [], []))
        if tag.empty:
            if block_id is not None:
                _close(frames, body, tag.end)
            continue
        elements.append((tag.name, block_id is not None))
    if elements:
        return None
    top.own.append(body[top.copied :])
    return Blocks("".join(top.own), tuple(top.inner))


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


def _close(frames: list[_Open], body: str, end: int) -> None:
    frame = frames.pop()
    frame.own.append(body[frame.copied : end])
    frames[-1].inner.append(Block(frame.id, body[frame.start : end], "".join(frame.own), tuple(frame.inner)))
    frames[-1].copied = end


def _id_of(attributes: str) -> str | None:
    """The id in a start tag's ``attributes`` if it makes a block (see :data:`_BLOCK_ID`)."""
    if _MAYBE_ID.search(attributes) is None:
        return None
    for attribute in _ATTRIBUTE.finditer(attributes.rstrip("/ \t\n")):
        if attribute.group(1).lower() == "id":
            value = next((group for group in attribute.groups()[1:] if group is not None), "")
            return value if _BLOCK_ID.fullmatch(value) else None
    return None


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


ShownBlock: t.TypeAlias = tuple[str, str, tuple["ShownBlock", ...]]
"""A block as a page shows it: element id, digest of its own markup, its inner blocks."""


@dataclass(frozen=True, slots=True)
class ShownEditor:
    """What a page shows of one editor: a digest of its body's skeleton (or of the whole body, when
    it cannot be cut), its blocks, and the page's edit count the body was rendered with."""

    skeleton: str
    blocks: tuple[ShownBlock, ...]
    edits: int


def shown_editor(body: str, edits: int = 0) -> ShownEditor:
    """What a page rendered with ``body`` shows (kept on the page, so its channel starts from it)."""
    _, skeleton, blocks = read_body(body)
    return ShownEditor(skeleton, blocks, edits)


def shown_editor_of(page: Page, component_id: str) -> ShownEditor | None:
    """What ``page``'s first paint showed of its editor ``component_id``, if it is known here."""
    shown = page.shown.get(component_id)
    return shown if isinstance(shown, ShownEditor) else None


def _shown_blocks(blocks: tuple[Block, ...]) -> tuple[ShownBlock, ...]:
    return tuple((block.id, _digest(block.own), _shown_blocks(block.inner)) for block in blocks)


@functools.lru_cache(maxsize=BODIES_KEPT)
def read_body(body: str) -> tuple[Blocks | None, str, tuple[ShownBlock, ...]]:
    """``body`` cut into blocks (``None``: it cannot be), the digest of its skeleton (of the whole
    body when it cannot be cut) and its blocks' digests. The last bodies read are kept: a body
    without this session's changes is one shared string, read once for every page showing it."""
    cut = cut_blocks(body)
    if cut is None:
        return None, _digest(body), ()
    return cut, _digest(cut.skeleton), _shown_blocks(cut.blocks)


def changed_blocks(
    shown: tuple[ShownBlock, ...], now: tuple[ShownBlock, ...], blocks: tuple[Block, ...]
) -> list[Block]:
    """The outermost ``blocks`` whose own markup differs from what the page shows (``shown``;
    ``now``: the same blocks' digests); a block whose own markup is unchanged is looked into."""
    changed: list[Block] = []
    for (old_id, old, old_inner), (_, new, new_inner), block in zip(shown, now, blocks, strict=True):
        if old_id != block.id or old != new:
            changed.append(block)
        elif old_inner != new_inner:
            changed.extend(changed_blocks(old_inner, new_inner, block.inner))
    return changed


def with_edits(block: str, edits: int) -> str:
    """``block`` (one element) with the page's edit count on its root element (none for ``0``)."""
    if not edits:
        return block
    name_end = re.match(r"<[A-Za-z][A-Za-z0-9-]*", block)
    assert name_end is not None
    return f'{block[: name_end.end()]} data-krm-edits="{int(edits)}"{block[name_end.end() :]}'


_MESSAGES: OrderedDict[tuple[t.Any, ...], tuple[tuple[ShownBlock, ...], tuple[str, ...]]] = OrderedDict()
"""The last messages made: (editor, what its page showed, the body now, edit count) -> the partials."""


class EditorUpdates:
    """One editor followed by one page channel: what to send after each render of its body."""

    def __init__(self, component: Component, shown: ShownEditor | None) -> None:
        self.component = component
        self.shown = shown

    def changes(self, body: Markup, edits: int) -> list[str]:
        """The partials bringing the page from what it shows to ``body`` (rendered with the
        page's edit count ``edits``), or ``[]`` when it shows that already.

        A body without this session's edits is one shared string (the fragment cache's), and the
        pages that showed the same body before get the same message: it is made once for all of
        them (:data:`_MESSAGES`), not compared block by block for each."""
        cut, skeleton, blocks = read_body(body)
        shown, now = self.shown, ShownEditor(skeleton, blocks, edits)
        self.shown = now
        if shown == now:
            return []
        if shown is None:
            return self._changes(body, edits, cut, shown, now)
        # keyed by the identity of the blocks read (shared while read_body keeps the body), kept alive by the entry
        key = (self.component.id, shown.skeleton, id(shown.blocks), shown.edits, body, edits)
        made = _MESSAGES.get(key)
        if made is not None and made[0] is shown.blocks:
            return list(made[1])
        parts = self._changes(body, edits, cut, shown, now)
        _MESSAGES[key] = (shown.blocks, tuple(parts))
        while len(_MESSAGES) > MESSAGES_KEPT:
            try:
                _MESSAGES.popitem(last=False)  # the oldest made
            except KeyError:  # emptied meanwhile by another thread
                break
        return parts

    def _changes(
        self, body: Markup, edits: int, cut: Blocks | None, shown: ShownEditor | None, now: ShownEditor
    ) -> list[str]:
        if cut is None or shown is None or shown.skeleton != now.skeleton or len(shown.blocks) != len(now.blocks):
            return [self._whole(body, edits)]
        changed = changed_blocks(shown.blocks, now.blocks, cut.blocks)
        if not changed:  # only the edit count moved: the whole body lets every field take it
            return [self._whole(body, edits)]
        if sum(len(block.markup) for block in changed) > len(body) // 2:  # most of it: one morph of the body
            return [self._whole(body, edits)]
        # each block is a slice of the rendered (escaped) body, from one of its tags to its end
        return [partial(block.id, Markup(with_edits(block.markup, edits)), swap="outerMorph") for block in changed]

    def _whole(self, body: Markup, edits: int) -> str:
        return body_partial(self.component, body + edits_marker(edits) if edits else body)


__all__ = [
    "Block",
    "Blocks",
    "EditorUpdates",
    "ShownBlock",
    "ShownEditor",
    "changed_blocks",
    "cut_blocks",
    "element_span",
    "shown_editor",
    "shown_editor_of",
    "with_edits",
]
