"""flask-krm: live, editable Kubernetes resource views for Flask.

The installed version is ``importlib.metadata.version("flask-krm")``.
"""

from __future__ import annotations

from .errors import (
    CsrfError,
    DraftLimitReached,
    KrmError,
    ScopeDenied,
    ScopeInvalid,
    Unauthenticated,
)
from .extension import KrmStream
from .principal import Principal
from .scope import AllowedResource, Scope, ScopePolicy

__all__ = [
    "AllowedResource",
    "CsrfError",
    "DraftLimitReached",
    "KrmError",
    "KrmStream",
    "Principal",
    "Scope",
    "ScopeDenied",
    "ScopeInvalid",
    "ScopePolicy",
    "Unauthenticated",
]
