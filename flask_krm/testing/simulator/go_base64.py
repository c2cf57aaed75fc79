"""Go's ``encoding/base64`` ``StdEncoding.Decode``, with its error positions.

kube-apiserver decodes ``[]byte`` fields (Secret ``data``, ConfigMap ``binaryData``) with it, so a
malformed value is refused as ``illegal base64 data at input byte N``: padding is required, CR and
LF are skipped anywhere, and N is where Go's decoder stops (for a missing padding, the start of
the unfinished quantum).
"""

from __future__ import annotations

import base64

_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_PAD = ord("=")
_NEWLINES = (ord("\n"), ord("\r"))


class Base64Error(ValueError):
    """``base64.CorruptInputError``: the byte offset where decoding failed."""

    def __init__(self, position: int) -> None:
        super().__init__(f"illegal base64 data at input byte {position}")
        self.position = position


def _skip_newlines(source: bytes, index: int) -> int:
    while index < len(source) and source[index] in _NEWLINES:
        index += 1
    return index


def _check_quantum(source: bytes, index: int) -> int:
    """Go's ``decodeQuantum`` without the output: the index after one quantum, or ``Base64Error``."""
    j = 0
    while j < 4:
        if index == len(source):
            if j == 0:
                return index
            raise Base64Error(index - j)  # a quantum cut short, with padding required
        character = source[index]
        index += 1
        if character in _ALPHABET:
            j += 1
            continue
        if character in _NEWLINES:
            continue
        if character != _PAD or j in (0, 1):
            raise Base64Error(index - 1)
        if j == 2:  # "==" expected; the first "=" is consumed
            index = _skip_newlines(source, index)
            if index == len(source):
                raise Base64Error(len(source))
            if source[index] != _PAD:
                raise Base64Error(index - 1)
            index += 1
        index = _skip_newlines(source, index)
        if index < len(source):
            raise Base64Error(index)  # trailing garbage after the padding
        return index
    return index


def decode(text: str) -> bytes:
    """``text`` decoded as Go's standard base64 decoder would, or ``Base64Error`` at Go's position."""
    source = text.encode()
    index = 0
    while index < len(source):
        index = _check_quantum(source, index)
    cleaned = bytes(character for character in source if character not in _NEWLINES)
    return base64.b64decode(cleaned)
