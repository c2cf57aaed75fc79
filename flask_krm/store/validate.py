"""Merge-patch validators for the host's write path, called immediately before a PATCH.

The store already never forms a patch touching a protected path; the host validates anyway,
because a write endpoint must not trust what reaches it. Validation does not authorize, choose a
projection, fetch the object, write or check concurrency: those stay with the host.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from ..projection import SPEC, project
from .paths import overlaps, path_to_pointer, pointer_to_path, starts_with
from .policy import MACHINERY
from .values import is_plain_scalar

REDACTED: Final = "redacted by the effective projection"
REMOVED: Final = "removed by the projection"
IGNORED: Final = "ignored by the projection"


class PatchRejected(ValueError):
    """A merge patch the host must not send; ``path`` is the offending RFC 6901 pointer.

    ``protected`` is the protected pointer it touches ("" when the patch itself is malformed).
    """

    def __init__(self, path: str, reason: str, protected: str = "") -> None:
        where = path or "the patch"
        super().__init__(f"{where}: {reason}" + (f" ({protected})" if protected and protected != path else ""))
        self.path = path
        self.reason = reason
        self.protected = protected


def validate_merge_patch(projection: str, current_object: Mapping[str, Any], patch: Any) -> dict[str, Any]:
    """Refuse a patch touching a value ``projection`` withholds from ``current_object``, machinery,
    or ``status`` under krm-spec/v1; return the parsed patch when it may be sent.

    ``current_object`` is the object as read from Kubernetes under the same identity; ``patch`` is
    JSON text (``bytes``/``str``) or a mapping. Raises :class:`PatchRejected`, or
    ``flask_krm.projection.UnknownProjection`` for an unknown projection name.
    """
    redacted = project(current_object, projection).redacted_paths
    parsed = parse_merge_patch(patch)
    protected = [(pointer_to_path(p), REDACTED) for p in redacted]
    protected += [(path, REMOVED) for path in MACHINERY]
    if projection == SPEC:
        protected.append((("status",), IGNORED))
    _refuse_overlaps(parsed, (), protected)
    return parsed


def validate_native_merge_patch(patch: Any) -> dict[str, Any]:
    """Refuse a native patch without both ``metadata.uid`` and ``metadata.resourceVersion``
    preconditions, or touching machinery; return the parsed patch when it may be sent."""
    parsed = parse_merge_patch(patch)
    metadata = parsed.get("metadata")
    for field in ("uid", "resourceVersion"):
        value = metadata.get(field) if isinstance(metadata, dict) else None
        if not isinstance(value, str) or not value:
            raise PatchRejected(f"/metadata/{field}", "a native patch must carry this precondition")
    _refuse_overlaps(parsed, (), [(path, REMOVED) for path in MACHINERY])
    return parsed


def parse_merge_patch(patch: Any) -> dict[str, Any]:
    """The patch as a JSON object; raise :class:`PatchRejected` for anything else."""
    if isinstance(patch, (bytes, bytearray)):
        try:
            patch = bytes(patch).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise PatchRejected("", "a merge patch is UTF-8 JSON") from exc
    if isinstance(patch, str):
        try:
            patch = json.loads(patch, object_pairs_hook=_unique_keys, parse_constant=_no_constants)
        except (ValueError, RecursionError) as exc:
            raise PatchRejected("", f"malformed JSON: {exc}") from exc
    if not isinstance(patch, Mapping):
        raise PatchRejected("", "a merge patch is a JSON object")
    _check_json(patch, ())
    parsed: dict[str, Any] = _plain(patch)
    return parsed


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _check_json(value: Any, path: tuple[str, ...]) -> None:
    if isinstance(value, Mapping):
        for key, child in value.items():
            if not isinstance(key, str):
                raise PatchRejected(path_to_pointer(path), f"map key {key!r} is not a string")
            _check_json(child, path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, child in enumerate(value):
            _check_json(child, path + (str(index),))
    elif not is_plain_scalar(value):
        raise PatchRejected(path_to_pointer(path), "not a JSON value (or not UTF-8 text)")


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _refuse_overlaps(
    node: Mapping[str, Any], prefix: tuple[str, ...], protected: list[tuple[tuple[str, ...], str]]
) -> None:
    """Refuse every write that reaches a protected path or replaces one of its ancestors.

    A non-empty map recurses (merge semantics). An empty map changes nothing where a map already
    is, but replaces any other value, so it is refused at or under a protected path. Any other
    value (``null`` included) writes its path wholesale.
    """
    for key, value in node.items():
        path = prefix + (key,)
        if isinstance(value, Mapping) and value:
            _refuse_overlaps(value, path, protected)
            continue
        touches = starts_with if isinstance(value, Mapping) else overlaps
        for guarded, reason in protected:
            if touches(path, guarded):
                raise PatchRejected(path_to_pointer(path), reason, path_to_pointer(guarded))
