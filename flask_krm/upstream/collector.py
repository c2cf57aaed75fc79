"""How the hub keeps Python's cyclic garbage collector from pausing every stream.

A full collection scans every container object in the process: the imported modules (Flask, the
``kubernetes`` client), every watch's cache and its shared projections. In a serving process that is
hundreds of thousands of objects and tens to hundreds of milliseconds during which no stream is
written. Nearly all of them live as long as the process or the watch, and the garbage the fan-out
makes per event is acyclic (refcounting frees it at once), so scanning them finds nothing.

:class:`Collector` therefore

- moves what exists into the collector's permanent generation (:func:`gc.freeze`) once a snapshot
  was built (a watch synced its cache, a subscriber got its snapshot): later collections scan only
  what was allocated since, and refcounting still frees frozen objects that are dropped;
- raises the youngest generation's threshold from Python's default, when the process still has the
  defaults, so the steady allocation of live events triggers fewer, still short, young collections.

A frozen object that later becomes part of an unreachable cycle is not reclaimed; the fan-out makes
no such cycles. A host that manages the collector itself passes ``collector=False`` to the hub.
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = ["Collector", "THRESHOLDS"]

PYTHON_DEFAULT_THRESHOLDS: Final = (700, 10, 10)
THRESHOLDS: Final = (10_000, 10, 10)
"""Generation thresholds set when the process still has Python's defaults."""


class Collector:
    """The collector policy of one hub (a no-op when ``enabled`` is false)."""

    __slots__ = ("enabled",)

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        if enabled and gc.get_threshold() == PYTHON_DEFAULT_THRESHOLDS:
            gc.set_threshold(*THRESHOLDS)

    def settle(self) -> None:
        """A snapshot was just built: what exists now is long-lived; stop scanning it."""
        if self.enabled:
            gc.freeze()
