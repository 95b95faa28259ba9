"""A Celery app on the project's broker settings whose one task writes down its number.

The broker tests and the broker benchmark run a real worker on it (``celery -A
tests.fakes.counting_app worker``) and enqueue from several processes (``python -m
tests.fakes.counting_app produce FIRST COUNT``); each task appends its number as one line to
``COUNTING_FILE``, so a test can see which tasks ran and how often. ``python -m
tests.fakes.counting_app drain STOP_FILE`` takes the messages off the broker itself, as fast as
it can, and writes down the numbers they carry in the same file: the tightest consumer there is.

``COUNTING_BROKER=filesystem`` puts it on kombu's filesystem transport instead, configured as
the embedded default had it before the SQLite broker (the benchmark's baseline).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("counting")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.conf.beat_schedule = {}
app.conf.task_always_eager = False


def _filesystem_broker(var_dir: Path) -> None:
    folder = var_dir / "celery-filesystem"
    for sub in ("queue", "processed", "control"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    app.conf.broker_url = "filesystem://"
    app.conf.broker_transport = None
    app.conf.broker_transport_options = {
        "data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
        "processed_folder": str(folder / "processed"), "control_folder": str(folder / "control"),
        "store_processed": False, "polling_interval": 0.1,
    }


if os.environ.get("COUNTING_BROKER") == "filesystem":
    from django.conf import settings

    _filesystem_broker(Path(settings.VAR_DIR))


@app.task(name="counting.record")
def record(number: int) -> None:
    """One line, written with one ``write`` on a file opened for appending: lines never mix."""
    fd = os.open(os.environ["COUNTING_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{number}\n".encode())
    finally:
        os.close(fd)


def produce(first: int, count: int) -> float:
    """Enqueues tasks ``first`` .. ``first + count - 1``; returns the seconds it took."""
    started = time.perf_counter()
    for number in range(first, first + count):
        record.delay(number)
    return time.perf_counter() - started


def drain(stop: Path, timeout: float = 300.0) -> None:
    """Takes messages off the default queue in a loop that never sleeps, writing down the number
    each carries, until the queue is empty once ``stop`` exists."""
    deadline = time.monotonic() + timeout
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        while time.monotonic() < deadline:
            message = channel.basic_get(app.conf.task_default_queue, no_ack=True)
            if message is not None:
                args, _kwargs, _embed = message.decode()
                record(args[0])
            elif stop.exists():
                return
    sys.exit(f"the queue was not empty after {timeout} s")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "produce":
        print(f"{produce(int(sys.argv[2]), int(sys.argv[3])):.3f}")
    elif len(sys.argv) == 3 and sys.argv[1] == "drain":
        drain(Path(sys.argv[2]))
    else:
        sys.exit("usage: python -m tests.fakes.counting_app produce FIRST COUNT | drain STOP_FILE")
