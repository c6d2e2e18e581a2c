#!/usr/bin/env python3
"""A PNG of a dashboard page as headless Chromium draws it (docs/img/dashboard.png is made so).

  screenshot.py PAGE.html OUT.png [--width 1400] [--height 1600] [--full]

Without --full, the top WIDTH x HEIGHT of the page. Exit codes: 0 written, 1 the page's script did
not finish, 77 no Chromium here.
"""

import argparse
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import SKIP, Browser, find_chromium  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("page")
    ap.add_argument("out")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1600)
    ap.add_argument("--full", action="store_true", help="the whole page, not only its top")
    args = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        print("no Chromium (Debian's chromium package) to draw the page with", file=sys.stderr)
        return SKIP
    browser = Browser(chromium, args.width, args.height)
    try:
        browser.load(args.page)
        if browser.evaluate("document.body.dataset.ready") != "1":
            print("{}: the page's script did not finish: {}".format(args.page, browser.console_errors()), file=sys.stderr)
            return 1
        browser.screenshot(args.out, full_page=args.full)
    finally:
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
