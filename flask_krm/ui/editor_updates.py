"""Live updates of one editor on one page, element by element, from the data.

A page channel keeps, for each editor, the :class:`~flask_krm.ui.render.EditorModel` its page shows
(the first paint's, then the last one sent). After a change it compares that model with the current
one, field by field (:func:`changed_parts`), and sends only the elements whose data changed, each
rendered alone (``krm/editor_part.html``) and replacing its element by id (``outerMorph``, so a
focused field keeps its value, caret and focus):

- a field whose value alone changed: its control; a field whose state changed (dirty, conflict...):
  the field, as its map, list or group shows it; a map or list whose entries changed: the map or list;
- the stream state and the conflict announcement, when theirs changed;
- the YAML tab's text as the lines that changed (:func:`line_changes`, applied by ``krm-lines.js``),
  its conflict list and "Your changes" when theirs changed.

The whole body is sent instead when the body's shape changed (a top-level field added or removed,
the object gone, the draft unrenderable...), when the controls the person is offered changed
(:class:`~flask_krm.ui.offer.Offer`, kept on the model), and when only the page's edit count changed.

Every session that has not touched the object and is offered the same controls shows the same
model (one per delivery and offer), so the message from one model to the next is made once for all
of them (:data:`_MESSAGES`): per session, a dictionary look-up. Every element sent after field
edits through the page carries the edit count on its root element (``data-krm-edits``), as the
whole body carries it in its marker: ``krm-field.js`` lets a field take a render only if it was made
after the field's last accepted edit.
"""

from __future__ import annotations

import difflib
import json
import re
import threading
import typing as t
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import fields

from markupsafe import Markup, escape

from ..htmx import edits_marker, partial
from .page import Component
from .render import EditorModel, FragmentCache, body_partial, render_editor_part, render_whole
from .widgets import Field

MESSAGES_KEPT: t.Final = 64
"""How many messages :class:`EditorUpdates` keeps made (see :data:`_MESSAGES`)."""
LINES_SWAP: t.Final = "krmLines"
"""The swap style that applies a line diff to an element's text (``krm-lines.js``)."""

_VALUE_ATTRIBUTES: t.Final = frozenset({"text", "checked", "revision", "size", "integral"})
"""What a field's control alone shows: a change of only these sends the control."""

Part: t.TypeAlias = tuple[str, str, dict[str, t.Any]]
"""An element to send alone: its id, its part of ``krm/editor_part.html`` and what it shows."""


class _Whole(Exception):
    """The models differ in shape: the whole body is sent."""


def line_changes(old: str, new: str) -> list[tuple[int, int, list[str]]]:
    """The changes bringing the lines of ``old`` to those of ``new``: ``(start, end, lines)`` each
    replacing lines ``start`` to ``end`` (0-based, end excluded) of ``old`` with ``lines``, in order."""
    before, after = old.split("\n"), new.split("\n")
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return [(i1, i2, after[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def apply_line_changes(text: str, changes: Sequence[tuple[int, int, Sequence[str]]]) -> str:
    """``text`` with ``changes`` (:func:`line_changes`) applied, as ``krm-lines.js`` applies them."""
    lines = text.split("\n")
    for start, end, replacement in reversed(changes):
        lines[start:end] = replacement
    return "\n".join(lines)


def _lines_partial(target_id: str, old: str, new: str) -> str:
    changes = line_changes(old, new)
    payload = json.dumps({"from": old.count("\n") + 1, "changes": changes}, ensure_ascii=False, separators=(",", ":"))
    return partial(target_id, escape(payload), swap=LINES_SWAP)


_OWN: t.Final = tuple(attribute.name for attribute in fields(Field) if attribute.name != "children")
_OWN_SHOWN_BY_ELEMENT: t.Final = tuple(name for name in _OWN if name not in _VALUE_ATTRIBUTES)


def _own(field: Field, names: tuple[str, ...] = _OWN) -> tuple[t.Any, ...]:
    """What ``field`` shows of itself (its children apart)."""
    return tuple(getattr(field, name) for name in names)


def field_parts(old: Field, new: Field, part: str, parent: Field | None, fid: t.Callable[..., str]) -> Iterator[Part]:
    """The elements to send for the field ``old`` that is now ``new``, shown as ``part`` (in
    ``parent``, the map holding an entry)."""
    if old == new:
        return
    element = f"{fid(new.path)}-{'group' if part == 'item' else 'field'}"
    shown = {"field": new, "parent": parent}
    same_children = len(old.children) == len(new.children) and all(
        a.path == b.path and a.kind == b.kind for a, b in zip(old.children, new.children, strict=True)
    )
    if not same_children or old.path != new.path or old.kind != new.kind:
        yield element, part, shown
        return
    if _own(old) != _own(new):
        if old.children or new.children or new.widget is None:
            yield element, part, shown
            return
        if _own(old, _OWN_SHOWN_BY_ELEMENT) == _own(new, _OWN_SHOWN_BY_ELEMENT):
            yield fid(new.path), "control", shown  # only the value moved: the control alone
        else:
            yield element, part, shown
        return
    inner = {"map": "entry", "items": "item", "rows": "row"}.get(new.kind, "field")
    for a, b in zip(old.children, new.children, strict=True):
        yield from field_parts(a, b, inner, new if inner == "entry" else None, fid)


def changed_parts(component: Component, old: EditorModel, new: EditorModel) -> list[Part] | None:
    """The elements of ``new``'s body whose data differs from ``old``'s (the YAML text apart), or
    ``None`` when the bodies differ in shape (the whole body is sent)."""
    if old.shape != new.shape or (new.shape != "object" and (old.status != new.status or old.removed != new.removed)):
        return None
    if new.shape != "object":
        return []
    a, b = old.view, new.view
    if old.offer != new.offer:  # other controls are shown now
        return None
    if old.obj != new.obj or (a is None) != (b is None) or (old.yaml is None) != (new.yaml is None):
        return None
    cid, fid = component.id, component.element_id
    parts: list[Part] = []
    if old.status != new.status:
        parts.append((f"{cid}-stream", "stream", {}))
    if a is not None and b is not None:
        if a.too_many != b.too_many or a.other_conflicts != b.other_conflicts:
            return None
        if [(f.path, f.kind) for f in a.fields] != [(f.path, f.kind) for f in b.fields]:
            return None
        if a.conflict_count != b.conflict_count:
            parts.append((f"{cid}-announce", "announce", {}))
        for old_field, new_field in zip(a.fields, b.fields, strict=True):
            parts.extend(field_parts(old_field, new_field, "field", None, fid))
    if old.yaml is not None and new.yaml is not None:
        if old.yaml.conflicts != new.yaml.conflicts:
            parts.append((f"{cid}-yaml-conflicts", "yaml-conflicts", {}))
        if old.yaml.changes != new.yaml.changes:
            parts.append((f"{cid}-changes", "changes", {}))
    return parts


def with_edits(element: str, edits: int) -> str:
    """``element`` (markup rendered here, starting with its start tag) with the page's edit count
    on its root element (none for ``0``)."""
    if not edits:
        return element
    name_end = re.match(r"<[A-Za-z][A-Za-z0-9-]*", element)
    assert name_end is not None
    return f'{element[: name_end.end()]} data-krm-edits="{int(edits)}"{element[name_end.end() :]}'


_MESSAGES: OrderedDict[tuple[t.Any, ...], tuple[EditorModel, EditorModel, tuple[str, ...]]] = OrderedDict()
"""The last messages made: (editor, identity of the model shown, of the model now, edit count) ->
both models (kept alive, so their identities stay theirs) and the partials."""
_LOCK = threading.Lock()


class EditorUpdates:
    """One editor followed by one page channel: what to send after each change of its model."""

    def __init__(self, component: Component, cache: FragmentCache, shown: EditorModel | None) -> None:
        self.component = component
        self.cache = cache
        self.shown = shown
        self.edits = 0

    def changes(self, model: EditorModel, edits: int) -> list[str]:
        """The partials bringing the page from what it shows to ``model`` (with the page's edit
        count ``edits``), or ``[]`` when it shows that already.

        Sessions showing the same model get the same message: it is made once for all of them."""
        shown, shown_edits = self.shown, self.edits
        self.shown, self.edits = model, edits
        if shown is None:
            return [self._whole(model, edits)]
        if shown is model and shown_edits == edits:
            return []
        key = (self.component.id, id(shown), id(model), shown_edits, edits)
        made = _MESSAGES.get(key)
        if made is not None and made[0] is shown and made[1] is model:
            return list(made[2])
        parts = self._changes(shown, model, shown_edits, edits)
        with _LOCK:
            _MESSAGES[key] = (shown, model, tuple(parts))
            while len(_MESSAGES) > MESSAGES_KEPT:
                _MESSAGES.popitem(last=False)  # the oldest made
        return parts

    def _changes(self, shown: EditorModel, model: EditorModel, shown_edits: int, edits: int) -> list[str]:
        component, cid = self.component, self.component.id
        try:
            elements = changed_parts(component, shown, model)
            if elements is None:
                return [self._whole(model, edits)]
            old_text = shown.yaml.text if shown.yaml is not None else ""
            new_text = model.yaml.text if model.yaml is not None else ""
            if not elements and old_text == new_text:
                # nothing shown changed: only the edit count moved, and the whole body lets every field take it
                return [] if edits == shown_edits else [self._whole(model, edits)]
            rendered = [
                (element, part, with_edits(render_editor_part(component, model, part, **context).strip(), edits))
                for element, part, context in elements
            ]
        except Exception:  # a part that cannot render alone: the whole body says why
            return [self._whole(model, edits)]
        # each element is rendered here from its template (autoescaped), with an integer attribute added
        parts = [partial(element, Markup(rendered_element), "outerMorph") for element, _, rendered_element in rendered]
        if old_text != new_text:  # after the fields, before the YAML tab's conflicts and "Your changes"
            yaml_parts = [at for at, (_, part, _) in enumerate(rendered) if part in ("yaml-conflicts", "changes")]
            parts.insert(
                yaml_parts[0] if yaml_parts else len(parts), _lines_partial(f"{cid}-yaml-source", old_text, new_text)
            )
        return parts

    def _whole(self, model: EditorModel, edits: int) -> str:
        body = render_whole(self.component, model, self.cache)
        return body_partial(self.component, body + edits_marker(edits) if edits else body)


__all__ = [
    "LINES_SWAP",
    "EditorUpdates",
    "apply_line_changes",
    "changed_parts",
    "field_parts",
    "line_changes",
    "with_edits",
]
