"""Nobody can lock a member of the staff out (issue 28, docs/security.md "Accounts"), over HTTP
with Django's test client, each request from an address of its own (``REMOTE_ADDR``).

Before: ten wrong passwords from any addresses refused the account for 15 minutes, the right
password included. Now an account's failures only shut out the addresses that keep failing at
it: once it has ``PER_ACCOUNT`` failures in the window, each address may fail
``PER_PAIR_UNDER_ATTACK`` more times; an address that has not failed (its owner's) is checked,
with the password and the code. Guessing stays limited: a few guesses per address and window."""

from __future__ import annotations

from django_otp.oath import totp
from django_otp.plugins.otp_totp.models import TOTPDevice

from dashboard.limits import PER_ACCOUNT, PER_ADDRESS, PER_PAIR_UNDER_ATTACK
from tenants.models import User
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD

OWNER = "198.51.100.7"


def _attacker(n: int) -> str:
    return f"203.0.113.{n}"


def _try(address: str, password: str, email: str = "ray@acme.test",
         path: str = "/dashboard/login/") -> int:
    client = Client(REMOTE_ADDR=address)
    return client.post(path, {"username": email, "password": password}).status_code


def _guess_from(addresses: int, each: int) -> dict[str, list[int]]:
    """Wrong passwords for Ray's account, ``each`` from each of ``addresses`` addresses."""
    return {_attacker(n): [_try(_attacker(n), f"guess-{n}-{i}") for i in range(each)]
            for n in range(1, addresses + 1)}


def test_an_attacker_on_other_addresses_cannot_lock_the_owner_out(rep, clock):
    seen = _guess_from(addresses=8, each=5)
    # The first ten failures (two addresses) put the account under attack; from then on each
    # address gets PER_PAIR_UNDER_ATTACK guesses, then 429 without a check.
    assert seen[_attacker(1)] == seen[_attacker(2)] == [200] * 5
    for n in range(3, 9):
        assert seen[_attacker(n)] == [200] * PER_PAIR_UNDER_ATTACK + [429] * (
            5 - PER_PAIR_UNDER_ATTACK), (n, seen[_attacker(n)])
    checked = sum(status == 200 for statuses in seen.values() for status in statuses)
    assert checked == PER_ACCOUNT + 6 * PER_PAIR_UNDER_ATTACK
    # An address that failed cannot even try the right password now...
    assert _try(_attacker(1), PASSWORD) == 429
    # ...but the owner, elsewhere, signs in.
    owner = Client(REMOTE_ADDR=OWNER)
    r = owner.post("/dashboard/login/", {"username": "ray@acme.test", "password": PASSWORD})
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    assert owner.get("/dashboard/leads/").status_code == 200
    # A typo of the owner's costs them one of their own few tries, not the account.
    assert _try(OWNER, "wrong-once") == 200
    assert _try(OWNER, PASSWORD) == 302
    # The window over, the attacker's addresses are counted afresh (and limited afresh).
    clock.advance(15 * 60)
    assert _try(_attacker(1), PASSWORD) == 302


def test_the_owner_signs_in_with_the_password_and_the_code_during_an_attack(rep, clock):
    device = TOTPDevice.objects.create(user=rep, name="phone", confirmed=True)
    _guess_from(addresses=4, each=5)
    owner = Client(REMOTE_ADDR=OWNER)
    r = owner.post("/dashboard/login/", {"username": "ray@acme.test", "password": PASSWORD})
    assert r.status_code == 302 and r["Location"] == "/dashboard/login/code/"
    code = str(totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits)
               ).zfill(device.digits)
    r = owner.post("/dashboard/login/code/", {"code": code})
    assert r.status_code == 302 and r["Location"] == "/dashboard/"
    assert owner.get("/dashboard/leads/").status_code == 200


def test_someone_who_has_the_password_guesses_codes_a_few_times_per_address(rep, clock):
    """The code step counts on the same budgets: wrong codes are failures of the account."""
    device = TOTPDevice.objects.create(user=rep, name="phone", confirmed=True)
    thief = Client(REMOTE_ADDR=_attacker(1))
    thief.post("/dashboard/login/", {"username": "ray@acme.test", "password": PASSWORD})
    statuses = [thief.post("/dashboard/login/code/", {"code": f"{n:06d}"}).status_code
                for n in range(PER_ACCOUNT + 2)]
    assert statuses == [400] * PER_ACCOUNT + [429, 429]
    # The owner, elsewhere, still passes both steps (django-otp's own wait after wrong codes
    # aside, which the thief's guesses ran up: it is forgotten here).
    device.refresh_from_db()
    device.throttle_reset()
    owner = Client(REMOTE_ADDR=OWNER)
    owner.post("/dashboard/login/", {"username": "ray@acme.test", "password": PASSWORD})
    code = str(totp(device.bin_key, step=device.step, t0=device.t0, digits=device.digits)
               ).zfill(device.digits)
    assert owner.post("/dashboard/login/code/", {"code": code})["Location"] == "/dashboard/"


def test_the_admin_login_counts_on_the_same_budgets(db, clock):
    """Django's admin checked every password it was sent; now it is limited like the
    dashboard's sign-in, per address and per account and address."""
    User.objects.create_superuser(username="op", email="op@service.test", password=PASSWORD)
    statuses = [_try(_attacker(1), f"guess-{i}", email="op", path="/admin/login/")
                for i in range(PER_ACCOUNT + 1)]
    assert statuses == [200] * PER_ACCOUNT + [429]
    client = Client(REMOTE_ADDR=_attacker(1))
    r = client.post("/admin/login/", {"username": "op", "password": PASSWORD})
    assert r.status_code == 429 and int(r["Retry-After"]) > 0
    assert "Too many failed sign-ins for this account from your address" in r.content.decode()
    # The operator, elsewhere, signs in.
    owner = Client(REMOTE_ADDR=OWNER)
    r = owner.post("/admin/login/", {"username": "op", "password": PASSWORD, "next": "/admin/"})
    assert r.status_code == 302 and owner.get("/admin/").status_code == 200
    # And the address budget spans the dashboard's form and the admin's.
    for i in range(PER_ADDRESS - 1):
        _try(_attacker(2), "wrong", email=f"someone-{i}@acme.test", path="/admin/login/")
    assert _try(_attacker(2), "wrong", email="x@acme.test") == 200
    assert _try(_attacker(2), "wrong", email="y@acme.test") == 429


def test_a_signed_in_session_is_not_an_attempt(rep, clock):
    """Pages of a signed-in person count nowhere: only sign-in forms do."""
    _guess_from(addresses=2, each=5)
    client = signed_in(rep)
    for _ in range(3):
        assert client.get("/dashboard/leads/").status_code == 200
