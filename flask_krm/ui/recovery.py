"""Copy-out: what a person had typed into an object that is gone, shown as text to copy.

When an object with unsaved edits is deleted (or deleted and recreated under the same name), its
draft leaves the store; the store keeps a recovery copy (``KRM_RECOVERY_LIFETIME``), scoped to the
session's principal and the object's uid. It is offered for copy-out only, never reconciled with,
or saved to, a replacement. The text is the draft without what Kubernetes assigns (uid, versions,
timestamps, managed fields, status), so it can be pasted into a new object; the projection already
removed every redacted value, so no Secret value withheld from the stream is ever in it.
"""

from __future__ import annotations

import json
import typing as t
from collections.abc import Mapping
from dataclasses import dataclass

from ..store import RecoveryCopy, identity_of
from ..store.paths import path_to_pointer

if t.TYPE_CHECKING:
    from ..store import LiveResourceStore

SERVER_ASSIGNED: t.Final = frozenset(
    {
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
"""``metadata`` members Kubernetes sets: left out of the copy-out text."""


@dataclass(frozen=True, slots=True)
class CopyOut:
    """A recovery copy as the page shows it.

    :param text: the draft as indented JSON (shown as text, escaped by the template).
    :param changed: RFC 6901 pointers of what the person changed, sorted (``" (removed)"`` marks a
        removal).
    """

    text: str
    changed: tuple[str, ...]


def recovery_copy(store: LiveResourceStore, uid: str) -> RecoveryCopy | None:
    """The person's unsaved draft of ``uid``: from the store while it holds the object, else its
    retained recovery copy. ``None`` when there are no unsaved changes to offer."""
    server = store.server(uid)
    if server is not None:
        patch = store.patch(uid)
        draft = store.draft(uid)
        return RecoveryCopy(identity_of(server), draft, patch) if patch and draft is not None else None
    if store.recovery is None:
        return None
    found = store.recovery.for_uid(uid)
    return found if found is not None and found.patch else None


def named_recovery_copy(store: LiveResourceStore, name: str, namespace: str | None) -> RecoveryCopy | None:
    """The retained recovery copy of the most recently removed object named ``name`` with unsaved
    changes (in ``namespace``, or any when it is empty), or ``None``."""
    if store.recovery is None:
        return None
    found = store.recovery.for_name(name, namespace)
    return found if found is not None and found.patch else None


def copy_out(copy: RecoveryCopy) -> CopyOut:
    """The text and changed fields offered for ``copy``."""
    draft = {key: value for key, value in copy.draft.items() if key != "status"}
    metadata = draft.get("metadata")
    if isinstance(metadata, Mapping):
        draft["metadata"] = {key: value for key, value in metadata.items() if key not in SERVER_ASSIGNED}
    text = json.dumps(draft, indent=2, ensure_ascii=False)
    return CopyOut(text, tuple(sorted(_changed(copy.patch or {}, ()))))


def _changed(patch: Mapping[str, t.Any], at: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for key, value in patch.items():
        path = (*at, key)
        if isinstance(value, Mapping) and value:
            out += _changed(value, path)
        else:
            out.append(path_to_pointer(path) + (" (removed)" if value is None else ""))
    return out
