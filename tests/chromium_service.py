"""A real headless Chromium for the tests, driven by Selenium through Debian's
``chromedriver``: no stand-in.

Finding the browser: ``chromium`` and ``chromedriver`` on ``PATH``.  When
they are missing and the session runs as root on a system with ``apt-get``,
Debian's ``chromium`` and ``chromium-driver`` packages are installed first
(as :mod:`redis_service` installs ``redis-server``).  When they are still
missing, a test that needs them *fails* with a clear message if ``CI`` (or
``RANKENGINE_REQUIRE_BROWSER``) is set, and is skipped otherwise.

Test modules import the fixture explicitly::

    from chromium_service import browser_fixture  # noqa: F401

The browser runs with a fresh profile directory, no sandbox (tests run as
root), no GPU, and everything that would reach the network on its own
(updates, sync, QUIC, background fetches) turned off.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

import pytest
from services import apt_install, unavailable

#: The flags every test browser starts with.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
#: Window size: a projector's 1280 x 800 and a bit.
WINDOW = (1400, 950)


def _unavailable(message: str) -> None:
    unavailable("browser", "RANKENGINE_REQUIRE_BROWSER", message)


def _try_install() -> None:
    apt_install("chromium", "chromium-driver")


def browser_binaries() -> tuple[str, str]:
    """Paths of ``chromium`` and ``chromedriver``; install, fail or skip as documented."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        _try_install()
        browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if browser is None or driver is None:
        _unavailable(
            "chromium/chromedriver not found on PATH and could not be installed "
            "(install Debian's 'chromium' and 'chromium-driver' packages)"
        )
    assert browser is not None and driver is not None
    return browser, driver


@pytest.fixture(name="browser", scope="module")
def browser_fixture() -> Iterator[Any]:
    """A Selenium ``webdriver.Chrome`` on a headless Chromium with a fresh
    profile; quit (browser and driver processes stopped) after the module."""
    browser, driver_path = browser_binaries()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _unavailable("selenium is not installed (pip install -e '.[test]')")
        raise
    profile = tempfile.mkdtemp(prefix="rankengine-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
