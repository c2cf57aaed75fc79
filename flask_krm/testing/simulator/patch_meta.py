"""The ``patchStrategy`` and ``patchMergeKey`` struct tags of the built-in kinds the simulator serves.

Strategic merge patch needs them: a list tagged ``merge`` merges by its merge key (or, for a list
of scalars, as a set) instead of being replaced. Tags are those of ``k8s.io/api`` v0.37 (the
``retainKeys`` strategy only shapes client-side diffs and is left out). Custom resources have no
such tags, which is why kube-apiserver refuses strategic merge patches of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

MERGE = "merge"


@dataclass(frozen=True)
class PatchMeta:
    """How a field merges (``strategy``, ``merge_key``) and the metadata of its struct's (or list item's) fields."""

    strategy: str = ""
    merge_key: str = ""
    fields: Mapping[str, PatchMeta] = field(default_factory=dict)

    def lookup(self, key: str) -> PatchMeta:
        """The metadata of field ``key`` (no strategy for fields without tags)."""
        return self.fields.get(key, NO_STRATEGY)


NO_STRATEGY = PatchMeta()


def _merged_by(key: str, item: PatchMeta = NO_STRATEGY) -> PatchMeta:
    return PatchMeta(MERGE, key, item.fields)


OBJECT_META = PatchMeta(fields={"ownerReferences": _merged_by("uid"), "finalizers": PatchMeta(MERGE)})
CONTAINER = PatchMeta(
    fields={
        "ports": _merged_by("containerPort"),
        "env": _merged_by("name"),
        "volumeMounts": _merged_by("mountPath"),
        "volumeDevices": _merged_by("devicePath"),
    }
)
POD_SPEC = PatchMeta(
    fields={
        "volumes": _merged_by("name"),
        "initContainers": _merged_by("name", CONTAINER),
        "containers": _merged_by("name", CONTAINER),
        "ephemeralContainers": _merged_by("name", CONTAINER),
        "imagePullSecrets": _merged_by("name"),
        "hostAliases": _merged_by("ip"),
        "topologySpreadConstraints": _merged_by("topologyKey"),
        "schedulingGates": _merged_by("name"),
        "resourceClaims": _merged_by("name"),
        "evictionResponders": _merged_by("name"),
    }
)
CONDITIONS = PatchMeta(fields={"conditions": _merged_by("type")})
POD_TEMPLATE = PatchMeta(fields={"metadata": OBJECT_META, "spec": POD_SPEC})

BY_KIND: dict[str, PatchMeta] = {
    "Namespace": PatchMeta(fields={"metadata": OBJECT_META, "status": CONDITIONS}),
    "Deployment": PatchMeta(
        fields={"metadata": OBJECT_META, "spec": PatchMeta(fields={"template": POD_TEMPLATE}), "status": CONDITIONS}
    ),
}


def patch_meta(kind: str) -> PatchMeta:
    """The strategic-merge metadata of a built-in ``kind`` (every kind has ``metadata``'s)."""
    return BY_KIND.get(kind, PatchMeta(fields={"metadata": OBJECT_META}))
