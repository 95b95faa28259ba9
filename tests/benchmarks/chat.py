"""Visitors chatting with one tenant through the real server, for the benchmarks that time turns
(tests/benchmarks/harness.py): non-streaming ``POST /api/v1/chat`` turns in conversations of
six messages, each timed with the authenticated floor (``GET /api/v1/users?limit=1``) of the
same server just before it. A turn's own time is the turn less that floor: what the chat costs
beyond what any authenticated request costs."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

from apikeys.services import api_key_create
from tenants.models import Tenant
from tests.benchmarks import harness
from tests.benchmarks.http import Connection

KEYS = 16  # turns cycle through them: one key would meet its plan's 750 chats a minute
FLOOR = "/api/v1/users?limit=1"
TURNS_PER_CONVERSATION = 6


def bench_keys(tenant: Tenant, name: str) -> list[str]:
    """``KEYS`` live write keys of ``tenant``, made anew (those of an earlier run deleted)."""
    tenant.api_keys.filter(name=name).delete()
    return [api_key_create(tenant=tenant, name=name, scope="write", livemode=True)[1]
            for _ in range(KEYS)]


class Visitors:
    """One tenant's visitors on one server. ``message(number)`` is the text of turn ``number``
    (a new conversation every ``TURNS_PER_CONVERSATION``th); ``replies`` holds what the agent
    answered. Every call of ``own`` is kept in ``turns``, ``floors`` and ``owns``
    (milliseconds); ``skip`` forgets the warm-up's."""

    def __init__(self, url: str, keys: list[str], message: Callable[[int], str], *, visitor: str):
        self.chat, self.floor = Connection(url), Connection(url)
        self.headers = itertools.cycle([{**harness.PROXY_HEADERS, "Authorization": f"Bearer {key}",
                                         "Content-Type": "application/json"} for key in keys])
        self.message = message
        self.visitor = visitor
        self.counter = itertools.count()
        self.sessions: dict[str, str] = {}
        self.turns: list[float] = []
        self.floors: list[float] = []
        self.owns: list[float] = []
        self.replies: list[str] = []

    def turn(self) -> float:
        number = next(self.counter)
        visitor = f"{self.visitor}-{number // TURNS_PER_CONVERSATION}"
        body = {"message": self.message(number), "visitorId": visitor}
        if visitor in self.sessions:
            body["sessionId"] = self.sessions[visitor]
        answer = self.chat.request("POST", "/api/v1/chat", body=json.dumps(body).encode(),
                                   headers=next(self.headers))
        assert answer.status == 200, answer.body[:500]
        reply = json.loads(answer.body)
        self.replies.append(reply["content"])
        self.sessions[visitor] = reply["sessionId"]
        return answer.seconds * 1000

    def floor_request(self) -> float:
        answer = self.floor.request("GET", FLOOR, headers=next(self.headers))
        assert answer.status == 200, answer.body[:500]
        return answer.seconds * 1000

    def own(self) -> float:
        """The floor, then a turn: the turn's own time (ms)."""
        floor = self.floor_request()
        turn = self.turn()
        self.turns.append(turn)
        self.floors.append(floor)
        self.owns.append(turn - floor)
        return turn - floor

    def skip(self, count: int) -> None:
        del self.turns[:count], self.floors[:count], self.owns[:count]

    def close(self) -> None:
        self.chat.close()
        self.floor.close()
