"""Pushes to a conversation's open streams while the channel layer (Redis in production) accepts
connections and never answers (docs/security.md, "Under faults"): the write that pushes is held
a second at most, once, and the next ones not at all; streams catch up when they reconnect."""

from __future__ import annotations

import time

import pytest

from conversations import live
from conversations.models import Conversation
from tests.chat_helpers import chat
from tests.fakes.tcp_proxy import BLACKHOLED, TcpProxy

pytestmark = pytest.mark.live  # a proxy's thread


@pytest.fixture
def blackholed_layer(settings):
    proxy = TcpProxy("127.0.0.1", 1)
    proxy.outage(BLACKHOLED)
    # The production layer's options (config/settings), on the proxy.
    settings.CHANNEL_LAYERS = {"default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": f"redis://127.0.0.1:{proxy.port}/0",
                              "socket_connect_timeout": 1, "socket_timeout": 10}]}}}
    yield proxy
    proxy.close()
    live._layer.succeeded()


def test_a_layer_that_never_answers_holds_a_handoff_a_second_once(
        api, kit, rep, blackholed_layer, django_capture_on_commit_callbacks):
    assert chat(api, kit, "Hello", visitor="warm-up").status_code == 200  # pushes nothing
    took = []
    for visitor in ("first", "second"):
        started = time.monotonic()
        with django_capture_on_commit_callbacks(execute=True):
            # A handoff pushes the conversation's new status to its streams.
            r = chat(api, kit, "I want to talk to a human", visitor=visitor)
        took.append(time.monotonic() - started)
        assert r.status_code == 200 and r.json()["handoff"], r.text
    assert took[0] < 2 and took[1] < 0.5, took
    assert Conversation.objects.filter(status="handed_off").count() == 2
