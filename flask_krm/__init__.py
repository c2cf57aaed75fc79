"""flask-krm: live, editable Kubernetes resource views for Flask.

The installed version is ``importlib.metadata.version("flask-krm")``.

The public names below are loaded on first use, so the pure core modules (``flask_krm.scope``,
``flask_krm.stream``, ``flask_krm.store`` and the like) import without Flask or gevent.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import CsrfError as CsrfError
    from .errors import DraftLimitReached as DraftLimitReached
    from .errors import KrmError as KrmError
    from .errors import ScopeDenied as ScopeDenied
    from .errors import ScopeInvalid as ScopeInvalid
    from .errors import Unauthenticated as Unauthenticated
    from .extension import KrmStream as KrmStream
    from .principal import Principal as Principal
    from .scope import AllowedResource as AllowedResource
    from .scope import Scope as Scope
    from .scope import ScopePolicy as ScopePolicy

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
