"""A built wheel carries every template, static file and the typing marker."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_ships_templates_static_files_and_py_typed(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("flask_krm-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    package = REPO / "flask_krm"
    expected = {"flask_krm/py.typed", "flask_krm/testing/simulator/field_schemas.json"} | {
        str(path.relative_to(REPO))
        for folder in ("templates", "static")
        for path in (package / folder).rglob("*")
        if path.is_file()
    }
    assert expected - shipped == set()
