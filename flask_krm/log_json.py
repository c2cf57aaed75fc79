"""A JSON-lines log formatter that writes flask-krm's structured fields.

::

    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logging.getLogger("flask_krm").addHandler(handler)

Each record becomes one line: ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``message``, then
every structured field the record carries (:data:`flask_krm.log_fields.FIELDS`, and those a host
names in ``fields``), and ``exception`` when one was logged. Pure: no Flask, no gevent.
"""

from __future__ import annotations

import json
import logging
import typing as t
from collections.abc import Sequence
from datetime import datetime, timezone

__all__ = ["JsonFormatter"]

KRM_FIELDS: t.Final = (
    "krm_event",
    "request_id",
    "stream_id",
    "target",
    "resource",
    "kind",
    "operation",
    "outcome",
    "reason",
)
"""flask-krm's structured fields (the same as :data:`flask_krm.log_fields.FIELDS`)."""


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line.

    :param fields: further record attributes to write when present (a host's own ``extra=`` keys).
    """

    def __init__(self, fields: Sequence[str] = ()) -> None:
        super().__init__()
        self.fields = tuple(dict.fromkeys((*KRM_FIELDS, *fields)))

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, t.Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in self.fields:
            value = getattr(record, name, None)
            if value is not None and value != "":
                entry[name] = value if isinstance(value, (str, int, float, bool)) else str(value)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=True, separators=(",", ":"), default=str)
