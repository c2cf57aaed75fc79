"""A dry-run counter: every PATCH the simulator admits for one object, with or without ``dryRun``.

Registered as a simulator write hook (``kube.faults.mutate_writes``), it sees each PATCH as an
admission webhook would, before the preconditions are checked: a dry run (``dryRun=All``) and a
write are told apart by the request's own ``dryRun`` flag, never by what the client meant.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from flask_krm.testing.simulator import KubeSimulator, WriteRequest


@dataclass
class PatchCounter:
    """The PATCHes of object ``name`` the simulator admitted: ``dry_runs`` and ``writes``."""

    name: str
    dry_runs: int = 0
    writes: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: WriteRequest) -> None:
        if request.name != self.name or request.verb != "patch":
            return
        with self._lock:
            if request.dry_run:
                self.dry_runs += 1
            else:
                self.writes += 1

    @property
    def counts(self) -> tuple[int, int]:
        """``(dry_runs, writes)``."""
        with self._lock:
            return self.dry_runs, self.writes


@contextmanager
def counting_patches(kube: KubeSimulator, name: str) -> Iterator[PatchCounter]:
    """Count the PATCHes of object ``name`` while the block runs."""
    counter = PatchCounter(name)
    faults = kube.faults
    assert faults is not None
    remove: Callable[[], None] = faults.mutate_writes(counter)
    try:
        yield counter
    finally:
        remove()
