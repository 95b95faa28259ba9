"""``make test`` brings its own browser and nginx: without Chromium or nginx, a user who cannot
install them is stopped before any test with one line saying what to install (root gets it installed, which a
test cannot show without uninstalling it). Without the local-model extra, the tests that need it
skip with one message saying how to install it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.live import ROOT, environment


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


@pytest.mark.live
def test_make_test_without_nginx_stops_at_once_with_one_line():
    proc = subprocess.run(
        as_someone_else(["make", "-s", "test", "NGINX=/nonexistent/nginx",
                         "PYTEST_ARGS=--collect-only -q tests/config/test_health.py"]),
        cwd=ROOT, capture_output=True, text=True, timeout=60, env=top_level_environment())
    assert proc.returncode != 0
    assert proc.stdout == ""
    message = [line for line in proc.stderr.splitlines() if not line.startswith("make:")]
    assert len(message) == 1, proc.stderr
    assert "apt-get install nginx" in message[0] and "/nonexistent/nginx" in message[0]


@pytest.mark.live
def test_without_the_local_model_its_tests_skip_with_one_message_saying_how_to_install_it():
    from tests.local_model import NOT_INSTALLED

    # As if llama-cpp-python were not installed: its import finds nothing.
    code = ("import sys, pytest; sys.modules['llama_cpp'] = None; sys.exit(pytest.main(["
            "'-q', '-p', 'no:cacheprovider', 'tests/agent/test_local_model.py']))")
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
        env=environment({"DATABASE_URL": None, "REDIS_URL": None, "PYTEST_XDIST_WORKER": None,
                         "PYTEST_XDIST_TESTRUNUID": None, "PYTEST_ADDOPTS": None}))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skipped = [line for line in proc.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skipped) == 1, proc.stdout
    assert skipped[0].endswith(NOT_INSTALLED) and "`make install-local-model`" in skipped[0]
    assert "one permitted skip" in skipped[0]
    assert re.search(r"^\d+ skipped in ", proc.stdout.splitlines()[-1]), proc.stdout
