"""Save intents: what a Save writes, captured together before anything else can happen."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..events import Redaction
from ..projection import content_key, project
from ..versions import compare
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


def newest_equivalent_base(
    intent: SaveIntent,
    view: Mapping[str, Any],
    redactions: Sequence[Redaction],
    newest: Mapping[str, Any] | None,
    projection: str,
) -> SaveIntent:
    """``intent`` based on ``newest`` when the person cannot tell the two versions apart.

    ``view`` is the server object the intent's patch was computed against (the editor's server
    view at capture, with its stream ``redactions``): its version is the intent's, or an older
    one when this rule already moved the intent to a newer identical version (called again right
    before sending, it narrows the window further). ``newest`` is the newest raw object known for
    the uid (the shared watch's cache), ``projection`` the editor's. Under a projection that hides
    status, or when only bookkeeping changed, the view keeps an older resourceVersion while newer
    versions it would show identically land; a PATCH conditioned on the old one is refused with
    409 for nothing. So the newer version is used when, and only when:

    * it is the same object (same uid), and the view is the intent's version or an older one;
    * its resourceVersion is decimal and greater than the intent's (opaque versions cannot be
      ordered, so they are never used);
    * its projection equals the view apart from ``metadata.resourceVersion``;
    * neither withholds a value (a withheld value's change is visible only as a redaction
      revision, which the view does not carry enough of to compare).

    The patch is unchanged: the person's base is exactly that version. Otherwise ``intent`` is
    returned as it is, and a write since its version is refused by Kubernetes as before.
    """
    if newest is None or redactions:
        return intent
    held = _metadata(view).get("resourceVersion")
    if held != intent.resource_version and compare(held, intent.resource_version) != -1:
        return intent
    metadata = _metadata(newest)
    version = metadata.get("resourceVersion")
    if metadata.get("uid") != intent.uid or not isinstance(version, str):
        return intent
    if compare(version, intent.resource_version) != 1:
        return intent
    projected = project(newest, projection)
    if projected.redacted_paths or content_key(projected) != content_key(view):
        return intent
    return replace(intent, resource_version=version)


def newest_of(*candidates: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The candidate with the greatest decimal ``metadata.resourceVersion`` (``None`` skipped).

    An earlier candidate is kept unless a later one is known to be newer: on equal versions, and
    on versions that cannot be ordered (opaque), the first one wins. A Save passes the shared
    watch's object first and its preflight read second, so the read counts only when the watch
    has not delivered its version yet.
    """
    newest: Mapping[str, Any] | None = None
    for candidate in candidates:
        if candidate is not None and (newest is None or compare(_version(candidate), _version(newest)) == 1):
            newest = candidate
    return newest


def _version(obj: Mapping[str, Any]) -> Any:
    return _metadata(obj).get("resourceVersion")


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}
