"""RFC 7386 merge patches as the simulator applies them."""

from __future__ import annotations

from flask_krm.testing.simulator.merge_patch import apply_merge_patch


def test_merge_patch() -> None:
    target = {"a": {"b": 1, "c": [1, 2]}, "d": "keep"}
    patched = apply_merge_patch(target, {"a": {"b": None, "c": [3], "e": {"f": 1}}, "g": None})
    assert patched == {"a": {"c": [3], "e": {"f": 1}}, "d": "keep"}
    assert target == {"a": {"b": 1, "c": [1, 2]}, "d": "keep"}
    assert apply_merge_patch(target, ["replaced"]) == ["replaced"]
