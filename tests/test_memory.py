"""Handing freed heap pages back to the operating system where the C library can."""

from __future__ import annotations

import pytest

from flask_krm import memory


def test_the_allocator_is_asked_to_return_every_free_page(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(memory, "_TRIM", calls.append)
    memory.release_freed_memory()
    assert calls == [0]


def test_without_malloc_trim_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_TRIM", None)
    memory.release_freed_memory()  # another C library: nothing to call, nothing raised
