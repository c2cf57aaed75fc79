"""``meta.k8s.io`` Tables (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``), as kube-apiserver prints them.

Columns and cells follow kube-apiserver's printers for each kind the simulator serves (the wide
ones included, priority 1), the default convertor (Name, Created At) for kinds without a printer
and the custom resource convertor (Name, Age) for Flunders. Each row carries the object as
``PartialObjectMetadata`` (``includeObject=Metadata``, the default), whole (``Object``) or not at all
(``None``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from .catalog import ResourceType
from .errors import bad_request
from .selectors import selector_string

Object = dict[str, Any]
Cells = list[Any]

INCLUDE_OBJECT = ("Metadata", "Object", "None", "")

NAME_DOC = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a "
    "client to request the generation of an appropriate name automatically. Name is primarily intended for creation "
    "idempotence and configuration definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
CREATED_DOC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed "
    "to be set in happens-before order across separate operations. Clients may not set this value. It is represented in "
    "RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
CONFIG_MAP_DATA_DOC = (
    "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values "
    "with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys "
    "in the BinaryData field, this is enforced during validation process."
)
SECRET_TYPE_DOC = (
    "Used to facilitate programmatic handling of secret data. More info: "
    "https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
)
SECRET_DATA_DOC = (
    "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized "
    "form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value "
    "here. Described in https://tools.ietf.org/html/rfc4648#section-4"
)
ROLE_REF_DOC = (
    "roleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef "
    "cannot be resolved, the Authorizer must return an error."
)
CLUSTER_ROLE_REF_DOC = (
    "roleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the "
    "Authorizer must return an error."
)
UPDATED_REPLICAS_DOC = (
    "Total number of non-terminating pods targeted by this deployment that have the desired template spec."
)
AVAILABLE_REPLICAS_DOC = (
    "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment."
)
DEPLOYMENT_SELECTOR_DOC = (
    "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this "
    "deployment. It must match the pod template's labels."
)


def _column(
    name: str, description: str, column_type: str = "string", priority: int = 0, column_format: str = ""
) -> Object:
    return {
        "name": name,
        "type": column_type,
        "format": column_format,
        "description": description,
        "priority": priority,
    }


NAME = _column("Name", NAME_DOC, column_format="name")
AGE = _column("Age", CREATED_DOC)
CREATED_AT = _column("Created At", CREATED_DOC, "date")


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration``: ``42s``, ``3m7s``, ``5h``, ``3d4h``, ``2y31d``..."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return f"{minutes}m" if whole % 60 == 0 else f"{minutes}m{whole % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _age(obj: Object, now: datetime) -> str:
    created = obj["metadata"].get("creationTimestamp")
    if not created:
        return "<unknown>"
    since = now - datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return human_duration(since.total_seconds())


def _subjects(binding: Object) -> Cells:
    users: list[str] = []
    groups: list[str] = []
    accounts: list[str] = []
    for subject in binding.get("subjects") or []:
        kind, name = subject.get("kind"), subject.get("name", "")
        if kind == "ServiceAccount":
            accounts.append(f"{subject.get('namespace', '')}/{name}")
        elif kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
    return [", ".join(users), ", ".join(groups), ", ".join(accounts)]


def _deployment_cells(obj: Object, now: datetime) -> Cells:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [
        obj["metadata"].get("name", ""),
        f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
        status.get("updatedReplicas", 0),
        status.get("availableReplicas", 0),
        _age(obj, now),
        ",".join(container.get("name", "") for container in containers),
        ",".join(container.get("image", "") for container in containers),
        selector_string(spec.get("selector")),
    ]


def _definition_cells(obj: Object, now: datetime) -> Cells:
    spec = obj.get("spec") or {}
    versions = sorted(
        version["name"] + ("(storage)" if version.get("storage") else "")
        for version in spec.get("versions") or []
        if version.get("served")
    )
    established = any(
        condition.get("type") == "Established" and condition.get("status") == "True"
        for condition in (obj.get("status") or {}).get("conditions") or []
    )
    return [
        obj["metadata"].get("name", ""),
        spec.get("scope", ""),
        ",".join(versions),
        obj["metadata"].get("creationTimestamp", ""),
        spec.get("group", ""),
        (spec.get("names") or {}).get("kind", ""),
        ",".join((spec.get("names") or {}).get("shortNames") or []),
        established,
    ]


def _binding_columns(scope: str) -> list[Object]:
    role_doc = ROLE_REF_DOC if scope == "roleBinding" else CLUSTER_ROLE_REF_DOC
    return [
        NAME,
        _column("Role", role_doc),
        AGE,
        _column("Users", f"Users in the {scope}", priority=1),
        _column("Groups", f"Groups in the {scope}", priority=1),
        _column("ServiceAccounts", f"ServiceAccounts in the {scope}", priority=1),
    ]


def _binding_cells(obj: Object, now: datetime) -> Cells:
    role = obj.get("roleRef") or {}
    return [
        obj["metadata"].get("name", ""),
        f"{role.get('kind', '')}/{role.get('name', '')}",
        _age(obj, now),
        *_subjects(obj),
    ]


Printer = tuple[list[Object], Callable[[Object, datetime], Cells]]

PRINTERS: dict[str, Printer] = {
    "Namespace": (
        [NAME, _column("Status", "The status of the namespace"), AGE],
        lambda obj, now: [obj["metadata"].get("name", ""), (obj.get("status") or {}).get("phase", ""), _age(obj, now)],
    ),
    "ConfigMap": (
        [NAME, _column("Data", CONFIG_MAP_DATA_DOC), AGE],
        lambda obj, now: [
            obj["metadata"].get("name", ""),
            len(obj.get("data") or {}) + len(obj.get("binaryData") or {}),
            _age(obj, now),
        ],
    ),
    "Secret": (
        [NAME, _column("Type", SECRET_TYPE_DOC), _column("Data", SECRET_DATA_DOC), AGE],
        lambda obj, now: [
            obj["metadata"].get("name", ""),
            obj.get("type", ""),
            len(obj.get("data") or {}),
            _age(obj, now),
        ],
    ),
    "Deployment": (
        [
            NAME,
            _column("Ready", "Number of the pod with ready state"),
            _column("Up-to-date", UPDATED_REPLICAS_DOC),
            _column("Available", AVAILABLE_REPLICAS_DOC),
            AGE,
            _column("Containers", "Names of each container in the template.", priority=1),
            _column("Images", "Images referenced by each container in the template.", priority=1),
            _column("Selector", DEPLOYMENT_SELECTOR_DOC, priority=1),
        ],
        _deployment_cells,
    ),
    "RoleBinding": (_binding_columns("roleBinding"), _binding_cells),
    "ClusterRoleBinding": (_binding_columns("clusterRoleBinding"), _binding_cells),
    "CustomResourceDefinition": (
        [
            NAME,
            _column("Scope", "Cluster/Namespaced"),
            _column("Versions", "Served versions"),
            CREATED_AT,
            _column("Group", "API group", priority=1),
            _column("Kind", "CustomResource kind", priority=1),
            _column("ShortNames", "Short names", priority=1),
            _column("Established", "Established status", "boolean", 1),
        ],
        _definition_cells,
    ),
}
DEFAULT_PRINTER: Printer = (
    [NAME, CREATED_AT],
    lambda obj, now: [obj["metadata"].get("name", ""), obj["metadata"].get("creationTimestamp", "")],
)
CUSTOM_RESOURCE_PRINTER: Printer = (
    [NAME, _column("Age", CREATED_DOC, "date")],
    lambda obj, now: [obj["metadata"].get("name", ""), _age(obj, now)],
)


def include_object(query: Mapping[str, str]) -> str:
    """``TableOptions.includeObject``; 400 for a value kube-apiserver does not know."""
    value = query.get("includeObject", "")
    if value not in INCLUDE_OBJECT:
        raise bad_request(
            f'Unable to convert to Table as requested: includeObject: Invalid value: "{value}": '
            "must be 'Metadata', 'Object', 'None', or empty"
        )
    return value


def partial_object_metadata(obj: Object, api_version: str) -> Object:
    """``obj`` as a ``PartialObjectMetadata`` of ``api_version`` (``meta.k8s.io/v1``)."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": copy.deepcopy(obj.get("metadata") or {}),
    }


def table(
    resource: ResourceType,
    objects: list[Object],
    metadata: Object,
    api_version: str,
    included: str,
    headers: bool = True,
    now: datetime | None = None,
) -> Object:
    """The Table of ``objects`` (one for a single object), with list ``metadata``; ``headers=False`` leaves the columns out."""
    columns, cells = PRINTERS.get(resource.kind, CUSTOM_RESOURCE_PRINTER if resource.custom else DEFAULT_PRINTER)
    moment = now or datetime.now(timezone.utc)
    rows = []
    for obj in objects:
        if included == "Object":
            shown: Object | None = {"kind": resource.kind, "apiVersion": resource.api_version, **obj}
        elif included == "None":
            shown = None
        else:
            shown = partial_object_metadata(obj, api_version)
        rows.append({"cells": cells(obj, moment), "object": shown})
    definitions = copy.deepcopy(columns) if headers else None  # a watch sends the columns with its first event only
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": metadata,
        "columnDefinitions": definitions,
        "rows": rows,
    }
