"""Protocol events of the krm-stream spec-v1 wire, and their exact JSON encoding.

Events carry no sequence number: ``seq`` is per connection, so each event's body is encoded once
(:func:`encode_body`) and every subscriber prefixes its own ``seq`` (:func:`frame`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

PROTOCOL_VERSION: Final = 1

ErrorCode: TypeAlias = Literal[
    "FORBIDDEN",
    "UNAUTHENTICATED",
    "SCOPE_INVALID",
    "UPSTREAM_UNAVAILABLE",
    "RESYNC_REQUIRED",
    "SLOW_CONSUMER",
    "INTERNAL",
]
ERROR_CODES: Final[frozenset[str]] = frozenset(ErrorCode.__args__)  # type: ignore[attr-defined]

RESYNC_MESSAGE: Final = "upstream continuity lost; a new snapshot cycle follows"


@dataclass(frozen=True, slots=True)
class Redaction:
    """A withheld value: its RFC 6901 path and a per-connection revision (from 1)."""

    path: str
    rev: int


@dataclass(frozen=True, slots=True)
class Reset:
    """A snapshot cycle begins. ``scope`` is the scope's wire mapping (``target`` included)."""

    scope: Mapping[str, str]
    projection: str
    type: Literal["reset"] = field(default="reset", init=False)

    @property
    def target(self) -> str:
        return self.scope.get("target", "")


@dataclass(frozen=True, slots=True)
class Upsert:
    """``added`` or ``modified``: the complete projected object, which replaces the held one."""

    type: Literal["added", "modified"]
    object: Mapping[str, Any]
    redacted: tuple[Redaction, ...] = ()

    @property
    def uid(self) -> str:
        return str(self.object["metadata"]["uid"])


@dataclass(frozen=True, slots=True)
class Identity:
    """The complete identity a ``deleted`` event names."""

    uid: str
    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    def to_json(self) -> dict[str, str]:
        out = {"uid": self.uid, "apiVersion": self.api_version, "kind": self.kind}
        if self.namespace:
            out["namespace"] = self.namespace
        out["name"] = self.name
        return out


@dataclass(frozen=True, slots=True)
class Deleted:
    """A tombstone with a trustworthy identity."""

    identity: Identity
    type: Literal["deleted"] = field(default="deleted", init=False)

    @property
    def uid(self) -> str:
        return self.identity.uid


@dataclass(frozen=True, slots=True)
class Synced:
    """The snapshot cycle is complete: consumers prune what the cycle did not resend."""

    type: Literal["synced"] = field(default="synced", init=False)


@dataclass(frozen=True, slots=True)
class StreamError:
    """An error event. A terminal one is the last event of its connection."""

    code: ErrorCode
    message: str
    terminal: bool
    retry_after_ms: int | None = None
    type: Literal["error"] = field(default="error", init=False)


Event: TypeAlias = Reset | Upsert | Deleted | Synced | StreamError

RESYNC_REQUIRED: Final = StreamError("RESYNC_REQUIRED", RESYNC_MESSAGE, terminal=False)


def to_json(event: Event) -> dict[str, Any]:
    """The event's wire mapping without ``seq``, keys in the protocol's envelope order."""
    out: dict[str, Any] = {"type": event.type}
    if isinstance(event, Reset):
        if event.target:
            out["target"] = event.target
        out["scope"] = dict(event.scope)
        out["projection"] = event.projection
    elif isinstance(event, Upsert):
        out["object"] = event.object
        out["redacted"] = [{"path": r.path, "rev": r.rev} for r in event.redacted]
    elif isinstance(event, Deleted):
        out["identity"] = event.identity.to_json()
    elif isinstance(event, StreamError):
        out["code"] = event.code
        out["message"] = event.message
        if event.retry_after_ms is not None:
            out["retryAfterMs"] = event.retry_after_ms
        out["terminal"] = event.terminal
    return out


def from_json(data: Mapping[str, Any]) -> Event:
    """Parse one wire event (``seq`` ignored). Raises ``ValueError`` naming what is wrong."""
    kind = data.get("type")
    if kind == "reset":
        return Reset(scope=dict(data.get("scope") or {}), projection=str(data["projection"]))
    if kind in ("added", "modified"):
        obj = data.get("object")
        if not isinstance(obj, Mapping):
            raise ValueError(f"{kind} event without an object")
        redacted = tuple(Redaction(str(r["path"]), int(r["rev"])) for r in data.get("redacted") or ())
        return Upsert(kind, obj, redacted)
    if kind == "deleted":
        ident = data.get("identity")
        if not isinstance(ident, Mapping) or not ident.get("uid"):
            raise ValueError("deleted event without an identity uid")
        return Deleted(
            Identity(
                uid=str(ident["uid"]),
                api_version=str(ident.get("apiVersion", "")),
                kind=str(ident.get("kind", "")),
                name=str(ident.get("name", "")),
                namespace=ident.get("namespace"),
            )
        )
    if kind == "synced":
        return Synced()
    if kind == "error":
        code = data.get("code")
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        return StreamError(
            code,  # type: ignore[arg-type]
            str(data.get("message", "")),
            bool(data.get("terminal")),
            data.get("retryAfterMs"),
        )
    raise ValueError(f"unknown event type {kind!r}")


_GO_ESCAPES: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def dumps(value: Any) -> str:
    """Compact JSON exactly as the reference gateway writes it (sorted object keys, HTML-safe)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).translate(_GO_ESCAPES)


def _dumps_sorted_objects(event: Event) -> str:
    wire = to_json(event)
    if "object" in wire:
        wire["object"] = json.loads(json.dumps(wire["object"], sort_keys=True))
    return dumps(wire)


def encode_body(event: Event) -> bytes:
    """The event's JSON without its opening brace and ``seq``: ``"type":...}``, UTF-8.

    Encode once per stream position and share the bytes among every subscriber.
    """
    return _dumps_sorted_objects(event)[1:].encode()


def frame(seq: int, body: bytes) -> bytes:
    """One SSE frame for the event ``body`` (from :func:`encode_body`) at position ``seq``."""
    return b'data: {"seq":%d,%s\n\n' % (seq, body)
