"""The vendored htmx release is pinned, and krm_script() emits exactly it."""

from __future__ import annotations

import re
from pathlib import Path

from flask import Flask, render_template_string

import flask_krm
from flask_krm.ui import HTMX_VERSION
from flask_krm.ui.assets import SCRIPT_FILES

STATIC = Path(flask_krm.__file__).parent / "static" / "krm"


def test_the_vendored_htmx_is_4_0_1_with_its_sse_extension() -> None:
    assert HTMX_VERSION == "4.0.1"
    core = (STATIC / f"htmx-{HTMX_VERSION}.js").read_text()
    assert re.search(r"this\.version = '4\.0\.1'", core)
    sse = (STATIC / f"hx-sse-{HTMX_VERSION}.js").read_text()
    assert "htmx.registerExtension('sse'" in sse
    assert sorted(p.name for p in STATIC.glob("htmx-*.js")) == ["htmx-4.0.1.js"]
    assert sorted(p.name for p in STATIC.glob("hx-sse-*.js")) == ["hx-sse-4.0.1.js"]


def test_the_refresh_script_reads_the_pinned_version() -> None:
    script = (Path(flask_krm.__file__).parent.parent / "scripts" / "refresh-htmx").read_text()
    assert "flask_krm/ui/assets.py" in script
    assert "npm pack" in script


def test_krm_script_emits_htmx_then_sse_then_the_page_scripts_in_order_with_the_nonce(app: Flask) -> None:
    with app.test_request_context("/"):
        html = render_template_string("{{ krm_script(nonce='n0nce') }}")
    sources = re.findall(r'<script src="([^"]+)" nonce="n0nce"></script>', html)
    assert sources == [
        "/krm/static/krm/htmx-4.0.1.js",
        "/krm/static/krm/hx-sse-4.0.1.js",
        "/krm/static/krm/krm.js",
        "/krm/static/krm/krm-widgets.js",
        "/krm/static/krm/krm-field.js",
        "/krm/static/krm/krm-outcome.js",
        "/krm/static/krm/krm-page.js",
        "/krm/static/krm/krm-send.js",
        "/krm/static/krm/krm-keys.js",
        "/krm/static/krm/krm-lines.js",
        "/krm/static/krm/krm-yaml.js",
        "/krm/static/krm/krm-filter.js",
    ]
    assert '<link rel="stylesheet" href="/krm/static/krm/krm.css" nonce="n0nce">' in html


def test_krm_script_leaves_htmx_to_the_host_when_told(app: Flask) -> None:
    app.config["KRM_SERVE_HTMX"] = False
    with app.test_request_context("/"):
        html = render_template_string("{{ krm_script() }}")
    assert "htmx-4.0.1.js" not in html and "hx-sse" not in html
    assert '<script src="/krm/static/krm/krm.js"></script>' in html
    assert "nonce" not in html


def test_the_vendored_files_are_served(app: Flask) -> None:
    client = app.test_client()
    for name in ("htmx-4.0.1.js", "hx-sse-4.0.1.js", *SCRIPT_FILES, "krm.css"):
        response = client.get(f"/krm/static/krm/{name}")
        assert response.status_code == 200, name
        response.close()


def test_every_page_script_is_loaded_and_only_krm_js_spells_attribute_names() -> None:
    on_disk = {p.name for p in STATIC.glob("krm*.js")}
    assert on_disk == set(SCRIPT_FILES)
    assert SCRIPT_FILES[0] == "krm.js"
    for name in SCRIPT_FILES[1:]:
        source = (STATIC / name).read_text()
        assert not re.search(r"[\"'\[]data-krm-", source), name
