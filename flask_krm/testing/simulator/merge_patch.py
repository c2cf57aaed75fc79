"""RFC 7386 JSON merge patch, as ``application/merge-patch+json`` applies it."""

from __future__ import annotations

from typing import Any


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """The result of merging ``patch`` into ``target``; neither argument is modified."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result
