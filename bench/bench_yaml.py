"""YAML bombs refused by :func:`flask_krm.yaml_text.load_yaml`, next to loading a harmless document
of the same size.

Each bomb is a few kilobytes whose aliases (or merge keys) stand for far more values or characters
than the bounds allow; it is refused while it is composed, so refusing it should cost about what
reading its text costs. The baseline is a ConfigMap-like document of as many bytes, every value
written out, loaded in the same run; the ratio is refusal over baseline.

- ``nested-anchors``: anchors nine deep, each aliasing the one before nine times;
- ``alias-fan-out``: 63 aliases of a list of 3,000 items;
- ``merge-keys``: one mapping of 504 keys merged 63 times;
- ``expanded-text``: four aliases of a 600,000-character string.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from flask_krm.yaml_text import YamlRefused, load_yaml


def nested_anchors(levels: int, width: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["xxxxxxxxxx"] * width) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def fan_out(items: int, aliases: int) -> str:
    return "items: &items [" + ", ".join(["item"] * items) + "]\ncopies: [" + ", ".join(["*items"] * aliases) + "]\n"


def merged(keys: int, merges: int) -> str:
    mapping = "{" + ", ".join(f"key{i}: {i}" for i in range(keys)) + "}"
    return f"base: &base {mapping}\nmerged:\n  <<: [" + ", ".join(["*base"] * merges) + "]\n"


def long_text(characters: int, aliases: int) -> str:
    return "text: &text " + "x" * characters + "\ncopies: [" + ", ".join(["*text"] * aliases) + "]\n"


BOMBS: dict[str, str] = {
    "nested-anchors": nested_anchors(9, 10),
    "alias-fan-out": fan_out(3_000, 63),
    "merge-keys": merged(504, 63),
    "expanded-text": long_text(600_000, 4),
}


def harmless(size: int) -> str:
    """A ConfigMap-like document of about ``size`` bytes, every value written out."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata:", "  name: harmless", "data:"]
    total = sum(len(line) + 1 for line in lines)
    i = 0
    while total < size:
        line = f"  key-{i}: value-{i}"
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def best_of(repeats: int, number: int, action: Callable[[], object]) -> float:
    """Seconds per call: the fastest of ``repeats`` runs of ``number`` calls."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(number):
            action()
        best = min(best, (time.perf_counter() - start) / number)
    return best


def refuse(text: str) -> None:
    try:
        load_yaml(text)
    except YamlRefused:
        return
    raise AssertionError("the bomb was loaded")


def run(quick: bool) -> Iterable[dict[str, Any]]:
    """One result per bomb (quick: fewer repeats)."""
    repeats, number = (1, 2) if quick else (5, 10)
    for name, bomb in BOMBS.items():
        plain = harmless(len(bomb))
        refused = best_of(repeats, number, lambda: refuse(bomb))
        loaded = best_of(repeats, number, lambda: load_yaml(plain))
        yield {
            "case": name,
            "bytes": len(bomb),
            "seconds": round(refused, 6),
            "baseline": "load_yaml of a harmless document of as many bytes",
            "baseline_seconds": round(loaded, 6),
            "ratio": round(refused / loaded, 3),
        }
