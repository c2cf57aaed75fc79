"""Scopes: the corpus' request half in both directions, identifier and selector syntax, policy."""

from __future__ import annotations

from typing import Any

import pytest

from flask_krm.scope import (
    ANY_NAMESPACE,
    AllowedResource,
    InvalidField,
    InvalidLabelSelector,
    MissingField,
    RefusedParameter,
    Requirement,
    Scope,
    ScopeError,
    ScopeNotPermitted,
    ScopePolicy,
    parse_label_selector,
    parse_scope,
)
from tests.corpus import scope_cases

# ------------------------------------------------------------------------- the corpus cases --

# What each corpus refusal must be refused as (class, offending field). A case added to the corpus
# later is still checked for being a ScopeError with the case's code.
REFUSALS: dict[str, tuple[type[ScopeError], str]] = {
    "reject-no-resource": (MissingField, "resource"),
    "reject-no-version": (MissingField, "version"),
    "reject-resource-is-a-kind": (InvalidField, "resource"),
    "reject-api-server-address": (RefusedParameter, "server"),
    "reject-kubeconfig": (RefusedParameter, "kubeconfig"),
    "reject-namespace-path-traversal": (InvalidField, "namespace"),
    "reject-name-with-slash": (InvalidField, "name"),
    "reject-group-with-slash": (InvalidField, "group"),
}


def _case_params(accepted: bool) -> list[Any]:
    return [pytest.param(c, id=c["id"]) for c in scope_cases() if ("scope" in c) == accepted]


def test_the_corpus_has_both_kinds_of_case() -> None:
    assert len(_case_params(True)) >= 6 and len(_case_params(False)) >= 8


@pytest.mark.parametrize("case", _case_params(True))
def test_accepted_case_parses_to_its_scope(case: dict[str, Any]) -> None:
    scope = parse_scope(case["query"])
    assert {k: v for k, v in scope.to_wire().items() if v} == case["scope"]


@pytest.mark.parametrize("case", _case_params(True))
def test_accepted_case_canonical_query_parses_to_the_same_scope(case: dict[str, Any]) -> None:
    assert parse_scope(case["canonical"]) == parse_scope(case["query"])


@pytest.mark.parametrize("case", _case_params(True))
def test_accepted_case_scope_builds_its_canonical_query(case: dict[str, Any]) -> None:
    assert parse_scope(case["scope"]).canonical_query() == case["canonical"]
    assert parse_scope(case["query"]).canonical_query() == case["canonical"]


@pytest.mark.parametrize("case", _case_params(False))
def test_refused_case_is_a_scope_error(case: dict[str, Any]) -> None:
    with pytest.raises(ScopeError) as caught:
        parse_scope(case["query"])
    assert caught.value.code == case["code"] == "SCOPE_INVALID"
    assert caught.value.terminal is True
    assert str(caught.value)
    if case["id"] in REFUSALS:
        kind, field = REFUSALS[case["id"]]
        assert type(caught.value) is kind
        assert caught.value.field == field


def test_a_kind_is_refused_with_a_message_that_says_so() -> None:
    with pytest.raises(InvalidField, match="looks like a Kind.*configmaps"):
        parse_scope("version=v1&resource=ConfigMap")


# ----------------------------------------------------------------------------- parameters --


@pytest.mark.parametrize(
    "name",
    [
        "server",
        "SERVER",
        "apiServer",
        "api-server",
        "api_server",
        "API-Server",
        "url",
        "endpoint",
        "kubeconfig",
        "token",
        "Token",
        "host",
        "password",
        "client-key",
        "as",
        "as-group",
    ],
)
def test_parameters_naming_an_address_or_credential_are_refused(name: str) -> None:
    with pytest.raises(RefusedParameter) as caught:
        parse_scope(f"version=v1&resource=configmaps&{name}=x")
    assert caught.value.field == name


def test_a_refused_parameter_is_refused_even_when_empty_or_repeated() -> None:
    with pytest.raises(RefusedParameter):
        parse_scope("version=v1&resource=configmaps&server=")
    with pytest.raises(RefusedParameter):
        parse_scope({"version": "v1", "resource": "configmaps", "token": ["a", "b"]})


def test_a_refused_parameter_is_checked_before_the_fields() -> None:
    with pytest.raises(RefusedParameter):
        parse_scope("resource=ConfigMap&url=http://x")


def test_extra_parameters_are_tolerated() -> None:
    scope = parse_scope("version=v1&resource=configmaps&projection=krm-spec/v1&fixture=x&pace=1s")
    assert scope == Scope(version="v1", resource="configmaps")


def test_the_first_value_of_a_repeated_field_is_used() -> None:
    assert parse_scope("version=v1&resource=configmaps&namespace=app&namespace=other").namespace == "app"


def test_an_empty_value_means_absent() -> None:
    scope = parse_scope("version=v1&resource=configmaps&namespace=&name=&group=&target=")
    assert scope == Scope(version="v1", resource="configmaps")
    assert scope.to_wire() == {"target": "", "version": "v1", "resource": "configmaps"}
    with pytest.raises(MissingField):
        parse_scope("version=v1&resource=")


def test_field_names_are_case_sensitive() -> None:
    assert parse_scope("version=v1&resource=configmaps&Namespace=app").namespace == ""


def test_mappings_and_multidicts_are_accepted() -> None:
    class MultiDict(dict[str, list[str]]):
        def getlist(self, key: str) -> list[str]:
            return self[key]

    expected = Scope(version="v1", resource="configmaps", namespace="app")
    assert parse_scope({"version": "v1", "resource": "configmaps", "namespace": "app"}) == expected
    assert parse_scope({"version": ["v1"], "resource": ("configmaps", "x"), "namespace": ["app"]}) == expected
    assert parse_scope(MultiDict(version=["v1"], resource=["configmaps"], namespace=["app", "b"])) == expected
    assert parse_scope(b"?version=v1&resource=configmaps&namespace=app") == expected


# ---------------------------------------------------------------------------- identifiers --


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("namespace", "a" * 63),
        ("namespace", "kube-system"),
        ("name", "a.b-c.d"),
        ("name", "x" * 63 + "." + "y" * 63 + "." + "z" * 63 + "." + "w" * 61),
        ("group", "wardle.example.com"),
        ("target", "prod-eu.1"),
        ("version", "v1beta1"),
        ("resource", "horizontalpodautoscalers"),
    ],
)
def test_valid_identifiers(field: str, value: str) -> None:
    fields = {"version": "v1", "resource": "configmaps", field: value}
    assert parse_scope(fields).to_wire()[field] == value


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("namespace", "a" * 64),
        ("namespace", "a.b"),
        ("namespace", "-app"),
        ("namespace", "app-"),
        ("namespace", "App"),
        ("namespace", "a_b"),
        ("name", ".."),
        ("name", "a..b"),
        ("name", "a" * 64 + ".b"),
        ("name", "x" * 254),
        ("name", "a b"),
        ("name", "a%2Fb"),
        ("group", "apps/v1"),
        ("group", "Apps"),
        ("target", "https://10.0.0.1"),
        ("target", "prod:6443"),
        ("version", "1"),
        ("version", "v1.2"),
        ("version", "V1"),
        ("resource", "config_maps"),
        ("resource", "deployments/scale"),
        ("resource", "deployments.apps"),
    ],
)
def test_invalid_identifiers(field: str, value: str) -> None:
    with pytest.raises(InvalidField) as caught:
        parse_scope({"version": "v1", "resource": "configmaps", field: value})
    assert caught.value.field == field


def test_the_constructor_validates_too() -> None:
    with pytest.raises(InvalidField):
        Scope(version="v1", resource="configmaps", namespace="../x")
    with pytest.raises(MissingField):
        Scope(version="", resource="configmaps")


def test_a_long_bad_value_is_shortened_in_the_message() -> None:
    with pytest.raises(InvalidField) as caught:
        parse_scope({"version": "v1", "resource": "configmaps", "namespace": "A" * 5000})
    assert len(str(caught.value)) < 400


# -------------------------------------------------------------------------- label selectors --


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tier=web", (Requirement("tier", "=", ("web",)),)),
        ("tier==web", (Requirement("tier", "=", ("web",)),)),
        ("tier!=web", (Requirement("tier", "!=", ("web",)),)),
        ("tier=", (Requirement("tier", "=", ("",)),)),
        ("tier", (Requirement("tier", "exists"),)),
        ("!tier", (Requirement("tier", "!"),)),
        (" tier in (web, api) ", (Requirement("tier", "in", ("web", "api")),)),
        ("tier notin (web)", (Requirement("tier", "notin", ("web",)),)),
        ("env=in", (Requirement("env", "=", ("in",)),)),
        (
            "app.kubernetes.io/name=shop,!canary,example.com/Tier_1.x in (a-b,c.d)",
            (
                Requirement("app.kubernetes.io/name", "=", ("shop",)),
                Requirement("canary", "!"),
                Requirement("example.com/Tier_1.x", "in", ("a-b", "c.d")),
            ),
        ),
        ("", ()),
    ],
)
def test_label_selectors_parse(text: str, expected: tuple[Requirement, ...]) -> None:
    assert parse_label_selector(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "=web",
        "tier=web=x",
        "tier===x",
        "tier=web,",
        ",tier",
        "tier,,env",
        "tier in ()",
        "tier in (a b)",
        "tier in (a",
        "tier in a",
        "tier notin",
        "!",
        "!tier=web",
        "tier>5",
        "tier<5",
        "-tier=x",
        "tier=-x",
        "tier=" + "v" * 64,
        "k" * 64,
        "Example.com/tier=x",
        "a/b/c=x",
        "/tier=x",
        "tier=a b",
        "(tier)",
        "tier=web)",
    ],
)
def test_invalid_label_selectors_are_refused(text: str) -> None:
    with pytest.raises(InvalidLabelSelector):
        parse_label_selector(text)
    with pytest.raises(InvalidLabelSelector):
        parse_scope({"version": "v1", "resource": "pods", "labelSelector": text or "="})


def test_a_selector_is_kept_as_given_and_encoded_canonically() -> None:
    scope = parse_scope({"version": "v1", "resource": "pods", "labelSelector": "tier in (web,api)"})
    assert scope.label_selector == "tier in (web,api)"
    assert scope.canonical_query() == "version=v1&resource=pods&labelSelector=tier+in+%28web%2Capi%29"
    assert parse_scope(scope.canonical_query()) == scope


def test_requirements_match_like_kubernetes() -> None:
    labels = {"tier": "web"}
    assert Requirement("tier", "=", ("web",)).matches(labels)
    assert not Requirement("tier", "!=", ("web",)).matches(labels)
    assert Requirement("env", "!=", ("prod",)).matches(labels)
    assert Requirement("env", "notin", ("prod",)).matches(labels)
    assert not Requirement("env", "in", ("prod",)).matches(labels)
    assert Requirement("tier", "exists").matches(labels) and Requirement("env", "!").matches(labels)


# ------------------------------------------------------------------------ canonical output --


def test_wire_and_query_orders_are_fixed() -> None:
    scope = Scope(label_selector="a=b", name="n", namespace="ns", resource="r", version="v1", group="g.io", target="t")
    assert list(scope.to_wire()) == [
        "target",
        "group",
        "version",
        "resource",
        "namespace",
        "name",
        "labelSelector",
    ]
    assert (
        scope.canonical_query() == "target=t&group=g.io&version=v1&resource=r&namespace=ns&name=n&labelSelector=a%3Db"
    )
    assert scope.canonical_query("krm-spec/v1").endswith("&projection=krm-spec%2Fv1")


def test_url_appends_to_an_existing_query() -> None:
    scope = Scope(version="v1", resource="configmaps")
    assert scope.url("/s") == "/s?version=v1&resource=configmaps"
    assert scope.url("/s?x=1") == "/s?x=1&version=v1&resource=configmaps"
    assert scope.url("/s?") == "/s?version=v1&resource=configmaps"


def test_api_version() -> None:
    assert Scope(version="v1", resource="configmaps").api_version == "v1"
    assert Scope(group="apps", version="v1", resource="deployments").api_version == "apps/v1"


def test_scopes_are_frozen_and_hashable() -> None:
    scope = Scope(version="v1", resource="configmaps")
    with pytest.raises(AttributeError):
        scope.namespace = "x"  # type: ignore[misc]
    assert len({scope, Scope(version="v1", resource="configmaps")}) == 1


# -------------------------------------------------------------------------------- policy --

CONFIGMAPS = AllowedResource(group="", resource="configmaps")
NAMESPACES = AllowedResource(group="", resource="namespaces", cluster_scoped=True)
PODS_EVERYWHERE = AllowedResource(group="", resource="pods", all_namespaces=True)
POLICY = ScopePolicy(
    targets=frozenset({"prod"}),
    resources=(CONFIGMAPS, NAMESPACES, PODS_EVERYWHERE),
    namespaces=frozenset({"app"}),
)


def _scope(**fields: str) -> Scope:
    return Scope(**{"target": "prod", "version": "v1", "resource": "configmaps", "namespace": "app", **fields})


def test_the_zero_policy_refuses_everything() -> None:
    zero = ScopePolicy()
    for scope in (_scope(), _scope(target=""), _scope(resource="namespaces", namespace="")):
        with pytest.raises(ScopeNotPermitted):
            zero.check(scope)
        assert not zero.permits(scope)


def test_a_listed_scope_is_allowed() -> None:
    POLICY.check(_scope())
    POLICY.check(_scope(name="app-config"))
    POLICY.check(_scope(version="v2"))  # the version is not the policy's business
    POLICY.check(_scope(resource="namespaces", namespace=""))
    POLICY.check(_scope(resource="pods", namespace=""))
    POLICY.check(_scope(resource="pods", namespace="app"))


@pytest.mark.parametrize(
    ("scope", "field"),
    [
        (_scope(target="staging"), "target"),
        (_scope(target=""), "target"),
        (_scope(resource="secrets"), "resource"),
        (_scope(group="apps", resource="configmaps"), "resource"),
        (_scope(namespace="kube-system"), "namespace"),
        (_scope(namespace=""), "namespace"),
        (_scope(resource="namespaces"), "namespace"),
        (_scope(label_selector="tier=web"), "labelSelector"),
    ],
)
def test_unlisted_scopes_are_refused(scope: Scope, field: str) -> None:
    with pytest.raises(ScopeNotPermitted) as caught:
        POLICY.check(scope)
    assert caught.value.field == field
    assert caught.value.code == "SCOPE_INVALID"


def test_a_refusal_never_lists_what_is_allowed() -> None:
    with pytest.raises(ScopeNotPermitted) as caught:
        POLICY.check(_scope(resource="secrets"))
    message = str(caught.value)
    assert "secrets" in message
    for allowed in ("configmaps", "namespaces", "pods", "prod"):
        assert allowed not in message


def test_the_selector_check_comes_first() -> None:
    with pytest.raises(ScopeNotPermitted) as caught:
        POLICY.check(_scope(target="nowhere", label_selector="a=b"))
    assert caught.value.field == "labelSelector"
    with_selectors = ScopePolicy(
        targets=["prod"], resources=[CONFIGMAPS], namespaces=["app"], allow_label_selector=True
    )
    with_selectors.check(_scope(label_selector="a=b"))


def test_the_empty_target_is_allowed_only_when_listed() -> None:
    policy = ScopePolicy(targets=[""], resources=[CONFIGMAPS], namespaces=["app"])
    policy.check(_scope(target=""))
    with pytest.raises(ScopeNotPermitted):
        policy.check(_scope())


def test_namespace_allowlists() -> None:
    per_resource = AllowedResource(group="", resource="configmaps", namespaces=["team-a"])
    policy = ScopePolicy(targets=["prod"], resources=[per_resource], namespaces=["app"])
    policy.check(_scope(namespace="team-a"))
    with pytest.raises(ScopeNotPermitted):
        policy.check(_scope(namespace="app"))  # the resource's own list wins
    anywhere = ScopePolicy(targets=["prod"], resources=[CONFIGMAPS], namespaces=[ANY_NAMESPACE])
    anywhere.check(_scope(namespace="whatever"))
    with pytest.raises(ScopeNotPermitted):
        anywhere.check(_scope(namespace=""))  # any ONE namespace is not all of them


def test_the_first_matching_entry_decides() -> None:
    policy = ScopePolicy(
        targets=["prod"],
        resources=[NAMESPACES, AllowedResource(group="", resource="namespaces", all_namespaces=True)],
    )
    policy.check(_scope(resource="namespaces", namespace=""))
    with pytest.raises(ScopeNotPermitted):
        policy.check(_scope(resource="namespaces"))


def test_policy_arguments_are_checked() -> None:
    with pytest.raises(TypeError):
        ScopePolicy(targets="prod")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ScopePolicy(resources=[("", "configmaps")])  # type: ignore[list-item]
