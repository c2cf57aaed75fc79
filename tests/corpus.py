"""Access to the vendored krm-stream conformance corpus (``tests/conformance/``)."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).resolve().parent / "conformance"


@cache
def _load(name: str) -> Any:
    return json.loads((CORPUS / name).read_text())


def bodies() -> dict[str, dict[str, Any]]:
    """Every named body, freshly copied."""
    return copy.deepcopy(_load("bodies.json"))


def body(name: str) -> dict[str, Any]:
    """One named body, freshly copied."""
    return copy.deepcopy(_load("bodies.json")[name])


def fixtures(suite: str) -> list[dict[str, Any]]:
    """The fixtures whose ``suites`` include ``suite``, freshly copied."""
    found = [f for f in _load("fixtures.json") if suite in f["suites"]]
    if not found:
        raise AssertionError(f"the vendored corpus has no {suite!r} fixture")
    return copy.deepcopy(found)


def fixture_params(suite: str) -> list[Any]:
    """``pytest.param`` per fixture of ``suite``, with the fixture id as the test id."""
    return [pytest.param(f, id=f["id"]) for f in fixtures(suite)]


def scope_cases() -> list[dict[str, Any]]:
    return copy.deepcopy(_load("scopes.json"))


def golden_sse(fixture_id: str) -> bytes:
    return (CORPUS / "sse" / f"{fixture_id}.sse").read_bytes()
