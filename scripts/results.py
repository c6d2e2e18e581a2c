#!/usr/bin/env python3
"""Results as records, PERFORMANCE.md as a view (python3 standard library only).

  results.py slim REPORT.json OUT.json [--note TEXT]
      OUT: REPORT without its per-sample arrays (`gdnbench compare` and `peers` read it as before).
  results.py add REPORT.json... [--gpu NAME] [--name FILE] [--note TEXT] [--results DIR]
      slim each REPORT into results/<gpu>/ (the folder named from its first device, e.g. h200).
  results.py performance [--results DIR] [--out FILE] [--readme FILE] [--check]
      write docs/PERFORMANCE.md and the README's results snapshot from results/*/*.json;
      --check writes nothing and exits 1 when either is out of date.
  results.py snapshot [--results DIR]
      print the README's results snapshot block.

Exit codes: 0 success, 1 out of date (--check), 3 bad input, 4 I/O failure.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from resultslib import performance as pf  # noqa: E402
from resultslib import reports as rp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_args(argv):
    p = argparse.ArgumentParser(prog="results.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("slim", help="drop a report's per-sample arrays",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    s.add_argument("report")
    s.add_argument("out")
    s.add_argument("--note", default="", help="a line about the run, kept in the report and shown in PERFORMANCE.md")
    a = sub.add_parser("add", help="slim a report into results/<gpu>/",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    a.add_argument("reports", nargs="+", metavar="report")
    a.add_argument("--gpu", default="", help="results folder (default: from each report's first device name)")
    a.add_argument("--name", default="", help="file name in the folder (one report only; default: the report's file name)")
    a.add_argument("--note", default="", help="a line about the run, kept in the report and shown in PERFORMANCE.md")
    a.add_argument("--results", default=os.path.join(ROOT, "results"))
    f = sub.add_parser("performance", help="write docs/PERFORMANCE.md and the README snapshot",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    f.add_argument("--results", default=os.path.join(ROOT, "results"))
    f.add_argument("--out", default=os.path.join(ROOT, "docs", "PERFORMANCE.md"))
    f.add_argument("--readme", default=os.path.join(ROOT, "README.md"), help="README to refresh ('' for none)")
    f.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")
    n = sub.add_parser("snapshot", help="print the README's results snapshot",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    n.add_argument("--results", default=os.path.join(ROOT, "results"))
    return p.parse_args(argv)


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def slimmed(path, note):
    report = rp.slim(rp.load(path))
    if note:
        report["note"] = note
    return report


def cmd_slim(args):
    rp.write_atomic(args.out, rp.dumps(slimmed(args.report, args.note)))
    return 0


def destination(path, report, args):
    gpu = args.gpu
    if not gpu:
        names = rp.device_names(report)
        if not names:
            raise rp.BadInput(f"{path}: devices: the report names no GPU; give --gpu")
        gpu = rp.gpu_folder_name(names[0])
    return os.path.join(args.results, gpu, args.name or os.path.basename(path))


def cmd_add(args):
    if args.name and len(args.reports) > 1:
        raise rp.BadInput("--name: names one report's file; give one report")
    # Every report read and checked before any is written.
    slim = [slimmed(path, args.note) for path in args.reports]
    for path, report in zip(args.reports, slim):
        out = destination(path, report, args)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        rp.write_atomic(out, rp.dumps(report))
        print(out)
    return 0


def read_folders(results):
    if not os.path.isdir(results):
        raise rp.BadInput(f"{results}: no such results folder")
    return pf.read_results(results)


def cmd_performance(args):
    folders = read_folders(args.results)
    wanted = {args.out: pf.render_performance(folders)}
    if args.readme:
        wanted[args.readme] = pf.with_snapshot(read_text(args.readme), pf.render_snapshot(folders), args.readme)
    stale = [path for path, text in wanted.items() if not os.path.exists(path) or read_text(path) != text]
    if args.check:
        for path in stale:
            print(f"{path} is out of date: run `{pf.COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        rp.write_atomic(path, wanted[path])
        print(f"wrote {path}")
    return 0


def cmd_snapshot(args):
    print(pf.render_snapshot(read_folders(args.results)))
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return {"slim": cmd_slim, "add": cmd_add, "performance": cmd_performance, "snapshot": cmd_snapshot}[args.command](args)
    except rp.BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    except OSError as e:
        print(f"error: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 4


if __name__ == "__main__":
    sys.exit(main())
