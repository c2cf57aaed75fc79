"""``flask krm``: check an application's flask-krm setup, print the RBAC it needs, and list a
running server's streams.

``KrmStream.init_app`` adds the group to the application:

- ``flask krm check`` validates every ``KRM_*`` key and the host hooks, then, for each target in
  ``KRM_TARGETS``, checks that its API server answers, that every resource the scope policy
  serves exists there, and that the target's own identity holds every verb the configuration
  needs (:mod:`flask_krm.rbac`), with one SelfSubjectAccessReview each. It exits with status 1
  when something would stop streams or writes from working, naming each missing verb.
- ``flask krm rbac`` prints the Roles, ClusterRoles and bindings granting exactly those verbs to a
  ServiceAccount, as YAML for ``kubectl apply``. Whom requests act as (the target's identity, an
  impersonated person, the person's own credentials) is asked of the client loader with a probe
  principal, or given with ``--identity``.
- ``flask krm streams`` asks a running server, through the status socket it serves
  (:class:`StatusServer`), which upstream watches and which streams (page channels and spec-v1
  JSON streams) are open, and prints them.

The status socket is a Unix socket in the application's instance folder, readable only by the
user running the server: it needs no sign-in and is unreachable from the network. It is served by
a greenlet that the server's entry point starts (``StatusServer(app).start()``) and stops.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import threading
import time
import typing as t
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import click
from flask import Flask
from flask.cli import AppGroup

from . import config, signals
from .proxies import current_app_object
from .rbac import HostAccess, Impersonated, NeededAccess, Permission, ServiceAccountRef, needed_access, rbac_objects
from .runtime import KrmRuntime, find_runtime
from .scope import AllowedResource, Scope, ScopePolicy

if t.TYPE_CHECKING:
    from gevent.server import StreamServer
    from kubernetes.client import ApiClient

    from .principal import Principal

Status: t.TypeAlias = t.Literal["ok", "note", "FAIL"]

SOCKET_PREFIX: t.Final = "krm-status-"
SOCKET_SUFFIX: t.Final = ".sock"
SSAR_PATH: t.Final = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

krm_cli = AppGroup("krm", help="flask-krm: check the setup, print the RBAC it needs, list a running server's streams.")


# ------------------------------------------------------------------------------------- check --


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of ``flask krm check``: ``FAIL`` stops streams from working, ``note`` is advice."""

    status: Status
    text: str


@dataclass(slots=True)
class Section:
    title: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, status: Status, text: str) -> None:
        self.findings.append(Finding(status, text))


def runtime_of(app: Flask) -> KrmRuntime:
    """The application's flask-krm runtime. Raises ``click.ClickException`` when there is none."""
    krm = find_runtime(app)
    if krm is None:
        raise click.ClickException("this application does not use flask-krm: create KrmStream(app) first")
    return krm


def _describe(key: str, value: t.Any) -> str:
    if key == "TARGETS":
        return ", ".join(sorted(value)) or "(none)"
    if key == "SCOPE_POLICY":
        policy = t.cast(ScopePolicy, value)
        resources = ", ".join(_resource_name(entry) for entry in policy.resources) or "(none)"
        return (
            f"targets {', '.join(sorted(policy.targets)) or '(none)'}; resources {resources}; "
            f"namespaces {', '.join(sorted(policy.namespaces)) or '(none)'}"
        )
    return repr(value)


def _resource_name(entry: AllowedResource) -> str:
    return f"{entry.resource}.{entry.group}" if entry.group else entry.resource


def check_configuration(app: Flask, krm: KrmRuntime) -> Section:
    """Every ``KRM_*`` key, the host hooks and the scope policy against the targets."""
    section = Section("Configuration")
    values: dict[str, t.Any] = {}
    for key in config.DEFAULTS:
        try:
            values[key] = config.get(app, key)
        except ValueError as exc:
            section.add("FAIL", str(exc))
            continue
        section.add("ok", f"{config.PREFIX}{key} = {_describe(key, values[key])}")
    if "SCOPE_POLICY" in values and "TARGETS" in values:
        policy: ScopePolicy = values["SCOPE_POLICY"]
        if not policy.targets or not policy.resources:
            section.add("FAIL", "KRM_SCOPE_POLICY serves nothing: list the targets and resources to serve")
        for target in sorted(policy.targets):
            if not krm.serves_target(target):
                section.add("FAIL", f"the scope policy serves target {target!r}, which KRM_TARGETS does not configure")
        for target in sorted(set(values["TARGETS"]) - policy.targets):
            section.add("note", f"target {target!r} is configured but the scope policy does not serve it")
    hooks = krm.hooks.registered()
    if hooks.authorizer is None:
        section.add("FAIL", "no authorizer: decorate (principal, scope, projection, verb) -> bool with @krm.authorizer")
    else:
        section.add("ok", "authorizer registered")
    if hooks.client_loader is None:
        status: Status = "FAIL" if values.get("TARGETS") else "note"
        section.add(status, "no client loader: Kubernetes targets need @krm.client_loader")
    else:
        section.add("ok", "client loader registered")
    custom_save = hooks.save_hook is not None
    section.add("ok", "save hook: " + ("the application's" if custom_save else "the default conditional write"))
    return section


class _Api:
    """Raw requests to one API server, failures as values (status 0 when nothing answered)."""

    def __init__(self, api: ApiClient, timeout: float) -> None:
        from .save.writer import KubeWriter

        self._writer = KubeWriter(api, timeout=(timeout, timeout))

    def get(self, path: str) -> tuple[int, Mapping[str, t.Any] | None, str | None]:
        answer = self._writer.request("GET", path)
        return answer.code, answer.body, answer.error

    def may(self, verb: str, group: str, resource: str, namespace: str = "") -> bool | None:
        """A SelfSubjectAccessReview; ``None`` when it could not be asked."""
        attributes = {"verb": verb, "group": group, "resource": resource}
        if namespace:
            attributes["namespace"] = namespace
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
        answer = self._writer.request("POST", SSAR_PATH, body=body)
        status = answer.body.get("status") if answer.ok and answer.body else None
        return bool(status.get("allowed")) if isinstance(status, Mapping) else None


def _served_versions(api: _Api, group: str) -> list[str]:
    if not group:
        code, body, _ = api.get("/api")
        versions = body.get("versions") if code == 200 and body else None
        return [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []
    code, body, _ = api.get(f"/apis/{group}")
    entries = body.get("versions") if code == 200 and body else None
    if not isinstance(entries, list):
        return []
    preferred = (body or {}).get("preferredVersion") or {}
    names = [str(e["version"]) for e in entries if isinstance(e, Mapping) and isinstance(e.get("version"), str)]
    return sorted(names, key=lambda v: v != preferred.get("version"))


def _find_resource(api: _Api, entry: AllowedResource) -> str | None:
    """The group/version serving ``entry`` on this API server, or ``None``."""
    for version in _served_versions(api, entry.group):
        path = f"/apis/{entry.group}/{version}" if entry.group else f"/api/{version}"
        code, body, _ = api.get(path)
        resources = body.get("resources") if code == 200 and body else None
        if isinstance(resources, list) and any(
            isinstance(r, Mapping) and r.get("name") == entry.resource for r in resources
        ):
            return f"{entry.group}/{version}" if entry.group else version
    return None


IdentityChoice: t.TypeAlias = t.Literal["service", "impersonation", "own-credentials"]
IDENTITY_CHOICES: t.Final = ("service", "impersonation", "own-credentials")
PROBE_PRINCIPAL: t.Final = "flask-krm-probe"
"""The principal the client loader is asked about, to learn whom upstream requests act as."""


def upstream_identity(app: Flask, krm: KrmRuntime, target: str) -> Impersonated | IdentityChoice | None:
    """Whom the client loader makes ``target``'s requests act as: the target's own identity
    (``"service"``), an impersonated person (what is impersonated), the person's own credentials,
    or ``None`` when the loader cannot say for a principal of no host user."""
    from .principal import Principal
    from .upstream.clients import BearerToken, Impersonation

    loader = krm.hooks.client_loader
    if loader is None:
        return "service"
    try:
        with app.test_request_context():
            client = loader(target, Principal(PROBE_PRINCIPAL))
    except Exception:  # the host's loader may expect its own user object
        return None
    if client is None:
        return "service"
    identity = getattr(client, "identity", None)
    if isinstance(identity, Impersonation):
        return Impersonated(
            groups=bool(identity.groups), uid=bool(identity.uid), extra_keys=tuple(key for key, _ in identity.extra)
        )
    if isinstance(identity, BearerToken):
        return "own-credentials"
    return "service" if client is krm.api_clients().service(target) else "own-credentials"


def host_access(app: Flask, krm: KrmRuntime, target: str, identity: Impersonated | IdentityChoice) -> HostAccess:
    """What ``app`` does with ``target``'s API server: what it serves, writes and acts as."""
    from .upstream.authz import SubjectAccessReviewAuthorizer

    policy = t.cast(ScopePolicy, config.get(app, "SCOPE_POLICY"))
    if target not in policy.targets:
        policy = ScopePolicy()
    review = getattr(krm.extension, "review", None)
    served = {(entry.group, entry.resource) for entry in policy.resources}
    if identity == "impersonation":
        identity = Impersonated()
    return HostAccess(
        policy=policy,
        saves="save" in krm.hooks.editor_actions,
        creates=frozenset(served & set(review.policies)) if review is not None else frozenset(),
        deletes=review is not None,
        impersonation=identity if isinstance(identity, Impersonated) else None,
        own_credentials=identity == "own-credentials",
        access_reviews=isinstance(krm.hooks.registered().authorizer, SubjectAccessReviewAuthorizer),
    )


def _identity_text(identity: Impersonated | IdentityChoice) -> str:
    if identity == "service":
        return "the target's own identity reads and writes"
    if identity == "own-credentials":
        return "reads and writes use each person's own credentials"
    return "reads and writes impersonate each person"


def _resolve_identity(
    app: Flask, krm: KrmRuntime, target: str, chosen: IdentityChoice | None, section: Section
) -> Impersonated | IdentityChoice:
    if chosen is not None:
        return chosen
    found = upstream_identity(app, krm, target)
    if found is None:
        section.add(
            "note",
            "the client loader says nothing for a principal of no host user: checked as the target's own "
            "identity (choose with --identity)",
        )
        return "service"
    return found


def check_permissions(api: _Api, needed: NeededAccess, served: Mapping[tuple[str, str], str], section: Section) -> None:
    """A SelfSubjectAccessReview for every permission ``needed.identity`` holds; ``FAIL`` names each missing one."""
    grouped: dict[tuple[str, str, str], list[Permission]] = {}
    for permission in needed.identity:
        key = (permission.group, permission.resource, permission.namespace)
        grouped.setdefault(key, []).append(permission)
    for (group, resource, namespace), permissions in grouped.items():
        version = served.get((group, resource))
        shown = permissions[0].resource_name + (f" ({version})" if version else "")
        where = f"in {namespace}" if namespace else "at the cluster scope"
        ordered = sorted(permissions, key=lambda permission: permission.verb_rank)
        answers = {p.verb: api.may(p.verb, group, resource, namespace) for p in ordered}
        granted = [verb for verb, allowed in answers.items() if allowed]
        unknown = [verb for verb, allowed in answers.items() if allowed is None]
        missing = [verb for verb, allowed in answers.items() if allowed is False]
        if not missing and not unknown:
            section.add("ok", f"{shown} {where}: {', '.join(granted)} granted")
            continue
        text = f"{shown} {where}: "
        if missing:
            text += f"{', '.join(missing)} not granted"
        if unknown:
            text += ("; " if missing else "") + f"could not ask about {', '.join(unknown)}"
        if granted:
            text += f" (granted: {', '.join(granted)})"
        section.add("FAIL", text)


def check_target(
    app: Flask, krm: KrmRuntime, target: str, timeout: float, identity: IdentityChoice | None = None
) -> Section:
    """Reachability of ``target``, the served resources on it, and every permission the
    configuration needs (:func:`flask_krm.rbac.needed_access`), each asked of the API server."""
    spec = t.cast(config.TargetSpec, config.get(app, "TARGETS")[target])
    where = (
        "in-cluster service account"
        if spec.in_cluster
        else (f"kubeconfig {spec.kubeconfig}" + (f", context {spec.context}" if spec.context else ", current context"))
    )
    section = Section(f"Target {target} ({where})")
    try:
        api = _Api(krm.api_clients().service(target), timeout)
    except Exception as exc:  # the client's configuration loaders raise many types
        section.add("FAIL", f"cannot load the connection settings: {type(exc).__name__}: {exc}")
        return section
    code, body, error = api.get("/version")
    if code == 0:
        section.add("FAIL", f"the API server does not answer ({error})")
        return section
    if code in (401, 403):
        section.add("FAIL", f"the API server refuses the target's credentials (HTTP {code})")
        return section
    version = (body or {}).get("gitVersion", "unknown version")
    section.add("ok" if code == 200 else "note", f"the API server answers (HTTP {code}, Kubernetes {version})")
    resolved = _resolve_identity(app, krm, target, identity, section)
    section.add("note", _identity_text(resolved))
    access = host_access(app, krm, target, resolved)
    served: dict[tuple[str, str], str] = {}
    for entry in access.policy.resources:
        found = _find_resource(api, entry)
        if found is None:
            section.add("FAIL", f"{_resource_name(entry)}: the API server does not serve this resource")
        else:
            served[(entry.group, entry.resource)] = found
    needed = needed_access(access)
    unserved = {(entry.group, entry.resource) for entry in access.policy.resources} - set(served)
    check_permissions(
        api,
        NeededAccess(tuple(p for p in needed.identity if (p.group, p.resource) not in unserved), needed.people),
        served,
        section,
    )
    if needed.people:
        section.add(
            "note",
            "the people need get, list and watch (and the writes) themselves: `flask krm rbac` prints their Roles",
        )
    return section


def run_checks(app: Flask, timeout: float = 5.0, identity: IdentityChoice | None = None) -> list[Section]:
    """Every section of ``flask krm check`` for ``app``."""
    krm = runtime_of(app)
    sections = [check_configuration(app, krm)]
    try:
        targets = config.get(app, "TARGETS")
    except ValueError:
        return sections
    sections += [check_target(app, krm, target, timeout, identity) for target in sorted(targets)]
    return sections


IDENTITY_OPTION: t.Final = click.option(
    "--identity",
    type=click.Choice(IDENTITY_CHOICES),
    default=None,
    help="Whom upstream requests act as (default: what the client loader answers).",
)


@krm_cli.command("check")
@click.option("--timeout", default=5.0, show_default=True, help="Seconds to wait for each API request.")
@IDENTITY_OPTION
def check_command(timeout: float, identity: IdentityChoice | None) -> None:
    """Check the configuration, and each target's reachability and the permissions it needs."""
    app = current_app_object()
    sections = run_checks(app, timeout, identity)
    failures = 0
    for section in sections:
        click.echo(section.title)
        for finding in section.findings:
            failures += finding.status == "FAIL"
            click.echo(f"  {finding.status:<4} {finding.text}")
    click.echo(
        f"{failures} problem{'s' if failures != 1 else ''} found" if failures else "Everything needed is in place."
    )
    if failures:
        raise SystemExit(1)


# -------------------------------------------------------------------------------------- rbac --


def rbac_yaml(objects: list[dict[str, t.Any]], header: list[str]) -> str:
    """``objects`` as one multi-document YAML text after ``header`` comment lines."""
    import yaml

    comments = "".join(f"# {line}\n" if line else "#\n" for line in header)
    documents = "---\n".join(yaml.safe_dump(obj, sort_keys=False, default_flow_style=False) for obj in objects)
    return comments + ("---\n" + documents if documents else "")


def _only_target(app: Flask, chosen: str | None) -> str:
    policy = t.cast(ScopePolicy, config.get(app, "SCOPE_POLICY"))
    if chosen is not None:
        if chosen not in policy.targets:
            raise click.BadParameter(f"the scope policy serves no target {chosen!r}", param_hint="--target")
        return chosen
    if len(policy.targets) != 1:
        served = ", ".join(sorted(policy.targets)) or "none"
        raise click.UsageError(f"name the target with --target (the scope policy serves: {served})")
    return next(iter(policy.targets))


@krm_cli.command("rbac")
@click.option("--target", default=None, help="The target to grant access to (default: the only one served).")
@click.option("--service-account", default="flask-krm", show_default=True, help="The ServiceAccount to bind.")
@click.option("--namespace", default="default", show_default=True, help="The ServiceAccount's namespace.")
@click.option("--name", "role_name", default=None, help="The roles' and bindings' name (default: the account's).")
@IDENTITY_OPTION
def rbac_command(
    target: str | None, service_account: str, namespace: str, role_name: str | None, identity: IdentityChoice | None
) -> None:
    """Print the Roles, ClusterRoles and bindings the configuration needs, as YAML for kubectl apply."""
    app = current_app_object()
    krm = runtime_of(app)
    try:
        chosen = _only_target(app, target)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    resolved: Impersonated | IdentityChoice | None = identity or upstream_identity(app, krm, chosen)
    if resolved is None:
        raise click.ClickException(
            "the client loader says nothing for a principal of no host user: "
            "say whom requests act as with --identity service, impersonation or own-credentials"
        )
    access = host_access(app, krm, chosen, resolved)
    needed = needed_access(access)
    account = ServiceAccountRef(service_account, namespace, role_name or "")
    header = [
        f"RBAC for target {chosen!r}, made by `flask krm rbac` from the application's configuration.",
        f"ServiceAccount {namespace}/{service_account}: {_identity_text(resolved)}.",
        "get, list, watch: what the scope policy serves; "
        + ", ".join(
            part
            for part, on in (
                ("patch: editors' saves", access.saves),
                ("create: the review list's create policies", bool(access.creates)),
                ("delete: the review list", access.deletes),
            )
            if on
        )
        + ".",
    ]
    if needed.people:
        header.append(f"The {account.roles}-people roles are what each person needs: bind them to the people.")
    click.echo(rbac_yaml(rbac_objects(needed, account), header), nl=False)


# ----------------------------------------------------------------------------------- streams --


@dataclass(frozen=True, slots=True)
class OpenStream:
    """A JSON stream or an upstream watch, as the status socket reports it."""

    scope: dict[str, str]
    since: float
    principal: str = ""
    projection: str = ""


class StreamTracker:
    """Follows one application's stream and watch signals; safe to read from any greenlet."""

    def __init__(self, app: Flask) -> None:
        self._lock = threading.Lock()
        self._streams: dict[tuple[str, Scope, str], list[float]] = {}
        self._watches: dict[Scope, float] = {}
        self._connected = (
            (signals.stream_opened, self._stream_opened),
            (signals.stream_closed, self._stream_closed),
            (signals.watch_started, self._watch_started),
            (signals.watch_stopped, self._watch_stopped),
        )
        for signal, receiver in self._connected:
            signal.connect(receiver, sender=app)

    def disconnect(self) -> None:
        for signal, receiver in self._connected:
            signal.disconnect(receiver)

    def _stream_opened(
        self, sender: object, *, principal: Principal, scope: Scope, projection: str, **_: t.Any
    ) -> None:
        with self._lock:
            self._streams.setdefault((principal.name, scope, projection), []).append(time.time())

    def _stream_closed(
        self, sender: object, *, principal: Principal, scope: Scope, projection: str, **_: t.Any
    ) -> None:
        with self._lock:
            opened = self._streams.get((principal.name, scope, projection))
            if opened:
                opened.pop(0)
                if not opened:
                    del self._streams[(principal.name, scope, projection)]

    def _watch_started(self, sender: object, *, scope: Scope, **_: t.Any) -> None:
        with self._lock:
            self._watches[scope] = time.time()

    def _watch_stopped(self, sender: object, *, scope: Scope, **_: t.Any) -> None:
        with self._lock:
            self._watches.pop(scope, None)

    def streams(self) -> list[OpenStream]:
        with self._lock:
            return [
                OpenStream(scope.to_wire(), since, principal, projection)
                for (principal, scope, projection), opened in self._streams.items()
                for since in opened
            ]

    def watches(self) -> list[OpenStream]:
        with self._lock:
            return [OpenStream(scope.to_wire(), since) for scope, since in self._watches.items()]


def page_channels(app: Flask) -> list[dict[str, t.Any]]:
    """The open page channels of ``app``: who, and the scopes of the components they carry."""
    from .ui.channel import Channel

    krm = runtime_of(app)
    out = []
    for stream in list(krm.streams):
        if isinstance(stream, Channel):
            components = [
                {"scope": c.scope.to_wire(), "projection": c.projection, "kind": c.kind}
                for c in stream.page.components.values()
            ]
            out.append({"principal": stream.principal.name, "components": components})
    return out


def snapshot(app: Flask, tracker: StreamTracker) -> dict[str, t.Any]:
    """What the status socket answers: the process, its watches, JSON streams and page channels."""
    return {
        "pid": os.getpid(),
        "watches": [_as_dict(w) for w in tracker.watches()],
        "streams": [_as_dict(s) for s in tracker.streams()],
        "pages": page_channels(app),
    }


def _as_dict(item: OpenStream) -> dict[str, t.Any]:
    return {"scope": item.scope, "since": item.since, "principal": item.principal, "projection": item.projection}


def socket_path(app: Flask, pid: int | None = None) -> Path:
    """Where the server process ``pid`` (default: this one) serves its status socket."""
    return Path(app.instance_path) / f"{SOCKET_PREFIX}{os.getpid() if pid is None else pid}{SOCKET_SUFFIX}"


class StatusServer:
    """Serves ``app``'s open streams on a Unix socket for ``flask krm streams``.

    Start it in the server process (it needs gevent; a monkey-patched process) before streams
    open: it learns about JSON streams and watches from their signals. Each connection gets one
    JSON document and is closed. :meth:`stop` removes the socket. One per worker process.
    """

    def __init__(self, app: Flask, path: str | Path | None = None) -> None:
        self.app = app
        self.path = Path(path) if path is not None else socket_path(app)
        self.tracker = StreamTracker(app)
        self._server: StreamServer | None = None

    def start(self) -> StatusServer:
        """Bind the socket (mode 0600) and serve it. Raises ``OSError`` if it cannot be bound."""
        from gevent.server import StreamServer

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(self.path))
        finally:
            os.umask(old_umask)
        listener.listen(16)
        self._server = StreamServer(listener, self._answer)
        self._server.start()
        return self

    def _answer(self, connection: socket.socket, address: t.Any) -> None:
        try:
            with self.app.app_context():
                connection.sendall(json.dumps(snapshot(self.app, self.tracker)).encode() + b"\n")
        finally:
            connection.close()

    def stop(self) -> None:
        """Stop serving and remove the socket. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.stop(timeout=1)
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
        self.tracker.disconnect()


def status_sockets(app: Flask) -> list[Path]:
    """Every status socket in ``app``'s instance folder (one per server process)."""
    folder = Path(app.instance_path)
    if not folder.is_dir():
        return []
    found = []
    for entry in sorted(folder.glob(f"{SOCKET_PREFIX}*{SOCKET_SUFFIX}")):
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(entry.stat().st_mode):
                found.append(entry)
    return found


def socket_pid(path: Path) -> int | None:
    """The server process id in a status socket's name, or ``None`` for another name."""
    digits = path.name[len(SOCKET_PREFIX) : -len(SOCKET_SUFFIX)]
    return int(digits) if path.name.startswith(SOCKET_PREFIX) and digits.isdecimal() else None


def remove_if_stale(path: Path) -> bool:
    """Remove the status socket of a server process that no longer runs (killed without cleanup)."""
    pid = socket_pid(path)
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        return True
    except PermissionError:
        return False  # another user's process: it exists
    return False


def read_status(path: Path, timeout: float = 5.0) -> dict[str, t.Any]:
    """One server's snapshot from its status socket. Raises ``OSError`` or ``ValueError``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
        client.settimeout(timeout)
        client.connect(str(path))
        chunks = []
        while chunk := client.recv(65536):
            chunks.append(chunk)
    answer = json.loads(b"".join(chunks))
    if not isinstance(answer, dict):
        raise ValueError("the status socket answered something other than a JSON object")
    return answer


def _scope_text(scope: Mapping[str, str]) -> str:
    resource = scope.get("resource", "")
    if scope.get("group"):
        resource += "." + scope["group"]
    text = f"{scope.get('target', '')}: {resource}"
    if scope.get("namespace"):
        text += f" in {scope['namespace']}"
    if scope.get("name"):
        text += f" named {scope['name']}"
    return text


def _age(since: float, now: float) -> str:
    seconds = max(0, int(now - since))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def format_status(status: Mapping[str, t.Any], now: float | None = None) -> Iterator[str]:
    """The lines ``flask krm streams`` prints for one server's snapshot."""
    now = time.time() if now is None else now
    watches, streams, pages = status.get("watches", []), status.get("streams", []), status.get("pages", [])
    yield f"Server process {status.get('pid')}"
    yield f"  Upstream watches: {len(watches)}"
    for watch in watches:
        yield f"    {_scope_text(watch['scope'])} (open {_age(watch['since'], now)})"
    yield f"  Page channels: {len(pages)}"
    for page in pages:
        parts = ", ".join(f"{_scope_text(c['scope'])} [{c['kind']}, {c['projection']}]" for c in page["components"])
        yield f"    {page['principal']}: {parts or 'no components'}"
    yield f"  JSON streams: {len(streams)}"
    for stream in streams:
        opened = _age(stream["since"], now)
        yield f"    {stream['principal']}: {_scope_text(stream['scope'])} [{stream['projection']}] (open {opened})"


@krm_cli.command("streams")
@click.option("--timeout", default=5.0, show_default=True, help="Seconds to wait for each server.")
def streams_command(timeout: float) -> None:
    """List the open streams and upstream watches of the running server processes."""
    app = current_app_object()
    runtime_of(app)
    sockets = status_sockets(app)
    if not sockets:
        raise click.ClickException(
            f"no running server found: no status socket in {app.instance_path} "
            "(the server starts one with flask_krm.cli.StatusServer(app).start())"
        )
    answered = 0
    for path in sockets:
        try:
            status = read_status(path, timeout)
        except (OSError, ValueError) as exc:
            if remove_if_stale(path):
                click.echo(f"{path.name}: removed; its server process is gone", err=True)
            else:
                click.echo(f"{path.name}: no answer ({type(exc).__name__})", err=True)
            continue
        answered += 1
        for line in format_status(status):
            click.echo(line)
    if not answered:
        raise SystemExit(1)
