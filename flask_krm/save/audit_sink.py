"""The JSON-lines audit file (``KRM_AUDIT_LOG``): one Kubernetes-shaped audit event per write attempt.

Each line is :func:`~flask_krm.save.audit_events.audit_event` of one
:class:`~flask_krm.save.audit.AuditRecord`, written whole with one ``write`` to a file opened for
appending, so several worker processes may share the file (lines stay whole up to the pipe
buffer's size, far above an event's). A file that cannot be written is logged once per failure
and never fails the write it records.
"""

from __future__ import annotations

import json
import logging
import os
import time

from .audit import AuditRecord
from .audit_events import audit_event

__all__ = ["AuditSink"]

logger = logging.getLogger("flask_krm.save")


class AuditSink:
    """Appends the audit event of every record it is given to ``path``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def write(self, record: AuditRecord) -> None:
        """Append ``record``'s event as one line. Never raises."""
        line = json.dumps(audit_event(record, now=time.time()), ensure_ascii=True, separators=(",", ":")) + "\n"
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("ascii"))
            finally:
                os.close(fd)
        except OSError as exc:
            logger.error("the audit log %s cannot be written: %s", self.path, type(exc).__name__)
