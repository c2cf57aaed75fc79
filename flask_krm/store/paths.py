"""Paths into KRM objects: tuples of segments, never dot-joined strings.

A segment is a ``str`` map key or a non-negative ``int`` list index. A label key such as
``app.kubernetes.io/name`` is one segment. RFC 6901 pointers (the wire form of redactions) convert
to and from paths; pointer segments are always strings, so prefix tests compare segments as strings.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeAlias

from .errors import MalformedPathError

Segment: TypeAlias = str | int
Path: TypeAlias = tuple[Segment, ...]


class _Missing:
    """The absence of a value (distinct from JSON ``null``)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


def as_path(value: Any) -> Path:
    """Validate ``value`` as a path and return it as a tuple; raise :class:`MalformedPathError`."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise MalformedPathError(value, "a path is a sequence of segments, not a string")
    for segment in value:
        if isinstance(segment, bool) or not isinstance(segment, (str, int)):
            raise MalformedPathError(value, f"segment {segment!r} is neither a key nor an index")
        if isinstance(segment, int) and segment < 0:
            raise MalformedPathError(value, f"index {segment} is negative")
    return tuple(value)


def pointer_to_path(pointer: str) -> tuple[str, ...]:
    """Parse an RFC 6901 pointer: ``""`` is the root, ``/data/a~1b`` is ``("data", "a/b")``."""
    if pointer == "":
        return ()
    if not isinstance(pointer, str) or not pointer.startswith("/"):
        raise MalformedPathError(pointer, "a JSON pointer starts with '/'")
    segments = []
    for raw in pointer[1:].split("/"):
        if "~" in raw.replace("~0", "").replace("~1", ""):
            raise MalformedPathError(pointer, "'~' must be escaped as '~0' or '~1'")
        segments.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(segments)


def get_at_pointer(root: Any, segments: Sequence[str]) -> Any:
    """The value at parsed RFC 6901 ``segments`` (a decimal segment indexes an array), or :data:`MISSING`."""
    node = root
    for segment in segments:
        if isinstance(node, list):
            if not segment.isdigit() or (segment != "0" and segment.startswith("0")):
                return MISSING
            index = int(segment)
            node = node[index] if index < len(node) else MISSING
        elif isinstance(node, dict):
            node = node.get(segment, MISSING)
        else:
            return MISSING
        if node is MISSING:
            return MISSING
    return node


def path_to_pointer(path: Sequence[Segment]) -> str:
    """The RFC 6901 pointer of ``path``."""
    return "".join("/" + str(s).replace("~", "~0").replace("/", "~1") for s in path)


def text_path(path: Sequence[Segment]) -> tuple[str, ...]:
    """``path`` with every segment as a string, for comparing with pointer-derived paths."""
    return tuple(str(s) for s in path)


def starts_with(path: Sequence[str], prefix: Sequence[str]) -> bool:
    """``prefix`` is ``path`` or one of its ancestors (both as text paths)."""
    return len(prefix) <= len(path) and tuple(path[: len(prefix)]) == tuple(prefix)


def overlaps(a: Sequence[str], b: Sequence[str]) -> bool:
    """One of the two text paths is the other or an ancestor of it."""
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


def get_at(root: Any, path: Sequence[Segment]) -> Any:
    """The value at ``path`` in ``root``, or :data:`MISSING` when the path addresses nothing."""
    node = root
    for segment in path:
        if isinstance(node, dict) and isinstance(segment, str):
            node = node.get(segment, MISSING)
        elif isinstance(node, list) and isinstance(segment, int) and segment < len(node):
            node = node[segment]
        else:
            return MISSING
        if node is MISSING:
            return MISSING
    return node
