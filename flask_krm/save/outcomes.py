"""Save outcomes: what happened to a Save, what to tell the person, what the endpoint answers.

Pure: no Flask, no gevent, no network. A Kubernetes answer is classified by
:func:`classify_write` into a :class:`WriteVerdict`; the save flow (:mod:`flask_krm.save.flow`)
turns verdicts and guarded reads into an :class:`Outcome`; :class:`OutcomeTexts` words it (a host
may replace any text).

Kubernetes error categories are kept: a 409 is never reported as a validation error, a 422 never as
a conflict, an access refusal never as either, and a lost response is neither success nor failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, TypeAlias

Path: TypeAlias = tuple[str | int, ...]


class OutcomeKind(str, Enum):
    """Every outcome a Save, create or delete can have."""

    SAVED_PENDING = "saved-pending"
    """Kubernetes accepted the write; its echo on the live stream has not arrived yet."""
    SAVED = "saved"
    """The write is confirmed by its echo or by an accepted guarded read."""
    NOT_APPLIED = "not-applied"
    """Kubernetes accepted the write but a guarded read shows the change did not stick."""
    VERSION_STALE = "version-stale"
    """409, then an accepted guarded read: a fresh base and no field conflicts."""
    DRAFT_CONFLICT = "draft-conflict"
    """Fields the person edited were changed by someone else; resolve them, then save."""
    RECOVERING = "recovering"
    """No usable base: the next Save is a guarded read, never a write."""
    UNAVAILABLE = "unavailable"
    """The object was deleted, or replaced under the same name (a new uid)."""
    INVALID = "invalid"
    """Kubernetes refused the content (422); causes are shown at their fields."""
    REFUSED = "refused"
    """The host refused to send the patch (a protected path, a field outside the allowed set)."""
    REJECTED = "rejected"
    """Kubernetes definitely refused the request for another reason (400, 405, 415, 429...)."""
    ACCESS_DENIED = "access-denied"
    """The signed-in person may not perform this write (403)."""
    SIGNED_OUT = "signed-out"
    """Nobody is signed in, or the credentials expired (401)."""
    UNKNOWN = "unknown"
    """The request was sent but its result is unknown (timeout, 5xx, connection lost)."""
    RECONNECTING = "reconnecting"
    """The editor's stream is not live: writes are disabled."""
    BUSY = "busy"
    """A save for this editor is already in flight."""
    NOTHING_TO_SAVE = "nothing-to-save"
    """The draft has no changes."""
    CREATED = "created"
    """A pending create was accepted by Kubernetes."""
    DELETED = "deleted"
    """A pending delete was accepted by Kubernetes."""


#: Default wording of every outcome. Hosts override any key (``KRM_OUTCOME_TEXTS``).
DEFAULT_TEXTS: Final[Mapping[OutcomeKind, str]] = {
    OutcomeKind.SAVED_PENDING: "Saved to Kubernetes; waiting for live confirmation.",
    OutcomeKind.SAVED: "Saved. The live view shows your change.",
    OutcomeKind.NOT_APPLIED: (
        "Kubernetes accepted the save, but the configuration does not show your change. "
        "Your edits are intact; review and save again."
    ),
    OutcomeKind.VERSION_STALE: "Configuration refreshed. Your edits are intact; review and save again.",
    OutcomeKind.DRAFT_CONFLICT: (
        "Someone else changed the fields marked below. Choose the value to keep at each, then save again."
    ),
    OutcomeKind.RECOVERING: "Refreshing configuration. Your edits are still here.",
    OutcomeKind.UNAVAILABLE: "This configuration was removed. A replacement must be opened separately.",
    OutcomeKind.INVALID: "Kubernetes did not accept these values. Correct the marked fields and save again.",
    OutcomeKind.REFUSED: "This change cannot be saved here. Your edits are still here.",
    OutcomeKind.REJECTED: "Kubernetes refused the request. Your edits are still here.",
    OutcomeKind.ACCESS_DENIED: "You do not have permission to make this change. Your edits are still here.",
    OutcomeKind.SIGNED_OUT: "You are signed out. Sign in again to save.",
    OutcomeKind.UNKNOWN: (
        "The save may or may not have reached Kubernetes. Your edits are still here; "
        "the next Save checks the current configuration first and writes nothing twice."
    ),
    OutcomeKind.RECONNECTING: "Reconnecting. Your unsaved changes are still here.",
    OutcomeKind.BUSY: "A save is already in progress.",
    OutcomeKind.NOTHING_TO_SAVE: "There are no changes to save.",
    OutcomeKind.CREATED: "Created in Kubernetes; waiting for live confirmation.",
    OutcomeKind.DELETED: "Deleted in Kubernetes; waiting for live confirmation.",
}

#: What a save endpoint answers for each outcome. Kubernetes categories are kept (409, 422, 403,
#: 401, 404); an unknown result is 502; a save that was not attempted for a local reason is 409
#: (busy, conflicts) or 503 (not live, recovering).
HTTP_STATUS: Final[Mapping[OutcomeKind, int]] = {
    OutcomeKind.SAVED_PENDING: 200,
    OutcomeKind.SAVED: 200,
    OutcomeKind.NOT_APPLIED: 200,
    OutcomeKind.VERSION_STALE: 409,
    OutcomeKind.DRAFT_CONFLICT: 409,
    OutcomeKind.RECOVERING: 503,
    OutcomeKind.UNAVAILABLE: 409,
    OutcomeKind.INVALID: 422,
    OutcomeKind.REFUSED: 422,
    OutcomeKind.REJECTED: 400,
    OutcomeKind.ACCESS_DENIED: 403,
    OutcomeKind.SIGNED_OUT: 401,
    OutcomeKind.UNKNOWN: 502,
    OutcomeKind.RECONNECTING: 503,
    OutcomeKind.BUSY: 409,
    OutcomeKind.NOTHING_TO_SAVE: 200,
    OutcomeKind.CREATED: 200,
    OutcomeKind.DELETED: 200,
}


@dataclass(frozen=True, slots=True)
class FieldCause:
    """One 422 cause, placed at its field when the field could be parsed.

    ``message`` is withheld (``None``) when the field lies under a redacted path.
    """

    field: str
    path: Path | None
    reason: str
    message: str | None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened, with what the person needs to act on it.

    :param kind: the outcome.
    :param causes: 422 causes (``INVALID``).
    :param conflicts: paths in conflict (``DRAFT_CONFLICT``).
    :param replacement_uid: the uid now under the same name (``UNAVAILABLE`` after a replacement).
    :param detail: a short, value-free explanation (the refused path and reason, a status reason).
    :param http_status: overrides the default status of ``kind`` (404 for a deleted object).
    """

    kind: OutcomeKind
    causes: tuple[FieldCause, ...] = ()
    conflicts: tuple[Path, ...] = ()
    replacement_uid: str | None = None
    detail: str | None = None
    http_status: int | None = None

    @property
    def status_code(self) -> int:
        """The HTTP status a save endpoint answers with."""
        return self.http_status if self.http_status is not None else HTTP_STATUS[self.kind]

    @property
    def wrote(self) -> bool:
        """Whether Kubernetes accepted a write in this step."""
        return self.kind in (
            OutcomeKind.SAVED_PENDING,
            OutcomeKind.SAVED,
            OutcomeKind.NOT_APPLIED,
            OutcomeKind.CREATED,
            OutcomeKind.DELETED,
        )


@dataclass(frozen=True, slots=True)
class OutcomeTexts:
    """Outcome wording: the defaults with a host's overrides.

    >>> OutcomeTexts({OutcomeKind.BUSY: "Hold on."}).message(Outcome(OutcomeKind.BUSY))
    'Hold on.'
    """

    overrides: Mapping[OutcomeKind | str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for key in self.overrides:
            OutcomeKind(key)  # raises ValueError naming an unknown outcome

    def message(self, outcome: Outcome | OutcomeKind) -> str:
        """The sentence shown for ``outcome``."""
        kind = outcome.kind if isinstance(outcome, Outcome) else outcome
        for key in (kind, kind.value):
            if key in self.overrides:
                return self.overrides[key]
        return DEFAULT_TEXTS[kind]


# ---- classification of Kubernetes answers --------------------------------------------------


class WriteVerdict(str, Enum):
    """What a Kubernetes answer to a write means for the save flow."""

    ACCEPTED = "accepted"
    CONFLICT = "conflict"  # 409: version (or uid) precondition failed; a guarded read follows
    REPLACED = "replaced"  # 422 on metadata.uid, or a delete's uid precondition: a new object
    NOT_FOUND = "not-found"  # 404: the object is gone
    INVALID = "invalid"  # 422
    FORBIDDEN = "forbidden"  # 403
    UNAUTHORIZED = "unauthorized"  # 401
    REJECTED = "rejected"  # another definite 4xx
    UNKNOWN = "unknown"  # 5xx, timeout, connection lost after sending


def classify_write(code: int, status: Mapping[str, Any] | None = None) -> WriteVerdict:
    """Classify a write's HTTP status (and its Kubernetes ``Status`` body, when one came back).

    A 409 whose message names the uid precondition, and a 422 whose only causes are on
    ``metadata.uid``, mean the object under that name was replaced.
    """
    if 200 <= code <= 299:
        return WriteVerdict.ACCEPTED
    if code == 409:
        message = str((status or {}).get("message", ""))
        return WriteVerdict.REPLACED if "UID in the precondition" in message else WriteVerdict.CONFLICT
    if code == 422:
        fields = [c.get("field") for c in _causes(status)]
        return WriteVerdict.REPLACED if fields and all(f == "metadata.uid" for f in fields) else WriteVerdict.INVALID
    if code == 404:
        return WriteVerdict.NOT_FOUND
    if code == 403:
        return WriteVerdict.FORBIDDEN
    if code == 401:
        return WriteVerdict.UNAUTHORIZED
    if 400 <= code <= 499 and code != 408:
        return WriteVerdict.REJECTED
    return WriteVerdict.UNKNOWN


def _causes(status: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    details = (status or {}).get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    return [c for c in causes if isinstance(c, Mapping)] if isinstance(causes, list) else []


_FIELD_TOKEN: Final = re.compile(r"([^.\[\]]+)|\[(\d+)\]|\[([^\]]*)\]")


def field_path(field_name: str) -> Path | None:
    """Parse a Kubernetes cause field (``spec.template.spec.containers[0].image``,
    ``data[app.conf]``) into a path, or ``None`` when it cannot be parsed."""
    if not field_name:
        return None
    out: list[str | int] = []
    position = 0
    while position < len(field_name):
        if field_name[position] == "." and out:
            position += 1
        match = _FIELD_TOKEN.match(field_name, position)
        if match is None or match.end() == position:
            return None
        name, index, key = match.groups()
        out.append(name if name is not None else int(index) if index is not None else key)
        position = match.end()
    return tuple(out)


def _under_any(path: Path, prefixes: tuple[Path, ...]) -> bool:
    return any(path[: len(p)] == p or p[: len(path)] == path for p in prefixes)


def pointer_path(pointer: str) -> tuple[str, ...]:
    """An RFC 6901 pointer as a path of string segments (``/data/a~1b`` -> ``("data", "a/b")``)."""
    if not pointer:
        return ()
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in pointer.split("/")[1:])


def field_causes(status: Mapping[str, Any] | None, redacted_paths: tuple[str, ...] = ()) -> tuple[FieldCause, ...]:
    """The causes of a 422 ``Status``, each placed at its field.

    A cause at, under or above a redacted path keeps its field and reason but not its message, which
    may quote the withheld value.
    """
    hidden = tuple(pointer_path(p) for p in redacted_paths)
    out = []
    for cause in _causes(status):
        name = str(cause.get("field") or "")
        path = field_path(name)
        message = str(cause.get("message") or "") or None
        if hidden and (path is None or _under_any(tuple(str(s) for s in path), hidden)):
            message = None
        out.append(FieldCause(field=name, path=path, reason=str(cause.get("reason") or ""), message=message))
    return tuple(out)


VALUE_FREE_REASONS: Final = frozenset(
    {
        "AlreadyExists",
        "Conflict",
        "Forbidden",
        "Gone",
        "MethodNotAllowed",
        "NotAcceptable",
        "NotFound",
        "RequestEntityTooLarge",
        "TooManyRequests",
        "Unauthorized",
        "UnsupportedMediaType",
    }
)
"""Status reasons whose messages name objects, verbs and people, never a field's value."""

DETAIL_LIMIT: Final = 500
"""The longest Kubernetes message shown (characters); a longer one is cut."""


def status_detail(status: Mapping[str, Any] | None, code: int, *, withheld: bool = False) -> str:
    """Kubernetes' own words for a refused write: its ``Status`` message (``configmaps "x" already
    exists``), else the reason (:func:`status_reason`). When the object has withheld values
    (``withheld``), a message is shown only for a reason in :data:`VALUE_FREE_REASONS`, since others
    (``BadRequest``, ``Invalid``) may quote a value."""
    reason = status_reason(status, code)
    message = (status or {}).get("message")
    if not isinstance(message, str) or not message.strip():
        return reason
    if withheld and reason not in VALUE_FREE_REASONS:
        return reason
    text = message.strip()
    return text if len(text) <= DETAIL_LIMIT else text[: DETAIL_LIMIT - 1] + "…"


def status_reason(status: Mapping[str, Any] | None, code: int) -> str:
    """A short, value-free label for a refusal: the Status reason (``Forbidden``) or the code."""
    reason = (status or {}).get("reason")
    return str(reason) if isinstance(reason, str) and reason.isalnum() else f"HTTP {code}"
