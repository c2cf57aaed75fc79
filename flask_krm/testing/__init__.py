"""Test support for flask-krm and its host applications: the Kubernetes API simulator and a pytest plugin.

``KubeSimulator`` is imported lazily so that loading the pytest plugin stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .simulator import KubeSimulator

__all__ = ["KubeSimulator"]


def __getattr__(name: str) -> Any:
    if name == "KubeSimulator":
        from .simulator import KubeSimulator

        return KubeSimulator
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
