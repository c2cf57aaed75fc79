"""The example's forms from the cluster's own schema, in headless Chromium against its simulator:
the ``web`` container gets its first environment variable, another port and its first argument
from the form while an administrator changes its image (all kept), ``imagePullPolicy`` is a select
of the schema's values, and the Flunder editor (no ``fields=``) shows its spec with each field's
description. Screenshots at 1280 and 390 px go to ``/tmp/krm-schema-*.png``."""

from __future__ import annotations

import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import Example

pytestmark = pytest.mark.browser
WAIT_MS: t.Final = 15_000
NAMESPACE: t.Final = "demo"
PHONE: t.Final = {"width": 390, "height": 844}
CONTAINER: t.Final = "/spec/template/spec/containers/[name=web]"


def sign_in(browser: Browser, example: Example, **options: t.Any) -> Page:
    page = browser.new_context(base_url=example.url, **options).new_page()
    page.goto("/sign-in")
    page.fill("input[name=username]", "editor")
    page.fill("input[name=password]", "editor")
    page.click("button[type=submit]")
    expect(page.locator("header.site .who strong")).to_have_text("editor", timeout=WAIT_MS)
    return page


def open_live(page: Page, path: str) -> None:
    page.goto(path)
    for status in page.locator(".krm-connection").all():
        expect(status).to_have_text("Live", timeout=WAIT_MS)


def field(page: Page, pointer: str) -> t.Any:
    """The control of the field at ``pointer`` (an item of a keyed list as ``[name=web]``)."""
    return page.locator(f'[data-krm-path="{pointer}"] > .krm-input')


def save(page: Page) -> None:
    outcome = page.locator(".krm-editor .krm-outcome [data-krm-outcome]")
    for _ in range(5):
        with page.expect_response(lambda r: r.url.endswith("/actions/save") and r.request.method == "POST") as answer:
            page.click(".krm-action-save")
        if answer.value.status != 409:
            break
        expect(outcome).to_have_attribute("data-krm-outcome", "version-stale", timeout=WAIT_MS)
    expect(outcome).to_have_attribute("data-krm-outcome", "saved", timeout=WAIT_MS)


def fits_a_phone(page: Page, name: str) -> None:
    """At 390 px the page does not scroll sideways (screenshot: ``/tmp/krm-schema-<name>-390.png``)."""
    page.set_viewport_size(PHONE)
    page.screenshot(path=f"/tmp/krm-schema-{name}-390.png", full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


def apps(example: Example) -> t.Any:
    return kubernetes.client.AppsV1Api(example.admin_api())


def test_the_web_container_gets_its_first_env_a_port_and_an_arg_from_the_form_while_its_image_changes(
    browser: Browser, example: Example
) -> None:
    page = sign_in(browser, example)
    open_live(page, f"/namespaces/{NAMESPACE}/deployments/web")
    before = apps(example).read_namespaced_deployment("web", NAMESPACE).spec.template.spec.containers[0]
    assert before.env is None and before.args is None

    policy = field(page, f"{CONTAINER}/imagePullPolicy")
    expect(policy).to_have_js_property("tagName", "SELECT")
    assert policy.locator("option").all_inner_texts() == ["Always", "IfNotPresent", "Never"]

    add = page.get_by_label("Add a field to web", exact=True)
    add.select_option("env")
    page.get_by_label("Name of the new item of env", exact=True).fill("LOG_LEVEL")
    page.get_by_role("button", name="Add an item to env").click()
    value = field(page, f"{CONTAINER}/env/[name=LOG_LEVEL]/value")
    expect(value).to_be_visible(timeout=WAIT_MS)
    value.fill("debug")

    page.get_by_label("Container port of the new item of ports", exact=True).fill("9090")
    page.get_by_role("button", name="Add an item to ports").click()
    expect(page.locator(".krm-item-name", has_text="9090/TCP")).to_be_visible(timeout=WAIT_MS)

    add.select_option("args")
    page.get_by_role("button", name="Add a row to args").click()
    row = field(page, f"{CONTAINER}/args/0")
    expect(row).to_be_visible(timeout=WAIT_MS)
    row.fill("--log-format=json")

    apps(example).patch_namespaced_deployment(  # an administrator rolls out a new image meanwhile
        "web",
        NAMESPACE,
        {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.10.1"}]}}}},
    )
    expect(field(page, f"{CONTAINER}/image")).to_have_value("registry.k8s.io/pause:3.10.1", timeout=WAIT_MS)
    expect(value).to_have_value("debug")
    page.screenshot(path="/tmp/krm-schema-deployment-1280.png", full_page=True)
    save(page)

    web = apps(example).read_namespaced_deployment("web", NAMESPACE).spec.template.spec.containers[0]
    assert web.image == "registry.k8s.io/pause:3.10.1"
    assert [(e.name, e.value) for e in web.env] == [("LOG_LEVEL", "debug")]
    assert sorted((p.container_port, p.protocol) for p in web.ports) == [(8080, "TCP"), (9090, "TCP")]
    assert web.args == ["--log-format=json"]

    # resources: {} (as Kubernetes writes it for a container given none) is shown as absent, its
    # members offered in the container's list; a quantity is checked as it is typed, at its field
    expect(page.locator(f'[data-krm-path="{CONTAINER}/resources"]')).to_have_count(0)
    page.get_by_label("Add a field to web", exact=True).select_option("resources/limits")
    limits = page.locator(f'[data-krm-path="{CONTAINER}/resources/limits"]')
    expect(limits).to_be_visible(timeout=WAIT_MS)
    page.get_by_label("New key in Limits", exact=True).fill("cpu")
    page.get_by_label("Value of the new key in Limits", exact=True).fill("lots")
    page.get_by_role("button", name="Add a key to Limits", exact=True).click()
    expect(limits.locator(".krm-error").last).to_have_text("Enter a quantity, such as 500m, 2 or 128Mi.")
    fits_a_phone(page, "deployment")


def test_the_flunder_editor_shows_its_spec_from_the_crd_schema(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example)
    open_live(page, f"/namespaces/{NAMESPACE}/flunders/fl-1")
    spec = page.locator('[data-krm-path="/spec"]')
    expect(spec.locator("legend").first).to_have_text("Spec")
    expect(spec.locator(".krm-help").first).to_have_text("What the Flunder should be.")
    reference = page.locator('[data-krm-path="/spec/reference"]')
    expect(reference.locator(".krm-label")).to_have_text("Reference")
    expect(reference.locator(".krm-help")).to_have_text(
        "The name of another Flunder in the same namespace (empty: none)."
    )
    ports = page.locator('[data-krm-path="/spec/ports"]')
    expect(ports.locator(".krm-help").first).to_have_text("The ports the Flunder serves, one per name.")
    port = page.locator('[data-krm-path="/spec/ports/[name=http]/port"]')
    expect(port.locator(".krm-help")).to_have_text("The port number.")
    expect(port.locator("input")).to_have_attribute("max", "65535")
    page.get_by_label("Add a field to http", exact=True).select_option("protocol")
    protocol = field(page, "/spec/ports/[name=http]/protocol")
    assert protocol.locator("option").all_inner_texts() == ["TCP", "UDP", "SCTP"]
    expect(protocol).to_have_value("TCP")
    page.screenshot(path="/tmp/krm-schema-flunder-1280.png", full_page=True)
    page.get_by_role("button", name="Remove Protocol").click()
    expect(protocol).to_have_count(0, timeout=WAIT_MS)
    fits_a_phone(page, "flunder")


def flunders(example: Example) -> t.Any:
    return kubernetes.client.CustomObjectsApi(example.admin_api())


def test_a_flunders_open_member_is_edited_as_yaml(browser: Browser, example: Example) -> None:
    flunders(example).patch_namespaced_custom_object(  # another tool sets a member the CRD keeps undeclared
        "wardle.example.com", "v1alpha1", NAMESPACE, "flunders", "fl-2", {"spec": {"schedule": {"every": "1h"}}}
    )
    page = sign_in(browser, example)
    open_live(page, f"/namespaces/{NAMESPACE}/flunders/fl-2")
    schedule = field(page, "/spec/schedule")
    expect(schedule).to_have_js_property("tagName", "TEXTAREA")
    expect(schedule).to_have_value("every: 1h")
    expect(page.get_by_role("button", name="Remove Schedule")).to_be_visible()  # kept by the CRD, not required
    error = page.locator('[data-krm-path="/spec/schedule"] > .krm-error')
    schedule.fill("every: 1h\nzones: [a, b]\nevery: 2h")
    expect(error).to_contain_text("written twice", timeout=WAIT_MS)
    expect(error).to_contain_text("line 3")
    page.screenshot(path="/tmp/krm-schema-yaml-refused-1280.png", full_page=True)
    schedule.fill("every: 2h\nzones: [a, b]")
    expect(error).to_be_empty(timeout=WAIT_MS)
    expect(page.locator('[data-krm-path="/spec/schedule"].krm-dirty')).to_be_visible(timeout=WAIT_MS)
    ports = page.locator('[data-krm-path="/spec/ports/[name=http]/port"]')
    expect(ports.locator(".krm-label")).to_have_text("Port")
    save(page)
    saved = flunders(example).get_namespaced_custom_object(
        "wardle.example.com", "v1alpha1", NAMESPACE, "flunders", "fl-2"
    )
    assert saved["spec"]["schedule"] == {"every": "2h", "zones": ["a", "b"]}
    page.screenshot(path="/tmp/krm-schema-yaml-1280.png", full_page=True)
    fits_a_phone(page, "yaml")
