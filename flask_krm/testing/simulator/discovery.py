"""Legacy discovery documents: ``/api``, ``/apis``, ``/apis/<group>``, ``/api/v1``, ``/apis/<group>/<version>``, ``/version``."""

from __future__ import annotations

from typing import Any

from .catalog import Catalog

KUBERNETES_VERSION = {"major": "1", "minor": "37", "gitVersion": "v1.37.2-krm-simulator", "platform": "linux/amd64"}


def _group_entry(catalog: Catalog, group: str) -> dict[str, Any]:
    versions = [
        {"groupVersion": f"{group}/{version}", "version": version} for version in catalog.group_versions()[group]
    ]
    return {"name": group, "versions": versions, "preferredVersion": versions[0]}


def discovery_document(catalog: Catalog, path: str, server_address: str) -> dict[str, Any] | None:
    """The document served at ``path``, or ``None`` if ``path`` is not a discovery path."""
    parts = [part for part in path.split("/") if part]
    served = catalog.group_versions()
    if parts == ["version"]:
        return dict(KUBERNETES_VERSION)
    if parts == ["api"]:
        return {
            "kind": "APIVersions",
            "versions": served.get("", []),
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        }
    if parts == ["apis"]:
        groups = [_group_entry(catalog, group) for group in served if group]
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    if len(parts) == 2 and parts[0] == "apis" and parts[1] in served and parts[1]:
        return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(catalog, parts[1])}
    if len(parts) == 2 and parts[0] == "api" and parts[1] in served.get("", []):
        group, version = "", parts[1]
    elif len(parts) == 3 and parts[0] == "apis" and parts[2] in served.get(parts[1], []) and parts[1]:
        group, version = parts[1], parts[2]
    else:
        return None
    resources = sorted(
        (entry for t in catalog.in_group_version(group, version) for entry in t.discovery()), key=lambda e: e["name"]
    )
    document: dict[str, Any] = {"kind": "APIResourceList"}
    if group:
        document["apiVersion"] = "v1"
    document.update(groupVersion=f"{group}/{version}" if group else version, resources=resources)
    return document
