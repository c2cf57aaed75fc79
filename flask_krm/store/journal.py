"""Edit records: what the person did to one object, detached from what the server has.

An :class:`EditRecord` holds each edited value with the server value it was made on (its base),
the paths of the conflicts still open, and how many edits the person has made (its sequence). It
is what a draft backend keeps between processes: replayed onto whatever the server holds then
(:meth:`LiveResourceStore.restore <flask_krm.store.LiveResourceStore.restore>`), it merges
three-way like any server change, so an edit whose base moved on becomes a conflict instead of
silently overwriting the newer value.

Records are JSON (:meth:`EditRecord.to_json`, :meth:`EditRecord.from_json`); an absent value (a
removed key, a key the server did not have) is the absence of the ``base`` or ``mine`` member.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .paths import MISSING, Path
from .values import json_copy


@dataclass(frozen=True, slots=True)
class Edit:
    """The person's value ``mine`` at ``path`` and the server's value ``base`` it replaced
    (either may be :data:`~flask_krm.store.MISSING`)."""

    path: Path
    base: Any
    mine: Any


@dataclass(frozen=True, slots=True)
class EditRecord:
    """The person's edits of the object ``uid``, the conflict paths they left open, and the
    store's :meth:`~flask_krm.store.LiveResourceStore.edit_sequence` when it was taken."""

    uid: str
    edits: tuple[Edit, ...]
    conflicts: tuple[Path, ...] = ()
    sequence: int = 0

    def to_json(self) -> dict[str, Any]:
        """The record as a JSON object."""
        edits = []
        for edit in self.edits:
            item: dict[str, Any] = {"path": list(edit.path)}
            if edit.base is not MISSING:
                item["base"] = json_copy(edit.base)
            if edit.mine is not MISSING:
                item["mine"] = json_copy(edit.mine)
            edits.append(item)
        record: dict[str, Any] = {"uid": self.uid, "edits": edits, "conflicts": [list(p) for p in self.conflicts]}
        if self.sequence:
            record["sequence"] = self.sequence
        return record

    @classmethod
    def from_json(cls, data: Any) -> EditRecord:
        """The record ``data`` holds. Raises ``ValueError`` when it is not one."""
        if not isinstance(data, Mapping) or not isinstance(data.get("uid"), str) or not data["uid"]:
            raise ValueError("an edit record is an object with a uid")
        edits_in, conflicts_in = data.get("edits"), data.get("conflicts", [])
        if not isinstance(edits_in, list) or not isinstance(conflicts_in, list):
            raise ValueError("an edit record holds lists of edits and conflicts")
        sequence = data.get("sequence", 0)
        if type(sequence) is not int or sequence < 0:
            raise ValueError("an edit record's sequence is a count")
        edits = []
        for item in edits_in:
            if not isinstance(item, Mapping):
                raise ValueError("an edit is an object")
            base = json_copy(item["base"]) if "base" in item else MISSING
            mine = json_copy(item["mine"]) if "mine" in item else MISSING
            edits.append(Edit(_path(item.get("path")), base, mine))
        return cls(data["uid"], tuple(edits), tuple(_path(p) for p in conflicts_in), sequence)


def _path(value: Any) -> Path:
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        raise ValueError("a path is a non-empty list of keys")
    if not all(isinstance(s, str) or (type(s) is int and s >= 0) for s in value):
        raise ValueError("a path segment is a map key or a list index")
    return tuple(value)
