#!/usr/bin/env python3
"""Markdown rows for docs/PERFORMANCE.md from gdnbench reports: ours, optionally a peer's
report (scripts/peers) matched on (op, shape key, mode), ratio and roofline %.

usage: perf_table.py OURS.json [--peer PEER.json] [--variant GLOB]
"""
import argparse
import fnmatch
import json


def ok_records(path):
    with open(path) as f:
        report = json.load(f)
    return report, [c for c in report["cases"] if c["status"] == "ok" and c.get("timed")]


def us(s):
    return f"{s * 1e6:.2f}" if s is not None else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("--peer")
    ap.add_argument("--variant", default="*")
    a = ap.parse_args()
    report, ours = ok_records(a.ours)
    peer = {}
    if a.peer:
        for c in ok_records(a.peer)[1]:
            peer.setdefault((c["op"], c["shape_key"], c["mode"]), c)
    dev = report["devices"][0]["name"] if report.get("devices") else report["host"]["cpu_model"]
    print(f"Device: {dev}; mode: {report['mode']}")
    print()
    head = "| variant | shape | timer | ours us | TB/s | TFLOPS | roofline % |"
    sep = "|---|---|---|---:|---:|---:|---:|"
    if a.peer:
        head += " peer | peer us | peer / ours |"
        sep += "---|---:|---:|"
    print(head)
    print(sep)
    for c in ours:
        if not fnmatch.fnmatch(c["variant"], a.variant):
            continue
        m = c["metrics"]
        med = c["timing"]["stats"]["median"]
        roof = m.get("roofline_pct")
        roof_s = f"{roof:.1f}" if roof is not None else "-"
        row = f"| {c['variant']} | {c['shape_key']} | {c['timing']['timer']} | {us(med)} | {m['tbps']:.3f} | {m['tflops']:.3f} | {roof_s} |"
        if a.peer:
            p = peer.get((c["op"], c["shape_key"], c["mode"]))
            if p:
                pm = p["timing"]["stats"]["median"]
                row += f" {p['variant']} | {us(pm)} | {pm / med:.2f}x |"
            else:
                row += " - | - | - |"
        print(row)


if __name__ == "__main__":
    main()
