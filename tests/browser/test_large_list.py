"""A live list of 5,000 ConfigMaps in Chromium: one change is sent and shown as its row alone (bytes
and nodes touched are counted, not timed: speed is measured in ``bench/``), without moving the
page; the filter, sort and pages live in the URL and the counts stay live."""

from __future__ import annotations

import re
import typing as t
from collections.abc import Iterator
from pathlib import Path

import kubernetes.client
import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import MERGE_PATCH, Server, serving, unique
from tests.browser.host_app import BULK

pytestmark = pytest.mark.browser

OBJECTS: t.Final = 5000
FIRST_LIVE_MS: t.Final = 60_000
"""How long a page may take to go live: a cold watch first lists all 5,000 objects (on a busy
2-core machine this took over 10 s); what is measured starts once the page is live."""

WATCH_MUTATIONS: t.Final = """name => {
    window.__krmShown = false;
    window.__krmMutated = [];
    for (const el of document.querySelectorAll("body *")) el.__krmMark = true;
    new MutationObserver(records => {
        for (const record of records) {
            const at = record.target instanceof Element ? record.target : record.target.parentElement;
            window.__krmMutated.push({
                at, type: record.type, added: record.addedNodes.length, removed: record.removedNodes.length,
            });
        }
        const cell = [...document.querySelectorAll("tbody th")].find(th => th.textContent.trim() === name);
        if (cell && cell.closest("tr").textContent.includes("changed-value")) window.__krmShown = true;
    }).observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
}"""
"""Marks every element of the page and records every mutation from now on (``window.__krmMutated``);
``window.__krmShown`` turns true once the row of ``name`` shows the changed value."""

MUTATED: t.Final = """name => {
    const row = [...document.querySelectorAll("tbody th")].find(th => th.textContent.trim() === name).closest("tr");
    const where = el => el === null ? "?" : (el.closest("[id]") || el).id || el.tagName;
    return {
        outside: [...new Set(window.__krmMutated.filter(m => !row.contains(m.at)).map(m => where(m.at)))],
        inside: window.__krmMutated.filter(m => row.contains(m.at)).length,
        added: window.__krmMutated.reduce((n, m) => n + m.added, 0),
        removed: window.__krmMutated.reduce((n, m) => n + m.removed, 0),
        unmarked: [...document.querySelectorAll("body *")].filter(el => !el.__krmMark && !row.contains(el)).length,
        cells: row.querySelectorAll("*").length,
        rows: document.querySelectorAll("tbody tr").length,
    };
}"""
"""What the page's mutations touched: ids outside the row of ``name``, mutations inside it, nodes
added and removed, new elements outside the row, the row's own elements and the rows shown."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    traffic = tmp_path_factory.mktemp("traffic") / "responses.log"
    with serving(traffic, bulk=OBJECTS) as info:
        yield Server(info["url"], info["kubeconfig"], traffic)


def live(page: Page) -> None:
    """Waits until the page (just opened or navigated to) is live."""
    expect(page.locator(".krm-connection").first).to_have_text("Live", timeout=FIRST_LIVE_MS)


def load(page: Page, path: str) -> None:
    """Opens ``path`` and waits until the page is live."""
    page.goto(path)
    live(page)


def row(page: Page, name: str) -> t.Any:
    return page.locator("tbody tr").filter(has=page.get_by_role("link", name=name, exact=True))


def count(page: Page) -> t.Any:
    return page.locator(".krm-count")


def add(core: kubernetes.client.CoreV1Api, name: str, value: str) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"value": value}}
    core.create_namespaced_config_map(BULK, t.cast(t.Any, body))


def natural(text: str) -> list[t.Any]:
    """Text as people order it: runs of digits by their number."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text.casefold())]


def total(page: Page) -> int:
    text = count(page).inner_text()
    found = re.search(r"([\d,]+) in total|of ([\d,]+) match", text)
    assert found, text
    return int((found.group(1) or found.group(2)).replace(",", ""))


def test_one_change_on_a_5000_object_list_is_shown_as_its_row_alone(
    page: Page, core: kubernetes.client.CoreV1Api, server: Server
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    load(page, "/bulk?size=500")
    assert total(page) >= OBJECTS
    expect(page.locator("tbody tr")).to_have_count(500)
    target = row(page, "item-00300")
    link = target.get_by_role("link")
    link.scroll_into_view_if_needed()
    link.focus()
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 1000, "the row is far down the page"
    sent_before = len(server.traffic_bytes())
    page.evaluate(WATCH_MUTATIONS, "item-00300")
    core.patch_namespaced_config_map(
        "item-00300", BULK, {"data": {"value": "changed-value"}}, _content_type=MERGE_PATCH
    )
    expect(target.locator("td").first).to_have_text("changed-value")
    page.wait_for_function("window.__krmShown")
    # what keeps it fast on a page of 500 rows: the row's own few nodes are morphed in place, and no
    # other element of the page is touched or replaced (no re-render of the table, no layout moved)
    mutated = page.evaluate(MUTATED, "item-00300")
    assert mutated["outside"] == [], f"elements outside the row were touched: {mutated['outside']}"
    assert mutated["unmarked"] == 0, "elements outside the row were replaced"
    assert 0 < mutated["inside"] <= 2 * mutated["cells"], mutated
    assert mutated["added"] + mutated["removed"] <= 2 * mutated["cells"], mutated
    assert mutated["rows"] == 500
    assert page.evaluate("window.scrollY") == scrolled
    assert page.evaluate("document.activeElement.textContent") == "item-00300"
    assert page.evaluate("document.activeElement === document.querySelector('a[href=\"/bulk/item-00300\"]')")
    sent = server.traffic_bytes()[sent_before:]
    assert b"changed-value" in sent and b'hx-swap="outerMorph"><tr' in sent
    assert b"-body" not in sent and b"item-00301" not in sent, "more than the row was sent"
    assert len(sent) < 4096, f"{len(sent)} bytes sent for one row"


def test_the_filter_is_kept_in_the_url_and_its_counts_stay_live(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    load(page, "/bulk")
    search = page.get_by_role("searchbox", name="Filter")
    search.fill("item-0001")
    search.press("Enter")
    expect(page).to_have_url(re.compile(r"configmaps\.q=item-0001"))
    live(page)
    expect(page.locator("tbody tr")).to_have_count(10)
    before = total(page)
    expect(count(page)).to_have_text(f"10 of {before:,} match")
    name = f"item-0001-{unique('new')}"
    add(core, name, "fresh")
    expect(row(page, name)).to_have_count(1)
    expect(count(page)).to_have_text(f"11 of {before + 1:,} match")
    add(core, unique("elsewhere"), "x")
    expect(count(page)).to_have_text(f"11 of {before + 2:,} match")
    page.reload()
    live(page)
    expect(page.get_by_role("searchbox", name="Filter")).to_have_value("item-0001")
    expect(page.locator("tbody tr")).to_have_count(11)
    page.get_by_role("link", name="Clear filter").click()
    live(page)
    expect(page).not_to_have_url(re.compile(r"configmaps\.q="))
    expect(count(page)).to_have_text(f"{before + 2:,} in total")


@pytest.mark.parametrize("width", [1280, 390])
def test_the_filter_applies_as_you_type_keeping_focus_and_caret(page: Page, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    load(page, "/bulk?size=20")
    search = page.get_by_role("searchbox", name="Filter Many ConfigMaps", exact=True)
    expect(page.locator("form.krm-filter button[type=submit]")).to_be_hidden()  # typing is enough
    search.click()
    search.press_sequentially("item-0001", delay=40)  # no Enter
    expect(page).to_have_url(re.compile(r"configmaps\.q=item-0001(&|$)"))
    live(page)
    expect(count(page)).to_have_text(re.compile(r"^1\d of [\d,]+ match$"))  # item-00010 to -00019 (and any added)
    expect(search).to_be_focused()
    expect(search).to_have_value("item-0001")
    assert search.evaluate("f => [f.selectionStart, f.selectionEnd]") == [9, 9]
    # the caret where the person put it, and typing on from there
    search.press("ArrowLeft")
    search.press("ArrowLeft")
    search.press("Backspace")  # item-001
    expect(page).to_have_url(re.compile(r"configmaps\.q=item-001(&|$)"))
    live(page)
    expect(search).to_be_focused()
    expect(search).to_have_value("item-001")
    assert search.evaluate("f => [f.selectionStart, f.selectionEnd]") == [6, 6]
    search.press("End")
    search.press_sequentially("00", delay=40)  # item-00100
    expect(page).to_have_url(re.compile(r"configmaps\.q=item-00100(&|$)"))
    live(page)
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(search).to_be_focused()
    assert search.evaluate("f => [f.selectionStart, f.selectionEnd]") == [10, 10]
    page.screenshot(path=f"/tmp/filter-as-you-type-{width}.png", full_page=True)


def test_sorting_by_a_column_and_paging_are_links_a_reload_keeps(page: Page, core: kubernetes.client.CoreV1Api) -> None:
    load(page, "/bulk?size=20")
    page.locator("a.krm-sort", has_text="Value").click()
    expect(page).to_have_url(re.compile(r"configmaps\.sort=value(&|$)"))
    live(page)
    expect(page.get_by_role("columnheader", name="Value")).to_have_attribute("aria-sort", "ascending")
    page.locator("a.krm-sort", has_text="Value").click()
    expect(page).to_have_url(re.compile(r"configmaps\.sort=-value"))
    live(page)
    expect(page.get_by_role("columnheader", name="Value")).to_have_attribute("aria-sort", "descending")
    values = page.locator("tbody tr td:first-of-type").all_inner_texts()
    assert len(values) == 20 and values == sorted(values, key=natural, reverse=True)
    pager = page.locator(".krm-page")
    everything = total(page)
    expect(pager).to_have_text(f"Rows 1–20 of {everything:,}, page 1 of {-(-everything // 20):,}")
    page.get_by_role("link", name="Next").click()
    expect(page).to_have_url(re.compile(r"configmaps\.page=2"))
    expect(page).to_have_url(re.compile(r"size=20"))
    live(page)
    expect(pager).to_have_text(re.compile(r"^Rows 21–40 of "))
    first_on_page_two = page.locator("tbody tr td:first-of-type").first.inner_text()
    page.reload()
    live(page)
    expect(page.locator("tbody tr td:first-of-type").first).to_have_text(first_on_page_two)
    add(core, unique("paged"), "v0")
    expect(pager).to_have_text(re.compile(rf"^Rows 21–40 of {everything + 1:,}, page 2 of "))
    expect(count(page)).to_have_text(f"{everything + 1:,} in total")


@pytest.mark.parametrize("width", [1280, 390])
def test_cells_show_chips_and_the_filter_fits_the_window(page: Page, width: int, tmp_path: Path) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    load(page, "/bulk?size=20&configmaps.q=batch")
    expect(page.locator("tbody tr")).to_have_count(20)
    chips = page.locator("tbody tr").first.locator(".krm-chip")
    expect(chips).to_have_count(1)
    expect(chips.first).to_have_text(re.compile(r"^batch=\d$"))
    box = page.get_by_role("searchbox", name="Filter").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    page.screenshot(path=str(tmp_path / f"list-{width}.png"), full_page=True)
