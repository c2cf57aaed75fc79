"""Handing memory a dropped draft held back to the operating system.

A large draft (up to a mebibyte of data, rendered several times over) is freed when it is
discarded, but glibc's allocator keeps freed heap pages for the process, so the worker's resident
memory would stay where the draft took it. :func:`release_freed_memory` asks the allocator to
return them (``malloc_trim``); elsewhere (another C library) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import typing as t

_TRIM: t.Final = getattr(ctypes.CDLL(ctypes.util.find_library("c") or None), "malloc_trim", None)


def release_freed_memory() -> None:
    """Return the heap pages the process freed to the operating system (glibc; a no-op elsewhere)."""
    if _TRIM is not None:
        _TRIM(0)
