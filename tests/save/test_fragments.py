"""Outcome and review fragments: wording, causes at their fields, escaping, no values leaked."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from flask import Flask

import flask_krm
from flask_krm.events import Identity
from flask_krm.save.fragments import outcome_fragment, review_fragment
from flask_krm.save.outcomes import FieldCause, Outcome, OutcomeKind, OutcomeTexts, field_causes
from flask_krm.save.staging import ReviewItem
from flask_krm.save.writer import SaveRefused
from flask_krm.store import RecoveryCopy


@pytest.fixture
def app() -> Iterator[Flask]:
    app = Flask(__name__, template_folder=str(__import__("pathlib").Path(flask_krm.__file__).parent / "templates"))
    with app.app_context():
        yield app


def field_id(path: Sequence[Any], suffix: str) -> str:
    return "f-" + "-".join(str(s) for s in path) + suffix


def test_version_stale_uses_the_saving_guide_wording(app: Flask) -> None:
    html = outcome_fragment("ed-outcome", Outcome(OutcomeKind.VERSION_STALE), OutcomeTexts(), field_id)
    assert '<hx-partial hx-target="#ed-outcome" hx-swap="innerHTML">' in html
    assert "Configuration refreshed. Your edits are intact; review and save again." in html
    assert 'data-krm-outcome="version-stale"' in html
    assert "krm-outcome-conflicts" not in html  # never an empty conflict panel


def test_host_texts_override_the_defaults(app: Flask) -> None:
    html = outcome_fragment(
        "o", Outcome(OutcomeKind.SAVED_PENDING), OutcomeTexts({"saved-pending": "Sent <ok>"}), field_id
    )
    assert "Sent &lt;ok&gt;" in html and "<ok>" not in html


def test_a_save_hook_refusal_naming_a_field_is_shown_at_that_field_and_said_once(app: Flask) -> None:
    refused = SaveRefused("at most 10 <replicas>", field="spec.template.spec.containers[0].image")
    outcome = refused.outcome()
    assert outcome.kind is OutcomeKind.REFUSED
    assert outcome.detail == refused.detail == "spec.template.spec.containers[0].image: at most 10 <replicas>"
    assert [c.path for c in outcome.causes] == [("spec", "template", "spec", "containers", 0, "image")]
    html = outcome_fragment("o", outcome, OutcomeTexts(), field_id)
    assert (
        '<hx-partial hx-target="#f-spec-template-spec-containers-0-image-error" hx-swap="innerHTML">'
        '<span class="krm-cause">at most 10 &lt;replicas&gt;</span></hx-partial>'
    ) in html
    assert html.count("at most 10 &lt;replicas&gt;") == 2  # the detail in the outcome region, the cause at its field
    assert "krm-outcome-causes" not in html
    plain = SaveRefused("no writes on Fridays").outcome()
    assert plain.causes == () and plain.detail == "no writes on Fridays"


def test_invalid_causes_go_to_their_fields_and_old_errors_are_cleared(app: Flask) -> None:
    outcome = Outcome(
        OutcomeKind.INVALID,
        causes=(
            FieldCause("data[a]", ("data", "a"), "FieldValueInvalid", 'Invalid value: "<script>"'),
            FieldCause("", None, "FieldValueRequired", None),
        ),
    )
    html = outcome_fragment("o", outcome, OutcomeTexts(), field_id, cleared=[("data", "b"), ("data", "a")])
    assert (
        '<hx-partial hx-target="#f-data-a-error" hx-swap="innerHTML">'
        '<span class="krm-cause">Invalid value: &#34;&lt;script&gt;&#34;</span></hx-partial>'
    ) in html
    assert '<hx-partial hx-target="#f-data-b-error" hx-swap="innerHTML"></hx-partial>' in html
    assert html.count('hx-target="#f-data-a-error"') == 1
    assert "FieldValueRequired" in html and "<script>" not in html


def test_a_redacted_cause_never_shows_its_message(app: Flask) -> None:
    status = {
        "details": {
            "causes": [{"field": "data[token]", "reason": "FieldValueInvalid", "message": "Invalid value: c2VjcmV0"}]
        }
    }
    outcome = Outcome(OutcomeKind.INVALID, causes=field_causes(status, ("/data/token",)))
    html = outcome_fragment("o", outcome, OutcomeTexts(), field_id)
    assert "c2VjcmV0" not in html and "FieldValueInvalid" in html


def test_conflicts_link_to_their_fields(app: Flask) -> None:
    outcome = Outcome(OutcomeKind.DRAFT_CONFLICT, conflicts=(("metadata", "labels", "app.kubernetes.io/name"),))
    html = outcome_fragment("o", outcome, OutcomeTexts(), field_id)
    assert (
        '<a href="#f-metadata-labels-app.kubernetes.io/name-field">/metadata/labels/app.kubernetes.io~1name</a>' in html
    )


def test_unavailable_names_the_replacement_and_offers_the_recovery_copy(app: Flask) -> None:
    copy = RecoveryCopy(
        Identity("uid-1", "v1", "ConfigMap", "app", "team"), {"data": {"a": "mine"}}, {"data": {"a": "mine"}}, 1.0
    )
    html = outcome_fragment(
        "o", Outcome(OutcomeKind.UNAVAILABLE, replacement_uid="uid-2"), OutcomeTexts(), field_id, recovery=copy
    )
    assert "This configuration was removed. A replacement must be opened separately." in html
    assert "uid-2" in html
    assert json.dumps({"data": {"a": "mine"}}, indent=2).replace('"', "&#34;") in html


def test_review_lists_every_pending_item_with_its_outcome(app: Flask) -> None:
    items = [
        ReviewItem("delete", "uid-9", "old"),
        ReviewItem(
            "create", "draft-1", "new", outcome=Outcome(OutcomeKind.REJECTED, http_status=409, detail="AlreadyExists")
        ),
        ReviewItem("edit", "uid-1", "app", (("data", "a"), ("data", "b"))),
    ]
    html = review_fragment("r", items, OutcomeTexts(), save_url="/save", discard_url="/discard")
    assert html.count("data-krm-review-kind=") == 3
    assert "Kubernetes refused the request" in html and "2 fields" in html
    assert html.count("krm-review-discard") == 2
    assert 'hx-post="/save"' in html
