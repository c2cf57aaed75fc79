"""Objects as YAML text: rendering a draft, and loading what a person typed, safely and bounded.

Loading uses PyYAML's pure-Python safe loader (no tags that build objects) with the resolution
rules Kubernetes tools apply to YAML (``yes``/``on`` are booleans, ``0755`` is octal, ``1e3`` a
float, ``~`` and ``null`` are null; timestamps stay strings), and refuses, with a message naming
what is wrong and where (:class:`YamlRefused`): text over :data:`MAX_YAML_BYTES`, nesting deeper
than :data:`MAX_DEPTH`, more than :data:`MAX_ALIASES` aliases, a document that expands to more
than :data:`MAX_NODES` values (billion laughs), recursive aliases, syntax errors (with line and
column), several documents, a root that is not a mapping, keys that are not strings and values
JSON cannot hold (``.inf``, ``!!binary``...).

Rendering (:func:`dump_yaml`) keeps key order and block style, writes multi-line strings as
literal blocks, and quotes every string that any YAML reader (1.1 or 1.2) could take for another
type, so ``"0755"``, ``"yes"``, ``"on"``, ``"1e3"``, ``"null"`` and ``"~"`` load back as the same
strings here, in kubectl and elsewhere. A value withheld from the person (a Secret's) is written
as the placeholder ``!withheld 'not shown'``, which loads as
:data:`~flask_krm.store.view_edits.WITHHELD`: never a string, so it cannot be saved as a value.

Pure: no Flask, no gevent, no network.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .bodies import MAX_DEPTH
from .store.paths import MISSING, Path, get_at
from .store.values import json_copy, set_in
from .store.view_edits import WITHHELD, Withheld

MAX_YAML_BYTES: Final = 2 * 1024 * 1024
"""The largest YAML text accepted (Kubernetes stores objects of at most 1.5 MiB)."""
MAX_ALIASES: Final = 64
"""Aliases (``*name``) one text may use."""
MAX_NODES: Final = 200_000
"""Values one text may expand to once every alias is followed."""
WITHHELD_TAG: Final = "!withheld"
WITHHELD_TEXT: Final = "not shown"

_FLOAT_EXPONENT: Final = re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$")
_AMBIGUOUS: Final = re.compile(
    r"""^(?:y|Y|n|N|~|null|Null|NULL|true|True|TRUE|false|False|FALSE
    |yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF
    |[-+]?(?:0|[1-9][0-9_]*|0[0-7_]+|0o[0-7]+|0x[0-9a-fA-F_]+|0b[01_]+)
    |[-+]?(?:[0-9][0-9_]*)?\.?[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?
    |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}.*|<<|=)$""",
    re.VERBOSE,
)


_UNPRINTABLE: Final = re.compile("[^\x09\x0a\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


class YamlRefused(ValueError):
    """YAML text that cannot be used; ``message`` is safe to show, ``line``/``column`` are 1-based."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        where = f" (line {line}, column {column})" if line is not None and column is not None else ""
        where = where or (f" (line {line})" if line is not None else "")
        super().__init__(message + where)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True, slots=True)
class LoadedYaml:
    """A loaded object and the line (1-based) each of its paths starts on."""

    value: dict[str, Any]
    lines: dict[Path, int]

    def line_of(self, path: Sequence[Any]) -> int | None:
        """The line of ``path``, or of its nearest ancestor that the text has."""
        where = tuple(path)
        while where:
            if where in self.lines:
                return self.lines[where]
            where = where[:-1]
        return None


# -- loading ---------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """The safe loader with Kubernetes' scalar rules and bounds on depth and aliases."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.aliases = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YamlRefused(f"The YAML uses more than {MAX_ALIASES} aliases", mark.line + 1, mark.column + 1)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YamlRefused(f"The YAML nests deeper than {MAX_DEPTH} levels", mark.line + 1, mark.column + 1)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:timestamp",)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    if first != "="
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_EXPONENT, list("-+0123456789"))


def _construct_withheld(loader: yaml.SafeLoader, node: Node) -> Withheld:
    return WITHHELD


_Loader.add_constructor(WITHHELD_TAG, _construct_withheld)


def _expanded_size(root: Node) -> None:
    """Refuse a node graph whose aliases expand past :data:`MAX_NODES` values, or loop."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            mark = node.start_mark
            raise YamlRefused("The YAML refers to itself through an alias", mark.line + 1, mark.column + 1)
        open_nodes.add(key)
        total = 1
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                total += size(key_node) + size(value_node)
                if total > MAX_NODES:
                    break
        elif isinstance(node, SequenceNode):
            for item in node.value:
                total += size(item)
                if total > MAX_NODES:
                    break
        if total > MAX_NODES:
            raise YamlRefused(f"The YAML expands to more than {MAX_NODES} values (through its aliases)")
        open_nodes.discard(key)
        sizes[key] = total
        return total

    size(root)


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _unreadable(text: str, exc: yaml.reader.ReaderError) -> YamlRefused:
    line, column = _position(text, exc.position)
    character = chr(exc.character) if isinstance(exc.character, int) else exc.character
    return YamlRefused(f"The YAML holds a character it cannot contain ({character!r})", line, column)


def load_yaml(text: str) -> LoadedYaml:
    """Load one object (a mapping) from ``text``; raises :class:`YamlRefused` (see the module doc)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        raise YamlRefused(f"The YAML is {size} bytes; at most {MAX_YAML_BYTES} bytes can be edited")
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        raise _unreadable(text, exc) from None
    try:
        root = loader.get_single_node()
        if root is None:
            raise YamlRefused("The YAML is empty: it must hold the object, a mapping of its fields")
        _expanded_size(root)
        value = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "The YAML cannot be read"
        message = problem[0].upper() + problem[1:]
        if mark is None:
            raise YamlRefused(message) from None
        raise YamlRefused(message, mark.line + 1, mark.column + 1) from None
    except yaml.reader.ReaderError as exc:
        raise _unreadable(text, exc) from None
    except RecursionError:
        raise YamlRefused(f"The YAML nests deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    if not isinstance(value, dict):
        mark = root.start_mark
        raise YamlRefused("The YAML must be a mapping of the object's fields", mark.line + 1, mark.column + 1)
    lines: dict[Path, int] = {}
    _check_node(root, value, (), lines)
    return LoadedYaml(json_copy(value), lines)


def _check_node(node: Node, value: Any, path: Path, lines: dict[Path, int]) -> None:
    """Record each path's line and refuse what JSON cannot hold, at its line."""
    mark = node.start_mark
    if isinstance(node, MappingNode) and isinstance(value, dict):
        for key_node, value_node in node.value:
            key = _key_of(key_node)
            if key is None or key not in value:
                continue
            if path + (key,) not in lines:
                lines[path + (key,)] = key_node.start_mark.line + 1
                _check_node(value_node, value[key], path + (key,), lines)
        for key in value:
            if not isinstance(key, str):
                raise YamlRefused(f"The key {key!r} is not a string; quote it", mark.line + 1, mark.column + 1)
    elif isinstance(node, SequenceNode) and isinstance(value, list):
        for index, (item_node, item) in enumerate(zip(node.value, value)):
            lines[path + (index,)] = item_node.start_mark.line + 1
            _check_node(item_node, item, path + (index,), lines)
    elif isinstance(value, float) and not math.isfinite(value):
        raise YamlRefused(f"{node.value!r} is not a number JSON can hold", mark.line + 1, mark.column + 1)
    elif not (value is None or value is WITHHELD or type(value) in (str, int, float, bool)):
        tag = node.tag.rsplit(":", 1)[-1]
        raise YamlRefused(
            f"A {tag} value cannot be part of an object; write it as a string", mark.line + 1, mark.column + 1
        )


def _key_of(node: Node) -> Any:
    if isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:str":
        return node.value
    return None


# -- rendering -------------------------------------------------------------------------------


class _Dumper(yaml.SafeDumper):
    """Block style, key order kept, ambiguous strings quoted, long lines never folded, no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style: str | None = None
    if _UNPRINTABLE.search(data):
        style = '"'  # escaped: a YAML reader would fold or refuse them written plainly
    elif "\n" in data and not any(line != line.rstrip() for line in data.split("\n")):
        style = "|"
    elif _AMBIGUOUS.match(data) or not data.strip() or data != data.strip():
        style = "'"
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


def _represent_withheld(dumper: yaml.SafeDumper, data: Withheld) -> yaml.ScalarNode:
    return dumper.represent_scalar(WITHHELD_TAG, WITHHELD_TEXT, style="'")


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(Withheld, _represent_withheld)


def with_placeholders(obj: dict[str, Any], withheld: Iterable[Sequence[str]]) -> dict[str, Any]:
    """``obj`` with :data:`WITHHELD` at each withheld path (RFC 6901 segments; missing maps made)."""
    out = obj
    for segments in withheld:
        path = tuple(segments)
        if not path or get_at(out, path[:-1]) is not MISSING and not isinstance(get_at(out, path[:-1]), dict):
            continue
        out = set_in(out, path, WITHHELD)
    return out


def dump_yaml(value: Any) -> str:
    """``value`` as block YAML (see the module doc); an empty object is ``{}``."""
    return yaml.dump(
        value,
        Dumper=_Dumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000,
        indent=2,
    )
