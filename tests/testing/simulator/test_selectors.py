"""Label and field selector syntax and matching, as the simulator applies them."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.selectors import (
    SelectorError,
    parse_field_selector,
    parse_label_selector,
    selector_from_match,
)

LABELS = {"app": "web", "tier": "front", "replicas": "3", "example.com/owner": "team-a"}


@pytest.mark.parametrize(
    ("text", "matches"),
    [
        ("", True),
        ("app=web", True),
        ("app = web", True),
        ("app==db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (db, web)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("replicas>2", True),
        ("replicas<3", False),
        ("example.com/owner=team-a", True),
        ("app=web,tier=back", False),
        ("app=web, tier in (front,back), !missing", True),
        ("missing=", False),
    ],
)
def test_label_selector_matching(text: str, matches: bool) -> None:
    assert parse_label_selector(text).matches(LABELS) is matches


@pytest.mark.parametrize(
    "text",
    [
        "app in web",
        "app in (web",
        "app=web,",
        "=web",
        "app=web=x",
        "app in (web))",
        "Bad Key=1",
        "app=bad value!",
        "tier>x",
        ",app",
    ],
)
def test_malformed_label_selectors(text: str) -> None:
    with pytest.raises(SelectorError):
        parse_label_selector(text)


def test_match_labels_and_expressions() -> None:
    selector = selector_from_match(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}
    )
    assert selector.matches(LABELS)
    assert not selector.matches({"app": "web", "tier": "back"})


def _unsupported(label: str) -> str:
    return f"field label not supported: {label}"


def test_field_selectors() -> None:
    supported = ("metadata.name", "metadata.namespace")
    selector = parse_field_selector("metadata.name=a,metadata.namespace!=kube-system", supported, _unsupported)
    assert selector.exact("metadata.name") == "a" and selector.exact("metadata.namespace") is None
    assert selector.matches({"metadata.name": "a", "metadata.namespace": "default"})
    assert not selector.matches({"metadata.name": "a", "metadata.namespace": "kube-system"})
    assert parse_field_selector(r"metadata.name==a\,b", supported, _unsupported).exact("metadata.name") == "a,b"
    with pytest.raises(SelectorError, match="field label not supported: spec.x"):
        parse_field_selector("spec.x=1", supported, _unsupported)
    with pytest.raises(SelectorError):
        parse_field_selector("metadata.name", supported, _unsupported)
