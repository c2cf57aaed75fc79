"""Guarded reconciliation: apply an object read later only if nothing newer arrived meanwhile.

A host captures the guard (:meth:`LiveResourceStore.capture_reconciliation`) *before* it starts a
projected GET (after a 409, or when no echo confirms a save) and passes the object read to it. The
guard refuses when the read may be older than what the store already holds, or is not the same
object; a refusal is final for that read: wait for a later event or snapshot, never force it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any, TypeAlias

from ..events import Redaction


class Refusal(StrEnum):
    """Why a guard refused the object it was given."""

    SNAPSHOT = "snapshot"
    """A snapshot cycle began after the guard was captured."""
    NEWER_EVENT = "newer-event"
    """An event (or an accepted read) for this uid arrived after the guard was captured."""
    REMOVED = "removed"
    """The store no longer holds this uid (deleted, pruned or removed)."""
    REPLACED = "replaced"
    """The object read has another uid: a replacement under the same name, never the old draft's."""
    UNKNOWN_REDACTION = "unknown-redaction"
    """The read names a redacted path the stream never disclosed a revision for."""
    INVALID_OBJECT = "invalid-object"
    """What was read is not an object with ``metadata.uid``."""


Accept: TypeAlias = Callable[[Any, Sequence[str] | None, Sequence[Redaction] | None], Refusal | None]


class Reconciliation:
    """A captured guard for one uid: call it with the object read; True when it was applied.

    ``redacted_paths`` are the RFC 6901 paths the host's projection withheld (from
    ``flask_krm.projection.project``); ``redacted`` instead gives authoritative stream revisions.
    Omitting both keeps the protections the store already holds. After a call, :attr:`refusal`
    says why it was refused (None when applied).
    """

    __slots__ = ("uid", "refusal", "_accept")

    def __init__(self, uid: str, accept: Accept) -> None:
        self.uid = uid
        self.refusal: Refusal | None = None
        self._accept = accept

    def __call__(
        self,
        obj: Mapping[str, Any],
        redacted_paths: Sequence[str] | None = None,
        *,
        redacted: Sequence[Redaction] | None = None,
    ) -> bool:
        if redacted_paths is not None and redacted is not None:
            raise ValueError("pass redacted_paths (from a projected read) or redacted (stream revisions), not both")
        self.refusal = self._accept(obj, redacted_paths, redacted)
        return self.refusal is None


def resolve_redactions(
    held: tuple[Redaction, ...], redacted_paths: Sequence[str] | None, redacted: Sequence[Redaction] | None
) -> tuple[Redaction, ...] | None:
    """The redactions to hold after accepting a read, or None when a path has no known revision.

    Listed paths keep their stream revision; held paths the read no longer lists are dropped.
    """
    if redacted is not None:
        return tuple(redacted)
    if redacted_paths is None:
        return held
    known = {r.path: r for r in held}
    if isinstance(redacted_paths, str) or any(path not in known for path in redacted_paths):
        return None
    return tuple(sorted((known[path] for path in set(redacted_paths)), key=lambda r: r.path))
