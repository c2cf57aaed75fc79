"""Per-kind write rules: defaults, pruning, generation, subresource resets and validation.

These mirror the registry strategies of kube-apiserver for the types the simulator serves.
Functions take fresh (already copied) mappings and may modify the ``new`` object in place.
"""

from __future__ import annotations

import base64
import copy
import re
from typing import Any

from . import catalog, go_base64, object_meta, structural_schema
from .catalog import ResourceType
from .errors import FieldError
from .scale import SCALE
from .selectors import selector_from_match

Object = dict[str, Any]

METADATA_FIELDS = (
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
)
TOP_LEVEL_FIELDS: dict[str, tuple[str, ...]] = {
    "Namespace": ("spec", "status"),
    "ConfigMap": ("immutable", "data", "binaryData"),
    "Secret": ("immutable", "data", "stringData", "type"),
    "Deployment": ("spec", "status"),
    "Role": ("rules",),
    "ClusterRole": ("rules", "aggregationRule"),
    "RoleBinding": ("subjects", "roleRef"),
    "ClusterRoleBinding": ("subjects", "roleRef"),
    "CustomResourceDefinition": ("spec", "status"),
}

OMITTED_WHEN_EMPTY_METADATA = ("labels", "annotations", "finalizers", "ownerReferences")
OMITTED_WHEN_EMPTY = ("data", "binaryData", "stringData", "subjects")
IMMUTABLE = object_meta.IMMUTABLE
MAX_DATA_SIZE = 1024 * 1024
"""``core.MaxSecretSize``: the most data a ConfigMap or Secret holds (keys not counted)."""
IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"


class DecodeError(ValueError):
    """A body whose field types do not fit the kind (the Go decoder would refuse it).

    ``str()`` is the JSON decoder's message; ``expected`` (a Go kind: ``string``, ``int32``, ``map``,
    ``struct``, or ``""``) and ``value`` let ``converter_message`` word it as the unstructured
    converter does (strategic merge patches are decoded that way).
    """

    def __init__(self, message: str, expected: str = "", value: Any = None) -> None:
        super().__init__(message)
        self.expected = expected
        self.value = value

    def converter_message(self) -> str:
        """The message of ``runtime.DefaultUnstructuredConverter`` for the same mistake."""
        kind = {bool: "bool", int: "int64", float: "float64", str: "string", list: "slice", dict: "map"}.get(
            type(self.value), ""
        )
        if self.expected in ("map", "struct"):
            separator = ": " if self.expected == "struct" else " "
            return f"cannot restore {self.expected} from{separator}{kind}"
        convertible = {"string": ("int64",), "int32": ("int64", "float64")}.get(self.expected, ())
        if kind in convertible:
            return f"cannot convert {kind} to {self.expected}"
        return f"unrecognized type: {self.expected}" if self.expected else str(self)


def tracks_generation(resource: ResourceType) -> bool:
    """Whether objects of this type carry ``metadata.generation``."""
    return resource.custom or resource == catalog.DEPLOYMENTS


def canonical(resource: ResourceType, obj: Object) -> Object:
    """``obj`` without unknown fields (decoding drops them), keys in the order the server writes them.

    Top-level and metadata fields follow the Go struct order; maps (and every custom resource,
    which is encoded from a map) come out with sorted keys.
    """
    order = ("kind", "apiVersion", "metadata") + TOP_LEVEL_FIELDS.get(resource.kind, ("spec", "status"))
    result = {key: obj[key] for key in order if key in obj}
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        result["metadata"] = {key: metadata[key] for key in METADATA_FIELDS if key in metadata}
    if resource.custom:
        return _sorted(result)  # type: ignore[no-any-return]
    result = {key: value if key == "metadata" else _without_empty_lists(value) for key, value in result.items()}
    if resource == catalog.DEPLOYMENTS:
        _deployment_in_struct_order(result)
    for section, keys in ((result.get("metadata"), OMITTED_WHEN_EMPTY_METADATA), (result, OMITTED_WHEN_EMPTY)):
        if not isinstance(section, dict):
            continue
        for key in keys:
            if key in section and section[key] in ({}, [], None):
                del section[key]  # Go's encoder leaves out empty omitempty maps and lists
            elif isinstance(section.get(key), dict):
                section[key] = _sorted(section[key])
    return result


DEPLOYMENT_SPEC_ORDER = (
    "replicas",
    "selector",
    "template",
    "strategy",
    "minReadySeconds",
    "revisionHistoryLimit",
    "paused",
    "progressDeadlineSeconds",
)
DEPLOYMENT_STATUS_ORDER = (
    "observedGeneration",
    "replicas",
    "updatedReplicas",
    "readyReplicas",
    "availableReplicas",
    "unavailableReplicas",
    "terminatingReplicas",
    "conditions",
    "collisionCount",
)
CONDITION_ORDER = ("type", "status", "lastUpdateTime", "lastTransitionTime", "reason", "message")


def _in_order(section: Any, order: tuple[str, ...]) -> Any:
    if not isinstance(section, dict):
        return section
    return {key: section[key] for key in order if key in section} | {
        key: value for key, value in section.items() if key not in order
    }


def _deployment_in_struct_order(deployment: Object) -> None:
    """Spec, status and conditions as the Go structs write them (a condition's times are ``null`` when unset)."""
    if "spec" in deployment:
        deployment["spec"] = _in_order(deployment["spec"], DEPLOYMENT_SPEC_ORDER)
    status = deployment.get("status")
    if isinstance(status, dict):
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            status["conditions"] = [
                _in_order({"lastUpdateTime": None, "lastTransitionTime": None, **item}, CONDITION_ORDER)
                if isinstance(item, dict)
                else item
                for item in conditions
            ]
        deployment["status"] = _in_order(status, DEPLOYMENT_STATUS_ORDER)


KEPT_EMPTY_LISTS = frozenset({"rules", "containers"})
"""List fields of the built-in kinds without ``omitempty``: the only ones Go writes out when empty."""


def _without_empty_lists(value: Any) -> Any:
    """``value`` without empty lists below it: the Go encoder omits empty ``omitempty`` lists."""
    if isinstance(value, dict):
        return {key: _without_empty_lists(item) for key, item in value.items() if item != [] or key in KEPT_EMPTY_LISTS}
    if isinstance(value, list):
        return [_without_empty_lists(item) for item in value]
    return value


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _string_map(obj: Object, path: tuple[str, ...], go_field: str, value_type: str = "string") -> None:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict) or node.get(part) is None:
            return
        node = node[part]
    if not isinstance(node, dict):
        raise DecodeError(
            f"json: cannot unmarshal {json_type(node)} into Go struct field {go_field} of type map[string]{value_type}",
            "map",
            node,
        )
    for value in node.values():
        if not isinstance(value, str):
            raise DecodeError(
                f"json: cannot unmarshal {json_type(value)} into Go struct field {go_field} of type {value_type}",
                "string",
                value,
            )


def _base64_map(obj: Object, key: str, go_field: str) -> None:
    """A ``map[string][]byte``: strings that Go's base64 decoder takes."""
    _string_map(obj, (key,), go_field, "[]uint8")
    for value in (obj.get(key) or {}).values():
        try:
            go_base64.decode(value)
        except go_base64.Base64Error as error:
            raise DecodeError(str(error)) from None


def _typed_list(
    obj: Object,
    key: str,
    go_field: str,
    item_type: str,
    fields: dict[str, tuple[type, str]] | None = None,
    item_struct: str = "",
) -> None:
    """A list of strings (``fields`` is None) or of ``item_struct`` structs with the given typed fields.

    Go names a field by the innermost struct holding it and the whole path: ``ObjectMeta.metadata.finalizers``.
    """
    items = obj.get(key)
    if items is None:
        return
    if not isinstance(items, list):
        raise DecodeError(
            f"json: cannot unmarshal {json_type(items)} into Go struct field {go_field} of type {item_type}",
            "slice",
            items,
        )
    for item in items:
        if fields is None:
            if not isinstance(item, str):
                raise DecodeError(
                    f"json: cannot unmarshal {json_type(item)} into Go struct field {go_field} of type string",
                    "string",
                    item,
                )
            continue
        if not isinstance(item, dict):
            raise DecodeError(
                f"json: cannot unmarshal {json_type(item)} into Go struct field {go_field} of type {item_type.removeprefix('[]')}",
                "struct",
                item,
            )
        for name, (wanted, go_type) in fields.items():
            value = item.get(name)
            if value is not None and (not isinstance(value, wanted) or (wanted is str and isinstance(value, bool))):
                path = go_field.split(".", 1)[1]
                raise DecodeError(
                    f"json: cannot unmarshal {json_type(value)} into Go struct field {item_struct}.{path}.{name} of type {go_type}",
                    go_type,
                    value,
                )


METADATA_STRINGS = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "uid": "types.UID",
    "resourceVersion": "string",
}
QUANTITY_FORMAT = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
QUANTITY_SUFFIXES = frozenset({"", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"})


def _check_quantities(deployment: Object) -> None:
    """``resource.ParseQuantity`` on the containers' resource requests and limits (JSON numbers are quantities too)."""
    pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    for group in ("initContainers", "containers"):
        for container in pod.get(group) or []:
            resources = container.get("resources") if isinstance(container, dict) else None
            for amounts in (
                (resources.get(key) for key in ("limits", "requests")) if isinstance(resources, dict) else ()
            ):
                for amount in (amounts or {}).values() if isinstance(amounts, dict) else ():
                    _parse_quantity(amount)


def _parse_quantity(amount: Any) -> None:
    if isinstance(amount, (int, float)) and not isinstance(amount, bool):
        amount = repr(amount)
    if not isinstance(amount, str) or not re.fullmatch(QUANTITY_FORMAT, amount):
        raise DecodeError(f"quantities must match the regular expression '{QUANTITY_FORMAT}'")
    number, suffix = re.fullmatch(QUANTITY_FORMAT, amount).groups()  # type: ignore[union-attr]
    if number.count(".") > 1 or number.strip("+-") in ("", "."):
        raise DecodeError("unable to parse quantity's numeric part")
    if suffix not in QUANTITY_SUFFIXES and not re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
        raise DecodeError("unable to parse quantity's suffix")


OWNER_REFERENCE_FIELDS: dict[str, tuple[type, str]] = {
    "apiVersion": (str, "string"),
    "kind": (str, "string"),
    "name": (str, "string"),
    "uid": (str, "types.UID"),
    "controller": (bool, "bool"),
    "blockOwnerDeletion": (bool, "bool"),
}


def json_type(value: Any) -> str:
    """How Go's JSON decoder names the type of a value in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def check_types(resource: ResourceType, obj: Object) -> None:
    """Raise ``DecodeError`` when a field of a built-in kind has the wrong JSON type."""
    if not isinstance(obj.get("metadata"), dict):
        raise DecodeError(
            f"json: cannot unmarshal {json_type(obj.get('metadata'))} into Go struct field {resource.kind}.metadata of type v1.ObjectMeta",
            "struct",
            obj.get("metadata"),
        )
    for key, go_type in METADATA_STRINGS.items():
        value = obj["metadata"].get(key)
        if value is not None and not isinstance(value, str):
            raise DecodeError(
                f"json: cannot unmarshal {json_type(value)} into Go struct field ObjectMeta.metadata.{key} of type {go_type}",
                "string",
                value,
            )
    _string_map(obj, ("metadata", "labels"), "ObjectMeta.metadata.labels")
    _string_map(obj, ("metadata", "annotations"), "ObjectMeta.metadata.annotations")
    _typed_list(obj["metadata"], "finalizers", "ObjectMeta.metadata.finalizers", "[]string")
    _typed_list(
        obj["metadata"],
        "ownerReferences",
        "ObjectMeta.metadata.ownerReferences",
        "[]v1.OwnerReference",
        OWNER_REFERENCE_FIELDS,
        "OwnerReference",
    )
    if resource == catalog.CONFIGMAPS:
        _string_map(obj, ("data",), "ConfigMap.data")
        _base64_map(obj, "binaryData", "ConfigMap.binaryData")
    if resource == catalog.SECRETS:
        _base64_map(obj, "data", "Secret.data")
        _string_map(obj, ("stringData",), "Secret.stringData")
    if resource == catalog.DEPLOYMENTS:
        _check_quantities(obj)
    if resource in (catalog.DEPLOYMENTS, SCALE):
        replicas = (obj.get("spec") or {}).get("replicas")
        if replicas is not None and (isinstance(replicas, bool) or not isinstance(replicas, int)):
            raise DecodeError(
                f"json: cannot unmarshal {json_type(replicas)} into Go struct field {resource.kind}Spec.spec.replicas of type int32",
                "int32",
                replicas,
            )


def normalize_bytes(resource: ResourceType, obj: Object) -> None:
    """Rewrite ``[]byte`` fields as Go encodes what it decoded (line breaks gone, padding bits cleared)."""
    key = "data" if resource == catalog.SECRETS else "binaryData" if resource == catalog.CONFIGMAPS else ""
    if key and isinstance(obj.get(key), dict):
        obj[key] = {name: base64.b64encode(go_base64.decode(value)).decode() for name, value in obj[key].items()}


def prepare_for_create(resource: ResourceType, obj: Object) -> None:
    """Apply defaults and create-time resets (status of a new object, generation, Secret stringData)."""
    metadata = obj["metadata"]
    if tracks_generation(resource):
        metadata["generation"] = 1
    if resource == catalog.NAMESPACES:
        metadata.setdefault("labels", {})["kubernetes.io/metadata.name"] = metadata["name"]
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    elif resource == catalog.SECRETS:
        obj.setdefault("type", "Opaque")
        _fold_string_data(obj)
    elif resource == catalog.DEPLOYMENTS:
        obj["spec"] = _deployment_defaults(obj.get("spec") or {})
        obj["status"] = {}
    elif resource.status_subresource:
        obj.pop("status", None)


def prepare_for_update(resource: ResourceType, new: Object, old: Object, subresource: str) -> None:
    """Keep what this endpoint may not change and bump ``generation`` on spec changes."""
    if subresource == "status":
        if resource.custom:
            status = new.get("status")
            new.clear()
            new.update(copy.deepcopy(old))
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
        else:
            new["spec"] = copy.deepcopy(old.get("spec"))
            _set_labels(new, old["metadata"].get("labels"))
        return
    if resource == catalog.SECRETS:
        _fold_string_data(new)
    if resource == catalog.NAMESPACES:
        new["status"] = copy.deepcopy(old.get("status"))
        new.setdefault("metadata", {}).setdefault("labels", {})["kubernetes.io/metadata.name"] = old["metadata"]["name"]
    if resource.status_subresource:
        if "status" in old:
            new["status"] = copy.deepcopy(old["status"])
        else:
            new.pop("status", None)
    if resource == catalog.DEPLOYMENTS:
        new["spec"] = _deployment_defaults(new.get("spec") or {})
        changed = new.get("spec") != old.get("spec") or new["metadata"].get("annotations") != old["metadata"].get(
            "annotations"
        )
    elif resource.custom:
        ignored = {"metadata", "status"} if resource.status_subresource else {"metadata"}
        changed = {k: v for k, v in new.items() if k not in ignored} != {
            k: v for k, v in old.items() if k not in ignored
        }
    else:
        changed = False
    if tracks_generation(resource):
        new["metadata"]["generation"] = old["metadata"].get("generation", 1) + (1 if changed else 0)


def _set_labels(obj: Object, labels: dict[str, str] | None) -> None:
    if labels is None:
        obj["metadata"].pop("labels", None)
    else:
        obj["metadata"]["labels"] = copy.deepcopy(labels)


def _fold_string_data(secret: Object) -> None:
    string_data = secret.pop("stringData", None) or {}
    if string_data:
        data = dict(secret.get("data") or {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(value.encode()).decode()
        secret["data"] = data


def _image_pull_policy(image: str) -> str:
    name = image.rsplit("/", 1)[-1]
    if "@" in name:
        return "IfNotPresent"
    tag = name.split(":", 1)[1] if ":" in name else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def _deployment_defaults(spec: dict[str, Any]) -> dict[str, Any]:
    """``SetDefaults_Deployment`` and the pod template defaults a real server fills in."""
    spec = copy.deepcopy(spec)
    spec.setdefault("replicas", 1)
    strategy = spec.setdefault("strategy", {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", "25%")
        rolling.setdefault("maxSurge", "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    pod = spec.setdefault("template", {}).setdefault("spec", {})
    for container in pod.get("containers") or []:
        if isinstance(container, dict):
            for port in container.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
            container.setdefault("resources", {})
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("imagePullPolicy", _image_pull_policy(str(container.get("image", ""))))
    pod.setdefault("restartPolicy", "Always")
    pod.setdefault("terminationGracePeriodSeconds", 30)
    pod.setdefault("dnsPolicy", "ClusterFirst")
    pod.setdefault("securityContext", {})
    pod.setdefault("schedulerName", "default-scheduler")
    return spec


def _name_check(resource: ResourceType) -> object_meta.NameCheck:
    if resource == catalog.NAMESPACES:
        return object_meta.dns_label_name
    if resource.group == catalog.RBAC_GROUP:
        return object_meta.rbac_name
    return object_meta.dns_subdomain_name


def _object_meta(resource: ResourceType, metadata: Object) -> list[FieldError]:
    """The kind's ``ValidateObjectMeta``: built-in kinds add the rule on unqualified finalizer names."""
    errors = object_meta.object_meta(metadata, resource.namespaced, _name_check(resource))
    return errors if resource.custom else errors + object_meta.kube_finalizers(metadata.get("finalizers") or [])


def _object_meta_update(resource: ResourceType, new: Object, old: Object) -> list[FieldError]:
    """The kind's ``ValidateObjectMetaUpdate`` (the finalizer rule again for built-in kinds)."""
    errors = object_meta.object_meta_update(new, old)
    return errors if resource.custom else errors + object_meta.kube_finalizers(new.get("finalizers") or [])


def _validate_data(resource: ResourceType, obj: Object) -> list[FieldError]:
    """``ValidateConfigMap``'s and ``ValidateSecret``'s data rules: keys, no key in both maps, 1 MiB in all."""
    errors: list[FieldError] = []
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    total = 0
    for key, value in data.items():
        errors += [FieldError.invalid(f"data[{key}]", key, message) for message in object_meta.config_map_key(key)]
        if key in binary:
            errors.append(FieldError.invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        total += len(go_base64.decode(value)) if resource == catalog.SECRETS else len(value.encode())
    for key, value in binary.items():
        errors += [
            FieldError.invalid(f"binaryData[{key}]", key, message) for message in object_meta.config_map_key(key)
        ]
        total += len(go_base64.decode(value))
    if total > MAX_DATA_SIZE:
        errors.append(
            FieldError.too_long("data" if resource == catalog.SECRETS else "[]", MAX_DATA_SIZE)
        )  # Go prints the empty path so
    return errors


def _validate_deployment(obj: Object) -> list[FieldError]:
    spec = obj.get("spec") or {}
    errors: list[FieldError] = []
    replicas = spec.get("replicas", 1)
    if replicas < 0:
        errors.append(FieldError.invalid("spec.replicas", replicas, "must be greater than or equal to 0"))
    selector = spec.get("selector")
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector:
        errors.append(FieldError.required("spec.selector"))
    elif not selector.get("matchLabels") and not selector.get("matchExpressions"):
        errors.append(FieldError.invalid("spec.selector", selector, "empty selector is invalid for deployment"))
    elif not selector_from_match(selector).matches(template_labels):
        errors.append(
            FieldError.invalid(
                "spec.template.metadata.labels", template_labels, "`selector` does not match template `labels`"
            )
        )
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
    if not containers:
        errors.append(FieldError.required("spec.template.spec.containers"))
    else:
        errors += _validate_containers(containers, "spec.template.spec.containers")
    errors += _validate_strategy(spec.get("strategy") or {})
    for field in ("minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            errors.append(FieldError.invalid(f"spec.{field}", value, "must be greater than or equal to 0"))
    deadline, ready = spec.get("progressDeadlineSeconds"), spec.get("minReadySeconds") or 0
    if isinstance(deadline, int) and isinstance(ready, int) and deadline <= ready:
        errors.append(
            FieldError.invalid("spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds")
        )
    return errors


PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")


def _validate_containers(containers: list[Any], path: str) -> list[FieldError]:
    """``validateContainers``' common rules: a DNS label name, unique, an image, ports in range with a known protocol."""
    errors: list[FieldError] = []
    seen: set[str] = set()
    for index, container in enumerate(containers):
        at = f"{path}[{index}]"
        if not isinstance(container, dict):
            continue
        name = container.get("name") or ""
        if not name:
            errors.append(FieldError.required(f"{at}.name"))
        else:
            errors += [FieldError.invalid(f"{at}.name", name, message) for message in object_meta.dns1123_label(name)]
        if not container.get("image"):
            errors.append(FieldError.required(f"{at}.image"))
        for port_index, port in enumerate(container.get("ports") or []):
            if isinstance(port, dict):
                errors += _validate_port(port, f"{at}.ports[{port_index}]")
        if name in seen:
            errors.append(FieldError.duplicate(f"{at}.name", name))
        seen.add(name)
    return errors


def _validate_port(port: Object, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    number = port.get("containerPort") or 0
    if not number:
        errors.append(FieldError.required(f"{path}.containerPort"))
    elif isinstance(number, int) and not 1 <= number <= 65535:
        errors.append(FieldError.invalid(f"{path}.containerPort", number, "must be between 1 and 65535, inclusive"))
    protocol = port.get("protocol") or ""
    if protocol not in PORT_PROTOCOLS:
        errors.append(FieldError.not_supported(f"{path}.protocol", protocol, list(PORT_PROTOCOLS)))
    return errors


def _validate_strategy(strategy: Object) -> list[FieldError]:
    """``ValidateDeploymentStrategy``: ``Recreate`` takes no ``rollingUpdate``; another type shows the internal struct."""
    kind, rolling = strategy.get("type"), strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [
                FieldError.forbidden(
                    "spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'"
                )
            ]
        return []
    if kind == "RollingUpdate":
        return []
    internal = (
        None
        if not isinstance(rolling, dict)
        else {"MaxUnavailable": rolling.get("maxUnavailable"), "MaxSurge": rolling.get("maxSurge")}
    )
    return [
        FieldError.not_supported(
            "spec.strategy", {"Type": kind or "", "RollingUpdate": internal}, ["Recreate", "RollingUpdate"]
        )
    ]


def _validate_binding(obj: Object) -> list[FieldError]:
    role_ref = obj.get("roleRef") or {}
    errors: list[FieldError] = []
    if role_ref.get("kind") not in ("Role", "ClusterRole"):
        errors.append(FieldError.not_supported("roleRef.kind", role_ref.get("kind", ""), ["ClusterRole", "Role"]))
    if not role_ref.get("name"):
        errors.append(FieldError.required("roleRef.name"))
    return errors


def validate(resource: ResourceType, obj: Object) -> list[FieldError]:
    """Create-time validation: the kind's ``Validate``."""
    errors = _object_meta(resource, obj["metadata"])
    if resource in (catalog.CONFIGMAPS, catalog.SECRETS):
        errors += _validate_data(resource, obj)
    if resource == catalog.SECRETS:
        errors += _validate_secret_type(obj)
    elif resource == catalog.DEPLOYMENTS:
        errors += _validate_deployment(obj)
    elif resource in (catalog.ROLE_BINDINGS, catalog.CLUSTER_ROLE_BINDINGS):
        errors += _validate_binding(obj)
    elif resource.custom:
        errors += structural_schema.validate(catalog.openapi_schema(resource), obj)
    return errors


def validate_update(resource: ResourceType, new: Object, old: Object, subresource: str = "") -> list[FieldError]:
    """Update validation in kube-apiserver's order: the common metadata rules, then the kind's own ``ValidateUpdate``."""
    unique: dict[str, FieldError] = {}
    for error in _update_errors(resource, new, old, subresource):
        unique.setdefault(str(error), error)  # a cause found by several checks is reported once
    return list(unique.values())


def _update_errors(resource: ResourceType, new: Object, old: Object, subresource: str) -> list[FieldError]:
    new_meta, old_meta = new["metadata"], old["metadata"]
    common = object_meta.object_meta(new_meta, resource.namespaced, object_meta.path_segment_name)
    common += object_meta.object_meta_update(new_meta, old_meta)
    metadata_update = _object_meta_update(resource, new_meta, old_meta)
    if resource in (catalog.CONFIGMAPS, catalog.SECRETS):
        return common + metadata_update + _data_update_errors(resource, new, old) + validate(resource, new)
    if resource == catalog.DEPLOYMENTS and subresource == "status":
        return common + metadata_update  # status counts are not checked (see docs/real-kubernetes.md)
    if resource == catalog.DEPLOYMENTS:
        selector = (new.get("spec") or {}).get("selector")
        immutable = (
            []
            if selector == (old.get("spec") or {}).get("selector")
            else [FieldError.invalid("spec.selector", selector, IMMUTABLE)]
        )
        return common + metadata_update + _validate_deployment(new) + immutable
    if resource.group == catalog.RBAC_GROUP:
        return common + validate(resource, new) + metadata_update
    if resource.custom:
        return common + metadata_update + structural_schema.validate(catalog.openapi_schema(resource), new)
    return common + metadata_update


SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def _validate_secret_type(secret: Object) -> list[FieldError]:
    """``ValidateSecret``'s rules per type: the keys a type needs (their contents are not checked here)."""
    secret_type, data = secret.get("type"), secret.get("data") or {}
    if secret_type == "kubernetes.io/service-account-token":
        if not (secret["metadata"].get("annotations") or {}).get("kubernetes.io/service-account.name"):
            return [FieldError.required("metadata.annotations[kubernetes.io/service-account.name]")]
        return []
    if secret_type == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            return [FieldError.required("data[username]"), FieldError.required("data[password]")]
        return []
    required = SECRET_REQUIRED_KEYS.get(str(secret_type), ())
    if secret_type in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson", "kubernetes.io/ssh-auth"):
        return [FieldError.required(f"data[{key}]") for key in required[:1] if not data.get(key)]
    return [FieldError.required(f"data[{key}]") for key in required if key not in data]


def _data_update_errors(resource: ResourceType, new: Object, old: Object) -> list[FieldError]:
    """A Secret's type never changes; an immutable ConfigMap's or Secret's data neither."""
    errors: list[FieldError] = []
    if resource == catalog.SECRETS and new.get("type") != old.get("type"):
        errors.append(FieldError.invalid("type", new.get("type"), IMMUTABLE))
    if old.get("immutable"):
        if not new.get("immutable"):
            errors.append(FieldError.forbidden("immutable", IMMUTABLE_WHEN_SET))
        if new.get("data") != old.get("data"):
            errors.append(FieldError.forbidden("data", IMMUTABLE_WHEN_SET))
        if resource == catalog.CONFIGMAPS and new.get("binaryData") != old.get("binaryData"):
            errors.append(FieldError.forbidden("binaryData", IMMUTABLE_WHEN_SET))
    return errors


def field_values(resource: ResourceType, obj: Object) -> dict[str, str]:
    """The values field selectors see for ``obj``."""
    metadata = obj["metadata"]
    values = {"metadata.name": metadata["name"]}
    if resource.namespaced:
        values["metadata.namespace"] = metadata.get("namespace", "")
    if resource == catalog.SECRETS:
        values["type"] = obj.get("type", "")
    if resource == catalog.NAMESPACES:
        values["status.phase"] = (obj.get("status") or {}).get("phase", "")
    return values
