"""The simulator's serving certificate: a fresh certificate authority per server, as a cluster has.

kube-apiserver serves HTTPS with a certificate its cluster's CA signed, and kubeconfigs carry that
CA as ``certificate-authority-data``; clients verify the server against it (kubectl refuses to send
a bearer token over plain HTTP). The simulator does the same with a throwaway CA: an ECDSA P-256
key pair made at start-up, never written anywhere but the kubeconfig (the CA certificate only)
and a private temporary directory that exists only while the TLS context loads the key.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

import gevent.ssl
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)
"""How long the certificates are valid (a demo may run for days; every start makes new ones)."""

SERVER_NAMES = ("localhost",)
SERVER_ADDRESSES = (ipaddress.ip_address("127.0.0.1"),)
"""Where the simulator listens: its certificate names the loopback address (and ``localhost``)."""


@dataclass(frozen=True)
class ServingCertificate:
    """PEM bytes: the CA certificate clients trust, and the server's certificate and key."""

    ca_pem: bytes
    certificate_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        """A gevent-cooperative server-side TLS context (TLS 1.2 or newer) serving this certificate."""
        context: ssl.SSLContext = gevent.ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        with tempfile.TemporaryDirectory(prefix="krm-simulator-tls-") as directory:  # private (0700)
            chain, key = Path(directory, "chain.pem"), Path(directory, "key.pem")
            chain.write_bytes(self.certificate_pem)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(chain, key)
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "flask-krm"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _pem(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def issue_serving_certificate() -> ServingCertificate:
    """A new CA and a server certificate it signed for 127.0.0.1 and ``localhost``."""
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)  # tolerate clock skew
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("krm-simulator-ca")
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server_key = ec.generate_private_key(ec.SECP256R1())
    alternative_names: list[x509.GeneralName] = [x509.DNSName(name) for name in SERVER_NAMES]
    alternative_names += [x509.IPAddress(address) for address in SERVER_ADDRESSES]
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("krm-simulator"))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=False,
                crl_sign=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alternative_names), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ServingCertificate(ca_pem=_pem(ca), certificate_pem=_pem(server), key_pem=key_pem)
