#!/usr/bin/env python3
"""scripts/results.py: slim keeps the records and drops the samples; PERFORMANCE.md and the README
snapshot compute ours / best peer as the peer tables do; output is deterministic; bad input is
exit 3 naming the file; the committed docs are what the committed results generate."""

import copy
import json
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "scripts", "results.py")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from resultslib import performance as pf  # noqa: E402
from resultslib import reports as rp  # noqa: E402

GPU = "NVIDIA H100 80GB HBM3"


def record(variant, key, median_us, status="ok", timer="cupti", kernels_sum_us=None, roof=50.0):
    op = variant.split("/")[0] if variant.split("/")[0] in pf.OPS else "prefill"
    timing = None
    if status == "ok":
        timing = {"timer": timer, "samples_s": [median_us * 1e-6] * 7,
                  "stats": {"n": 7, "median": median_us * 1e-6, "noise": 0.001}}
        if kernels_sum_us:
            timing["kernels_sum_median_s"] = kernels_sum_us * 1e-6
    return {"case": "c", "op": op, "variant": variant, "shape_key": key, "mode": "cold", "plan": "p",
            "device": "host: cpu" if timer == "host" else GPU, "status": status, "timed": status == "ok",
            "timing": timing, "verification": {"ran": True, "pass": status == "ok", "checks": []},
            "metrics": {"tflops": 100.0, "tflops_fi": 40.0, "tbps": 1.0, "roofline_pct": roof}}


def report(tool, cases, started="2026-01-02T00:00:00Z"):
    return {"schema_version": 1, "tool": {"name": tool, "version": "1", "git_sha": "abcdef012345"},
            "argv": ["/x/bin/gdnbench", "run", "--config", "configs/x.yaml"], "command": "run",
            "config": {"path": "configs/x.yaml", "hash": "0"}, "started_at": started, "finished_at": started,
            "complete": True, "devices": [{"name": GPU, "uuid": "u"}], "calibration": {}, "cases": cases}


def ours_and_peers():
    ours = report("gdnbench", [
        record("prefill/a", "k1", 10.0), record("prefill/b", "k1", 12.0),
        record("prefill/a", "k2", 20.0), record("prefill/b", "k2", 15.0, roof=60.0),
        record("prefill/cpu", "k1", 900.0, timer="host")])
    peers = report("fla", [
        record("fla/x", "k1", 8.0, kernels_sum_us=5.0), record("fla/x", "k2", 30.0),
        record("fla/y", "k1", 9.0), record("fla/y", "k2", 0, status="skipped")])
    return ours, peers


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def run_tool(*args):
    return subprocess.run([sys.executable, TOOL, *args], capture_output=True, text=True)


class Slim(unittest.TestCase):
    def test_drops_samples_and_keeps_the_record(self):
        ours, _ = ours_and_peers()
        slim = rp.slim(ours)
        self.assertEqual(slim["slim"], {"dropped": ["cases[].timing.samples_s"]})
        for full, kept in zip(ours["cases"], slim["cases"]):
            if full["timing"]:
                self.assertNotIn("samples_s", kept["timing"])
                self.assertEqual(kept["timing"]["stats"], full["timing"]["stats"])
            for key in ("variant", "shape_key", "plan", "status", "verification", "metrics", "mode"):
                self.assertEqual(kept[key], full[key])
        for key in ("tool", "argv", "config", "devices", "started_at", "calibration"):
            self.assertEqual(slim[key], ours[key])
        self.assertIn("samples_s", ours["cases"][0]["timing"], "slim must not change its input")

    def test_slim_is_idempotent_and_deterministic(self):
        ours, _ = ours_and_peers()
        once = rp.slim(ours)
        self.assertEqual(rp.slim(once), once)
        self.assertEqual(rp.dumps(once), rp.dumps(rp.slim(copy.deepcopy(ours))))

    def test_cli_slim_and_add(self):
        ours, _ = ours_and_peers()
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "run.json")
            with open(src, "w") as f:
                json.dump(ours, f)
            out = os.path.join(d, "slim.json")
            self.assertEqual(run_tool("slim", src, out, "--note", "a note").returncode, 0)
            slim = json.loads(read(out))
            self.assertEqual(slim["note"], "a note")
            self.assertNotIn("samples_s", slim["cases"][0]["timing"])
            peer = os.path.join(d, "run.fla.json")
            with open(peer, "w") as f:
                json.dump(ours_and_peers()[1], f)
            added = run_tool("add", src, peer, "--results", os.path.join(d, "results"))
            self.assertEqual(added.returncode, 0, added.stderr)
            for name in ("run.json", "run.fla.json"):
                self.assertTrue(os.path.exists(os.path.join(d, "results", "h100", name)))
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write("{}")
            refused = run_tool("add", src, bad, "--results", os.path.join(d, "other"))
            self.assertEqual(refused.returncode, 3)
            self.assertFalse(os.path.exists(os.path.join(d, "other")), "nothing is written when one report is bad")


class SweepName(unittest.TestCase):
    def test_a_file_by_name_and_flags_as_command_line(self):
        self.assertEqual(pf.sweep_name("configs/decode.yaml"), "decode.yaml")
        self.assertEqual(pf.sweep_name("command line: --op decode -a batch=64 --variant decode/fast"), "command line")


class BadInput(unittest.TestCase):
    def check(self, text, words):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.json")
            with open(path, "w") as f:
                f.write(text)
            r = run_tool("slim", path, os.path.join(d, "out.json"))
            self.assertEqual(r.returncode, 3, r.stderr)
            for w in [path] + words:
                self.assertIn(w, r.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "out.json")))

    def test_not_json(self):
        self.check('{"schema_version": 1,\n "cases": [', ["2", "not valid JSON"])

    def test_not_a_report(self):
        self.check('{"cases": []}', ["schema_version"])

    def test_record_without_a_variant(self):
        self.check('{"schema_version": 1, "cases": [{"op": "decode", "shape_key": "k", "status": "ok"}]}',
                   ["cases[0].variant"])

    def test_missing_file_is_an_io_error(self):
        r = run_tool("slim", "/nonexistent/run.json", "/tmp/x.json")
        self.assertEqual(r.returncode, 4)
        self.assertIn("/nonexistent/run.json", r.stderr)

    def test_readme_without_markers(self):
        with self.assertRaises(rp.BadInput):
            pf.with_snapshot("# title\n", "block", "README.md")


class Names(unittest.TestCase):
    def test_gpu_folder_names(self):
        self.assertEqual(rp.gpu_folder_name("NVIDIA H200"), "h200")
        self.assertEqual(rp.gpu_folder_name("NVIDIA H100 80GB HBM3"), "h100")
        self.assertEqual(rp.gpu_folder_name("NVIDIA GeForce RTX 4090"), "rtx4090")
        self.assertEqual(rp.gpu_folder_name("Tesla T4"), "t4")


class Performance(unittest.TestCase):
    def folders(self, *reports):
        return [("h100", [(f"r{i}.json", r) for i, r in enumerate(reports)])]

    def test_ours_over_best_peer(self):
        ours, peers = ours_and_peers()
        s = pf.OpSummary(pf.sections_by_device(self.folders(ours, peers)[0][1])[GPU]["prefill"])
        # ours: min(10, 12) = 10 and min(20, 15) = 15; best peer: 8 (fla/x) and 30 (fla/x; fla/y skipped).
        self.assertEqual([round(r.over_best, 6) for r in s.rows], [1.25, 0.5])
        self.assertAlmostEqual(s.over_best, (1.25 * 0.5) ** 0.5)
        self.assertEqual((s.compared, s.peer_ahead), (2, 1))
        self.assertAlmostEqual(s.over_kernels, 2.0)  # 10 / 5 at k1 only
        self.assertEqual(s.roof_median, 55.0)
        self.assertEqual(len(s.rows), 2, "host-timed records are not GPU points")

    def test_one_run_peers_report_is_ours_beside_its_peers(self):
        # `gdnbench run --peers` writes one report; its harness records (origin kind "harness") are peers.
        ours, peers = ours_and_peers()
        one = copy.deepcopy(ours)
        one["cases"] += [dict(c, origin={"kind": "harness", "path": "fla"}) for c in peers["cases"]]
        a = pf.OpSummary(pf.sections_by_device(self.folders(ours, peers)[0][1])[GPU]["prefill"])
        b = pf.OpSummary(pf.sections_by_device(self.folders(one)[0][1])[GPU]["prefill"])
        self.assertEqual([r.over_best for r in b.rows], [r.over_best for r in a.rows])
        self.assertEqual((b.compared, b.peer_ahead), (a.compared, a.peer_ahead))

    def test_snapshot_and_page(self):
        ours, peers = ours_and_peers()
        folders = self.folders(ours, peers)
        snap = pf.render_snapshot(folders)
        self.assertTrue(snap.startswith(pf.SNAPSHOT_BEGIN) and snap.endswith(pf.SNAPSHOT_END))
        self.assertIn(f"| {GPU} | prefill | `x.yaml` | 2 | 0.79x | 1 of 2 | 2.00x | 1 of 1 | fla | 55.0 | 2026-01-02 |", snap)
        page = pf.render_performance(folders)
        self.assertIn("| `k1` | **10.00** | 12.00 | 8.00 | 9.00 | fla/x | 1.25x | 5.00 | 2.00x |", page)
        self.assertIn("| fla/y | 1 | 1.11x | 1 | - | - |", page)
        self.assertIn("`gdnbench run --config configs/x.yaml`", page)
        self.assertIn("| prefill/cpu | host | 1 | 1 |", page)

    def test_newest_run_wins_and_order_does_not_matter(self):
        ours, peers = ours_and_peers()
        newer = report("gdnbench", [record("prefill/a", "k1", 4.0)], started="2026-02-01T00:00:00Z")
        a = pf.render_performance(self.folders(newer, ours, peers))
        b = pf.render_performance(self.folders(ours, peers, newer))
        self.assertIn("| `k1` | **4.00** |", a)
        self.assertEqual(a.replace("r0", "rX").count("**4.00**"), 1)
        self.assertEqual(a.split("### NVIDIA")[2:], b.split("### NVIDIA")[2:])

    def test_no_peers(self):
        ours, _ = ours_and_peers()
        snap = pf.render_snapshot(self.folders(ours))
        self.assertIn(f"| {GPU} | prefill | `x.yaml` | 2 | - | - | - | - | - | 55.0 | 2026-01-02 |", snap)

    def test_snapshot_replaces_only_the_block(self):
        text = f"# t\nbefore\n{pf.SNAPSHOT_BEGIN}\nold\n{pf.SNAPSHOT_END}\nafter\n"
        self.assertEqual(pf.with_snapshot(text, "NEW"), "# t\nbefore\nNEW\nafter\n")

    def test_check_is_stale_until_written(self):
        ours, peers = ours_and_peers()
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "results", "h100"))
            for name, r in (("ours.json", ours), ("fla.json", peers)):
                with open(os.path.join(d, "results", "h100", name), "w") as f:
                    json.dump(r, f)
            readme = os.path.join(d, "README.md")
            with open(readme, "w") as f:
                f.write(f"x\n{pf.SNAPSHOT_BEGIN}\n{pf.SNAPSHOT_END}\n")
            args = ["performance", "--results", os.path.join(d, "results"), "--out", os.path.join(d, "P.md"),
                    "--readme", readme]
            self.assertEqual(run_tool(*args, "--check").returncode, 1)
            self.assertEqual(run_tool(*args).returncode, 0)
            first = read(os.path.join(d, "P.md"))
            self.assertEqual(run_tool(*args, "--check").returncode, 0)
            self.assertEqual(run_tool(*args).returncode, 0)
            self.assertEqual(read(os.path.join(d, "P.md")), first)
            self.assertIn("0.79x", read(readme))


class Committed(unittest.TestCase):
    def test_docs_are_what_the_results_generate(self):
        r = run_tool("performance", "--check")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_every_committed_result_is_slim(self):
        root = os.path.join(ROOT, "results")
        paths = [os.path.join(root, d, f) for d in sorted(os.listdir(root)) if os.path.isdir(os.path.join(root, d))
                 for f in sorted(os.listdir(os.path.join(root, d))) if f.endswith(".json")]
        self.assertTrue(paths)
        for path in paths:
            r = rp.load(path)
            self.assertEqual(rp.slim(r)["cases"], r["cases"], f"{path} holds per-sample arrays: slim it")
            tool = r.get("tool", {})
            # Ours carry the commit they were built from; a peer's report carries its package's version.
            version = tool.get("git_sha") if tool.get("name") == "gdnbench" else tool.get("version")
            self.assertTrue(r.get("argv") and version, f"{path}: no command, or no commit / peer version")


if __name__ == "__main__":
    unittest.main(verbosity=1)
