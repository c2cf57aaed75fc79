"""flask-krm: live, editable Kubernetes resource views for Flask."""

from __future__ import annotations

__version__ = "0.1.0"
