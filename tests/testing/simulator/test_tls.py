"""The simulator serves HTTPS as kube-apiserver does: a certificate from its own CA, which its kubeconfig trusts."""

from __future__ import annotations

import base64
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from flask_krm.testing.simulator import KubeSimulator
from tests.contract.kube import request


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeSimulator]:
    with KubeSimulator() as simulator:
        yield simulator


def _handshake(kube: KubeSimulator, context: ssl.SSLContext, server_name: str) -> x509.Certificate:
    with socket.create_connection(("127.0.0.1", kube.port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname=server_name) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def test_the_kubeconfig_names_an_https_server_and_trusts_its_ca(kube: KubeSimulator) -> None:
    cluster = json.loads(Path(kube.kubeconfig_path).read_text())["clusters"][0]["cluster"]
    assert cluster["server"] == kube.url and kube.url.startswith("https://127.0.0.1:")
    assert base64.b64decode(cluster["certificate-authority-data"]) == kube.ca_pem
    assert "insecure-skip-tls-verify" not in cluster
    with kube.api_client("viewer") as viewer:
        assert viewer.configuration.verify_ssl is True
        assert request(viewer, "GET", "/api/v1/namespaces/default").status == 200


@pytest.mark.parametrize("server_name", ["127.0.0.1", "localhost"])
def test_the_certificate_verifies_against_the_ca_for_the_loopback_names(kube: KubeSimulator, server_name: str) -> None:
    context = ssl.create_default_context(cadata=kube.ca_pem.decode())
    certificate = _handshake(kube, context, server_name)
    ca = x509.load_pem_x509_certificate(kube.ca_pem)
    assert certificate.issuer == ca.subject
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True


def test_a_client_that_does_not_trust_the_ca_is_refused(kube: KubeSimulator) -> None:
    with pytest.raises(ssl.SSLCertVerificationError, match="certificate verify failed"):
        _handshake(kube, ssl.create_default_context(), "127.0.0.1")  # the system's CAs only


def test_every_simulator_has_its_own_ca(kube: KubeSimulator) -> None:
    with KubeSimulator() as other:
        assert other.ca_pem != kube.ca_pem
        with pytest.raises(ssl.SSLCertVerificationError):
            _handshake(other, ssl.create_default_context(cadata=kube.ca_pem.decode()), "127.0.0.1")


def test_plain_http_is_told_to_use_https(kube: KubeSimulator) -> None:
    with socket.create_connection(("127.0.0.1", kube.port), timeout=5) as raw:
        raw.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer admin-token\r\n\r\n")
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    assert answer == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"


def test_the_kubeconfig_is_private(kube: KubeSimulator) -> None:
    assert Path(kube.kubeconfig_path).stat().st_mode & 0o077 == 0
