"""The README is a landing page: the two commands first, the smallest host, under 12,000 characters.

Its marked code blocks are examples of the documentation's project and run with them
(``tests/docs/test_examples.py``).
"""

from __future__ import annotations

import re
import typing as t

from tests.docs.snippets import MARKED, README, example_files

from .conftest import ROOT

LONGEST: t.Final = 12_000
"""The most characters the README may hold: details belong in ``docs/``."""


def test_the_readme_opens_with_the_two_commands() -> None:
    lines = README.read_text().splitlines()
    block = lines[lines.index("```sh") + 1 : lines.index("```sh") + 3]
    assert block[0].startswith("make run ") and block[1].startswith("make test ")


def test_the_readme_is_a_landing_page() -> None:
    assert len(README.read_text()) < LONGEST


def test_the_readme_shows_the_quickstarts_host() -> None:
    shown = dict(MARKED.findall(README.read_text()))
    assert set(shown) == {"myapp.py"}
    assert shown["myapp.py"] + "\n" == example_files()["myapp.py"]
    assert "<!-- doc-test: myapp.py -->" in (ROOT / "docs" / "quickstart.md").read_text()


def test_every_link_of_the_readme_leads_to_a_file() -> None:
    targets = re.findall(r"\]\(([^)#]+)\)", README.read_text())
    assert targets
    missing = [target for target in targets if not (ROOT / target).exists()]
    assert not missing
