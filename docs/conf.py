"""Sphinx configuration of flask-krm's documentation (``sphinx-build -W docs DIR``)."""

from __future__ import annotations

import sys
from pathlib import Path

from pallets_sphinx_themes import get_version

# autodoc documents this checkout's flask_krm, whatever else is installed
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

project = "flask-krm"
copyright = "the flask-krm authors"
release, version = get_version("flask-krm")

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "pallets_sphinx_themes",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

autodoc_member_order = "bysource"
toc_object_entries_show_parents = "hide"
autodoc_typehints = "description"
autodoc_typehints_description_target = "documented"
autodoc_preserve_defaults = True
autodoc_default_options = {"members": True}

html_theme = "flask"
html_title = f"flask-krm Documentation ({version})"
html_short_title = "flask-krm"
html_sidebars = {
    "index": ["project.html", "localtoc.html", "searchbox.html"],
    "**": ["localtoc.html", "relations.html", "searchbox.html"],
}
html_static_path: list[str] = []
html_show_sourcelink = False
