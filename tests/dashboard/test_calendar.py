"""The rep's own calendar page: connect (verified at once against Radicale), errors that say what
failed without echoing the password, and each user sees and changes only their own."""

from __future__ import annotations

from calendars.models import CalendarConnection
from tenants.services import user_create
from tests.dashboard.client import Client, signed_in
from tests.factories import PASSWORD
from tests.fakes.radicale import USERS


def _connect(client, radicale, password=USERS["ray"], url=None):
    return client.post("/dashboard/calendar/connect/", {
        "url": url or radicale.url, "username": "ray", "password": password})


def test_a_rep_connects_their_calendar(kit, rep, radicale, local_calendars):
    calendar_url = radicale.make_calendar()
    client = signed_in(rep)
    assert "No calendar connected" in client.get("/dashboard/calendar/").content.decode()
    assert "No calendar connected" in client.get("/dashboard/profile/").content.decode()
    r = _connect(client, radicale)
    assert r.status_code == 302 and r["Location"] == "/dashboard/calendar/"
    page = client.get("/dashboard/calendar/").content.decode()
    assert "Calendar connected" in page and calendar_url in page
    assert USERS["ray"] not in page
    connection = CalendarConnection.objects.get()
    assert connection.user == rep and connection.tenant == kit.tenant
    # My profile says so, and leads to the page.
    account = client.get("/dashboard/profile/").content.decode()
    assert f"Connected: <strong>{calendar_url}</strong>" in account
    assert 'href="/dashboard/calendar/"' in account


def test_a_wrong_password_says_so_and_saves_nothing(kit, rep, radicale, local_calendars):
    radicale.make_calendar()
    r = _connect(signed_in(rep), radicale, password="not-the-password")
    assert r.status_code == 422
    page = r.content.decode()
    assert "Authentication failed" in page and "not-the-password" not in page
    assert not CalendarConnection.objects.exists()


def test_bad_urls_and_missing_fields_are_refused(kit, rep, radicale, local_calendars):
    client = signed_in(rep)
    r = _connect(client, radicale, url=radicale.url + "ray/nothing/")
    assert r.status_code == 422 and "404" in r.content.decode()
    r = client.post("/dashboard/calendar/connect/", {"url": "", "username": "ray"})
    assert r.status_code == 400
    r = _connect(client, radicale, password="")
    assert r.status_code == 400 and "password" in r.content.decode()
    assert not CalendarConnection.objects.exists()


def test_each_user_sees_only_their_own_calendar(kit, rep, stranger, radicale, local_calendars):
    radicale.make_calendar()
    _connect(signed_in(rep), radicale)
    colleague = user_create(tenant=kit.tenant, email="kim@acme.test", password=PASSWORD)
    other = user_create(tenant=stranger.tenant, email="sam@stranger.test", password=PASSWORD)
    for user in (colleague, other):
        page = signed_in(user).get("/dashboard/calendar/").content.decode()
        assert "No calendar connected" in page and radicale.url not in page
        signed_in(user).post("/dashboard/calendar/disconnect/")
    assert CalendarConnection.objects.get().user == rep
    signed_in(rep).post("/dashboard/calendar/disconnect/")
    assert not CalendarConnection.objects.exists()


def test_the_admin_token_has_no_calendar_of_its_own(kit, radicale, local_calendars):
    client = Client()
    client.post("/dashboard/login/token/", {"token": kit.admin_token})
    page = client.get("/dashboard/calendar/")
    assert page.status_code == 200 and "Sign in with your own staff account" in page.content.decode()
    r = _connect(client, radicale)
    assert r.status_code == 302 and not CalendarConnection.objects.exists()


def test_strangers_are_sent_to_sign_in(db):
    r = Client().get("/dashboard/calendar/")
    assert r.status_code == 302 and "/dashboard/login/" in r["Location"]


def test_the_providers_guide_is_on_the_page_as_the_docs_give_it(rep):
    """Issue 29: the help pointed to docs/calendars.md, a path of the repository the service
    answers with 404. The page holds the guide itself (and links to it), each provider with
    the address the docs give."""
    import re
    from pathlib import Path

    from tests.dashboard.html import page as parsed

    content = signed_in(rep).get("/dashboard/calendar/").content
    text = content.decode()
    assert "docs/calendars.md" not in text
    html = parsed(content)
    assert html.xpath("//a[@href='#providers']") and html.xpath("//section[@id='providers']")
    rows = {row.xpath("./td")[0].text_content(): " ".join(row.xpath("./td")[1].text_content().split())
            for row in html.xpath("//section[@id='providers']//tbody/tr")}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "calendars.md").read_text()
    table = docs.split("## Providers", 1)[1].split("\n## ", 1)[0]
    documented = {cells[0]: re.findall(r"`([^`]+)`", cells[1])
                  for line in table.splitlines() if line.startswith("| ") and "`" in line
                  for cells in [[c.strip() for c in line.strip("|").split("|")]]}
    assert set(rows) == set(documented) == {"Google Calendar", "iCloud", "Fastmail", "Nextcloud",
                                            "Radicale"}
    for provider, addresses in documented.items():
        for address in addresses:
            assert address in rows[provider], (provider, address)
