"""Save intents: what a Save writes, captured together before anything else can happen."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .values import json_copy


@dataclass(frozen=True, slots=True)
class SaveIntent:
    """A detached save: the uid and resourceVersion of the server object held, and the patch.

    Captured in one call (:meth:`LiveResourceStore.capture_save`); typing after the capture never
    changes it. ``patch`` is a fresh RFC 7386 merge patch of the person's editable changes.
    """

    uid: str
    resource_version: str
    patch: dict[str, Any]

    def conditional_patch(self) -> dict[str, Any]:
        """The patch with the ``metadata.uid`` and ``metadata.resourceVersion`` preconditions added."""
        patch: dict[str, Any] = json_copy(self.patch)
        metadata = patch.get("metadata")
        patch["metadata"] = {
            **(metadata if isinstance(metadata, dict) else {}),
            "uid": self.uid,
            "resourceVersion": self.resource_version,
        }
        return patch
