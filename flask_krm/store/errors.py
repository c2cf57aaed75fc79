"""Typed errors of the draft store: every refused call says what and where."""

from __future__ import annotations

from typing import Any


class StoreError(Exception):
    """Base class of every error the draft store raises."""


class UnknownResourceError(StoreError, LookupError):
    """The store holds no object with this uid."""

    def __init__(self, uid: str) -> None:
        super().__init__(f"no resource with uid {uid!r}")
        self.uid = uid


class PathError(StoreError, ValueError):
    """A path that cannot be used for the requested operation."""

    def __init__(self, path: Any, message: str) -> None:
        super().__init__(f"{message}: {path!r}")
        self.path = path
        self.reason = message


class MalformedPathError(PathError):
    """Not a path: a path is a tuple of ``str`` keys and non-negative ``int`` list indexes."""


class ReadOnlyPathError(PathError):
    """The path is not editable under the store's policy, redactions and machinery rules."""


class PathTypeError(PathError):
    """The path does not fit the draft's shape (indexing into a string, an index past the end)."""


class KeyExistsError(PathError):
    """The key to add or rename to already exists in its map."""


class MissingKeyError(PathError):
    """The key to rename does not exist."""


class InvalidValueError(StoreError, ValueError):
    """A value the draft cannot hold: not JSON, not UTF-8, or a ``null`` inside a map."""


class InvalidEventError(StoreError, ValueError):
    """An event (or adopted object) the store cannot apply: no uid, or a malformed redaction."""


class UnversionedResourceError(StoreError):
    """The held server object has no ``metadata.resourceVersion``, so no conditional save exists."""

    def __init__(self, uid: str) -> None:
        super().__init__(f"resource {uid!r} has no metadata.resourceVersion to save against")
        self.uid = uid


class MissingItemError(PathError):
    """No item of the keyed list at ``path`` has the key values ``key`` (removed or renamed meanwhile)."""

    def __init__(self, path: Any, key: Any) -> None:
        super().__init__(path, f"no item with the keys {key!r}")
        self.key = key


class ItemExistsError(PathError):
    """An item with the same key values is already in the keyed list."""
