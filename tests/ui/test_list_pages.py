"""Live lists row by row: one change sends one row; filter, sort and pages kept in the URL; counts."""

from __future__ import annotations

import re
import typing as t
from urllib.parse import parse_qsl, urlsplit

import pytest
from flask import Flask, render_template_string

from flask_krm.ui.render import row_id
from tests.ui.conftest import CONFIGMAPS, ChannelReader, PageHandle, Upstream, configmap, connect, open_page

LIST_PAGE: t.Final = (
    '{% import "krm/_macros.html" as krm %}<html><body>'
    '{{ krm.list(scope, columns=["/metadata/name", ("Size", "/data/size"), ("Labels", "/metadata/labels")], '
    'link="/cm/{name}", page_size=page_size) }}</body></html>'
)
TWO_LISTS: t.Final = (
    '{% import "krm/_macros.html" as krm %}{{ krm.list(scope, page_size=2) }}'
    '{{ krm.list(scope, page_size=2, url_key="other", title="Again") }}'
)


@pytest.fixture
def paged(app: Flask) -> Flask:
    @app.get("/paged/<int:size>")
    def paged_list(size: int) -> str:
        return render_template_string(LIST_PAGE, scope=CONFIGMAPS, page_size=size)

    @app.get("/two")
    def two() -> str:
        return render_template_string(TWO_LISTS, scope=CONFIGMAPS)

    return app


def signed_in(app: Flask, url: str) -> PageHandle:
    client = app.test_client()
    client.get("/login/editor")
    return open_page(client, url)


def many(count: int, start: int = 0) -> list[dict[str, t.Any]]:
    return [configmap(f"cm-{n:05d}", {"size": str(n)}) for n in range(start, start + count)]


def shown_names(html: str) -> list[str]:
    return re.findall(r'<th scope="row"><a href="/cm/([^"]+)">', html)


def partials(data: str) -> list[tuple[str, str]]:
    """(target id, swap style) of every partial of a channel message."""
    return re.findall(r'<hx-partial hx-target="#([^"]+)" hx-swap="([^"]+)">', data)


def nothing_more(reader: ChannelReader, wait: float = 0.3) -> bool:
    import gevent

    try:
        reader.next(timeout=wait)
    except gevent.Timeout:
        return True
    return False


def count_text(html: str) -> str:
    found = re.search(r'<p class="krm-count" id="[^"]+">(.*?)</p>', html, re.S)
    assert found, html
    return " ".join(found.group(1).split())


def test_a_change_to_one_object_sends_its_row_only(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, *many(300))
    page = signed_in(paged, "/paged/50")
    (cid,) = page.component_ids
    reader = connect(page)
    assert nothing_more(reader), "the first connection resent what the page painted"
    upstream.modified(configmap("cm-00007", {"size": "seven"}, rv="2"))
    message = reader.next()
    from flask_krm.ui.page import Component

    target = row_id(Component(cid, t.cast(t.Any, None)), "uid-cm-00007")
    assert partials(message.data) == [(target, "outerMorph")]
    assert "<td>seven</td>" in message.data and "cm-00006" not in message.data
    upstream.modified(configmap("cm-00200", {"size": "two hundred"}, rv="2"))
    assert nothing_more(reader), "a change to an object on another page sent something"
    reader.close()


def test_the_bytes_of_a_one_row_change_do_not_grow_with_the_list(paged: Flask, upstream: Upstream) -> None:
    sizes = []
    for count in (20, 2000):
        upstream.snapshot(CONFIGMAPS, *many(count))
        page = signed_in(paged, "/paged/50")
        reader = connect(page)
        assert nothing_more(reader)
        upstream.modified(configmap("cm-00003", {"size": "changed"}, rv=str(count)))
        sizes.append(len(reader.next().data))
        reader.close()
    assert sizes[0] == sizes[1], sizes
    assert sizes[1] < 1000, sizes


def test_a_new_object_is_inserted_at_its_sorted_place_and_a_deleted_one_removed(
    paged: Flask, upstream: Upstream
) -> None:
    upstream.snapshot(CONFIGMAPS, configmap("alpha", {}), configmap("charlie", {}), configmap("delta", {}))
    page = signed_in(paged, "/paged/50")
    (cid,) = page.component_ids
    reader = connect(page)
    upstream.added(configmap("bravo", {}, rv="5"))
    message = reader.next()
    charlie = re.search(rf'id="({cid}-r[0-9a-f]+)" data-krm-uid="uid-charlie"', page.html).group(1)  # type: ignore[union-attr]
    assert partials(message.data) == [(charlie, "beforebegin"), (f"{cid}-count", "outerMorph")]
    assert 'data-krm-uid="uid-bravo"' in message.data and "4 in total" in message.data
    upstream.added(configmap("echo", {}, rv="6"))
    assert partials(reader.next().data)[0] == (f"{cid}-rows", "beforeend")
    upstream.deleted(configmap("alpha", {}, rv="7"))
    message = reader.next()
    alpha = re.search(rf'id="({cid}-r[0-9a-f]+)" data-krm-uid="uid-alpha"', page.html).group(1)  # type: ignore[union-attr]
    assert partials(message.data)[0] == (alpha, "delete")
    assert "4 in total" in message.data
    reader.close()


def test_a_new_object_outside_the_page_updates_the_count_only(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, *many(10))
    page = signed_in(paged, "/paged/5")
    (cid,) = page.component_ids
    assert count_text(page.html) == "10 in total"
    reader = connect(page)
    upstream.added(configmap("zz-last", {}, rv="3"))
    message = reader.next()
    assert [target for target, _ in partials(message.data)] == [f"{cid}-count", f"{cid}-pager"]
    assert "11 in total" in message.data and "page 1 of 3" in message.data
    reader.close()


def test_a_row_that_leaves_the_page_pulls_the_next_one_in(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, *many(10))
    page = signed_in(paged, "/paged/5")
    (cid,) = page.component_ids
    reader = connect(page)
    upstream.deleted(configmap("cm-00002", {}, rv="4"))
    message = reader.next()
    swaps = partials(message.data)
    assert swaps[0][1] == "delete" and swaps[1] == (f"{cid}-rows", "beforeend")
    assert 'data-krm-uid="uid-cm-00005"' in message.data
    reader.close()


def test_a_resync_that_changes_many_rows_sends_the_whole_body(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, *many(20))
    page = signed_in(paged, "/paged/10")
    (cid,) = page.component_ids
    reader = connect(page)
    upstream.snapshot(CONFIGMAPS, *[configmap(f"cm-{n:05d}", {"size": str(n * 2)}, rv="9") for n in range(20)])
    message = reader.next()
    assert partials(message.data) == [(f"{cid}-body", "innerMorph")]
    assert len(shown_names(message.data)) == 10
    reader.close()


def test_filter_sort_and_page_come_from_the_url(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, *many(30), configmap("web-a", {"size": "3"}), configmap("web-b", {"size": "12"}))
    page = signed_in(paged, "/paged/10?configmaps.sort=-size&configmaps.page=2&keep=me")
    expected = [f"cm-{n:05d}" for n in range(19, 11, -1)] + ["web-b", "cm-00011"]
    assert shown_names(page.html) == expected, "descending by size, numbers by value, ties by name"
    assert "Rows 11–20 of 32, page 2 of 4" in page.html
    assert 'aria-sort="descending"' in page.html
    filtered = signed_in(paged, "/paged/10?configmaps.q=WEB")
    assert shown_names(filtered.html) == ["web-a", "web-b"]
    assert count_text(filtered.html) == "2 of 32 match"
    none = signed_in(paged, "/paged/10?configmaps.q=nothing-like-this")
    assert "Nothing matches “nothing-like-this”" in none.html and "Show all 32" in none.html


def test_links_keep_the_view_and_the_pages_other_parameters(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, *many(30))
    page = signed_in(paged, "/paged/10?keep=me&configmaps.q=cm&configmaps.page=2")
    hrefs = {m.group(1): m.group(2) for m in re.finditer(r'rel="(prev|next)" href="([^"]+)"', page.html)}
    import html

    following = dict(parse_qsl(urlsplit(html.unescape(hrefs["next"])).query))
    assert following == {"keep": "me", "configmaps.q": "cm", "configmaps.page": "3"}
    assert urlsplit(html.unescape(hrefs["next"])).path == "/paged/10"
    sort_link = html.unescape(re.search(r'class="krm-sort" href="([^"]+)">Size', page.html).group(1))  # type: ignore[union-attr]
    assert dict(parse_qsl(urlsplit(sort_link).query)) == {"keep": "me", "configmaps.q": "cm", "configmaps.sort": "size"}
    assert '<input type="hidden" name="keep" value="me">' in page.html


def test_two_lists_on_one_page_keep_their_own_parameters(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS, *many(6))
    page = signed_in(paged, "/two?other.page=3")
    first, second = (m.group(0) for m in re.finditer(r'<section id="krm-.*?</section>', page.html, re.S))
    assert "page 1 of 3" in first and "page 3 of 3" in second


@pytest.mark.parametrize(
    ("query", "page_text"),
    [
        ("configmaps.page=-1", "page 1 of 3"),
        ("configmaps.page=abc", "page 1 of 3"),
        ("configmaps.page=99999999999999", "page 3 of 3"),
    ],
)
def test_page_numbers_out_of_range_are_clamped(paged: Flask, upstream: Upstream, query: str, page_text: str) -> None:
    upstream.snapshot(CONFIGMAPS, *many(12))
    assert page_text in signed_in(paged, f"/paged/5?{query}").html


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("configmaps.sort=colour", "cannot be sorted by &#39;colour&#39;"),
        ("configmaps.q=" + "x" * 201, "longer than 200"),
    ],
)
def test_an_unknown_sort_column_or_a_huge_filter_is_a_400(
    paged: Flask, upstream: Upstream, query: str, says: str
) -> None:
    upstream.snapshot(CONFIGMAPS, *many(3))
    client = paged.test_client()
    client.get("/login/editor")
    response = client.get(f"/paged/5?{query}")
    assert response.status_code == 400
    assert says in response.get_data(as_text=True)


def test_cells_show_maps_as_chips_and_never_raw_json(paged: Flask, upstream: Upstream) -> None:
    labelled = configmap("tagged", {"size": "1"}, labels={"app": "web", "tier": "front"})
    upstream.snapshot(CONFIGMAPS, labelled)
    page = signed_in(paged, "/paged/5")
    assert '<li class="krm-chip">app=web</li><li class="krm-chip">tier=front</li>' in page.html
    assert '{"app"' not in page.html and "&#34;app&#34;" not in page.html


def test_empty_states_say_what_happens_next(paged: Flask, upstream: Upstream) -> None:
    upstream.snapshot(CONFIGMAPS)
    page = signed_in(paged, "/paged/5")
    assert "No configmaps in app yet: new ones appear here as soon as they are created." in page.html
    reader = connect(page)
    upstream.added(configmap("first", {}, rv="2"))
    message = reader.next()
    assert "first" in message.data and "No configmaps" not in message.data
    reader.close()
