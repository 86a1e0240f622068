"""An HTTPS upstream signed by a private CA: reached only by the tools that declare that CA.

Does process, socket and file I/O: makes two throwaway certificate authorities and a server
certificate for 127.0.0.1 (the `cryptography` package), serves HTTPS on 127.0.0.1 from a thread,
and calls tools of a real `mcp-runtime` through the official SDK. Every wait is bounded.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from harness import connect

pytestmark = pytest.mark.anyio

ONE_DAY = datetime.timedelta(days=1)


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _authority(common: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - ONE_DAY)
        .not_valid_after(now + ONE_DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False, key_agreement=False,
                encipher_only=False, decipher_only=False,
            ),  # fmt: skip
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return key, cert


def _leaf(ca_key: ec.EllipticCurvePrivateKey, ca: x509.Certificate) -> tuple[bytes, bytes]:
    """A server certificate for 127.0.0.1 and its key, both PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - ONE_DAY)
        .not_valid_after(now + ONE_DAY)
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class _Hello(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        body = json.dumps({"hello": "over tls"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def https_upstream(tmp_path: Path) -> Iterator[tuple[int, str, str]]:
    """An HTTPS server on 127.0.0.1: its port, its CA (PEM) and an unrelated CA (PEM)."""
    ca_key, ca = _authority("kube-mcp test CA")
    _, stranger = _authority("another CA")
    cert_pem, key_pem = _leaf(ca_key, ca)
    (tmp_path / "server.crt").write_bytes(cert_pem)
    (tmp_path / "server.key").write_bytes(key_pem)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "server.crt", tmp_path / "server.key")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    pem = lambda cert: cert.public_bytes(serialization.Encoding.PEM).decode()  # noqa: E731
    try:
        yield server.server_address[1], pem(ca), pem(stranger)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _manifest(port: int, ca: str, stranger: str) -> str:
    url = json.dumps(f"https://127.0.0.1:{port}/hello")
    tools = [
        {"name": "trusted", "http": {"url": url, "tls": {"caBundle": json.dumps(ca)}}},
        {"name": "untrusted", "http": {"url": url}},
        {"name": "wrong_ca", "http": {"url": url, "tls": {"caBundle": json.dumps(stranger)}}},
    ]
    lines = [
        "apiVersion: kube-mcp.io/v1alpha1",
        "kind: MCPServer",
        "metadata: {name: tls-upstream}",
        "spec:",
        "  tools:",
    ]
    for tool in tools:
        http = tool["http"]
        tls = f", tls: {{caBundle: {http['tls']['caBundle']}}}" if "tls" in http else ""
        lines.append(f"  - name: {tool['name']}")
        lines.append(f"    http: {{url: {http['url']}{tls}}}")
    return "\n".join(lines) + "\n"


async def test_a_private_ca_is_trusted_only_where_it_is_declared(start, tmp_path, https_upstream) -> None:
    port, ca, stranger = https_upstream
    manifest = tmp_path / "tls.yaml"
    manifest.write_text(_manifest(port, ca, stranger))
    rt = start(manifest)
    async with connect(rt, "modern") as client:
        trusted = await client.call_tool("trusted", {})
        assert not trusted.is_error, trusted
        assert "over tls" in trusted.content[0].text
        for name in ("untrusted", "wrong_ca"):
            refused = await client.call_tool(name, {})
            assert refused.is_error, (name, refused)
            assert "cannot reach the upstream" in refused.content[0].text, (name, refused)
