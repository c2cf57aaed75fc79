"""The strategic-merge tags of the built-in kinds: which lists merge, and by which key."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.patch_meta import MERGE, NO_STRATEGY, PatchMeta, patch_meta


def at(meta: PatchMeta, *path: str) -> PatchMeta:
    for key in path:
        meta = meta.lookup(key)
    return meta


@pytest.mark.parametrize(
    ("path", "merge_key"),
    [
        (("spec", "template", "spec", "containers"), "name"),
        (("spec", "template", "spec", "containers", "env"), "name"),
        (("spec", "template", "spec", "initContainers", "ports"), "containerPort"),
        (("spec", "template", "spec", "containers", "volumeMounts"), "mountPath"),
        (("spec", "template", "spec", "volumes"), "name"),
        (("spec", "template", "metadata", "ownerReferences"), "uid"),
        (("metadata", "ownerReferences"), "uid"),
        (("status", "conditions"), "type"),
    ],
)
def test_a_deployment_s_tagged_lists_merge_by_their_key(path: tuple[str, ...], merge_key: str) -> None:
    meta = at(patch_meta("Deployment"), *path)
    assert (meta.strategy, meta.merge_key) == (MERGE, merge_key)


def test_finalizers_merge_as_a_set() -> None:
    meta = at(patch_meta("Namespace"), "metadata", "finalizers")
    assert (meta.strategy, meta.merge_key) == (MERGE, "")


@pytest.mark.parametrize(
    "path",
    [
        ("spec", "replicas"),
        ("spec", "template", "spec", "containers", "args"),
        ("spec", "template", "spec", "containers", "command"),
        ("metadata", "labels"),
        ("spec", "selector", "matchLabels"),
    ],
)
def test_untagged_fields_are_replaced(path: tuple[str, ...]) -> None:
    assert at(patch_meta("Deployment"), *path) == NO_STRATEGY


def test_a_kind_without_tags_of_its_own_still_has_metadata_s() -> None:
    config_map = patch_meta("ConfigMap")
    assert at(config_map, "metadata", "ownerReferences").merge_key == "uid"
    assert at(config_map, "data") == NO_STRATEGY
    assert at(patch_meta("Flunder"), "status", "conditions") == NO_STRATEGY
