"""List and watch query options, their validation, and LIST responses with pagination."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import strategies
from .catalog import GroupKind, ResourceType
from .errors import (
    ApiError,
    FieldError,
    bad_request,
    expired,
    invalid,
    too_large_resource_version,
)
from .selectors import FieldSelector, LabelSelector, SelectorError, parse_field_selector, parse_label_selector
from .store import Object, ObjectStore, key_path, object_key

CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)
LIST_EXPIRED = "The resourceVersion for the provided list is too old."
LIST_OPTIONS_KIND = GroupKind("meta.k8s.io", "ListOptions")


def _parse_bool(text: str) -> bool:
    if text in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if text in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise bad_request(f'strconv.ParseBool: parsing "{text}": invalid syntax')


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None


@dataclass(frozen=True)
class ListOptions:
    """The query parameters of a LIST or WATCH request."""

    watch: bool = False
    resource_version: str = ""
    resource_version_match: str = ""
    limit: int = 0
    continue_token: str = ""
    label_selector: LabelSelector = LabelSelector()
    field_selector: FieldSelector = FieldSelector()
    timeout_seconds: int | None = None
    allow_watch_bookmarks: bool = False
    send_initial_events: bool | None = None

    @classmethod
    def parse(cls, query: Mapping[str, str], resource: ResourceType) -> ListOptions:
        """Decode and validate the query; 400 for undecodable values, 422 for invalid combinations."""
        try:
            labels = parse_label_selector(query.get("labelSelector", ""))
            fields = parse_field_selector(
                query.get("fieldSelector", ""), resource.supported_field_labels(), resource.unsupported_field_label
            )
        except SelectorError as error:
            raise bad_request(str(error)) from None
        send_initial = query.get("sendInitialEvents")
        timeout = query.get("timeoutSeconds")
        options = cls(
            watch=_parse_bool(query.get("watch", "false")),
            resource_version=query.get("resourceVersion", ""),
            resource_version_match=query.get("resourceVersionMatch", ""),
            limit=_parse_int(query.get("limit", "0")),
            continue_token=query.get("continue", ""),
            label_selector=labels,
            field_selector=fields,
            timeout_seconds=_parse_int(timeout) if timeout else None,
            allow_watch_bookmarks=_parse_bool(query.get("allowWatchBookmarks", "false")),
            send_initial_events=None if send_initial is None else _parse_bool(send_initial),
        )
        errors = options._watch_errors() if options.watch else options._list_errors()
        if errors:
            raise invalid(LIST_OPTIONS_KIND, "", errors)
        return options

    def _list_errors(self) -> list[FieldError]:
        errors: list[FieldError] = []
        match = self.resource_version_match
        if match:
            if not self.resource_version:
                errors.append(
                    FieldError.forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden unless resourceVersion is provided"
                    )
                )
            if self.continue_token:
                errors.append(
                    FieldError.forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                    )
                )
            if match not in ("Exact", "NotOlderThan"):
                errors.append(FieldError.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
            if match == "Exact" and self.resource_version == "0":
                errors.append(
                    FieldError.forbidden(
                        "resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'
                    )
                )
        if self.send_initial_events is not None:
            errors.append(FieldError.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
        return errors

    def _watch_errors(self) -> list[FieldError]:
        errors: list[FieldError] = []
        match = self.resource_version_match
        if self.send_initial_events is not None and match != "NotOlderThan":
            errors.append(
                FieldError.forbidden(
                    "resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
                )
            )
        if match:
            if self.send_initial_events is None:
                errors.append(
                    FieldError.forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    )
                )
            if match != "NotOlderThan":
                errors.append(FieldError.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
            if self.continue_token:
                errors.append(
                    FieldError.forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided"
                    )
                )
        return errors

    def requested_version(self) -> int | None:
        """``resourceVersion`` as a number; ``None`` when unset, empty or ``"0"``."""
        if self.resource_version in ("", "0"):
            return None
        if not self.resource_version.isdigit():
            raise bad_request(
                f'invalid resource version: resourceVersion: Invalid value: "{self.resource_version}": '
                f'strconv.ParseUint: parsing "{self.resource_version}": invalid syntax'
            )
        return int(self.resource_version)

    @property
    def paginated(self) -> bool:
        """Whether ``limit`` applies: the watch cache serves ``resourceVersion=0`` whole, ignoring it."""
        return self.limit > 0 and (self.resource_version != "0" or bool(self.continue_token))

    @property
    def unfiltered(self) -> bool:
        """Whether neither a label nor a field selector narrows the request."""
        return self.label_selector.empty and self.field_selector.empty

    def selects(self, resource: ResourceType, obj: Object) -> bool:
        """Whether ``obj`` passes the label and field selectors."""
        labels = obj["metadata"].get("labels") or {}
        return self.label_selector.matches(labels) and self.field_selector.matches(
            strategies.field_values(resource, obj)
        )


def encode_continue(start: str, resource_version: int) -> str:
    """A continue token (base64url JSON, as kube-apiserver writes them)."""
    token = json.dumps({"v": "meta.k8s.io/v1", "rv": resource_version, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(token.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[str, int]:
    """The start key and resourceVersion of a continue token (-1: continue at the latest version)."""
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        start, version = data["start"], int(data["rv"])
        if data.get("v") != "meta.k8s.io/v1":
            raise ValueError(f"unexpected version {data.get('v')!r}")
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError) as error:
        raise bad_request(f"invalid continue token: continue key is not valid: {error}") from None
    if version == 0:
        raise bad_request(
            "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        )
    if not start:
        raise bad_request(
            "invalid continue token: continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        )
    return start, version


def list_body(
    store: ObjectStore, resource: ResourceType, namespace: str | None, options: ListOptions
) -> dict[str, Any]:
    """The ``<Kind>List`` for a LIST request, served as of the version the options ask for."""
    start = ""
    if options.continue_token:
        start, version = decode_continue(options.continue_token)
        if options.resource_version not in ("", "0"):
            raise bad_request("specifying resource version is not allowed when using continue")
        if version < 0:
            version = store.resource_version
        try:
            items = store.items_at(resource, namespace, version)
        except ApiError:
            error = expired(CONTINUE_EXPIRED)
            error.status_metadata["continue"] = encode_continue(start, -1)
            raise error from None
    else:
        requested = options.requested_version()
        exact = options.resource_version_match == "Exact" or (
            not options.resource_version_match and options.limit > 0 and requested is not None
        )
        if requested is not None and requested > store.resource_version:
            raise too_large_resource_version(requested, store.resource_version)
        if exact and requested is not None:
            try:
                version, items = requested, store.items_at(resource, namespace, requested)
            except ApiError:
                raise expired(LIST_EXPIRED) from None
        else:
            version, items = store.resource_version, store.items(resource, namespace)
    selected = [obj for obj in items if key_path(object_key(obj)) >= start and options.selects(resource, obj)]
    metadata: dict[str, Any] = {"resourceVersion": str(version)}
    if options.paginated and len(selected) > options.limit:
        remaining = len(selected) - options.limit
        selected = selected[: options.limit]
        metadata["continue"] = encode_continue(key_path(object_key(selected[-1])) + "\x00", version)
        if options.unfiltered:
            metadata["remainingItemCount"] = remaining
    items = [list_item(resource, obj) for obj in selected]
    if resource.custom:  # an unstructured list: sorted keys, and "continue" always present
        metadata = {"continue": "", **metadata}
        return {
            "apiVersion": resource.api_version,
            "items": items,
            "kind": resource.list_kind,
            "metadata": dict(sorted(metadata.items())),
        }
    return {"kind": resource.list_kind, "apiVersion": resource.api_version, "metadata": metadata, "items": items}


def list_item(resource: ResourceType, obj: Object) -> Object:
    """A list member: built-in kinds leave out ``kind`` and ``apiVersion`` as kube-apiserver does."""
    if resource.custom:
        return obj
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}
