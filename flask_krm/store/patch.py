"""What the person changed: changes and dirty paths derived from server vs draft, and the patch.

Nothing here is cached: every read diffs the draft against the server object over the editable
regions. The merge patch (RFC 7386) holds exactly those changes: maps recurse, arrays go whole,
removed keys are ``null``. :func:`apply_merge_patch` is RFC 7386 itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .paths import MISSING, Path
from .regions import Regions
from .values import json_copy, json_equal


@dataclass(frozen=True, slots=True)
class Change:
    """One edited value: ``add`` (the server has none), ``update`` or ``delete`` (``new`` is None)."""

    path: Path
    kind: Literal["add", "update", "delete"]
    old: Any
    new: Any


def changes(regions: Regions, server: Any, draft: Any) -> list[Change]:
    """Every editable difference between ``server`` and ``draft`` (maps recurse, the rest is atomic)."""
    found: list[Change] = []
    _walk(regions, (), server, draft, found)
    return found


def _walk(regions: Regions, path: Path, server: Any, draft: Any, found: list[Change]) -> None:
    if server is draft:
        return
    if regions.editable(path):
        _diff(path, server, draft, found)
    elif regions.container(path):
        s = server if type(server) is dict else {}
        d = draft if type(draft) is dict else {}
        for key, value in d.items():
            _walk(regions, path + (key,), s.get(key, MISSING), value, found)
        for key, value in s.items():
            if key not in d:
                _walk(regions, path + (key,), value, MISSING, found)


def _diff(path: Path, server: Any, draft: Any, found: list[Change]) -> None:
    if server is draft:
        return
    if type(server) is dict and type(draft) is dict:
        for key, value in draft.items():
            _diff(path + (key,), server.get(key, MISSING), value, found)
        for key, value in server.items():
            if key not in draft:
                found.append(Change(path + (key,), "delete", value, None))
    elif not json_equal(server, draft):
        if server is MISSING:
            found.append(Change(path, "add", None, draft))
        elif draft is MISSING:
            found.append(Change(path, "delete", server, None))
        else:
            found.append(Change(path, "update", server, draft))


def merge_patch(found: list[Change]) -> dict[str, Any] | None:
    """The RFC 7386 merge patch that turns the server object into the draft, or None if unchanged."""
    if not found:
        return None
    patch: dict[str, Any] = {}
    for change in found:
        node = patch
        *parents, last = change.path  # map keys only: changes never reach into a list
        for segment in parents:
            node = node.setdefault(str(segment), {})
        node[str(last)] = None if change.kind == "delete" else json_copy(change.new)
    return patch


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``target`` with ``patch`` applied (``target`` may be MISSING); inputs are untouched."""
    if type(patch) is not dict:
        return json_copy(patch)
    result = dict(target) if type(target) is dict else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key, MISSING), value)
    return result
