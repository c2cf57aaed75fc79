"""``metadata`` validation as ``k8s.io/apimachinery`` v0.37 words it (``ValidateObjectMeta`` and its parts).

Names, generateName, labels, annotations (keys and total size), owner references and finalizers,
with kube-apiserver's messages: one cause per failed rule, lengths counted in bytes, Go's anchored
regular expressions (a trailing newline does not match). Two generations of its functions coexist there:
object names and data keys are checked by ``util/validation`` ("must be no more than 253
characters"), label keys and values by ``api/validate/content`` ("... 63 bytes").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from .errors import FieldError

Object = dict[str, Any]
NameCheck = Callable[[str, bool], list[str]]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
QUALIFIED_NAME_MAX = 63
LABEL_VALUE_MAX = 63
TOTAL_ANNOTATION_SIZE = 256 * 1024
MAX_GENERATED_PREFIX = 63 - 5
"""``names.SimpleNameGenerator`` keeps at most 58 characters of ``generateName`` before its 5 random ones."""

_DNS1123_LABEL_FORMAT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FORMAT = _DNS1123_LABEL_FORMAT + "(\\." + _DNS1123_LABEL_FORMAT + ")*"
_QUALIFIED_NAME_FORMAT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FORMAT = "(" + _QUALIFIED_NAME_FORMAT + ")?"
_CONFIG_KEY_FORMAT = "[-._a-zA-Z0-9]+"
_QUALIFIED_NAME_MESSAGE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
IMMUTABLE = "field is immutable"
_FINALIZER_ORPHAN = "orphan"
_FINALIZER_FOREGROUND = "foregroundDeletion"


def _fits(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def _size(value: str) -> int:
    return len(value.encode())


def regex_error(message: str, pattern: str, *examples: str) -> str:
    """``validation.RegexError``: the rule, its examples (joined with Go's doubled space) and the regex."""
    if not examples:
        return f"{message} (regex used for validation is '{pattern}')"
    shown = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{pattern}')"


def max_length_error(length: int, unit: str = "characters") -> str:
    """``MaxLenError``: ``util/validation`` counts characters, ``api/validate/content`` bytes (both measure bytes)."""
    return f"must be no more than {length} {unit}"


def dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``: a valid subdomain that is no label must have dots, and is told so."""
    errors = [max_length_error(DNS1123_LABEL_MAX)] if _size(value) > DNS1123_LABEL_MAX else []
    if _fits(_DNS1123_LABEL_FORMAT, value):
        return errors
    if _fits(_DNS1123_SUBDOMAIN_FORMAT, value):
        errors.append("must not contain dots")
    else:
        errors.append(
            regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an "
                "alphanumeric character",
                _DNS1123_LABEL_FORMAT,
                "my-name",
                "123-abc",
            )
        )
    return errors


def dns1123_subdomain(value: str, unit: str = "characters") -> list[str]:
    """``IsDNS1123Subdomain``."""
    errors = [max_length_error(DNS1123_SUBDOMAIN_MAX, unit)] if _size(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _fits(_DNS1123_SUBDOMAIN_FORMAT, value):
        errors.append(
            regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
                "end with an alphanumeric character",
                _DNS1123_SUBDOMAIN_FORMAT,
                "example.com",
            )
        )
    return errors


def qualified_name(value: str) -> list[str]:
    """``content.IsLabelKey``: an optional DNS subdomain prefix and ``/``, then a name part of at most 63 bytes."""
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return [
            "a valid label key "
            + regex_error(_QUALIFIED_NAME_MESSAGE, _QUALIFIED_NAME_FORMAT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + message for message in dns1123_subdomain(prefix, "bytes")]
    if not name:
        errors.append("name part must be non-empty")
    elif _size(name) > QUALIFIED_NAME_MAX:
        errors.append("name part " + max_length_error(QUALIFIED_NAME_MAX, "bytes"))
    if not _fits(_QUALIFIED_NAME_FORMAT, name):
        errors.append(
            "name part " + regex_error(_QUALIFIED_NAME_MESSAGE, _QUALIFIED_NAME_FORMAT, "MyName", "my.name", "123-abc")
        )
    return errors


def label_value(value: str) -> list[str]:
    """``content.IsLabelValue``."""
    errors = [max_length_error(LABEL_VALUE_MAX, "bytes")] if _size(value) > LABEL_VALUE_MAX else []
    if not _fits(_LABEL_VALUE_FORMAT, value):
        errors.append(
            regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
                "end with an alphanumeric character",
                _LABEL_VALUE_FORMAT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errors


def config_map_key(value: str) -> list[str]:
    """``IsConfigMapKey`` (ConfigMap and Secret data keys)."""
    errors = [max_length_error(DNS1123_SUBDOMAIN_MAX)] if _size(value) > DNS1123_SUBDOMAIN_MAX else []
    if not _fits(_CONFIG_KEY_FORMAT, value):
        errors.append(
            regex_error(
                "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
                _CONFIG_KEY_FORMAT,
                "key.name",
                "KEY_NAME",
                "key-name",
            )
        )
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _mask_trailing_dash(name: str) -> str:
    """``maskTrailingDash``: a generateName may end in ``-`` (Go drops the character before it too)."""
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def dns_subdomain_name(name: str, prefix: bool) -> list[str]:
    """``NameIsDNSSubdomain``: most kinds' names."""
    return dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def dns_label_name(name: str, prefix: bool) -> list[str]:
    """``NameIsDNSLabel``: namespace names."""
    return dns1123_label(_mask_trailing_dash(name) if prefix else name)


def path_segment_name(name: str, prefix: bool) -> list[str]:
    """``ValidatePathSegmentName``: the name check every update runs (a prefix only must not contain ``/`` or ``%``)."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{forbidden}'" for forbidden in ("/", "%") if forbidden in name]


def rbac_name(name: str, prefix: bool) -> list[str]:
    """``ValidateRBACName``: a path segment, checked whole even as a prefix."""
    return path_segment_name(name, False)


def generated_name_prefix(generate_name: str) -> str:
    """The part of ``generateName`` a generated name keeps."""
    return generate_name[:MAX_GENERATED_PREFIX] if len(generate_name) > MAX_GENERATED_PREFIX else generate_name


def object_meta(metadata: Object, namespaced: bool, name_check: NameCheck) -> list[FieldError]:
    """``ValidateObjectMetaAccessor``: every rule of a new object's metadata, in kube-apiserver's order."""
    errors: list[FieldError] = []
    generate_name = metadata.get("generateName") or ""
    if generate_name:
        errors += [
            FieldError.invalid("metadata.generateName", generate_name, message)
            for message in name_check(generate_name, True)
        ]
    name = metadata.get("name") or ""
    if not name:
        errors.append(FieldError.required("metadata.name", "name or generateName is required"))
    else:
        errors += [FieldError.invalid("metadata.name", name, message) for message in name_check(name, False)]
    namespace = metadata.get("namespace") or ""
    if namespaced:
        if not namespace:
            errors.append(FieldError.required("metadata.namespace"))
        else:
            errors += [
                FieldError.invalid("metadata.namespace", namespace, message)
                for message in dns_label_name(namespace, False)
            ]
    elif namespace:
        errors.append(FieldError.forbidden("metadata.namespace", "not allowed on this type"))
    return errors + metadata_maps(metadata) + validate_finalizers(metadata.get("finalizers") or [])


def object_meta_update(new: Object, old: Object) -> list[FieldError]:
    """``ValidateObjectMetaAccessorUpdate``: no new finalizers while deleting, identity and deletion fields kept, maps valid."""
    errors: list[FieldError] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(new.get("finalizers") or []) - set(old.get("finalizers") or []))
        if added:
            errors.append(
                FieldError.forbidden(
                    "metadata.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new finalizers {go_string_list(added)}",
                )
            )
    for key in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if new.get(key) != old.get(key):
            errors.append(FieldError.invalid(f"metadata.{key}", new.get(key), IMMUTABLE))
    return errors + metadata_maps(new)


def metadata_maps(metadata: Object) -> list[FieldError]:
    """Labels, annotations and owner references: the rules checked again on every update."""
    return (
        validate_labels(metadata.get("labels") or {}, "metadata.labels")
        + validate_annotations(metadata.get("annotations") or {})
        + validate_owner_references(metadata.get("ownerReferences") or [])
    )


def validate_labels(given: dict[str, str], path: str) -> list[FieldError]:
    """``ValidateLabels``: each key a qualified name, each value a label value."""
    errors: list[FieldError] = []
    for key, value in given.items():
        errors += [FieldError.invalid(path, key, message) for message in qualified_name(key)]
        errors += [FieldError.invalid(path, value, message) for message in label_value(value)]
    return errors


def validate_annotations(given: dict[str, str]) -> list[FieldError]:
    """``ValidateAnnotations``: keys are qualified names in any case; keys and values together at most 256 KiB."""
    errors: list[FieldError] = []
    for key in given:
        errors += [FieldError.invalid("metadata.annotations", key, message) for message in qualified_name(key.lower())]
    if sum(_size(key) + _size(value) for key, value in given.items()) > TOTAL_ANNOTATION_SIZE:
        errors.append(FieldError.too_long("metadata.annotations", TOTAL_ANNOTATION_SIZE))
    return errors


def validate_owner_references(references: list[Object]) -> list[FieldError]:
    """``ValidateOwnerReferences``: apiVersion, kind, name and uid present; Events never owners; one controller."""
    path = "metadata.ownerReferences"
    errors: list[FieldError] = []
    controller = ""
    for index, reference in enumerate(references):
        item = f"{path}[{index}]"
        api_version, kind = reference.get("apiVersion") or "", reference.get("kind") or ""
        if not api_version:
            errors.append(FieldError.required(f"{item}.apiVersion", "must not be empty"))
        elif not _group_version_parses(api_version):
            errors.append(
                FieldError.invalid(f"{item}.apiVersion", api_version, "must be <group>/<version> or <version>")
            )
        for key in ("kind", "name", "uid"):
            if not reference.get(key):
                errors.append(FieldError.required(f"{item}.{key}", "must not be empty"))
        if api_version.removeprefix("/") == "v1" and kind == "Event":
            errors.append(
                FieldError.invalid(item, _as_encoded(reference), "/v1, Kind=Event is disallowed from being an owner")
            )
        if reference.get("controller") is True:
            current = f"{kind}/{reference.get('name') or ''}"
            if controller:
                errors.append(
                    FieldError.invalid(
                        path,
                        [_as_encoded(item) for item in references],
                        f'Only one reference can have Controller set to true. Found "true" in references for {controller} and {current}',
                    )
                )
            else:
                controller = current
    return errors


def _group_version_parses(api_version: str) -> bool:
    """``schema.ParseGroupVersion`` succeeds with a version: ``v1`` or ``group/version``."""
    parts = api_version.split("/")
    return len(parts) <= 2 and bool(parts[-1])


STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


def kube_finalizers(names: list[str]) -> list[FieldError]:
    """``validateKubeFinalizerName``: built-in kinds also refuse unqualified finalizer names other than the standard ones."""
    return [
        FieldError.invalid(
            f"metadata.finalizers[{index}]", name, "name is neither a standard finalizer name nor is it fully qualified"
        )
        for index, name in enumerate(names)
        if "/" not in name and name not in STANDARD_FINALIZERS
    ]


def validate_finalizers(names: list[str]) -> list[FieldError]:
    """``ValidateFinalizers``: qualified names, and not both garbage-collection policies."""
    errors: list[FieldError] = []
    for name in names:
        errors += [FieldError.invalid("metadata.finalizers", name, message) for message in qualified_name(name)]
    if _FINALIZER_ORPHAN in names and _FINALIZER_FOREGROUND in names:
        errors.append(
            FieldError.invalid(
                "metadata.finalizers",
                names,
                f"finalizer {_FINALIZER_ORPHAN} and {_FINALIZER_FOREGROUND} cannot be both set",
            )
        )
    return errors


def go_string_list(values: list[str]) -> str:
    """A ``[]string`` printed with ``%#v``."""
    return "[]string{" + ", ".join(json.dumps(value) for value in values) + "}"


def _as_encoded(reference: Object) -> Object:
    """An owner reference as Go encodes it (bad values are shown as JSON): fields in struct order, empty pointers left out."""
    order = ("apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion")
    return {key: reference.get(key) or "" for key in order[:4]} | {
        key: reference[key] for key in order[4:] if reference.get(key) is not None
    }
