"""Telling what a browser session has open that the session ended.

A session ends on sign-out, on a sign-in as someone else, or when its drafts expire; with a shared
draft backend it may end on another worker (:meth:`DraftSync.receive
<flask_krm.drafts.sync.DraftSync.receive>` hears of it). Every open page channel and JSON stream of
the session watches it here and is told at once, so none of them goes on serving a session that is
over.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .backend import session_tag

logger = logging.getLogger("flask_krm.drafts")


class SessionEndings:
    """The watchers of each session of one worker, by session tag (never the session id)."""

    def __init__(self) -> None:
        self._watchers: dict[str, list[Callable[[], None]]] = {}
        self._mutex = threading.Lock()

    def watch(self, session_id: str, ended: Callable[[], None]) -> Callable[[], None]:
        """Call ``ended()`` (once; it must not block) when the session ``session_id`` ends; returns
        the function that stops watching."""
        tag = session_tag(session_id)
        with self._mutex:
            self._watchers.setdefault(tag, []).append(ended)

        def stop() -> None:
            with self._mutex:
                held = self._watchers.get(tag)
                if held is not None and ended in held:
                    held.remove(ended)
                    if not held:
                        del self._watchers[tag]

        return stop

    def end(self, tag: str) -> None:
        """The session whose tag is ``tag`` ended: tell every watcher of it, once."""
        with self._mutex:
            watchers = self._watchers.pop(tag, [])
        for ended in watchers:
            try:
                ended()
            except Exception:  # one watcher's failure never keeps the others open
                logger.exception("ending a stream of an ended session failed")

    def __len__(self) -> int:
        with self._mutex:
            return sum(len(held) for held in self._watchers.values())
