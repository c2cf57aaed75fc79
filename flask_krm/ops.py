"""What an upstream source tells the stream engine.

Every source (a scripted fixture, a Kubernetes watch, the shared hub's cache) speaks in these
operations; :class:`flask_krm.stream.StreamEngine` turns them into protocol events for one
connection. Objects are the upstream's raw JSON mappings, never copied or altered by a source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .events import ErrorCode


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A complete listing of the scope: the members of one snapshot cycle, in order."""

    objects: Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Change:
    """One live watch event, verbatim: ``ADDED``, ``MODIFIED`` or ``DELETED`` and its object."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    object: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Bookmark:
    """A routine watch bookmark: absorbed for its resourceVersion, never forwarded."""

    resource_version: str


@dataclass(frozen=True, slots=True)
class ContinuityLost:
    """The source can no longer vouch for every change (410 Gone, a relist, a cache reset).

    A :class:`Snapshot` follows.
    """

    reason: str = "upstream continuity lost"


@dataclass(frozen=True, slots=True)
class Failure:
    """The source failed: ``UPSTREAM_UNAVAILABLE`` (retrying), ``FORBIDDEN`` (terminal) and so on."""

    code: ErrorCode
    message: str
    terminal: bool
    retry_after_ms: int | None = None


SourceOp: TypeAlias = Snapshot | Change | Bookmark | ContinuityLost | Failure
