"""Human labels for fields and columns: given in ``fields=`` / ``columns=``, or made from the path.

Pure: no Flask, no gevent. ``("Replicas", "/spec/replicas")`` labels a field; a bare pointer gets
:func:`default_label`: its last member in words (``/spec/replicas`` -> "Replicas",
``/metadata/labels`` -> "Labels", ``/status/readyReplicas`` -> "Ready replicas"). Keys that are
not identifiers (``deployment.kubernetes.io/revision``, ``app.conf``) are shown as they are.
"""

from __future__ import annotations

import re
import typing as t
from collections.abc import Mapping, Sequence

_IDENTIFIER: t.Final = re.compile(r"[A-Za-z][A-Za-z0-9]*\Z")
_WORD: t.Final = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\Z)|[A-Z]?[a-z]+|[A-Z]+|\d+")
ACRONYMS: t.Final[Mapping[str, str]] = {
    "api": "API",
    "cidr": "CIDR",
    "cpu": "CPU",
    "dns": "DNS",
    "fqdn": "FQDN",
    "http": "HTTP",
    "https": "HTTPS",
    "id": "ID",
    "ip": "IP",
    "ips": "IPs",
    "tcp": "TCP",
    "tls": "TLS",
    "udp": "UDP",
    "uid": "UID",
    "url": "URL",
}
"""Words written in capitals wherever they appear in a label (``podIP`` -> "Pod IP")."""


def humanize(key: str) -> str:
    """A camelCase member name in words, first letter capitalised (``minReadySeconds`` ->
    "Min ready seconds"); any other key unchanged."""
    if not _IDENTIFIER.match(key):
        return key
    words = [ACRONYMS.get(word.lower(), word if word.isupper() else word.lower()) for word in _WORD.findall(key)]
    if not words:
        return key
    first = words[0]
    words[0] = first if first.isupper() or first in ACRONYMS.values() else first.capitalize()
    return " ".join(words)


def default_label(path: Sequence[str | int]) -> str:
    """The label of a field or column nobody named: its last member in words, an array item by
    its position (``("spec", "containers", 0)`` -> "Containers 1")."""
    if not path:
        return ""
    last = path[-1]
    if isinstance(last, int) and not isinstance(last, bool):
        return f"{default_label(path[:-1])} {last + 1}".strip()
    return humanize(str(last))


def is_labelled(item: t.Any) -> bool:
    """Whether a ``fields=`` or ``columns=`` item is a ``(label, pointer)`` pair."""
    return (
        isinstance(item, Sequence)
        and not isinstance(item, (str, bytes))
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], str)
        and item[1].startswith("/")
    )
