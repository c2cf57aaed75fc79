"""Protocol events of the krm-stream spec-v1 wire, and their exact JSON encoding.

Events carry no sequence number: ``seq`` is per connection, so each event's body is encoded once
(:func:`encode_body`) and every subscriber prefixes its own ``seq`` (:func:`frame`).
"""

from __future__ import annotations

import codecs
import decimal
import json
import re
from collections.abc import Callable, Mapping
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
            code,
            str(data.get("message", "")),
            bool(data.get("terminal")),
            data.get("retryAfterMs"),
        )
    raise ValueError(f"unknown event type {kind!r}")


_GO_ESCAPES: Final = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)

_COMPACT: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False)
_SORTED: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False, sort_keys=True)
_encode_string: Callable[[str], str] = json.encoder.encode_basestring

# Where Python's float text can differ from Go's: an integral float ("1.0", Go "1") or exponent
# notation ("1e-05", Go "0.00001"; Python always writes two or more exponent digits). A float token
# is followed by ",", "]" or "}". Text inside strings can match too; that only costs the slow (still
# exact) path. Two searches with literal prefixes are much faster than one alternation.
_INTEGRAL_FLOAT: Final = re.compile(r"\.0[,\]}]")
_EXPONENT_FLOAT: Final = re.compile(r"e[-+][0-9]{2,3}[,\]}]")


def _utf8_replace(error: UnicodeError) -> tuple[bytes, int]:
    # A lone surrogate (from a JSON "\ud800" escape) has no UTF-8 form; Go decodes it as U+FFFD.
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return "\ufffd".encode() * (error.end - error.start), error.end


codecs.register_error("flask_krm.utf8_replace", _utf8_replace)


def _go_escape(text: str) -> str:
    if "<" in text or ">" in text or "&" in text or "\u2028" in text or "\u2029" in text:
        return text.translate(_GO_ESCAPES)
    return text


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "flask_krm.utf8_replace")


def _go_float(value: float) -> str:
    """A float as Go's encoding/json writes a float64."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"JSON cannot represent {value!r}")
    magnitude = abs(value)
    if magnitude != 0 and (magnitude < 1e-6 or magnitude >= 1e21):
        text = repr(value)  # shortest digits in exponent form, such as 1e-07 or 1.5e+21
        mantissa, _, exponent = text.partition("e")
        if exponent.startswith("-0"):
            exponent = "-" + exponent[2:]  # Go writes e-7, not e-07
        return f"{mantissa}e{exponent}"
    text = format(decimal.Decimal(repr(value)), "f")  # the shortest digits, in fixed notation
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _slow_sorted(value: Any) -> str:
    """Sorted-key compact JSON with Go's float text; used only when floats may be present."""
    if isinstance(value, str):
        return _encode_string(value)
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda item: item[0])
        return "{" + ",".join(_encode_string(k) + ":" + _slow_sorted(v) for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_slow_sorted(v) for v in value) + "]"
    return _SORTED.encode(value)  # raises the same TypeError json would


def _sorted_json(value: Any) -> str:
    """Compact JSON with sorted object keys and Go's number text (before the HTML-safe escapes)."""
    if type(value) is float:
        return _go_float(value)
    text = _SORTED.encode(value)
    if _INTEGRAL_FLOAT.search(text) or _EXPONENT_FLOAT.search(text):
        text = _slow_sorted(value)
    return text


def dumps(value: Any) -> str:
    """Compact, HTML-safe JSON in the reference gateway's style; mapping keys keep their order.

    Use :func:`dumps_sorted` for object content, which the gateway writes with sorted keys.
    """
    return _go_escape(_COMPACT.encode(value))


def dumps_sorted(value: Any) -> str:
    """JSON exactly as Go's ``encoding/json`` writes a decoded object: compact, keys sorted,
    ``<``, ``>``, ``&``, U+2028 and U+2029 escaped, other non-ASCII raw, floats in Go's text."""
    return _go_escape(_sorted_json(value))


def encode_body(event: Event) -> bytes:
    """The event's JSON without its opening brace and ``seq``: ``"type":...}``, UTF-8.

    Encode once per stream position and share the bytes among every subscriber.
    """
    if isinstance(event, Upsert):
        redacted = ",".join('{"path":%s,"rev":%d}' % (_encode_string(r.path), r.rev) for r in event.redacted)
        text = '"type":%s,"object":%s,"redacted":[%s]}' % (
            _encode_string(event.type),
            _sorted_json(event.object),
            redacted,
        )
        return _utf8(_go_escape(text))
    return _utf8(dumps(to_json(event))[1:])


def frame(seq: int, body: bytes) -> bytes:
    """One SSE frame for the event ``body`` (from :func:`encode_body`) at position ``seq``."""
    return b'data: {"seq":%d,%s\n\n' % (seq, body)
