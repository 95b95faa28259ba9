"""GET /api/v1/users: the first authenticated v1 endpoint."""

import pytest

from tests.factories import UserFactory


@pytest.fixture
def reps(kit):
    return [UserFactory(tenant=kit.tenant) for _ in range(3)]


def test_lists_the_tenants_users_in_v1_shape(api, kit, reps, stranger):
    UserFactory(tenant=stranger.tenant)
    r = api.get("/api/v1/users", headers=kit.auth("read"))
    assert r.status_code == 200
    data = r.json()
    assert [u["id"] for u in data["data"]] == [f"user_{u.pk.hex}" for u in reps]
    first = data["data"][0]
    assert set(first) == {"id", "email", "name", "role", "status", "timezone", "active",
                          "createdAt"}
    assert (first["role"], first["status"], first["timezone"], first["active"]) == (
        "rep", "offline", "UTC", True)
    assert first["createdAt"].endswith("Z") and len(first["createdAt"]) == 24
    assert data["pagination"] == {"page": 1, "limit": 25, "total": 3, "totalPages": 1,
                                  "hasMore": False}


def test_test_mode_keys_see_the_same_people(api, kit, reps):
    r = api.get("/api/v1/users", headers=kit.auth("read", "test"))
    assert r.status_code == 200
    assert len(r.json()["data"]) == 3


def test_pagination(api, kit, reps):
    r = api.get("/api/v1/users?page=2&limit=2", headers=kit.auth("read"))
    assert r.json()["data"][0]["id"] == f"user_{reps[2].pk.hex}"
    assert r.json()["pagination"] == {"page": 2, "limit": 2, "total": 3, "totalPages": 2,
                                      "hasMore": False}
    r = api.get("/api/v1/users?page=1&limit=2", headers=kit.auth("read"))
    assert r.json()["pagination"]["hasMore"] is True


@pytest.mark.parametrize(
    "query, field, code",
    [
        ("limit=0", "limit", "out_of_range"),
        ("limit=101", "limit", "out_of_range"),
        ("limit=ten", "limit", "invalid_format"),
        ("page=0", "page", "out_of_range"),
    ],
)
def test_bad_query_parameters_are_400_with_details(api, kit, query, field, code):
    r = api.get(f"/api/v1/users?{query}", headers=kit.auth("read"))
    assert r.status_code == 400
    error = r.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"][0]["field"] == field
    assert error["details"][0]["code"] == code


def test_retrieve_one_user_and_stranger_is_404(api, kit, reps, stranger):
    theirs = UserFactory(tenant=stranger.tenant)
    r = api.get(f"/api/v1/users/user_{reps[0].pk.hex}", headers=kit.auth("read"))
    assert r.status_code == 200 and r.json()["email"] == reps[0].email
    r = api.get(f"/api/v1/users/user_{theirs.pk.hex}", headers=kit.auth("read"))
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    # The right UUID with the wrong prefix is not an id of a user.
    r = api.get(f"/api/v1/users/lead_{reps[0].pk.hex}", headers=kit.auth("read"))
    assert r.status_code == 404


def test_query_count_is_fixed(api, kit, django_assert_max_num_queries):
    for _ in range(30):
        UserFactory(tenant=kit.tenant)
    # key lookup + last-used update (at most once a minute) + page + count
    with django_assert_max_num_queries(4):
        r = api.get("/api/v1/users?limit=10", headers=kit.auth("read"))
    assert len(r.json()["data"]) == 10
