"""An audit trail of every write attempt, and the page that lists it.

flask-krm publishes each write attempt (accepted or not) as an
:class:`~flask_krm.save.audit.AuditRecord` with the ``write_attempted`` signal: who, which object,
the outcome and an RFC 6902 diff in which Secret values are named but never valued. A real host
would send it to its audit system; the example keeps the latest records in memory.
"""

from __future__ import annotations

import threading
import time
import typing as t
from collections import deque
from dataclasses import dataclass

from flask import Blueprint, Flask, current_app, render_template
from flask_login import login_required

from flask_krm.save.audit import AuditRecord
from flask_krm.save.publish import write_attempted

EXTENSION_KEY: t.Final = "example.audit"


OUTCOME_LABELS: t.Final[dict[str, tuple[str, str]]] = {
    "saved-pending": ("Saved", "ok"),
    "saved": ("Saved", "ok"),
    "created": ("Created", "ok"),
    "deleted": ("Deleted", "ok"),
    "not-applied": ("Accepted, not applied", "warn"),
    "version-stale": ("Not saved: changed meanwhile", "warn"),
    "draft-conflict": ("Not saved: conflicting change", "warn"),
    "recovering": ("Not saved: re-reading", "warn"),
    "unknown": ("Result unknown", "warn"),
    "reconnecting": ("Not sent: reconnecting", "warn"),
    "busy": ("Not sent: another save running", "warn"),
    "nothing-to-save": ("Nothing to save", "neutral"),
    "unavailable": ("Not saved: object gone", "bad"),
    "invalid": ("Invalid", "bad"),
    "refused": ("Refused", "bad"),
    "rejected": ("Rejected by Kubernetes", "bad"),
    "access-denied": ("Permission denied", "bad"),
    "signed-out": ("Signed out", "bad"),
}
"""Outcome -> (what the audit page calls it, its colour: ok, warn, bad or neutral).

A write Kubernetes accepted is final once accepted: ``saved-pending`` (the person's page had not
seen the echo yet when the record was made) is shown as "Saved" with the version written."""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One write attempt as the audit page shows it."""

    at: float
    record: AuditRecord

    @property
    def outcome_label(self) -> str:
        return OUTCOME_LABELS.get(self.record.outcome, (self.record.outcome, "neutral"))[0]

    @property
    def outcome_tone(self) -> str:
        return OUTCOME_LABELS.get(self.record.outcome, ("", "neutral"))[1]

    @property
    def final_outcome(self) -> str:
        """The outcome as final: an accepted write is ``saved``, whether or not its echo had arrived."""
        return "saved" if self.record.outcome == "saved-pending" else self.record.outcome


class AuditLog:
    """The latest ``capacity`` write attempts, newest first. Safe to use from any greenlet."""

    def __init__(self, capacity: int = 500) -> None:
        self._entries: deque[AuditEntry] = deque(maxlen=capacity)
        self._lock = threading.Lock()

    def record(self, sender: object, *, record: AuditRecord, **_: t.Any) -> None:
        """The ``write_attempted`` receiver: it runs on the save path, so it only appends."""
        with self._lock:
            self._entries.appendleft(AuditEntry(time.time(), record))

    def entries(self) -> list[AuditEntry]:
        with self._lock:
            return list(self._entries)


def init_audit(app: Flask) -> AuditLog:
    """Keep ``app``'s write attempts and serve the audit page."""
    log = AuditLog()
    app.extensions[EXTENSION_KEY] = log
    write_attempted.connect(log.record, sender=app)
    app.add_template_filter(audit_time, "audit_time")
    app.register_blueprint(bp)
    return log


def audit_time(timestamp: float) -> str:
    """A record's time as the audit page shows it (UTC)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(timestamp))


def audit_log(app: Flask | None = None) -> AuditLog:
    """The audit log of ``app`` (default: the current application)."""
    return t.cast(AuditLog, (app or current_app).extensions[EXTENSION_KEY])


bp = Blueprint("audit", __name__)


@bp.get("/audit")
@login_required
def audit_page() -> str:
    return render_template("example/audit.html", entries=audit_log().entries())
