"""Refresh the vendored krm-stream conformance corpus under ``tests/conformance/``.

Usage: ``python scripts/vendor_conformance.py PATH/TO/krm-stream``

The corpus is copied as data: the generated JSON (with the prose fields ``title``, ``why`` and
``because`` dropped), the exact SSE goldens, the event schema and the protocol version.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

VENDORED = Path(__file__).resolve().parent.parent / "tests" / "conformance"
PROSE_FIELDS = {"fixtures.json": ("title", "why"), "scopes.json": ("because",)}


def stripped(name: str, data: Any) -> Any:
    """Return corpus file ``name`` with its prose fields removed."""
    drop = PROSE_FIELDS.get(name, ())
    if not drop:
        return data
    return [{k: v for k, v in entry.items() if k not in drop} for entry in data]


def expected_files(source: Path) -> dict[str, bytes]:
    """Map each vendored relative path to the bytes it must hold for corpus ``source``."""
    files: dict[str, bytes] = {}
    for name in ("bodies.json", "fixtures.json", "scopes.json", "protocol.json"):
        data = stripped(name, json.loads((source / "gen" / name).read_text()))
        files[name] = (json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
    files["events.schema.json"] = (source / "events.schema.json").read_bytes()
    for sse in sorted((source / "gen" / "sse").glob("*.sse")):
        files[f"sse/{sse.name}"] = sse.read_bytes()
    return files


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    source = Path(argv[1])
    shutil.rmtree(VENDORED / "sse", ignore_errors=True)
    for rel, data in expected_files(source).items():
        path = VENDORED / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
