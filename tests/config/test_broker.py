"""The embedded default's broker (config/broker.py) under load: several processes enqueue a few
thousand tasks at once while a real worker consumes them. Every task runs exactly once and the
worker survives: no message is read half written (kombu#1551, which the filesystem transport
before it suffered from), none is lost, none is run twice."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from tests.live import ROOT, environment

pytestmark = pytest.mark.live  # a Celery worker and producer processes

PRODUCERS = 6
PER_PRODUCER = 500
TOTAL = PRODUCERS * PER_PRODUCER
# Processes that keep every core busy meanwhile, as the slow local model of the report did: a
# producer is then often descheduled between creating a message and finishing it.
BURNERS = 2
DRAINERS = 2
BURN = "import time\nend = time.monotonic() + 120\nwhile time.monotonic() < end: pass\n"


def _ran(path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def test_many_producers_at_once_every_task_runs_exactly_once(tmp_path):
    env = environment({"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1",
                       "VAR_DIR": str(tmp_path), "COUNTING_FILE": str(tmp_path / "ran.txt")})
    ran = tmp_path / "ran.txt"
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "tests.fakes.counting_app", "worker",
             "--loglevel=INFO", "--concurrency=2", "--without-gossip", "--without-mingle",
             "--without-heartbeat"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(BURNERS)]
        try:
            producers = [
                subprocess.Popen([sys.executable, "-m", "tests.fakes.counting_app", "produce",
                                  str(n * PER_PRODUCER), str(PER_PRODUCER)],
                                 cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT)
                for n in range(PRODUCERS)
            ]
            for producer in producers:
                out, _ = producer.communicate(timeout=300)
                assert producer.returncode == 0, out.decode()[-2000:]
            deadline = time.monotonic() + 300
            while len(_ran(ran)) < TOTAL and worker.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
            alive = worker.poll() is None
        finally:
            for burner in burners:
                burner.kill()
                burner.wait()
            worker.terminate()
            worker.wait(timeout=30)
    output = log_path.read_text()
    assert alive, f"the worker died:\n{output[-3000:]}"
    assert "Traceback" not in output and "JSONDecodeError" not in output, output[-3000:]
    assert sorted(_ran(ran)) == list(range(TOTAL))  # none lost, none twice


def test_consumers_that_never_sleep_never_read_half_a_message(tmp_path):
    """The tightest race there is: two consumers that ask the broker for the next message again
    the moment they have one, while several processes enqueue. A message handed out before its
    writer had finished it would not decode, and its consumer would die of it; one handed to
    both consumers would be written down twice."""
    env = environment({"DATABASE_URL": None, "REDIS_URL": None, "DEBUG": "1",
                       "VAR_DIR": str(tmp_path), "COUNTING_FILE": str(tmp_path / "drained.txt")})
    module = [sys.executable, "-m", "tests.fakes.counting_app"]
    stop = tmp_path / "stop"
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(BURNERS)]
    drainers = [subprocess.Popen([*module, "drain", str(stop)], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                for _ in range(DRAINERS)]
    producers = [subprocess.Popen([*module, "produce", str(n * PER_PRODUCER), str(PER_PRODUCER)],
                                  cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
                 for n in range(PRODUCERS)]
    try:
        for producer in producers:
            out, _ = producer.communicate(timeout=300)
            assert producer.returncode == 0, out.decode()[-2000:]
        stop.touch()
        for drainer in drainers:
            out, _ = drainer.communicate(timeout=330)
            assert drainer.returncode == 0, out.decode()[-3000:]
    finally:
        for proc in (*drainers, *producers, *burners):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert sorted(_ran(tmp_path / "drained.txt")) == list(range(TOTAL))  # none lost, none twice
