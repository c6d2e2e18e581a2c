"""Runs one peer over a gdnbench plan: per point, inputs once; per variant, warm-up (the first
call compiles; if it raises, the point is a skip with the message), verification against the
torch reference, then timing; one record per (point, variant), the report rewritten after each.
Every peer goes through this file: one timing method, one verification path, one writer."""

import sys
import time
import traceback

import torch

from . import host_timing, inputs
from . import report as rp
from . import shapes as sh
from .runner_text import timing_method
from .verify import verify_call

class Runner:
    def __init__(self, args, peer, loaded, device_index, report, out_path):
        self.args, self.peer, self.loaded, self.report, self.out_path = args, peer, loaded, report, out_path
        # device_index None: no CUDA device (or --cpu): torch on the CPU, timed by the host clock.
        self.host = device_index is None
        self.cupti_failed = False
        self.done = set()  # (case, variant, shape_key, seed) already in the report (--resume)
        self.rule = args.rule
        if self.host:
            self.device, self.device_name = torch.device("cpu"), host_timing.device_name(report)
            self.boundary, self.clock = host_timing.HostFlush(report["host"]["llc_bytes"], args.mode != "hot"), None
            return
        from . import timing as tm  # Triton: the GPU path only
        self.device = torch.device("cuda", device_index)
        self.device_name = torch.cuda.get_device_name(device_index)
        self.rule = args.rule
        self.boundary = tm.Boundary(self.device, flush=args.mode != "hot")
        self.boundary()
        torch.cuda.synchronize()
        uuid = report["devices"][0]["uuid"] if report["devices"] else ""
        self.clock = tm.SmClock(uuid)
        self.cupti_failed = False
        self.done = set()  # (case, variant, shape_key, seed) already in the report (--resume)

    def sync(self):
        if not self.host:
            torch.cuda.synchronize()

    def log(self, text):
        print(text, file=sys.stderr, flush=True)

    def save(self):
        rp.write_atomic(self.out_path, self.report)

    # ---- one point ------------------------------------------------------------------------

    def run_point(self, point):
        s = sh.normalize(point["shape"])
        key = sh.shape_key(s)
        if key != point["shape_key"]:
            self.log(f"warning: {point['case']}: the plan's key '{point['shape_key']}' is not the key this "
                     f"harness computes ('{key}'); records carry the plan's")
        variants = [v for v in self.peer.variants[s["op"]] if not self.args.variants or v in self.args.variants]
        plans = [self.peer.plan_point(s, v, self.loaded.caps) for v in variants]
        for p in plans:
            if self.args.mode == "graph" and not p.skip and p.variant in (self.peer.graph_skip or {}):
                p.skip = self.peer.graph_skip[p.variant]
        plans = [p for p in plans if (point["case"], p.variant, point["shape_key"], point["seed"]) not in self.done]
        if not plans:
            return
        work = point["work"]  # gdnbench's work model, from the plan
        tensors, input_error = None, ""
        if any(not p.skip for p in plans):
            try:
                tensors = inputs.make_inputs(s, point["inputs"], point["seed"], self.device)
            except Exception as e:  # noqa: BLE001 - becomes the records' error
                input_error = f"inputs: {type(e).__name__}: {e}"
                traceback.print_exc()
        ref_cache = {}
        for p in plans:
            t0 = time.monotonic()
            if p.skip:
                rec = self.record(point, p, "skipped", p.skip, work=work)
            elif input_error:
                rec = self.record(point, p, "error", input_error, work=work)
            else:
                rec = self.run_variant(point, s, p, tensors, work, ref_cache)
            rec["wall_s"] = time.monotonic() - t0
            self.report["cases"].append(rec)
            self.save()
            self.log(f"{point['case']:<22} {p.variant:<20} {rec['status']:<13} {self.summary(rec)}  {point['shape_key']}")
        del tensors, ref_cache
        torch.cuda.empty_cache()

    def summary(self, rec):
        if rec["timing"] and rec["timing"]["stats"]["median"]:
            return f"{rec['timing']['stats']['median'] * 1e6:10.2f} us"
        return rec["reason"][:60]

    def record(self, point, plan, status, reason="", **kw):
        rec = rp.record_json(point, plan.variant, self.args.mode, self.device_name, status=status, reason=reason,
                             notes=plan.notes, **kw)
        rec["function"] = plan.function
        rec["timing_method"] = timing_method(self.args.mode, self.host) if rec["timing"] else ""
        if getattr(self.loaded, "origin", None):
            rec["origin"] = self.loaded.origin  # where an external variant's code came from (as a C plugin's)
        return rec

    def run_variant(self, point, s, plan, tensors, work, ref_cache):
        name = self.peer.title
        try:
            call = self.peer.make_call(self.loaded, s, plan, tensors, self.device)
            notes = plan.notes + getattr(call, "notes", [])
        except Exception as e:  # noqa: BLE001 - an argument the peer's API refuses: not a measurement
            traceback.print_exc()
            return self.record(point, plan, "skipped", f"{name} refused the arguments: {_message(e)}", work=work)
        first = time.monotonic()
        try:
            call()  # the first call compiles (CuTe DSL, TileLang, Triton)
            self.sync()
        except torch.cuda.OutOfMemoryError as e:
            torch.cuda.empty_cache()
            return self.record(point, plan, "error", f"out of GPU memory: {_message(e)}", work=work)
        except Exception as e:  # noqa: BLE001 - cannot run or cannot compile: a skip with the message
            traceback.print_exc()
            return self.record(point, plan, "skipped", f"{name} failed at its first call (compile or argument "
                               f"check): {_message(e)}", work=work)
        first_call_s = time.monotonic() - first  # compile and autotune included: what the caches save
        try:
            for _ in range(max(self.rule.warmup_runs - 1, 0)):
                call()
            self.sync()
            verification = self.verify(call, s, point["tolerances"], ref_cache)
            timing, timer_notes = self.time(call)
        except torch.cuda.OutOfMemoryError as e:
            torch.cuda.empty_cache()
            return self.record(point, plan, "error", f"out of GPU memory: {_message(e)}", work=work)
        except Exception as e:  # noqa: BLE001 - one broken point must not end the run
            traceback.print_exc()
            return self.record(point, plan, "error", _message(e), work=work)
        failed = verification["ran"] and not verification["pass"]
        reason = "; ".join(plan.differences)
        if failed:
            bad = [c["tensor"] for c in verification["checks"] if not c["pass"]]
            reason = f"{name} disagrees with the reference on {', '.join(bad)}" + (f"; {reason}" if reason else "")
        rec = self.record(point, plan, "verify_failed" if failed else "ok", reason, verification=verification,
                          timing=timing, work=work)
        rec["notes"] = notes + timer_notes
        rec["first_call_s"] = first_call_s
        return rec

    # ---- verification -----------------------------------------------------------------------

    def verify(self, call, s, tolerances, ref_cache):
        if self.args.no_verify:
            return rp.verification_json(scope="not verified: --no-verify")
        return verify_call(call, s, tolerances, ref_cache, self.args.verify_max_work, self.args.verify_max_sampled_work,
                           self.args.verify_max_steps)

    # ---- timing -------------------------------------------------------------------------------

    def time(self, call):
        if self.host:
            return host_timing.time_call(call, self.boundary, self.rule)
        from . import timing as tm  # Triton: the GPU path only
        notes = []
        launch = tm.capture_graph(call) if self.args.mode == "graph" else call
        m = None
        if self.args.timer == "cupti" or (self.args.timer == "auto" and not self.cupti_failed):
            try:
                timer = tm.CuptiTimer(launch, self.boundary)
                timer.batch(2)  # probe (and profiler warm-up): the profile must split into samples
                m = tm.measure(timer, self.rule, self.clock)
            except Exception as e:  # noqa: BLE001 - fall back below
                if self.args.timer == "cupti":
                    raise
                notes.append(f"CUPTI through torch.profiler failed ({type(e).__name__}: {e}); "
                             "timed with CUDA events around a CUDA-graph replay")
                self.log(f"warning: {notes[-1]}")
                self.cupti_failed = True  # once is enough: later variants go straight to events
        if m is None:
            if self.args.timer == "auto" and not notes:
                notes.append("timed with CUDA events around a CUDA-graph replay (CUPTI through torch.profiler "
                             "failed earlier in this run)")
            replay = launch if self.args.mode == "graph" else tm.capture_graph(call)
            timer = tm.EventTimer(replay, self.boundary)
            m = tm.measure(timer, self.rule, self.clock)
        timing = rp.timing_json(timer.name, m["samples"], m["stats"], m["converged"], m["stop_reason"], m["wall_s"],
                                m["kernels"], m["sm_clock_mhz"], m["kernels_sum_median_s"])
        return timing, notes


def _message(e):
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first}"[:500]
