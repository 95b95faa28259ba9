"""Embeddings by the tenant's own provider (docs/knowledge.md, "The provider's embeddings").

A tenant whose agent runs on an OpenAI-compatible provider may have knowledge retrieval compare
that provider's embeddings (``/v1/embeddings``: OpenAI's ``text-embedding-3-small``, or whatever
model a llama.cpp server serves) instead of the local model's. The local vectors are stored all
the same: they are the default and the fallback whenever the provider cannot answer.

The call goes where the tenant's chat calls go, in the same way (``agent/providers/openai.py``):
the official ``openai`` client, the tenant's decrypted key, its base URL, one shared TLS context.
Its timeouts are the knowledge base's own: short for a visitor's question, which waits for it,
longer for indexing. Vectors are stored under ``model_id()``, ``provider:`` and a short hash of
the base URL and the model name: a change of either is another space, never mixed with this one,
and the key is in no id.
"""

from __future__ import annotations

import hashlib
import ssl
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
import openai

from core import embeddings
from core.spans import model_call

if TYPE_CHECKING:
    from tenants.models import Tenant

PREFIX = "provider:"
# Where the openai client sends requests when a tenant names no base URL.
DEFAULT_BASE_URL = "https://api.openai.com/v1"
BATCH = 64  # texts per request
MAX_DIMENSIONS = 8192  # a vector longer than any embedding model's is no embedding


class EmbeddingFailed(Exception):
    """The provider did not embed: it could not be reached, answered an error or in time, or
    answered something that is no embedding of each text. ``str()`` says which, never the key."""


@dataclass(frozen=True)
class Embedder:
    """A tenant's provider embeddings: where, with which key and model."""

    api_key: str
    base_url: str  # normalised: no trailing slash; the default when the tenant names none
    model: str

    @property
    def model_id(self) -> str:
        return model_id(base_url=self.base_url, model=self.model)

    def __repr__(self) -> str:  # never the key, in a log or a traceback
        return f"Embedder(base_url={self.base_url!r}, model={self.model!r})"


def model_id(*, base_url: str, model: str) -> str:
    digest = hashlib.sha256(f"{base_url}\n{model}".encode()).hexdigest()[:16]
    return PREFIX + digest


def is_provider_model(model_id: str) -> bool:
    return model_id.startswith(PREFIX)


def for_tenant(tenant: Tenant) -> Embedder | None:
    """The tenant's provider embeddings, or None when it uses the local model's (its choice, or
    a provider that cannot embed: not openai, no model named, no key)."""
    if not tenant.uses_provider_embeddings:
        return None
    key = tenant.agent_api_key
    if not key:  # a key that no longer decrypts (another encryption key)
        return None
    base_url = (tenant.agent_base_url or DEFAULT_BASE_URL).rstrip("/")
    return Embedder(api_key=key, base_url=base_url, model=tenant.agent_embedding_model)


def encode(embedder: Embedder, texts: Sequence[str], *, timeout: float,
           max_retries: int = 0) -> np.ndarray:
    """The unit-length vectors of ``texts`` by the provider, one row each, float32, in requests
    of ``BATCH`` texts. Raises ``EmbeddingFailed``."""
    rows: list[np.ndarray] = []
    for start in range(0, len(texts), BATCH):
        rows.extend(_request(embedder, texts[start:start + BATCH], timeout=timeout,
                             max_retries=max_retries))
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    if len({len(row) for row in rows}) != 1:
        raise EmbeddingFailed("the provider's vectors differ in length from one request to the next")
    return np.vstack(rows)


def _request(embedder: Embedder, texts: Sequence[str], *, timeout: float,
             max_retries: int) -> list[np.ndarray]:
    batch = [(text or " ")[:embeddings.MAX_CHARS] for text in texts]
    client = _client(api_key=embedder.api_key, base_url=embedder.base_url)
    try:
        with model_call("embeddings", client.base_url):
            response = client.with_options(timeout=timeout, max_retries=max_retries
                                            ).embeddings.create(model=embedder.model, input=batch)
    except openai.APITimeoutError as exc:
        raise EmbeddingFailed(f"no answer within {timeout:g} s") from exc
    except openai.APIStatusError as exc:
        raise EmbeddingFailed(f"the provider answered HTTP {exc.status_code}") from exc
    except openai.APIConnectionError as exc:
        raise EmbeddingFailed("the provider could not be reached") from exc
    except openai.OpenAIError as exc:  # an answer the client cannot read
        raise EmbeddingFailed(f"the provider's answer is unusable ({type(exc).__name__})") from exc
    return _vectors(getattr(response, "data", None), count=len(batch))


def _vectors(data, *, count: int) -> list[np.ndarray]:
    """The answer's vectors in the order of the texts (by each item's ``index``), unit length;
    EmbeddingFailed unless it is one finite, non-zero vector per text, all of one length."""
    if not isinstance(data, list) or len(data) != count:
        raise EmbeddingFailed(f"the provider answered {len(data) if isinstance(data, list) else 0} "
                              f"vectors for {count} texts")
    ordered: list[np.ndarray | None] = [None] * count
    for position, item in enumerate(data):
        index = getattr(item, "index", position)
        if not isinstance(index, int) or not 0 <= index < count or ordered[index] is not None:
            raise EmbeddingFailed("the provider's vectors are not one per text")
        try:
            vector = np.asarray(getattr(item, "embedding", None), dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise EmbeddingFailed("the provider's vector is not a list of numbers") from exc
        if vector.ndim == 2:
            raise EmbeddingFailed(
                "the provider answered one vector per token, not one per text (a llama.cpp "
                "server serving a model without pooling: start it with --kv_overrides "
                "<architecture>.pooling_type=int:1 for mean pooling)")
        if vector.ndim != 1 or not 0 < len(vector) <= MAX_DIMENSIONS:
            raise EmbeddingFailed("the provider's vector is not a list of numbers")
        norm = float(np.linalg.norm(vector))
        if not np.isfinite(norm) or norm == 0.0:
            raise EmbeddingFailed("the provider's vector is zero or not finite")
        ordered[index] = vector / norm
    if len({len(v) for v in ordered}) != 1:
        raise EmbeddingFailed("the provider's vectors differ in length")
    return ordered  # type: ignore[return-value] - every place filled, checked above


# --- clients ----------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    # As the chat provider's: loading the CA bundle takes ~80 ms, so every client shares one.
    return ssl.create_default_context()


# Synchronous clients (indexing runs on a worker, retrieval on the request's thread), kept per
# key and server so that a question reuses the open connection, and its TLS session, of the one
# before it. httpx's pool is safe across threads.
_CLIENTS = 32
_clients: OrderedDict[tuple[str, str], openai.OpenAI] = OrderedDict()
_lock = threading.Lock()


def _client(*, api_key: str, base_url: str) -> openai.OpenAI:
    with _lock:
        key = (api_key, base_url)
        client = _clients.get(key)
        if client is None:
            client = _clients[key] = openai.OpenAI(
                api_key=api_key, base_url=base_url, max_retries=0,
                http_client=openai.DefaultHttpxClient(verify=_tls_context()))
        _clients.move_to_end(key)
        gone = [_clients.popitem(last=False)[1] for _ in range(max(0, len(_clients) - _CLIENTS))]
    for client_ in gone:  # keys rotated away, tenants long gone
        client_.close()
    return client
