"""The README's screenshots of `sweep report` and `sweep view`, taken in headless Debian chromium
(the browser tests' driver) on a sweep's output dir:

    .venv/bin/python docs/screenshots.py runs/pear_simulated

writes docs/report.png (the top of OUT/report/index.html, built if missing) and docs/viewer.png (the
transcript of a PEAR episode whose vote went wrong → right, opened from the list), as palette PNGs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script from anywhere

from sweep.report.build import build_report  # noqa: E402
from sweep.view.data import ViewData  # noqa: E402
from sweep.view.server import serve_in_thread  # noqa: E402
from tests.browser import chromium, console_errors, wait_for  # noqa: E402


def shrink(path: Path) -> None:
    """Re-save as a 256-colour palette PNG (a few times smaller; text stays sharp)."""
    from PIL import Image

    with Image.open(path) as image:
        image.convert("RGB").quantize(colors=256).save(path, optimize=True)


def report_shot(driver: object, out: Path, dest: Path) -> None:
    index = out / "report" / "index.html"
    if not index.is_file():
        build_report([out], out / "report")
    driver.set_window_size(1400, 1150)  # type: ignore[attr-defined]
    driver.get(index.as_uri())  # type: ignore[attr-defined]
    wait_for(driver, "#summary-0 tbody tr")
    driver.save_screenshot(str(dest))  # type: ignore[attr-defined]


def viewer_shot(driver: object, out: Path, dest: Path, method: str) -> None:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    server, url = serve_in_thread(ViewData([out]))
    try:
        driver.set_window_size(1400, 1150)  # type: ignore[attr-defined]
        driver.get(url)  # type: ignore[attr-defined]
        wait_for(driver, "#list tbody tr")
        Select(driver.find_element(By.ID, "f-method")).select_by_visible_text(method)  # type: ignore[attr-defined]
        Select(driver.find_element(By.ID, "f-flip")).select_by_value("w2r")  # type: ignore[attr-defined]
        WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: all(
                r.find_elements(By.TAG_NAME, "td")[1].text == method and "W2R" in r.text
                for r in d.find_elements(By.CSS_SELECTOR, "#list tbody tr")
            )
        )
        wait_for(driver, "#list tbody tr")[0].click()
        wait_for(driver, "#panes .round", count=2)
        driver.set_window_size(1400, 1500)  # type: ignore[attr-defined]
        driver.execute_script("document.querySelector('#detail').scrollIntoView()")  # type: ignore[attr-defined]
        driver.save_screenshot(str(dest))  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a sweep's output dir")
    parser.add_argument("--method", default="pear", help="the viewer's method filter")
    args = parser.parse_args()
    docs = ROOT / "docs"
    with chromium() as driver:
        report_shot(driver, args.out, docs / "report.png")
        viewer_shot(driver, args.out, docs / "viewer.png", args.method)
        if errors := console_errors(driver):
            raise SystemExit(f"console errors: {errors}")
    for name in ("report.png", "viewer.png"):
        shrink(docs / name)
        print(f"{docs / name}: {(docs / name).stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
