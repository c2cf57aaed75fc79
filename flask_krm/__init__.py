"""flask-krm: live, editable Kubernetes resource views for Flask.

The installed version is ``importlib.metadata.version("flask-krm")``.

The public names below are loaded on first use, so the pure core modules (``flask_krm.scope``,
``flask_krm.stream``, ``flask_krm.store`` and the like) import without Flask or gevent.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import CsrfError, DraftLimitReached, KrmError, ScopeDenied, ScopeInvalid, Unauthenticated
    from .extension import KrmStream
    from .principal import Principal
    from .scope import AllowedResource, Scope, ScopePolicy

_EXPORTS = {
    "AllowedResource": "scope",
    "CsrfError": "errors",
    "DraftLimitReached": "errors",
    "KrmError": "errors",
    "KrmStream": "extension",
    "Principal": "principal",
    "Scope": "scope",
    "ScopeDenied": "errors",
    "ScopeInvalid": "errors",
    "ScopePolicy": "scope",
    "Unauthenticated": "errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'flask_krm' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
