"""Effective editability of one server object: its policy, minus everything that must stay read-only.

A path is *editable* when the policy covers it and it neither lies at or under, nor is an ancestor
of, a blocked path: a redacted value, an opaque value, status, binaryData or machinery. An ancestor
of a blocked path that the policy reaches is a *container*: not editable as a whole, but with
editable paths beneath it (``data`` of a Secret with redacted keys, ``metadata.annotations``).
Everything else is read-only and follows the server.

Arrays are atomic, so a path through a list is as editable as the list itself; blocked paths that
pass through a list block the whole list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .paths import Path, Segment, overlaps, starts_with, text_path
from .policy import ALWAYS_READ_ONLY, EditPolicy
from .values import opaque_paths


class Regions:
    """Editable, container and read-only regions of one object under one policy."""

    __slots__ = ("policy", "blocked")

    def __init__(self, policy: EditPolicy, obj: Any, redacted: Iterable[Sequence[str]] = ()) -> None:
        blocked = set(ALWAYS_READ_ONLY)
        for redacted_path in redacted:
            blocked.add(text_path(_through_lists(obj, redacted_path)))
        for opaque_path in opaque_paths(obj):
            blocked.add(text_path(_through_lists(obj, opaque_path)))
        self.policy = policy
        self.blocked: tuple[tuple[str, ...], ...] = tuple(sorted(blocked))

    def editable(self, path: Sequence[Segment]) -> bool:
        """The value at ``path`` may be edited as a whole (``path`` not through a list)."""
        text = text_path(path)
        return self.policy.covers(text) and not any(overlaps(text, b) for b in self.blocked)

    def container(self, path: Sequence[Segment]) -> bool:
        """``path`` is not editable as a whole but has editable paths beneath it."""
        text = text_path(path)
        if any(starts_with(text, b) for b in self.blocked):
            return False
        if self.policy.covers(text):
            return any(overlaps(text, b) for b in self.blocked)
        return self.policy.leads_to(text)

    def editable_in(self, tree: Any, path: Path) -> bool:
        """Whether an edit at ``path`` of ``tree`` is allowed: the list it passes through decides."""
        return self.editable(_through_lists(tree, path))


def _through_lists(tree: Any, path: Sequence[Segment]) -> Path:
    """``path`` cut at the first list it passes through (the list's own path), else ``path``."""
    node = tree
    for depth, segment in enumerate(path):
        if type(node) is list:
            return tuple(path[:depth])
        if type(node) is not dict:
            break
        node = node.get(str(segment)) if isinstance(segment, str) else None
    return tuple(path)
