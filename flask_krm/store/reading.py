"""Reading a store: server objects, drafts, changes, conflicts and patches, every one a copy.

Dirty paths, changes and patches are derived from draft vs server on every read. Pure: no Flask,
no gevent.
"""

from __future__ import annotations

import typing as t
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..events import Redaction
from .errors import UnknownResourceError
from .held import StoreCore
from .keyed_lists import Schema
from .merge import Conflict, flashed_paths
from .patch import Change, changes
from .paths import Path, as_path
from .truth import ServerObject
from .values import json_copy


class DraftReading(StoreCore):
    """Read what a store holds (copies)."""

    def uids(self) -> list[str]:
        """The uids held, in arrival order (objects adopted here before the server sent them last)."""
        with self._lock:
            truth, hidden = self._truth, self._hidden
            held = [uid for uid in truth.uids() if uid not in hidden] if hidden else truth.uids()
            return held + [uid for uid in self._resources if uid not in truth]

    def server(self, uid: str) -> dict[str, Any] | None:
        """A copy of the server object held for ``uid``, or None."""
        with self._lock:
            held = self._resources.get(uid)
            if held is not None:
                return t.cast("dict[str, Any]", json_copy(held.server))
            server = self._visible(uid)
            return None if server is None else t.cast("dict[str, Any]", json_copy(server.object))

    def draft(self, uid: str) -> dict[str, Any] | None:
        """A copy of the person's draft of ``uid``, or None."""
        with self._lock:
            held = self._resources.get(uid)
            if held is not None:
                return t.cast("dict[str, Any]", json_copy(held.draft))
            server = self._visible(uid)
            return None if server is None else t.cast("dict[str, Any]", json_copy(server.object))

    def edited_uids(self) -> list[str]:
        """The uids the person did something to (edited, restored, adopted), in the order they
        did: every uid with a dirty path or a conflict is among them; a clean object never is."""
        with self._lock:
            return [uid for uid in self._resources if uid not in self._hidden]

    def clean(self, uid: str) -> ServerObject | None:
        """The truth's delivery of ``uid`` when this store holds nothing of its own for it (never
        edited, restored, adopted or removed here): what every such store shows alike. Shared:
        never mutate its object."""
        if not self._resources and not self._hidden:  # holds nothing of its own: no lock to take
            return self._truth.get(uid)
        with self._lock:
            return None if uid in self._resources else self._visible(uid)

    def named(self, name: str, namespace: str | None = None) -> list[str]:
        """The uids whose server object is named ``name`` (in ``namespace``, when given), in
        arrival order; nothing is copied."""
        found = []
        with self._lock:
            resources, truth = self._resources, self._truth
            for uid in self.uids() if resources or self._hidden else truth.uids():
                held = resources.get(uid)
                server = held.server if held is not None else truth.get(uid)
                obj = server.object if isinstance(server, ServerObject) else server
                metadata = (obj or {}).get("metadata") or {}
                if metadata.get("name") == name and (not namespace or metadata.get("namespace", "") == namespace):
                    found.append(uid)
        return found

    def unsaved(self) -> bool:
        """Whether any object has a dirty path or an open conflict (clean objects are not looked at)."""
        with self._lock:
            return any(
                changes(held.regions, held.server, held.draft) or self._open_conflicts(held)
                for held in self._resources.values()
            )

    def redactions(self, uid: str) -> tuple[Redaction, ...]:
        """The withheld paths of ``uid`` with their stream revisions."""
        with self._lock:
            return self._get(uid).redactions

    def is_read_only(self, uid: str, path: Sequence[Any]) -> bool:
        """Whether an edit at ``path`` would be refused with :class:`ReadOnlyPathError`."""
        with self._lock:
            held = self._get(uid)
            where = as_path(path)
            return not where or not held.regions.editable_in(held.draft, where)

    def read_only_check(self, uid: str) -> t.Callable[[Sequence[Any]], bool]:
        """:meth:`is_read_only` for ``uid`` as it is now, as a function that takes no lock (a
        render asks it of every field): the draft and its regions are read once, here."""
        with self._lock:
            held = self._get(uid)
            regions, draft = held.regions, held.draft

        def read_only(path: Sequence[Any]) -> bool:
            where = as_path(path)
            return not where or not regions.editable_in(draft, where)

        return read_only

    def changes(self, uid: str) -> list[Change]:
        """The person's editable changes (copies), derived from draft vs server now."""
        with self._lock:
            held = self._get(uid)
            return [
                replace(c, old=json_copy(c.old), new=json_copy(c.new))
                for c in changes(held.regions, held.server, held.draft)
            ]

    def dirty(self, uid: str) -> list[Path]:
        """The paths the person changed (an array counts as one path)."""
        with self._lock:
            held = self._get(uid)
            return [c.path for c in changes(held.regions, held.server, held.draft)]

    def is_dirty(self, uid: str, path: Sequence[Any] = ()) -> bool:
        """Whether the person changed ``path`` (or, for a container such as ``()``, anything beneath)."""
        if not self._resources and self._visible(uid) is not None:  # holds nothing of its own: no lock to take
            as_path(path)
            return False
        with self._lock:
            held = self._resources.get(uid)
            if held is None:  # clean: its draft is the server's object
                if self._visible(uid) is None:
                    raise UnknownResourceError(uid)
                as_path(path)
                return False
            return self._dirty_at(held, as_path(path))

    def edit_sequence(self, uid: str) -> int:
        """How many edits the person has made to ``uid`` (0 when it is not held). It only grows, and
        a draft read after it holds every one of them: a render that reads it first shows them all.
        """
        if not self._resources:  # nothing held: no lock to take
            return 0
        with self._lock:
            held = self._resources.get(uid)
            return held.sequence if held is not None else 0

    def conflicts(self, uid: str) -> list[Conflict]:
        """The disagreements to resolve, each with the server's value (a copy)."""
        with self._lock:
            held = self._get(uid)
            return [replace(c, theirs=json_copy(c.theirs)) for c in self._open_conflicts(held)]

    def flashed(self, uid: str) -> list[Path]:
        """The paths the last server change moved where the person had not edited (to highlight).

        Empty after a re-delivered (unchanged) object; an array counts as one path.
        """
        with self._lock:
            held = self._get(uid)
            if held.previous is None:
                return []
            return flashed_paths(held.previous[0], held.previous[1], held.server)

    def patch(self, uid: str) -> dict[str, Any] | None:
        """The RFC 7386 merge patch of the person's editable changes, or None."""
        with self._lock:
            return self._patch_of(self._get(uid))

    def kind_schema(self, uid: str) -> Schema | None:
        """The schema this store holds for ``uid``'s kind (``None``: none), as editors read it."""
        if not self._resources:  # holds nothing of its own: the truth's object, no lock to take
            server = self._visible(uid)
            if server is not None:
                obj = server.object
                return self._schemas.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
        with self._lock:
            held = self._resources.get(uid)
            server = self._visible(uid) if held is None else None
            if held is None and server is None:
                raise UnknownResourceError(uid)
            obj = held.server if held is not None else t.cast(ServerObject, server).object
            return self._schemas.get((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))))
