"""What the browser tests of saving rely on, checked without a browser: the save settings read from
configuration, the recovery copies of the UI's session stores, and the copy-out text."""

from __future__ import annotations

import typing as t
from pathlib import Path

import pytest
from flask import Flask

from flask_krm import KrmStream
from flask_krm.events import Redaction, Upsert
from flask_krm.projection import project
from flask_krm.runtime import runtime
from flask_krm.save.editor import settings_of
from flask_krm.save.outcomes import OutcomeKind, OutcomeTexts
from flask_krm.scope import parse_scope
from flask_krm.sessions import DraftRegistry, Limits
from flask_krm.store import DEFAULT_POLICY, LiveResourceStore, RecoveryCopies, RecoveryCopy, identity_of
from flask_krm.ui.page import EditorSpec, make_component
from flask_krm.ui.recovery import copy_out


def make_app(tmp_path: Path, **config: t.Any) -> Flask:
    app = Flask(__name__, instance_path=str(tmp_path))
    app.config.update(SECRET_KEY="settings test secret", **config)
    KrmStream(app, authorizer=lambda principal, scope, projection, verb: True)
    return app


def test_the_confirmation_timeout_is_a_configuration_key_read_at_use_time(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    krm = runtime(app)
    assert app.config["KRM_SAVE_CONFIRM_TIMEOUT"] == 5.0 and settings_of(krm).confirm_timeout == 5.0
    app.config["KRM_SAVE_CONFIRM_TIMEOUT"] = 0.25
    assert settings_of(krm).confirm_timeout == 0.25
    app.config["KRM_SAVE_CONFIRM_TIMEOUT"] = 2
    assert settings_of(krm).confirm_timeout == 2.0
    app.config["KRM_OUTCOME_TEXTS"] = {"busy": "Hold on."}
    settings = settings_of(krm)
    assert settings.confirm_timeout == 2.0 and settings.texts.message(OutcomeKind.BUSY) == "Hold on."
    app.config["KRM_OUTCOME_TEXTS"] = OutcomeTexts({OutcomeKind.BUSY: "Wait."})
    assert settings_of(krm).texts.message(OutcomeKind.BUSY) == "Wait."


def test_outcome_texts_naming_no_outcome_are_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="KRM_OUTCOME_TEXTS names unknown outcome kinds: 'bussy'"):
        make_app(tmp_path, KRM_OUTCOME_TEXTS={"bussy": "Hold on."})


@pytest.mark.parametrize("value", [0, -1, 300.5, "5", True, None])
def test_a_bad_confirmation_timeout_is_refused_by_name(tmp_path: Path, value: t.Any) -> None:
    with pytest.raises(ValueError, match="KRM_SAVE_CONFIRM_TIMEOUT must be"):
        make_app(tmp_path, KRM_SAVE_CONFIRM_TIMEOUT=value)
    app = make_app(tmp_path)
    app.config["KRM_SAVE_CONFIRM_TIMEOUT"] = value
    with pytest.raises(ValueError, match="KRM_SAVE_CONFIRM_TIMEOUT must be"):
        settings_of(runtime(app))


@pytest.mark.parametrize("value", [0, -3, "1h"])
def test_a_bad_recovery_lifetime_is_refused_by_name(tmp_path: Path, value: t.Any) -> None:
    with pytest.raises(ValueError, match="KRM_RECOVERY_LIFETIME must be a positive number"):
        make_app(tmp_path, KRM_RECOVERY_LIFETIME=value)


def test_the_stores_the_ui_makes_keep_recovery_copies_for_the_configured_lifetime(tmp_path: Path) -> None:
    app = make_app(tmp_path, KRM_RECOVERY_LIFETIME=42.0)
    scope = parse_scope("target=demo&version=v1&resource=configmaps&namespace=app&name=cm")
    component = make_component(EditorSpec(scope, "krm-full/v1", DEFAULT_POLICY))
    drafts = DraftRegistry().namespace("session", "editor", Limits(1800.0, 3600.0, 4))
    with app.app_context():
        store = runtime(app).store_for(drafts, component)
    assert store.recovery is not None and store.recovery.lifetime == 42.0


def test_copy_out_is_the_draft_without_what_kubernetes_assigns_and_never_a_withheld_value() -> None:
    raw = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "creds",
            "namespace": "app",
            "uid": "u-1",
            "resourceVersion": "7",
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"team": "a", "old": "x"},
        },
        "type": "Opaque",
        "data": {"token": "c2VjcmV0LXZhbHVl"},
    }
    projected = project(raw, "krm-full/v1")
    store = LiveResourceStore(recovery=RecoveryCopies(60.0))
    store.apply(Upsert("added", projected.object, (Redaction("/data/token", 1),)))
    store.set_value("u-1", ("metadata", "labels", "team"), "payments")
    store.remove_key("u-1", ("metadata", "labels", "old"))
    store.remove_resource("u-1")
    copy = store.recovery.for_uid("u-1") if store.recovery is not None else None
    assert isinstance(copy, RecoveryCopy) and copy.removed_at is not None
    shown = copy_out(copy)
    assert '"team": "payments"' in shown.text and '"old"' not in shown.text
    for absent in ("u-1", "resourceVersion", "creationTimestamp", "c2VjcmV0LXZhbHVl", "token"):
        assert absent not in shown.text
    assert shown.changed == ("/metadata/labels/old (removed)", "/metadata/labels/team")
    assert identity_of(copy.draft).name == "creds"
