"""Create, update, patch and delete with kube-apiserver's semantics on top of ``ObjectStore``.

Optimistic concurrency, preconditions, two-phase deletion with finalizers, namespace lifecycle,
subresource rules and no-op detection live here; request bodies are decoded first
(:mod:`.decoding`), and the HTTP layer only routes.
"""

from __future__ import annotations

import copy
import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from . import catalog, object_meta, server_side_apply, strategies
from .catalog import ResourceType
from .decoding import decode
from .errors import (
    OPTIMISTIC_LOCK_MESSAGE,
    FieldError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
    unwrapped,
)
from .field_validation import FieldValidation
from .managed_fields import record_write
from .options import DeleteOptions
from .patches import MERGE_PATCH, patched_object
from .scale import SCALE, desired_replicas, scale_of, validate_scale
from .store import Object, ObjectStore

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
SYSTEM_MANAGER = "krm-simulator"
GARBAGE_COLLECTOR = "generic-garbagecollector"
GENERATE_NAME_RETRIES = 7
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
COLLECTOR_FINALIZERS = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)


def now() -> str:
    """The current time as Kubernetes writes timestamps (RFC 3339, seconds, UTC)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class WriteRequest:
    """A write about to be applied, as a mutating admission hook sees it.

    ``new`` is the object that will be stored (hooks may modify it in place); ``old`` is the
    stored object for updates and deletes, ``None`` for creates; ``subresource`` is ``"status"``
    or ``"scale"`` for a write through that subresource (a scale write changes the object's
    replicas), else empty; ``dry_run`` is true for a ``dryRun=All`` request (as an admission
    review's ``dryRun``: nothing of it will be stored).
    """

    verb: str
    resource: ResourceType
    namespace: str
    name: str
    old: Object | None
    new: Object
    subresource: str = ""
    dry_run: bool = False


WriteHook = Callable[[WriteRequest], None]


class Registry:
    """Request semantics for every stored resource type."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self.write_hooks: list[WriteHook] = []

    # reads

    def get(self, resource: ResourceType, namespace: str, name: str) -> Object:
        """The stored object, or 404."""
        obj = self.store.get(resource, namespace, name)
        if obj is None:
            raise not_found(resource.group_resource, name)
        return obj

    # create

    def create(
        self,
        resource: ResourceType,
        namespace: str,
        body: Any,
        manager: str = SYSTEM_MANAGER,
        *,
        dry_run: bool = False,
        validation: FieldValidation | None = None,
        managed_fields: list[dict[str, Any]] | None = None,
    ) -> Object:
        """POST to a collection as field manager ``manager``; returns the stored object.

        ``dry_run``: validate and return the object that would be stored (no resourceVersion), storing nothing.
        ``managed_fields``: the new object's entries (server-side apply's), instead of an ``Update`` entry.
        """
        obj = decode(resource, body, validation)
        metadata = obj["metadata"]
        if resource.namespaced:
            if metadata.get("namespace", namespace) != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            metadata["namespace"] = namespace
        else:
            metadata.pop("namespace", None)
        generated = not metadata.get("name") and bool(metadata.get("generateName"))
        if generated:
            metadata["name"] = _generated_name(metadata["generateName"])
        name = metadata.get("name", "")
        if resource.namespaced:
            _check_namespace_accepts(self.store, resource, namespace, name)
        if metadata.get("resourceVersion"):
            raise unwrapped("resourceVersion should not be set on objects to be created")
        for system_field in (
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "selfLink",
        ):
            metadata.pop(system_field, None)
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = now()
        strategies.prepare_for_create(resource, obj)
        self._admit(WriteRequest("create", resource, namespace, name, None, obj, dry_run=dry_run))
        _validate(resource, name, strategies.validate(resource, obj))
        key_namespace = namespace if resource.namespaced else ""
        for _ in range(GENERATE_NAME_RETRIES if generated else 0):  # kube-apiserver retries a taken generated name
            if self.store.get(resource, key_namespace, name) is None:
                break
            name = metadata["name"] = _generated_name(metadata["generateName"])
        if self.store.get(resource, key_namespace, name) is not None:
            raise already_exists(resource.group_resource, name)
        if managed_fields is None:
            managed_fields = record_write(resource, None, obj, manager, "", metadata["creationTimestamp"])
        obj["metadata"]["managedFields"] = managed_fields
        if dry_run:
            return strategies.canonical(resource, obj)
        return self._commit(resource, obj, "ADDED")

    # update and patch

    def replace(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str = "",
        manager: str = SYSTEM_MANAGER,
        *,
        dry_run: bool = False,
        validation: FieldValidation | None = None,
    ) -> Object:
        """PUT an object, its status or its scale; the body's uid, if any, is a precondition."""
        existing = self.get(resource, namespace, name)
        if subresource == "scale":
            scale = decode(SCALE, body, validation)
            return self._rescale(resource, namespace, name, existing, scale, "update", manager, dry_run)
        new = decode(resource, body, validation)
        uid = new["metadata"].get("uid")
        if uid and uid != existing["metadata"]["uid"]:
            cause = (
                f"StorageError: invalid object, Code: 4, Key: {resource.storage_key(namespace, name)}, ResourceVersion: 0, "
                f"AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {existing['metadata']['uid']}"
            )
            raise conflict(resource.group_resource, name, cause)
        return self._update(resource, namespace, name, existing, new, subresource, "update", manager, dry_run)

    def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        patch: Any,
        subresource: str = "",
        manager: str = SYSTEM_MANAGER,
        *,
        patch_type: str = MERGE_PATCH,
        dry_run: bool = False,
        validation: FieldValidation | None = None,
    ) -> Object:
        """Apply a decoded patch body of ``patch_type``; ``metadata.resourceVersion`` in the result is an optimistic lock.

        A patch of the ``scale`` subresource applies to the object's ``Scale`` and answers the new one.
        """
        existing = self.get(resource, namespace, name)
        if subresource == "scale":
            patched = strategies.canonical(
                SCALE, patched_object(SCALE, scale_of(existing), patch_type, patch, validation)
            )
            return self._rescale(resource, namespace, name, existing, patched, "patch", manager, dry_run)
        new = strategies.canonical(resource, patched_object(resource, existing, patch_type, patch, validation))
        return self._update(resource, namespace, name, existing, new, subresource, "patch", manager, dry_run)

    def apply(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        manager: str,
        *,
        force: bool = False,
        dry_run: bool = False,
        validation: FieldValidation | None = None,
    ) -> tuple[Object, bool]:
        """Server-side apply of the configuration ``body`` as ``manager``; returns the object and whether it was created.

        An absent object is created from the configuration. Conflicts with other managers' fields
        are a 409 unless ``force`` (see ``server_side_apply``).
        """
        api_version, kind = str(body.get("apiVersion") or ""), str(body.get("kind") or "")
        if (api_version, kind) != (resource.api_version, resource.kind):
            group, _, version = api_version.rpartition("/")
            raise bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
        applied = decode(resource, body, validation)
        _check_identity(resource, namespace, name, applied["metadata"])
        existing = self.store.get(resource, namespace if resource.namespaced else "", name)
        merged, entries = server_side_apply.apply(resource, existing, applied, manager, force, now())
        if existing is None:
            created = self.create(
                resource, namespace, merged, manager, dry_run=dry_run, validation=validation, managed_fields=entries
            )
            return created, True
        return (
            self._update(resource, namespace, name, existing, merged, "", "patch", manager, dry_run, entries),
            False,
        )

    def scale(self, resource: ResourceType, namespace: str, name: str) -> Object:
        """GET ``<name>/scale``: the object's ``Scale``."""
        return scale_of(self.get(resource, namespace, name))

    def _rescale(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        existing: Object,
        scale: Object,
        verb: str,
        manager: str,
        dry_run: bool,
    ) -> Object:
        """``scaleUpdatedObjectInfo``: validate the Scale, move its replicas and resourceVersion into the object, update it."""
        metadata = scale["metadata"]
        _check_identity(resource, namespace, name, metadata)
        metadata["namespace"] = namespace
        _validate(SCALE, name, validate_scale(scale))
        uid = metadata.get("uid")
        if uid and uid != existing["metadata"]["uid"]:
            cause = (
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {existing['metadata']['uid']}"
            )
            raise conflict(catalog.GroupResource(resource.group, f"{resource.plural}/scale"), name, cause)
        scaled = copy.deepcopy(existing)
        scaled["spec"]["replicas"] = desired_replicas(scale)
        scaled["metadata"]["resourceVersion"] = metadata.get("resourceVersion", "")
        return scale_of(self._update(resource, namespace, name, existing, scaled, "scale", verb, manager, dry_run))

    def _update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        existing: Object,
        new: Object,
        subresource: str,
        verb: str,
        manager: str,
        dry_run: bool,
        managed_fields: list[dict[str, Any]] | None = None,
    ) -> Object:
        metadata = new["metadata"]
        _check_identity(resource, namespace, name, metadata)
        self._admit(WriteRequest(verb, resource, namespace, name, existing, new, subresource, dry_run))
        _check_resource_version(resource, name, metadata.get("resourceVersion"), existing)
        old_meta = existing["metadata"]
        metadata["name"] = name
        if resource.namespaced:
            metadata["namespace"] = namespace
        if not metadata.get("uid"):
            metadata["uid"] = old_meta["uid"]
        for kept in ("creationTimestamp", "generation", "managedFields"):
            if kept in old_meta:
                metadata[kept] = old_meta[kept]
            else:
                metadata.pop(kept, None)
        for kept in ("deletionTimestamp", "deletionGracePeriodSeconds"):
            if kept in old_meta:
                metadata[kept] = old_meta[kept]
        strategies.prepare_for_update(resource, new, existing, subresource)
        _validate(resource, name, strategies.validate_update(resource, new, existing, subresource))
        new = strategies.canonical(resource, new)
        if managed_fields is not None:
            new["metadata"]["managedFields"] = managed_fields
        if (
            resource != catalog.NAMESPACES
            and new["metadata"].get("deletionTimestamp")
            and not new["metadata"].get("finalizers")
        ):
            # the last finalizer is gone: the stored object is deleted as it was (that is what watchers
            # see), while the writer gets back the object it sent
            if not dry_run:
                self._remove(resource, copy.deepcopy(existing))
            return new
        if _without_version(new) == _without_version(existing):
            return existing
        if managed_fields is None:
            new["metadata"]["managedFields"] = record_write(resource, existing, new, manager, subresource, now())
        if dry_run:
            new["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
            return strategies.canonical(resource, new)
        committed = self._commit(resource, new, "MODIFIED")
        if resource == catalog.NAMESPACES:
            return self._finish_namespace(name) or committed
        return committed

    # delete

    def delete(
        self, resource: ResourceType, namespace: str, name: str, options: DeleteOptions = DeleteOptions()
    ) -> tuple[Object, bool]:
        """DELETE; returns the response object and whether the object is gone (not just terminating).

        ``options.dry_run``: the same answer, with nothing stored or removed. A propagation policy
        of ``Foreground`` or ``Orphan`` (or ``orphanDependents``) marks the object with the garbage
        collector's finalizer, as kube-apiserver does; the simulator's collector tracks no
        dependents, so it removes that finalizer at once (the object goes unless other finalizers hold it).
        """
        existing = self.get(resource, namespace, name)
        metadata = existing["metadata"]
        gone_kind = catalog.GroupResource(resource.group, resource.kind)
        preconditions = options.preconditions
        if preconditions.uid is not None and preconditions.uid != metadata["uid"]:
            raise conflict(
                gone_kind,
                name,
                (
                    f"the UID in the precondition ({preconditions.uid}) does not match the UID in record ({metadata['uid']}). "
                    "The object might have been deleted and then recreated"
                ),
            )
        if preconditions.resource_version is not None and preconditions.resource_version != metadata["resourceVersion"]:
            raise conflict(
                gone_kind,
                name,
                (
                    f"the ResourceVersion in the precondition ({preconditions.resource_version}) does not match the "
                    f"ResourceVersion in record ({metadata['resourceVersion']}). The object might have been modified"
                ),
            )
        finalizers = _collector_finalizers(metadata.get("finalizers") or [], options)
        pending = list(finalizers)
        if resource == catalog.NAMESPACES:
            pending += (existing.get("spec") or {}).get("finalizers") or []
        if pending:
            terminating = existing
            if not metadata.get("deletionTimestamp") or finalizers != (metadata.get("finalizers") or []):
                marked = copy.deepcopy(existing)
                marked_meta = marked["metadata"]
                marked_meta.setdefault("deletionTimestamp", now())
                if finalizers:
                    marked_meta["finalizers"] = finalizers
                if resource == catalog.NAMESPACES:
                    marked["status"] = {"phase": "Terminating"}
                else:
                    marked_meta.setdefault("deletionGracePeriodSeconds", 0)
                self._admit(
                    WriteRequest("delete", resource, namespace, name, existing, marked, dry_run=options.dry_run)
                )
                if options.dry_run:
                    return strategies.canonical(resource, marked), False
                terminating = self._commit(resource, strategies.canonical(resource, marked), "MODIFIED")
                self._collect(resource, namespace, name)
            if resource == catalog.NAMESPACES and not options.dry_run:
                self._empty_namespace(name)
            return terminating, False
        removed = existing if options.dry_run else self._remove(resource, copy.deepcopy(existing))
        if resource == catalog.NAMESPACES:
            return removed, True
        details: dict[str, Any] = {"name": name}
        if resource.group:
            details["group"] = resource.group
        details.update(kind=resource.plural, uid=metadata["uid"])
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}, True

    def _collect(self, resource: ResourceType, namespace: str, name: str) -> None:
        """The garbage collector's part: drop its finalizers from a deleted object (no dependents are tracked)."""
        current = self.store.get(resource, namespace if resource.namespaced else "", name)
        if current is None:
            return
        finalizers = current["metadata"].get("finalizers") or []
        kept = [item for item in finalizers if item not in COLLECTOR_FINALIZERS]
        if kept != finalizers:
            collected = copy.deepcopy(current)
            collected["metadata"]["finalizers"] = kept
            self._update(resource, namespace, name, current, collected, "", "update", GARBAGE_COLLECTOR, False)

    def _empty_namespace(self, namespace: str) -> None:
        """The namespace controller's work: delete everything in a terminating namespace, then the namespace."""
        for resource_type in catalog.DEFAULT_CATALOG.types:
            if resource_type.namespaced and resource_type.stored:
                for obj in self.store.items(resource_type, namespace):
                    if not obj["metadata"].get("deletionTimestamp"):
                        self.delete(resource_type, namespace, obj["metadata"]["name"])
        self._finish_namespace(namespace)

    def _finish_namespace(self, namespace: str) -> Object | None:
        """Remove a terminating namespace once nothing is left in it; returns the removed namespace."""
        existing = self.store.get(catalog.NAMESPACES, "", namespace)
        if (
            existing is None
            or not existing["metadata"].get("deletionTimestamp")
            or existing["metadata"].get("finalizers")
            or self.store.namespace_has_objects(namespace)
        ):
            return None
        final = copy.deepcopy(existing)
        final["spec"] = {}
        return self._remove(catalog.NAMESPACES, final)

    def _admit(self, request: WriteRequest) -> None:
        for hook in list(self.write_hooks):
            hook(request)

    def _commit(self, resource: ResourceType, obj: Object, event_type: str) -> Object:
        obj["metadata"]["resourceVersion"] = str(self.store.next_version())
        stored = strategies.canonical(resource, obj)
        self.store.commit(resource, stored, event_type)
        return stored

    def _remove(self, resource: ResourceType, obj: Object) -> Object:
        removed = self._commit(resource, obj, "DELETED")
        namespace = obj["metadata"].get("namespace")
        if namespace:
            self._finish_namespace(namespace)
        return removed


def _check_identity(resource: ResourceType, namespace: str, name: str, metadata: Object) -> None:
    """An update's body names the object of its URL (400 otherwise)."""
    if not metadata.get("name"):
        raise bad_request(f"the name of the object ({name} based on URL) was undeterminable: name must be provided")
    if metadata["name"] != name:
        raise bad_request(f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})")
    if resource.namespaced and metadata.get("namespace", namespace) != namespace:
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")


def _generated_name(generate_name: str) -> str:
    """``names.SimpleNameGenerator``: the prefix cut to 58 characters, then 5 random ones."""
    return object_meta.generated_name_prefix(generate_name) + "".join(random.choices(_GENERATE_ALPHABET, k=5))


def _collector_finalizers(finalizers: list[str], options: DeleteOptions) -> list[str]:
    """``finalizers`` as the deletion leaves them: the garbage collector's set by the options (``deletionFinalizersForGarbageCollection``)."""
    orphan = options.orphan_dependents
    if orphan is None:
        if options.propagation_policy is not None:
            orphan = options.propagation_policy == "Orphan"
        else:
            orphan = next((item == ORPHAN_FINALIZER for item in finalizers if item in COLLECTOR_FINALIZERS), False)
    foreground = False
    if options.orphan_dependents is None:
        if options.propagation_policy is not None:
            foreground = options.propagation_policy == "Foreground"
        else:
            foreground = next(
                (item == FOREGROUND_FINALIZER for item in finalizers if item in COLLECTOR_FINALIZERS), False
            )
    result = [item for item in finalizers if item not in COLLECTOR_FINALIZERS]
    result += [ORPHAN_FINALIZER] if orphan else []
    result += [FOREGROUND_FINALIZER] if foreground else []
    return finalizers if set(result) == set(finalizers) else result


def _without_version(obj: Object) -> Object:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}}


def _check_namespace_accepts(store: ObjectStore, resource: ResourceType, namespace: str, name: str) -> None:
    """A create in ``namespace`` needs it to exist and not be terminating (404, 403 otherwise)."""
    existing = store.get(catalog.NAMESPACES, "", namespace)
    if existing is None:
        raise not_found(catalog.NAMESPACES.group_resource, namespace)
    if existing["metadata"].get("deletionTimestamp"):
        error = forbidden(
            resource.group_resource,
            name,
            f"unable to create new content in namespace {namespace} because it is being terminated",
        )
        assert error.details is not None
        error.details["causes"] = [
            {
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }
        ]
        raise error


def _validate(resource: ResourceType, name: str, errors: list[FieldError]) -> None:
    if errors:
        raise invalid(resource.group_kind, name, errors)


def _check_resource_version(resource: ResourceType, name: str, requested: Any, existing: Object) -> None:
    """An update's ``metadata.resourceVersion`` is an optimistic lock on ``existing`` (409 when stale)."""
    if requested in (None, ""):
        if resource.custom:
            kind = catalog.GroupKind(resource.group, resource.plural)
            raise invalid(
                kind, name, [FieldError.invalid("metadata.resourceVersion", 0, "must be specified for an update")]
            )
        return
    if not isinstance(requested, str) or not requested.isdigit():
        raise unwrapped(f"strconv.ParseUint: parsing {json.dumps(requested)}: invalid syntax")
    if int(requested) != int(existing["metadata"]["resourceVersion"]):
        raise conflict(resource.group_resource, name, OPTIMISTIC_LOCK_MESSAGE)
