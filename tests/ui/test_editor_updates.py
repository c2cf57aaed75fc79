"""Editor live updates block by block: a change to one field sends that field's element alone;
a change of the editor's structure sends its whole body."""

from __future__ import annotations

import json
import re
import typing as t

import pytest
from flask.testing import FlaskClient

from flask_krm.ui.editor_updates import apply_line_changes, field_parts, line_changes
from flask_krm.ui.widgets import Field
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
    assert swaps(message.data) == [(team, "outerMorph"), (f"{cid}-yaml-source", "krmLines")]
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


# ---------------------------------------------------------------------- diffing the data --


def test_the_yaml_text_is_sent_as_the_lines_that_changed() -> None:
    old = "a: 1\nb: 2\nc: 3\nd: 4\n"
    new = "a: 1\nb: two\nc: 3\nd: 4\ne: 5\n"
    changes = line_changes(old, new)
    assert changes == [(1, 2, ["b: two"]), (4, 4, ["e: 5"])]
    assert apply_line_changes(old, changes) == new
    assert line_changes(new, new) == [] and apply_line_changes("", line_changes("", new)) == new


def test_a_value_alone_sends_the_control_and_a_state_the_field() -> None:
    def entry(value: str, dirty: bool = False) -> Field:
        return Field(("data", "k"), "k", "text", True, text=value, dirty=dirty, entry=True)

    def data(*entries: Field) -> Field:
        return Field(("data",), "Data", "map", True, children=entries, can_add=True)

    def parts(old: Field, new: Field) -> list[tuple[str, str]]:
        return [
            (element, part) for element, part, _ in field_parts(old, new, "field", None, lambda p: "f" + "-".join(p))
        ]

    assert parts(data(entry("a")), data(entry("a"))) == []
    assert parts(data(entry("a")), data(entry("b"))) == [("fdata-k", "control")]
    assert parts(data(entry("a")), data(entry("b", dirty=True))) == [("fdata-k-field", "entry")]
    grown = data(entry("a"), Field(("data", "l"), "l", "text", True, text="x", entry=True))
    assert parts(data(entry("a")), grown) == [("fdata-field", "field")], "a new entry: the whole map"


def test_a_yaml_fields_new_text_sends_its_control_alone() -> None:
    def spec(text: str, kind: t.Any = "yaml") -> Field:
        return Field(
            ("spec",), "Spec", "group", True, children=(Field(("spec", "extra"), "Extra", kind, True, text=text),)
        )

    def parts(old: Field, new: Field) -> list[tuple[str, str]]:
        return [(e, part) for e, part, _ in field_parts(old, new, "field", None, lambda p: "f" + "-".join(p))]

    assert parts(spec("a: 1"), spec("a: 2")) == [("fspec-extra", "control")]
    assert parts(spec("a: 1", "text"), spec("a: 1")) == [("fspec-field", "field")], "another widget: the group"
