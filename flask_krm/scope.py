"""Scopes: what one stream watches, parsed from a request and checked against the host's policy.

A scope is the request half of the krm-stream wire (spec v1, section 8): ``target`` (a logical
cluster name the host resolves, never an address), ``group``, ``version``, ``resource``,
``namespace``, ``name`` and ``labelSelector``. :func:`parse_scope` turns a query string (or a
mapping of query parameters) into a validated, frozen :class:`Scope`; :class:`ScopePolicy` says
which scopes a host serves. Every refusal is a :class:`ScopeError` (``SCOPE_INVALID``, terminal on a
stream, HTTP 400 elsewhere; the callers do that mapping).

Rules, in the order they are applied:

1. A parameter that names an API server, an endpoint, a credential or an identity to act as
   (``server``, ``url``, ``kubeconfig``, ``token``, ``as``, ``impersonate-user``, ... see
   :data:`REFUSED_PARAMETERS` and :data:`REFUSED_PREFIX`) is refused, not ignored, so an SSRF
   probe is an observable error. Names are compared case-insensitively, with ``-``, ``_`` and ``.``
   ignored (``apiServer``, ``api_server`` and ``API-Server`` are all refused).
2. Other unknown parameters are tolerated (``projection`` is read by the caller; a replay harness
   adds ``fixture`` and ``pace``). The scope field names themselves are case-sensitive.
3. A field given more than once uses its first value; an empty value means the field is absent.
4. ``resource`` and ``version`` are required; nothing has a default.
5. Identifiers follow Kubernetes naming rules: ``version`` and ``resource`` are DNS-1035 labels
   (CRD versions and plurals are validated that way; ``resource`` must be the lowercase plural, a
   Kind such as ``ConfigMap`` gets a message saying so), ``namespace`` is a DNS-1123 label,
   ``group``, ``name`` and ``target`` are DNS-1123 subdomains. So ``/``, ``..``, uppercase and ``_``
   never reach a URL.
6. ``labelSelector`` must parse with Kubernetes label-selector syntax: comma-separated requirements
   ``key``, ``!key``, ``key=value``, ``key==value``, ``key!=value``, ``key in (v1,v2)``,
   ``key notin (v1,v2)``; keys are qualified names (``prefix/name``), values label values. The
   selector text is kept as given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal
from urllib.parse import parse_qsl, urlencode

__all__ = [
    "FIELDS",
    "REFUSED_PARAMETERS",
    "REFUSED_PREFIX",
    "ANY_NAMESPACE",
    "Scope",
    "ScopeError",
    "RefusedParameter",
    "MissingField",
    "InvalidField",
    "InvalidLabelSelector",
    "ScopeNotPermitted",
    "AllowedResource",
    "ScopePolicy",
    "parse_scope",
    "is_refused_parameter",
    "parse_label_selector",
    "Requirement",
]

FIELDS: Final = ("target", "group", "version", "resource", "namespace", "name", "labelSelector")
"""The scope's query parameters, in canonical (and wire) order."""

REFUSED_PARAMETERS: Final[frozenset[str]] = frozenset(
    {
        # the reference gateway's list
        "server",
        "apiserver",
        "url",
        "endpoint",
        "kubeconfig",
        "token",
        # the same intent under kubectl's and client libraries' other spellings: an address ...
        "host",
        "address",
        "apiserverurl",
        "serverurl",
        "proxyurl",
        "tlsservername",
        # ... or a credential, or an identity to act as
        "bearertoken",
        "tokenfile",
        "password",
        "username",
        "clientcertificate",
        "clientcertificatedata",
        "clientkey",
        "clientkeydata",
        "certificateauthority",
        "certificateauthoritydata",
        "insecureskiptlsverify",
        "as",
        "asgroup",
        "asuid",
        # ... or a kubeconfig entry that picks an address or a credential (kubectl's --context,
        # --cluster and --user)
        "context",
        "cluster",
        "user",
    }
)
"""Parameter names refused outright, after :func:`_normalize_parameter_name`; so is every name
starting with :data:`REFUSED_PREFIX` (the impersonation headers as parameters)."""

REFUSED_PREFIX: Final = "impersonate"
"""``Impersonate-User``, ``Impersonate-Group``, ``Impersonate-Uid``, ``Impersonate-Extra-*``."""

_MAX_SUBDOMAIN = 253
_MAX_LABEL = 63

_DNS1123_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\Z")
_DNS1035_LABEL = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?\Z")
_QUALIFIED_NAME_PART = re.compile(r"[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?\Z")
_LABEL_VALUE = re.compile(r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?\Z")


# ------------------------------------------------------------------------------------ errors --


class ScopeError(ValueError):
    """A scope was refused. ``code`` is always ``SCOPE_INVALID`` and the refusal is terminal.

    ``field`` names the offending parameter or scope field when there is one. The message is safe to
    send to the caller: it names what was wrong with the request, never what a policy allows.
    """

    code: Final = "SCOPE_INVALID"
    terminal: Final = True

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class RefusedParameter(ScopeError):
    """A parameter names an API server, an endpoint or a credential."""


class MissingField(ScopeError):
    """``resource`` or ``version`` is missing or empty."""


class InvalidField(ScopeError):
    """An identifier does not follow Kubernetes naming rules."""


class InvalidLabelSelector(ScopeError):
    """``labelSelector`` is not a Kubernetes label selector."""


class ScopeNotPermitted(ScopeError):
    """A well-formed scope that the host's :class:`ScopePolicy` does not serve."""


# ------------------------------------------------------------------------------------- scope --


@dataclass(frozen=True, slots=True, kw_only=True)
class Scope:
    """One stream's scope. Absent fields are ``""``; build one with :func:`parse_scope`.

    The constructor validates too, so an invalid ``Scope`` cannot exist.
    """

    version: str
    resource: str
    target: str = ""
    group: str = ""
    namespace: str = ""
    name: str = ""
    label_selector: str = ""

    def __post_init__(self) -> None:
        _validate(self)

    @classmethod
    def from_query(cls, query: str | bytes | Mapping[str, Any]) -> Scope:
        """Same as :func:`parse_scope`."""
        return parse_scope(query)

    def to_wire(self) -> dict[str, str]:
        """The scope as it appears in ``reset.scope``: ``target`` always, other fields when set."""
        out = {"target": self.target}
        if self.group:
            out["group"] = self.group
        out["version"] = self.version
        out["resource"] = self.resource
        if self.namespace:
            out["namespace"] = self.namespace
        if self.name:
            out["name"] = self.name
        if self.label_selector:
            out["labelSelector"] = self.label_selector
        return out

    def query_items(self) -> list[tuple[str, str]]:
        """The non-empty fields as query parameters, in canonical order."""
        values = (
            self.target,
            self.group,
            self.version,
            self.resource,
            self.namespace,
            self.name,
            self.label_selector,
        )
        return [(k, v) for k, v in zip(FIELDS, values) if v]

    def canonical_query(self, projection: str | None = None) -> str:
        """The canonical query string (fixed field order, empty fields omitted, URL-encoded).

        ``projection``, when given, is appended last, as the reference client does.
        """
        items = self.query_items()
        if projection:
            items.append(("projection", projection))
        return urlencode(items)

    def url(self, base: str, projection: str | None = None) -> str:
        """``base`` with the canonical query appended (``&`` if ``base`` already has a query)."""
        query = self.canonical_query(projection)
        if "?" in base:
            sep = "" if base.endswith(("?", "&")) else "&"
        else:
            sep = "?"
        return f"{base}{sep}{query}"

    @property
    def is_named(self) -> bool:
        return bool(self.name)

    @property
    def api_version(self) -> str:
        """``group/version``, or ``version`` for the core group."""
        return f"{self.group}/{self.version}" if self.group else self.version


def _normalize_parameter_name(name: str) -> str:
    return name.lower().replace("-", "").replace("_", "").replace(".", "")


def is_refused_parameter(name: str) -> bool:
    """Whether a query parameter ``name`` names an API server, an endpoint, a credential or an
    identity to act as (see :data:`REFUSED_PARAMETERS`)."""
    normalized = _normalize_parameter_name(name)
    return normalized in REFUSED_PARAMETERS or normalized.startswith(REFUSED_PREFIX)


def _first_values(query: str | bytes | Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """Every parameter name present, and the first value of each."""
    names: list[str] = []
    first: dict[str, str] = {}
    if isinstance(query, (str, bytes)):
        text = query.decode("utf-8", "replace") if isinstance(query, bytes) else query
        if text.startswith("?"):
            text = text[1:]
        for key, value in parse_qsl(text, keep_blank_values=True):
            names.append(key)
            first.setdefault(key, value)
        return names, first
    getlist = getattr(query, "getlist", None)
    for key in query:
        key = str(key)
        names.append(key)
        if callable(getlist):
            values = list(getlist(key))
        else:
            raw = query[key]
            values = list(raw) if isinstance(raw, (list, tuple)) else [raw]
        value = values[0] if values else ""
        first[key] = "" if value is None else str(value)
    return names, first


def parse_scope(query: str | bytes | Mapping[str, Any]) -> Scope:
    """Parse a query string (``a=b&c=d``, a leading ``?`` allowed) or a mapping of parameters.

    A mapping may hold strings, lists of strings (the first is used), or be a multi-dict with
    ``getlist`` (Werkzeug's ``request.args``). Raises :class:`ScopeError`.
    """
    names, first = _first_values(query)
    for name in names:
        if is_refused_parameter(name):
            raise RefusedParameter(
                f"the {name!r} parameter is refused: a scope never carries an API-server address, "
                "an endpoint or a credential (name a target instead)",
                field=name,
            )
    return Scope(
        target=first.get("target", ""),
        group=first.get("group", ""),
        version=first.get("version", ""),
        resource=first.get("resource", ""),
        namespace=first.get("namespace", ""),
        name=first.get("name", ""),
        label_selector=first.get("labelSelector", ""),
    )


# -------------------------------------------------------------------------------- validation --


def _show(value: str) -> str:
    shown = value if len(value) <= 80 else value[:77] + "..."
    return repr(shown)


def _check_dns1123_label(field: str, value: str, what: str) -> None:
    if len(value) > _MAX_LABEL or not _DNS1123_LABEL.match(value):
        raise InvalidField(
            f"{field} {_show(value)} is not a valid {what}: at most {_MAX_LABEL} characters of "
            "lowercase letters, digits and '-', starting and ending with a letter or digit",
            field=field,
        )


def _check_dns1123_subdomain(field: str, value: str, what: str) -> None:
    ok = len(value) <= _MAX_SUBDOMAIN and all(
        len(part) <= _MAX_LABEL and _DNS1123_LABEL.match(part) for part in value.split(".")
    )
    if not ok:
        raise InvalidField(
            f"{field} {_show(value)} is not a valid {what}: a DNS subdomain of at most "
            f"{_MAX_SUBDOMAIN} characters (lowercase letters, digits, '-' and '.'; no '/')",
            field=field,
        )


def check_target_name(name: str) -> None:
    """Raise :class:`ScopeError` unless ``name`` can name a target in a scope (a DNS subdomain)."""
    _check_dns1123_subdomain("target", name, "target name")


def _check_dns1035_label(field: str, value: str, what: str) -> None:
    if len(value) > _MAX_LABEL or not _DNS1035_LABEL.match(value):
        raise InvalidField(
            f"{field} {_show(value)} is not a valid {what}: at most {_MAX_LABEL} characters of "
            "lowercase letters, digits and '-', starting with a letter and ending with a letter or "
            "digit",
            field=field,
        )


def _validate(scope: Scope) -> None:
    for attr in ("target", "group", "version", "resource", "namespace", "name", "label_selector"):
        if not isinstance(getattr(scope, attr), str):
            raise InvalidField(f"{attr} must be a string", field=attr)
    if not scope.resource:
        raise MissingField(
            "resource is required (the lowercase plural API name, such as configmaps); there is no default",
            field="resource",
        )
    if not scope.version:
        raise MissingField("version is required (such as v1 or v1beta1); there is no default", field="version")
    if scope.resource != scope.resource.lower() and _DNS1035_LABEL.match(scope.resource.lower()):
        raise InvalidField(
            f"resource {_show(scope.resource)} looks like a Kind: resource is the lowercase plural "
            f"API name (for example configmaps, not ConfigMap)",
            field="resource",
        )
    _check_dns1035_label("resource", scope.resource, "resource name")
    _check_dns1035_label("version", scope.version, "API version name")
    if scope.target:
        check_target_name(scope.target)
    if scope.group:
        _check_dns1123_subdomain("group", scope.group, "API group")
    if scope.namespace:
        _check_dns1123_label("namespace", scope.namespace, "namespace name")
    if scope.name:
        _check_dns1123_subdomain("name", scope.name, "object name")
    if scope.label_selector:
        parse_label_selector(scope.label_selector)


# --------------------------------------------------------------------------- label selectors --


@dataclass(frozen=True, slots=True)
class Requirement:
    """One parsed selector requirement. ``operator`` is one of ``=``, ``!=``, ``in``, ``notin``,
    ``exists``, ``!`` (does not exist); ``==`` is parsed as ``=``."""

    key: str
    operator: Literal["=", "!=", "in", "notin", "exists", "!"]
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "exists":
            return self.key in labels
        if self.operator == "!":
            return self.key not in labels
        if self.operator in ("=", "in"):
            return self.key in labels and labels[self.key] in self.values
        # "!=" and "notin" match objects without the label, as Kubernetes does
        return self.key not in labels or labels[self.key] not in self.values


_SELECTOR_TOKEN = re.compile(
    r"\s*(?:(?P<op>==|!=|=|!|\(|\)|,)|(?P<word>[^\s=!(),]+))",
)


def _selector_tokens(text: str) -> list[tuple[str, str]]:
    tokens: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        m = _SELECTOR_TOKEN.match(text, pos)
        if m is None:  # pragma: no cover - the pattern matches any non-blank text
            raise InvalidLabelSelector(f"labelSelector: cannot read {_show(text[pos:])}", "labelSelector")
        if m.group("op") is not None:
            tokens.append(("op", m.group("op")))
        else:
            word = m.group("word")
            if word in ("in", "notin"):
                tokens.append(("setop", word))
            else:
                tokens.append(("word", word))
        pos = m.end()
    return tokens


def _check_selector_key(key: str) -> None:
    prefix, slash, name = key.rpartition("/")
    bad = not slash and not name
    if slash:
        if not prefix:
            bad = True
        else:
            try:
                _check_dns1123_subdomain("labelSelector", prefix, "label key prefix")
            except InvalidField:
                bad = True
    if not bad and (len(name) > _MAX_LABEL or not _QUALIFIED_NAME_PART.match(name)):
        bad = True
    if bad:
        raise InvalidLabelSelector(
            f"labelSelector: {_show(key)} is not a valid label key (an optional DNS subdomain "
            "prefix and '/', then at most 63 characters of letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit)",
            "labelSelector",
        )


def _check_selector_value(value: str) -> None:
    if len(value) > _MAX_LABEL or not _LABEL_VALUE.match(value):
        raise InvalidLabelSelector(
            f"labelSelector: {_show(value)} is not a valid label value (at most 63 characters of "
            "letters, digits, '-', '_' and '.', starting and ending with a letter or digit)",
            "labelSelector",
        )


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """Parse a Kubernetes label selector. Raises :class:`InvalidLabelSelector`.

    The grammar is Kubernetes' (``k8s.io/apimachinery/pkg/labels``) for equality- and set-based
    requirements. An empty or blank selector selects everything and yields no requirements.
    """
    tokens = _selector_tokens(text)
    requirements: list[Requirement] = []
    i = 0

    def fail(message: str) -> InvalidLabelSelector:
        return InvalidLabelSelector(f"labelSelector {_show(text)}: {message}", "labelSelector")

    def peek(offset: int = 0) -> tuple[str, str] | None:
        return tokens[i + offset] if i + offset < len(tokens) else None

    if not tokens:
        return ()
    while True:
        tok = peek()
        if tok is None:
            raise fail("expected a requirement after ','")
        if tok == ("op", "!"):
            i += 1
            key_tok = peek()
            if key_tok is None or key_tok[0] != "word":
                raise fail("expected a label key after '!'")
            _check_selector_key(key_tok[1])
            requirements.append(Requirement(key_tok[1], "!"))
            i += 1
        elif tok[0] == "word":
            key = tok[1]
            _check_selector_key(key)
            i += 1
            nxt = peek()
            if nxt is None or nxt == ("op", ","):
                requirements.append(Requirement(key, "exists"))
            elif nxt[0] == "op" and nxt[1] in ("=", "==", "!="):
                i += 1
                value_tok = peek()
                if value_tok is None or value_tok == ("op", ","):
                    value = ""
                elif value_tok[0] in ("word", "setop"):
                    value = value_tok[1]
                    i += 1
                else:
                    raise fail(f"unexpected {value_tok[1]!r} after {nxt[1]!r}")
                _check_selector_value(value)
                requirements.append(Requirement(key, "!=" if nxt[1] == "!=" else "=", (value,)))
            elif nxt[0] == "setop":
                i += 1
                if peek() != ("op", "("):
                    raise fail(f"expected '(' after {nxt[1]!r}")
                i += 1
                values: list[str] = []
                expect_value = True
                while True:
                    cur = peek()
                    if cur is None:
                        raise fail("missing ')'")
                    if cur == ("op", ")"):
                        if expect_value and values:
                            values.append("")  # a trailing comma: Kubernetes reads an empty value
                        i += 1
                        break
                    if cur == ("op", ","):
                        if expect_value:
                            values.append("")
                        expect_value = True
                        i += 1
                        continue
                    if cur[0] in ("word", "setop") and expect_value:
                        values.append(cur[1])
                        expect_value = False
                        i += 1
                        continue
                    raise fail(f"unexpected {cur[1]!r} in a value set")
                if not values:
                    raise fail(f"the value set of {nxt[1]!r} cannot be empty")
                for value in values:
                    _check_selector_value(value)
                requirements.append(Requirement(key, nxt[1], tuple(values)))  # type: ignore[arg-type]
            else:
                raise fail(f"unexpected {nxt[1]!r} after the key {key!r}")
        else:
            raise fail(f"unexpected {tok[1]!r}")
        tok = peek()
        if tok is None:
            return tuple(requirements)
        if tok != ("op", ","):
            raise fail(f"expected ',' but found {tok[1]!r}")
        i += 1


# ------------------------------------------------------------------------------------ policy --

ANY_NAMESPACE: Final = "*"
"""In a namespace allowlist: any single namespace (never all namespaces at once)."""


@dataclass(frozen=True, slots=True)
class AllowedResource:
    """One group/resource a host serves.

    ``cluster_scoped`` resources are served only without a namespace. Namespaced ones are served in
    the namespaces listed in ``namespaces`` (``None``: the policy's list; :data:`ANY_NAMESPACE`: any
    one namespace), and across all namespaces only when ``all_namespaces`` is set.
    """

    group: str
    resource: str
    cluster_scoped: bool = False
    namespaces: frozenset[str] | None = None
    all_namespaces: bool = False

    def __post_init__(self) -> None:
        if self.namespaces is not None and not isinstance(self.namespaces, frozenset):
            object.__setattr__(self, "namespaces", _frozen(self.namespaces, "namespaces"))


def _frozen(values: Iterable[str] | str, what: str) -> frozenset[str]:
    if isinstance(values, str):
        raise TypeError(f"{what} must be a collection of strings, not one string")
    return frozenset(values)


@dataclass(frozen=True, slots=True)
class ScopePolicy:
    """Which scopes a host serves. Deny by default: the zero policy refuses every scope.

    ``targets`` are matched exactly (the empty target only if ``""`` is listed); ``resources`` is
    searched for the first entry with the scope's group and resource (``version`` is not checked);
    ``namespaces`` is the default namespace allowlist for namespaced resources. Label selectors and
    all-namespace watches are refused unless explicitly enabled.
    """

    targets: frozenset[str] = field(default_factory=frozenset)
    resources: tuple[AllowedResource, ...] = ()
    namespaces: frozenset[str] = field(default_factory=frozenset)
    allow_label_selector: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "targets", _frozen(self.targets, "targets"))
        object.__setattr__(self, "namespaces", _frozen(self.namespaces, "namespaces"))
        object.__setattr__(self, "resources", tuple(self.resources))
        for entry in self.resources:
            if not isinstance(entry, AllowedResource):
                raise TypeError("resources must be AllowedResource entries")

    def check(self, scope: Scope) -> None:
        """Raise :class:`ScopeNotPermitted` unless this policy serves ``scope``.

        Messages name the requested scope, never what the policy allows.
        """
        if scope.label_selector and not self.allow_label_selector:
            raise ScopeNotPermitted("label selectors are not enabled for this stream", "labelSelector")
        if scope.target not in self.targets:
            shown = _show(scope.target) if scope.target else "the default target"
            raise ScopeNotPermitted(f"target {shown} is not served here", "target")
        gr = f"{scope.resource}.{scope.group}" if scope.group else scope.resource
        entry = next((e for e in self.resources if e.group == scope.group and e.resource == scope.resource), None)
        if entry is None:
            raise ScopeNotPermitted(f"resource {gr!r} is not served here", "resource")
        if entry.cluster_scoped:
            if scope.namespace:
                raise ScopeNotPermitted(f"resource {gr!r} is cluster-scoped: a namespace cannot be given", "namespace")
            return
        if not scope.namespace:
            if entry.all_namespaces:
                return
            raise ScopeNotPermitted(f"resource {gr!r} is namespaced: a namespace is required", "namespace")
        allowed = self.namespaces if entry.namespaces is None else entry.namespaces
        if scope.namespace in allowed or ANY_NAMESPACE in allowed:
            return
        raise ScopeNotPermitted(f"namespace {_show(scope.namespace)} is not served here for {gr!r}", "namespace")

    def permits(self, scope: Scope) -> bool:
        try:
            self.check(scope)
        except ScopeNotPermitted:
            return False
        return True
