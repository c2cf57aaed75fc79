"""The YAML tab in a real browser, saving to the simulator while a controller changes the object.

- Replicas and a container's env edited in YAML while a controller rolls a new image and writes
  status: Save writes the person's paths, the controller's image stays.
- A change to the same field by someone else shows as a conflict at its line in the YAML tab and at
  the field in the form, and Take theirs / Keep mine resolve it.
- Typing in the YAML tab while the controller keeps changing the object (30 s under CI, 15 s
  otherwise) loses no key and keeps the caret where the person types.
- A Secret's YAML never shows a value; a placeholder left in place never overwrites one, and one
  changed is refused at its line.
"""

from __future__ import annotations

import base64
import os
import time
import typing as t
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Locator, Page, expect

from flask_krm.testing import KubeSimulator
from tests.browser.conftest import MERGE_PATCH, goto_live, unique
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn
from tests.browser.save.test_churn import RECORD_EACH_OUTCOME, Controller, save_until_saved
from tests.browser.save.test_outcomes import SAVED, deployment_body, outcome

pytestmark = pytest.mark.browser

TYPING_SECONDS: t.Final = 30.0 if os.environ.get("CI") else 15.0
CONTROLLER_EVERY: t.Final = 0.3


@dataclass
class Rollout(Controller):
    """Writes the Deployment's status and rolls its image every :data:`CONTROLLER_EVERY` seconds
    (the image only while ``images``)."""

    images: bool = True
    image: str = ""

    def _run(self) -> None:
        while not self._stop.wait(CONTROLLER_EVERY):
            self.writes += 1
            status = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": self.writes}
            self._patch(self.apps.patch_namespaced_deployment_status, {"status": status})
            if self.images:
                image = f"registry.k8s.io/pause:3.{self.writes}"
                containers = [{"name": "app", "image": image}]
                self._patch(
                    self.apps.patch_namespaced_deployment, {"spec": {"template": {"spec": {"containers": containers}}}}
                )
                self.image = image

    def _patch(self, call: t.Callable[..., t.Any], body: dict[str, t.Any]) -> None:
        response = call(self.name, NAMESPACE, body, _content_type=MERGE_PATCH, _preload_content=False)
        response.read()
        response.release_conn()


@pytest.fixture
def deployment(apps: kubernetes.client.AppsV1Api) -> str:
    name = unique("yaml")
    body = deployment_body(name)
    body["metadata"]["labels"] = {"app": name}
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, body))
    return name


@pytest.fixture
def controller(kube: KubeSimulator, deployment: str) -> Iterator[Rollout]:
    running = Rollout(kubernetes.client.AppsV1Api(kube.api_client("admin")), deployment).start()
    yield running
    running.stop()


def yaml_tab(page: Page, name: str) -> Locator:
    """Opens the YAML tab; the text area."""
    page.get_by_role("tab", name="YAML", exact=True).click()
    text = page.get_by_label(f"{name} as YAML", exact=True)
    expect(text).to_be_visible()
    expect(text).not_to_have_value("")
    return text


def message(page: Page) -> Locator:
    return page.locator(".krm-yaml-message")


def replace_in(text: Locator, old: str, new: str) -> None:
    """Edits the text as a person would: selects ``old`` (its first occurrence) and types ``new``."""
    current = text.input_value()
    at = current.index(old)
    text.evaluate("(el, [start, end]) => { el.focus(); el.setSelectionRange(start, end); }", [at, at + len(old)])
    text.page.keyboard.type(new)


def end_rollout(page: Page, controller: Rollout) -> None:
    """The rollout ends (status keeps churning) and the draft holds the controller's last image."""
    controller.images = False
    written = controller.writes
    deadline = time.monotonic() + 30
    while controller.writes < written + 2 and time.monotonic() < deadline:  # an image write under way has landed
        page.wait_for_timeout(CONTROLLER_EVERY * 1000)
    expect(page.locator(".krm-yaml-source")).to_contain_text(f"image: {controller.image}")


def keeps_writing(controller: Rollout) -> None:
    """The controller writes status again after the Save, so the Save was made between its writes."""
    written = controller.writes
    deadline = time.monotonic() + 10
    while controller.writes <= written and time.monotonic() < deadline:
        time.sleep(CONTROLLER_EVERY / 3)
    assert controller.writes > written, "the controller stopped writing status"


def save(page: Page) -> None:
    """Save, and save again after a refreshed message, as the person would."""
    page.evaluate(RECORD_EACH_OUTCOME)
    save_until_saved(page)
    expect(outcome(page)).to_contain_text(SAVED)


def applied(page: Page) -> None:
    expect(message(page)).not_to_have_text("")
    expect(page.locator(".krm-yaml-problems")).to_have_text("")
    expect(message(page)).to_contain_text("Applied")
    expect(page.locator(".krm-yaml-text")).not_to_have_attribute("data-krm-unsent", "")


def test_yaml_edits_save_only_the_persons_paths_while_a_controller_rolls_the_image(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, deployment: str, controller: Rollout, tmp_path: Path
) -> None:
    page = goto_live(signed_in("editor"), f"/deployments/{deployment}")
    text = yaml_tab(page, deployment)
    replace_in(text, "replicas: 1", "replicas: 3")
    applied(page)  # a pause: the text takes the draft, the controller's new image included
    replace_in(text, "- name: app\n", "- name: app\n        env:\n        - name: MODE\n          value: fast\n")
    applied(page)
    page.get_by_role("tab", name="Your changes", exact=True).click()
    changes = page.locator(".krm-changes-yaml")
    expect(changes).to_contain_text("replicas: 3")
    expect(changes).to_contain_text("name: MODE")
    page.screenshot(path=str(tmp_path / "yaml-your-changes.png"), full_page=True)
    end_rollout(page, controller)
    save(page)
    keeps_writing(controller)
    controller.stop()
    saved = apps.read_namespaced_deployment(deployment, NAMESPACE)
    container = saved.spec.template.spec.containers[0]
    assert saved.spec.replicas == 3
    assert [(e.name, e.value) for e in container.env] == [("MODE", "fast")]
    assert container.image == controller.image, "the controller's image was not overwritten"
    assert saved.status.updated_replicas == controller.writes


def test_a_same_field_change_is_a_conflict_in_yaml_and_in_the_form(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, deployment: str, tmp_path: Path
) -> None:
    page = goto_live(signed_in("editor"), f"/deployments/{deployment}")
    text = yaml_tab(page, deployment)
    replace_in(text, "replicas: 1", "replicas: 4")
    applied(page)
    apps.patch_namespaced_deployment(deployment, NAMESPACE, {"spec": {"replicas": 6}}, _content_type=MERGE_PATCH)
    conflict = page.locator(".krm-yaml-conflict")
    expect(conflict).to_be_visible()
    line = text.input_value().split("\n").index("  replicas: 4") + 1
    expect(conflict.locator(".krm-yaml-goto")).to_have_text(f"Line {line}")
    expect(conflict.locator(".krm-theirs")).to_have_text("6")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.screenshot(path=str(tmp_path / "yaml-conflict-desktop.png"), full_page=True)
    page.set_viewport_size({"width": 390, "height": 844})
    page.screenshot(path=str(tmp_path / "yaml-conflict-390.png"), full_page=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    conflict.locator(".krm-yaml-goto").click()
    assert text.evaluate("el => el.value.slice(el.selectionStart, el.selectionEnd)") == "  replicas: 4"
    page.get_by_role("tab", name="Form", exact=True).click()
    form_conflict = page.locator(".krm-fields .krm-conflict")
    expect(form_conflict).to_be_visible()
    expect(form_conflict.locator(".krm-theirs")).to_have_text("6")
    page.get_by_role("tab", name="YAML", exact=True).click()
    assert "  replicas: 4\n" in text.input_value(), "switching tabs lost nothing"
    conflict.get_by_role("button", name="Keep mine").click()
    expect(conflict).to_have_count(0)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(outcome(page)).to_contain_text(SAVED)
    assert apps.read_namespaced_deployment(deployment, NAMESPACE).spec.replicas == 4


def test_typing_during_churn_loses_no_key_and_keeps_the_caret(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, deployment: str, controller: Rollout, tmp_path: Path
) -> None:
    page = goto_live(signed_in("editor"), f"/deployments/{deployment}")
    page.evaluate("""() => {
        window.krmNotes = 0;
        const note = document.querySelector(".krm-yaml-note");
        new MutationObserver(() => { if (note.textContent) window.krmNotes++; })
            .observe(note, {childList: true, characterData: true, subtree: true});
    }""")
    text = yaml_tab(page, deployment)
    anchor = f"  labels:\n    app: {deployment}"
    at = text.input_value().index(anchor) + len(anchor)
    text.evaluate("(el, at) => { el.focus(); el.setSelectionRange(at, at); }", at)
    typed: list[str] = []
    deadline = time.monotonic() + TYPING_SECONDS
    while time.monotonic() < deadline:
        key = f"k{len(typed)}"
        page.keyboard.type(f"\n    {key}: v{len(typed)}", delay=25)
        typed.append(key)
        value, caret = text.evaluate("el => [el.value, el.selectionStart]")
        line = f"    {key}: v{len(typed) - 1}"
        assert value[:caret].endswith(line), f"the caret left the end of {line!r}"
        if len(typed) % 3 == 0:
            page.wait_for_timeout(1200)  # a pause: the edit is applied, the text takes the draft
            value, caret = text.evaluate("el => [el.value, el.selectionStart]")
            assert value[:caret].endswith(line), f"the caret left the end of {line!r} after a merge"
    applied(page)
    end_rollout(page, controller)
    assert t.cast(int, page.evaluate("window.krmNotes")) > 0, "the tab said that the server changed lines"
    save(page)
    saved = apps.read_namespaced_deployment(deployment, NAMESPACE)
    labels = saved.metadata.labels
    assert [k for k in typed if labels.get(k) != f"v{typed.index(k)}"] == [], "every typed key was saved"
    assert saved.spec.template.spec.containers[0].image == controller.image
    assert controller.writes >= TYPING_SECONDS / CONTROLLER_EVERY / 3
    controller.stop()
    page.screenshot(path=str(tmp_path / "yaml-after-typing.png"), full_page=True)


def test_a_secrets_yaml_never_shows_a_value_and_a_placeholder_never_overwrites_one(
    signed_in: SignedIn, core: kubernetes.client.CoreV1Api, tmp_path: Path
) -> None:
    name = unique("yaml-secret")
    values = {"password": base64.b64encode(b"hunter2-yaml").decode(), "token": base64.b64encode(b"t0ken-yaml").decode()}
    core.create_namespaced_secret(
        NAMESPACE, t.cast(t.Any, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": values})
    )
    page = goto_live(signed_in("editor"), f"/secrets/{name}")
    text = yaml_tab(page, name)
    shown = text.input_value()
    assert "password: !withheld 'not shown'" in shown and "token: !withheld 'not shown'" in shown
    html = page.content()
    for secret in [*values.values(), "hunter2-yaml", "t0ken-yaml"]:
        assert secret not in html and secret not in shown
    replace_in(text, "password: !withheld 'not shown'", "password: aGk=")
    problem = page.locator(".krm-yaml-problem")
    line = text.input_value().split("\n").index("  password: aGk=") + 1
    expect(problem).to_contain_text(f"Line {line}:")
    expect(problem).to_contain_text("withheld")
    page.screenshot(path=str(tmp_path / "yaml-secret-refused.png"), full_page=True)
    replace_in(text, "password: aGk=", "password: !withheld 'not shown'")
    replace_in(text, f"  name: {name}\n", f"  name: {name}\n  labels:\n    team: blue\n")
    applied(page)
    expect(problem).to_have_count(0)
    page.get_by_role("button", name="Save", exact=True).click()
    expect(outcome(page)).to_contain_text(SAVED)
    saved = core.read_namespaced_secret(name, NAMESPACE)
    assert saved.data == values, "a placeholder left in place wrote nothing"
    assert saved.metadata.labels == {"team": "blue"}


def gutter_lines(page: Page) -> list[str]:
    return page.locator(".krm-yaml-gutter").inner_text().split()


def line_top(text: Locator, line: int) -> float:
    """Where line ``line`` (from 1) of the text area is drawn, in page pixels."""
    return float(
        text.evaluate(
            """(el, line) => {
                const style = getComputedStyle(el);
                const inset = parseFloat(style.borderTopWidth) + parseFloat(style.paddingTop);
                const top = el.getBoundingClientRect().top + inset;
                return top + (line - 1) * parseFloat(style.lineHeight) - el.scrollTop;
            }""",
            line,
        )
    )


def gutter_top(page: Page, line: int) -> float:
    box = page.locator(".krm-yaml-gutter > span").nth(line - 1).bounding_box()
    assert box is not None
    return box["y"]


@pytest.mark.parametrize("width", [1280, 390])
def test_the_yaml_text_has_line_numbers_that_its_problems_cite(
    signed_in: SignedIn, deployment: str, width: int, tmp_path: Path
) -> None:
    page = signed_in("editor")
    page.set_viewport_size({"width": width, "height": 900})
    goto_live(page, f"/deployments/{deployment}")
    text = yaml_tab(page, deployment)
    count = text.input_value().count("\n") + 1
    expect(page.locator(".krm-yaml-gutter > span")).to_have_count(count)
    assert gutter_lines(page) == [str(n) for n in range(1, count + 1)]
    assert page.locator(".krm-yaml-gutter").get_attribute("aria-hidden") == "true"
    assert abs(gutter_top(page, 1) - line_top(text, 1)) < 2, "line 1's number is beside line 1"

    # a broken line: the problem names its line, and that number is beside it
    replace_in(text, "replicas: 1", "replicas: [1\n  oops: ")
    expect(page.locator(".krm-yaml-gutter > span")).to_have_count(count + 1)  # as the person types
    problem = page.locator(".krm-yaml-problem[data-krm-yaml-line]").first
    expect(problem).to_be_visible()
    cited = int(problem.get_attribute("data-krm-yaml-line") or "0")
    expect(problem.locator(".krm-yaml-where")).to_contain_text(f"Line {cited}")
    assert 1 <= cited <= count + 1
    text.evaluate("el => { el.scrollTop = el.scrollHeight; el.dispatchEvent(new Event('scroll')); }")
    last = count + 1
    page.wait_for_function(
        "() => Math.abs(document.querySelector('.krm-yaml-gutter').scrollTop"
        " - document.querySelector('.krm-yaml-text').scrollTop) < 1"
    )
    assert abs(gutter_top(page, last) - line_top(text, last)) < 2, "scrolled together"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=f"/tmp/yaml-line-numbers-{width}.png", full_page=False)
    replace_in(text, "replicas: [1\n  oops: ", "replicas: 1")
    expect(page.locator(".krm-yaml-gutter > span")).to_have_count(count)
    expect(page.locator(".krm-yaml-problem")).to_have_count(0)
