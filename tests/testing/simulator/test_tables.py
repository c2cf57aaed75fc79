"""Table cells the contract suite cannot pin down on a real server: ages beyond a test's lifetime, selector strings."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.tables import human_duration, selector_string


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-2, "<invalid>"),
        (-1, "0s"),
        (0, "0s"),
        (119, "119s"),
        (120, "2m"),
        (125, "2m5s"),
        (599, "9m59s"),
        (600, "10m"),
        (10_799, "179m"),
        (10_800, "3h"),
        (3 * 3600 + 60, "3h1m"),
        (8 * 3600, "8h"),
        (47 * 3600 + 59 * 60, "47h"),
        (48 * 3600, "2d"),
        (49 * 3600, "2d1h"),
        (8 * 86_400, "8d"),
        (2 * 365 * 86_400 - 1, "729d"),
        (2 * 365 * 86_400, "2y"),
        ((2 * 365 + 1) * 86_400, "2y1d"),
        (8 * 365 * 86_400, "8y"),
        (20 * 365 * 86_400 + 86_400, "20y"),
    ],
)
def test_human_duration(seconds: int, shown: str) -> None:
    """``duration.HumanDuration`` as kubectl's AGE column shows it."""
    assert human_duration(seconds) == shown


def test_selector_string() -> None:
    selector = {
        "matchLabels": {"tier": "front", "app": "web"},
        "matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["b", "a"]},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "env", "operator": "NotIn", "values": ["dev"]},
            {"key": "owner", "operator": "Exists"},
        ],
    }
    assert selector_string(selector) == "app=web,!canary,env notin (dev),owner,tier=front,zone in (a,b)"
    assert selector_string(None) == "" and selector_string({}) == ""
