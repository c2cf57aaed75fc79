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
from .intents import SaveIntent, newest_equivalent_base, newest_of
from .journal import Edit, EditRecord
from .keyed_lists import BUILTIN_LIST_SCHEMAS
from .merge import Conflict
from .operations import (
    AddItem,
    AddKey,
    EditLines,
    EditView,
    KeepMine,
    MoveItem,
    Operation,
    Outcome,
    RemoveItem,
    RemoveKey,
    RenameKey,
    Revert,
    SetField,
    TakeTheirs,
)
from .patch import Change, apply_merge_patch
from .paths import MISSING, Path, path_to_pointer, pointer_to_path
from .policy import DEFAULT_POLICY, READ_ONLY_POLICY, EditPolicy
from .problems import EditRefused, Problem, ProblemKind
from .reconcile import Reconciliation, Refusal
from .recovery import RecoveryCopies, RecoveryCopy, identity_of
from .store import LiveResourceStore
from .validate import PatchRejected, parse_merge_patch, validate_merge_patch, validate_native_merge_patch

__all__ = [
    "AddItem",
    "AddKey",
    "BUILTIN_LIST_SCHEMAS",
    "Change",
    "Conflict",
    "DEFAULT_POLICY",
    "Edit",
    "EditLines",
    "EditPolicy",
    "EditRecord",
    "EditRefused",
    "EditView",
    "InvalidEventError",
    "InvalidValueError",
    "ItemExistsError",
    "KeepMine",
    "KeyExistsError",
    "LiveResourceStore",
    "MISSING",
    "MalformedPathError",
    "MissingItemError",
    "MissingKeyError",
    "MoveItem",
    "Operation",
    "Outcome",
    "PatchRejected",
    "Path",
    "PathError",
    "PathTypeError",
    "Problem",
    "ProblemKind",
    "READ_ONLY_POLICY",
    "ReadOnlyPathError",
    "Reconciliation",
    "RecoveryCopies",
    "RecoveryCopy",
    "Refusal",
    "RemoveItem",
    "RemoveKey",
    "RenameKey",
    "Revert",
    "SaveIntent",
    "SetField",
    "StoreError",
    "TakeTheirs",
    "UnknownResourceError",
    "UnversionedResourceError",
    "apply_merge_patch",
    "identity_of",
    "newest_equivalent_base",
    "newest_of",
    "parse_merge_patch",
    "path_to_pointer",
    "pointer_to_path",
    "validate_merge_patch",
    "validate_native_merge_patch",
]
