"""Save intents: the conditional patch, and the capture rule for a save's base version (the newest
known version the person cannot tell apart from the one they hold, and never any other)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from flask_krm.events import Redaction
from flask_krm.projection import project
from flask_krm.store import SaveIntent, newest_equivalent_base, newest_of

UID = "uid-1"
SPEC = "krm-spec/v1"
FULL = "krm-full/v1"


def deployment(rv: str, *, replicas: int = 2, ready: int = 0, uid: str = UID, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "team",
            "uid": uid,
            "resourceVersion": rv,
            "generation": 3,
            **metadata,
        },
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "app", "image": "nginx:1"}]}}},
        "status": {"observedGeneration": 3, "readyReplicas": ready},
    }


def view_of(raw: dict[str, Any], projection: str = SPEC) -> dict[str, Any]:
    """What the editor holds for ``raw``: its projection, as the stream delivered it."""
    return project(raw, projection).object


INTENT = SaveIntent(UID, "100", {"spec": {"replicas": 3}})


def test_the_conditional_patch_adds_both_preconditions_without_touching_the_intent() -> None:
    intent = SaveIntent("u", "7", {"metadata": {"labels": {"a": "b"}}, "data": {"x": "y"}})
    assert intent.conditional_patch() == {
        "metadata": {"labels": {"a": "b"}, "uid": "u", "resourceVersion": "7"},
        "data": {"x": "y"},
    }
    assert intent.patch == {"metadata": {"labels": {"a": "b"}}, "data": {"x": "y"}}


def test_a_newer_version_with_an_identical_projection_is_the_base() -> None:
    newest = deployment("107", ready=2)  # status only: invisible under krm-spec/v1
    based = newest_equivalent_base(INTENT, view_of(deployment("100")), (), newest, SPEC)
    assert based == SaveIntent(UID, "107", {"spec": {"replicas": 3}})


def test_bookkeeping_only_changes_are_identical_under_every_projection() -> None:
    newest = deployment("120", managedFields=[{"manager": "kubectl", "operation": "Update"}])
    for projection in ("krm-raw/v1", FULL, SPEC):
        held = deployment("100")
        assert (
            newest_equivalent_base(INTENT, view_of(held, projection), (), newest, projection).resource_version == "120"
        )


@pytest.mark.parametrize(
    "change",
    [
        lambda obj: obj["spec"].update(replicas=5),
        lambda obj: obj["spec"]["template"]["spec"]["containers"][0].update(image="nginx:2"),
        lambda obj: obj["metadata"].update(labels={"tier": "web"}),
        lambda obj: obj["metadata"].update(generation=4),
        lambda obj: obj["metadata"].update(annotations={"note": "x"}),
    ],
    ids=["spec", "array item", "labels", "generation", "annotation"],
)
def test_a_newer_version_with_different_visible_content_is_never_the_base(change: Any) -> None:
    newest = deployment("107")
    change(newest)
    based = newest_equivalent_base(INTENT, view_of(deployment("100")), (), newest, SPEC)
    assert based is INTENT


def test_a_status_change_is_visible_under_the_full_projection() -> None:
    newest = deployment("107", ready=2)
    assert newest_equivalent_base(INTENT, view_of(deployment("100"), FULL), (), newest, FULL) is INTENT


def test_another_uid_is_never_the_base_even_when_identical() -> None:
    newest = deployment("107", uid="uid-2")
    view = view_of(deployment("100"))
    assert newest_equivalent_base(INTENT, view, (), newest, SPEC) is INTENT
    lookalike = copy.deepcopy(newest)
    del lookalike["metadata"]["uid"]
    assert newest_equivalent_base(INTENT, view, (), lookalike, SPEC) is INTENT


@pytest.mark.parametrize("version", ["100", "99", "", "abc", "0107", None])
def test_only_a_strictly_newer_decimal_version_is_used(version: Any) -> None:
    newest = deployment("0")
    newest["metadata"]["resourceVersion"] = version
    assert newest_equivalent_base(INTENT, view_of(deployment("100")), (), newest, SPEC) is INTENT


def test_nothing_known_keeps_the_held_version() -> None:
    assert newest_equivalent_base(INTENT, view_of(deployment("100")), (), None, SPEC) is INTENT


def test_a_view_that_is_not_the_intents_version_keeps_the_intent() -> None:
    """The rule compares against the version the intent was captured from, nothing else."""
    assert newest_equivalent_base(INTENT, view_of(deployment("104")), (), deployment("107"), SPEC) is INTENT


def secret(rv: str, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "team", "uid": UID, "resourceVersion": rv},
        "data": {"token": token},
    }


def test_withheld_values_are_never_compared_so_never_rebased() -> None:
    """A rotated token looks the same once withheld; its change shows only as a redaction revision."""
    held = project(secret("100", "b2xk"), FULL)
    rotated = secret("107", "bmV3")
    records = (Redaction("/data/token", 1),)
    assert newest_equivalent_base(INTENT, held.object, records, rotated, FULL) is INTENT
    assert newest_equivalent_base(INTENT, held.object, (), rotated, FULL) is INTENT


def test_the_patch_and_uid_are_kept_and_nothing_is_aliased() -> None:
    newest = deployment("107", ready=1)
    snapshot = copy.deepcopy(newest)
    based = newest_equivalent_base(INTENT, view_of(deployment("100")), (), newest, SPEC)
    assert based.patch is INTENT.patch and based.uid == UID
    assert newest == snapshot, "the shared cached object is never mutated"
    assert based.conditional_patch()["metadata"] == {"uid": UID, "resourceVersion": "107"}


def test_called_again_before_sending_it_moves_past_an_already_newer_base() -> None:
    """The view stays the base the patch was made against, even once the intent moved past it."""
    moved = newest_equivalent_base(INTENT, view_of(deployment("100")), (), deployment("107", ready=1), SPEC)
    again = newest_equivalent_base(moved, view_of(deployment("100")), (), deployment("109", ready=2), SPEC)
    assert again.resource_version == "109"
    assert newest_equivalent_base(moved, view_of(deployment("100")), (), deployment("105", ready=2), SPEC) is moved
    assert newest_equivalent_base(moved, view_of(deployment("100")), (), deployment("109", replicas=9), SPEC) is moved


def test_the_newest_of_the_watch_and_the_read_is_the_candidate() -> None:
    """A Save passes the shared watch's object, then its preflight read's: the read counts only
    when the watch has not delivered its version yet."""
    watch, read = deployment("105"), deployment("107", ready=3)
    assert newest_of(watch, read) is read, "the watch lags the API server"
    assert newest_of(deployment("109"), read)["metadata"]["resourceVersion"] == "109", "the watch is ahead"
    assert newest_of(watch, deployment("105")) is watch, "equal versions keep the watch's"
    assert newest_of(None, read) is read and newest_of(watch, None) is watch
    assert newest_of(None, None) is None and newest_of() is None


@pytest.mark.parametrize("opaque", ["abc", "0107", "", None])
def test_a_read_whose_version_cannot_be_ordered_never_displaces_the_watch(opaque: Any) -> None:
    watch, read = deployment("105"), deployment("0")
    read["metadata"]["resourceVersion"] = opaque
    assert newest_of(watch, read) is watch
    assert newest_of(read, watch) is read, "nor the other way round: only a known newer version counts"


def test_a_lagging_watch_with_a_status_only_read_bases_the_intent_on_the_read() -> None:
    """Under load a controller's status writes outrun the watch: the preflight read's version is
    the person's base when it looks exactly like their view."""
    view = view_of(deployment("100"))
    newest = newest_of(deployment("103", ready=1), deployment("107", ready=2))
    assert newest_equivalent_base(INTENT, view, (), newest, SPEC).resource_version == "107"


def test_a_lagging_watch_with_a_read_changing_the_edited_field_keeps_the_held_version() -> None:
    """A colleague's change to the field the person edited, seen only by the read, is never
    written over: the held version goes out and Kubernetes refuses it."""
    view = view_of(deployment("100"))
    newest = newest_of(deployment("103", ready=1), deployment("107", replicas=5, ready=2))
    assert newest_equivalent_base(INTENT, view, (), newest, SPEC) is INTENT
