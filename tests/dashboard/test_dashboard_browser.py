#!/usr/bin/env python3
"""The dashboard in a real browser: `gdnbench dashboard` makes pages from fixture reports, headless
Chromium loads them offline, and the checks read the DOM the page's scripts built.

  test_dashboard_browser.py --gdnbench BIN --out DIR [--case fixture|large]

fixture: tests/data/reports/{ours,new,peers}.json (new.json a later run of ours.json's config):
the rows per op, a known ratio, a peer-faster mark, the failed-verification row, drawn canvases,
sorting, filtering, the heat map and the flagged regression; a screenshot kept as DIR/dashboard.png.
large: a generated report of 500 records and a peer report beside it must render in under 2 s,
as the page measures it (performance.now() when its script ends); DIR/dashboard-500.png.

Exit codes: 0 pass, 1 a check failed, 77 skipped (no Chromium, or no Chart.js to build the page:
the reason is printed).
"""

import argparse
import copy
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import SKIP, Browser, find_chromium  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORTS = os.path.join(ROOT, "tests", "data", "reports")
RENDER_BUDGET_MS = 2000.0

failures = []


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def make_page(gdnbench, reports, out):
    r = subprocess.run([gdnbench, "dashboard", *reports, "-o", out], capture_output=True, text=True)
    if r.returncode == 4 and "Chart.js not found" in r.stderr:
        print("SKIP: " + r.stderr.strip())
        sys.exit(SKIP)
    if r.returncode != 0:
        print("FAIL: gdnbench dashboard exited {}: {}".format(r.returncode, r.stderr.strip()))
        sys.exit(1)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def verified_time(c):
    """A record's median when it is verified and timed, else None."""
    v = c["verification"]
    if c["status"] != "ok" or not c.get("timed") or (v["ran"] and not v["pass"]):
        return None
    return c["timing"]["stats"]["median"]


def same_point(a, b):
    return a["shape"] == b["shape"] and a["mode"] == b["mode"] and a["device"] == b["device"]


CANVASES_DRAWN = """(() => Array.from(document.querySelectorAll('canvas')).map((c) => {
  const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let drawn = 0;
  for (let i = 3; i < px.length; i += 4) if (px[i] > 0) ++drawn;
  return {w: c.width, h: c.height, drawn: drawn};
}))()"""

ROWS = """(() => Array.from(document.querySelectorAll('#table-%s tbody tr')).filter((tr) => !tr.classList.contains('hidden-row'))
  .map((tr) => ({cls: tr.className, cells: Array.from(tr.children).map((td) => td.textContent)})))()"""

HEADERS = "Array.from(document.querySelectorAll('#table-%s thead th')).map((th) => th.textContent)"


def fixture_case(browser, gdnbench, out):
    ours, new, peers = (os.path.join(REPORTS, n + ".json") for n in ("ours", "new", "peers"))
    page = os.path.join(out, "dashboard.html")
    make_page(gdnbench, [ours, new, peers], page)
    browser.load(page)
    check(browser.evaluate("document.body.dataset.ready") == "1", "the page's script ran to its end")
    errors = browser.console_errors()
    check(not errors, "no script error in the console ({})".format(errors[:1]))
    fetched = browser.evaluate("performance.getEntriesByType('resource').map((e) => e.name)")
    check(fetched == [], "the page fetches nothing ({})".format(fetched))

    # The rows: every record of the newest run (new.json), per op.
    cases = load(new)["cases"]
    peer_cases = load(peers)["cases"]
    for op in ("prefill", "decode", "mtp"):
        want = sum(1 for c in cases if c["shape"]["op"] == op)
        got = browser.evaluate("document.querySelectorAll('#table-%s tbody tr').length" % op)
        check(got == want, "{}: {} rows (want {}, the records of new.json)".format(op, got, want))
        shown = browser.evaluate("document.getElementById('count-%s').dataset.shown" % op)
        check(shown == str(want), "{}: the row count says {} shown".format(op, shown))

    # A known ratio: prefill/sm90 at 1x8192 against the fastest verified peer there.
    target = next(c for c in cases if c["variant"] == "prefill/sm90" and c["shape"]["seqlens"] == [8192] and c["shape"]["h_v"] == 32)
    best = min(t for t in (verified_time(p) for p in peer_cases if same_point(p, target)) if t is not None)
    want_ratio = "{:.2f}x".format(target["timing"]["stats"]["median"] / best)
    headers = browser.evaluate(HEADERS % "prefill")
    rows = browser.evaluate(ROWS % "prefill")
    ratio_col, shape_col = headers.index("ours / best"), headers.index("shape")
    row = next(r for r in rows if "seq=1x8192" in r["cells"][shape_col] and r["cells"][headers.index("heads")] == "16/32")
    check(row["cells"][ratio_col].startswith(want_ratio), "prefill 16/32 1x8192: ours / best {} (want {})".format(row["cells"][ratio_col], want_ratio))
    check("peer-faster" in row["cls"] and "peer faster" in row["cells"][ratio_col], "that row is marked: a peer is faster")

    # The failed verification: decode/fast at B=1 in new.json.
    rows = browser.evaluate(ROWS % "decode")
    failed = [r for r in rows if "verify-failed" in r["cls"]]
    n_failed = sum(1 for c in cases if c["shape"]["op"] == "decode" and c["status"] == "verify_failed")
    check(len(failed) == n_failed == 1, "decode: {} row marked failed verification (want {})".format(len(failed), n_failed))
    check(failed and failed[0]["cells"][0] == "decode/fast" and "FAIL" in " ".join(failed[0]["cells"]),
          "the failed row is decode/fast, with a FAIL mark")
    skipped = browser.evaluate("document.querySelectorAll('#table-decode .mark.skip').length")
    check(skipped > 0, "decode: skipped peer cells carry a 'skipped' mark ({})".format(skipped))
    why = browser.evaluate("Array.from(document.querySelectorAll('#table-decode .mark.skip')).map((m) => m.title)")
    check(all(w.startswith("skipped") and len(w) > len("skipped: ") for w in why), "each skip mark gives its reason")

    # Charts: a ratio chart per op with peers, a roofline per device, the history; each drawn.
    canvases = browser.evaluate(CANVASES_DRAWN)
    check(len(canvases) >= 6, "{} charts (3 ratio charts, 2 rooflines, 1 history at least)".format(len(canvases)))
    check(all(c["w"] > 0 and c["h"] > 0 and c["drawn"] > 1000 for c in canvases),
          "every canvas has drawn pixels ({})".format([c["drawn"] for c in canvases]))

    # Sorting: the tables open sorted by ours / best, largest first; a click on the header reverses it.
    def ratios_shown():
        col = headers_index(browser, "decode", "ours / best")
        return [float(r["cells"][col].split("x")[0]) for r in browser.evaluate(ROWS % "decode") if r["cells"][col] != "-"]
    rows = browser.evaluate(ROWS % "prefill")
    col = headers_index(browser, "prefill", "ours / best")
    ratios = [float(r["cells"][col].split("x")[0]) for r in rows if r["cells"][col] != "-"]
    check(len(ratios) > 1 and ratios == sorted(ratios, reverse=True), "prefill opens sorted by ratio, largest first: {}".format(ratios))
    browser.evaluate("document.querySelector('#table-decode th[data-id=ratio]').click()")
    ratios = ratios_shown()
    check(len(ratios) > 1 and ratios == sorted(ratios), "a click on decode's ratio sorts it smallest first: {}".format(ratios))
    check(browser.evaluate("document.querySelector('#table-decode th[data-id=ratio]').className").endswith("sorted-asc"),
          "the header shows the order")

    # Filtering: only the failed verifications, then the heads filter.
    browser.evaluate("(() => { const s = document.getElementById('filter-status'); s.value = 'verify_failed'; s.dispatchEvent(new Event('change')); })()")
    check(browser.evaluate("document.getElementById('count-decode').dataset.shown") == "1", "status filter: 1 decode row shown")
    check(browser.evaluate("document.getElementById('count-prefill').dataset.shown") == "0", "status filter: 0 prefill rows shown")
    browser.evaluate("(() => { const s = document.getElementById('filter-status'); s.value = ''; s.dispatchEvent(new Event('change')); })()")
    browser.evaluate("(() => { const s = document.getElementById('filter-heads'); s.value = '8/16'; s.dispatchEvent(new Event('change')); })()")
    want = sum(1 for c in cases if c["shape"]["op"] == "prefill" and c["shape"]["h_qk"] == 8)
    check(browser.evaluate("document.getElementById('count-prefill').dataset.shown") == str(want), "heads filter 8/16: {} prefill rows".format(want))
    browser.evaluate("(() => { const s = document.getElementById('filter-heads'); s.value = ''; s.dispatchEvent(new Event('change')); })()")

    # The heat map and the history's flagged regression (new.json's +12 % row).
    cells = browser.evaluate("document.querySelectorAll('#heat-table tbody td:not(.muted)').length")
    check(cells >= 4, "heat map: {} filled cells".format(cells))
    flagged = browser.evaluate("Array.from(document.querySelectorAll('#history table.regressions tbody tr')).map((tr) => tr.textContent)")
    check(any("slower" in f for f in flagged), "history: a slower row flagged ({})".format(len(flagged)))
    check(any("failed-verification" in f for f in flagged), "history: the failed verification flagged")
    browser.screenshot(os.path.join(out, "dashboard.png"))


def headers_index(browser, op, name):
    return browser.evaluate(HEADERS % op).index(name)


def large_reports(out, n=500):
    """A report of n decode records (batch 1..n) from a fixture record, and a peer report beside it."""
    ours = load(os.path.join(REPORTS, "ours.json"))
    peers = load(os.path.join(REPORTS, "peers.json"))
    tmpl = next(c for c in ours["cases"] if c["variant"] == "decode/fast" and c["status"] == "ok")
    ptmpl = next(c for c in peers["cases"] if c["variant"] == "fla/fused_recurrent" and c["status"] == "ok")
    ours["cases"], peers["cases"] = [], []
    for i in range(n):
        c = copy.deepcopy(tmpl)
        c["shape"]["batch"] = i + 1
        c["shape"]["pool"] = 0
        c["shape"].pop("key", None)
        c.pop("shape_key", None)
        c["timing"]["stats"]["median"] = 2e-6 * (i + 1)
        ours["cases"].append(c)
        p = copy.deepcopy(ptmpl)
        p["shape"] = copy.deepcopy(c["shape"])
        p.pop("shape_key", None)
        p["timing"]["stats"]["median"] = 2e-6 * (i + 1) * (0.9 if i % 7 == 0 else 1.1)
        peers["cases"].append(p)
    paths = [os.path.join(out, "large.ours.json"), os.path.join(out, "large.peers.json")]
    for path, doc in zip(paths, (ours, peers)):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
    return paths


def large_case(browser, gdnbench, out):
    page = os.path.join(out, "dashboard-500.html")
    make_page(gdnbench, large_reports(out), page)
    browser.load(page)
    check(browser.evaluate("document.body.dataset.ready") == "1", "500 records: the page's script ran to its end")
    rows = browser.evaluate("document.querySelectorAll('#table-decode tbody tr').length")
    check(rows == 500, "500 records: {} decode rows".format(rows))
    ready = float(browser.evaluate("document.body.dataset.readyMs"))
    script = float(browser.evaluate("document.body.dataset.renderMs"))
    print("500 records: page complete {:.0f} ms after navigation began (its script {:.0f} ms)".format(ready, script))
    check(ready < RENDER_BUDGET_MS, "500 records rendered in {:.0f} ms < {:.0f} ms".format(ready, RENDER_BUDGET_MS))
    canvases = browser.evaluate(CANVASES_DRAWN)
    check(canvases and all(c["drawn"] > 1000 for c in canvases), "500 records: every canvas drawn")
    browser.screenshot(os.path.join(out, "dashboard-500.png"), full_page=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gdnbench", required=True)
    ap.add_argument("--out", required=True, help="folder for the pages and screenshots (test artifacts)")
    ap.add_argument("--case", choices=("fixture", "large"), default="fixture")
    args = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        print("SKIP: no Chromium (Debian's chromium package; $CHROMIUM names another binary) to load the page in")
        return SKIP
    os.makedirs(args.out, exist_ok=True)
    try:
        browser = Browser(chromium)
    except (OSError, RuntimeError, TimeoutError) as e:
        print("SKIP: Chromium ({}) does not start here: {}".format(chromium, e))
        return SKIP
    try:
        (fixture_case if args.case == "fixture" else large_case)(browser, args.gdnbench, args.out)
    finally:
        browser.close()
    print("{} check(s) failed".format(len(failures)) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
