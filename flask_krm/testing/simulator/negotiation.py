"""``Accept`` negotiation and the response transformations it selects, as kube-apiserver does them.

Served: JSON and YAML, and the ``meta.k8s.io`` conversions ``as=PartialObjectMetadata``,
``as=PartialObjectMetadataList`` and ``as=Table`` (versions ``v1`` and ``v1beta1``). Protobuf is
never chosen: an ``Accept`` that allows only protobuf is 406, one that also allows JSON gets JSON.
Built-in kinds first pass the route's check (``text/html`` is 406 there, as go-restful answers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .catalog import ResourceType
from .errors import ApiError
from .tables import include_object, partial_object_metadata, table

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
SERVED = (JSON, YAML, PROTOBUF)
STREAMS = (f"{JSON};stream=watch", f"{PROTOBUF};stream=watch")
META_VERSIONS = ("v1", "v1beta1")
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
TABLE = "Table"

Object = dict[str, Any]


@dataclass(frozen=True)
class Representation:
    """What a response is encoded as: ``media_type``, converted to ``target`` (``meta.k8s.io/<version>``) if set."""

    media_type: str = JSON
    target: str = ""
    version: str = ""
    include_object: str = ""

    @property
    def api_version(self) -> str:
        return f"meta.k8s.io/{self.version}"


PLAIN_JSON = Representation()


@dataclass(frozen=True)
class _Clause:
    type: str
    subtype: str
    params: Mapping[str, str]
    quality: float


def _clauses(header: str) -> list[_Clause]:
    """``goautoneg.ParseAccept``: clauses by quality, then specific before wildcards (stable)."""
    clauses: list[_Clause] = []
    for part in header.split(","):
        media_range, *parameters = part.strip(" ").split(";")
        type_and_subtype = media_range.split("/")
        main = type_and_subtype[0].strip(" ")
        if len(type_and_subtype) == 1 and main == "*":
            sub = "*"
        elif len(type_and_subtype) == 2:
            sub = type_and_subtype[1].strip(" ")
        else:
            continue
        params: dict[str, str] = {}
        quality = 1.0
        for parameter in parameters:
            name, equals, value = parameter.partition("=")
            if not equals:
                continue
            if name.strip(" ") == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
            else:
                params[name.strip(" ")] = value.strip(" ")
        clauses.append(_Clause(main, sub, params, quality))
    return sorted(clauses, key=lambda clause: (-clause.quality, clause.type == "*", clause.subtype == "*"))


def _route_accepts(header: str, produces: tuple[str, ...]) -> bool:
    """go-restful's ``matchesAccept``: some listed type, parameters dropped, equals one the route produces."""
    for part in header.split(","):
        media_type = part.split(";", 1)[0].strip(" \t")
        if media_type == "*/*" or media_type in produces:
            return True
    return False


def route_not_acceptable(produces: tuple[str, ...]) -> ApiError:
    """go-restful's 406 for an ``Accept`` the route of a built-in kind does not produce."""
    return ApiError(
        406, "NotAcceptable", "406: Not Acceptable\n\nAvailable representations: " + ", ".join(produces), {}
    )


def not_acceptable(accepted: tuple[str, ...]) -> ApiError:
    """The handler's 406 (``NewNotAcceptableError``)."""
    return ApiError(406, "NotAcceptable", "only the following media types are accepted: " + ", ".join(accepted))


def _conversion(params: Mapping[str, str], media_type: str) -> Representation | None:
    """The representation one matching clause asks for, or ``None`` when the endpoint cannot serve it."""
    stream = params.get("stream", "")
    if stream and (stream != "watch" or media_type == YAML):
        return None
    if params.get("sv", "") not in ("", "v1"):
        return None
    if not any(name in params for name in ("as", "g", "v")):
        return Representation(media_type)
    target, group, version = params.get("as", ""), params.get("g", ""), params.get("v", "")
    if group != "meta.k8s.io" or version not in META_VERSIONS:
        return None
    if target == TABLE and media_type in (JSON, YAML):
        return Representation(media_type, target, version)
    if target in (PARTIAL, PARTIAL_LIST):
        return Representation(media_type, target, version)
    return None


def negotiate(
    header: str | None,
    resource: ResourceType,
    query: Mapping[str, str],
    *,
    collection_read: bool = False,
    watch: bool = False,
) -> Representation:
    """The representation ``Accept: header`` selects for a request on ``resource``; 406 when there is none.

    ``collection_read``: a list or watch, whose route also produces the watch stream types.
    """
    if not header:
        return PLAIN_JSON
    produces = SERVED + STREAMS if collection_read else SERVED
    if not resource.custom and not _route_accepts(header, produces):
        raise route_not_acceptable(produces)
    for clause in _clauses(header):
        for media_type in SERVED:
            main, sub = media_type.split("/")
            if not (clause.type == "*" and clause.subtype == "*") and not (
                clause.type == main and clause.subtype in (sub, "*")
            ):
                continue
            chosen = _conversion(clause.params, media_type)
            if chosen is None:
                continue
            if chosen.media_type == PROTOBUF:
                break  # the simulator cannot encode protobuf: look for another clause
            if watch and chosen.media_type != JSON:
                raise not_acceptable(STREAMS)
            if chosen.target == TABLE:
                return Representation(chosen.media_type, TABLE, chosen.version, include_object(query))
            return chosen
    raise not_acceptable(SERVED)


def error_media_type(header: str | None) -> str:
    """How a failure is encoded: YAML when that is what ``Accept`` prefers, else JSON."""
    for clause in _clauses(header or ""):
        if clause.type == "application" and clause.subtype == "yaml" and not clause.params:
            return YAML
        if (clause.type, clause.subtype) in (("application", "json"), ("application", "*"), ("*", "*")):
            return JSON
    return JSON


def _go_type(resource: ResourceType, is_list: bool) -> str:
    """The Go type kube-apiserver names in its 406 messages (``*core.ConfigMap``, ``*unstructured.UnstructuredList``)."""
    if resource.custom:
        return "*unstructured.UnstructuredList" if is_list else "*unstructured.Unstructured"
    package = resource.group.split(".")[0] or "core"
    return f"*{package}.{resource.list_kind if is_list else resource.kind}"


def _list_metadata(body: Object) -> Object:
    given = body.get("metadata") or {}
    metadata: Object = {"resourceVersion": given.get("resourceVersion", "")}
    if given.get("continue"):
        metadata["continue"] = given["continue"]
    if "remainingItemCount" in given:
        metadata["remainingItemCount"] = given["remainingItemCount"]
    return metadata


def transform(body: Object, representation: Representation, resource: ResourceType, *, headers: bool = True) -> Object:
    """``body`` (an object, a list or a Status) converted as ``representation`` asks; 406 when it cannot be."""
    target = representation.target
    if not target or body.get("kind") == "Status":
        return body
    is_list = "items" in body
    if target == PARTIAL:
        if is_list:
            raise ApiError(
                406,
                "NotAcceptable",
                f"you requested {PARTIAL}, but the requested object is a list ({_go_type(resource, True)})",
            )
        return partial_object_metadata(body, representation.api_version)
    if target == PARTIAL_LIST:
        if not is_list:
            raise ApiError(
                406,
                "NotAcceptable",
                f"you requested {PARTIAL_LIST}, but the requested object is not a list ({_go_type(resource, False)})",
            )
        items = [partial_object_metadata(item, representation.api_version) for item in body["items"]]
        return {
            "kind": PARTIAL_LIST,
            "apiVersion": representation.api_version,
            "metadata": _list_metadata(body),
            "items": items,
        }
    if is_list:
        return table(
            resource,
            body["items"],
            _list_metadata(body),
            representation.api_version,
            representation.include_object,
            headers,
        )
    metadata = {"resourceVersion": (body.get("metadata") or {}).get("resourceVersion", "")}
    return table(resource, [body], metadata, representation.api_version, representation.include_object, headers)
