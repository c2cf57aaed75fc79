"""Editor live updates block by block: a change to one field sends that field's element alone;
a change of the editor's structure sends its whole body."""

from __future__ import annotations

import json
import re
import typing as t

import pytest
from flask.testing import FlaskClient
from markupsafe import Markup

from flask_krm.ui.editor_updates import Block, EditorUpdates, cut_blocks, element_span, shown_editor, with_edits
from flask_krm.ui.page import Component
from tests.ui.conftest import CONFIGMAPS, ChannelReader, PageHandle, Upstream, configmap, connect, field_id, open_page
from tests.ui.test_channel import nothing_more
from tests.ui.test_rendering import editor_url

LABELS: t.Final = ("metadata", "labels")
DATA: t.Final = ("data",)
TEAM: t.Final = ("metadata", "labels", "team")


def swaps(data: str) -> list[tuple[str, str]]:
    """(target id, swap style) of every partial of a channel message."""
    return re.findall(r'<hx-partial hx-target="#([^"]+)" hx-swap="([A-Za-z]+)">', data)


def body_of(page: PageHandle, cid: str) -> str:
    match = re.search(
        rf'<div id="{cid}-body" class="krm-body">(.*?)</div>\s*<div class="krm-yaml-panel"', page.html, re.S
    )
    assert match, page.html
    return match.group(1)


def big_configmap(labels: dict[str, str], rv: str = "1") -> dict[str, t.Any]:
    return configmap("demo", {f"key-{n:03}": f"value {n}" for n in range(60)}, rv=rv, labels=labels)


@pytest.fixture
def opened(client: FlaskClient, upstream: Upstream) -> tuple[PageHandle, str, ChannelReader]:
    upstream.snapshot(CONFIGMAPS, big_configmap({"team": "a"}))
    page = open_page(client, editor_url())
    reader = connect(page)
    assert nothing_more(reader), "the first connection resent what the page painted"
    return page, page.component_ids[0], reader


def test_a_change_to_one_field_sends_that_field_alone(
    opened: tuple[PageHandle, str, ChannelReader], upstream: Upstream
) -> None:
    page, cid, reader = opened
    upstream.modified(big_configmap({"team": "b"}, rv="2"))
    message = reader.next()
    team = field_id(cid, TEAM)
    assert swaps(message.data) == [(team, "outerMorph"), (f"{cid}-yaml-source", "outerMorph")]
    field_part = message.data.split(f'<hx-partial hx-target="#{cid}-yaml-source"')[0]
    assert f'id="{team}" name="value" value="b"' in field_part and "key-000" not in field_part
    body = body_of(page, cid)
    assert len(field_part.encode()) * 20 < len(body.encode()), "a one-field update is not much smaller than the body"
    reader.close()


def test_a_conflict_is_sent_with_its_field_and_announced(
    opened: tuple[PageHandle, str, ChannelReader], upstream: Upstream
) -> None:
    page, cid, reader = opened
    team = field_id(cid, TEAM)
    assert page.edit(cid, op="set", path=json.dumps(list(TEAM)), value="mine").status_code == 200
    mine = reader.next()
    labels = f"{field_id(cid, LABELS)}-field"
    assert [target for target, _ in swaps(mine.data)][:1] == [labels], "the labels turned dirty"
    assert re.search(rf'<div data-krm-edits="1" [^>]*id="{labels}"', mine.data), "the block carries the count"
    upstream.modified(big_configmap({"team": "theirs"}, rv="2"))
    message = reader.next()
    targets = [target for target, _ in swaps(message.data)]
    assert targets == [f"{cid}-announce", f"{team}-field", f"{cid}-yaml-conflicts"], "the YAML still shows mine"
    entry_part = message.data.split("</hx-partial>")[1]
    assert f'id="{team}-conflict"' in entry_part and f'id="{team}" name="value" value="mine"' in entry_part
    assert "theirs" in entry_part and 'data-krm-edits="1"' in entry_part
    reader.close()


def test_a_new_top_level_field_sends_the_whole_body(
    opened: tuple[PageHandle, str, ChannelReader], upstream: Upstream
) -> None:
    _, cid, reader = opened
    grown = big_configmap({"team": "a"}, rv="2")
    grown["binaryData"] = {"blob": "AAAA"}
    upstream.modified(grown)
    assert swaps(reader.next().data) == [(f"{cid}-body", "innerMorph")]
    reader.close()


def test_the_object_going_away_sends_the_whole_body(
    opened: tuple[PageHandle, str, ChannelReader], upstream: Upstream
) -> None:
    _, cid, reader = opened
    upstream.deleted(big_configmap({"team": "a"}))
    message = reader.next()
    assert swaps(message.data) == [(f"{cid}-body", "innerMorph")]
    assert "does not exist" in message.data
    reader.close()


def test_a_new_key_in_a_map_sends_that_map_alone(
    opened: tuple[PageHandle, str, ChannelReader], upstream: Upstream
) -> None:
    page, cid, reader = opened
    assert page.edit(cid, op="add_key", path=json.dumps(list(LABELS)), key="tier", value="web").status_code == 200
    message = reader.next()
    assert [target for target, _ in swaps(message.data)] == [
        f"{field_id(cid, LABELS)}-field",
        f"{cid}-yaml-source",
        f"{cid}-changes",
    ]
    assert f'id="{field_id(cid, ("metadata", "labels", "tier"))}-field"' in message.data
    reader.close()


# -------------------------------------------------------------------------- cutting a body --

BODY: t.Final = (
    '<span id="s" hidden></span>\n<p id="a">x</p>\n<dl class="i"><dt>Kind</dt><dd>ConfigMap</dd></dl>\n'
    '<div class="fields"><div id="f1"><input id="i1" value="1"><textarea id="t">a <b> c</textarea></div>'
    '<div id="f2"><br><p>two</p></div><input id="lonely" value="v"></div>'
)


def rebuilt(own: str, blocks: tuple[Block, ...]) -> str:
    """``own`` markup with each inner block put back in its place."""
    for block in blocks:
        own = own.replace(f"\x00{block.id}\x00", rebuilt(block.own, block.inner))
    return own


def test_a_body_is_its_skeleton_and_its_blocks() -> None:
    cut = cut_blocks(BODY)
    assert cut is not None
    assert [block.id for block in cut.blocks] == ["s", "a", "f1", "f2", "lonely"]
    f1 = cut.blocks[2]
    assert f1.markup == '<div id="f1"><input id="i1" value="1"><textarea id="t">a <b> c</textarea></div>'
    assert f1.own == '<div id="f1">\x00i1\x00\x00t\x00</div>'
    assert [block.id for block in f1.inner] == ["i1", "t"] and f1.inner[1].inner == ()
    assert rebuilt(cut.skeleton, cut.blocks) == BODY
    assert "ConfigMap" in cut.skeleton and "two" not in cut.skeleton


@pytest.mark.parametrize("broken", ["<div id='x'><p>open</div>", "<div><span id='x'></span>", "</div>"])
def test_markup_that_does_not_nest_cannot_be_cut(broken: str) -> None:
    assert cut_blocks(broken) is None


@pytest.mark.parametrize("twice", ['<p id="x"></p><div><span id="x"></span></div>', '<p id="x">\x00</p>'])
def test_a_body_with_an_id_twice_or_a_nul_is_never_cut(twice: str) -> None:
    assert cut_blocks(twice) is None


def test_only_an_id_attribute_a_selector_can_name_makes_a_block() -> None:
    cut = cut_blocks(
        '<p title="the id=x" data-id="y">a</p><div id="a.b"><span id="inner">b</span></div><i ID=\'plain\'>c</i>'
    )
    assert cut is not None
    assert [block.id for block in cut.blocks] == ["inner", "plain"]
    assert cut.skeleton.startswith('<p title="the id=x" data-id="y">a</p><div id="a.b">\x00inner\x00</div>')


def test_an_element_is_found_by_its_id_whatever_it_holds() -> None:
    for element_id, element in (
        ("f1", '<div id="f1"><input id="i1" value="1"><textarea id="t">a <b> c</textarea></div>'),
        ("f2", '<div id="f2"><br><p>two</p></div>'),
        ("i1", '<input id="i1" value="1">'),
        ("t", '<textarea id="t">a <b> c</textarea>'),
    ):
        span = element_span(BODY, element_id)
        assert span is not None and BODY[span[0] : span[1]] == element
    assert element_span(BODY, "nowhere") is None
    assert element_span('<div id="open"><p>', "open") is None


def test_the_edit_count_goes_on_the_block_root() -> None:
    assert with_edits('<div id="f1" class="x"><p>a</p></div>', 7) == (
        '<div data-krm-edits="7" id="f1" class="x"><p>a</p></div>'
    )
    assert with_edits('<input id="i1">', 0) == '<input id="i1">'


def test_updates_fall_back_to_the_whole_body() -> None:
    component = Component("krm-000000000000", t.cast(t.Any, None))
    updates = EditorUpdates(component, shown_editor(BODY))
    assert updates.changes(Markup(BODY), 0) == []
    changed = updates.changes(Markup(BODY.replace(">two<", ">deux<")), 0)
    assert [target for target, _ in swaps("".join(changed))] == ["f2"]
    assert [target for target, _ in swaps("".join(updates.changes(Markup(BODY.replace("Kind", "Sort")), 0)))] == [
        "krm-000000000000-body"
    ], "a change outside every block is a change of structure"
    first, second = '<div id="f1">', '<div id="f2">'
    f1 = BODY[BODY.index(first) : BODY.index(second)]
    moved = BODY.replace(f1, "").replace('<input id="lonely"', f1 + '<input id="lonely"')  # the same fields reordered
    assert updates.changes(Markup(BODY), 0)
    assert [target for target, _ in swaps("".join(updates.changes(Markup(moved), 0)))] == ["krm-000000000000-body"]
    only_count = updates.changes(Markup(moved), 3)
    assert swaps("".join(only_count)) == [("krm-000000000000-body", "innerMorph")]
    assert 'data-krm-edits="3"' in only_count[0], "only the count changed: the whole body carries it"
    assert updates.changes(Markup(moved), 3) == []
    fresh = EditorUpdates(component, shown_editor(BODY))
    big = BODY.replace("a <b> c", "x" * 400)
    assert swaps("".join(fresh.changes(Markup(big), 0))) == [("krm-000000000000-body", "innerMorph")], (
        "most of the body changed: one morph of the body"
    )
    assert swaps("".join(fresh.changes(Markup(big.replace(">two<", ">zwei<")), 0))) == [("f2", "outerMorph")]
