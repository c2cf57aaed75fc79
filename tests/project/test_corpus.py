"""The vendored conformance corpus is complete and still equals its source when that is present."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest

from tests.corpus import CORPUS, fixtures

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO.parent / "shared" / "conformance" / "krm-stream"


def _vendor_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("vendor_conformance", REPO / "scripts" / "vendor_conformance.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not SOURCE.is_dir(), reason="the upstream corpus is not beside this checkout")
def test_vendored_corpus_equals_source() -> None:
    expected = _vendor_module().expected_files(SOURCE)
    vendored = {
        str(p.relative_to(CORPUS)): p.read_bytes() for p in CORPUS.rglob("*") if p.is_file() and p.name != "NOTICE"
    }
    assert sorted(vendored) == sorted(expected)
    for rel, data in expected.items():
        assert vendored[rel] == data, f"{rel} differs from the corpus: run scripts/vendor_conformance.py"


@pytest.mark.parametrize("suite", ["gateway", "client"])
def test_every_suite_has_fixtures(suite: str) -> None:
    assert len(fixtures(suite)) >= 10


def test_every_golden_frame_matches_the_event_schema() -> None:
    schema = json.loads((CORPUS / "events.schema.json").read_text())
    frames = 0
    for sse in (CORPUS / "sse").glob("*.sse"):
        for block in sse.read_text().split("\n\n"):
            if block.startswith("data: "):
                jsonschema.validate(json.loads(block[len("data: ") :]), schema)
                frames += 1
    assert frames > 50
