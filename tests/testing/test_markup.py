"""How a test's live page finds an element by id in rendered markup."""

from __future__ import annotations

import typing as t

from flask_krm.testing.markup import element_span

BODY: t.Final = (
    '<span id="s" hidden></span>\n<p id="a">x</p>\n<!-- <div id="f1"> -->'
    '<div class="fields"><div id="f1"><input id="i1" value="1"><textarea id="t">a <b id="f2"> c</textarea></div>'
    '<div id="f2"><br><p>two</p></div><input id="lonely" value="v"></div>'
)


def test_an_element_is_found_by_its_id_whatever_it_holds() -> None:
    for element_id, element in (
        ("f1", '<div id="f1"><input id="i1" value="1"><textarea id="t">a <b id="f2"> c</textarea></div>'),
        ("f2", '<div id="f2"><br><p>two</p></div>'),
        ("i1", '<input id="i1" value="1">'),
        ("t", '<textarea id="t">a <b id="f2"> c</textarea>'),
    ):
        span = element_span(BODY, element_id)
        assert span is not None and BODY[span[0] : span[1]] == element
    assert element_span(BODY, "nowhere") is None
    assert element_span('<div id="open"><p>', "open") is None
