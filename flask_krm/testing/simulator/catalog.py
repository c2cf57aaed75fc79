"""The resource types the simulator serves: names, scope, kinds and URL layout."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class GroupResource:
    """``schema.GroupResource``; prints as ``configmaps`` or ``deployments.apps``."""

    group: str
    resource: str

    def __str__(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource


@dataclass(frozen=True)
class GroupKind:
    """``schema.GroupKind``; prints as ``ConfigMap`` or ``Deployment.apps``."""

    group: str
    kind: str

    def __str__(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


STORED_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CUSTOM_RESOURCE_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One served resource (``APIResource`` plus what the server needs to store it)."""

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    custom: bool = False
    status_subresource: bool = False
    scale_subresource: bool = False
    stored: bool = True
    read_only: bool = False
    field_labels: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    storage_version: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> GroupResource:
        return GroupResource(self.group, self.plural)

    @property
    def group_kind(self) -> GroupKind:
        return GroupKind(self.group, self.kind)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def verbs(self) -> tuple[str, ...]:
        """The verbs served, in the order discovery lists them (a custom resource's are not sorted)."""
        if not self.stored:
            return ("create",)
        if self.read_only:
            return READ_VERBS
        if self.custom:
            return CUSTOM_RESOURCE_VERBS
        return tuple(verb for verb in STORED_VERBS if verb != "deletecollection" or self.kind != "Namespace")

    @property
    def storage_version_hash(self) -> str:
        """Discovery's ``storageVersionHash``: the first 8 bytes of SHA-256 of the storage group/version/kind, base64."""
        storage = f"{self.group}/{self.storage_version or self.version}/{self.kind}"
        return base64.b64encode(hashlib.sha256(storage.encode()).digest()[:8]).decode()

    def supported_field_labels(self) -> tuple[str, ...]:
        """Field selector labels (``metadata.namespace`` only for namespaced types)."""
        scoped = ("metadata.name", "metadata.namespace") if self.namespaced else ("metadata.name",)
        return scoped + self.field_labels

    def unsupported_field_label(self, label: str) -> str:
        """The 400 message for a field selector on ``label`` (types without own field labels word it differently)."""
        if self.field_labels or self.custom:
            return f"field label not supported: {label}"
        return f'"{label}" is not a known field selector: only "metadata.name", "metadata.namespace"'

    def storage_key(self, namespace: str, name: str) -> str:
        """The etcd key kube-apiserver would store the object under (it shows in some error messages)."""
        prefix = f"/registry/{self.group}/{self.plural}" if self.custom else f"/registry/{self.plural}"
        return f"{prefix}/{namespace}/{name}" if namespace else f"{prefix}/{name}"

    def discovery(self) -> list[dict[str, Any]]:
        """This type's entries of an ``APIResourceList`` (the resource and its status)."""
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        if self.stored:
            entry["storageVersionHash"] = self.storage_version_hash
        entries = [entry]
        if self.scale_subresource:
            entries.append(
                {
                    "name": f"{self.plural}/scale",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
        if self.status_subresource:
            entries.append(
                {
                    "name": f"{self.plural}/status",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": self.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        return entries

    @property
    def subresources(self) -> tuple[str, ...]:
        """The subresources served below each object."""
        return ("scale",) * self.scale_subresource + ("status",) * self.status_subresource


NAMESPACES = ResourceType(
    "", "v1", "namespaces", "namespace", "Namespace", False, ("ns",), field_labels=("status.phase",)
)
CONFIGMAPS = ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",))
SECRETS = ResourceType("", "v1", "secrets", "secret", "Secret", True, field_labels=("type",))
DEPLOYMENTS = ResourceType(
    "apps",
    "v1",
    "deployments",
    "deployment",
    "Deployment",
    True,
    ("deploy",),
    status_subresource=True,
    scale_subresource=True,
    categories=("all",),
)
RBAC_GROUP = "rbac.authorization.k8s.io"
ROLES = ResourceType(RBAC_GROUP, "v1", "roles", "role", "Role", True)
ROLE_BINDINGS = ResourceType(RBAC_GROUP, "v1", "rolebindings", "rolebinding", "RoleBinding", True)
CLUSTER_ROLES = ResourceType(RBAC_GROUP, "v1", "clusterroles", "clusterrole", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = ResourceType(
    RBAC_GROUP, "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", False
)
AUTHORIZATION_GROUP = "authorization.k8s.io"
SUBJECT_ACCESS_REVIEWS = ResourceType(
    AUTHORIZATION_GROUP, "v1", "subjectaccessreviews", "subjectaccessreview", "SubjectAccessReview", False, stored=False
)
SELF_SUBJECT_ACCESS_REVIEWS = ResourceType(
    AUTHORIZATION_GROUP,
    "v1",
    "selfsubjectaccessreviews",
    "selfsubjectaccessreview",
    "SelfSubjectAccessReview",
    False,
    stored=False,
)
CUSTOM_RESOURCE_DEFINITIONS = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "customresourcedefinition",
    "CustomResourceDefinition",
    False,
    ("crd", "crds"),
    read_only=True,
    categories=("api-extensions",),
    storage_version="v1beta1",
)
FLUNDERS = ResourceType(
    "wardle.example.com", "v1alpha1", "flunders", "flunder", "Flunder", True, custom=True, status_subresource=True
)

FLUNDER_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "flunders.wardle.example.com"},
    "spec": {
        "group": "wardle.example.com",
        "scope": "Namespaced",
        "names": {"plural": "flunders", "singular": "flunder", "kind": "Flunder", "listKind": "FlunderList"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "description": "A Flunder names another Flunder and the ports it serves.",
                        "type": "object",
                        "properties": {
                            "spec": {
                                "description": "What the Flunder should be.",
                                "type": "object",
                                "properties": {
                                    "reference": {
                                        "description": "The name of another Flunder in the same namespace (empty: none).",
                                        "type": "string",
                                        "maxLength": 63,
                                        "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$",
                                    },
                                    "ports": {
                                        "description": "The ports the Flunder serves, one per name.",
                                        "type": "array",
                                        "x-kubernetes-list-type": "map",
                                        "x-kubernetes-list-map-keys": ["name"],
                                        "items": {
                                            "type": "object",
                                            "required": ["name"],
                                            "properties": {
                                                "name": {"description": "The port's name.", "type": "string"},
                                                "port": {
                                                    "description": "The port number.",
                                                    "type": "integer",
                                                    "format": "int32",
                                                    "minimum": 1,
                                                    "maximum": 65535,
                                                },
                                                "protocol": {
                                                    "description": "The port's protocol (TCP when absent).",
                                                    "type": "string",
                                                    "enum": ["TCP", "UDP", "SCTP"],
                                                },
                                            },
                                        },
                                    },
                                },
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                            "status": {
                                "description": "What the Flunder is.",
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": True,
                            },
                        },
                    }
                },
            }
        ],
    },
}
"""The CustomResourceDefinition of ``FLUNDERS``: served (read-only) by the simulator, installable on a real server."""


CUSTOM_RESOURCE_DEFINITIONS_SERVED = {FLUNDERS: FLUNDER_CRD}
"""The definition behind each custom resource type the simulator serves."""


def openapi_schema(resource: ResourceType) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of a custom resource type's served version."""
    definition = CUSTOM_RESOURCE_DEFINITIONS_SERVED[resource]
    version = next(item for item in definition["spec"]["versions"] if item["name"] == resource.version)
    schema = version["schema"]["openAPIV3Schema"]
    assert isinstance(schema, dict)
    return schema


def established(definition: dict[str, Any], timestamp: str) -> dict[str, Any]:
    """``definition`` with the status kube-apiserver gives a CRD once its names are accepted."""
    spec = definition["spec"]
    conditions = [
        {
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": timestamp,
            "reason": "NoConflicts",
            "message": "no conflicts found",
        },
        {
            "type": "Established",
            "status": "True",
            "lastTransitionTime": timestamp,
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        },
    ]
    stored = [version["name"] for version in spec["versions"] if version.get("storage")]
    return {
        **definition,
        "status": {"conditions": conditions, "acceptedNames": spec["names"], "storedVersions": stored},
    }


class Catalog:
    """The served resource types, looked up by group, version and plural name."""

    def __init__(self, types: tuple[ResourceType, ...]) -> None:
        self.types = types
        self._by_path = {(t.group, t.version, t.plural): t for t in types}

    def find(self, group: str, version: str, plural: str) -> ResourceType | None:
        """The type served at ``/apis/<group>/<version>/<plural>`` (core: group ``""``), if any."""
        return self._by_path.get((group, version, plural))

    def group_versions(self) -> dict[str, list[str]]:
        """Group name to its served versions, in registration order (core is ``""``)."""
        served: dict[str, list[str]] = {}
        for resource_type in self.types:
            versions = served.setdefault(resource_type.group, [])
            if resource_type.version not in versions:
                versions.append(resource_type.version)
        return served

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        """The types of one group version, in registration order."""
        return [t for t in self.types if t.group == group and t.version == version]


DEFAULT_CATALOG = Catalog(
    (
        NAMESPACES,
        CONFIGMAPS,
        SECRETS,
        DEPLOYMENTS,
        ROLES,
        ROLE_BINDINGS,
        CLUSTER_ROLES,
        CLUSTER_ROLE_BINDINGS,
        SUBJECT_ACCESS_REVIEWS,
        SELF_SUBJECT_ACCESS_REVIEWS,
        CUSTOM_RESOURCE_DEFINITIONS,
        FLUNDERS,
    )
)
