"""The documentation site builds with warnings as errors, and documents every public name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from blinker import NamedSignal

import flask_krm
import flask_krm.signals
import flask_krm.ui

from .snippets import DOCS


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The HTML site, built from scratch by ``sphinx-build -W`` (any warning fails the build)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html", "-d", str(out / ".doctrees")]
        + [str(DOCS), str(out / "html")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-6000:]
    assert not done.stderr.strip(), done.stderr[-6000:]
    return out / "html"


def test_every_public_name_has_an_entry_in_the_api_reference(site: Path) -> None:
    api = (site / "api.html").read_text()
    missing = [name for name in flask_krm.__all__ if f'id="flask_krm.{name}"' not in api]
    assert not missing


def test_every_name_of_the_ui_package_has_an_entry_in_the_api_reference(site: Path) -> None:
    api = (site / "api.html").read_text()
    assert [name for name in flask_krm.ui.__all__ if f'id="flask_krm.ui.{name}"' not in api] == []


def test_every_signal_has_an_entry_in_the_api_reference(site: Path) -> None:
    api = (site / "api.html").read_text()
    signals = [name for name, value in vars(flask_krm.signals).items() if isinstance(value, NamedSignal)]
    assert signals
    assert [name for name in signals if f'id="flask_krm.signals.{name}"' not in api] == []


def test_every_guide_is_in_the_table_of_contents(site: Path) -> None:
    index = (site / "index.html").read_text()
    guides = sorted(page.relative_to(DOCS).with_suffix(".html").as_posix() for page in (DOCS / "guide").glob("*.md"))
    assert guides
    assert [guide for guide in guides if f'href="{guide}"' not in index] == []


def test_the_pages_show_their_screenshots(site: Path) -> None:
    images = sorted(path.name for path in (site / "_images").iterdir())
    assert {"overview.png", "editor-conflict.png", "phone.png", "yaml-tab.png"} <= set(images)
