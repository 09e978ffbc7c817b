"""The explorer page: its size and how long a browser takes to draw it.

Usage (from the repository root; needs Debian's ``chromium`` and
``chromium-driver`` and the ``selenium`` test extra)::

    python bench/explore_page.py                 # the docs board, 10 entries
    python bench/explore_page.py --random 40 --loads 9

Writes the page ``rankengine explore`` writes for the board, opens it from
the file ``--loads`` times in a headless Chromium with the network off, and
prints the page size, then the minimum, median and maximum of two times:

* first draw: from the start of the page's script to the end of its first
  picture (``body[data-first-draw]``, measured by the page itself);
* load: from the navigation's start to the end of the load event
  (``performance.timing``), parsing the inline data included.

Times depend on the machine and its load; on a shared machine, read them as
an order of magnitude.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from chromium_service import FLAGS, browser_binaries

from rankengine.teach.explore import Explorer
from rankengine.teach.explore_data import parse_op, static_data
from rankengine.teach.explore_page import page_html

DOCS_SCORES = [30, 10, 50, 20, 60, 5, 40, 15, 25, 45]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--random", type=int, help="N random scores instead of the docs board")
    parser.add_argument("--loads", type=int, default=7, help="page loads (default: 7)")
    args = parser.parse_args()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if args.random:
        ex = Explorer.random(args.random, seed=7)
        ops = []
    else:
        ex = Explorer(DOCS_SCORES, seed=8)
        ops = [parse_op("insert 35@3"), parse_op("delete 25")]
    entries = len(ex.sl)
    html = page_html(static_data(ex, ops))
    work = Path(tempfile.mkdtemp(prefix="rankengine-bench-"))
    page = work / "explorer.html"
    page.write_text(html, encoding="utf-8")
    browser, driver_path = browser_binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={work / 'profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    draws, loads = [], []
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd(
            "Network.emulateNetworkConditions",
            {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
        )
        for _ in range(args.loads):
            driver.get(page.as_uri())
            draws.append(float(driver.execute_script("return document.body.dataset.firstDraw")))
            loads.append(
                float(
                    driver.execute_script(
                        "const t = performance.timing; return t.loadEventEnd - t.navigationStart"
                    )
                )
            )
    finally:
        driver.quit()
        shutil.rmtree(work, ignore_errors=True)
    print(f"page: {len(html.encode()):,} bytes ({entries} entries on the first board)")
    for name, values in (("first draw", draws), ("load", loads)):
        print(
            f"{name:>10}: min {min(values):.1f} ms, median {statistics.median(values):.1f} ms, "
            f"max {max(values):.1f} ms over {len(values)} loads"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
