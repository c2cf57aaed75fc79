"""Values written into log lines, so that no value can forge a line.

A log line is one event. A value a person controls (an object name, a map key, a path) could
otherwise end the line and start a forged one (LF, CR, U+2028...), rewrite what a terminal shows
(ANSI escapes) or pose as another ``key=value`` field. :func:`log_value` leaves a plain value as it
is and writes any other as a JSON string with every control and non-ASCII character escaped.

Pure: no Flask, no gevent, no network.
"""

from __future__ import annotations

import json
import re
import typing as t

PLAIN: t.Final = re.compile(r"[A-Za-z0-9._~:/@+-]+\Z")
"""What a value may consist of to be written as it is: ASCII letters, digits and ``._~:/@+-``."""


def log_value(value: object) -> str:
    """``value`` as one token of a log line: as it is when :data:`PLAIN`, otherwise quoted as a
    JSON string, ASCII only (``"a\\nb"``, ``"\\u001b[31m"``, ``""`` for the empty string)."""
    text = str(value)
    return text if PLAIN.match(text) else json.dumps(text, ensure_ascii=True)
