"""``make test`` brings its own browser: without Chromium, a user who cannot install it is
stopped before any test with one line saying what to install (root gets it installed, which a
test cannot show without uninstalling it)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.live import ROOT


def as_someone_else(command: list[str]) -> list[str]:
    """``command`` as a user who is not root (nobody), or as is when the tests are not root."""
    if os.geteuid() != 0:
        return command
    # util-linux's setpriv is on every Debian machine this runs on, CI's included.
    assert shutil.which("setpriv"), "setpriv (util-linux) is needed to run make as nobody"
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--", *command]


def top_level_environment() -> dict[str, str]:
    """This environment as a person's shell has it: when the suite itself runs under ``make
    test`` (as CI does), make's variables would turn the inner make into a sub-make, whose
    messages read ``make[1]:``."""
    return {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}}


@pytest.mark.live
def test_make_test_without_chromium_stops_at_once_with_one_line():
    proc = subprocess.run(
        as_someone_else(["make", "-s", "test", "CHROMIUM=/nonexistent/chromium",
                         "PYTEST_ARGS=--collect-only -q tests/config/test_health.py"]),
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=top_level_environment())
    assert proc.returncode != 0
    assert proc.stdout == ""  # no pytest, no pip
    message = [line for line in proc.stderr.splitlines() if not line.startswith("make:")]
    assert len(message) == 1, proc.stderr
    assert "apt-get install chromium" in message[0] and "/nonexistent/chromium" in message[0]
