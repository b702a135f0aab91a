"""Headless Debian Chromium driven by Selenium through chromium-driver, for the TFJob tab's tests.

``make browser`` installs both packages; outside ``make test`` a missing browser skips the test,
under ``make test`` (``TFJOB_REQUIRE_BROWSER=1``) it fails it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1100",
    "--hide-scrollbars",
)


def require_browser() -> None:
    """Skip (or, under make test, fail) when Debian's chromium or chromium-driver is missing."""
    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        return
    reason = (
        f"needs {CHROMIUM} and {CHROMEDRIVER}: run `make browser` (apt-get install chromium chromium-driver)"
    )
    if os.environ.get("TFJOB_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@contextmanager
def chromium(*, downloads: Path | None = None) -> Iterator[Any]:
    """A fresh headless Chromium (own profile directory), quit and removed on the way out;
    files it downloads go to ``downloads`` when given."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    require_browser()
    profile = tempfile.mkdtemp(prefix="tfjob-tab-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if downloads is not None:
        options.add_experimental_option(
            "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
        )
    driver = webdriver.Chrome(options=options, service=Service(str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_until(check: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll ``check`` until it returns something truthy; AssertionError naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except Exception as error:  # the page may still be loading: retried until the deadline
            last = error
        else:
            if last:
                return last
        time.sleep(0.25)
    raise AssertionError(f"{what} not seen within {timeout:.0f}s (last: {last!r})")
