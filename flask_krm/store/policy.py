"""Edit policies: which regions of an object a person may edit.

A policy names editable roots; a path is editable when a root is its prefix. Some regions are
read-only under every policy, whatever a host asks for: ``status``, ``binaryData`` (opaque bytes)
and the machinery every projection removes (``metadata.managedFields`` and the
``kubectl.kubernetes.io/last-applied-configuration`` annotation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .paths import as_path, starts_with

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
MACHINERY: Final[tuple[tuple[str, ...], ...]] = (
    ("metadata", "managedFields"),
    ("metadata", "annotations", LAST_APPLIED),
)
ALWAYS_READ_ONLY: Final[tuple[tuple[str, ...], ...]] = (("status",), ("binaryData",), *MACHINERY)


@dataclass(frozen=True, slots=True)
class EditPolicy:
    """The editable roots of an object, as paths of map keys. No roots: a read-only view."""

    roots: tuple[tuple[str, ...], ...]

    @classmethod
    def only(cls, *roots: Sequence[str]) -> EditPolicy:
        """A policy whose editable regions are exactly ``roots``, e.g. ``only(("data",))``.

        Raises ``ValueError`` for a root that can never be editable (status, binaryData, machinery)
        or that is not a path of map keys.
        """
        checked = []
        for root in roots:
            path = as_path(root)
            if not all(isinstance(segment, str) for segment in path):
                raise ValueError(f"an editable root is a path of map keys: {root!r}")
            text = tuple(str(segment) for segment in path)
            for blocked in ALWAYS_READ_ONLY:
                if starts_with(text, blocked):
                    raise ValueError(f"{'.'.join(blocked)} is read-only under every policy: {root!r}")
            checked.append(text)
        return cls(tuple(checked))

    def covers(self, path: Sequence[str]) -> bool:
        """A root is ``path`` or one of its ancestors."""
        return any(starts_with(path, root) for root in self.roots)

    def leads_to(self, path: Sequence[str]) -> bool:
        """``path`` is a strict ancestor of a root (the object root and ``metadata``, typically)."""
        return any(len(path) < len(root) and starts_with(root, path) for root in self.roots)

    def within(self, fields: Sequence[Sequence[str | int]]) -> EditPolicy:
        """This policy narrowed to ``fields`` (paths): exactly those fields, and what is under them,
        where this policy allows editing; nothing else.

        A field this policy covers becomes a root; a field leading to roots (``metadata``) keeps
        those roots; any other field (``metadata.name``, ``status``) stays read-only. Raises
        ``ValueError`` for a field with a list index, which no policy root can name.
        """
        chosen: list[tuple[str, ...]] = []
        for field in fields:
            path = as_path(field)
            if not all(isinstance(segment, str) for segment in path):
                raise ValueError(f"an editable field is a path of map keys, not a list item: {field!r}")
            keys = tuple(str(segment) for segment in path)
            if self.covers(keys):
                found = [keys]
            else:
                found = [root for root in self.roots if len(keys) < len(root) and starts_with(root, keys)]
            chosen += [root for root in found if not any(starts_with(root, blocked) for blocked in ALWAYS_READ_ONLY)]
        roots = [r for r in dict.fromkeys(chosen) if not any(o != r and starts_with(r, o) for o in chosen)]
        return EditPolicy(tuple(roots))


DEFAULT_POLICY: Final = EditPolicy.only(
    ("spec",), ("metadata", "labels"), ("metadata", "annotations"), ("data",), ("stringData",)
)
READ_ONLY_POLICY: Final = EditPolicy.only()
