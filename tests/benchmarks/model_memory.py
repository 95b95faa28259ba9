"""What the embedding model adds to a process's resident memory (``make bench``;
test_embedding_bench.py runs this in a fresh process and reads the JSON it prints).

The process first becomes what a web process is before its models load: Django set up and the
URL conf imported (every view, and numpy with them). Then the model is loaded
(``core.embeddings.warm_up``) and embeds what a process embeds: a batch of a document's chunks,
as the indexing worker does, and visitors' messages one at a time, as turns do. Resident
memory (``VmRSS``) and its peak (``VmHWM``) are read from /proc after each step, in MB.
``--all`` loads every model of the agent instead (``agent.interface.warm_up``: the embedding
model, the language identifiers, the decisions' regressions).
"""

from __future__ import annotations

import json
import random
import re
import sys


def _memory() -> dict[str, float]:
    with open("/proc/self/status") as status:
        text = status.read()
    return {key: int(re.search(rf"{key}:\s+(\d+)", text).group(1)) / 1024
            for key in ("VmRSS", "VmHWM")}


def main() -> None:
    import django

    django.setup()
    from django.urls import get_resolver

    get_resolver().reverse_dict  # noqa: B018 - imports every view, as a web process has them
    from core import embeddings
    from knowledge.chunking import chunk_sections
    from knowledge.parsing import parse_markdown
    from tests.benchmarks import corpus

    rng = random.Random(31)
    handbook = corpus.markdown_document(rng, sections=60, title="Memory handbook")
    chunks = [c.text for c in chunk_sections(parse_markdown(handbook))]
    messages = corpus.Messages(seed=31)
    before = _memory()
    if "--all" in sys.argv:
        from agent.interface import warm_up

        warm_up()
    else:
        embeddings.warm_up()
    loaded = _memory()
    embeddings.encode(chunks)
    for number in range(50):
        embeddings.encode([messages.next(number)])
    used = _memory()
    print(json.dumps({"before": before["VmRSS"], "loaded": loaded["VmRSS"], "used": used["VmRSS"],
                      "peak": used["VmHWM"], "chunks": len(chunks)}))


if __name__ == "__main__":
    main()
