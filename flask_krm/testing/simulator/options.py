"""Write options from the query or a body: ``CreateOptions``, ``UpdateOptions``, ``PatchOptions``, ``DeleteOptions``.

Decoded and validated as kube-apiserver does (``ValidateDryRun``, ``ValidatePatchOptions``); a bad
value is a 422 on ``<Kind>Options.meta.k8s.io``, an undecodable one a 400.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .catalog import GroupKind
from .errors import FieldError, bad_request, invalid
from .field_validation import DIRECTIVES as FIELD_VALIDATION_DIRECTIVES
from .strategies import json_type

DRY_RUN_ALL = "All"
FIELD_MANAGER_MAX_LENGTH = 128
APPLY_PATCH_TYPES = ("application/apply-patch+yaml", "application/apply-patch+cbor")
Query = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class WriteOptions:
    """The options of one write: ``dryRun=All`` and the field manager asked for (``""``: the user agent's)."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = ""
    force: bool = False


def options_kind(kind: str) -> GroupKind:
    """``meta.k8s.io`` group kind of an options type (``CreateOptions``, ...)."""
    return GroupKind("meta.k8s.io", kind)


def _parse_bool(text: str) -> bool:
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise bad_request(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _dry_run_errors(values: Sequence[str]) -> list[FieldError]:
    if all(value == DRY_RUN_ALL for value in values):
        return []
    return [FieldError.not_supported("dryRun", list(values), [DRY_RUN_ALL])]


def _field_manager_errors(manager: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if len(manager) > FIELD_MANAGER_MAX_LENGTH:
        errors.append(FieldError.too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH))
    for position, character in enumerate(manager):
        if not character.isprintable():
            errors.append(
                FieldError.invalid(
                    "fieldManager", manager, f"invalid character U+{ord(character):04X} (at position {position})"
                )
            )
    return errors


def write_options(kind: str, query: Query, patch_type: str = "") -> WriteOptions:
    """The ``kind`` (``CreateOptions``, ``UpdateOptions`` or ``PatchOptions``) of a create, update or patch."""
    dry_run = list(query.get("dryRun", []))
    manager = (query.get("fieldManager") or [""])[0]
    force = _parse_bool(query["force"][0]) if query.get("force") else None
    errors: list[FieldError] = []
    if kind == "PatchOptions":
        if patch_type in APPLY_PATCH_TYPES:
            if not manager:
                errors.append(FieldError.required("fieldManager", "is required for apply patch"))
        elif force is not None:
            errors.append(FieldError.forbidden("force", "may not be specified for non-apply patch"))
    errors += _field_manager_errors(manager) + _dry_run_errors(dry_run)
    validation = (query.get("fieldValidation") or [""])[0]
    if validation and validation not in FIELD_VALIDATION_DIRECTIVES:
        errors.append(
            FieldError.not_supported("fieldValidation", validation, ["", *sorted(FIELD_VALIDATION_DIRECTIVES)])
        )
    if errors:
        raise invalid(options_kind(kind), "", errors)
    return WriteOptions(dry_run=bool(dry_run), field_manager=manager, field_validation=validation, force=bool(force))


PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")


@dataclass(frozen=True)
class Preconditions:
    """``DeleteOptions.preconditions``."""

    uid: str | None = None
    resource_version: str | None = None


@dataclass(frozen=True)
class DeleteOptions:
    """The options of a delete or deletecollection, decoded and validated."""

    dry_run: bool = False
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    preconditions: Preconditions = Preconditions()


def _typed(body: Mapping[str, Any], key: str, wanted: type, go_type: str, owner: str = "DeleteOptions") -> Any:
    """``body[key]`` if it has the JSON type the Go field takes (``None`` when absent or null), else the 400.

    The delete handler answers the decoder's own error, without the "cannot be handled as" of other writes.
    """
    value = body.get(key)
    if value is None:
        return None
    fits = isinstance(value, wanted) and not (wanted is int and isinstance(value, bool))
    if not fits:
        raise bad_request(
            f"json: cannot unmarshal {json_type(value)} into Go struct field {owner}.{key} of type {go_type}"
        )
    return value


def _from_body(body: Any) -> tuple[list[str], str | None, bool | None, Preconditions]:
    if not isinstance(body, dict):
        raise bad_request(
            f"couldn't get version/kind; json parse error: json: cannot unmarshal {json_type(body)} into Go value of type "
            'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'
        )
    kind = body.get("kind")
    if kind not in (None, "", "DeleteOptions"):
        version = body.get("apiVersion") or "v1"
        raise bad_request(
            f'no kind "{kind}" is registered for version "{version}" in scheme "pkg/runtime/scheme.go:111"'
        )
    dry_run = _typed(body, "dryRun", list, "[]string") or []
    if not all(isinstance(value, str) for value in dry_run):
        wrong = next(value for value in dry_run if not isinstance(value, str))
        raise bad_request(
            f"json: cannot unmarshal {json_type(wrong)} into Go struct field DeleteOptions.dryRun of type string"
        )
    policy = _typed(body, "propagationPolicy", str, "v1.DeletionPropagation")
    orphan = _typed(body, "orphanDependents", bool, "bool")
    _typed(
        body, "gracePeriodSeconds", int, "int64"
    )  # decoded, then unused: nothing the simulator serves deletes gracefully
    given = _typed(body, "preconditions", dict, "v1.Preconditions") or {}
    uid = _typed(given, "uid", str, "types.UID", "Preconditions.preconditions")
    version = _typed(given, "resourceVersion", str, "string", "Preconditions.preconditions")
    return dry_run, policy, orphan, Preconditions(uid, version)


def _from_query(query: Query) -> tuple[list[str], str | None, bool | None, Preconditions]:
    def first(key: str) -> str | None:
        values = query.get(key)
        return values[0] if values else None

    grace_text, orphan_text = first("gracePeriodSeconds"), first("orphanDependents")
    if grace_text is not None and not re.fullmatch(r"[+-]?[0-9]+", grace_text):
        raise bad_request(f'strconv.ParseInt: parsing "{grace_text}": invalid syntax')
    orphan = (
        None if orphan_text is None else orphan_text != "0" and orphan_text.lower() != "false"
    )  # the query codec's bool
    return list(query.get("dryRun", [])), first("propagationPolicy"), orphan, Preconditions()


def delete_options(query: Query, body: Any) -> DeleteOptions:
    """``DeleteOptions`` from the body when there is one, else from the query, validated (``ValidateDeleteOptions``)."""
    dry_run, policy, orphan, preconditions = _from_query(query) if body is None else _from_body(body)
    errors: list[FieldError] = []
    if orphan is not None and policy is not None:
        errors.append(
            FieldError.invalid(
                "propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"
            )
        )
    if policy is not None and policy not in PROPAGATION_POLICIES:
        errors.append(FieldError.not_supported("propagationPolicy", policy, [*PROPAGATION_POLICIES, "nil"]))
    errors += _dry_run_errors(dry_run)
    if errors:
        raise invalid(options_kind("DeleteOptions"), "", errors)
    return DeleteOptions(bool(dry_run), policy, orphan, preconditions)
