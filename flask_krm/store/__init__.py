"""The server-side draft store: server objects, drafts, merges, patches, save intents, guards.

Pure: imports neither Flask nor gevent. See ``docs/internals.md`` (Store API) for the contract.
"""

from __future__ import annotations

from .errors import (
    InvalidEventError,
    InvalidValueError,
    ItemExistsError,
    KeyExistsError,
    MalformedPathError,
    MissingItemError,
    MissingKeyError,
    PathError,
    PathTypeError,
    ReadOnlyPathError,
    StoreError,
    UnknownResourceError,
    UnversionedResourceError,
)
from .intents import SaveIntent, newest_equivalent_base
from .journal import Edit, EditRecord
from .keyed_lists import BUILTIN_LIST_SCHEMAS
from .merge import Conflict
from .patch import Change, apply_merge_patch
from .paths import MISSING, Path, path_to_pointer, pointer_to_path
from .policy import DEFAULT_POLICY, READ_ONLY_POLICY, EditPolicy
from .reconcile import Reconciliation, Refusal
from .recovery import RecoveryCopies, RecoveryCopy, identity_of
from .store import LiveResourceStore
from .validate import PatchRejected, parse_merge_patch, validate_merge_patch, validate_native_merge_patch

__all__ = [
    "BUILTIN_LIST_SCHEMAS",
    "DEFAULT_POLICY",
    "MISSING",
    "READ_ONLY_POLICY",
    "Change",
    "Conflict",
    "Edit",
    "EditPolicy",
    "EditRecord",
    "InvalidEventError",
    "InvalidValueError",
    "ItemExistsError",
    "KeyExistsError",
    "LiveResourceStore",
    "MalformedPathError",
    "MissingItemError",
    "MissingKeyError",
    "Path",
    "PatchRejected",
    "PathError",
    "PathTypeError",
    "ReadOnlyPathError",
    "Reconciliation",
    "RecoveryCopies",
    "RecoveryCopy",
    "Refusal",
    "SaveIntent",
    "StoreError",
    "UnknownResourceError",
    "UnversionedResourceError",
    "apply_merge_patch",
    "identity_of",
    "newest_equivalent_base",
    "parse_merge_patch",
    "path_to_pointer",
    "pointer_to_path",
    "validate_merge_patch",
    "validate_native_merge_patch",
]
