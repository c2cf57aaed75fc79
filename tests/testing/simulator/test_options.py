"""Write and delete options decoded and validated as kube-apiserver does: 422 on the options kind for
bad values, 400 with the Go decoder's words for undecodable ones."""

from __future__ import annotations

import typing as t

import pytest

from flask_krm.testing.simulator.errors import ApiError
from flask_krm.testing.simulator.options import (
    DeleteOptions,
    Preconditions,
    WriteOptions,
    delete_options,
    write_options,
)
from tests.testing.simulator.conftest import refusal

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"


def causes(error: ApiError) -> list[tuple[str, str]]:
    return [(cause["field"], cause["message"]) for cause in (error.details or {})["causes"]]


def test_write_options_from_the_query() -> None:
    query = {"dryRun": ["All"], "fieldManager": ["me"], "fieldValidation": ["Strict"], "force": ["true"]}
    assert write_options("PatchOptions", query, APPLY) == WriteOptions(True, "me", "Strict", True)
    assert write_options("CreateOptions", {}) == WriteOptions()


def test_an_apply_patch_needs_a_field_manager_and_only_apply_may_force() -> None:
    error = refusal(lambda: write_options("PatchOptions", {}, APPLY))
    assert error.code == 422 and error.details is not None and error.details["group"] == "meta.k8s.io"
    assert error.details["kind"] == "PatchOptions"
    assert causes(error) == [("fieldManager", "Required value: is required for apply patch")]
    forced = refusal(lambda: write_options("PatchOptions", {"force": ["false"]}, MERGE))
    assert causes(forced) == [("force", "Forbidden: may not be specified for non-apply patch")]
    assert write_options("UpdateOptions", {"force": ["1"]}).force is True


def test_every_bad_option_is_named_at_once() -> None:
    query = {"dryRun": ["All", "Some"], "fieldManager": ["a\tb"], "fieldValidation": ["Loud"]}
    error = refusal(lambda: write_options("CreateOptions", query))
    assert causes(error) == [
        ("fieldManager", 'Invalid value: "a\\tb": invalid character U+0009 (at position 1)'),
        ("dryRun", 'Unsupported value: ["All","Some"]: supported values: "All"'),
        ("fieldValidation", 'Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"'),
    ]


def test_a_field_manager_may_be_128_characters_long() -> None:
    assert write_options("CreateOptions", {"fieldManager": ["m" * 128]}).field_manager == "m" * 128
    error = refusal(lambda: write_options("CreateOptions", {"fieldManager": ["m" * 129]}))
    assert causes(error) == [("fieldManager", "Too long: may not be more than 128 bytes")]


def test_an_undecodable_boolean_is_a_bad_request() -> None:
    error = refusal(lambda: write_options("PatchOptions", {"force": ["yes"]}, APPLY))
    assert (error.code, error.message) == (400, 'strconv.ParseBool: parsing "yes": invalid syntax')


def test_delete_options_from_the_query() -> None:
    query = {"dryRun": ["All"], "propagationPolicy": ["Orphan"], "gracePeriodSeconds": ["-5"]}
    assert delete_options(query, None) == DeleteOptions(True, "Orphan", None)
    assert delete_options({"orphanDependents": ["False"]}, None).orphan_dependents is False
    assert delete_options({"orphanDependents": ["yes"]}, None).orphan_dependents is True
    error = refusal(lambda: delete_options({"gracePeriodSeconds": ["1.5"]}, None))
    assert (error.code, error.message) == (400, 'strconv.ParseInt: parsing "1.5": invalid syntax')


def test_delete_options_from_the_body_win_over_the_query() -> None:
    body = {
        "kind": "DeleteOptions",
        "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u", "resourceVersion": "7"},
    }
    assert delete_options({"propagationPolicy": ["Orphan"]}, body) == DeleteOptions(
        False, "Foreground", None, Preconditions("u", "7")
    )
    assert delete_options({}, {"gracePeriodSeconds": None, "dryRun": None}) == DeleteOptions()


def test_a_delete_cannot_both_orphan_and_propagate() -> None:
    error = refusal(lambda: delete_options({}, {"orphanDependents": True, "propagationPolicy": "Sideways"}))
    assert error.details is not None and error.details["kind"] == "DeleteOptions"
    assert causes(error) == [
        ("propagationPolicy", 'Invalid value: "Sideways": orphanDependents and deletionPropagation cannot be both set'),
        (
            "propagationPolicy",
            'Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"',
        ),
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"dryRun": "All"}, "json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type []string"),
        ({"dryRun": [1]}, "json: cannot unmarshal number into Go struct field DeleteOptions.dryRun of type string"),
        (
            {"orphanDependents": 1},
            "json: cannot unmarshal number into Go struct field DeleteOptions.orphanDependents of type bool",
        ),
        (
            {"gracePeriodSeconds": True},
            "json: cannot unmarshal bool into Go struct field DeleteOptions.gracePeriodSeconds of type int64",
        ),
        (
            {"preconditions": {"uid": 3}},
            "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid of type types.UID",
        ),
        ({"kind": "Pod"}, 'no kind "Pod" is registered for version "v1" in scheme "pkg/runtime/scheme.go:111"'),
    ],
)
def test_an_undecodable_delete_body_is_the_decoder_s_400(body: dict[str, t.Any], message: str) -> None:
    error = refusal(lambda: delete_options({}, body))
    assert (error.code, error.message) == (400, message)


def test_a_delete_body_that_is_no_object_is_a_400() -> None:
    error = refusal(lambda: delete_options({}, ["All"]))
    assert error.code == 400 and error.message.startswith(
        "couldn't get version/kind; json parse error: json: cannot unmarshal array"
    )
