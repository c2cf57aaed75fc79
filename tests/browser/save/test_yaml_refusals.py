"""The YAML tab refuses, at their lines, what no draft may hold, in a real browser: an alias bomb,
a key written twice, a list under a ConfigMap's data, a number past the digit limit. Nothing is
applied, the form still shows the object, and Save has nothing to send."""

from __future__ import annotations

import typing as t
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import goto_live, new_configmap
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn
from tests.browser.save.test_yaml_tab import message, yaml_tab

pytestmark = pytest.mark.browser

BOMB: t.Final = "bomb: &a [" + ",".join(["item"] * 3000) + "]\nmore: [" + ",".join(["*a"] * 63) + "]\n"


def type_text(page: Page, name: str, text: str) -> None:
    """Replaces the tab's text as a person pasting it would, and waits for the answer."""
    area = yaml_tab(page, name)
    area.evaluate("(el, text) => { el.focus(); el.select(); }", text)
    page.keyboard.insert_text(text)


def test_yaml_that_no_draft_may_hold_is_refused_at_its_line(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    name = new_configmap(core, "yaml-refused", {"greeting": "hello"})
    page = goto_live(signed_in("editor"), f"/configmaps/{name}")
    source = yaml_tab(page, name).input_value()
    problem = page.locator(".krm-yaml-problem")
    cases = [
        (source + BOMB, "The aliases of the YAML stand for more than 10000 values"),
        (source.replace("  greeting: hello\n", "  greeting: hello\n  greeting: bye\n"), "is written twice"),
        (source.replace("  greeting: hello\n", "  greeting: hello\n  list: [a, b]\n"), "a map of strings"),
        (source.replace("  greeting: hello\n", "  greeting: hello\n  big: 0x" + "f" * 20_000 + "\n"), "4300 digits"),
    ]
    for text, refusal in cases:
        type_text(page, name, text)
        expect(problem).to_contain_text(refusal, timeout=10_000)
        expect(message(page)).to_contain_text("Nothing was applied")
        line = next(i for i, row in enumerate(text.split("\n"), 1) if row not in source.split("\n"))
        if "aliases" in refusal:
            line += 1  # the alias past the limit is on the line after the anchor
        expect(problem).to_contain_text(f"Line {line}")
    page.screenshot(path=str(tmp_path / "yaml-refused.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(tmp_path / "yaml-refused-390.png"), full_page=True)
    page.get_by_role("tab", name="Form", exact=True).click()
    expect(page.locator(".krm-editor")).to_contain_text("greeting")
    expect(page.locator(".krm-editor .krm-unrenderable")).to_have_count(0)
    assert core.read_namespaced_config_map(name, NAMESPACE).data == {"greeting": "hello"}
    reloaded = goto_live(page, f"/configmaps/{name}")
    expect(reloaded.locator(".krm-editor")).to_contain_text("No changes")
