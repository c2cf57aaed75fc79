"""A colleague's change reaches the editor as that field alone, while the person types in another.

The page channel sends an editor's changed elements by id, not its whole body: the test records
every message the page receives and every DOM mutation under the editor's body, and checks that
the colleague's change replaced only the changed field's element (with its conflict panel, when the
person had changed it too), that no element elsewhere in the body was touched (elements are marked
with a JS property that must survive), and that the field being typed in kept its text, focus and
caret.
"""

from __future__ import annotations

import re
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import MERGE_PATCH, entry, patch_data, type_over, unique, value_field
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn
from tests.browser.save.test_failures import screenshots
from tests.browser.save.test_outcomes import deployment_body, edit, open_editor

pytestmark = pytest.mark.browser

RECORD: t.Final = """() => {
    const body = document.querySelector(".krm-editor .krm-body");
    window.krmTargets = [];
    window.krmTouched = new Set();
    for (const el of body.querySelectorAll("*")) el.krmMark = true;
    document.addEventListener("htmx:sse:after:message", event => {
        const data = event.detail.message.data || "";
        for (const found of data.matchAll(/<hx-partial hx-target="#([^"]+)"/g)) window.krmTargets.push(found[1]);
    });
    new MutationObserver(records => {
        for (const record of records) {
            const at = record.target instanceof Element ? record.target : record.target.parentElement;
            const owner = at && at.closest("[id]");
            if (owner) window.krmTouched.add(owner.id);
        }
    }).observe(body, {subtree: true, childList: true, attributes: true, characterData: true});
}"""
"""Records the target of every partial the page receives (``window.krmTargets``), the id of the
nearest element with one around every mutation in the editor's body (``window.krmTouched``), and
marks every element of the body (``el.krmMark``)."""

UNMARKED: t.Final = """ids => [...document.querySelectorAll(".krm-editor .krm-body *")]
    .filter(el => !el.krmMark && !ids.some(id => el.closest("#" + CSS.escape(id))))
    .map(el => el.id || el.tagName)"""
"""Elements of the body outside the elements ``ids`` that are not the ones the page was marked with."""


OUTSIDE: t.Final = """allowed => [...window.krmTouched].filter(id => !allowed.some(a => {
    const box = document.getElementById(a);
    const el = document.getElementById(id);
    return box !== null && el !== null && box.contains(el);
}))"""
"""Ids of the elements touched by a mutation that are not inside one of the elements ``allowed``."""


def record(page: Page) -> None:
    page.evaluate(RECORD)


def targets(page: Page) -> list[str]:
    return t.cast(list[str], page.evaluate("window.krmTargets"))


def touched(page: Page) -> set[str]:
    return set(t.cast(list[str], page.evaluate("[...window.krmTouched]")))


def caret(page: Page) -> tuple[str, int, int]:
    """The focused element's id and its selection."""
    return t.cast(
        tuple[str, int, int],
        tuple(
            page.evaluate(
                "[document.activeElement.id, document.activeElement.selectionStart, "
                "document.activeElement.selectionEnd]"
            )
        ),
    )


def component_id(page: Page) -> str:
    return t.cast(str, page.locator(".krm-editor").get_attribute("id"))


def test_a_colleagues_change_replaces_that_field_alone_and_shows_its_conflict_there(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api
) -> None:
    name = unique("fields")
    core.create_namespaced_config_map(
        NAMESPACE,
        t.cast(t.Any, {"metadata": {"name": name}, "data": {"greeting": "hello", "farewell": "bye", "other": "x"}}),
    )
    page = open_editor(signed_in, f"/configmaps/{name}")
    edit(page, "greeting", "hello there")
    edit(page, "farewell", "goodbye")
    cid = component_id(page)
    greeting = t.cast(str, entry(page, "greeting").get_attribute("id"))
    farewell = value_field(page, "farewell")
    farewell_id = t.cast(str, farewell.get_attribute("id"))
    record(page)

    # the person types in the middle of "goodbye" while a colleague changes greeting
    farewell.click()
    farewell.press("Home")
    for _ in range(4):
        farewell.press("ArrowRight")
    farewell.press_sequentially("-ish")
    patch_data(core, name, {"greeting": "hola"})
    expect(entry(page, "greeting").locator(".krm-conflict")).to_be_visible()
    assert caret(page) == (farewell_id, 8, 8)
    expect(farewell).to_have_value("good-ishbye")
    farewell.press_sequentially("!")
    expect(farewell).to_have_value("good-ish!bye")
    assert caret(page) == (farewell_id, 9, 9)

    conflict = entry(page, "greeting").locator(".krm-conflict")
    expect(conflict).to_contain_text("Changed by someone else")
    expect(conflict.locator(".krm-theirs")).to_have_text("hola")
    expect(value_field(page, "greeting")).to_have_value("hello there")
    expect(page.locator(f"#{cid}-announce")).to_contain_text("1 field was changed by someone else")

    # the typed text reaches the draft once the person pauses: its answer (to farewell's error slot)
    # is awaited here, so what is compared below is the same however fast the machine is
    expect(farewell).not_to_have_attribute("data-krm-unsent", "")
    sent = targets(page)
    assert greeting in sent, sent
    assert f"{cid}-body" not in sent, f"the whole body was sent: {sent}"
    # what may change besides: the person's own edit of farewell (its control and the error slot its
    # answer fills), the cluster's check of the draft (its region above Save), and the YAML tab's parts
    allowed = {greeting, farewell_id, f"{farewell_id}-error", f"{cid}-announce", f"{cid}-stream", f"{cid}-check"} | {
        target for target in sent if target.startswith(f"{cid}-yaml-") or target == f"{cid}-changes"
    }
    assert set(sent) <= allowed, sent
    assert page.evaluate(OUTSIDE, sorted(allowed)) == [], "an element outside the changed field was touched"
    assert page.evaluate(UNMARKED, sorted(allowed)) == [], "an element outside the changed field was replaced"
    screenshots(page, "field-update-conflict")

    # the draft has the typed text, and the YAML tab follows the draft
    expect(farewell).to_have_value("good-ish!bye")
    page.get_by_role("tab", name="YAML").click()
    yaml = page.locator(".krm-yaml-text")
    expect(yaml).to_have_value(re.compile(r"farewell: good-ish!bye\n(.|\n)*greeting: hello there\n"))
    patch_data(core, name, {"other": "y"})
    expect(yaml).to_have_value(re.compile(r"other: 'y'\n"))
    expect(page.locator(".krm-yaml-conflict")).to_contain_text("/data/greeting")


def test_a_colleague_scaling_a_deployment_leaves_the_image_being_typed_alone(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api
) -> None:
    name = unique("scaled")
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, deployment_body(name)))
    page = open_editor(signed_in, f"/deployments/{name}")
    cid = component_id(page)
    replicas = page.get_by_label("Replicas", exact=True)
    image = page.get_by_label("Image", exact=True)
    type_over(image, "registry.k8s.io/pause:3.9")
    expect(image).not_to_have_attribute("data-krm-unsent", "")
    replicas_id, image_id = t.cast(str, replicas.get_attribute("id")), t.cast(str, image.get_attribute("id"))
    record(page)

    image.click()
    image.press("End")
    image.press_sequentially("-rc1")
    apps.patch_namespaced_deployment(name, NAMESPACE, {"spec": {"replicas": 4}}, _content_type=MERGE_PATCH)
    expect(replicas).to_have_value("4")
    end = len("registry.k8s.io/pause:3.9-rc1")
    assert caret(page) == (image_id, end, end)
    expect(image).to_have_value("registry.k8s.io/pause:3.9-rc1")

    expect(image).not_to_have_attribute("data-krm-unsent", "")  # the answer to the typing is in
    sent = targets(page)
    assert replicas_id in sent and f"{cid}-body" not in sent, sent
    # besides the replicas: the person's image (its control and the error slot its answer fills), the
    # cluster's check of their draft, the YAML tab
    allowed = {replicas_id, image_id, f"{image_id}-error", f"{cid}-stream", f"{cid}-check"} | {
        target for target in sent if target.startswith(f"{cid}-yaml-") or target == f"{cid}-changes"
    }
    assert set(sent) <= allowed, sent
    assert page.evaluate(OUTSIDE, sorted(allowed)) == [], "an element outside the changed field was touched"
    assert page.evaluate(UNMARKED, sorted(allowed)) == [], "an element outside the changed field was replaced"
    expect(image).to_have_value("registry.k8s.io/pause:3.9-rc1")
    expect(replicas).to_have_value("4")
