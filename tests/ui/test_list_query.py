"""A list's URL parameters: its own only, clamped pages, precise refusals of unknown columns and
long filters."""

from __future__ import annotations

import pytest

from flask_krm.ui.list_query import InvalidListQuery, ListQuery, column_keys, parse_list_query


def test_column_keys_are_readable_and_unique() -> None:
    assert column_keys(["Name", "Ready replicas", "Name", "!!"]) == ("name", "ready-replicas", "name-3", "column-4")


def test_a_query_reads_only_its_own_parameters() -> None:
    args = [("cm.q", " web "), ("cm.sort", "-size"), ("cm.page", "3"), ("other.page", "2"), ("x", "1"), ("cm.q", "no")]
    query = parse_list_query("cm", args, "/p", ("name", "size"))
    assert query == ListQuery("cm", "web", "size", True, 3, "/p", (("other.page", "2"), ("x", "1")))
    assert query.href(page=1) == "/p?other.page=2&x=1&cm.q=web&cm.sort=-size"
    assert query.sort_href("size") == "/p?other.page=2&x=1&cm.q=web&cm.sort=size"
    assert query.sort_href("name") == "/p?other.page=2&x=1&cm.q=web&cm.sort=name"
    assert ListQuery("cm", path="/p").href() == "/p"


@pytest.mark.parametrize(
    ("raw", "page"), [("0", 1), ("-1", 1), ("2.5", 1), ("", 1), ("٣", 1), ("9" * 40, 10**9), ("7", 7)]
)
def test_page_numbers_are_clamped(raw: str, page: int) -> None:
    assert parse_list_query("cm", [("cm.page", raw)], "/", ("name",)).page == page


def test_unknown_columns_and_long_filters_are_refused_with_a_400() -> None:
    with pytest.raises(InvalidListQuery) as refused:
        parse_list_query("cm", [("cm.sort", "-colour")], "/", ("name", "size"))
    assert refused.value.code == 400 and "use one of name, size" in str(refused.value.description)
    with pytest.raises(InvalidListQuery, match="longer than 200"):
        parse_list_query("cm", [("cm.q", "x" * 201)], "/", ("name",))
