"""Go's standard base64 decoding as kube-apiserver applies it to ``[]byte`` fields: padding
required, CR and LF skipped anywhere, and the error at the byte where Go's decoder stops."""

from __future__ import annotations

import pytest

from flask_krm.testing.simulator.go_base64 import Base64Error, decode


@pytest.mark.parametrize(
    ("text", "decoded"),
    [("", b""), ("YWJj", b"abc"), ("YWI=", b"ab"), ("YQ==", b"a"), ("YW\r\nJj\n", b"abc"), ("YQ=\n=", b"a")],
)
def test_what_go_decodes(text: str, decoded: bytes) -> None:
    assert decode(text) == decoded


@pytest.mark.parametrize(
    ("text", "position"),
    [
        ("YWJ", 0),  # padding missing: the start of the unfinished quantum
        ("YWJjYQ", 4),
        ("YQ=", 3),  # one "=" where two belong: the end of the input
        ("Y===", 1),  # padding after a single character
        ("=", 0),
        ("YWJj!", 4),  # a byte outside the alphabet
        ("YQ=x", 2),  # "=" not followed by "="
        ("YQ==YQ==", 4),  # anything after the padding
        ("YWI=\nx", 5),
    ],
)
def test_where_go_stops(text: str, position: int) -> None:
    with pytest.raises(Base64Error) as refused:
        decode(text)
    assert refused.value.position == position
    assert str(refused.value) == f"illegal base64 data at input byte {position}"
