"""What the test session's real services share: how a test that needs one
fails (in CI) or skips (elsewhere), how Debian's package is installed when
it is missing, and how every server process started is stopped at exit.

``tests/redis_service.py``, ``tests/postgres_service.py`` and
``tests/chromium_service.py`` each start one kind of service with these.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess

import pytest

#: Seconds apt-get waits for another apt-get's lock (a parallel install).
APT_LOCK_TIMEOUT = 300

#: Every server process a session started; :func:`_stop_all` kills what is left.
STARTED: list[subprocess.Popen[bytes]] = []


def _stop_all() -> None:
    for process in STARTED:
        if process.poll() is None:
            process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)


atexit.register(_stop_all)


def required(variable: str) -> bool:
    """True in CI, or when ``variable`` is set: the service's tests must run."""
    return bool(os.environ.get("CI") or os.environ.get(variable))


def unavailable(what: str, variable: str, message: str) -> None:
    """Fail (in CI, or with ``variable`` set) or skip (elsewhere) the test
    that needs the service ``what``."""
    if required(variable):
        pytest.fail(f"{message} (CI is set: {what} tests must run, not skip)", pytrace=False)
    pytest.skip(message)


def apt_install(*packages: str) -> None:
    """Install Debian's ``packages`` when running as root with apt-get; do
    nothing otherwise, or when apt-get fails (the caller then reports the
    service unavailable)."""
    if os.name != "posix" or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-o", f"DPkg::Lock::Timeout={APT_LOCK_TIMEOUT}"]
    for command in (["apt-get", "update"], [*install, *packages]):
        result = subprocess.run(command, env=env, capture_output=True, check=False)
        if result.returncode != 0:
            return
