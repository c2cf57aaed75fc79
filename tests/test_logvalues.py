"""Values written into log lines: as they are only when plain, quoted and escaped otherwise, so
no value can forge a line."""

from __future__ import annotations

import pytest

from flask_krm.logvalues import log_value


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("demo/app-config", "demo/app-config"),
        ("a\nb", '"a\\nb"'),
        ("\x1b[2K", '"\\u001b[2K"'),
        ("a b", '"a b"'),
        ("k=v", '"k=v"'),
        ("", '""'),
        ("\u2028", '"\\u2028"'),
        ("caf\u00e9", '"caf\\u00e9"'),
        ('"', '"\\""'),
    ],
)
def test_log_values_are_written_as_they_are_only_when_plain(value: str, written: str) -> None:
    assert log_value(value) == written
