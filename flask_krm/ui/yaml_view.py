"""What an editor's YAML tab and "Your changes" tab show, built from the object's state.

The YAML tab shows the projected draft as YAML (:func:`flask_krm.yaml_text.dump_yaml`): what the
form shows, machinery removed, each withheld value as the ``!withheld`` placeholder. Conflicts are
listed by the line they are on in that text. "Your changes" is the draft's merge patch as YAML:
exactly the paths Save writes.

Pure (own imports): no Flask, no gevent.
"""

from __future__ import annotations

import typing as t
from collections.abc import Mapping
from dataclasses import dataclass

from ..store.paths import MISSING, Path
from ..yaml_text import YamlRefused, dump_yaml, load_yaml, with_placeholders
from .widgets import BYTES_MAP_PATHS, ConflictView, ObjectState, display_text


@dataclass(frozen=True, slots=True)
class YamlConflict:
    """A conflict as the YAML tab lists it: the line it is on in the text (None: not in the text)."""

    line: int | None
    view: ConflictView


@dataclass(frozen=True, slots=True)
class YamlView:
    """The YAML tab's text, its conflicts by line, and the changes Save would send (None: none)."""

    text: str
    conflicts: tuple[YamlConflict, ...]
    changes: str | None


def draft_yaml(draft: Mapping[str, t.Any], redacted: t.Iterable[Path]) -> str:
    """The YAML text of ``draft`` with a placeholder at each withheld path, and at each value of a
    bytes map (``binaryData``: the form shows only its size)."""
    withheld = [tuple(str(s) for s in path) for path in redacted]
    for root in BYTES_MAP_PATHS:
        values = draft.get(root[0]) if len(root) == 1 else None
        if isinstance(values, Mapping):
            withheld += [(*root, str(key)) for key in values]
    return dump_yaml(with_placeholders(dict(draft), withheld))


def _theirs_text(value: t.Any) -> str:
    if isinstance(value, (dict, list)):
        return dump_yaml(value).rstrip("\n")
    return display_text(value)


def build_yaml_view(state: ObjectState, patch: Mapping[str, t.Any] | None) -> YamlView:
    """The YAML tab of the object in ``state``; ``patch`` is the draft's merge patch."""
    text = draft_yaml(state.draft, state.redacted)
    lines: Mapping[Path, int] = {}
    if state.conflicts:
        try:
            lines = load_yaml(text).lines
        except YamlRefused:  # a rendered object always loads; without lines the list still shows
            lines = {}
    conflicts = []
    for path, theirs in state.conflicts.items():
        where = next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), None)
        shown = "" if theirs is MISSING else _theirs_text(theirs)
        conflicts.append(YamlConflict(where, ConflictView(path, shown, theirs is MISSING)))
    conflicts.sort(key=lambda c: (c.line or 0, c.view.pointer))
    return YamlView(text, tuple(conflicts), dump_yaml(dict(patch)) if patch else None)
