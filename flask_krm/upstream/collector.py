"""How a serving process keeps Python's cyclic garbage collector from pausing every stream.

A full collection scans every container object in the process: the imported modules (Flask, the
``kubernetes`` client), every watch's cache and its shared projections. In a serving process that is
hundreds of thousands of objects and tens to hundreds of milliseconds during which no stream is
written. Nearly all of them live as long as the process or the watch, and the garbage the fan-out
makes per event is acyclic (refcounting frees it at once), so scanning them finds nothing.

:class:`Collector` therefore moves what exists into the collector's permanent generation
(:func:`gc.freeze`) when it is enabled (the application is imported and serving by then), when a
watch has built its cache, and after a snapshot that made many long-lived objects (the first subscriber of a
projection, whose snapshot projects and encodes every object): later collections scan only what
was allocated since. Refcounting still frees frozen objects that are dropped. It also raises the
youngest generation's threshold when the process still has Python's defaults, so the steady
allocation of live events triggers fewer (still short) young collections.

The price of freezing: an object frozen while alive that later becomes part of unreachable cyclic
garbage is never reclaimed. The fan-out makes no such cycles, the JSON stream response breaks
werkzeug's request/environ cycle (:mod:`flask_krm.sse_response`), and freezes are rare (a watch's
start or relist, a new projection), so what a freeze can strand is bounded by what other requests
hold at that moment.

The collector is the process's, so the policy is too: :data:`PROCESS_POLICY`, which the hub
settles after its snapshots, is off until the gevent ``pywsgi`` server driver enables it
(:mod:`flask_krm.pywsgi_driver`, on the first stream it writes). Under another server, or with
``KRM_SERVER_DRIVER = False``, the collector is left as the host set it.
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = ["Collector", "FREEZE_AFTER", "PROCESS_POLICY", "THRESHOLDS"]

PYTHON_DEFAULT_THRESHOLDS: Final = (700, 10, 10)
THRESHOLDS: Final = (10_000, 10, 10)
"""Generation thresholds set when the process still has Python's defaults."""
FREEZE_AFTER: Final = 10_000
"""Objects a snapshot must have added for the collector to stop scanning them."""


class Collector:
    """A collector policy (a no-op until enabled)."""

    __slots__ = ("enabled",)

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = False
        if enabled:
            self.enable()

    def enable(self) -> None:
        """Raise the youngest generation's threshold if it is still Python's default, and stop
        scanning what exists. Once: enabling it again does nothing."""
        if self.enabled:
            return
        self.enabled = True
        if gc.get_threshold() == PYTHON_DEFAULT_THRESHOLDS:
            gc.set_threshold(*THRESHOLDS)
        gc.freeze()

    def settle(self, added: int | None = None) -> None:
        """Long-lived objects were just made (``added`` of them, if known): stop scanning them,
        unless they are fewer than :data:`FREEZE_AFTER`."""
        if self.enabled and (added is None or added >= FREEZE_AFTER):
            gc.freeze()


PROCESS_POLICY: Final = Collector(enabled=False)
"""The serving process's policy: off until the server driver enables it."""
