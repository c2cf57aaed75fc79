"""Arrays as structure in a real browser: containers, env and ports item by item, args as rows.

A colleague (a write to the simulator) changes a container while the person edits it; the
person's edits stay with their items, the colleague's change stays on the server, and a conflict
is shown only where both changed the same field.
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterator

import kubernetes.client
import pytest
from playwright.sync_api import Locator, Page, Route, expect

from tests.browser.conftest import type_over, unique
from tests.browser.host_app import NAMESPACE
from tests.browser.save.conftest import SignedIn, WriteCounter
from tests.browser.save.test_outcomes import deployment_body, open_editor, outcome, save

pytestmark = pytest.mark.browser

JSON_PATCH: t.Final = "application/json-patch+json"
CONTAINERS: t.Final = "/spec/template/spec/containers"


def body(name: str) -> dict[str, t.Any]:
    """A Deployment with two containers, the first with args, env and ports."""
    deployment = deployment_body(name)
    deployment["spec"]["template"]["spec"]["containers"] = [
        {
            "name": "app",
            "image": "registry.k8s.io/pause:3.10",
            "args": ["--port=8080"],
            "env": [{"name": "MODE", "value": "fast"}, {"name": "LEVEL", "value": "1"}],
            "ports": [{"containerPort": 8080, "protocol": "TCP"}],
        },
        {"name": "side", "image": "registry.k8s.io/pause:3.9"},
    ]
    return deployment


@pytest.fixture
def deployment(apps: kubernetes.client.AppsV1Api) -> Iterator[str]:
    name = unique("lists")
    apps.create_namespaced_deployment(NAMESPACE, t.cast(t.Any, body(name)))
    yield name
    apps.delete_namespaced_deployment(name, NAMESPACE)


def field(page: Page, pointer: str) -> Locator:
    """The input of the field at ``pointer`` (items of keyed lists written ``[name=app]``)."""
    return page.locator(f'[data-krm-path="{pointer}"]').locator("input, textarea").first


def item(page: Page, pointer: str) -> Locator:
    return page.locator(f'fieldset.krm-item[data-krm-path="{pointer}"]')


def typed(locator: Locator, text: str) -> None:
    """Type ``text`` over the field and wait until the server holds it."""
    type_over(locator, text)
    expect(locator).not_to_have_attribute("data-krm-unsent", "")


def container(apps: kubernetes.client.AppsV1Api, name: str, index: int = 0) -> t.Any:
    return apps.read_namespaced_deployment(name, NAMESPACE).spec.template.spec.containers[index]


def colleague_sets(apps: kubernetes.client.AppsV1Api, name: str, path: str, value: t.Any) -> None:
    apps.patch_namespaced_deployment(
        name, NAMESPACE, [{"op": "replace", "path": path, "value": value}], _content_type=JSON_PATCH
    )


def saved(page: Page) -> None:
    """Save what is dirty and wait until the live view confirms it."""
    expect(page.locator(".krm-dirty-marker").first).to_be_visible()
    save(page)
    expect(page.locator(".krm-dirty-marker")).to_have_count(0)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "saved")


def test_a_colleagues_image_survives_two_saves_of_my_env_edits(
    signed_in: SignedIn,
    apps: kubernetes.client.AppsV1Api,
    deployment: str,
    count_writes: t.Callable[[str], WriteCounter],
) -> None:
    page = open_editor(signed_in, f"/deployments/{deployment}")
    mode = field(page, f"{CONTAINERS}/[name=app]/env/[name=MODE]/value")
    image = field(page, f"{CONTAINERS}/[name=app]/image")
    expect(mode).to_have_value("fast")
    typed(mode, "slow")
    colleague_sets(apps, deployment, f"{CONTAINERS}/0/image", "colleague/app:2")
    expect(image).to_have_value("colleague/app:2")  # a field not being typed in shows the draft
    writes = count_writes(deployment)
    saved(page)
    app = container(apps, deployment)
    assert app.image == "colleague/app:2" and app.env[0].value == "slow"
    typed(mode, "slower")
    saved(page)
    app = container(apps, deployment)
    assert app.image == "colleague/app:2", "the colleague's image is still there"
    assert [(e.name, e.value) for e in app.env] == [("MODE", "slower"), ("LEVEL", "1")]
    assert writes.count() == 2
    expect(page.locator(".krm-conflict")).to_have_count(0)


def test_both_changing_the_same_item_field_is_a_conflict_at_that_field(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, deployment: str
) -> None:
    page = open_editor(signed_in, f"/deployments/{deployment}")
    pointer = f"{CONTAINERS}/[name=app]/image"
    typed(field(page, pointer), "mine/app:3")
    colleague_sets(apps, deployment, f"{CONTAINERS}/0/image", "theirs/app:3")
    conflict = page.locator(f'[data-krm-path="{pointer}"] .krm-conflict')
    expect(conflict).to_contain_text("theirs/app:3")
    expect(page.locator(".krm-conflict")).to_have_count(1)
    save(page)
    expect(outcome(page)).to_have_attribute("data-krm-outcome", "draft-conflict")
    conflict.get_by_role("button", name="Keep mine").click()
    expect(conflict).to_have_count(0)
    saved(page)
    assert container(apps, deployment).image == "mine/app:3"


def test_a_colleagues_change_arriving_while_i_type_is_a_conflict_not_an_overwrite(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, deployment: str
) -> None:
    page = open_editor(signed_in, f"/deployments/{deployment}")
    pointer = f"{CONTAINERS}/[name=app]/image"
    held: list[Route] = []
    page.route("**/edit", lambda route: held.append(route))
    image = field(page, pointer)
    with page.expect_request("**/edit"):
        type_over(image, "mine/app:4")
    while not held:  # the debounced edit left and is held on its way
        page.wait_for_timeout(20)
    apps.patch_namespaced_deployment(
        deployment,
        NAMESPACE,
        [
            {"op": "replace", "path": f"{CONTAINERS}/0/image", "value": "theirs/app:4"},
            {"op": "replace", "path": "/spec/replicas", "value": 2},
        ],
        _content_type=JSON_PATCH,
    )
    expect(page.get_by_label("Replicas", exact=True)).to_have_value("2")  # their change reached the draft
    expect(image).to_have_value("mine/app:4")  # the field being typed in keeps what I typed
    held[0].continue_()
    page.unroute("**/edit")
    conflict = page.locator(f'[data-krm-path="{pointer}"] .krm-conflict')
    expect(conflict).to_contain_text("theirs/app:4")
    conflict.get_by_role("button", name="Take theirs").click()
    expect(conflict).to_have_count(0)
    expect(image).to_have_value("theirs/app:4")
    expect(page.locator(".krm-dirty-marker")).to_have_count(0)  # nothing of mine is left to save
    assert container(apps, deployment).image == "theirs/app:4"
    assert apps.read_namespaced_deployment(deployment, NAMESPACE).spec.replicas == 2


def test_items_and_rows_are_added_removed_and_saved(
    signed_in: SignedIn, apps: kubernetes.client.AppsV1Api, deployment: str
) -> None:
    page = open_editor(signed_in, f"/deployments/{deployment}")
    app = item(page, f"{CONTAINERS}/[name=app]")
    # a new env variable, from its name
    app.get_by_label("Name of the new item of env", exact=False).fill("EXTRA")
    app.get_by_role("button", name="Add an item to env").click()
    extra = field(page, f"{CONTAINERS}/[name=app]/env/[name=EXTRA]/value")
    typed(extra, "on")
    # args rows: add one, type it, remove the first
    app.get_by_role("button", name="Add a row to args").click()
    second = field(page, f"{CONTAINERS}/[name=app]/args/1")
    typed(second, "--verbose")
    app.get_by_role("button", name="Remove args 1").click()
    expect(field(page, f"{CONTAINERS}/[name=app]/args/0")).to_have_value("--verbose")
    # remove the MODE variable and the side container
    item(page, f"{CONTAINERS}/[name=app]/env/[name=MODE]").get_by_role("button", name="Remove MODE").click()
    item(page, f"{CONTAINERS}/[name=side]").get_by_role("button", name="Remove side").click()
    expect(item(page, f"{CONTAINERS}/[name=side]")).to_have_count(0)
    saved(page)
    spec = apps.read_namespaced_deployment(deployment, NAMESPACE).spec.template.spec
    assert [c.name for c in spec.containers] == ["app"]
    assert spec.containers[0].args == ["--verbose"]
    assert [(e.name, e.value) for e in spec.containers[0].env] == [("LEVEL", "1"), ("EXTRA", "on")]


def test_a_duplicate_item_is_refused_at_the_list(signed_in: SignedIn, deployment: str) -> None:
    page = open_editor(signed_in, f"/deployments/{deployment}")
    app = item(page, f"{CONTAINERS}/[name=app]")
    app.get_by_label("Name of the new item of env", exact=False).fill("MODE")
    app.get_by_role("button", name="Add an item to env").click()
    expect(app.locator(".krm-error").filter(has_text="already in the list")).to_be_visible()
    expect(page.locator(".krm-dirty-marker")).to_have_count(0)
