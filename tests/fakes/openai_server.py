"""An OpenAI-compatible HTTP server on 127.0.0.1 for tests: ``/v1/chat/completions`` with
function calls, streamed chunks, errors, slow answers and broken streams, and ``/v1/embeddings``
(``fake_embedding``: a hashed bag of words, so that texts sharing words are near), which can be
made to fail or to be slow on its own.

The service talks to it through the real ``openai`` client, exactly as it would to OpenAI.
Tests set what it answers and read what it was sent.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

EMBEDDING_DIMENSIONS = 256


def fake_embedding(text: str) -> np.ndarray:
    """What the fake's ``/v1/embeddings`` answers for ``text``: each word (lower-cased) adds ±1
    at a place its hash picks, and the sum is made unit length. Texts that share words are near,
    texts that share none are at about 0: unlike the local model's, and deterministic, so that a
    test can tell which model ranked a passage."""
    vector = np.zeros(EMBEDDING_DIMENSIONS, dtype=np.float64)
    for word in re.findall(r"\w+", text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[int.from_bytes(digest[:4], "little") % EMBEDDING_DIMENSIONS] += (
            1.0 if digest[4] & 1 else -1.0)
    if not vector.any():
        vector[0] = 1.0
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class FakeOpenAI:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.peers: list[tuple[str, int]] = []  # the client's address: one per connection
        self.reset()
        self._server = _Server(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def reset(self) -> None:
        self.analysis: dict[str, Any] = {"intent": "other", "confidence": 0.6}
        self.reply = "Happy to help."
        self.chunk_size = 4  # characters per streamed chunk
        self.chunk_delay = 0.0  # seconds between streamed chunks
        self.delay = 0.0  # seconds before answering at all
        self.fail_status: int | None = None  # answer every request with this status
        self.fail_tool_call = False  # answer the analysis with plain text, no function call
        # How the analysis comes back, as real servers vary: "call" (a record_turn call),
        # "other_function" (a call of another name), "malformed" (arguments that are no JSON),
        # "in_text" (the arguments written as the message's text), "no_choices".
        self.analysis_as = "call"
        self.finish_reason = "stop"  # of the streamed reply ("length": the token limit)
        self.empty_chunks = False  # interleave chunks without content, as some servers do
        self.break_stream_after: int | None = None  # drop the connection after N chunks
        # /v1/embeddings alone: answer with this status, or only after this many seconds.
        self.embeddings_fail_status: int | None = None
        self.embeddings_delay = 0.0
        self.requests.clear()
        self.headers.clear()
        self.peers.clear()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    # What the service sent, for assertions.
    def analysis_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("tools")]

    def reply_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r.get("stream")]

    def embedding_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "input" in r]

    def embedded_texts(self) -> list[str]:
        return [text for r in self.embedding_requests() for text in _inputs(r)]


class _Server(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        # A client that hangs up (a reply the guard stopped reading) is no error of the fake's.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _completion(model: str, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


def _analysis_completion(model: str, analysis: Any, shape: str) -> dict[str, Any]:
    arguments = json.dumps(analysis)
    if shape == "in_text":
        return _completion(model, {"role": "assistant",
                                   "content": f"Here is my analysis: {arguments}"}, "stop")
    if shape == "no_choices":
        return {**_completion(model, {"role": "assistant", "content": None}, "stop"),
                "choices": []}
    name = "lookup_weather" if shape == "other_function" else "record_turn"
    if shape == "malformed":
        arguments = arguments[:-3] + "'}"
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    return _completion(model, {"role": "assistant", "content": None, "tool_calls": [call]},
                       "tool_calls")


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()),
        "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _inputs(body: dict[str, Any]) -> list[str]:
    texts = body.get("input")
    return [texts] if isinstance(texts, str) else [str(t) for t in texts or []]


def _handler(fake: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The headers and the body go out in two writes: with Nagle's algorithm the body
        # waits for the client's delayed ACK of the headers, 40 ms per response on loopback,
        # which no real API server adds.
        disable_nagle_algorithm = True

        def log_message(self, *args) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            fake.requests.append(body)
            fake.headers.append({k.lower(): v for k, v in self.headers.items()})
            fake.peers.append(self.client_address)
            if self.path.endswith("/embeddings"):
                return self._embeddings(body)
            if not self.path.endswith("/chat/completions"):
                return self._json(404, {"error": {"message": "not found"}})
            if fake.delay:
                time.sleep(fake.delay)
            if fake.fail_status:
                return self._json(fake.fail_status, {"error": {"message": "fake failure",
                                                               "type": "server_error"}})
            model = body.get("model", "fake")
            if body.get("tools"):
                if fake.fail_tool_call:
                    return self._json(200, _completion(model, {"role": "assistant",
                                                               "content": "no tools today"}, "stop"))
                analysis = fake.analysis(body) if callable(fake.analysis) else fake.analysis
                return self._json(200, _analysis_completion(model, analysis, fake.analysis_as))
            if body.get("stream"):
                return self._stream(model)
            return self._json(200, _completion(model, {"role": "assistant", "content": fake.reply},
                                               "stop"))

        def _embeddings(self, body: dict[str, Any]) -> None:
            """As OpenAI answers: one item per input, in order, as floats or, when the client
            asks (the openai client does by default), base64 of little-endian float32."""
            if fake.embeddings_delay or fake.delay:
                time.sleep(fake.embeddings_delay or fake.delay)
            status = fake.embeddings_fail_status or fake.fail_status
            if status:
                return self._json(status, {"error": {"message": "fake failure",
                                                     "type": "server_error"}})
            items = []
            for index, text in enumerate(_inputs(body)):
                vector = fake_embedding(text)
                embedding: Any = (base64.b64encode(vector.astype("<f4").tobytes()).decode()
                                  if body.get("encoding_format") == "base64" else vector.tolist())
                items.append({"object": "embedding", "index": index, "embedding": embedding})
            return self._json(200, {"object": "list", "data": items,
                                    "model": body.get("model", "fake"),
                                    "usage": {"prompt_tokens": 1, "total_tokens": 1}})

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)  # the client may have given up (a timeout test)

        def _stream(self, model: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            text = fake.reply(fake.requests[-1]) if callable(fake.reply) else fake.reply
            pieces = [text[i:i + fake.chunk_size] for i in range(0, len(text), fake.chunk_size)]
            finish = fake.finish_reason
            limit = fake.requests[-1].get("max_tokens")
            if limit and len(pieces) > limit:  # a chunk stands for a token, as on real servers
                pieces, finish = pieces[:limit], "length"
            frames = [_chunk(model, {"role": "assistant", "content": ""})]
            for piece in pieces:
                frames.append(_chunk(model, {"content": piece}))
                if fake.empty_chunks:
                    frames.append(_chunk(model, {}))
            frames += [_chunk(model, {}, finish), b"data: [DONE]\n\n"]
            try:
                for index, frame in enumerate(frames):
                    if fake.break_stream_after is not None and index > fake.break_stream_after:
                        self.connection.shutdown(2)
                        return
                    self._send_chunk(frame)
                    if fake.chunk_delay and 0 < index < len(frames) - 2:
                        time.sleep(fake.chunk_delay)
                self._send_chunk(b"")
            except (BrokenPipeError, ConnectionResetError, OSError):
                return

        def _send_chunk(self, data: bytes) -> None:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    return Handler


def main() -> None:
    """``python -m tests.fakes.openai_server``: the fake on 127.0.0.1 until Ctrl-C, for trying
    the OpenAI provider by hand (``eval_agent --provider openai --base-url …``)."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--reply", help="What every streamed reply says.")
    args = parser.parse_args()
    fake = FakeOpenAI()
    if args.reply:
        fake.reply = args.reply
    print(fake.base_url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        fake.close()


if __name__ == "__main__":
    main()
