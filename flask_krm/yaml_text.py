"""Objects as YAML text: rendering a draft, and loading what a person typed, safely and bounded.

Loading uses PyYAML's safe loader (no tags that build objects; libyaml scans and parses when PyYAML
has it, PyYAML's own parser otherwise) with the resolution rules Kubernetes tools apply to YAML
(``yes``/``on`` are booleans, ``0755`` is octal, ``1e3`` a float, ``~`` and ``null`` are null;
timestamps stay strings), and refuses, with a message naming what is wrong and where
(:class:`YamlRefused`): text over :data:`MAX_YAML_BYTES`, nesting deeper than :data:`MAX_DEPTH`,
more than :data:`MAX_ALIASES` aliases, aliases that stand for more than :data:`MAX_ALIASED_VALUES`
values together, a document that expands to more than :data:`MAX_NODES` values or
:data:`MAX_EXPANDED_BYTES` characters (billion laughs, merge-key bombs), recursive aliases, a key
written twice in one mapping, an integer of more digits than the number field takes
(:func:`~flask_krm.store.values.int_digit_limit`, in any base), syntax errors (with line and
column), several documents, a root that is not a mapping, keys that are not strings and values JSON
cannot hold (``.inf``, ``!!binary``...). The bounds hold while the text is composed, node by node
(an alias counts as everything it stands for), so nothing past them is ever built.
:func:`load_yaml_value` loads one value of any type the same way (a form field edited as YAML).

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
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .bodies import MAX_DEPTH
from .store.paths import MISSING, Path, get_at
from .store.values import int_digit_limit, json_copy, printable_int, set_in
from .store.view_edits import WITHHELD, Withheld

MAX_YAML_BYTES: Final = 2 * 1024 * 1024
"""The largest YAML text accepted (Kubernetes stores objects of at most 1.5 MiB)."""
MAX_ALIASES: Final = 64
"""Aliases (``*name``) one text may use."""
MAX_NODES: Final = 100_000
"""Values one text may expand to once every alias and merge key is followed."""
MAX_EXPANDED_BYTES: Final = MAX_YAML_BYTES
"""Characters of scalar text one text may expand to once every alias and merge key is followed."""
MAX_ALIASED_VALUES: Final = 10_000
"""Values all the aliases of one text may stand for together (merge keys included)."""
PAUSE_EVERY: Final = 500
"""Values composed between two calls of :func:`load_yaml`'s ``pause``."""
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


class _PythonParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python scanner and parser, where libyaml is not available."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


_Parser: type[Any]
try:
    from yaml._yaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML without libyaml
    _Parser = _PythonParser


@dataclass(slots=True)
class _Size:
    values: int
    text: int


class _Loader(yaml.composer.Composer, _Parser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):  # type: ignore[misc]
    """libyaml's parser (when present) under PyYAML's composer and safe constructor, with
    Kubernetes' scalar rules, and bounds that hold while the text is composed: nesting, aliases,
    the size every alias expands to (merge keys included), duplicate keys, integer digits."""

    def __init__(self, stream: str, pause: Callable[[], None] | None) -> None:
        _Parser.__init__(self, stream)
        yaml.composer.Composer.__init__(self)
        yaml.constructor.SafeConstructor.__init__(self)
        yaml.resolver.Resolver.__init__(self)
        self.depth = 0
        self.aliases = 0
        self.pause = pause
        self.composed = 0
        self.expanded = _Size(0, 0)
        self.aliased = 0
        self.sizes: dict[int, _Size] = {}

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise YamlRefused(f"The YAML uses more than {MAX_ALIASES} aliases", mark.line + 1, mark.column + 1)
            node: Node | None = super().compose_node(parent, index)
            size = self.sizes.get(id(node))
            if size is None:
                raise YamlRefused("The YAML refers to itself through an alias", mark.line + 1, mark.column + 1)
            self.aliased += size.values
            if self.aliased > MAX_ALIASED_VALUES:
                raise YamlRefused(
                    f"The aliases of the YAML stand for more than {MAX_ALIASED_VALUES} values (merge keys included)",
                    mark.line + 1,
                    mark.column + 1,
                )
            self._expand(size, mark)
            return node
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise YamlRefused(f"The YAML nests deeper than {MAX_DEPTH} levels", mark.line + 1, mark.column + 1)
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        assert node is not None
        self.sizes[id(node)] = self._size_of(node)
        self.composed += 1
        if self.pause is not None and self.composed % PAUSE_EVERY == 0:
            self.pause()
        return node

    def _size_of(self, node: Node) -> _Size:
        """The size ``node`` expands to (its children are composed), counted once into the total."""
        if isinstance(node, ScalarNode):
            own = _Size(1, len(node.value))
            self._expand(own, node.start_mark)
            return own
        size = _Size(1, 0)
        children: list[Node] = []
        if isinstance(node, MappingNode):
            _refuse_duplicate_keys(node)
            for key_node, value_node in node.value:
                children += (key_node, value_node)
        elif isinstance(node, SequenceNode):
            children = list(node.value)
        for child in children:
            child_size = self.sizes[id(child)]
            size.values += child_size.values
            size.text += child_size.text
        self._expand(_Size(1, 0), node.start_mark)
        return size

    def _expand(self, size: _Size, mark: Any) -> None:
        self.expanded.values += size.values
        self.expanded.text += size.text
        if self.expanded.values > MAX_NODES:
            raise YamlRefused(
                f"The YAML expands to more than {MAX_NODES} values (aliases and merge keys followed)",
                mark.line + 1,
                mark.column + 1,
            )
        if self.expanded.text > MAX_EXPANDED_BYTES:
            raise YamlRefused(
                f"The YAML expands to more than {MAX_EXPANDED_BYTES} characters of values "
                "(aliases and merge keys followed)",
                mark.line + 1,
                mark.column + 1,
            )


def _refuse_duplicate_keys(node: MappingNode) -> None:
    """Refuse a key written twice in one mapping, at its second place (a merged key may be overridden)."""
    seen: dict[tuple[str, str], Any] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        mark: Any = key_node.start_mark
        first = seen.setdefault((key_node.tag, key_node.value), mark)
        if first is not mark:
            raise YamlRefused(
                f"The key {key_node.value[:80]!r} is written twice in this mapping, first on line {first.line + 1}",
                mark.line + 1,
                mark.column + 1,
            )


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in ("tag:yaml.org,2002:timestamp",)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    if first != "="
}
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_EXPONENT, list("-+0123456789"))


def _construct_withheld(loader: yaml.SafeLoader, node: Node) -> Withheld:
    return WITHHELD


_INT_BASES: Final = (("0b", 2), ("0x", 16), ("0o", 8))


def _construct_int(loader: yaml.SafeLoader, node: Node) -> int:
    """An integer, refused past the number field's digit limit (in decimal) before it is converted."""
    text = str(loader.construct_scalar(node)).replace("_", "")  # type: ignore[arg-type]
    sign = -1 if text.startswith("-") else 1
    digits = text.lstrip("+-")
    base = 10
    for prefix, prefix_base in _INT_BASES:
        if digits.startswith(prefix):
            digits, base = digits[2:], prefix_base
            break
    else:
        if ":" in digits:
            base = 60
        elif len(digits) > 1 and digits.startswith("0"):
            base = 8
    limit = int_digit_limit()
    significant = digits.count(":") + 1 if base == 60 else len(digits.lstrip("0"))
    if significant > limit if base == 10 else significant * math.log10(base) > limit + 1:
        raise _too_long(node, limit)  # before converting: a decimal conversion past it costs quadratic time
    if base == 60:
        value = 0
        for part in digits.split(":"):
            value = value * 60 + int(part)
    else:
        value = int(digits or "0", base)
    if not printable_int(value):
        raise _too_long(node, limit)
    return sign * value


def _too_long(node: Node, limit: int) -> YamlRefused:
    mark = node.start_mark
    return YamlRefused(f"The number has more than {limit} digits", mark.line + 1, mark.column + 1)


_Loader.add_constructor(WITHHELD_TAG, _construct_withheld)
_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _position(text: str, index: int) -> tuple[int, int]:
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


_UNREADABLE: Final = re.compile(yaml.reader.Reader.NON_PRINTABLE.pattern + "|[\ud800-\udfff]")


def _refuse_unreadable(text: str) -> None:
    found = _UNREADABLE.search(text)
    if found is not None:
        line, column = _position(text, found.start())
        raise YamlRefused(f"The YAML holds a character it cannot contain ({found.group()!r})", line, column)


def load_yaml(text: str, *, pause: Callable[[], None] | None = None) -> LoadedYaml:
    """Load one object (a mapping) from ``text``; raises :class:`YamlRefused` (see the module doc).

    ``pause()`` is called every :data:`PAUSE_EVERY` values composed (a server lets other requests
    run there)."""
    root, value = _load_node(text, pause, "The YAML is empty: it must hold the object, a mapping of its fields")
    if not isinstance(value, dict):
        mark = root.start_mark
        raise YamlRefused("The YAML must be a mapping of the object's fields", mark.line + 1, mark.column + 1)
    lines: dict[Path, int] = {}
    _check_node(root, value, (), lines)
    return LoadedYaml(json_copy(value), lines)


def load_yaml_value(text: str) -> Any:
    """Load one value of any type (a field's, edited as YAML) from ``text``, bounded and refused as
    :func:`load_yaml` is; the ``!withheld`` placeholder is not a value here."""
    root, value = _load_node(text, None, "The YAML is empty: enter a value ({} for an empty object)")
    _check_node(root, value, (), {}, placeholders=False)
    return json_copy(value)


def _load_node(text: str, pause: Callable[[], None] | None, empty: str) -> tuple[Node, Any]:
    """The root node of ``text`` and the value it makes (``empty``: the refusal of a text holding none)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_YAML_BYTES:
        raise YamlRefused(f"The YAML is {size} bytes; at most {MAX_YAML_BYTES} bytes can be edited")
    _refuse_unreadable(text)
    loader = _Loader(text, pause)
    try:
        root = loader.get_single_node()
        if root is None:
            raise YamlRefused(empty)
        value = loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "The YAML cannot be read"
        message = problem[0].upper() + problem[1:]
        if mark is None:
            raise YamlRefused(message) from None
        raise YamlRefused(message, mark.line + 1, mark.column + 1) from None
    except RecursionError:
        raise YamlRefused(f"The YAML nests deeper than {MAX_DEPTH} levels") from None
    finally:
        loader.dispose()
    return root, value


def _check_node(node: Node, value: Any, path: Path, lines: dict[Path, int], *, placeholders: bool = True) -> None:
    """Record each path's line and refuse what JSON cannot hold, at its line (and the withheld
    placeholder, unless ``placeholders``)."""
    mark = node.start_mark
    if value is WITHHELD and not placeholders:
        raise YamlRefused(
            f"{WITHHELD_TAG} stands for a value not shown; it is not a value", mark.line + 1, mark.column + 1
        )
    if isinstance(node, MappingNode) and isinstance(value, dict):
        for key_node, value_node in node.value:
            key = _key_of(key_node)
            if key is None or key not in value:
                continue
            if path + (key,) not in lines:
                lines[path + (key,)] = key_node.start_mark.line + 1
                _check_node(value_node, value[key], path + (key,), lines, placeholders=placeholders)
        for key in value:
            if not isinstance(key, str):
                raise YamlRefused(f"The key {key!r} is not a string; quote it", mark.line + 1, mark.column + 1)
    elif isinstance(node, SequenceNode) and isinstance(value, list):
        for index, (item_node, item) in enumerate(zip(node.value, value)):
            lines[path + (index,)] = item_node.start_mark.line + 1
            _check_node(item_node, item, path + (index,), lines, placeholders=placeholders)
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


_LEAF_TYPES: Final = (str, int, float, bool, type(None))
LEAVES_KEPT: Final = 4096
"""How many ``key: value`` lines :func:`dump_yaml_lines` keeps written (see :data:`_LEAVES`)."""
_LEAVES: OrderedDict[tuple[str, str, type, Any], str] = OrderedDict()
"""(indentation, key, type, scalar) -> the entry as block YAML: the lines every object holding that
key and value at that depth shares."""


def dump_yaml_lines(value: Mapping[str, Any]) -> str:
    """:func:`dump_yaml` of the object ``value``, written entry by entry: each ``key: scalar``
    entry of every mapping is written once and kept (:data:`LEAVES_KEPT`), so an object differing
    from the last one written in one value costs about that value. The text is the same as
    :func:`dump_yaml`'s: block mappings indent by two, sequences are not indented under their key,
    no line is folded and no aliases are written, so an entry's text at any depth is its text at
    the top, each non-empty line shifted."""
    if not value:
        return dump_yaml(value)
    try:
        return "".join(_mapping_lines(value, ""))
    except _Unshiftable:
        return dump_yaml(value)


class _Unshiftable(Exception):
    """An entry whose text depends on where it stands: a complex key, a string broken at a Unicode
    line separator (continued at the current indentation), a document end marker."""


_SEPARATORS: Final = re.compile("[\x85\u2028\u2029]")


def _mapping_lines(value: Mapping[str, Any], indent: str) -> Iterator[str]:
    for key, item in value.items():
        head = _leaf(key, None) if isinstance(key, str) else ""
        if not head.endswith(": null\n") or head.startswith("?") or head.count("\n") != 1:
            raise _Unshiftable  # a key written over several lines, or as a complex key
        if isinstance(item, _LEAF_TYPES):
            yield _leaf(key, item, indent)
            continue
        if isinstance(item, Mapping) and item:
            yield indent + head[: -len(" null\n")] + "\n"
            yield from _mapping_lines(item, indent + "  ")
            continue
        text = dump_yaml({key: item})
        if _SEPARATORS.search(text) or text.endswith("\n...\n"):
            raise _Unshiftable
        yield _shifted(text, indent) if indent else text


def _leaf(key: str, item: Any, indent: str = "") -> str:
    """The entry ``key: item`` written at ``indent``."""
    held = (indent, key, type(item), item)
    text = _LEAVES.get(held)
    if text is None:
        text = dump_yaml({key: item})
        if _SEPARATORS.search(text) or text.endswith("\n...\n"):  # ... ends a document: only at the end
            raise _Unshiftable
        text = _LEAVES[held] = _shifted(text, indent) if indent else text
        while len(_LEAVES) > LEAVES_KEPT:
            try:
                _LEAVES.popitem(last=False)
            except KeyError:  # emptied meanwhile by another thread
                break
    return text


def _shifted(text: str, indent: str) -> str:
    lines = text.split("\n")  # the last is empty: the text ends with a line break
    return "\n".join(indent + line if line else line for line in lines)
