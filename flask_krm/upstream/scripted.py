"""Plays a conformance fixture's ``watch:`` script as source operations (no cluster, pure).

A script is a list of ops (``gen/fixtures.json``), bodies referenced by name:

=============  =================================================================================
``list``       ``Snapshot`` of ``bodies`` (an empty list still completes a cycle)
``added``,     ``Change`` of that type with ``body``
``modified``,
``deleted``
``relist``     ``ContinuityLost`` then ``Snapshot`` of ``bodies`` (a 410 on a healthy connection)
``bookmark``   ``Bookmark`` of ``resourceVersion``
``partial``    a ``MODIFIED`` ``PartialObjectMetadata`` carrying ``body``'s metadata (uid included)
``tombstone``  a ``DELETED`` ``body`` whose ``metadata.uid`` is gone
``disconnect`` the consumer dropped: the ops after it belong to a new connection
=============  =================================================================================

Each connection runs through its own :class:`~flask_krm.stream.StreamEngine` with ``seq`` from 1;
:func:`render_fixture` writes the bytes a conforming gateway writes (the corpus goldens
``gen/sse/<id>.sse``), each connection preceded by a ``: connection N`` comment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..events import Event, encode_body, frame
from ..ops import Bookmark, Change, ContinuityLost, Snapshot, SourceOp
from ..projection import DEFAULT_PROJECTION
from ..scope import Scope, parse_scope
from ..sse import comment
from ..stream import StreamEngine
from ..versions import Ordering

__all__ = [
    "ScriptError",
    "ScriptedFixture",
    "partial_object",
    "tombstone_object",
    "script_connections",
    "run_connection",
    "render_connection",
    "render_fixture",
]

_CHANGE_OPS: Final = {"added": "ADDED", "modified": "MODIFIED", "deleted": "DELETED"}


class ScriptError(ValueError):
    """A fixture script that cannot be played: an unknown op, a missing body, a bad field."""


def partial_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` as a metadata-only ``PartialObjectMetadata`` (uid present, spec and status gone)."""
    metadata = obj.get("metadata")
    return {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": dict(metadata) if isinstance(metadata, Mapping) else {},
    }


def tombstone_object(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` with ``metadata.uid`` removed: a delete without a trustworthy identity."""
    out = dict(obj)
    metadata = obj.get("metadata")
    out["metadata"] = {k: v for k, v in metadata.items() if k != "uid"} if isinstance(metadata, Mapping) else {}
    return out


def _body(bodies: Mapping[str, Mapping[str, Any]], name: object) -> Mapping[str, Any]:
    if not isinstance(name, str) or name not in bodies:
        raise ScriptError(f"the script names an unknown body {name!r}")
    return bodies[name]


def _bodies(bodies: Mapping[str, Mapping[str, Any]], names: object) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(names, Sequence) or isinstance(names, str):
        raise ScriptError("a list op needs `bodies`, a list of body names")
    return tuple(_body(bodies, name) for name in names)


def script_connections(
    watch: Sequence[Mapping[str, Any]], bodies: Mapping[str, Mapping[str, Any]]
) -> list[list[SourceOp]]:
    """The script's source operations, one list per connection (split at each ``disconnect``)."""
    connections: list[list[SourceOp]] = [[]]
    for step in watch:
        op = step.get("op") if isinstance(step, Mapping) else None
        ops = connections[-1]
        if op == "list":
            ops.append(Snapshot(_bodies(bodies, step.get("bodies"))))
        elif op == "relist":
            ops.append(ContinuityLost("relist"))
            ops.append(Snapshot(_bodies(bodies, step.get("bodies"))))
        elif op in _CHANGE_OPS:
            ops.append(Change(_CHANGE_OPS[op], _body(bodies, step.get("body"))))  # type: ignore[arg-type]
        elif op == "bookmark":
            rv = step.get("resourceVersion")
            if not isinstance(rv, str):
                raise ScriptError("a bookmark op needs a string `resourceVersion`")
            ops.append(Bookmark(rv))
        elif op == "partial":
            ops.append(Change("MODIFIED", partial_object(_body(bodies, step.get("body")))))
        elif op == "tombstone":
            ops.append(Change("DELETED", tombstone_object(_body(bodies, step.get("body")))))
        elif op == "disconnect":
            connections.append([])
        else:
            raise ScriptError(f"unknown watch op {op!r}")
    return connections


@dataclass(frozen=True, slots=True)
class ScriptedFixture:
    """A fixture's gateway half, ready to play: its scope, projection and connections."""

    id: str
    scope: Scope
    projection: str
    connections: tuple[tuple[SourceOp, ...], ...]

    @classmethod
    def load(cls, fixture: Mapping[str, Any], bodies: Mapping[str, Mapping[str, Any]]) -> ScriptedFixture:
        """From a fixture mapping (``gen/fixtures.json`` entry) and the named bodies."""
        watch = fixture.get("watch")
        if not isinstance(watch, Sequence):
            raise ScriptError(f"fixture {fixture.get('id')!r} has no watch script")
        scope = fixture.get("scope")
        if not isinstance(scope, Mapping):
            raise ScriptError(f"fixture {fixture.get('id')!r} has no scope")
        return cls(
            id=str(fixture.get("id", "")),
            scope=parse_scope(scope),
            projection=str(fixture.get("projection") or DEFAULT_PROJECTION),
            connections=tuple(tuple(ops) for ops in script_connections(watch, bodies)),
        )

    def engine(self, ordering: Ordering = Ordering.STRICT) -> StreamEngine:
        return StreamEngine(self.scope, self.projection, ordering)

    def events(self, ordering: Ordering = Ordering.STRICT) -> list[list[Event]]:
        """The events of every connection."""
        return [list(run_connection(self.engine(ordering), ops)) for ops in self.connections]

    def render(self, ordering: Ordering = Ordering.STRICT) -> bytes:
        """The whole fixture as SSE bytes, as in the corpus goldens."""
        return b"".join(
            comment(f"connection {n}") + render_connection(self.engine(ordering), ops)
            for n, ops in enumerate(self.connections, start=1)
        )


def run_connection(engine: StreamEngine, ops: Sequence[SourceOp]) -> Iterator[Event]:
    """Feed ``ops`` through ``engine`` and yield its events; stops after a terminal error."""
    for op in ops:
        yield from engine.feed(op)
        if engine.closed:
            return


def render_connection(engine: StreamEngine, ops: Sequence[SourceOp]) -> bytes:
    """One connection's SSE frames, ``seq`` from 1."""
    return b"".join(frame(seq, encode_body(event)) for seq, event in enumerate(run_connection(engine, ops), start=1))


def render_fixture(
    fixture: Mapping[str, Any],
    bodies: Mapping[str, Mapping[str, Any]],
    ordering: Ordering = Ordering.STRICT,
) -> bytes:
    """The golden SSE bytes of a fixture's gateway half."""
    return ScriptedFixture.load(fixture, bodies).render(ordering)
