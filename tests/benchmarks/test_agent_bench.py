"""The agent's speed on a real model (``make bench``; needs ``make install-local-model``).

1. **First token.** The time from sending a streamed chat to the first text of the reply,
   through daphne, against the same llama.cpp server called directly by the ``openai`` client,
   in one run, interleaved. A turn makes two requests, one after the other: the analysis
   (which decides capture, score, handoff and booking, and which the reply is written from) and
   the streamed reply. A pass-through proxy records both and times the model's answers; the
   direct baseline then makes exactly those two requests. The service shows text a whole word
   at a time (a secret, a figure or an echo of the instructions must be seen whole before it
   is shown), so the earliest it can show anything is the model's first word. The aim: the
   service's own time before its first text (the turn's time less the model's time to the
   analysis and to the reply's first word) is at most 50 ms. The same time counted from the
   model's first token, and the first token of the reply request alone, are printed beside
   it.
2. **The cap.** Turn time and reply length with the tenant's default reply limits against the
   limits at their maximum, on a request for a long answer: capped replies stay within 1,200
   characters, and the capped turns are shorter when the model wrote past the cap, no longer
   otherwise.
"""

from __future__ import annotations

import contextlib
import json
import re
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest

from tests.benchmarks import harness
from tests.benchmarks.test_chat_bench import EMBEDDED, _report
from tests.live import daphne, manage
from tests.local_model import NOT_INSTALLED, installed, serve

pytestmark = pytest.mark.skipif(not installed(), reason=NOT_INSTALLED)

ROUNDS = 12
CAP_ROUNDS = 6  # even: each service goes first as often as the other
OVERHEAD_AIM = 0.050  # seconds over the model's own two requests
# A question whose answer needs no figures: a sentence with one is held until it ends.
QUESTION = "Hi! Can you tell me what your product does?"
WORD = re.compile(r"\S\s")  # a whole word: the end of the first one
# Long answers without figures (a figure no passage supports would end the reply early).
RAMBLE = ("Write me a long, detailed guide to getting started with your product: every step and "
          "every setting, with examples for each.")


class Exchange:
    """One request the service made, as the proxy saw it: when it arrived, when the answer's
    first text and first whole word came (streamed requests), when the answer ended."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.received = time.perf_counter()
        self.first_text: float | None = None
        self.first_word: float | None = None
        self.done = 0.0
        self._text = ""
        self._lines = b""

    def saw(self, chunk: bytes) -> None:
        """Reads the streamed text out of a raw chunk of Server-Sent Events."""
        self._lines += chunk
        *lines, self._lines = self._lines.split(b"\n")
        for line in lines:
            if not line.startswith(b"data: {"):
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            self._text += (choices[0].get("delta") or {}).get("content") or ""
            now = time.perf_counter()
            if self.first_text is None and self._text:
                self.first_text = now
            if self.first_word is None and WORD.search(self._text):
                self.first_word = now

    def model_seconds(self, *, word: bool) -> float:
        """The model's own time: to the first text (or whole word) of a streamed answer, to
        the end of any other."""
        mark = self.first_word if word else self.first_text
        return (mark or self.done) - self.received


class Recorder:
    """A pass-through proxy in front of the model server that records each request's body and
    times the model's answer, so a turn's time can be split into the model's and the service's
    own."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.exchanges: list[Exchange] = []
        self._client = httpx.Client(timeout=300)  # one pool: the proxy's own cost stays small
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                exchange = Exchange(json.loads(raw))
                recorder.exchanges.append(exchange)
                url = recorder.upstream + self.path.removeprefix("/v1")
                with recorder._client.stream("POST", url, content=raw,
                                             headers={"Content-Type": "application/json"}) as upstream:
                    self.send_response(upstream.status_code)
                    self.send_header("Content-Type", upstream.headers["content-type"])
                    self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                    # The service stops reading a reply that its guard ended early.
                    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                        for chunk in upstream.iter_raw():
                            exchange.saw(chunk)
                            self.wfile.write(chunk)
                            self.wfile.flush()
                exchange.done = time.perf_counter()

        return Handler


@pytest.fixture(scope="module")
def model() -> Iterator[str]:
    with serve() as base_url:
        yield base_url


@contextmanager
def service(tmp_path, base_url: str, *limits: str) -> Iterator[tuple[str, str, str]]:
    """daphne on the embedded default, with one tenant on the OpenAI provider at ``base_url``;
    yields the server's URL, a write key and the tenant's id."""
    env = {**EMBEDDED, "VAR_DIR": str(tmp_path), "AGENT_MAX_RETRIES": "0",
           "AGENT_TIMEOUT_SECONDS": "120"}  # a CPU model is slow; the turn has 120 s
    manage("migrate", "--noinput", env=env)
    created = json.loads(manage("create_tenant", "Bench", "--plan", "enterprise", "--json", env=env))
    tenant = created["tenant"]["id"]
    manage("configure_agent", tenant, "--provider", "openai", "--model", "smollm2",
           "--api-key", "local", "--base-url", base_url, *limits, env=env)
    with daphne(env) as server:
        yield server, created["keys"]["live"]["write"], tenant


# One client for the whole run, as a browser keeps its connection: a client made per request
# would count its own set-up (some 20 ms to load the CA bundle) against the service.
CLIENT = httpx.Client(timeout=300)


def chat(server: str, key: str, visitor: str, message: str) -> tuple[float, float, str]:
    """One streamed turn: seconds to the first text, seconds to the end, the text."""
    started = time.perf_counter()
    first, text, buffer = None, [], b""
    with CLIENT.stream("POST", f"{server}/api/v1/chat",
                       headers={"Authorization": f"Bearer {key}", "Accept": "text/event-stream"},
                       json={"message": message, "visitorId": visitor, "stream": True}) as r:
        assert r.status_code == 200, r.read()
        for chunk in r.iter_bytes():
            buffer += chunk
            *frames, buffer = buffer.split(b"\n\n")
            for frame in frames:
                event, _, data = frame.partition(b"\ndata: ")
                if event == b"event: content_delta" and json.loads(data)["delta"]:
                    first = first or time.perf_counter() - started
                    text.append(json.loads(data)["delta"])
                assert event != b"event: error", data
    assert first is not None, "the reply streamed no text"
    return first, time.perf_counter() - started, "".join(text)


def direct(client: openai.OpenAI, bodies: list[dict[str, Any]]) -> float:
    """The recorded requests, in order, straight to the model server: seconds to the first text
    of the last (streamed) one."""
    started = time.perf_counter()
    *before, streamed = bodies
    for body in before:
        client.chat.completions.create(**body)
    for chunk in client.chat.completions.create(**streamed):
        if chunk.choices and chunk.choices[0].delta.content:
            return time.perf_counter() - started
    raise AssertionError("the model streamed no text")


def test_first_token_through_the_service_vs_the_model_itself(tmp_path, model):
    recorder = Recorder(model)
    client = openai.OpenAI(base_url=model, api_key="local", max_retries=0)
    through, own_word, own_token, pair, alone = [], [], [], [], []
    before, between, after = [], [], []  # the service's own time, where it goes
    try:
        # A deadline a slow CPU cannot reach: the turn must make both requests.
        with service(tmp_path, recorder.base_url, "--turn-seconds", "120") as (server, key, _):
            chat(server, key, "warm-up", QUESTION)
            for i in range(ROUNDS):
                recorder.exchanges.clear()
                sent = time.perf_counter()
                first = chat(server, key, f"v{i}", QUESTION)[0]
                turn = list(recorder.exchanges)
                analysis, streamed = turn[0], turn[-1]
                before.append(analysis.received - sent)
                between.append(streamed.received - analysis.done)
                after.append(sent + first - (streamed.first_word or streamed.done))
                assert [bool(e.body.get("stream")) for e in turn] == [False, True], turn
                through.append(first)
                own_word.append(first - sum(e.model_seconds(word=True) for e in turn))
                own_token.append(first - sum(e.model_seconds(word=False) for e in turn))
                pair.append(direct(client, [e.body for e in turn]))
                alone.append(direct(client, [turn[-1].body]))
    finally:
        recorder.close()
    _report("first text through the service (daphne, SSE, through the recording proxy)", through)
    _report("first token of the same two requests made directly (openai client)", pair)
    _report("first token of the reply request alone, made directly (for context)", alone)
    _report("service's own time before its first text, after the model's first token", own_token)
    _report("service's own time before its first text, after the model's first word", own_word)
    _report("  of which before the analysis request (auth, the turn opened, retrieval)", before)
    _report("  of which between the analysis and the reply request (decisions applied)", between)
    _report("  of which after the model's first word (guard, SSE)", after)
    print(f"first text, service / direct: {statistics.median(through) / statistics.median(pair):.3f}")
    table = harness.table("agent", ["Measure", "Median ms", "p95 ms"])
    for label, samples in [
        ("first text through the service", through),
        ("first token of the same requests, openai client straight to the model", pair),
        ("the service's own time before its first text, after the model's first word",
         own_word),
    ]:
        figures = harness.Samples([sample * 1000 for sample in samples])
        table.rows.append([label, harness.ms(figures.median), harness.ms(figures.p95)])
    harness.check("agent", "streamed turn: the service's own time before its first text",
                  statistics.median(own_word) * 1000, OVERHEAD_AIM * 1000, unit=" ms")


def test_turn_time_with_the_cap_vs_without(tmp_path, model):
    capped_limits = ("--turn-seconds", "120")  # the default caps: 300 tokens, 1,200 characters
    uncapped_limits = ("--max-reply-tokens", "4000", "--max-reply-chars", "8000",
                       "--turn-seconds", "120")
    with service(tmp_path / "capped", model, *capped_limits) as (capped, capped_key, _), \
            service(tmp_path / "uncapped", model, *uncapped_limits) as (uncapped, uncapped_key, _):
        runs: dict[str, list[tuple[float, float, str]]] = {"capped": [], "uncapped": []}
        pair = [("capped", capped, capped_key), ("uncapped", uncapped, uncapped_key)]
        for i in range(CAP_ROUNDS):
            # A B, then B A: the model server reuses what it computed for the previous prompt,
            # so the second of two turns with the same question starts sooner.
            for name, url, key in (pair if i % 2 == 0 else pair[::-1]):
                runs[name].append(chat(url, key, f"{name[0]}{i}", RAMBLE))
    for name, results in runs.items():
        _report(f"turn time, {name}", [r[1] for r in results])
        lengths = [len(r[2]) for r in results]
        print(f"reply length, {name}: median {statistics.median(lengths)} chars, max {max(lengths)}")
    assert all(len(text) <= 1200 for *_, text in runs["capped"])
    capped_time = statistics.median(r[1] for r in runs["capped"])
    uncapped_time = statistics.median(r[1] for r in runs["uncapped"])
    longer = sum(len(r[2]) > 1200 for r in runs["uncapped"])
    print(f"turn time, capped / uncapped: {capped_time / uncapped_time:.2f} "
          f"({longer} of {CAP_ROUNDS} uncapped replies longer than the cap)")
    # The cap shortens the turns it cuts, and costs the others nothing (sampling varies the
    # replies' lengths from run to run: a quarter's margin).
    assert capped_time <= uncapped_time * (1 if longer > CAP_ROUNDS // 2 else 1.25), (
        capped_time, uncapped_time)
