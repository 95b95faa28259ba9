"""Server-side request forgery: webhook URLs may not point into private, loopback, link-local,
multicast, reserved, CGNAT or unspecified space (IPv4 and IPv6, mapped forms included), at
subscription and again at delivery, against the address actually connected to.

These tests run with WEBHOOKS_ALLOW_PRIVATE_TARGETS off. No request ever leaves for a refused
address: the refusals happen before any connection, and the one receiver is on 127.0.0.1.
"""

from __future__ import annotations

import ipaddress

import pytest

from core import outbound
from tests.factories import make_lead
from webhooks import services, transport
from webhooks.models import Delivery, DeliveryAttempt

from .conftest import SECRET, attempt_now, v1_signature_ok

NOT_PUBLIC_TAIL = ("(webhooks go to public Internet addresses only). For local development, set "
                   "WEBHOOKS_ALLOW_PRIVATE_TARGETS=1.")

NON_PUBLIC = [
    "10.0.0.1", "172.16.5.4", "192.168.1.1",  # private
    "127.0.0.1", "127.8.8.8",  # loopback
    "169.254.169.254",  # link-local (cloud metadata)
    "100.64.0.1", "100.127.255.254",  # CGNAT
    "0.0.0.0",  # unspecified
    "224.0.0.1", "239.255.255.250",  # multicast
    "240.0.0.1", "255.255.255.255",  # reserved, broadcast
    "192.0.0.8", "198.18.0.1",  # IETF assignments, benchmarking
    "::1", "::", "fe80::1", "fc00::1", "ff02::1",  # IPv6 loopback, unspecified, link-local, ULA, mcast
    "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",  # IPv4-mapped
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "2002:a00:1::1",  # 6to4 of 10.0.0.1
    "2001:0:4136:e378:8000:63bf:f5ff:fffe",  # Teredo, client 10.0.0.1
]
PUBLIC = ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8",
          "2001:0:4136:e378:8000:63bf:f7f7:f7f7"]  # Teredo, client 8.8.8.8


@pytest.fixture(autouse=True)
def strict(settings):
    settings.WEBHOOKS_ALLOW_HTTP = False
    settings.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    settings.WEBHOOKS_TIMEOUT_SECONDS = 5
    return settings


@pytest.fixture
def dns(monkeypatch):
    """A resolver the test controls: name -> addresses (every lookup recorded)."""
    class Table(dict):
        lookups: list[str]

    table = Table()
    lookups: list[str] = []

    def resolve(host, port):
        lookups.append(host)
        if host not in table:
            raise OSError("Name or service not known")
        return list(table[host])

    monkeypatch.setattr(outbound, "resolve", resolve)
    table.lookups = lookups
    return table


@pytest.mark.parametrize("address", NON_PUBLIC)
def test_non_public_addresses(address):
    assert transport.is_public(ipaddress.ip_address(address)) is False


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses(address):
    assert transport.is_public(ipaddress.ip_address(address)) is True


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@pytest.mark.parametrize("address", ["10.0.0.1", "127.0.0.1", "169.254.169.254", "100.64.0.1",
                                     "::1", "::ffff:127.0.0.1", "fe80::1", "0.0.0.0", "224.0.0.1"])
def test_literal_non_public_hosts_are_refused_at_subscription(api, kit, address):
    r = api.post("/api/v1/webhooks", json={"url": f"https://{_host(address)}/hook",
                                           "events": ["lead.created"]}, headers=kit.auth("admin"))
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "unprocessable"
    (detail,) = r.json()["error"]["details"]
    assert detail["field"] == "url" and "an address that is not public" in detail["message"]


def test_other_spellings_of_loopback_are_refused(api, kit):
    # The resolver turns these into 127.0.0.1; the check is on what they resolve to.
    for url in ("https://2130706433/hook", "https://0x7f000001/hook", "https://localhost/hook"):
        r = api.post("/api/v1/webhooks", json={"url": url, "events": ["lead.created"]},
                     headers=kit.auth("admin"))
        assert r.status_code == 422, url


def test_a_name_resolving_to_any_private_address_is_refused(api, kit, dns):
    dns["inside.example"] = ["10.1.2.3"]
    dns["mixed.example"] = ["93.184.216.34", "192.168.0.10"]
    dns["cgnat.example"] = ["100.100.1.1"]
    dns["mapped.example"] = ["::ffff:192.168.0.1"]
    for host in dns:
        r = api.post("/api/v1/webhooks", json={"url": f"https://{host}/hook",
                                               "events": ["lead.created"]},
                     headers=kit.auth("admin"))
        assert r.status_code == 422, host


def test_an_unresolvable_name_is_refused(api, kit, dns):
    r = api.post("/api/v1/webhooks", json={"url": "https://nowhere.example/hook",
                                           "events": ["lead.created"]}, headers=kit.auth("admin"))
    assert r.status_code == 422 and "does not resolve" in r.json()["error"]["message"] + str(
        r.json()["error"]["details"])


def test_a_public_name_is_accepted(api, kit, dns):
    dns["hooks.example.com"] = ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
    r = api.post("/api/v1/webhooks", json={"url": "https://hooks.example.com/in",
                                           "events": ["lead.created"]}, headers=kit.auth("admin"))
    assert r.status_code == 201


def test_plain_http_is_refused_unless_allowed(api, kit, dns, strict):
    dns["hooks.example.com"] = ["93.184.216.34"]
    body = {"url": "http://hooks.example.com/in", "events": ["lead.created"]}
    assert api.post("/api/v1/webhooks", json=body, headers=kit.auth("admin")).status_code == 400
    strict.WEBHOOKS_ALLOW_HTTP = True
    assert api.post("/api/v1/webhooks", json=body, headers=kit.auth("admin")).status_code == 201


# --- at delivery ----------------------------------------------------------------------------

def _delivery_to(kit, url, django_capture_on_commit_callbacks):
    services.subscription_create(tenant=kit.tenant, livemode=True, url=url,
                                 events=["lead.created"], secret=SECRET)
    with django_capture_on_commit_callbacks(execute=True):
        make_lead(kit)
    return Delivery.objects.get()


def test_dns_rebinding_after_subscription_is_refused_at_delivery(
        kit, receiver, dns, strict, enqueued, django_capture_on_commit_callbacks):
    strict.WEBHOOKS_ALLOW_HTTP = True
    dns["rebind.example"] = ["93.184.216.34"]  # public when checked...
    delivery = _delivery_to(kit, f"http://rebind.example:{receiver.port}/hooks",
                            django_capture_on_commit_callbacks)
    dns["rebind.example"] = ["127.0.0.1"]  # ...loopback when it matters
    attempt = attempt_now(delivery)
    assert not attempt.success and attempt.status_code is None
    # Refused, saying which name, never which address it resolved to (that would map the
    # service's own network for whoever may create a webhook).
    assert attempt.error == ("Refused: The host 'rebind.example' resolves to an address that is "
                             f"not public {NOT_PUBLIC_TAIL}")
    assert "127.0.0.1" not in attempt.error
    assert receiver.received == []
    # Refused for good: no later attempt may go there, so the schedule is not spent on it.
    assert (Delivery.objects.get().status, Delivery.objects.get().next_attempt_at) == ("failed", None)


def test_a_name_that_stops_resolving_waits_for_its_next_attempt(
        kit, receiver, dns, strict, enqueued, django_capture_on_commit_callbacks):
    """A resolver failure may be passing: unlike a refused address, it keeps the schedule."""
    strict.WEBHOOKS_ALLOW_HTTP = True
    dns["flaky.example"] = ["93.184.216.34"]
    delivery = _delivery_to(kit, f"http://flaky.example:{receiver.port}/hooks",
                            django_capture_on_commit_callbacks)
    dns["flaky.example"] = []
    attempt = attempt_now(delivery)
    assert attempt.error == "Refused: The host 'flaky.example' does not resolve."
    assert Delivery.objects.get().status == "waiting_retry"


def test_a_target_that_became_private_is_refused_at_delivery(
        kit, receiver, strict, enqueued, django_capture_on_commit_callbacks):
    strict.WEBHOOKS_ALLOW_HTTP = True
    strict.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    delivery = _delivery_to(kit, f"http://[::1]:{receiver.port}/hooks",
                            django_capture_on_commit_callbacks)
    strict.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    attempt = attempt_now(delivery)
    assert attempt.error.startswith("Refused: The host '::1' resolves to an address that is not")
    assert receiver.received == []


def test_the_connected_address_itself_is_checked(
        kit, receiver, strict, monkeypatch, enqueued, django_capture_on_commit_callbacks):
    """Even if resolution were fooled, the peer of the socket is checked before a byte is sent."""
    strict.WEBHOOKS_ALLOW_HTTP = True
    strict.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True
    delivery = _delivery_to(kit, receiver.url(), django_capture_on_commit_callbacks)
    strict.WEBHOOKS_ALLOW_PRIVATE_TARGETS = False
    monkeypatch.setattr(outbound, "public_addresses",
                        lambda host, port, policy: [ipaddress.ip_address("127.0.0.1")])
    attempt = attempt_now(delivery)
    assert attempt.error == ("Refused: The host '127.0.0.1' resolves to an address that is not "
                             f"public {NOT_PUBLIC_TAIL}")
    assert receiver.received == []


def test_the_request_goes_to_the_checked_address_with_the_name_as_host(
        kit, receiver, dns, strict, enqueued, django_capture_on_commit_callbacks):
    strict.WEBHOOKS_ALLOW_HTTP = True
    strict.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True  # 127.0.0.1 stands in for a public address
    dns["hooks.example.com"] = ["127.0.0.1"]
    delivery = _delivery_to(kit, f"http://hooks.example.com:{receiver.port}/in",
                            django_capture_on_commit_callbacks)
    dns.lookups.clear()
    attempt = attempt_now(delivery)
    assert attempt.success
    (request,) = receiver.received
    assert request.headers["host"] == f"hooks.example.com:{receiver.port}"
    assert v1_signature_ok(request)
    # Resolved once, by the check; the connection used that answer, not a second lookup.
    assert dns.lookups == ["hooks.example.com"]
    assert DeliveryAttempt.objects.get().remote_address == "127.0.0.1"


def test_a_redirect_towards_a_private_address_is_not_followed(
        kit, receiver, strict, monkeypatch, enqueued, django_capture_on_commit_callbacks):
    """With the rules on, the receiver on 127.0.0.1 stands in for a public host (only that one
    address is let through) and answers with a redirect to the cloud metadata address."""
    from tests.fakes.webhook_receiver import Answer

    strict.WEBHOOKS_ALLOW_HTTP = True
    real_is_public = transport.is_public
    monkeypatch.setattr(outbound, "is_public", lambda address: str(address) == "127.0.0.1"
                        or real_is_public(address))
    delivery = _delivery_to(kit, receiver.url(), django_capture_on_commit_callbacks)
    receiver.answer(Answer(status=307, headers={
        "Location": "http://169.254.169.254/latest/meta-data/"}))
    attempt = attempt_now(delivery)
    assert not attempt.success and attempt.status_code == 307
    assert attempt.error == "Redirect (307 to http://169.254.169.254/latest/meta-data/) not followed."
    assert len(receiver.received) == 1
    assert Delivery.objects.get().status == "waiting_retry"


# --- TLS: the pinned address, the name's certificate -------------------------------------------

def _self_signed(name: str) -> tuple[bytes, bytes]:
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


@pytest.fixture
def tls_receiver(tmp_path):
    import ssl

    from tests.fakes.webhook_receiver import WebhookReceiver

    cert, key = _self_signed("hooks.example.com")
    (tmp_path / "cert.pem").write_bytes(cert)
    (tmp_path / "key.pem").write_bytes(key)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    fake = WebhookReceiver(tls=server)
    fake.cert = cert
    yield fake
    fake.close()


def test_https_goes_to_the_checked_address_with_the_names_sni_and_certificate(
        kit, tls_receiver, dns, strict, monkeypatch, enqueued, django_capture_on_commit_callbacks):
    import ssl

    strict.WEBHOOKS_ALLOW_PRIVATE_TARGETS = True  # 127.0.0.1 stands in for a public address
    dns["hooks.example.com"] = ["127.0.0.1"]
    delivery = _delivery_to(kit, tls_receiver.url(host="hooks.example.com"),
                            django_capture_on_commit_callbacks)

    # The certificate is checked against the name: an untrusted one fails the attempt.
    attempt = attempt_now(delivery)
    assert not attempt.success and "CERTIFICATE_VERIFY_FAILED" in attempt.error
    assert tls_receiver.received == []

    trusting = ssl.create_default_context(cadata=tls_receiver.cert.decode())
    monkeypatch.setattr(outbound, "_tls_context", lambda: trusting)
    Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=delivery.created_at)
    attempt = attempt_now(delivery)
    assert attempt.success, attempt.error
    (request,) = tls_receiver.received
    assert tls_receiver.server_names[-1] == "hooks.example.com"
    assert request.headers["host"] == f"hooks.example.com:{tls_receiver.port}"
    assert v1_signature_ok(request)
