"""Write options from the query or a body: ``CreateOptions``, ``UpdateOptions``, ``PatchOptions``, ``DeleteOptions``.

Decoded and validated as kube-apiserver does (``ValidateDryRun``, ``ValidatePatchOptions``); a bad
value is a 422 on ``<Kind>Options.meta.k8s.io``, an undecodable one a 400.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .catalog import GroupKind
from .errors import FieldError, bad_request, invalid

DRY_RUN_ALL = "All"
FIELD_MANAGER_MAX_LENGTH = 128
APPLY_PATCH_TYPES = ("application/apply-patch+yaml", "application/apply-patch+cbor")
Query = Mapping[str, Sequence[str]]


@dataclass(frozen=True)
class WriteOptions:
    """The options of one write: ``dryRun=All`` and the field manager asked for (``""``: the user agent's)."""

    dry_run: bool = False
    field_manager: str = ""


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
        errors.append(FieldError("FieldValueTooLong", "fieldManager", f"may not be more than {FIELD_MANAGER_MAX_LENGTH} bytes"))
    for position, character in enumerate(manager):
        if not character.isprintable():
            errors.append(FieldError.invalid("fieldManager", manager, f"invalid character U+{ord(character):04X} (at position {position})"))
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
    if errors:
        raise invalid(options_kind(kind), "", errors)
    return WriteOptions(dry_run=bool(dry_run), field_manager=manager)


def delete_options(query: Query, body: Any) -> tuple[WriteOptions, Mapping[str, Any]]:
    """``DeleteOptions`` from the body when there is one, else from the query; with the body's preconditions."""
    if body is None:
        dry_run = list(query.get("dryRun", []))
        preconditions: Mapping[str, Any] = {}
    else:
        if not isinstance(body, dict):
            raise bad_request('DeleteOptions in version "v1" cannot be handled as a DeleteOptions: the body is not a JSON object')
        given = body.get("dryRun") or []
        if not isinstance(given, list) or not all(isinstance(value, str) for value in given):
            raise bad_request('DeleteOptions in version "v1" cannot be handled as a DeleteOptions: dryRun is not a list of strings')
        dry_run = given
        preconditions = body.get("preconditions") or {}
    errors = _dry_run_errors(dry_run)
    if errors:
        raise invalid(options_kind("DeleteOptions"), "", errors)
    return WriteOptions(dry_run=bool(dry_run)), preconditions
