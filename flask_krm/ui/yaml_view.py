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

from ..store.paths import MISSING, Path, get_at
from ..yaml_text import YamlRefused, dump_yaml, dump_yaml_lines, load_yaml, with_placeholders
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


MACHINERY: t.Final = frozenset(
    {"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink"}
)
"""Metadata the server keeps, left out of the text: the form does not show it, nobody edits it, and
it changes with writes the person cannot see (a status update moves ``resourceVersion``)."""


def draft_yaml(draft: Mapping[str, t.Any], redacted: t.Iterable[Path], roots: t.Sequence[Path] | None = None) -> str:
    """The YAML text of ``draft`` (only its identity and what is under ``roots``, the editor's
    fields, when given) without :data:`MACHINERY`, with a placeholder at each withheld path, and at
    each value of a bytes map (``binaryData``: the form shows only its size)."""
    metadata = draft.get("metadata")
    if isinstance(metadata, Mapping):
        draft = {**draft, "metadata": {k: v for k, v in metadata.items() if k not in MACHINERY}}
    withheld = [tuple(str(s) for s in path) for path in redacted]
    for root in BYTES_MAP_PATHS:
        values = draft.get(root[0]) if len(root) == 1 else None
        if isinstance(values, Mapping):
            withheld += [(*root, str(key)) for key in values]
    if roots is not None and all(all(isinstance(s, str) for s in root) for root in roots):
        draft = _selected(draft, [tuple(str(s) for s in root) for root in roots])
        withheld = [w for w in withheld if any(w[: len(root)] == tuple(root) for root in roots)]
    return dump_yaml_lines(with_placeholders(dict(draft), withheld))


def _selected(draft: Mapping[str, t.Any], roots: t.Sequence[tuple[str, ...]]) -> dict[str, t.Any]:
    """``draft``'s identity (apiVersion, kind, name, namespace) and the values at ``roots``."""
    metadata = draft.get("metadata")
    identity = {k: metadata[k] for k in ("name", "namespace") if isinstance(metadata, Mapping) and k in metadata}
    out: dict[str, t.Any] = {k: draft[k] for k in ("apiVersion", "kind") if k in draft}
    if identity:
        out["metadata"] = identity
    for root in roots:
        value = get_at(draft, root)
        if value is MISSING:
            continue
        node = out
        for segment in root[:-1]:
            child = node.get(segment)
            if not isinstance(child, dict):
                child = node[segment] = {}
            node = child
        node[root[-1]] = value
    return out


def _theirs_text(value: t.Any) -> str:
    if isinstance(value, (dict, list)):
        return dump_yaml(value).rstrip("\n")
    return display_text(value)


def build_yaml_view(
    state: ObjectState, patch: Mapping[str, t.Any] | None, roots: t.Sequence[Path] | None = None
) -> YamlView:
    """The YAML tab of the object in ``state`` (its fields under ``roots``, when the editor names
    them); ``patch`` is the draft's merge patch."""
    text = draft_yaml(state.draft, state.redacted, roots)
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
