"""Headless Debian chromium driven by selenium through /usr/bin/chromedriver, for the browser tests
and docs/screenshots.py. No network: the driver binary is given, so selenium never fetches one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
    "--disable-component-update", "--disable-sync", "--window-size=1500,1000", "--hide-scrollbars",
]  # fmt: skip


def missing() -> str | None:
    """Why a browser cannot be started here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.is_file():
            return f"{path} not found (apt-get install -y chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the dev extra has it)"
    return None


@contextmanager
def chromium() -> Iterator[Any]:
    """A fresh headless chromium (own profile dir, removed after) with its console log kept."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="chromium-profile-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[str]:
    """Console messages at SEVERE level since the last call (chromedriver drains the log)."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def wait_for(driver: Any, css: str, timeout: float = 20.0, count: int = 1) -> list[Any]:
    """The elements matching `css` once at least `count` exist."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(
        lambda d: (found := d.find_elements(By.CSS_SELECTOR, css)) and len(found) >= count and found
    )


def full_page_screenshot(driver: Any, path: Path, width: int = 1500, max_height: int = 4000) -> None:
    """The whole page (up to `max_height` px) as a PNG."""
    height = min(max_height, int(driver.execute_script("return document.documentElement.scrollHeight")))
    driver.set_window_size(width, max(height, 600))
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
