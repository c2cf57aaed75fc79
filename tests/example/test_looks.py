"""The example's pages as a Kubernetes person reads them, in headless Chromium: one heading per
page, labelled fields, status as badges with a rollout line, an audit page in words, a styled
404, and no horizontal scrolling of any page on a 390 px phone."""

from __future__ import annotations

import base64
import time
import typing as t

import kubernetes.client
import pytest
from playwright.sync_api import Browser, Page, expect

from .conftest import Example

pytestmark = pytest.mark.browser
WAIT_MS: t.Final = 15_000
NAMESPACE: t.Final = "demo"
PHONE: t.Final = {"width": 390, "height": 844}
UNSCALED: t.Final = "web"
"""The demo Deployment whose replicas no one else changes (the demo controller scales ``worker``
now and then: a Save of its replicas could meet that change as a conflict)."""

PAGES: t.Final = (
    f"/namespaces/{NAMESPACE}",
    "/namespaces/demo-staging",
    f"/namespaces/{NAMESPACE}/deployments/web",
    f"/namespaces/{NAMESPACE}/deployments/worker",
    f"/namespaces/{NAMESPACE}/configmaps/app-config",
    f"/namespaces/{NAMESPACE}/flunders/fl-1",
    f"/namespaces/{NAMESPACE}/secrets/db-credentials",
    f"/namespaces/{NAMESPACE}/configmaps/no-such-configmap",
    "/audit",
    "/namespaces/kube-system",
)
"""Every kind of page the example serves (the last is its 404)."""


def sign_in(browser: Browser, example: Example, user: str = "editor", **options: t.Any) -> Page:
    page = browser.new_context(base_url=example.url, **options).new_page()
    page.goto("/sign-in")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", user)
    page.click("button[type=submit]")
    expect(page.locator("header.site .who strong")).to_have_text(user, timeout=WAIT_MS)
    return page


def settle(page: Page) -> None:
    """Every live component of the page is live (or the page has none)."""
    for status in page.locator(".krm-connection").all():
        expect(status).to_have_text("Live", timeout=WAIT_MS)


def scroll_width(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_no_page_scrolls_sideways_on_a_phone(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example, viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    widths = {}
    for path in PAGES:
        page.goto(path)
        settle(page)
        widths[path] = scroll_width(page)
    page.context.clear_cookies()
    page.goto("/sign-in")
    widths["/sign-in"] = scroll_width(page)
    assert widths == {path: width for path, width in widths.items() if width <= PHONE["width"]}, widths


LONG_URL: t.Final = "https://downloads.example.com/releases/" + "a1b2c3d4e5f6" * 22 + "/artifact.tar.gz"
LONG_HASH: t.Final = "sha256:" + "0123456789abcdef" * 18 + "01234567"


def test_no_page_scrolls_sideways_on_a_phone_with_long_unbroken_values(browser: Browser, example: Example) -> None:
    """300 characters without a space (a URL, a digest) in a ConfigMap's values, keys and labels:
    every page that shows it (the overview's list, its editor) still fits 390 px."""
    assert len(LONG_URL) >= 300 and len(LONG_HASH) >= 300
    name = "long-values"
    body = {
        "metadata": {"name": name, "labels": {"checksum": "c" * 63}},
        "data": {"download-url": LONG_URL, "digest": LONG_HASH, "k" * 250: "short"},
    }
    with example.admin_api() as api:
        core = kubernetes.client.CoreV1Api(api)
        core.create_namespaced_config_map(NAMESPACE, body)
        try:
            page = sign_in(browser, example, viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
            widths = {}
            for path in (*PAGES, f"/namespaces/{NAMESPACE}/configmaps/{name}"):
                page.goto(path)
                settle(page)
                widths[path] = scroll_width(page)
            page.goto(f"/namespaces/{NAMESPACE}")
            settle(page)
            expect(page.get_by_text(LONG_HASH[:40], exact=False).first).to_be_visible()
            page.screenshot(path="/tmp/looks-phone-long-values.png", full_page=True)
            page.goto(f"/namespaces/{NAMESPACE}/configmaps/{name}")
            settle(page)
            page.get_by_role("tab", name="YAML").click()
            widths["yaml tab"] = scroll_width(page)
        finally:
            core.delete_namespaced_config_map(name, NAMESPACE)
    assert widths == {path: width for path, width in widths.items() if width <= PHONE["width"]}, widths


def test_the_overview_on_a_phone_stacks_its_lists_and_scrolls_tables_inside_them(
    browser: Browser, example: Example
) -> None:
    page = sign_in(browser, example, viewport=PHONE)
    page.goto(f"/namespaces/{NAMESPACE}")
    settle(page)
    boxes = [c.bounding_box() for c in page.locator(".grid > .krm-component").all()]
    assert len(boxes) == 4 and all(box is not None and box["x"] + box["width"] <= PHONE["width"] for box in boxes)
    assert len({round(box["x"]) for box in boxes if box is not None}) == 1, "the lists stack in one column"
    box = page.locator(".krm-list .krm-table-box").first
    assert box.evaluate("b => getComputedStyle(b).overflowX") == "auto"
    header = page.locator("header.site").bounding_box()
    assert header is not None and header["width"] <= PHONE["width"]
    expect(page.get_by_role("button", name="Sign out")).to_be_in_viewport()


TABLES: t.Final = """() => [...document.querySelectorAll("table")].map(table => {
    let box = table.parentElement;  // the nearest box that clips the table sideways
    while (box !== document.body && getComputedStyle(box).overflowX === "visible") box = box.parentElement;
    const heads = table.querySelectorAll("thead th");
    const last = heads[heads.length - 1].getBoundingClientRect();
    const edge = box.getBoundingClientRect();
    return {
        header: heads[heads.length - 1].textContent.trim() || "(actions)",
        cut: last.right > edge.left + box.clientWidth + 0.5,
        scrolls: ["auto", "scroll"].includes(getComputedStyle(box).overflowX),
    };
})"""
EDGES: t.Final = """async png => {  // mean brightness of the image's leftmost, middle and rightmost 4 px
    const image = new Image();
    image.src = "data:image/png;base64," + png;
    await image.decode();
    const canvas = Object.assign(document.createElement("canvas"), {width: image.width, height: image.height});
    const context = canvas.getContext("2d");
    context.drawImage(image, 0, 0);
    const strip = x => {
        const data = context.getImageData(x, 0, 4, image.height).data;
        let sum = 0;
        for (let i = 0; i < data.length; i += 4) sum += (data[i] + data[i + 1] + data[i + 2]) / 3;
        return sum / (data.length / 4);
    };
    return {left: strip(0), middle: strip((image.width >> 1) - 2), right: strip(image.width - 4)};
}"""
SHADOW: t.Final = 12.0
"""How much darker (of 255) an edge with a scroll shadow is than the middle of its box."""


def shadowed_edges(page: Page, table: int, pixels: Page) -> dict[str, bool]:
    """Which edges of the ``table``-th table's scroll box are shaded, with the table itself hidden
    (so only the box's own background is seen)."""
    shown = page.locator("table").nth(table)
    box = shown.locator("xpath=..")
    box.scroll_into_view_if_needed()
    clip = box.bounding_box()
    assert clip is not None
    shown.evaluate("t => { t.style.visibility = 'hidden'; }")
    try:
        edges = pixels.evaluate(EDGES, base64.b64encode(page.screenshot(clip=clip)).decode())
    finally:
        shown.evaluate("t => { t.style.visibility = ''; }")
    return {side: edges["middle"] - edges[side] > SHADOW for side in ("left", "right")}


def scrolled_edges(page: Page, table: int, pixels: Page, *, at_end: bool) -> dict[str, bool]:
    """Which edges of the ``table``-th table's box are shaded once it is scrolled to its start or
    its end. A live update may redraw or widen the table between the scroll and the screenshot, so
    it is scrolled and measured again until the shading is the one expected, for ``WAIT_MS`` at most."""
    expected = {"left": at_end, "right": not at_end}
    box = page.locator("table").nth(table).locator("xpath=..")
    deadline = time.monotonic() + WAIT_MS / 1000
    while True:
        box.evaluate("(b, end) => { b.scrollLeft = end ? b.scrollWidth : 0; }", at_end)
        edges = shadowed_edges(page, table, pixels)
        if edges == expected or time.monotonic() > deadline:
            return edges
        page.wait_for_timeout(200)


def test_every_table_shows_its_last_column_or_scrolls_in_a_box_with_a_shadow_at_its_edge(
    browser: Browser, example: Example
) -> None:
    """On a phone a table too wide for its box scrolls inside it, and since a touch screen shows no
    scrollbar, a shadow at the box's edge says which way more columns lie: on the right before
    scrolling, on the left once scrolled to the end. At 1280 px every table shows all its columns."""
    pages = (f"/namespaces/{NAMESPACE}", f"/namespaces/{NAMESPACE}/deployments/worker", "/audit")
    page = sign_in(browser, example, viewport=PHONE, is_mobile=True, has_touch=True)
    page.goto(f"/namespaces/{NAMESPACE}/deployments/{UNSCALED}")  # a refused Save: the audit has an entry
    settle(page)
    page.get_by_role("spinbutton", name="Replicas", exact=True).fill("11")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".krm-outcome [data-krm-outcome]")).to_have_attribute("data-krm-outcome", "refused")
    page.get_by_role("button", name="Discard changes").click()
    pixels = page.context.new_page()
    cut: dict[str, list[str]] = {}
    for path in pages:
        page.goto(path)
        settle(page)
        tables = page.evaluate(TABLES)
        assert tables, path
        for index, table in enumerate(tables):
            if not table["cut"]:
                continue
            cut.setdefault(path, []).append(table["header"])
            assert table["scrolls"], (path, table)
            assert scrolled_edges(page, index, pixels, at_end=False) == {"left": False, "right": True}, (path, table)
            assert scrolled_edges(page, index, pixels, at_end=True) == {"left": True, "right": False}, (path, table)
    assert set(cut) == set(pages), cut  # each page has a table wider than a phone
    page.set_viewport_size({"width": 1280, "height": 900})
    for path in pages:
        page.goto(path)
        settle(page)
        assert not [table for table in page.evaluate(TABLES) if table["cut"]], path


def test_every_page_has_one_level_one_heading(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example)
    headings = {}
    for path in PAGES:
        page.goto(path)
        headings[path] = page.get_by_role("heading", level=1).all_inner_texts()
    assert headings[f"/namespaces/{NAMESPACE}/deployments/web"] == ["Deployment web"]
    assert headings[f"/namespaces/{NAMESPACE}/configmaps/app-config"] == ["ConfigMap app-config"]
    assert headings["/namespaces/kube-system"] == ["Not found"]
    assert all(len(found) == 1 for found in headings.values()), headings


def test_deployments_show_status_badges_conditions_and_a_rollout_line(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example)
    page.goto(f"/namespaces/{NAMESPACE}/deployments/web")
    settle(page)
    status = page.locator(".krm-list", has=page.get_by_role("heading", name="Live status"))
    health = status.locator("[data-krm-health]")
    expect(health).to_have_attribute("data-krm-health", "healthy", timeout=WAIT_MS)
    expect(health).to_have_text("Healthy")
    expect(status.locator(".krm-badge", has_text="ready")).to_have_text("2/2 ready")
    expect(status.locator('[data-krm-condition="Available"]')).to_have_text("Available: MinimumReplicasAvailable")
    expect(status.locator('[data-krm-condition="Progressing"]')).to_contain_text("NewReplicaSetAvailable")
    expect(status.locator(".krm-rollout-text")).to_have_text("Rolled out: 2 of 2 replicas available")
    colour = health.evaluate("b => getComputedStyle(b).backgroundColor")

    replicas = page.get_by_role("spinbutton", name="Replicas", exact=True)
    expect(replicas).to_have_value("2")
    with example.admin_api() as api:  # someone else scales it: the rollout moves, live
        kubernetes.client.AppsV1Api(api).patch_namespaced_deployment(
            "web", NAMESPACE, {"spec": {"replicas": 5}}, _content_type="application/merge-patch+json"
        )
    expect(health).to_have_attribute("data-krm-health", "progressing", timeout=WAIT_MS)
    expect(status.locator(".krm-rollout-text")).to_contain_text("Rolling out")
    assert health.evaluate("b => getComputedStyle(b).backgroundColor") != colour, "progressing has its own colour"
    assert status.locator("progress").evaluate("p => p.value < p.max")
    expect(health).to_have_attribute("data-krm-health", "healthy", timeout=WAIT_MS)
    expect(status.locator(".krm-badge", has_text="ready")).to_have_text("5/5 ready")

    page.goto(f"/namespaces/{NAMESPACE}")
    deployments = page.locator(".krm-list", has=page.get_by_role("heading", name="Deployments"))
    web = deployments.locator("tr", has=page.get_by_role("link", name="web", exact=True))
    expect(web.locator("[data-krm-health]")).to_have_text("Healthy", timeout=WAIT_MS)
    expect(web.locator(".krm-rollout-text")).to_have_text("Rolled out: 5 of 5 replicas available")


def test_the_audit_page_words_outcomes_and_gives_the_reason_for_a_refusal(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example)
    page.goto(f"/namespaces/{NAMESPACE}/deployments/{UNSCALED}")
    settle(page)
    replicas = page.get_by_role("spinbutton", name="Replicas", exact=True)
    replicas.fill("11")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".krm-outcome [data-krm-outcome]")).to_have_attribute("data-krm-outcome", "refused")
    page.get_by_role("button", name="Discard changes").click()
    expect(replicas).not_to_have_value("11")

    page.goto("/audit")
    refused = page.locator("tr.audit-entry", has_text=f"Deployment {NAMESPACE}/{UNSCALED}").first
    expect(refused).to_have_attribute("data-outcome", "refused")
    expect(refused.locator(".outcome .krm-badge")).to_have_text("Refused")
    expect(refused.locator(".reason")).to_have_text(
        "spec.replicas: at most 10 replicas may be set from this application"
    )
    assert refused.locator(".krm-badge").evaluate("b => getComputedStyle(b).color") == "rgb(164, 14, 38)"
    assert "saved-pending" not in page.locator("table.audit").inner_text()


@pytest.mark.parametrize("width", [1280, PHONE["width"]])
def test_a_save_hook_refusal_naming_a_field_is_shown_at_that_field(
    browser: Browser, example: Example, width: int
) -> None:
    page = sign_in(browser, example, viewport={"width": width, "height": 900})
    page.goto(f"/namespaces/{NAMESPACE}/deployments/{UNSCALED}")
    settle(page)
    replicas = page.get_by_role("spinbutton", name="Replicas", exact=True)
    replicas.fill("11")
    page.get_by_role("button", name="Save", exact=True).click()
    outcome = page.locator(".krm-outcome [data-krm-outcome]")
    expect(outcome).to_have_attribute("data-krm-outcome", "refused")
    expect(outcome.locator(".krm-outcome-detail")).to_have_text(
        "spec.replicas: at most 10 replicas may be set from this application"
    )
    expect(outcome.locator(".krm-outcome-causes")).to_have_count(0)  # said once, by the detail
    error = page.locator(".krm-error", has=page.locator(".krm-cause"))
    expect(error).to_have_count(1)
    expect(error).to_have_text("at most 10 replicas may be set from this application")
    error_id = error.get_attribute("id")
    assert error_id and error_id in (replicas.get_attribute("aria-describedby") or "").split()
    assert replicas.evaluate("f => getComputedStyle(f).borderColor") == "rgb(180, 35, 24)"  # --krm-conflict
    assert scroll_width(page) <= width
    replicas.scroll_into_view_if_needed()
    page.screenshot(path=f"/tmp/hook-refusal-at-field-{width}.png")
    replicas.fill("10")  # fixed: the next Save's outcome clears the mark
    page.get_by_role("button", name="Save", exact=True).click()
    expect(outcome).not_to_have_attribute("data-krm-outcome", "refused")
    expect(page.locator(".krm-cause")).to_have_count(0)
    assert replicas.evaluate("f => getComputedStyle(f).borderColor") != "rgb(180, 35, 24)"


def test_an_unknown_namespace_is_a_styled_404_of_the_application(browser: Browser, example: Example) -> None:
    page = sign_in(browser, example)
    answer = page.goto("/namespaces/kube-system")
    assert answer is not None and answer.status == 404
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    expect(page.locator(".not-found .reason")).to_have_text(
        "Namespace 'kube-system' is not served by this application."
    )
    expect(page.get_by_role("navigation", name="Namespaces")).to_be_visible()
    page.locator(".not-found").get_by_role("link", name=NAMESPACE, exact=True).click()
    expect(page).to_have_url(f"{example.url}/namespaces/{NAMESPACE}")
